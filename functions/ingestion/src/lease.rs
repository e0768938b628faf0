//! The ingestion's lease: the claim (seed 003's conditional `UPDATE … RETURNING`), the
//! record it returns, what a delivery that claimed nothing does, the heartbeat's renewal
//! and the one statement that counts a failed attempt. The pipeline and the transcription
//! build on it; it depends on neither.
//!
//! **The claim token** (as the output worker's). `started_at` says whether the lease is
//! live; `claim_token` says whose it is. Every claim writes a fresh token and every write
//! after it matches `status = 'in-progress' AND claim_token = <ours>`. A worker paused
//! past the stale threshold (300 s) whose ingestion was claimed again by a redelivery
//! (at the earliest when the heartbeat's last extension ran out, 360 s after it) can
//! then change nothing: it neither renews the new holder's lease, nor releases it for a
//! third delivery (which would pay for OCR and the LLM again), nor fails or completes
//! the ingestion under the live worker.

use std::time::Duration;

use anyhow::anyhow;
use docflow::ids::IngestionId;
use docflow::{DiscardKind, Failure, Outcome};
use sqlx::PgPool;
use uuid::Uuid;

use crate::LEASE_MARGIN;

/// A claimed ingestion and its document.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub id: Uuid,
    pub document_id: Uuid,
    pub tenant_id: Uuid,
    pub attempt_count: i32,
    /// The document's `file_path` (read by the claim, so the record path needs no
    /// second statement for it).
    pub file_path: String,
    /// Whether an earlier attempt was claimed: its lease was still set when this claim
    /// took over (a worker that died), or a failed attempt was counted (which releases
    /// the lease). Only then can a transcription be stored already; a first attempt
    /// skips looking for one (an S3 GET that could only answer 404).
    pub tried_before: bool,
    /// This claim's token: every later write matches it.
    pub token: Uuid,
}

/// What a write after the claim that matched nothing under our token returns: the
/// ingestion was finished, or claimed by another delivery, while this attempt ran.
/// Transient, so the failure path runs; its count matches nothing either, and the
/// message is then kept or dropped as for a delivery that claimed nothing ([`unclaimed`]).
pub fn lease_lost() -> Failure {
    Failure::transient(anyhow!(
        "the ingestion lease is no longer ours (finished, or claimed by another delivery while this attempt ran)"
    ))
}

/// Seed 003's claim: the ingestion is in progress and its lease is free or stale.
/// `None` when it is unknown, finished, or held by a live worker. Moves `updated_at`,
/// which the sweeper's threshold reads.
///
/// `tried_before` reads the lease as the statement's snapshot saw it; the claim itself
/// re-checks the row it updates. A claim that committed after that snapshot makes this
/// one match nothing (its lease is live), and every attempt that ends without finishing
/// either leaves its lease set (a crash) or counts itself in `attempt_count` (a failure,
/// [`count_failed_attempt`]): so `false` means no attempt ever got past a claim.
pub async fn claim(
    pool: &PgPool,
    id: IngestionId,
    stale_after: Duration,
) -> Result<Option<Claimed>, sqlx::Error> {
    sqlx::query_as(
        r#"
        UPDATE ingestion i
           SET started_at = now(), updated_at = now(), claim_token = gen_random_uuid()
          FROM document d, (SELECT started_at FROM ingestion WHERE id = $1) before
         WHERE i.id = $1
           AND d.id = i.document_id
           AND i.status = 'in-progress'
           AND (i.started_at IS NULL OR i.started_at < now() - make_interval(secs => $2))
        RETURNING i.id, i.document_id, d.tenant_id, i.attempt_count, d.file_path,
                  (before.started_at IS NOT NULL OR i.attempt_count > 0) AS tried_before,
                  i.claim_token AS token
        "#,
    )
    .bind(id)
    .bind(stale_after.as_secs_f64())
    .fetch_optional(pool)
    .await
}

