//! A minimal PDF writer for test fixtures: one page per slice of lines (a tab separates
//! table cells, each placed at its own position), or pages drawn as monospaced text
//! ([`layout_pdf`]), Helvetica,
//! WinAnsi encoding (so German and Dutch text and € survive), a real text layer that
//! PDF text extraction reads back.

/// Builds a text PDF with one page per element of `pages`.
pub fn text_pdf(pages: &[&[&str]]) -> Vec<u8> {
    let streams: Vec<Vec<u8>> = pages
        .iter()
        .map(|lines| {
            // Each line is its own text object; tab-separated cells are placed at their own
            // x position, as layout programs do for table columns, so text extraction has
            // to work out the spacing itself.
            let mut stream = Vec::new();
            for (row, line) in lines.iter().enumerate() {
                let y = 800 - 14 * row;
                for (col, cell) in line.split('\t').enumerate() {
                    if cell.is_empty() {
                        continue;
                    }
                    let x = 50 + column_x(line, col);
                    stream.extend(format!("BT /F1 10 Tf {x} {y} Td (").into_bytes());
                    stream.extend(win_ansi(cell));
                    stream.extend(b") Tj ET\n");
                }
            }
            stream
        })
        .collect();
    pdf_of_streams(&streams)
}

/// A PDF with one page per content stream; fonts `/F1` Helvetica and `/F2`
/// Helvetica-Bold, WinAnsi encoded.
fn pdf_of_streams(streams: &[Vec<u8>]) -> Vec<u8> {
    pdf_of_filtered_streams(streams, None)
}

/// A decompression bomb: a one-page PDF whose content stream is `FlateDecode` of
/// `inflated` zero bytes, about a 160th of that in the file (13 bits per 258 bytes).
pub fn flate_bomb_pdf(inflated: usize) -> Vec<u8> {
    pdf_of_filtered_streams(&[zlib_of_zeros(inflated)], Some("FlateDecode"))
}

/// A zlib stream of `n` zero bytes, written directly (a literal 0, then back-references
/// of 258 bytes at distance 1, in one fixed-Huffman block) so that even gigabytes cost
/// the test nothing to compress. Any inflater reads it back as `n` zeros.
pub fn zlib_of_zeros(n: usize) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        len: u32,
    }
    impl Bits {
        fn put(&mut self, value: u64, bits: u32) {
            self.acc |= value << self.len;
            self.len += bits;
            while self.len >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.len -= 8;
            }
        }
        /// A Huffman code, most significant bit first.
        fn code(&mut self, code: u64, bits: u32) {
            let reversed = (0..bits).fold(0, |r, i| r | (((code >> i) & 1) << (bits - 1 - i)));
            self.put(reversed, bits);
        }
    }
    let mut w = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        len: 0,
    };
    w.put(1, 1); // the final block
    w.put(1, 2); // fixed Huffman codes
    let literal_zero = |w: &mut Bits| w.code(0x30, 8);
    if n > 0 {
        literal_zero(&mut w);
        let rest = n - 1;
        for _ in 0..rest / 258 {
            w.code(0xC5, 8); // length code 285: 258 bytes
            w.code(0, 5); // distance code 0: distance 1
        }
        for _ in 0..rest % 258 {
            literal_zero(&mut w);
        }
    }
    w.code(0, 7); // end of block
    w.put(0, 7); // pad to a byte
    let mut out = w.out;
    // Adler-32 of zeros: a stays 1, b counts the bytes.
    let b = (n % 65_521) as u32;
    out.extend(((b << 16) | 1).to_be_bytes());
    out
}

/// Appends a PNG chunk (length, type, data, CRC-32) to `out`.
pub fn png_chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend(kind);
    out.extend(data);
    let mut crc = 0xffff_ffffu32;
    for &b in &out[start..] {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                0xedb8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
        }
    }
    out.extend((!crc).to_be_bytes());
}

/// A black PNG of `width` x `height` pixels, gray or RGB, 8 bits: a real, complete image
/// (every row is there) that costs the test nothing to build at any size.
pub fn black_png(width: u32, height: u32, rgb: bool) -> Vec<u8> {
    let chunk = png_chunk;
    let channels = if rgb { 3 } else { 1 };
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, if rgb { 2 } else { 0 }, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    // Each row: filter type 0, then zero bytes; all of it zeros.
    let raw = height as usize * (1 + width as usize * channels);
    chunk(&mut out, b"IDAT", &zlib_of_zeros(raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

/// A PDF with one page per content stream, given as they are (fonts as in [`text_pdf`]).
pub fn pdf_of_raw_streams(streams: &[Vec<u8>]) -> Vec<u8> {
    pdf_of_filtered_streams(streams, None)
}

fn pdf_of_filtered_streams(streams: &[Vec<u8>], filter: Option<&str>) -> Vec<u8> {
    let page_count = streams.len();
    // Objects: 1 catalog, 2 pages, 3 font, then per page: page object, content stream;
    // the bold font last.
    let bold_id = 4 + 2 * page_count;
    let mut objects: Vec<Vec<u8>> = Vec::new();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let kids: Vec<String> = (0..page_count)
        .map(|i| format!("{} 0 R", 4 + 2 * i))
        .collect();
    objects.push(
        format!(
            "<< /Type /Pages /Kids [{}] /Count {page_count} >>",
            kids.join(" ")
        )
        .into_bytes(),
    );
    objects.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );
    for (i, stream) in streams.iter().enumerate() {
        let content_id = 5 + 2 * i;
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content_id} 0 R \
                 /Resources << /Font << /F1 3 0 R /F2 {bold_id} 0 R >> >> >>"
            )
            .into_bytes(),
        );
        let filter = filter.map_or(String::new(), |f| format!(" /Filter /{f}"));
        let mut object = format!("<< /Length {}{filter} >>\nstream\n", stream.len()).into_bytes();
        object.extend(stream);
        object.extend(b"\nendstream");
        objects.push(object);
    }
    objects.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );

    let mut pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n", i + 1).into_bytes());
        pdf.extend(object);
        pdf.extend(b"\nendobj\n");
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).into_bytes());
    for offset in offsets {
        pdf.extend(format!("{offset:010} 00000 n \n").into_bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .into_bytes(),
    );
    pdf
}

