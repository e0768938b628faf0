//! Transcription: document bytes → text with a quality score (seed 003's provider, seed
//! 004's OCR boundary).
//!
//! What the pipeline does with a file (`functions/ingestion` orchestrates it, because
//! an asynchronous OCR job is remembered on the ingestion row):
//! - text files: their text;
//! - PDFs: the embedded text layer first ([`text_layer`], laid out like
//!   `pdftotext -layout` so table columns stay apart); only pages without usable text
//!   ([`has_usable_text`]) need OCR;
//! - images: always OCR.
//!
//! OCR is [`Textract`] (`OCR_PROVIDER=textract`): `DetectDocumentText` for an image or a
//! single-page PDF, the asynchronous `StartDocumentTextDetection` /
//! `GetDocumentTextDetection` for a multi-page PDF. `OCR_PROVIDER=native` has no OCR
//! engine: it reads text layers and text files, and a scan fails permanently with an
//! error that says so. A page's quality is 1.0 for a text layer and the mean LINE
//! confidence for OCR; the document's is the mean over its pages. A poor result is
//! preprocessed once ([`preprocess_image`], [`preprocess_pdf`]) and read again.
//!
//! CPU-heavy work (PDF parsing, image decoding and preprocessing) runs on the blocking
//! pool, at most one job per CPU at a time ([`on_cpu`]), so it neither stalls the other
//! records of a batch (their deadline timers and heartbeats) nor multiplies the memory
//! of big images by the batch size.

mod pdf_layout;
mod pdf_limits;
pub(crate) mod preprocess;
mod textract;

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::retry::{Classify, RetryClass};

pub use preprocess::{
    ENHANCE_MAX_PIXELS, MAX_IMAGE_ALLOC, MAX_IMAGE_SIDE, PDF_IMAGE_MAX_PIXELS, PreprocessedImage,
    TEXTRACT_MAX_SIDE, TEXTRACT_SYNC_MAX_BYTES, image_job_bytes, pdf_preprocess_job_bytes,
    preprocess_image, preprocess_pdf, textract_takes_image,
};
pub use textract::{TEXTRACT_AWS_ACTIONS, Textract};

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
    /// `native` (text layers only), `textract` (OCR only) or `native+textract`.
    pub provider: String,
    pub text: String,
    /// 0–1.
    pub quality: f64,
    pub page_count: u32,
    pub pages: Vec<PageQuality>,
    /// Whether this is the transcription of the preprocessed file.
    #[serde(default)]
    pub preprocessed: bool,
    /// Where the preprocessed file was stored, so a retry that reuses this
    /// transcription can still record it on the ingestion.
    #[serde(default)]
    pub preprocessed_file_path: Option<String>,
}

/// The text of one page and how well it was read (0–1).
#[derive(Debug, Clone, PartialEq)]
pub struct PageText {
    pub text: String,
    pub quality: f64,
}

impl PageText {
    /// A page of a text layer: quality 1.0 when it holds usable text, else 0.0.
    pub fn from_text_layer(text: String) -> Self {
        let quality = if has_usable_text(&text) { 1.0 } else { 0.0 };
        PageText { text, quality }
    }
}

/// Letters and digits a page's text layer needs to count as text: a scanned page often
/// carries a stray page number or a producer's stamp in its text layer, which is not its
/// content.
pub const USABLE_TEXT_CHARS: usize = 16;

/// Whether a page's text layer holds its text, or the page needs OCR.
pub fn has_usable_text(text: &str) -> bool {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .take(USABLE_TEXT_CHARS)
        .count()
        >= USABLE_TEXT_CHARS
}

