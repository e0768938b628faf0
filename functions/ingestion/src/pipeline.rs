//! The steps of one ingestion, each classifying its own failures.

use std::time::Duration;

use anyhow::anyhow;
use aws_sdk_s3::operation::get_object::GetObjectError;
use docflow::Failure;
use docflow::extract::{DocumentType, Extraction, ExtractionRun};
use docflow::ids::IngestionId;
use docflow::ocr::{FileKind, Transcription};
use sqlx::PgPool;
use uuid::Uuid;

use crate::Deps;

/// A claimed ingestion and its document.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub id: Uuid,
    pub document_id: Uuid,
    pub attempt_count: i32,
}

/// Seed 003's claim: the ingestion is in progress and its lease is free or stale.
/// `None` when it is unknown, finished, or held by a live worker.
pub async fn claim(
    pool: &PgPool,
    id: IngestionId,
    stale_after: Duration,
) -> Result<Option<Claimed>, sqlx::Error> {
    sqlx::query_as(
        r#"
        UPDATE ingestion
           SET started_at = now(), updated_at = now()
         WHERE id = $1
           AND status = 'in-progress'
           AND (started_at IS NULL OR started_at < now() - make_interval(secs => $2))
        RETURNING id, document_id, attempt_count
        "#,
    )
    .bind(id)
    .bind(stale_after.as_secs_f64())
    .fetch_optional(pool)
    .await
}

