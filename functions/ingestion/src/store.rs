//! What an attempt stores beside the ingestion row: files under the ingestion's S3
//! prefix, and the Textract jobs (`ingestion.ocr_jobs`, by the key each reads) that a
//! later attempt resumes instead of paying for another.

use anyhow::anyhow;
use aws_sdk_s3::primitives::ByteStream;
use docflow::Failure;
use sqlx::PgPool;
use uuid::Uuid;

use crate::Deps;
use crate::lease::{Claimed, lease_lost};

/// Stores `body` at `key` in the documents bucket, only while the attempt still holds
/// the ingestion's lease ([`lease_lost`] otherwise): a worker that lost it (paused past
/// the stale threshold, then taken over) must not overwrite what the live worker wrote
/// or reads.
pub(crate) async fn put(
    deps: &Deps,
    claimed: &Claimed,
    key: &str,
    body: impl Into<ByteStream>,
    content_type: &str,
) -> Result<(), Failure> {
    let ours: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM ingestion WHERE id = $1 AND status = 'in-progress' AND claim_token = $2)",
    )
    .bind(claimed.id)
    .bind(claimed.token)
    .fetch_one(&deps.pool)
    .await
    .map_err(Failure::classified)?;
    if !ours {
        return Err(lease_lost());
    }
    deps.s3
        .put_object()
        .bucket(&deps.config.bucket)
        .key(key)
        .content_type(content_type)
        .body(body.into())
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

/// The Textract job stored for `key` by an earlier attempt.
pub(crate) async fn stored_ocr_job(
    pool: &PgPool,
    id: Uuid,
    key: &str,
) -> Result<Option<String>, Failure> {
    sqlx::query_scalar("SELECT ocr_jobs ->> $2 FROM ingestion WHERE id = $1")
        .bind(id)
        .bind(key)
        .fetch_optional(pool)
        .await
        .map(Option::flatten)
        .map_err(Failure::classified)
}

/// Remembers the Textract job reading `key`, so that a retry resumes it. Only under our
/// claim ([`lease_lost`] otherwise: the ingestion's new holder keeps its own jobs).
pub(crate) async fn store_ocr_job(
    pool: &PgPool,
    claimed: &Claimed,
    key: &str,
    job_id: &str,
) -> Result<(), Failure> {
    let stored = sqlx::query(
        r#"
        UPDATE ingestion
           SET ocr_jobs = ocr_jobs || jsonb_build_object($2::text, $3::text),
               updated_at = now()
         WHERE id = $1 AND status = 'in-progress' AND claim_token = $4
        "#,
    )
    .bind(claimed.id)
    .bind(key)
    .bind(job_id)
    .bind(claimed.token)
    .execute(pool)
    .await
    .map_err(Failure::classified)?;
    if stored.rows_affected() == 0 {
        return Err(lease_lost());
    }
    Ok(())
}

/// Forgets a failed or expired Textract job, so the next attempt starts a new one; only
/// under our claim (a new holder's job for the same key is its own). A failure here is
/// only logged: the next attempt then meets the same job again.
pub(crate) async fn forget_ocr_job(pool: &PgPool, claimed: &Claimed, key: &str) {
    let forgotten = sqlx::query(
        r#"
        UPDATE ingestion SET ocr_jobs = ocr_jobs - $2
         WHERE id = $1 AND status = 'in-progress' AND claim_token = $3
        "#,
    )
    .bind(claimed.id)
    .bind(key)
    .bind(claimed.token)
    .execute(pool)
    .await;
    if let Err(e) = forgotten {
        tracing::warn!(error.message = %e, key, "could not forget the failed Textract job");
    }
}
