//! Transcription: document bytes → text with a quality score (seed 004's OCR boundary).
//!
//! Two providers behind [`Transcriber`]:
//! - `native`: the embedded text layer of PDFs (lopdf/pdf-extract, laid out like
//!   `pdftotext -layout` so table columns stay apart) and plain-text files;
//!   quality 1.0 when text was found, 0.0 when none. Offline; the local default.
//! - `textract`: AWS Textract `DetectDocumentText` (images, single-page PDFs); quality
//!   is the mean LINE confidence.
//!
//! CPU-heavy work (PDF parsing, image preprocessing) runs on the blocking pool so it
//! never stalls the other records of a batch.

mod pdf_layout;

use std::io::Cursor;

use serde::{Deserialize, Serialize};

use crate::retry::{Classify, RetryClass};

/// A file type the pipeline accepts, from the S3 key's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Pdf,
    Text,
    Png,
    Jpeg,
}

impl FileKind {
    /// `None` for an unsupported extension.
    pub fn from_path(path: &str) -> Option<Self> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "pdf" => Some(FileKind::Pdf),
            "txt" | "text" => Some(FileKind::Text),
            "png" => Some(FileKind::Png),
            "jpg" | "jpeg" => Some(FileKind::Jpeg),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            FileKind::Pdf => "pdf",
            FileKind::Text => "txt",
            FileKind::Png => "png",
            FileKind::Jpeg => "jpg",
        }
    }

    pub fn mime_type(self) -> &'static str {
        match self {
            FileKind::Pdf => "application/pdf",
            FileKind::Text => "text/plain",
            FileKind::Png => "image/png",
            FileKind::Jpeg => "image/jpeg",
        }
    }

    pub fn is_image(self) -> bool {
        matches!(self, FileKind::Png | FileKind::Jpeg)
    }
}

/// Quality of one page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageQuality {
    pub page: u32,
    pub quality: f64,
}

/// The whole transcription result, stored as `ingestions/{id}/transcription-output.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcription {
    pub provider: String,
    pub text: String,
    /// 0–1.
    pub quality: f64,
    pub page_count: u32,
    pub pages: Vec<PageQuality>,
    /// Whether this is the transcription of the preprocessed image.
    #[serde(default)]
    pub preprocessed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum OcrError {
    #[error("the file is empty")]
    Empty,
    #[error("{provider} cannot transcribe {kind:?} files")]
    Unsupported {
        provider: &'static str,
        kind: FileKind,
    },
    #[error("the PDF could not be read: {0}")]
    BadPdf(String),
    #[error("the image could not be decoded")]
    BadImage(#[source] image::ImageError),
    #[error("Textract DetectDocumentText failed")]
    Textract(
        #[source]
        Box<
            aws_sdk_textract::error::SdkError<
                aws_sdk_textract::operation::detect_document_text::DetectDocumentTextError,
            >,
        >,
    ),
    #[error("the blocking pool failed: {0}")]
    Join(String),
}

impl Classify for OcrError {
    /// Bad input is permanent. For Textract: throttling, internal errors and transport
    /// failures are transient; a document it rejects (bad format, too large) is permanent.
    fn retry_class(&self) -> RetryClass {
        match self {
            OcrError::Empty
            | OcrError::Unsupported { .. }
            | OcrError::BadPdf(_)
            | OcrError::BadImage(_) => RetryClass::Permanent,
            OcrError::Join(_) => RetryClass::Transient,
            OcrError::Textract(e) => {
                use aws_sdk_textract::operation::detect_document_text::DetectDocumentTextError as E;
                match e.as_service_error() {
                    Some(
                        E::BadDocumentException(_)
                        | E::DocumentTooLargeException(_)
                        | E::UnsupportedDocumentException(_)
                        | E::InvalidParameterException(_)
                        | E::InvalidS3ObjectException(_)
                        | E::AccessDeniedException(_),
                    ) => RetryClass::Permanent,
                    _ => RetryClass::Transient,
                }
            }
        }
    }
}

/// The OCR seam: one transcriber per provider.
#[derive(Debug, Clone)]
pub enum Transcriber {
    Native,
    Textract(aws_sdk_textract::Client),
}

impl Transcriber {
    pub fn name(&self) -> &'static str {
        match self {
            Transcriber::Native => "native",
            Transcriber::Textract(_) => "textract",
        }
    }

    pub async fn transcribe(
        &self,
        kind: FileKind,
        bytes: &[u8],
    ) -> Result<Transcription, OcrError> {
        if bytes.is_empty() {
            return Err(OcrError::Empty);
        }
        match self {
            Transcriber::Native => native(kind, bytes.to_vec()).await,
            Transcriber::Textract(client) => textract(client, kind, bytes).await,
        }
    }
}

