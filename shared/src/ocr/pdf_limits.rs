//! What a PDF's content may ask of the text-layer reader, so that memory stays bounded.
//!
//! pdf-extract decodes a page's whole content into lopdf operations before it draws any
//! of it, clones the graphics state on every `q`, and our layout collects a glyph per
//! character. Measured on 8 MiB of content (debug build, peak RSS): nested `q` 4.6 GB,
//! `0 0 m` repeated 0.9 GB, one 8 MiB string shown with `Tj` 0.8 GB. So the size of
//! the content is not the bound; what it asks for is. Before pdf-extract reads a
//! document, [`check`] scans the content of every page and every form XObject with a
//! tokenizer that allocates nothing per token, and refuses a file beyond these limits
//! as [`OcrError::TooLarge`], for its own record only.

use std::borrow::Cow;

use pdf_extract::{Document, Object};

use super::OcrError;

/// Tokens (operands and operators) in one page's or form's content. A dense invoice
/// page has a few thousand; each costs the reader up to ~220 bytes, so the limit holds
/// a page's operations under ~35 MB.
pub const MAX_TOKENS: usize = 150_000;
/// Nesting of `q` (saved graphics states) and of arrays and dictionaries. The PDF
/// specification's own implementation limit for `q` is 28.
pub const MAX_NESTING: usize = 64;
/// Bytes of string operands (the text to show) in one page's or form's content: an
/// invoice page shows a few kilobytes.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;

/// Scans every page's content and every form XObject of `document` against the limits.
/// A stream that hits the inflation budget is refused here too (its content would be
/// read truncated).
pub fn check(document: &Document) -> Result<(), OcrError> {
    for page_id in document.get_pages().values() {
        let mut scan = Scan::default();
        for id in document.get_page_contents(*page_id) {
            if let Ok(Object::Stream(stream)) = document.get_object(id) {
                scan.feed(&content_of(stream)?)?;
            }
        }
    }
    for object in document.objects.values() {
        if let Object::Stream(stream) = object
            && stream
                .dict
                .get(b"Subtype")
                .and_then(Object::as_name)
                .is_ok_and(|name| name == b"Form")
        {
            Scan::default().feed(&content_of(stream)?)?;
        }
    }
    Ok(())
}

fn content_of(stream: &pdf_extract::Stream) -> Result<Cow<'_, [u8]>, OcrError> {
    if stream.filters().map_or(true, |f| f.is_empty()) {
        return Ok(Cow::Borrowed(&stream.content));
    }
    match stream.decompressed_content() {
        Ok(data) => Ok(Cow::Owned(data)),
        Err(pdf_extract::Error::Decompress(e)) if e.to_string().contains("beyond its limit") => {
            Err(too_large(format!("a content stream that {e}")))
        }
        // As pdf-extract does: an undecodable stream is read as it is.
        Err(_) => Ok(Cow::Borrowed(&stream.content)),
    }
}

fn too_large(what: String) -> OcrError {
    OcrError::TooLarge { what }
}

/// Counters of one page's (or form's) content, across its streams.
#[derive(Debug, Default)]
struct Scan {
    tokens: usize,
    q_depth: usize,
    text_bytes: usize,
}

