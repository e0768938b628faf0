//! The steps of one ingestion after its claim, each classifying its own failures.

use anyhow::anyhow;
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::primitives::ByteStream;
use bytes::{Bytes, BytesMut};
use docflow::extract::einvoice;
use docflow::extract::{DocumentType, Extraction, ExtractionRun, Extractor};
use docflow::ids::IngestionId;
use docflow::ocr::{FileKind, Transcription};
use docflow::telemetry::metrics;
use docflow::{Failure, Message};
use sqlx::PgPool;
use uuid::Uuid;

use crate::Deps;
use crate::einvoice::Route;
use crate::lease::{Claimed, lease_lost};
use crate::store::put;

/// The S3 key of a document's file, `documents/{document_id}.{ext}` (DESIGN). A row whose
/// `file_path` points anywhere else is a permanent error: the file would not be the
/// document's (or not readable under the role's prefixes).
pub fn document_key(document_id: Uuid, file_path: &str) -> Result<String, Failure> {
    let expected_stem = format!("documents/{document_id}.");
    file_path
        .strip_prefix(&expected_stem)
        .filter(|ext| !ext.is_empty() && !ext.contains('/') && !ext.contains('.'))
        .ok_or_else(|| {
            Failure::permanent(anyhow!(
                "document {document_id} has file_path {file_path:?}, expected documents/{document_id}.<ext>"
            ))
        })?;
    Ok(file_path.to_owned())
}

/// The S3 key of a document's file ([`document_key`]) and its type, for the files the
/// page path reads (an `.xml` upload is an e-invoice: [`crate::einvoice::xml`]).
pub fn document_file(document_id: Uuid, file_path: &str) -> Result<(String, FileKind), Failure> {
    let key = document_key(document_id, file_path)?;
    let ext = key.rsplit_once('.').map_or("", |(_, ext)| ext);
    let kind = FileKind::from_path(file_path).ok_or_else(|| {
        Failure::permanent(anyhow!(
            "unsupported document type .{ext} ({file_path:?}): expected .pdf, .txt, .png, .jpg or .xml"
        ))
    })?;
    Ok((key, kind))
}

/// What became of a completed ingestion's hand-off to matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandOff {
    /// Not a matchable document: nothing to hand off.
    NotNeeded,
    /// In the matching queue.
    Sent,
    /// Not known to be in the matching queue (logged): the document stays
    /// `matching_status = 'pending'`, and the message is retried to send it again
    /// ([`resend_hand_off`]) — or, on the final receive, left to the sweeper.
    Failed,
}

/// Runs the pipeline after the claim. Every error is classified. The hand-off to
/// matching goes with the batch's others (`SendMessageBatch`, [`Message::hand_off`])
/// when `message` is given, alone otherwise.
pub async fn run(
    deps: &Deps,
    claimed: &Claimed,
    message: Option<&Message>,
) -> Result<HandOff, Failure> {
    use metrics::stages;
    let id = IngestionId(claimed.id);
    // A structured e-invoice is read exactly, before any OCR or LLM.
    if einvoice::is_xml_name(&claimed.file_path) {
        let key = document_key(claimed.document_id, &claimed.file_path)?;
        let bytes = metrics::stage(stages::FETCH, fetch_file(deps, &key)).await?;
        let run = metrics::stage(stages::EINVOICE, crate::einvoice::xml(&key, bytes)).await?;
        return finish(deps, claimed, run, message).await;
    }
    let (key, kind) = document_file(claimed.document_id, &claimed.file_path)?;

    let cached = if claimed.tried_before {
        metrics::stage(stages::FETCH, load_cached_transcription(deps, id)).await?
    } else {
        None
    };
    // A PDF may carry its invoice as XML. A stored transcription means an earlier attempt
    // looked already and found none it could use (a valid one completes the document
    // without transcribing): the retry needs no file.
    let mut fetched = None;
    let mut fallback = None;
    if kind == FileKind::Pdf && cached.is_none() {
        let bytes = metrics::stage(stages::FETCH, fetch_file(deps, &key)).await?;
        match metrics::stage(stages::EINVOICE, crate::einvoice::pdf(&key, bytes.clone())).await? {
            Route::Read(run) => return finish(deps, claimed, *run, message).await,
            Route::PagePath(reason) => {
                fallback = reason;
                fetched = Some(bytes);
            }
        }
    }
    let transcription = match cached {
        Some(cached) => {
            tracing::info!(provider = %cached.provider, "reusing the stored transcription");
            // A failure between storing it and recording it left the row without its
            // metadata: record it (again; the update is idempotent).
            record_transcription(&deps.pool, claimed, &cached, Stored::Yes).await?;
            cached
        }
        None => {
            let bytes = match fetched.take() {
                Some(bytes) => bytes,
                None => metrics::stage(stages::FETCH, fetch_file(deps, &key)).await?,
            };
            let transcription = metrics::stage(
                stages::TRANSCRIBE,
                crate::transcribe::transcribe(deps, claimed, kind, &key, bytes),
            )
            .await?;
            count_transcription(&transcription);
            if worth_storing(&transcription) {
                metrics::stage(
                    stages::STORE_TRANSCRIPTION,
                    store_transcription(deps, claimed, &transcription),
                )
                .await?;
            } else {
                record_transcription(&deps.pool, claimed, &transcription, Stored::No).await?;
            }
            transcription
        }
    };
    if transcription.text.trim().is_empty() {
        return Err(Failure::permanent(anyhow!(
            "no text found in {key} ({} transcription)",
            transcription.provider
        )));
    }

    let mut run = metrics::stage(
        stages::EXTRACT,
        extract(&deps.extractor, transcription.text),
    )
    .await?;
    if let Some(reason) = &fallback {
        crate::einvoice::note_fallback(&mut run, reason);
    }
    if !run.extraction.passes_quality_gate() {
        metrics::count(metrics::ingestion::QUALITY_GATE_FAILURES, 1);
        let reason = quality_gate_failure(&run.extraction);
        // An LLM may answer better next time; the rules extractor will not.
        return Err(if deps.extractor.is_deterministic() {
            Failure::permanent(anyhow!(reason))
        } else {
            Failure::transient(anyhow!(reason))
        });
    }
    finish(deps, claimed, run, message).await
}