impl Transcription {
    /// Joins pages (form feed between them); the quality is the mean of the pages'.
    pub fn from_pages(provider: &str, pages: Vec<PageText>) -> Self {
        let page_count = pages.len() as u32;
        let quality = if pages.is_empty() {
            0.0
        } else {
            pages.iter().map(|p| p.quality).sum::<f64>() / pages.len() as f64
        };
        let qualities = pages
            .iter()
            .enumerate()
            .map(|(i, p)| PageQuality {
                page: i as u32 + 1,
                quality: p.quality,
            })
            .collect();
        let text = pages
            .into_iter()
            .map(|p| p.text)
            .collect::<Vec<_>>()
            .join("\n\u{c}\n");
        Transcription {
            provider: provider.to_owned(),
            text,
            quality,
            page_count,
            pages: qualities,
            preprocessed: false,
            preprocessed_file_path: None,
        }
    }
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
    #[error(
        "{what} needs OCR, and OCR_PROVIDER=native reads only text layers (set OCR_PROVIDER=textract)"
    )]
    NeedsOcr { what: String },
    #[error("the PDF could not be read: {0}")]
    BadPdf(String),
    #[error(
        "the PDF is encrypted with a password; docflow reads only PDFs that open without one \
         (ask the sender for an unprotected copy)"
    )]
    Encrypted,
    #[error("the image could not be decoded")]
    BadImage(#[source] image::ImageError),
    #[error("the file is too large to process: {what}")]
    TooLarge { what: String },
    #[error("Textract {operation} failed")]
    Textract {
        operation: &'static str,
        class: RetryClass,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("Textract job {job_id} failed: {message}")]
    TextractJobFailed { job_id: String, message: String },
    #[error("Textract no longer knows job {job_id} (its results expire after 7 days)")]
    TextractJobGone { job_id: String },
    #[error("the blocking pool failed: {0}")]
    Join(String),
    /// The parsing sandbox's child died or ran out of one of its limits
    /// (`docflow::sandbox`): this file, not the process.
    #[error("the file could not be read safely: {reason}")]
    Unsafe { reason: String },
    /// The parsing sandbox could not run a child (cannot spawn, cannot wait).
    #[error("the parsing sandbox failed: {0}")]
    Sandbox(String),
}

impl Classify for OcrError {
    /// Bad input is permanent (empty, unsupported, unreadable, too large, a scan without
    /// an OCR engine). Textract errors carry the class decided where they were
    /// understood (a refused document is permanent, throttling and outages transient).
    /// A failed or expired Textract job is transient: the next attempt starts a new one.
    fn retry_class(&self) -> RetryClass {
        match self {
            OcrError::Empty
            | OcrError::Unsupported { .. }
            | OcrError::NeedsOcr { .. }
            | OcrError::BadPdf(_)
            | OcrError::Encrypted
            | OcrError::BadImage(_)
            | OcrError::TooLarge { .. }
            | OcrError::Unsafe { .. } => RetryClass::Permanent,
            OcrError::Textract { class, .. } => *class,
            OcrError::TextractJobFailed { .. }
            | OcrError::TextractJobGone { .. }
            | OcrError::Join(_)
            | OcrError::Sandbox(_) => RetryClass::Transient,
        }
    }
}

/// The seed's CPU pool: one blocking job per CPU at a time.
static CPU: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    ))
});

const MIB: u64 = 1024 * 1024;

/// The memory that CPU jobs may hold together, in MiB: half of the function's memory
/// (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, 1024 MB when unset, as locally). The other half
/// is the runtime, the SDK clients and the files the batch's records hold.
pub fn memory_budget_mib() -> u64 {
    let function_mb = std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&mb| mb >= 128)
        .unwrap_or(1024);
    function_mb / 2
}

/// The memory budget as a semaphore of MiB: a job takes as many permits as it needs at
/// its peak, so one large file waits for room instead of joining nine others in an OOM.
static MEMORY: LazyLock<Arc<Semaphore>> =
    LazyLock::new(|| Arc::new(Semaphore::new(*BUDGET_MIB as usize)));

/// [`memory_budget_mib`], read once: the environment does not change in a process.
static BUDGET_MIB: LazyLock<u64> = LazyLock::new(memory_budget_mib);

/// Runs CPU-heavy `work` on the blocking pool once `needs` bytes of the memory budget
/// are free and a CPU is: at most one job per CPU at a time, and never more memory
/// than the budget ([`memory_budget_mib`]) held by jobs together. A job needing more
/// than the whole budget is [`OcrError::TooLarge`] (permanent) without running: it
/// costs its own record, not the batch.
///
/// Cancel-safe for the bounds: a blocking job cannot be stopped, so when the caller's
/// future is dropped (a deadline, `select!`) the job runs on. Both permits move into the
/// job and are released when the job really ends, not when the future is dropped, so
/// cancelled records never let more jobs, or more memory, run than the bounds allow.
pub async fn on_cpu<T, W>(needs: u64, work: W) -> Result<T, OcrError>
where
    W: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    on_pool(&CPU, (&MEMORY, *BUDGET_MIB), needs, work).await
}

