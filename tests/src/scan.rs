//! PDFs as scanners write them, for OCR tests: each page a full-page grayscale JPEG
//! image (`DCTDecode`), optionally with a text layer on top (a digital page), so one
//! document can mix text pages and scanned pages.

use std::io::Cursor;

use image::GrayImage;

/// One page: its text layer (may be empty) and its scanned image (if any).
pub struct Page<'a> {
    pub text: &'a [&'a str],
    pub scan: Option<GrayImage>,
}

/// A page with only a scanned image: no text layer at all.
pub fn scanned(scan: GrayImage) -> Page<'static> {
    Page {
        text: &[],
        scan: Some(scan),
    }
}

/// A page with a text layer only.
pub fn digital<'a>(text: &'a [&'a str]) -> Page<'a> {
    Page { text, scan: None }
}

/// A washed-out "scan": gray noise in a narrow, light range (what preprocessing
/// stretches).
pub fn faint_scan(width: u32, height: u32) -> GrayImage {
    let mut img = GrayImage::new(width, height);
    for (x, y, p) in img.enumerate_pixels_mut() {
        p.0[0] = 170 + ((x * 7 + y * 13) % 40) as u8;
    }
    img
}

/// The scan as a PNG file, as a phone or a scanner app uploads it.
pub fn png(image: &GrayImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encode PNG");
    out.into_inner()
}

fn jpeg(image: &GrayImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, image::ImageFormat::Jpeg)
        .expect("encode JPEG");
    out.into_inner()
}

/// Builds the PDF (A4 pages, Helvetica for the text layer).
pub fn pdf(pages: &[Page]) -> Vec<u8> {
    // Objects: 1 catalog, 2 pages, 3 font, then per page: page, content, image.
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        Vec::new(), // the page tree, once the kids are known
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    let mut kids = Vec::new();
    for page in pages {
        let page_id = objects.len() + 1;
        let content_id = page_id + 1;
        let image_id = page_id + 2;
        kids.push(format!("{page_id} 0 R"));
        let xobject = if page.scan.is_some() {
            format!(" /XObject << /Im1 {image_id} 0 R >>")
        } else {
            String::new()
        };
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content_id} 0 R \
                 /Resources << /Font << /F1 3 0 R >>{xobject} >> >>"
            )
            .into_bytes(),
        );
        let mut content = Vec::new();
        if page.scan.is_some() {
            content.extend(b"q 595 0 0 842 0 0 cm /Im1 Do Q\n");
        }
        for (row, line) in page.text.iter().enumerate() {
            let y = 800 - 14 * row;
            let escaped = line
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            content.extend(format!("BT /F1 10 Tf 50 {y} Td ({escaped}) Tj ET\n").into_bytes());
        }
        objects.push(stream("", &content));
        if let Some(scan) = &page.scan {
            objects.push(stream(
                &format!(
                    "/Type /XObject /Subtype /Image /Width {} /Height {} /ColorSpace /DeviceGray \
                     /BitsPerComponent 8 /Filter /DCTDecode ",
                    scan.width(),
                    scan.height()
                ),
                &jpeg(scan),
            ));
        }
    }
    objects[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        pages.len()
    )
    .into_bytes();

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

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut object = format!("<< {dict}/Length {} >>\nstream\n", data.len()).into_bytes();
    object.extend(data);
    object.extend(b"\nendstream");
    object
}