/// Completes the ingestion with `run` and hands a matchable document on.
async fn finish(
    deps: &Deps,
    claimed: &Claimed,
    run: ExtractionRun,
    message: Option<&Message>,
) -> Result<HandOff, Failure> {
    use metrics::stages;
    let completed = metrics::stage(stages::COMPLETE, complete(&deps.pool, claimed, &run))
        .await
        .map_err(Failure::classified)?;
    let Some(kind) = completed else {
        tracing::warn!(
            "the ingestion is no longer ours (finished, or claimed by another delivery); not completing it"
        );
        return Err(lease_lost());
    };
    tracing::info!(model = %run.model, document_type = kind.as_str(), "ingestion completed");
    if !kind.is_matchable() {
        return Ok(HandOff::NotNeeded);
    }
    Ok(metrics::stage(
        stages::HAND_OFF,
        send_to_matching(deps, claimed.document_id, message),
    )
    .await)
}

/// A fresh transcription's metrics: its pages, the pages per provider that read them,
/// and whether it took a preprocessing pass.
fn count_transcription(transcription: &Transcription) {
    let pages = transcription.pages.len() as u64;
    metrics::count(metrics::ingestion::PAGES, pages);
    metrics::count_by(
        metrics::dimension::PROVIDER,
        &transcription.provider,
        metrics::ingestion::OCR_PAGES,
        pages,
    );
    if transcription.preprocessed {
        metrics::count(metrics::ingestion::PREPROCESSING_PASSES, 1);
    }
}

/// Extraction; the rules extractor is CPU work and runs on the blocking pool within its
/// CPU and memory budget (`on_cpu`), as the OCR, preprocessing and e-invoice work does:
/// ten records' extractions at once must not take every core from the rest.
async fn extract(extractor: &Extractor, text: String) -> Result<ExtractionRun, Failure> {
    use docflow::extract::rules;
    match extractor {
        Extractor::Rules => {
            docflow::ocr::on_cpu(rules::job_bytes(text.len()), move || ExtractionRun {
                extraction: rules::extract(&text),
                input_tokens: None,
                output_tokens: None,
                model: "rules".into(),
            })
            .await
            .map_err(|e| match e {
                docflow::ocr::OcrError::Join(why) => {
                    Failure::transient(anyhow!("the rules extractor did not finish: {why}"))
                }
                e => Failure::classified(e),
            })
        }
        llm => llm.extract(&text).await.map_err(Failure::classified),
    }
}