/// The MiB of the memory budget that CPU jobs (and sandbox children) hold now.
pub fn budget_in_use_mib() -> u64 {
    BUDGET_MIB.saturating_sub(MEMORY.available_permits() as u64)
}

/// A CPU and its share of the memory budget, held while a job runs (on the blocking pool
/// or in a child process).
pub(crate) type Permits = (OwnedSemaphorePermit, OwnedSemaphorePermit);

/// Waits for `needs` bytes of the memory budget and a CPU (see [`on_cpu`]), for work that
/// runs elsewhere: the parsing sandbox's children.
pub(crate) async fn cpu_permits(needs: u64) -> Result<Permits, OcrError> {
    acquire(&CPU, (&MEMORY, *BUDGET_MIB), needs).await
}

async fn acquire(
    cpu: &Arc<Semaphore>,
    (memory, budget): (&Arc<Semaphore>, u64),
    needs: u64,
) -> Result<Permits, OcrError> {
    let mib = needs.div_ceil(MIB).max(1);
    if mib > budget {
        return Err(OcrError::TooLarge {
            what: format!(
                "it needs about {mib} MiB to process, more than the {budget} MiB one \
                 file may use in this function (half of its memory)"
            ),
        });
    }
    // Memory first, then a CPU: a job that holds a CPU already holds its memory.
    let memory = Arc::clone(memory)
        .acquire_many_owned(u32::try_from(mib).unwrap_or(u32::MAX))
        .await
        .map_err(|e| OcrError::Join(e.to_string()))?;
    let cpu = Arc::clone(cpu)
        .acquire_owned()
        .await
        .map_err(|e| OcrError::Join(e.to_string()))?;
    Ok((memory, cpu))
}

/// [`on_cpu`] with the semaphores given: the permits are owned by the blocking job.
async fn on_pool<T, W>(
    cpu: &Arc<Semaphore>,
    memory: (&Arc<Semaphore>, u64),
    needs: u64,
    work: W,
) -> Result<T, OcrError>
where
    W: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let permits = acquire(cpu, memory, needs).await?;
    tokio::task::spawn_blocking(move || {
        let _permits = permits;
        work()
    })
    .await
    .map_err(|e| OcrError::Join(e.to_string()))
}

/// The most bytes all the streams of one PDF may inflate to while it is read, and the
/// most one stream may: a text-heavy page's content stream is tens of kilobytes, a
/// hundred-page invoice's text layer a few megabytes; a flate bomb is gigabytes.
pub const PDF_INFLATE_TOTAL: u64 = 64 * MIB;
pub const PDF_INFLATE_PER_STREAM: u64 = 8 * MIB;

/// Runs `read` (lopdf/pdf-extract on an untrusted PDF) with the inflation caps of
/// [`PDF_INFLATE_TOTAL`] and [`PDF_INFLATE_PER_STREAM`] (the vendored lopdf's
/// `inflation` budget); a file that hits them is [`OcrError::TooLarge`] whatever `read`
/// made of the truncated streams.
fn within_inflation_budget<T>(
    pdf_len: usize,
    read: impl FnOnce() -> Result<T, OcrError>,
) -> Result<T, OcrError> {
    let max_objects = pdf_object_limit(pdf_len);
    let ((value, inflation), objects) = lopdf::inflation::with_object_limit(max_objects, || {
        lopdf::inflation::with_limits(PDF_INFLATE_TOTAL, PDF_INFLATE_PER_STREAM, read)
    });
    if objects.exceeded {
        return Err(OcrError::TooLarge {
            what: format!(
                "a PDF of {pdf_len} bytes that parses into more than {max_objects} objects \
                 (each costs the parser about {PDF_OBJECT_BYTES} bytes: `[0 0 0 …]` turns 2 \
                 bytes of file into that)"
            ),
        });
    }
    if inflation.exceeded {
        return Err(OcrError::TooLarge {
            what: format!(
                "a PDF whose compressed streams inflate beyond {} MiB in all or {} MiB in one \
                 (a decompression bomb, or far more content than an invoice has)",
                PDF_INFLATE_TOTAL / MIB,
                PDF_INFLATE_PER_STREAM / MIB
            ),
        });
    }
    value
}

