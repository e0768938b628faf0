//! A minimal PDF writer for test fixtures: one page per slice of lines (a tab separates
//! table cells, each placed at its own position), Helvetica,
//! WinAnsi encoding (so German and Dutch text and € survive), a real text layer that
//! PDF text extraction reads back.

/// Builds a text PDF with one page per element of `pages`.
pub fn text_pdf(pages: &[&[&str]]) -> Vec<u8> {
    let page_count = pages.len();
    // Objects: 1 catalog, 2 pages, 3 font, then per page: page object, content stream.
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
    for (i, lines) in pages.iter().enumerate() {
        let content_id = 5 + 2 * i;
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content_id} 0 R \
                 /Resources << /Font << /F1 3 0 R >> >> >>"
            )
            .into_bytes(),
        );
        // Each line is its own text object; tab-separated cells are placed at their own x
        // position, as layout programs do for table columns, so text extraction has to
        // work out the spacing itself.
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
        let mut object = format!("<< /Length {} >>\nstream\n", stream.len()).into_bytes();
        object.extend(stream);
        object.extend(b"\nendstream");
        objects.push(object);
    }

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