fn quality_gate_failure(extraction: &Extraction) -> String {
    format!(
        "extraction quality gate failed (extraction_successful={}, confidence={:?}, missing: {})",
        extraction.extraction_successful,
        extraction.confidence,
        if extraction.missing_fields.is_empty() {
            "none".to_owned()
        } else {
            extraction.missing_fields.join(", ")
        }
    )
}

fn transcription_key(id: IngestionId) -> String {
    format!("ingestions/{id}/transcription-output.json")
}

fn s3_failure(what: &str, error: aws_sdk_s3::error::SdkError<GetObjectError>) -> Failure {
    let missing = error
        .as_service_error()
        .is_some_and(GetObjectError::is_no_such_key);
    let status = error.raw_response().map(|r| r.status().as_u16());
    let context = format!("{what}: {}", aws_sdk_s3::error::DisplayErrorContext(&error));
    match (missing, status) {
        (true, _) | (_, Some(403 | 404)) => Failure::permanent(anyhow!(context)),
        _ => Failure::transient(anyhow!(context)),
    }
}

async fn load_cached_transcription(
    deps: &Deps,
    id: IngestionId,
) -> Result<Option<Transcription>, Failure> {
    let bucket = &deps.config.bucket;
    let key = transcription_key(id);
    let object = match deps.s3.get_object().bucket(bucket).key(&key).send().await {
        Ok(object) => object,
        Err(e)
            if e.as_service_error()
                .is_some_and(GetObjectError::is_no_such_key) =>
        {
            return Ok(None);
        }
        Err(e) => {
            return Err(s3_failure(
                &format!("failed to read s3://{bucket}/{key}"),
                e,
            ));
        }
    };
    let json = read_bounded(
        object.body,
        object.content_length,
        deps.config.max_file_bytes,
    )
    .await
    .map_err(|e| e.into_failure(&format!("s3://{bucket}/{key}")))?;
    match serde_json::from_slice(&json) {
        Ok(transcription) => Ok(Some(transcription)),
        Err(e) => {
            tracing::warn!(error.message = %e, key, "stored transcription is unreadable; transcribing again");
            Ok(None)
        }
    }
}

/// Why a bounded read stopped.
#[derive(Debug)]
pub enum ReadError {
    TooLarge { limit: u64, declared: Option<i64> },
    Body(aws_sdk_s3::primitives::ByteStreamError),
}

impl ReadError {
    fn into_failure(self, what: &str) -> Failure {
        match self {
            ReadError::TooLarge { limit, declared } => Failure::permanent(anyhow!(
                "file {what} is {}, over the {limit} byte limit (MAX_FILE_BYTES)",
                declared.map_or_else(|| "larger".to_owned(), |n| format!("{n} bytes"))
            )),
            ReadError::Body(e) => Failure::transient(anyhow!("failed to read {what}: {e}")),
        }
    }
}

/// Reads a body into one buffer, refusing more than `limit` bytes: up front when the
/// declared length says so, otherwise as soon as the bytes read pass it — a missing or
/// wrong `Content-Length` cannot make the read unbounded.
pub async fn read_bounded(
    mut body: ByteStream,
    declared: Option<i64>,
    limit: u64,
) -> Result<Bytes, ReadError> {
    if declared.is_some_and(|n| n.max(0) as u64 > limit) {
        return Err(ReadError::TooLarge { limit, declared });
    }
    let capacity = declared.map_or(0, |n| n.max(0) as u64).min(limit) as usize;
    let mut buffer = BytesMut::with_capacity(capacity);
    while let Some(chunk) = body.try_next().await.map_err(ReadError::Body)? {
        if (buffer.len() + chunk.len()) as u64 > limit {
            return Err(ReadError::TooLarge {
                limit,
                declared: None,
            });
        }
        buffer.extend_from_slice(&chunk);
    }
    Ok(buffer.freeze())
}

/// The document's file, read once into memory within `MAX_FILE_BYTES`.
async fn fetch_file(deps: &Deps, key: &str) -> Result<Bytes, Failure> {
    let bucket = &deps.config.bucket;
    let object = deps
        .s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| s3_failure(&format!("failed to fetch s3://{bucket}/{key}"), e))?;
    let bytes = read_bounded(
        object.body,
        object.content_length,
        deps.config.max_file_bytes,
    )
    .await
    .map_err(|e| e.into_failure(&format!("s3://{bucket}/{key}")))?;
    if bytes.is_empty() {
        return Err(Failure::permanent(anyhow!(
            "file s3://{bucket}/{key} is empty"
        )));
    }
    Ok(bytes)
}

