//! AWS Textract as docflow's OCR engine. Textract reads the document from S3 (the
//! function's role must be able to read the object), so no file bytes travel through the
//! function's memory or the request.
//!
//! - [`Textract::detect`]: synchronous `DetectDocumentText`, for an image or a
//!   single-page PDF;
//! - [`Textract::start`] + [`Textract::wait`]: asynchronous `StartDocumentTextDetection`
//!   and `GetDocumentTextDetection` (polled, paginated) for multi-page PDFs, which the
//!   synchronous API rejects. The caller stores the job id so that a retry resumes the
//!   job instead of paying for another; the `ClientRequestToken` makes a repeated start
//!   (a crash before the id was stored) return the same job.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_textract::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_textract::types::{Block, BlockType, Document, DocumentLocation, JobStatus, S3Object};

use super::{OcrError, PageText};
use crate::retry::RetryClass;

/// The IAM actions OCR with Textract calls.
pub const TEXTRACT_AWS_ACTIONS: &[&str] = &[
    "textract:DetectDocumentText",
    "textract:StartDocumentTextDetection",
    "textract:GetDocumentTextDetection",
];

/// Textract, and how often to ask whether an asynchronous job is done.
#[derive(Debug, Clone)]
pub struct Textract {
    client: aws_sdk_textract::Client,
    first_poll: Duration,
    max_poll: Duration,
}

impl Textract {
    /// Polls a job after 1 s, then doubling up to every 5 s.
    pub fn new(client: aws_sdk_textract::Client) -> Self {
        Textract {
            client,
            first_poll: Duration::from_secs(1),
            max_poll: Duration::from_secs(5),
        }
    }

    /// OCR of one image or single-page PDF stored at `s3://bucket/key`.
    pub async fn detect(&self, bucket: &str, key: &str) -> Result<Vec<PageText>, OcrError> {
        use aws_sdk_textract::operation::detect_document_text::DetectDocumentTextError as E;
        let output = self
            .client
            .detect_document_text()
            .document(
                Document::builder()
                    .s3_object(s3_object(bucket, key))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| {
                sdk_error("DetectDocumentText", e, |e| {
                    matches!(
                        e,
                        E::BadDocumentException(_)
                            | E::DocumentTooLargeException(_)
                            | E::UnsupportedDocumentException(_)
                            | E::InvalidParameterException(_)
                            | E::InvalidS3ObjectException(_)
                            | E::AccessDeniedException(_)
                    )
                })
            })?;
        let page_count = output
            .document_metadata()
            .and_then(|m| m.pages())
            .unwrap_or(1);
        Ok(pages_from_blocks(output.blocks(), page_count))
    }

