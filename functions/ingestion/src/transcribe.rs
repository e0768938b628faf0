//! Transcription of one ingestion's file, as seed 003's provider does it: the PDF text
//! layer first, OCR only for pages without usable text, images always OCR; a poor
//! result preprocessed once (`preprocessed.png` / `preprocessed.pdf` under the
//! ingestion's prefix) and read again.
//!
//! OCR reads from S3: `DetectDocumentText` for an image or a single-page PDF, the
//! asynchronous job for a multi-page PDF. The job's id is stored on the ingestion
//! (`ocr_jobs`, by the key it reads) before it is polled, so an attempt that runs out of
//! time leaves the job to the next attempt, which polls it instead of paying again.

use bytes::Bytes;
use docflow::Failure;
use docflow::ids::IngestionId;
use docflow::ocr::{
    FileKind, OcrError, PageText, TEXTRACT_SYNC_MAX_BYTES, Textract, Transcription,
    has_usable_text, preprocess_image, preprocess_pdf, text_layer, textract_takes_image,
};
use docflow::retry::Classify as _;

use crate::Deps;
use crate::lease::Claimed;
use crate::store::{forget_ocr_job, put, store_ocr_job, stored_ocr_job};

/// The largest document Textract's synchronous API takes (10 MB); larger single pages
/// go through the asynchronous job too.
const SYNC_MAX_BYTES: usize = TEXTRACT_SYNC_MAX_BYTES;

/// Transcribes the file stored at `key` whose bytes are `bytes`.
pub async fn transcribe(
    deps: &Deps,
    claimed: &Claimed,
    kind: FileKind,
    key: &str,
    bytes: Bytes,
) -> Result<Transcription, Failure> {
    match kind {
        FileKind::Text => Ok(Transcription::from_pages(
            "native",
            vec![PageText::from_text_layer(
                String::from_utf8_lossy(&bytes).into_owned(),
            )],
        )),
        FileKind::Png | FileKind::Jpeg => image(deps, claimed, key, bytes).await,
        FileKind::Pdf => pdf(deps, claimed, key, bytes).await,
    }
}

fn classified(e: OcrError) -> Failure {
    Failure::classified(e)
}

fn ocr_engine(deps: &Deps, what: &str) -> Result<Textract, Failure> {
    deps.transcriber.ocr().ok_or_else(|| {
        classified(OcrError::NeedsOcr {
            what: what.to_owned(),
        })
    })
}

async fn image(
    deps: &Deps,
    claimed: &Claimed,
    key: &str,
    bytes: Bytes,
) -> Result<Transcription, Failure> {
    let ocr = &ocr_engine(deps, "an image")?;
    let bucket = &deps.config.bucket;
    // Textract refuses an image over 10,000 px a side or 10 MB: such an image is scaled
    // down (preprocessed) before its first reading, or refused here when it is too
    // large to decode. Its header says which, before any call is paid for.
    let first = if textract_takes_image(&bytes) {
        let first = Transcription::from_pages(
            "textract",
            ocr.detect(bucket, key).await.map_err(classified)?,
        );
        if first.quality >= deps.config.quality_threshold {
            return Ok(first);
        }
        tracing::info!(
            quality = first.quality,
            "low OCR quality; preprocessing the image once"
        );
        Some(first)
    } else {
        tracing::info!(
            bytes = bytes.len(),
            "the image exceeds what Textract reads; scaling it down before its first reading"
        );
        None
    };
    let improved = match preprocess_image(bytes).await.map_err(classified) {
        Ok(improved) => improved,
        // As for PDFs: when a reading exists, a failed preprocessing step keeps it.
        Err(Failure::Permanent(e)) => match first {
            Some(first) => {
                tracing::warn!(error.message = %e, error.cause_chain = ?e, "preprocessing failed; keeping the first reading");
                return Ok(first);
            }
            None => return Err(Failure::Permanent(e)),
        },
        Err(e) => return Err(e),
    };
    let Some(improved) = improved else {
        let Some(first) = first else {
            return Err(classified(OcrError::TooLarge {
                what: "an image that exceeds what Textract reads even scaled down to \
                       10,000 px a side and encoded as JPEG"
                    .to_owned(),
            }));
        };
        tracing::warn!(
            "the preprocessed image would exceed what Textract reads synchronously; keeping the first reading"
        );
        return Ok(first);
    };
    let preprocessed = format!(
        "ingestions/{}/preprocessed.{}",
        IngestionId(claimed.id),
        improved.extension()
    );
    let content_type = improved.content_type();
    put(deps, claimed, &preprocessed, improved.bytes, content_type).await?;
    let pages = match ocr.detect(bucket, &preprocessed).await {
        Ok(pages) => pages,
        // The first reading stands: a refusal of the second (a limit, a format Textract
        // rejects) must not fail a document that was read once already.
        Err(e) if !e.is_transient() => {
            let Some(first) = first else {
                return Err(classified(e));
            };
            tracing::warn!(
                error.message = %e,
                "Textract refused the preprocessed image; keeping the first reading"
            );
            return Ok(first);
        }
        Err(e) => return Err(classified(e)),
    };
    let mut second = Transcription::from_pages("textract", pages);
    second.preprocessed = true;
    second.preprocessed_file_path = Some(preprocessed);
    Ok(second)
}

