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
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancelled_cpu_job_keeps_its_permit_until_the_job_really_ends() {
        // Arrange: one permit; a job that says it started and then waits for the gate.
        let pool = Arc::new(Semaphore::new(1));
        let memory = Arc::new(Semaphore::new(memory_budget_mib() as usize));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
        let mut job = Box::pin(on_pool(
            &pool,
            (&memory, memory_budget_mib()),
            10 * MIB,
            move || {
                let _ = started_tx.send(());
                let _ = gate_rx.recv();
                let _ = ended_tx.send(());
            },
        ));
        let wait = std::time::Duration::from_secs(30);

        // Act: cancel the future once the job runs on the blocking pool.
        tokio::select! {
            _ = &mut job => panic!("the job cannot end before the gate opens"),
            started = tokio::time::timeout(wait, started_rx) => {
                started.expect("the job started").expect("the job signals its start");
            }
        }
        drop(job);

        // Assert: the job still runs, so its permit is still taken.
        assert_eq!(
            pool.available_permits(),
            0,
            "the permit of a job still running was released by the cancellation"
        );
        gate_tx.send(()).expect("the job waits for the gate");
        tokio::time::timeout(wait, ended_rx)
            .await
            .expect("the job ended")
            .expect("the job signals its end");
        let permit = tokio::time::timeout(wait, pool.acquire())
            .await
            .expect("the permit comes back once the job has ended");
        drop(permit);
        assert_eq!(
            memory.available_permits() as u64,
            memory_budget_mib(),
            "the job's memory came back too"
        );
    }

    #[tokio::test]
    async fn jobs_wait_for_their_memory_and_one_larger_than_the_budget_is_refused() {
        // Arrange: two CPUs, a budget of 100 MiB; a 70 MiB job that waits at a gate.
        let cpu = Arc::new(Semaphore::new(2));
        let memory = Arc::new(Semaphore::new(100));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let wait = std::time::Duration::from_secs(30);
        let big = tokio::spawn({
            let (cpu, memory) = (Arc::clone(&cpu), Arc::clone(&memory));
            async move {
                on_pool(&cpu, (&memory, 100), 70 * MIB, move || {
                    let _ = started_tx.send(());
                    let _ = gate_rx.recv();
                })
                .await
            }
        });
        tokio::time::timeout(wait, started_rx)
            .await
            .expect("the big job started")
            .expect("it signals its start");

        // Act: a 40 MiB job while 70 MiB are held, with a CPU free.
        let (ran_tx, mut ran_rx) = tokio::sync::oneshot::channel::<()>();
        let second = tokio::spawn({
            let (cpu, memory) = (Arc::clone(&cpu), Arc::clone(&memory));
            async move { on_pool(&cpu, (&memory, 100), 40 * MIB, move || ran_tx.send(())).await }
        });

        // Assert: it waits for memory, not for a CPU, and runs once the first has ended.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            ran_rx.try_recv().is_err(),
            "ran beside a job holding 70 of 100 MiB"
        );
        assert_eq!(cpu.available_permits(), 1, "a CPU was free all along");
        gate_tx.send(()).expect("the big job waits");
        big.await.unwrap().unwrap();
        tokio::time::timeout(wait, second)
            .await
            .expect("the second job ran")
            .unwrap()
            .unwrap()
            .unwrap();

        // And a job larger than the whole budget is refused without running.
        let err = on_pool(&cpu, (&memory, 100), 101 * MIB, || ())
            .await
            .unwrap_err();
        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
        assert!(!err.is_transient());
    }

    /// A PDF written byte by byte (objects `1 0 obj` … in order, with a correct xref):
    /// for what lopdf's own writer would not write (nesting 100,000 deep).
    fn raw_pdf(objects: &[Vec<u8>]) -> Bytes {
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
        out.into()
    }

    /// One empty page whose dictionary cites `object` (object 4), which the parser reads
    /// with the rest of the file.
    fn page_citing(object: Vec<u8>) -> Bytes {
        raw_pdf(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Extra 4 0 R >>".to_vec(),
            object,
        ])
    }

    /// One page with `content`, font `/F1` (Helvetica) and the form `/X1` (object 5),
    /// whose own content is `form` and whose resources are the page's.
    fn page_with_form(content: &[u8], form: &[u8]) -> Bytes {
        let resources = "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> \
                         /XObject << /X1 5 0 R >> >>";
        let stream = |body: &[u8], dict: &str| {
            let mut s = format!("<< {dict} /Length {} >>\nstream\n", body.len()).into_bytes();
            s.extend(body);
            s.extend(b"\nendstream");
            s
        };
        raw_pdf(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
                 /Resources {resources} >>"
            )
            .into_bytes(),
            stream(content, ""),
            stream(
                form,
                &format!(
                    "/Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources {resources}"
                ),
            ),
        ])
    }

    #[tokio::test]
    async fn arrays_nested_a_hundred_thousand_deep_are_not_recursed_into() {
        let mut deep = vec![b'['; 100_000];
        deep.extend(vec![b']'; 100_000]);
        let pdf = page_citing(deep);

        // On the blocking pool's thread, as in the function: a stack overflow aborts the
        // whole test process.
        let read = text_layer(pdf).await;

        assert!(
            read.is_ok() || !read.as_ref().unwrap_err().is_transient(),
            "{read:?}"
        );
        // The nesting within the limit still reads.
        let mut nested = vec![b'['; 60];
        nested.extend(vec![b']'; 60]);
        let fine = page_citing(nested);
        assert_eq!(text_layer(fine).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_pdf_that_parses_into_more_objects_than_its_size_allows_is_refused() {
        // 4 MB of `0 `: two million numbers, about 240 MB of parsed objects from a file
        // whose estimate allows it about 16 MB of them.
        let mut zeros = b"[".to_vec();
        zeros.extend(b"0 ".repeat(2_000_000));
        zeros.push(b']');
        let pdf = page_citing(zeros);
        assert!(pdf_object_limit(pdf.len()) < 2_000_000);

        let err = text_layer(pdf.clone()).await.unwrap_err();

        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("objects"), "{err}");
        let err = preprocess::preprocess_pdf(pdf).await.unwrap_err();
        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_form_that_draws_itself_is_refused_not_recursed_into() {
        let pdf = page_with_form(b"/X1 Do", b"BT /F1 12 Tf 100 700 Td (Loop) Tj ET /X1 Do");

        let err = text_layer(pdf).await.unwrap_err();

        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("nested deeper than 12"), "{err}");
    }

    #[tokio::test]
    async fn a_form_drawn_twenty_thousand_times_is_refused() {
        let content = b"/X1 Do ".repeat(20_000);
        let pdf = page_with_form(&content, b"BT /F1 12 Tf 100 700 Td (ABC) Tj ET");

        let err = text_layer(pdf).await.unwrap_err();

        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("form XObjects drawn"), "{err}");
        // A form drawn on a page (a letterhead, a stamp) reads as before.
        let pdf = page_with_form(b"/X1 Do", b"BT /F1 12 Tf 100 700 Td (ABC) Tj ET");
        let read = text_layer(pdf).await;
        assert!(
            read.as_ref().is_ok_and(|p| p[0].contains("ABC")),
            "{read:?}"
        );
    }

    #[tokio::test]
    async fn a_glyph_a_billion_points_to_the_right_costs_a_bounded_line() {
        let pdf = page_with_form(
            b"BT /F1 12 Tf 60 700 Td (Left) Tj ET BT /F1 12 Tf 1000000000 700 Td (Far) Tj ET \
              BT /F1 12 Tf 1000000000 650 Td (Indented) Tj ET",
            b"",
        );

        let pages = text_layer(pdf).await.unwrap();

        let longest = pages[0].lines().map(str::len).max().unwrap();
        assert!(
            longest <= 2 * pdf_layout::MAX_SPACE_RUN + 20,
            "{longest} bytes in one line"
        );
        assert!(
            pages[0].contains("Left") && pages[0].contains("Far"),
            "{}",
            pages[0]
        );
    }

    /// A PDF of one page per content stream, each stored as `FlateDecode` of the given
    /// bytes.
    fn pdf_with_pages(contents: &[Vec<u8>]) -> Bytes {
        use lopdf::{Document, Object, Stream, dictionary};
        use std::io::Write;
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let mut kids = Vec::new();
        for content in contents {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(content).unwrap();
            let stream = Stream::new(
                dictionary! { "Filter" => "FlateDecode" },
                z.finish().unwrap(),
            );
            let content_id = doc.add_object(stream);
            let page = dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            };
            kids.push(Object::Reference(doc.add_object(page)));
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out.into()
    }

    #[tokio::test]
    async fn a_flate_bomb_in_a_content_stream_is_refused_not_inflated() {
        // 24 MiB of blank content in ~24 kB: beyond the cap of one stream.
        let bomb = pdf_with_pages(&[vec![b' '; 24 * MIB as usize]]);
        assert!(bomb.len() < 200_000, "{} bytes", bomb.len());

        let err = text_layer(bomb).await.unwrap_err();

        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("inflate"), "{err}");
        assert!(!err.is_transient());
    }

    #[tokio::test]
    async fn streams_under_the_cap_each_but_over_it_together_are_refused() {
        let page = vec![b' '; 7 * MIB as usize];
        let pages: Vec<Vec<u8>> = std::iter::repeat_n(page.clone(), 10).collect(); // 70 MiB
        let err = text_layer(pdf_with_pages(&pages)).await.unwrap_err();
        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");

        // While three such pages, within both caps, read as before (blank pages).
        let pages: Vec<Vec<u8>> = std::iter::repeat_n(page, 3).collect();
        let read = text_layer(pdf_with_pages(&pages)).await.unwrap();
        assert_eq!(read.len(), 3);
        assert!(read.iter().all(|p| p.trim().is_empty()));
    }

    #[tokio::test]
    async fn a_large_page_image_costs_the_text_layer_nothing() {
        use lopdf::{Document, Object, Stream, dictionary};
        use std::io::Write;
        // A scanned page: 3000 x 3000 RGB in FlateDecode, 27 MB of pixels, over the cap
        // of one stream; pdf-extract would inflate it and parse it as content.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&vec![0u8; 3_000 * 3_000 * 3]).unwrap();
        let mut doc = Document::with_version("1.5");
        let image = doc.add_object(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => 3_000, "Height" => 3_000,
                "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8, "Filter" => "FlateDecode",
            },
            z.finish().unwrap(),
        ));
        let content = doc.add_object(Stream::new(
            dictionary! {},
            b"q 595 0 0 842 0 0 cm /Im1 Do Q".to_vec(),
        ));
        let pages_id = doc.new_object_id();
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            "Resources" => dictionary! { "XObject" => dictionary! { "Im1" => image } },
        });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => vec![Object::Reference(page)], "Count" => 1,
            }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut pdf = Vec::new();
        doc.save_to(&mut pdf).unwrap();

        let pages = text_layer(pdf.into()).await.expect("read, not refused");

        assert_eq!(pages.len(), 1);
        assert!(!has_usable_text(&pages[0]), "a scan: OCR decides");
    }

    #[test]
    fn the_budget_of_a_job_follows_the_file_and_the_caps() {
        let caps = PDF_INFLATE_PER_STREAM * 2 + 150_000 * 220 + 256 * 1024 * 100;
        // A small file: the file and the objects' floor (200,000 at 120 bytes).
        assert_eq!(
            text_layer_job_bytes(1_000_000),
            1_000_000 + 200_000 * 120 + caps
        );
        // A large one: the file and four times it in objects.
        assert_eq!(
            text_layer_job_bytes(12_000_000),
            12_000_000 + 400_000 * 120 + caps
        );
        assert!(
            text_layer_job_bytes(10_000_000) / MIB < memory_budget_mib(),
            "a 10 MB PDF fits the budget of a 1024 MB function"
        );
    }

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

    #[test]
    fn a_stray_page_number_is_not_usable_text_but_a_line_of_an_invoice_is() {
        assert!(!has_usable_text("  2  \n"));
        assert!(!has_usable_text("Seite 1/2"));
        assert!(has_usable_text("Rechnung Nr. RE-2014-0815"));
    }

    #[test]
    fn a_document_s_quality_is_the_mean_of_its_pages() {
        let t = Transcription::from_pages(
            "native+textract",
            vec![
                PageText {
                    text: "a".into(),
                    quality: 1.0,
                },
                PageText {
                    text: "b".into(),
                    quality: 0.5,
                },
            ],
        );
        assert_eq!(t.quality, 0.75);
        assert_eq!(t.page_count, 2);
        assert_eq!(t.text, "a\n\u{c}\nb");
    }
}