/// Whether a transcription is worth an S3 PUT so that a retry reuses it: only when OCR
/// read some of it (Textract costs money and seconds, and a retry would pay again). A
/// text layer alone (`native`: a PDF's text, a plain text file) is read again from the
/// file in milliseconds, so it is not stored (docs/ingestion.md, "What is stored").
pub fn worth_storing(transcription: &Transcription) -> bool {
    transcription.provider != "native"
}

/// Whether the transcription is in S3 (its key recorded on the row) or only its
/// metadata is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    Yes,
    No,
}

/// Stores the transcription, then records its metadata on the row. A failure in
/// between is completed by the next attempt, which finds the stored transcription.
async fn store_transcription(
    deps: &Deps,
    claimed: &Claimed,
    transcription: &Transcription,
) -> Result<(), Failure> {
    let json = serde_json::to_vec(transcription).map_err(|e| Failure::permanent(anyhow!(e)))?;
    let key = transcription_key(IngestionId(claimed.id));
    put(deps, claimed, &key, json, "application/json").await?;
    record_transcription(&deps.pool, claimed, transcription, Stored::Yes).await
}

/// Records the transcription's metadata on the ingestion (seed 003), under our claim
/// ([`lease_lost`] when it is no longer ours): its key only when it was stored.
/// Idempotent.
async fn record_transcription(
    pool: &PgPool,
    claimed: &Claimed,
    transcription: &Transcription,
    stored: Stored,
) -> Result<(), Failure> {
    let id = IngestionId(claimed.id);
    let recorded = sqlx::query(
        r#"
        UPDATE ingestion
           SET transcription_file_path = $2,
               transcription_quality_score = $3,
               transcription_page_count = $4,
               preprocessed_file_path = COALESCE($5, preprocessed_file_path),
               updated_at = now()
         WHERE id = $1 AND status = 'in-progress' AND claim_token = $6
        "#,
    )
    .bind(id)
    .bind((stored == Stored::Yes).then(|| transcription_key(id)))
    .bind(transcription.quality)
    .bind(transcription.page_count as i32)
    .bind(&transcription.preprocessed_file_path)
    .bind(claimed.token)
    .execute(pool)
    .await
    .map_err(Failure::classified)?;
    if recorded.rows_affected() == 0 {
        return Err(lease_lost());
    }
    Ok(())
}

/// Completes the ingestion and, for matchable documents, marks matching pending — in one
/// statement (two data-modifying CTEs, one implicit transaction: one round trip where
/// `BEGIN`, two updates and `COMMIT` were four), so a committed completion is always
/// visible to the sweeper. Returns the document type, or `None` when the ingestion is no
/// longer ours (finished, or claimed by another delivery: its worker completes it).
async fn complete(
    pool: &PgPool,
    claimed: &Claimed,
    run: &ExtractionRun,
) -> Result<Option<DocumentType>, sqlx::Error> {
    let data = run.extraction.to_stored();
    let kind = run.extraction.document_type.unwrap_or(DocumentType::Other);
    // The document's update runs only when the ingestion's did (`EXISTS (SELECT 1 FROM
    // done)`): both CTEs see the same snapshot, so the claim token decides for both.
    let completed: bool = sqlx::query_scalar(
        r#"
        WITH done AS (
            UPDATE ingestion
               SET status = 'completed',
                   structured_data = $2,
                   -- false sends the document to a person (the trigger sets
                   -- needs_human_review), with the data kept.
                   valid_structured_data = NOT $10,
                   extraction_input_tokens = $3,
                   extraction_output_tokens = $4,
                   extraction_model = $5,
                   last_error = NULL,
                   completed_at = now(),
                   updated_at = now()
             WHERE id = $1 AND status = 'in-progress' AND claim_token = $6
            RETURNING 1
        ), typed AS (
            UPDATE document
               SET type = $8::document_type,
                   matching_status = CASE WHEN $9 THEN 'pending' ELSE matching_status END,
                   updated_at = now()
             WHERE id = $7 AND EXISTS (SELECT 1 FROM done)
            RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM done)
        "#,
    )
    .bind(claimed.id)
    .bind(&data)
    .bind(run.input_tokens)
    .bind(run.output_tokens)
    .bind(&run.model)
    .bind(claimed.token)
    .bind(claimed.document_id)
    .bind(kind.as_str())
    .bind(kind.is_matchable())
    .bind(run.extraction.needs_human_review())
    .fetch_one(pool)
    .await?;
    Ok(completed.then_some(kind))
}