async fn pdf(
    deps: &Deps,
    claimed: &Claimed,
    key: &str,
    bytes: Bytes,
) -> Result<Transcription, Failure> {
    let native = match text_layer(bytes.clone()).await {
        Ok(pages) => Some(pages),
        // Textract may still read what the text-layer parser cannot.
        Err(e @ OcrError::BadPdf(_)) if deps.transcriber.ocr().is_some() => {
            tracing::warn!(error.message = %e, "the PDF's text layer is unreadable; OCR of the whole document");
            None
        }
        Err(e) => return Err(classified(e)),
    };
    let native: Option<Vec<PageText>> =
        native.map(|pages| pages.into_iter().map(PageText::from_text_layer).collect());
    let needs_ocr = |pages: &[PageText]| pages.iter().any(|p| !has_usable_text(&p.text));
    if let Some(pages) = &native
        && !needs_ocr(pages)
    {
        return Ok(Transcription::from_pages("native", pages.clone()));
    }

    let Some(ocr) = &deps.transcriber.ocr() else {
        let pages = native.expect("an unreadable PDF without OCR returned above");
        if pages.iter().all(|p| !has_usable_text(&p.text)) {
            return Err(classified(OcrError::NeedsOcr {
                what: format!("the PDF {key} (no page has a text layer: a scan?)"),
            }));
        }
        // Some pages have text: the quality gate decides whether they are enough.
        tracing::warn!("pages without a text layer and no OCR engine; going on with the rest");
        return Ok(Transcription::from_pages("native", pages));
    };

    let page_count = native.as_ref().map(Vec::len);
    let read = ocr_pdf(deps, claimed, ocr, key, page_count, bytes.len()).await?;
    let first = merge(native.as_deref(), read);
    if first.quality >= deps.config.quality_threshold {
        return Ok(first);
    }
    tracing::info!(
        quality = first.quality,
        "low OCR quality; preprocessing the PDF once"
    );
    let improved = match preprocess_pdf(bytes).await.map_err(classified) {
        Ok(Some(improved)) => improved,
        Ok(None) => {
            tracing::info!(
                "no page image that preprocessing can improve; keeping the first reading"
            );
            return Ok(first);
        }
        // The file was read once already: a preprocessing step that cannot read it (the
        // same parse error that made the text layer unreadable, say) must not throw
        // that reading away.
        Err(Failure::Permanent(e)) => {
            tracing::warn!(error.message = %e, error.cause_chain = ?e, "preprocessing failed; keeping the first reading");
            return Ok(first);
        }
        Err(e) => return Err(e),
    };
    let preprocessed = format!("ingestions/{}/preprocessed.pdf", IngestionId(claimed.id));
    let size = improved.len();
    put(deps, claimed, &preprocessed, improved, "application/pdf").await?;
    let read = match ocr_pdf(deps, claimed, ocr, &preprocessed, page_count, size).await {
        Ok(read) => read,
        // As for images: a refusal of the second reading keeps the first.
        Err(Failure::Permanent(e)) => {
            tracing::warn!(
                error.message = %e,
                "Textract refused the preprocessed PDF; keeping the first reading"
            );
            return Ok(first);
        }
        Err(e) => return Err(e),
    };
    let mut second = merge(native.as_deref(), read);
    second.preprocessed = true;
    second.preprocessed_file_path = Some(preprocessed);
    Ok(second)
}

/// Each page from its text layer when it has usable text, else from OCR.
fn merge(native: Option<&[PageText]>, ocr: Vec<PageText>) -> Transcription {
    let Some(native) = native else {
        return Transcription::from_pages("textract", ocr);
    };
    let mut ocr = ocr.into_iter();
    let pages: Vec<PageText> = native
        .iter()
        .map(|page| {
            let read = ocr.next();
            if has_usable_text(&page.text) {
                page.clone()
            } else {
                read.unwrap_or(PageText {
                    text: String::new(),
                    quality: 0.0,
                })
            }
        })
        .collect();
    Transcription::from_pages("native+textract", pages)
}

/// OCR of the PDF at `key` (`size` bytes): synchronous for one page the synchronous API
/// takes, otherwise the asynchronous job — resumed when an earlier attempt stored one for
/// this key.
async fn ocr_pdf(
    deps: &Deps,
    claimed: &Claimed,
    ocr: &Textract,
    key: &str,
    page_count: Option<usize>,
    size: usize,
) -> Result<Vec<PageText>, Failure> {
    let bucket = &deps.config.bucket;
    if page_count == Some(1) && size <= SYNC_MAX_BYTES {
        return ocr.detect(bucket, key).await.map_err(classified);
    }
    let job_id = match stored_ocr_job(&deps.pool, claimed.id, key).await? {
        Some(job_id) => {
            tracing::info!(
                job_id,
                key,
                "resuming the Textract job of an earlier attempt"
            );
            job_id
        }
        None => {
            // Same attempt, same token: a start repeated after a crash (before the id was
            // stored) gets the same job back. A later attempt (after a failed job) gets a
            // new one.
            let variant = if key.starts_with("documents/") {
                "o"
            } else {
                "p"
            };
            let token = format!(
                "{}-{variant}-{}",
                claimed.id.simple(),
                claimed.attempt_count
            );
            let job_id = ocr.start(bucket, key, &token).await.map_err(classified)?;
            tracing::info!(job_id, key, "started a Textract job");
            store_ocr_job(&deps.pool, claimed, key, &job_id).await?;
            job_id
        }
    };
    match ocr.wait(&job_id).await {
        Ok(pages) => Ok(pages),
        Err(e @ (OcrError::TextractJobFailed { .. } | OcrError::TextractJobGone { .. })) => {
            forget_ocr_job(&deps.pool, claimed, key).await;
            Err(classified(e))
        }
        Err(e) => Err(classified(e)),
    }
}