/// Why a claim found nothing, for the discard log.
pub async fn why_not_claimable(pool: &PgPool, id: IngestionId) -> String {
    let status: Result<Option<String>, _> =
        sqlx::query_scalar("SELECT status FROM ingestion WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await;
    match status {
        Ok(None) => format!("unknown ingestion {id}"),
        Ok(Some(s)) if s == "in-progress" => {
            format!("ingestion {id} is being processed by a live worker")
        }
        Ok(Some(s)) => format!("ingestion {id} is already {s} (duplicate delivery)"),
        Err(_) => format!("ingestion {id} is not claimable"),
    }
}

/// Renews the lease while a long attempt runs (the heartbeat's hook).
pub async fn renew_lease(pool: &PgPool, id: IngestionId) {
    let renewed = sqlx::query(
        "UPDATE ingestion SET started_at = now() WHERE id = $1 AND status = 'in-progress'",
    )
    .bind(id)
    .execute(pool)
    .await;
    if let Err(e) = renewed {
        tracing::warn!(error.message = %e, "could not renew the ingestion lease");
    }
}

/// One statement: count the attempt; fail at the last attempt or on a permanent error
/// (keeping the lease, so nobody reclaims it), otherwise release the lease so the
/// delayed redelivery can claim it at once. `None` when the ingestion was finished
/// elsewhere meanwhile.
pub async fn count_failed_attempt(
    pool: &PgPool,
    id: IngestionId,
    permanent: bool,
    max_attempts: i32,
    error: &str,
) -> Result<Option<(i32, String)>, sqlx::Error> {
    sqlx::query_as(
        r#"
        UPDATE ingestion
           SET attempt_count = attempt_count + 1,
               status       = CASE WHEN $2 OR attempt_count + 1 >= $3 THEN 'failed' ELSE status END,
               completed_at = CASE WHEN $2 OR attempt_count + 1 >= $3 THEN now() ELSE completed_at END,
               started_at   = CASE WHEN $2 OR attempt_count + 1 >= $3 THEN started_at ELSE NULL END,
               last_error   = $4,
               updated_at   = now()
         WHERE id = $1 AND status = 'in-progress'
        RETURNING attempt_count, status
        "#,
    )
    .bind(id)
    .bind(permanent)
    .bind(max_attempts)
    .bind(error)
    .fetch_optional(pool)
    .await
}

#[derive(Debug, sqlx::FromRow)]
struct DocumentRow {
    file_path: String,
}

/// Runs the pipeline after the claim. Every error is classified.
pub async fn run(deps: &Deps, claimed: &Claimed) -> Result<(), Failure> {
    let id = IngestionId(claimed.id);
    let document: DocumentRow = sqlx::query_as("SELECT file_path FROM document WHERE id = $1")
        .bind(claimed.document_id)
        .fetch_optional(&deps.pool)
        .await
        .map_err(Failure::classified)?
        .ok_or_else(|| {
            Failure::permanent(anyhow!("document {} does not exist", claimed.document_id))
        })?;
    let kind = FileKind::from_path(&document.file_path).ok_or_else(|| {
        Failure::permanent(anyhow!(
            "unsupported document type {:?}: expected .pdf, .txt, .png or .jpg",
            document.file_path
        ))
    })?;

    let transcription = match load_cached_transcription(deps, id).await? {
        Some(cached) => {
            tracing::info!(provider = %cached.provider, "reusing the stored transcription");
            cached
        }
        None => transcribe(deps, id, kind, &document.file_path).await?,
    };
    if transcription.text.trim().is_empty() {
        return Err(Failure::permanent(anyhow!(
            "no text found in {} ({} transcription); a scanned document needs OCR_PROVIDER=textract",
            document.file_path,
            transcription.provider
        )));
    }

    let run = deps
        .extractor
        .extract(&transcription.text)
        .await
        .map_err(Failure::classified)?;
    if !run.extraction.passes_quality_gate() {
        let reason = quality_gate_failure(&run.extraction);
        // An LLM may answer better next time; the rules extractor will not.
        return Err(if deps.extractor.is_deterministic() {
            Failure::permanent(anyhow!(reason))
        } else {
            Failure::transient(anyhow!(reason))
        });
    }

    let completed = complete(&deps.pool, claimed, &run)
        .await
        .map_err(Failure::classified)?;
    let Some(kind) = completed else {
        tracing::warn!("ingestion was finished elsewhere; not completing it twice");
        return Ok(());
    };
    if kind.is_matchable() {
        send_to_matching(deps, claimed.document_id).await;
    }
    tracing::info!(model = %run.model, document_type = kind.as_str(), "ingestion completed");
    Ok(())
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
    let key = transcription_key(id);
    let object = match deps
        .s3
        .get_object()
        .bucket(&deps.config.bucket)
        .key(&key)
        .send()
        .await
    {
        Ok(object) => object,
        Err(e)
            if e.as_service_error()
                .is_some_and(GetObjectError::is_no_such_key) =>
        {
            return Ok(None);
        }
        Err(e) => {
            return Err(s3_failure(
                &format!("failed to read s3://{}/{key}", deps.config.bucket),
                e,
            ));
        }
    };
    let bytes = object.body.collect().await.map_err(|e| {
        Failure::transient(anyhow!(
            "failed to read s3://{}/{key}: {e}",
            deps.config.bucket
        ))
    })?;
    match serde_json::from_slice(&bytes.into_bytes()) {
        Ok(transcription) => Ok(Some(transcription)),
        Err(e) => {
            tracing::warn!(error.message = %e, key, "stored transcription is unreadable; transcribing again");
            Ok(None)
        }
    }
}

async fn fetch_file(deps: &Deps, key: &str) -> Result<Vec<u8>, Failure> {
    let bucket = &deps.config.bucket;
    let object = deps
        .s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| s3_failure(&format!("failed to fetch s3://{bucket}/{key}"), e))?;
    let size = object.content_length().unwrap_or(0).max(0) as u64;
    if size > deps.config.max_file_bytes {
        return Err(Failure::permanent(anyhow!(
            "file s3://{bucket}/{key} is {size} bytes, over the {} byte limit (MAX_FILE_BYTES)",
            deps.config.max_file_bytes
        )));
    }
    let bytes = object
        .body
        .collect()
        .await
        .map_err(|e| Failure::transient(anyhow!("failed to read s3://{bucket}/{key}: {e}")))?
        .into_bytes()
        .to_vec();
    if bytes.is_empty() {
        return Err(Failure::permanent(anyhow!(
            "file s3://{bucket}/{key} is empty"
        )));
    }
    Ok(bytes)
}

async fn put(deps: &Deps, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), Failure> {
    deps.s3
        .put_object()
        .bucket(&deps.config.bucket)
        .key(key)
        .content_type(content_type)
        .body(bytes.into())
        .send()
        .await
        .map_err(|e| {
            Failure::transient(anyhow!(
                "failed to store s3://{}/{key}: {}",
                deps.config.bucket,
                aws_sdk_s3::error::DisplayErrorContext(&e)
            ))
        })?;
    Ok(())
}