/// What one parsed object costs the PDF parser (lopdf's `Object` and its container), as
/// the memory estimates below count it.
pub const PDF_OBJECT_BYTES: u64 = 120;

/// The objects a PDF of `pdf_len` bytes may parse into: as many as fit in four times the
/// file at [`PDF_OBJECT_BYTES`] each (the estimates count the file and four times it),
/// and at least 200,000 (24 MB) for small files dense with numbers (a font's widths).
pub fn pdf_object_limit(pdf_len: usize) -> u64 {
    (pdf_len as u64 * 4 / PDF_OBJECT_BYTES).max(200_000)
}

/// What reading a PDF's text layer needs at its peak: the file and its parsed objects
/// (at most [`pdf_object_limit`] of them), one stream inflated within its cap and its copy, and one
/// page's operations and glyphs within the content limits of `pdf_limits` (measured:
/// up to ~220 bytes a token, ~100 a glyph).
pub fn text_layer_job_bytes(pdf_len: usize) -> u64 {
    pdf_len as u64
        + pdf_object_limit(pdf_len) * PDF_OBJECT_BYTES
        + PDF_INFLATE_PER_STREAM * 2
        + pdf_limits::MAX_TOKENS as u64 * 220
        + pdf_limits::MAX_TEXT_BYTES as u64 * 100
}

/// The text layer of each page of a PDF, in page order: parsed in the parsing sandbox
/// (`docflow::sandbox`), within the CPU-job budget.
pub async fn text_layer(pdf: Bytes) -> Result<Vec<String>, OcrError> {
    use crate::sandbox::{Header, Job, run, unexpected};
    match run(Job::TextLayer, text_layer_job_bytes(pdf.len()), pdf).await? {
        (Header::Pages(pages), _) => pages.map_err(OcrError::from),
        (other, _) => Err(unexpected(Job::TextLayer, &other)),
    }
}

/// [`text_layer`]'s work, here and now: what the sandbox's child runs.
pub(crate) fn read_text_layer(pdf: &[u8]) -> Result<Vec<String>, OcrError> {
    within_inflation_budget(pdf.len(), || {
        // pdf-extract panics on some malformed files; a panic is a bad PDF, not a crash.
        std::panic::catch_unwind(|| pdf_layout::extract_pages(pdf))
            .map_err(|_| OcrError::BadPdf("the PDF parser gave up on this file".into()))?
    })
}

/// The OCR engine, if any: `OCR_PROVIDER`.
#[derive(Debug, Clone)]
pub enum Transcriber {
    /// Text layers and text files only.
    Native,
    /// Text layers first, Textract for images and pages without text.
    Textract(aws_sdk_textract::Client),
}

impl Transcriber {
    pub fn name(&self) -> &'static str {
        match self {
            Transcriber::Native => "native",
            Transcriber::Textract(_) => "textract",
        }
    }

    /// The OCR engine; `None` for `native`.
    pub fn ocr(&self) -> Option<Textract> {
        match self {
            Transcriber::Native => None,
            Transcriber::Textract(client) => Some(Textract::new(client.clone())),
        }
    }

    /// The text of a text file or the text layer of a PDF, without OCR (what
    /// `docflow extract` shows for a local file). Images are
    /// [`OcrError::Unsupported`]: OCR reads documents from S3, see the ingestion
    /// pipeline.
    pub async fn transcribe(
        &self,
        kind: FileKind,
        bytes: &[u8],
    ) -> Result<Transcription, OcrError> {
        if bytes.is_empty() {
            return Err(OcrError::Empty);
        }
        let pages = match kind {
            FileKind::Text => vec![String::from_utf8_lossy(bytes).into_owned()],
            FileKind::Pdf => text_layer(Bytes::copy_from_slice(bytes)).await?,
            other => {
                return Err(OcrError::Unsupported {
                    provider: "native",
                    kind: other,
                });
            }
        };
        Ok(Transcription::from_pages(
            "native",
            pages
                .into_iter()
                .map(|text| PageText {
                    quality: if text.trim().is_empty() { 0.0 } else { 1.0 },
                    text,
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests;
