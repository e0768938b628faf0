//! A minimal PDF writer for test fixtures: one page per slice of lines, Helvetica,
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
        let mut stream = b"BT /F1 10 Tf 14 TL 50 800 Td\n".to_vec();
        for line in lines.iter() {
            stream.push(b'(');
            stream.extend(win_ansi(line));
            stream.extend(b") Tj T*\n");
        }
        stream.extend(b"ET");
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