async fn native(kind: FileKind, bytes: Vec<u8>) -> Result<Transcription, OcrError> {
    let pages: Vec<String> = match kind {
        FileKind::Text => vec![String::from_utf8_lossy(&bytes).into_owned()],
        FileKind::Pdf => tokio::task::spawn_blocking(move || {
            // pdf-extract panics on some malformed files; a panic is a bad PDF, not a crash.
            std::panic::catch_unwind(|| pdf_layout::extract_pages(&bytes))
                .map_err(|_| OcrError::BadPdf("the PDF parser gave up on this file".into()))?
                .map_err(|e| OcrError::BadPdf(e.to_string()))
        })
        .await
        .map_err(|e| OcrError::Join(e.to_string()))??,
        other => {
            return Err(OcrError::Unsupported {
                provider: "native",
                kind: other,
            });
        }
    };
    let quality_of = |text: &str| if text.trim().is_empty() { 0.0 } else { 1.0 };
    let page_quality: Vec<PageQuality> = pages
        .iter()
        .enumerate()
        .map(|(i, text)| PageQuality {
            page: i as u32 + 1,
            quality: quality_of(text),
        })
        .collect();
    let text = pages.join("\n\u{c}\n");
    Ok(Transcription {
        provider: "native".into(),
        quality: quality_of(&text),
        page_count: pages.len() as u32,
        pages: page_quality,
        text,
        preprocessed: false,
    })
}

async fn textract(
    client: &aws_sdk_textract::Client,
    kind: FileKind,
    bytes: &[u8],
) -> Result<Transcription, OcrError> {
    use aws_sdk_textract::types::{BlockType, Document};
    if kind == FileKind::Text {
        return Err(OcrError::Unsupported {
            provider: "textract",
            kind,
        });
    }
    let output = client
        .detect_document_text()
        .document(
            Document::builder()
                .bytes(aws_sdk_textract::primitives::Blob::new(bytes))
                .build(),
        )
        .send()
        .await
        .map_err(|e| OcrError::Textract(Box::new(e)))?;
    let page_count = output
        .document_metadata()
        .and_then(|m| m.pages())
        .unwrap_or(1)
        .max(1) as u32;
    let mut text = String::new();
    let mut per_page: std::collections::BTreeMap<u32, (f64, u32)> =
        std::collections::BTreeMap::new();
    for block in output.blocks() {
        if block.block_type() != Some(&BlockType::Line) {
            continue;
        }
        if let Some(line) = block.text() {
            text.push_str(line);
            text.push('\n');
        }
        let page = block.page().unwrap_or(1).max(1) as u32;
        let entry = per_page.entry(page).or_insert((0.0, 0));
        entry.0 += f64::from(block.confidence().unwrap_or(0.0)) / 100.0;
        entry.1 += 1;
    }
    let pages: Vec<PageQuality> = (1..=page_count)
        .map(|page| {
            let (sum, n) = per_page.get(&page).copied().unwrap_or((0.0, 0));
            PageQuality {
                page,
                quality: if n == 0 { 0.0 } else { sum / f64::from(n) },
            }
        })
        .collect();
    let (sum, n) = per_page
        .values()
        .fold((0.0, 0), |(s, c), (ps, pc)| (s + ps, c + pc));
    Ok(Transcription {
        provider: "textract".into(),
        text,
        quality: if n == 0 { 0.0 } else { sum / f64::from(n) },
        page_count,
        pages,
        preprocessed: false,
    })
}