    /// Starts asynchronous OCR of the (multi-page) PDF at `s3://bucket/key` and returns
    /// the job id. The same `token` returns the same job (Textract's idempotency), so a
    /// token must change when a new job is wanted.
    pub async fn start(&self, bucket: &str, key: &str, token: &str) -> Result<String, OcrError> {
        use aws_sdk_textract::operation::start_document_text_detection::StartDocumentTextDetectionError as E;
        let output = self
            .client
            .start_document_text_detection()
            .document_location(
                DocumentLocation::builder()
                    .s3_object(s3_object(bucket, key))
                    .build(),
            )
            .client_request_token(token)
            .send()
            .await
            .map_err(|e| {
                sdk_error("StartDocumentTextDetection", e, |e| {
                    matches!(
                        e,
                        E::BadDocumentException(_)
                            | E::DocumentTooLargeException(_)
                            | E::UnsupportedDocumentException(_)
                            | E::InvalidParameterException(_)
                            | E::InvalidS3ObjectException(_)
                            | E::InvalidKmsKeyException(_)
                            | E::AccessDeniedException(_)
                    )
                })
            })?;
        output
            .job_id()
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| OcrError::TextractJobFailed {
                job_id: String::new(),
                message: "StartDocumentTextDetection returned no JobId".into(),
            })
    }

    /// Polls job `job_id` until it is done and returns the text of every page. Runs until
    /// then: the caller bounds it (the invocation's deadline drops the future, and the
    /// stored job id lets the next attempt resume).
    pub async fn wait(&self, job_id: &str) -> Result<Vec<PageText>, OcrError> {
        let mut delay = self.first_poll;
        loop {
            let first = self.get(job_id, None).await?;
            match first.job_status() {
                Some(JobStatus::Succeeded | JobStatus::PartialSuccess) => {
                    let page_count = first
                        .document_metadata()
                        .and_then(|m| m.pages())
                        .unwrap_or(1);
                    let mut blocks = first.blocks().to_vec();
                    let mut next = first.next_token().map(str::to_owned);
                    while let Some(token) = next {
                        let page = self.get(job_id, Some(token)).await?;
                        blocks.extend_from_slice(page.blocks());
                        next = page.next_token().map(str::to_owned);
                    }
                    return Ok(pages_from_blocks(&blocks, page_count));
                }
                Some(JobStatus::Failed) => {
                    return Err(OcrError::TextractJobFailed {
                        job_id: job_id.to_owned(),
                        message: first.status_message().unwrap_or("no reason given").into(),
                    });
                }
                _ => {
                    tracing::debug!(job_id, "Textract job still running");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(self.max_poll);
                }
            }
        }
    }

    async fn get(
        &self,
        job_id: &str,
        next_token: Option<String>,
    ) -> Result<
        aws_sdk_textract::operation::get_document_text_detection::GetDocumentTextDetectionOutput,
        OcrError,
    > {
        use aws_sdk_textract::operation::get_document_text_detection::GetDocumentTextDetectionError as E;
        self.client
            .get_document_text_detection()
            .job_id(job_id)
            .max_results(1000)
            .set_next_token(next_token)
            .send()
            .await
            .map_err(|e| {
                if e.as_service_error()
                    .is_some_and(|e| matches!(e, E::InvalidJobIdException(_)))
                {
                    return OcrError::TextractJobGone {
                        job_id: job_id.to_owned(),
                    };
                }
                sdk_error("GetDocumentTextDetection", e, |e| {
                    matches!(
                        e,
                        E::InvalidParameterException(_) | E::AccessDeniedException(_)
                    )
                })
            })
    }
}

fn s3_object(bucket: &str, key: &str) -> S3Object {
    S3Object::builder().bucket(bucket).name(key).build()
}

/// A Textract error with its class: the listed service errors (the document or the
/// request is refused) are permanent, everything else — throttling, internal errors,
/// transport failures, errors not known — is transient.
fn sdk_error<E>(
    operation: &'static str,
    error: SdkError<E>,
    permanent: impl Fn(&E) -> bool,
) -> OcrError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let class = if error.as_service_error().is_some_and(permanent) {
        RetryClass::Permanent
    } else {
        RetryClass::Transient
    };
    OcrError::Textract {
        operation,
        class,
        source: Box::new(error),
    }
}

/// The LINE blocks of each page joined as its text; the page's quality is the mean LINE
/// confidence (0 for a page without lines).
fn pages_from_blocks(blocks: &[Block], page_count: i32) -> Vec<PageText> {
    let mut pages: BTreeMap<u32, (String, f64, u32)> = BTreeMap::new();
    for block in blocks {
        if block.block_type() != Some(&BlockType::Line) {
            continue;
        }
        let page = block.page().unwrap_or(1).max(1) as u32;
        let entry = pages.entry(page).or_default();
        if let Some(line) = block.text() {
            entry.0.push_str(line);
            entry.0.push('\n');
        }
        entry.1 += f64::from(block.confidence().unwrap_or(0.0)) / 100.0;
        entry.2 += 1;
    }
    let last = pages.keys().last().copied().unwrap_or(0);
    let count = (page_count.max(1) as u32).max(last);
    (1..=count)
        .map(|page| match pages.remove(&page) {
            Some((text, sum, lines)) => PageText {
                text,
                quality: sum / f64::from(lines.max(1)),
            },
            None => PageText {
                text: String::new(),
                quality: 0.0,
            },
        })
        .collect()
}