fn is_white(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

impl Scan {
    fn feed(&mut self, s: &[u8]) -> Result<(), OcrError> {
        let mut nesting = 0usize;
        let mut i = 0;
        while i < s.len() {
            let c = s[i];
            if is_white(c) {
                i += 1;
                continue;
            }
            match c {
                b'%' => {
                    while i < s.len() && s[i] != b'\n' && s[i] != b'\r' {
                        i += 1;
                    }
                    continue;
                }
                b'(' => {
                    let end = literal_string_end(s, i);
                    self.text(end - i)?;
                    i = end;
                }
                b'<' if s.get(i + 1) == Some(&b'<') => {
                    nesting += 1;
                    i += 2;
                }
                b'<' => {
                    let end = s[i..]
                        .iter()
                        .position(|&b| b == b'>')
                        .map_or(s.len(), |p| i + p + 1);
                    self.text((end - i) / 2)?;
                    i = end;
                }
                b'>' => {
                    nesting = nesting.saturating_sub(1);
                    i += if s.get(i + 1) == Some(&b'>') { 2 } else { 1 };
                    continue;
                }
                b'[' | b'{' => {
                    nesting += 1;
                    i += 1;
                }
                b']' | b'}' => {
                    nesting = nesting.saturating_sub(1);
                    i += 1;
                    continue;
                }
                _ => {
                    let start = i;
                    i += 1;
                    while i < s.len() && !is_white(s[i]) && !is_delimiter(s[i]) {
                        i += 1;
                    }
                    let word = &s[start..i];
                    match word {
                        b"q" => self.q_depth += 1,
                        b"Q" => self.q_depth = self.q_depth.saturating_sub(1),
                        // Inline image data is binary: skip to its `EI`.
                        b"ID" => i = inline_image_end(s, i),
                        _ => {}
                    }
                }
            }
            self.tokens += 1;
            if self.tokens > MAX_TOKENS {
                return Err(too_large(format!(
                    "a page or form with more than {MAX_TOKENS} content tokens"
                )));
            }
            if self.q_depth > MAX_NESTING || nesting > MAX_NESTING {
                return Err(too_large(format!(
                    "content nested more than {MAX_NESTING} levels deep"
                )));
            }
        }
        Ok(())
    }

    fn text(&mut self, bytes: usize) -> Result<(), OcrError> {
        self.text_bytes += bytes;
        if self.text_bytes > MAX_TEXT_BYTES {
            return Err(too_large(format!(
                "a page or form showing more than {} KiB of text",
                MAX_TEXT_BYTES / 1024
            )));
        }
        Ok(())
    }
}

/// The index after the literal string opening at `start` (balanced parentheses,
/// backslash escapes), or the end of the content.
fn literal_string_end(s: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    s.len()
}

/// The index after an inline image's `EI` (white space, `EI`, then white space or the
/// end), or the end of the content.
fn inline_image_end(s: &[u8], from: usize) -> usize {
    let mut i = from;
    while i + 2 <= s.len() {
        if is_white(s[i.saturating_sub(1)])
            && &s[i..i + 2] == b"EI"
            && s.get(i + 2).is_none_or(|&c| is_white(c))
        {
            return i + 2;
        }
        i += 1;
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(content: &[u8]) -> Result<(), OcrError> {
        Scan::default().feed(content)
    }

    #[test]
    fn an_invoice_page_s_content_is_within_the_limits() {
        let page = b"q 1 0 0 1 0 0 cm BT /F1 10 Tf 50 800 Td (Rechnung Nr. \\(RE-1\\)) Tj \
                     [(W)80(ort)] TJ ET Q % a comment ( not a string\n\
                     BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\xff(EI\x01 EI Q q Q";
        scan(page).unwrap();
    }

    #[test]
    fn deep_nesting_many_tokens_and_much_text_are_refused() {
        for (what, content) in [
            ("q", b"q ".repeat(MAX_NESTING + 1)),
            ("arrays", b"[".repeat(MAX_NESTING + 1)),
            ("tokens", b"0 0 m ".repeat(MAX_TOKENS / 3 + 1)),
            ("text", {
                let mut c = b"(".to_vec();
                c.extend(vec![b'a'; MAX_TEXT_BYTES + 1]);
                c.extend(b") Tj");
                c
            }),
        ] {
            let err = scan(&content).unwrap_err();
            assert!(matches!(err, OcrError::TooLarge { .. }), "{what}: {err:?}");
        }
        // Balanced q/Q as deep as allowed, many times over, is fine.
        scan(&b"q q Q Q ".repeat(1_000)).unwrap();
    }
}