/// Builds a PDF from a page drawn as monospaced text, the way the invoice fixtures are
/// written (`tests/fixtures/invoices/src/*.layout`):
///
/// - each run of text separated from the next by two or more spaces is placed on its
///   own at the x position of its column (4.9 points per column from a 40 point margin,
///   9 pt Helvetica), so right-aligned amounts stay right-aligned and text extraction
///   must find the gaps itself, as with a real PDF; a run is pushed right when the
///   proportional text before it would overlap it;
/// - a line starting with `^` is a heading in 13 pt Helvetica-Bold;
/// - a line holding only `\f` (form feed) or `=== page ===` starts a new page.
pub fn layout_pdf(source: &str) -> Vec<u8> {
    const MARGIN: f64 = 40.0;
    const COLUMN: f64 = 4.9;
    const TOP: f64 = 800.0;
    let mut streams = Vec::new();
    let mut stream = Vec::new();
    let mut y = TOP;
    for raw in source.lines() {
        let raw = raw.trim_end();
        if raw == "\u{c}" || raw == "=== page ===" {
            streams.push(std::mem::take(&mut stream));
            y = TOP;
            continue;
        }
        let (line, size, font) = match raw.strip_prefix('^') {
            Some(rest) => (rest, 13.0, "F2"),
            None => (raw, 9.0, "F1"),
        };
        let mut min_x = 0.0_f64;
        for (col, text) in runs(line) {
            let x = (MARGIN + col as f64 * COLUMN).max(min_x);
            stream.extend(format!("BT /{font} {size} Tf {x:.1} {y:.1} Td (").into_bytes());
            stream.extend(win_ansi(text));
            stream.extend(b") Tj ET\n");
            let bold = if font == "F2" { 1.06 } else { 1.0 };
            min_x = x + helvetica_width(text) * size / 1000.0 * bold + 1.6 * size;
        }
        y -= if size > 9.0 { 18.0 } else { 11.5 };
    }
    streams.push(stream);
    pdf_of_streams(&streams)
}

/// The runs of a drawn line with their starting columns: text separated by two or more
/// spaces.
fn runs(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].1 == ' ' {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while end < chars.len() {
            if chars[end].1 == ' ' && chars.get(end + 1).is_none_or(|c| c.1 == ' ') {
                break;
            }
            end += 1;
        }
        let from = chars[start].0;
        let to = chars.get(end).map_or(line.len(), |c| c.0);
        out.push((start, &line[from..to]));
        i = end;
    }
    out
}

/// The advance width of `text` in Helvetica, in thousandths of the font size (the
/// standard AFM metrics; accented letters as their base letter).
fn helvetica_width(text: &str) -> f64 {
    const ASCII: [u16; 95] = [
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556,
        556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722,
        722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722,
        667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556,
        556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500,
        500, 334, 260, 334, 584,
    ];
    text.chars()
        .map(|c| match c {
            ' '..='~' => f64::from(ASCII[c as usize - 32]),
            _ if c.is_uppercase() => 722.0,
            _ => 556.0,
        })
        .sum()
}

/// The x offset of cell `col`: cells start every 120 points, or further right when the
/// cells before are long (Helvetica at 10 pt: about 5.5 points per character).
fn column_x(line: &str, col: usize) -> usize {
    line.split('\t').take(col).fold(0, |x, cell| {
        (x + cell.chars().count() * 6 + 20).max(x + 120)
    })
}

/// A PDF string body in WinAnsi (Windows-1252) with the PDF escapes.
fn win_ansi(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for c in text.chars() {
        let byte = match c {
            '€' => 0x80,
            c if (c as u32) < 0x100 => c as u32 as u8,
            _ => b'?',
        };
        match byte {
            b'(' | b')' | b'\\' => out.extend([b'\\', byte]),
            0x20..=0x7e => out.push(byte),
            _ => out.extend(format!("\\{byte:03o}").into_bytes()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_zeros_stream_inflates_to_exactly_its_zeros() {
        for n in [0, 1, 2, 258, 259, 260, 100_000] {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(zlib_of_zeros(n).as_slice())
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out.len(), n);
            assert!(out.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn a_black_png_decodes_to_its_size() {
        let img = image::load_from_memory(&black_png(300, 200, true)).unwrap();
        assert_eq!((img.width(), img.height()), (300, 200));
        assert!(img.to_luma8().pixels().all(|p| p.0[0] == 0));
    }
}