/// After commit: the document is `matching_status = 'pending'` until matching claims it,
/// so a hand-off that is not known to be sent is never lost — a retry of the message
/// ([`resend_hand_off`]) or the sweeper sends it again. It never fails the ingestion.
pub(crate) async fn send_to_matching(
    deps: &Deps,
    document_id: Uuid,
    message: Option<&Message>,
) -> HandOff {
    let queue = &deps.config.matching_queue_url;
    // Boxed: SDK call futures are large, and every record's future would carry them.
    let sent = match message {
        Some(message) => Box::pin(message.hand_off(queue, document_id.to_string()))
            .await
            .map_err(anyhow::Error::new),
        None => Box::pin(
            deps.sqs
                .send_message()
                .queue_url(queue)
                .message_body(document_id.to_string())
                .send(),
        )
        .await
        .map(|_| ())
        .map_err(anyhow::Error::new),
    };
    match sent {
        Ok(()) => {
            tracing::info!(%document_id, "sent to matching");
            HandOff::Sent
        }
        Err(e) => {
            tracing::error!(
                %document_id,
                error.message = %e,
                error.cause_chain = ?e,
                "could not send the document to matching (matching_status stays pending); the message is retried to send it again"
            );
            HandOff::Failed
        }
    }
}

/// The document of a completed ingestion whose hand-off to matching is still owed
/// (`matching_status = 'pending'`): a delivery of it re-sends the hand-off instead of
/// discarding itself as a duplicate. `None` for anything else.
pub(crate) async fn owed_hand_off(
    pool: &PgPool,
    id: IngestionId,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        r#"
        SELECT d.id
          FROM ingestion i JOIN document d ON d.id = i.document_id
         WHERE i.id = $1 AND i.status = 'completed' AND d.matching_status = 'pending'
        "#,
    )
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// A delivery of a completed ingestion whose document still waits for matching (an
/// earlier hand-off failed, or its delivery was cut off after the commit): sends the
/// hand-off again. Matching's claim makes a second copy harmless.
pub(crate) async fn resend_hand_off(
    deps: &Deps,
    id: IngestionId,
    message: &Message,
) -> Option<HandOff> {
    match owed_hand_off(&deps.pool, id).await {
        Ok(Some(document_id)) => {
            message.record_document(&document_id);
            tracing::info!(%document_id, "completed ingestion whose hand-off to matching is owed; sending it again");
            Some(
                metrics::stage(
                    metrics::stages::HAND_OFF,
                    send_to_matching(deps, document_id, Some(message)),
                )
                .await,
            )
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error.message = %e, error.cause_chain = ?e, "could not read whether a hand-off is owed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_key_must_be_the_document_s_own() {
        let id = Uuid::parse_str("7f3c2a9e-1d4b-4c8a-9e2f-5a6b7c8d0c35").unwrap();
        let (key, kind) = document_file(id, &format!("documents/{id}.PDF")).unwrap();
        assert_eq!(key, format!("documents/{id}.PDF"));
        assert_eq!(kind, FileKind::Pdf);
        for wrong in [
            format!("documents/{}.pdf", Uuid::nil()),
            format!("uploads/{id}.pdf"),
            format!("documents/{id}.pdf/../../secrets.txt"),
            format!("documents/{id}."),
            format!("documents/{id}"),
        ] {
            let err = document_file(id, &wrong).unwrap_err();
            assert!(!docflow::Classify::is_transient(&err), "{wrong}");
        }
        let docx = document_file(id, &format!("documents/{id}.docx")).unwrap_err();
        assert!(docx.to_string().contains("unsupported document type"));
    }

    #[tokio::test]
    async fn a_body_without_a_declared_length_is_still_cut_at_the_limit() {
        let body = ByteStream::from(vec![b'x'; 4096]);
        let err = read_bounded(body, None, 1000).await.unwrap_err();
        assert!(matches!(err, ReadError::TooLarge { .. }), "{err:?}");
        let declared_small = ByteStream::from(vec![b'x'; 4096]);
        assert!(matches!(
            read_bounded(declared_small, Some(10), 1000).await,
            Err(ReadError::TooLarge { .. })
        ));
        let fits = read_bounded(ByteStream::from(vec![b'x'; 1000]), None, 1000)
            .await
            .unwrap();
        assert_eq!(fits.len(), 1000);
    }
}
