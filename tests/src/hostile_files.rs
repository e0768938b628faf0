//! The hostile corpus: files built to break a parser (its stack, its memory, its CPU),
//! one per known vector, for the tests that put each in a batch beside good documents
//! (`cli/tests/it/hostile_batch.rs`, `tests/tests/it/sandbox.rs`).
//!
//! Each is what the parsers' own limits refuse (`docflow::ocr`, the vendored lopdf and
//! pdf-extract) except [`cmap_nesting`]: a vector inside a crate docflow does not patch
//! (adobe-cmap-parser's recursive descent), which only the parsing sandbox's child
//! process contains.

use crate::pdf::{black_png, flate_bomb_pdf};

/// A PDF written byte by byte: objects `1 0 obj` … in order, a correct xref table, object
/// 1 the catalog.
pub fn raw_pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).into_bytes());
        out.extend(body);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).into_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").into_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .into_bytes(),
    );
    out
}

/// A stream object: `dict` entries and `body`.
pub fn stream(dict: &str, body: &[u8]) -> Vec<u8> {
    let mut s = format!("<< {dict} /Length {} >>\nstream\n", body.len()).into_bytes();
    s.extend(body);
    s.extend(b"\nendstream");
    s
}

/// One page whose dictionary cites `object` (object 4), read with the rest of the file.
fn page_citing(object: Vec<u8>) -> Vec<u8> {
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Extra 4 0 R >>".to_vec(),
        object,
    ])
}

/// One page with `content`, font `/F1` and the form `/X1` (object 5) whose content is
/// `form` and whose resources are the page's.
fn page_with_form(content: &[u8], form: &[u8]) -> Vec<u8> {
    let resources = "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> \
                     /XObject << /X1 5 0 R >> >>";
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
             /Resources {resources} >>"
        )
        .into_bytes(),
        stream("", content),
        stream(
            &format!("/Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources {resources}"),
            form,
        ),
    ])
}

/// Arrays nested 100,000 deep: a recursive parser's stack.
pub fn nested_arrays() -> Vec<u8> {
    let mut deep = vec![b'['; 100_000];
    deep.extend(vec![b']'; 100_000]);
    page_citing(deep)
}

/// A form XObject that draws itself: unbounded recursion in the content interpreter.
pub fn self_referencing_form() -> Vec<u8> {
    page_with_form(b"/X1 Do", b"BT /F1 12 Tf 100 700 Td (Loop) Tj ET /X1 Do")
}

/// A glyph a billion points to the right: a layout that pads with spaces to it.
pub fn glyph_at_1e9() -> Vec<u8> {
    page_with_form(
        b"BT /F1 12 Tf 60 700 Td (Left) Tj ET BT /F1 12 Tf 1000000000 700 Td (Far) Tj ET",
        b"",
    )
}

/// A form of 256 KiB of text drawn 75,000 times: 19 GB of glyphs.
pub fn many_dos() -> Vec<u8> {
    let text = "A".repeat(1000);
    let mut form = Vec::new();
    while form.len() < 256 * 1024 {
        form.extend(format!("BT /F1 12 Tf 100 700 Td ({text}) Tj ET\n").into_bytes());
    }
    page_with_form(&b"/X1 Do ".repeat(75_000), &form)
}

/// A cross-reference stream whose entries inflate to 300 MB (zeros: free entries).
pub fn xref_stream_bomb() -> Vec<u8> {
    let mut pdf = b"%PDF-1.5\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
                    2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
        .to_vec();
    let xref_at = pdf.len();
    let data = crate::pdf::zlib_of_zeros(300_000_000);
    pdf.extend_from_slice(
        format!(
            "3 0 obj\n<< /Type /XRef /Size 4 /W [1 4 2] /Root 1 0 R /Filter /FlateDecode \
             /Length {} >>\nstream\n",
            data.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(&data);
    pdf.extend_from_slice(format!("\nendstream\nendobj\nstartxref\n{xref_at}\n%%EOF\n").as_bytes());
    pdf
}

/// A content stream that inflates (flate) to 1 GB.
pub fn flate_bomb() -> Vec<u8> {
    flate_bomb_pdf(1_000_000_000)
}

/// A content stream that decodes (LZW, as PDF writes it: MSB first, early change) to
/// 200 MB of zeros.
pub fn lzw_bomb() -> Vec<u8> {
    let zeros = vec![0u8; 200_000_000];
    let lzw = weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
        .encode(&zeros)
        .expect("LZW of zeros");
    drop(zeros);
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>".to_vec(),
        stream("/Filter /LZWDecode", &lzw),
    ])
}

/// A font whose ToUnicode CMap nests arrays 200,000 deep: adobe-cmap-parser descends
/// recursively, a few hundred bytes of stack a level.
pub fn cmap_nesting() -> Vec<u8> {
    let mut cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n".to_vec();
    cmap.extend(vec![b'['; 200_000]);
    cmap.extend(vec![b']'; 200_000]);
    cmap.extend(b"\nendcmap end end\n");
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
           /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_vec(),
        stream("", b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>".to_vec(),
        stream("", &cmap),
    ])
}

/// A gray PNG of 11,000 × 11,000 px (121 MB of pixels, 120 KB of file): over Textract's
/// 10,000 px a side.
pub fn png_11000() -> Vec<u8> {
    black_png(11_000, 11_000, false)
}

/// One file of the corpus: its name, its extension, how to build it.
pub type Hostile = (&'static str, &'static str, fn() -> Vec<u8>);

/// The corpus.
pub fn corpus() -> Vec<Hostile> {
    vec![
        ("nested-arrays", "pdf", nested_arrays),
        ("self-referencing-form", "pdf", self_referencing_form),
        ("glyph-at-1e9", "pdf", glyph_at_1e9),
        ("75k-dos", "pdf", many_dos),
        ("xref-stream-bomb", "pdf", xref_stream_bomb),
        ("flate-bomb", "pdf", flate_bomb),
        ("lzw-bomb", "pdf", lzw_bomb),
        ("cmap-nesting", "pdf", cmap_nesting),
        ("png-11000", "png", png_11000),
    ]
}
