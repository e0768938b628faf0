//! Text of a PDF's text layer with its layout kept, the way `pdftotext -layout` does:
//! characters are grouped into lines by their baseline and placed left to right, and a
//! wide horizontal gap (a table column, a label and its value) becomes a run of spaces
//! proportional to it rather than a single space. Invoice tables only stay readable as
//! tables this way; pdf-extract's own plain-text output collapses every gap to one space.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

use super::OcrError;

/// The longest run of spaces a gap (or an indentation) becomes: a gap as wide as an A4
/// page in 2-pt type is about 300 columns. A glyph placed at x = 1e9 made a 1 GB line.
pub const MAX_SPACE_RUN: usize = 300;

/// Glyphs of one page the layout keeps (as many as the text bytes a page's or form's
/// content may show, `pdf_limits::MAX_TEXT_BYTES`): forms drawn again and again (`Do`)
/// multiply a page's text beyond what its own content shows.
pub const MAX_GLYPHS_PER_PAGE: usize = super::pdf_limits::MAX_TEXT_BYTES;

fn spaces(columns: f64) -> String {
    " ".repeat((columns.max(0.0).round() as usize).min(MAX_SPACE_RUN))
}

#[derive(Debug, Clone)]
struct Glyph {
    x: f64,
    y: f64,
    end: f64,
    size: f64,
    text: String,
}

/// Collects the glyphs of each page and renders them as lines.
#[derive(Debug, Default)]
pub struct LayoutText {
    page_height: f64,
    glyphs: Vec<Glyph>,
    pages: Vec<String>,
}

impl LayoutText {
    /// The text of every page, in page order.
    pub fn into_pages(self) -> Vec<String> {
        self.pages
    }

    fn render_page(glyphs: &mut [Glyph]) -> String {
        // Top to bottom, then left to right.
        glyphs.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)));
        let mut lines: Vec<Vec<&Glyph>> = Vec::new();
        for glyph in glyphs.iter() {
            match lines.last_mut() {
                Some(line) if (glyph.y - line[0].y).abs() <= line[0].size.max(glyph.size) * 0.5 => {
                    line.push(glyph)
                }
                _ => lines.push(vec![glyph]),
            }
        }
        let mut out = String::new();
        let mut last_y: Option<(f64, f64)> = None;
        for mut line in lines {
            line.sort_by(|a, b| a.x.total_cmp(&b.x));
            if let Some((y, size)) = last_y
                && line[0].y - y > size * 2.2
            {
                out.push('\n'); // a blank line where the page has a vertical gap
            }
            // One column of text is about half the font size wide in a proportional font.
            let column =
                (line.iter().map(|g| g.size).sum::<f64>() / line.len() as f64 * 0.5).max(1.0);
            let mut cursor = line[0].x;
            let mut text = spaces((line[0].x - leftmost_margin()) / column);
            for glyph in &line {
                let gap = glyph.x - cursor;
                if gap > column * 2.5 {
                    text.push_str(&spaces((gap / column).max(2.0)));
                } else if gap > glyph.size * 0.15 {
                    text.push(' ');
                }
                text.push_str(&glyph.text);
                cursor = cursor.max(glyph.end);
            }
            out.push_str(text.trim_end());
            out.push('\n');
            last_y = Some((line[0].y, line[0].size));
        }
        out
    }
}

/// Indentation is relative to the page's left edge, minus a typical margin, so a text
/// block starting at the margin is not indented.
fn leftmost_margin() -> f64 {
    50.0
}

impl OutputDev for LayoutText {
    fn begin_page(
        &mut self,
        page: u32,
        media_box: &MediaBox,
        _art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        crate::sandbox::progress(format_args!("page {page}"));
        self.page_height = media_box.ury - media_box.lly;
        self.glyphs.clear();
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        let text = Self::render_page(&mut self.glyphs);
        self.pages.push(text);
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        // The text matrix scales the nominal font size; its x and y scale give the size on the page.
        let sx = font_size * (trm.m11 + trm.m21);
        let sy = font_size * (trm.m12 + trm.m22);
        let size = (sx * sy).abs().sqrt().max(1.0);
        let x = trm.m31;
        let y = self.page_height - trm.m32; // top-down, like reading
        if self.glyphs.len() >= MAX_GLYPHS_PER_PAGE {
            return Err(OutputError::Limit(format!(
                "more than {MAX_GLYPHS_PER_PAGE} characters on one page"
            )));
        }
        self.glyphs.push(Glyph {
            x,
            y,
            end: x + width * size,
            size,
            text: char.to_owned(),
        });
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Empties every image XObject of this (in-memory) document. pdf-extract 0.9 runs `Do`
/// on any XObject as if it were a form: it inflates an image's pixels and parses them
/// as content. A scanned page in `FlateDecode` is 150 MB of pixels to inflate for no
/// text at all (and would hit the inflation cap); the text layer needs none of it.
fn without_image_data(document: &mut pdf_extract::Document) {
    for object in document.objects.values_mut() {
        if let pdf_extract::Object::Stream(stream) = object
            && stream
                .dict
                .get(b"Subtype")
                .and_then(pdf_extract::Object::as_name)
                .is_ok_and(|name| name == b"Image")
        {
            stream.set_plain_content(Vec::new());
        }
    }
}

/// The pages of a PDF as layout-preserving text. A PDF still encrypted after loading (the
/// parser opens those whose user password is empty) is [`OcrError::Encrypted`]: its
/// content streams are ciphertext, and reading them anyway would hand random glyphs on.
pub fn extract_pages(bytes: &[u8]) -> Result<Vec<String>, OcrError> {
    let bad = |e: OutputError| match e {
        OutputError::Limit(what) => OcrError::TooLarge {
            what: format!("a PDF whose text layer asks too much of the reader: {what}"),
        },
        e => OcrError::BadPdf(e.to_string()),
    };
    let mut document = pdf_extract::Document::load_mem(bytes).map_err(|e| bad(e.into()))?;
    if document.is_encrypted() {
        return Err(OcrError::Encrypted);
    }
    without_image_data(&mut document);
    super::pdf_limits::check(&document)?;
    let mut layout = LayoutText::default();
    pdf_extract::output_doc(&document, &mut layout).map_err(bad)?;
    Ok(layout.into_pages())
}