/// Transcribes the file, preprocesses a poor image once, stores the result and records
/// its metadata on the ingestion row.
async fn transcribe(
    deps: &Deps,
    id: IngestionId,
    kind: FileKind,
    file_path: &str,
) -> Result<Transcription, Failure> {
    let bytes = fetch_file(deps, file_path).await?;
    let mut transcription = deps
        .transcriber
        .transcribe(kind, &bytes)
        .await
        .map_err(Failure::classified)?;
    let mut preprocessed_path = None;
    if transcription.quality < deps.config.quality_threshold {
        if kind.is_image() {
            tracing::info!(
                quality = transcription.quality,
                "low transcription quality; preprocessing once"
            );
            let improved = docflow::ocr::preprocess_image(bytes)
                .await
                .map_err(Failure::classified)?;
            let key = format!("ingestions/{id}/preprocessed.png");
            put(deps, &key, improved.clone(), "image/png").await?;
            transcription = deps
                .transcriber
                .transcribe(FileKind::Png, &improved)
                .await
                .map_err(Failure::classified)?;
            transcription.preprocessed = true;
            preprocessed_path = Some(key);
        } else {
            // Only images can be preprocessed here; the quality gate decides the rest.
            tracing::info!(
                quality = transcription.quality,
                "low transcription quality; not an image, continuing"
            );
        }
    }

    let key = transcription_key(id);
    let json = serde_json::to_vec(&transcription).map_err(|e| Failure::permanent(anyhow!(e)))?;
    put(deps, &key, json, "application/json").await?;
    sqlx::query(
        r#"
        UPDATE ingestion
           SET transcription_file_path = $2,
               transcription_quality_score = $3,
               transcription_page_count = $4,
               preprocessed_file_path = COALESCE($5, preprocessed_file_path),
               updated_at = now()
         WHERE id = $1
        "#,
    )
    .bind(id)
    .bind(&key)
    .bind(transcription.quality)
    .bind(transcription.page_count as i32)
    .bind(preprocessed_path)
    .execute(&deps.pool)
    .await
    .map_err(Failure::classified)?;
    Ok(transcription)
}

/// Completes the ingestion and, for matchable documents, marks matching pending — in one
/// transaction, so a committed completion is always visible to the sweeper. Returns the
/// document type, or `None` when the ingestion was no longer in progress.
async fn complete(
    pool: &PgPool,
    claimed: &Claimed,
    run: &ExtractionRun,
) -> Result<Option<DocumentType>, sqlx::Error> {
    let data = serde_json::to_value(&run.extraction).expect("an Extraction always serializes");
    let kind = run.extraction.document_type.unwrap_or(DocumentType::Other);
    let mut tx = pool.begin().await?;
    let updated = sqlx::query(
        r#"
        UPDATE ingestion
           SET status = 'completed',
               structured_data = $2,
               valid_structured_data = true,
               extraction_input_tokens = $3,
               extraction_output_tokens = $4,
               extraction_model = $5,
               last_error = NULL,
               completed_at = now(),
               updated_at = now()
         WHERE id = $1 AND status = 'in-progress'
        "#,
    )
    .bind(claimed.id)
    .bind(&data)
    .bind(run.input_tokens)
    .bind(run.output_tokens)
    .bind(&run.model)
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(None);
    }
    sqlx::query(
        r#"
        UPDATE document
           SET type = $2::document_type,
               matching_status = CASE WHEN $3 THEN 'pending' ELSE matching_status END,
               updated_at = now()
         WHERE id = $1
        "#,
    )
    .bind(claimed.document_id)
    .bind(kind.as_str())
    .bind(kind.is_matchable())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(kind))
}

/// After commit: a failed send is logged and left to the sweeper (the document stays
/// `pending`); it never fails the ingestion.
async fn send_to_matching(deps: &Deps, document_id: Uuid) {
    let sent = deps
        .sqs
        .send_message()
        .queue_url(&deps.config.matching_queue_url)
        .message_body(document_id.to_string())
        .send()
        .await;
    match sent {
        Ok(_) => tracing::info!(%document_id, "sent to matching"),
        Err(e) => tracing::error!(
            %document_id,
            error.message = %aws_sdk_sqs::error::DisplayErrorContext(&e),
            "could not send the document to matching; the sweeper will re-send it (matching_status stays pending)"
        ),
    }
}