/// What to do with a message whose claim found nothing. Finished or unknown work is
/// discarded. A live lease means another delivery is working on it: this message is
/// kept and comes back [`LEASE_MARGIN`] after the lease would be stale — it may be that
/// worker's own message redelivered (deleting it would leave the worker nothing to
/// retry with), and a duplicate (a sweeper re-send) is then discarded as finished work.
pub async fn unclaimed(pool: &PgPool, id: IngestionId, stale_after: Duration) -> Outcome {
    let row: Result<Option<(String, Option<f64>)>, _> = sqlx::query_as(
        r#"
        SELECT status,
               EXTRACT(EPOCH FROM started_at + make_interval(secs => $2) - now())::float8
          FROM ingestion
         WHERE id = $1
        "#,
    )
    .bind(id)
    .bind(stale_after.as_secs_f64())
    .fetch_optional(pool)
    .await;
    match row {
        Ok(None) => Outcome::discard_as(DiscardKind::Unknown, format!("unknown ingestion {id}")),
        Ok(Some((status, stale_in))) if status == "in-progress" => {
            let until_stale = Duration::from_secs_f64(stale_in.unwrap_or(0.0).max(0.0));
            tracing::info!(
                until_stale_s = until_stale.as_secs(),
                "ingestion is leased by a live worker; retrying after the lease would be stale"
            );
            Outcome::Retry {
                after: until_stale + LEASE_MARGIN,
            }
        }
        Ok(Some((status, _))) => Outcome::discard_as(
            DiscardKind::Duplicate,
            format!("ingestion {id} is already {status} (duplicate delivery)"),
        ),
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not read why the ingestion was not claimable");
            Outcome::Release
        }
    }
}

/// Renews the lease while a long attempt runs (the heartbeat's hook, before it extends
/// the message's visibility). Only our own lease: a claim that took the ingestion over
/// keeps its own. Returns whether the lease is still ours: renewed, or the ingestion
/// finished under our own claim token (this attempt completed it and a beat came before
/// the attempt returned: cancelling it then would fail a finished record). A failure to
/// renew is logged (the next beat tries again) and counts as still ours.
pub async fn renew_lease(pool: &PgPool, claimed: &Claimed) -> bool {
    let renewed = sqlx::query_scalar::<_, bool>(
        r#"
        WITH renewed AS (
            UPDATE ingestion
               SET started_at = now(), updated_at = now()
             WHERE id = $1 AND status = 'in-progress' AND claim_token = $2
            RETURNING id
        )
        SELECT EXISTS (SELECT 1 FROM renewed)
            OR EXISTS (SELECT 1 FROM ingestion WHERE id = $1 AND claim_token = $2)
        "#,
    )
    .bind(claimed.id)
    .bind(claimed.token)
    .fetch_one(pool)
    .await;
    match renewed {
        Ok(false) => {
            tracing::warn!(
                "the ingestion lease is no longer ours (finished, or claimed by another delivery); not renewing it"
            );
            false
        }
        Ok(true) => true,
        Err(e) => {
            tracing::warn!(error.message = %e, error.cause_chain = ?e, "could not renew the ingestion lease");
            true
        }
    }
}

/// One statement: count the attempt; fail the ingestion when `fail_now` (a permanent
/// error, or the message's final receive) or at the last attempt (keeping the lease, so
/// nobody reclaims it), otherwise release the lease so the delayed redelivery can claim
/// it at once. Moves `updated_at` either way. Only under our claim: `None` when the
/// ingestion was finished, or claimed by another delivery, meanwhile (then the attempt
/// is not ours to count, and the live worker's lease stays as it is).
pub async fn count_failed_attempt(
    pool: &PgPool,
    claimed: &Claimed,
    fail_now: bool,
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
         WHERE id = $1 AND status = 'in-progress' AND claim_token = $5
        RETURNING attempt_count, status
        "#,
    )
    .bind(claimed.id)
    .bind(fail_now)
    .bind(max_attempts)
    .bind(error)
    .bind(claimed.token)
    .fetch_optional(pool)
    .await
}