/// Improves a poor scan once before a second transcription: grayscale, contrast stretch
/// (darkest pixel → black, brightest → white), sharpen. Returns PNG bytes. Runs on the
/// blocking pool.
pub async fn preprocess_image(bytes: Vec<u8>) -> Result<Vec<u8>, OcrError> {
    tokio::task::spawn_blocking(move || {
        let image = image::load_from_memory(&bytes).map_err(OcrError::BadImage)?;
        let mut gray = image.to_luma8();
        let (lo, hi) = gray.pixels().fold((u8::MAX, u8::MIN), |(lo, hi), p| {
            (lo.min(p.0[0]), hi.max(p.0[0]))
        });
        if hi > lo {
            let scale = 255.0 / f32::from(hi - lo);
            for p in gray.pixels_mut() {
                p.0[0] = (f32::from(p.0[0] - lo) * scale).round() as u8;
            }
        }
        let sharpened = image::imageops::unsharpen(&gray, 1.0, 5);
        let mut out = Cursor::new(Vec::new());
        sharpened
            .write_to(&mut out, image::ImageFormat::Png)
            .map_err(OcrError::BadImage)?;
        Ok(out.into_inner())
    })
    .await
    .map_err(|e| OcrError::Join(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_kinds_come_from_the_extension() {
        assert_eq!(FileKind::from_path("documents/a.PDF"), Some(FileKind::Pdf));
        assert_eq!(
            FileKind::from_path("documents/a.jpeg"),
            Some(FileKind::Jpeg)
        );
        assert_eq!(FileKind::from_path("documents/a.docx"), None);
        assert_eq!(FileKind::from_path("documents/noext"), None);
    }

    #[tokio::test]
    async fn plain_text_is_transcribed_with_full_quality() {
        let t = Transcriber::Native
            .transcribe(FileKind::Text, b"Rechnung Nr. 1")
            .await
            .unwrap();
        assert_eq!(t.text, "Rechnung Nr. 1");
        assert_eq!(t.quality, 1.0);
        assert_eq!(t.page_count, 1);
    }

    #[tokio::test]
    async fn whitespace_only_text_has_zero_quality_and_empty_bytes_are_an_error() {
        let t = Transcriber::Native
            .transcribe(FileKind::Text, b"  \n ")
            .await
            .unwrap();
        assert_eq!(t.quality, 0.0);
        let err = Transcriber::Native
            .transcribe(FileKind::Text, b"")
            .await
            .unwrap_err();
        assert!(matches!(err, OcrError::Empty));
        assert!(!err.is_transient());
    }

    #[tokio::test]
    async fn garbage_named_pdf_is_a_permanent_error() {
        let err = Transcriber::Native
            .transcribe(FileKind::Pdf, b"not a pdf at all")
            .await
            .unwrap_err();
        assert!(matches!(err, OcrError::BadPdf(_)), "{err:?}");
        assert!(!err.is_transient());
    }

    #[tokio::test]
    async fn preprocessing_stretches_contrast_to_the_full_range() {
        let mut img = image::GrayImage::new(8, 8);
        for (x, _, p) in img.enumerate_pixels_mut() {
            p.0[0] = 100 + (x as u8) * 5; // a washed-out 100..135 range
        }
        let mut png = Cursor::new(Vec::new());
        img.write_to(&mut png, image::ImageFormat::Png).unwrap();

        let out = preprocess_image(png.into_inner()).await.unwrap();

        let result = image::load_from_memory(&out).unwrap().to_luma8();
        let (lo, hi) = result
            .pixels()
            .fold((255u8, 0u8), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])));
        assert!(lo <= 10 && hi >= 245, "stretched to {lo}..{hi}");
    }
}
