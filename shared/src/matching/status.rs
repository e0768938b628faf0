//! The matching state of a document (seed 001): `NULL → pending → in-progress →
//! succeeded | failed`, with `matching_attempts` counting deliveries (not in-process LLM
//! retries), `matching_error` the last error and `matching_failed_at` the failure time,
//! `matching_succeeded_at` the success time (duplicates of finished work are recognised
//! by it) and `matching_notified_at` when the admins were told about the failure.
//! Every transition is one statement.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::normalize::Normalized;
use super::{Document, DocumentType};
pub use crate::db::Held;

/// The result of claiming a document for matching.
// One per message, moved once: the size of `Claimed` (the extraction inline) costs
// nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Claim {
    /// Now `in-progress`, attempts incremented.
    Claimed(Document),
    /// No document with that id.
    Missing,
    /// The document exists but has no structured data (ingestion did not finish).
    NoStructuredData,
    /// Matching already finished (`succeeded` or `failed`) after the message was sent: a
    /// duplicate or late delivery, a sweeper re-send or a DLQ redrive of finished work.
    AlreadyFinished(Finished),
    /// Claimed (`in-progress`, attempts incremented), but its `type` is an enum label this
    /// version does not know: it cannot be matched, and retrying will not change that.
    UnknownType { label: String, attempt: i32 },
    /// Claimed (`in-progress`, attempts incremented), but its `structured_data` does not
    /// read as an [`crate::extract::Extraction`]: it cannot be matched, and retrying
    /// will not change that (a new extraction will).
    UnreadableData {
        error: crate::extract::UnreadableData,
        attempt: i32,
    },
    /// Another delivery holds a live claim (`in-progress`, claimed less than the lease
    /// ago): this one does not run; the claim goes stale in `stale_in`.
    Busy { stale_in: std::time::Duration },
}

/// How long a claim is live unless `MATCHING_CLAIM_LEASE_SECONDS` says otherwise
/// ([`super::MatchingConfig::claim_lease`]): longer than any run (bounded by its
/// invocation, at most the function's 120 s timeout), so only the claim of a delivery
/// that died goes stale. A run that ends releases its claim at once.
pub const DEFAULT_CLAIM_LEASE: std::time::Duration = std::time::Duration::from_secs(150);

/// A document whose matching finished after the message was sent.
#[derive(Debug, Clone)]
pub struct Finished {
    /// `succeeded` or `failed`.
    pub status: String,
    /// A recorded failure that reached no admin yet (the run that recorded it died
    /// before notifying, or every channel failed): the caller tells them now.
    pub untold_failure: Option<Failed>,
}

/// Marks the document `in-progress` and counts the delivery, in one statement; only a
/// document with structured data is claimed, and not when its matching finished
/// (`succeeded` / `failed`) at or after `sent_at`, the time the message was sent: that
/// message is a duplicate of finished work. A message sent after the finish (or with no
/// send time) claims it again. Another delivery's claim younger than `lease` is live
/// ([`Claim::Busy`]). Fails with the database error.
pub async fn claim(
    pool: &PgPool,
    id: Uuid,
    sent_at: Option<DateTime<Utc>>,
    lease: std::time::Duration,
) -> Result<Claim, sqlx::Error> {
    /// The claimed row, its type as text: an enum label added after this version was
    /// built must not make the row unreadable (a decode error, retried until the DLQ).
    #[derive(sqlx::FromRow)]
    struct ClaimedRow {
        id: Uuid,
        tenant_id: Uuid,
        doc_type: String,
        structured_data: serde_json::Value,
        cluster_id: Option<Uuid>,
        matching_attempts: i32,
        data_version: i64,
    }
    let claimed = sqlx::query_as::<_, ClaimedRow>(
        r#"
        UPDATE document
           SET matching_status     = 'in-progress',
               matching_attempts   = matching_attempts + 1,
               matching_claimed_at = now(),
               updated_at          = now()
         WHERE id = $1
           AND structured_data IS NOT NULL
           -- Another delivery's live claim: it runs, this one does not.
           AND NOT (matching_status = 'in-progress'
                    AND COALESCE(matching_claimed_at > now() - make_interval(secs => $3), false))
           AND NOT ($2::timestamptz IS NOT NULL AND (
                   (matching_status = 'succeeded' AND COALESCE(matching_succeeded_at >= $2, false))
                OR (matching_status = 'failed' AND COALESCE(matching_failed_at >= $2, false))))
        RETURNING id, tenant_id, type::text AS doc_type, structured_data, cluster_id, matching_attempts,
                  data_version
        "#,
    )
    .bind(id)
    .bind(sent_at)
    .bind(lease.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    if let Some(row) = claimed {
        let Some(doc_type) = DocumentType::from_label(&row.doc_type) else {
            return Ok(Claim::UnknownType {
                label: row.doc_type,
                attempt: row.matching_attempts,
            });
        };
        let data = match crate::extract::Extraction::from_stored(&row.structured_data) {
            Ok(data) => data,
            Err(error) => {
                return Ok(Claim::UnreadableData {
                    error,
                    attempt: row.matching_attempts,
                });
            }
        };
        return Ok(Claim::Claimed(Document {
            id: row.id,
            tenant_id: row.tenant_id,
            doc_type,
            data,
            cluster_id: row.cluster_id,
            matching_attempts: row.matching_attempts,
            data_version: row.data_version,
        }));
    }
    #[derive(sqlx::FromRow)]
    struct Row {
        has_data: bool,
        matching_status: Option<String>,
        untold: bool,
        tenant_id: Uuid,
        tenant_name: String,
        matching_attempts: i32,
        doc_type: String,
        matching_failed_at: Option<DateTime<Utc>>,
        matching_error: Option<String>,
        live_claim_left: Option<f64>,
    }
    let row = sqlx::query_as::<_, Row>(
        r#"
        SELECT d.structured_data IS NOT NULL AS has_data,
               CASE WHEN d.matching_status = 'in-progress'
                         AND d.matching_claimed_at > now() - make_interval(secs => $3)
                    THEN extract(epoch FROM d.matching_claimed_at
                                 + make_interval(secs => $3) - now())::float8
               END AS live_claim_left,
               d.matching_status,
               d.matching_notified_at IS NULL
                   AND (d.matching_notice_claimed_at IS NULL
                        OR d.matching_notice_claimed_at < now() - make_interval(secs => $2))
                   AS untold,
               d.tenant_id,
               t.name AS tenant_name,
               d.matching_attempts,
               d.type::text AS doc_type,
               d.matching_failed_at,
               d.matching_error
          FROM document d
          JOIN tenant t ON t.id = d.tenant_id
         WHERE d.id = $1
        "#,
    )
    .bind(id)
    .bind(NOTICE_CLAIM_GRACE.as_secs_f64())
    .bind(lease.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    Ok(match row {
        None => Claim::Missing,
        Some(row) if !row.has_data => Claim::NoStructuredData,
        Some(Row {
            live_claim_left: Some(left),
            ..
        }) => Claim::Busy {
            stale_in: std::time::Duration::from_secs_f64(left.max(0.0)),
        },
        Some(row) => {
            let status = row.matching_status.unwrap_or_default();
            let untold_failure = match (status.as_str(), row.untold, row.matching_failed_at) {
                ("failed", true, Some(failed_at)) => Some(Failed {
                    tenant_id: row.tenant_id,
                    tenant_name: row.tenant_name,
                    matching_attempts: row.matching_attempts,
                    doc_type: row.doc_type,
                    failed_at,
                    error: row.matching_error.unwrap_or_default(),
                }),
                _ => None,
            };
            Claim::AlreadyFinished(Finished {
                status,
                untold_failure,
            })
        }
    })
}

/// What a matching run holds: the claim (`in-progress` as attempt
/// `attempt`) and the extraction it read (`data_version`). A re-extraction (new data,
/// `pending`) or a newer delivery's claim takes it away; from then on the run's writes
/// do not land and its result is discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub id: Uuid,
    pub attempt: i32,
    pub data_version: i64,
}

impl Document {
    /// The claim and data version this run holds.
    pub fn owner(&self) -> Owner {
        Owner {
            id: self.id,
            attempt: self.matching_attempts,
            data_version: self.data_version,
        }
    }
}

/// Persists the normalised fields (outside the write transaction: a retry overwrites
/// them with the same values) and adds the counterparty name to the tenant's names
/// (`matching_counterparty`, where the name path of the candidate search starts) — only
/// while `owner` still holds the claim and the data version it read, checked under the
/// row lock the update takes. Returns whether it saved; `false`: the run is stale (the
/// document was re-extracted or claimed by a newer delivery), nothing was written.
pub async fn save_normalized(
    pool: &PgPool,
    owner: &Owner,
    n: &Normalized,
) -> Result<Held, sqlx::Error> {
    save_normalized_if(pool, owner.id, Some(owner), n).await
}

/// [`save_normalized`] without the ownership check: for fixtures and tools that store
/// the normalised fields of a document no run has claimed.
pub async fn save_normalized_unclaimed(
    pool: &PgPool,
    id: Uuid,
    n: &Normalized,
) -> Result<(), sqlx::Error> {
    save_normalized_if(pool, id, None, n).await.map(|_| ())
}

async fn save_normalized_if(
    pool: &PgPool,
    id: Uuid,
    owner: Option<&Owner>,
    n: &Normalized,
) -> Result<Held, sqlx::Error> {
    let saved: i64 = sqlx::query_scalar(
        r#"
        WITH saved AS (
            UPDATE document
               SET normalized_counterparty = $2,
                   normalized_vat_id       = $3,
                   normalized_iban         = $4,
                   normalized_references   = $5,
                   matching_own_keys       = $10,
                   matching_cited_keys     = $11,
                   searchable_text         = $6,
                   -- An embedding of other text is stale: the next match makes a new one.
                   embedding       = CASE WHEN document.searchable_text IS DISTINCT FROM $6
                                          THEN NULL ELSE document.embedding END,
                   embedding_model = CASE WHEN document.searchable_text IS DISTINCT FROM $6
                                          THEN NULL ELSE document.embedding_model END,
                   document_date           = COALESCE($7, created_at::date)
             WHERE id = $1
               AND ($8::int IS NULL
                    OR (matching_status = 'in-progress'
                        AND matching_attempts = $8
                        AND data_version = $9))
            RETURNING tenant_id, normalized_counterparty
        ), named AS (
            INSERT INTO matching_counterparty (tenant_id, name)
            SELECT tenant_id, normalized_counterparty FROM saved
             WHERE normalized_counterparty IS NOT NULL
            ON CONFLICT DO NOTHING
        )
        SELECT count(*) FROM saved
        "#,
    )
    .bind(id)
    .bind(n.counterparty.as_deref())
    .bind(n.vat_id.as_deref())
    .bind(n.iban.as_deref())
    .bind(&n.reference_keys)
    .bind(&n.searchable_text)
    .bind(n.date)
    .bind(owner.map(|o| o.attempt))
    .bind(owner.map(|o| o.data_version))
    .bind(&n.search_keys.own)
    .bind(&n.search_keys.cited)
    .fetch_one(pool)
    .await?;
    Ok(Held::when(saved == 1))
}

/// Locks the document's row for the rest of the caller's transaction and says whether
/// `owner` still holds the claim and the data version it read. Under that lock a
/// re-extraction or a newer claim waits for the transaction to end, so what the check
/// saw holds until commit.
pub async fn still_owns(conn: &mut PgConnection, owner: &Owner) -> Result<Held, sqlx::Error> {
    let owned: Option<i32> = sqlx::query_scalar(
        r#"
        SELECT 1 FROM document
         WHERE id = $1
           AND matching_status = 'in-progress'
           AND matching_attempts = $2
           AND data_version = $3
           FOR UPDATE
        "#,
    )
    .bind(owner.id)
    .bind(owner.attempt)
    .bind(owner.data_version)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(Held::when(owned.is_some()))
}

/// Marks the document `succeeded` (and when), clears the error of earlier attempts —
/// only while `owner` still holds the claim and the data version it read. Run it in the
/// write transaction, so matched edges and the status commit together. Returns whether
/// it marked the row; `false`: the run is stale and the caller rolls back.
pub async fn succeed(conn: &mut PgConnection, owner: &Owner) -> Result<Held, sqlx::Error> {
    let marked = sqlx::query(
        r#"
        UPDATE document
           SET matching_status       = 'succeeded',
               matching_succeeded_at = now(),
               matching_claimed_at   = NULL,
               matching_error        = NULL,
               matching_failed_at    = NULL,
               matching_notified_at  = NULL,
               updated_at            = now()
         WHERE id = $1
           AND matching_status = 'in-progress'
           AND matching_attempts = $2
           AND data_version = $3
        "#,
    )
    .bind(owner.id)
    .bind(owner.attempt)
    .bind(owner.data_version)
    .execute(conn)
    .await?
    .rows_affected();
    Ok(Held::when(marked == 1))
}

/// Gives up the claim of attempt `attempt` when its run ended without recording an
/// outcome that releases it (the failure could not be recorded): the next delivery may
/// claim at once instead of waiting out its lease. A no-op when the claim is no
/// longer that attempt's. Returns whether it released.
pub async fn release_claim(pool: &PgPool, id: Uuid, attempt: i32) -> Result<Held, sqlx::Error> {
    let released = sqlx::query(
        r#"
        UPDATE document
           SET matching_claimed_at = NULL
         WHERE id = $1
           AND matching_status = 'in-progress'
           AND matching_attempts = $2
           AND matching_claimed_at IS NOT NULL
        "#,
    )
    .bind(id)
    .bind(attempt)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(Held::when(released == 1))
}

/// A document marked `failed`, with what the admin notification needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Failed {
    pub tenant_id: Uuid,
    pub tenant_name: String,
    pub matching_attempts: i32,
    /// The document type's enum label (as text: also one this version does not know).
    pub doc_type: String,
    /// The failure's time: [`mark_notified`] names the failure by it.
    pub failed_at: DateTime<Utc>,
    /// `matching_error`.
    pub error: String,
}

/// Which delivery records an outcome: the one that claimed the document (its
/// `matching_attempts` after the claim), or one whose claim itself failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Claimed as this attempt: it may record only while the document is still
    /// `in-progress` under this attempt. A later delivery that claimed it since (a
    /// duplicate, a sweeper re-send) owns it now, and an outcome already recorded stays.
    Claimed(i32),
    /// The claim failed (the database): it may record only while matching is unfinished.
    Unclaimed,
}

/// Marks the document `failed` with the error and the time, no admin told yet — only
/// while `attempt` still owns it (see [`Attempt`]); `None` when it does not exist or
/// another delivery owns or finished it (then that delivery records its own outcome).
pub async fn fail(
    pool: &PgPool,
    id: Uuid,
    attempt: Attempt,
    error: &str,
) -> Result<Option<Failed>, sqlx::Error> {
    sqlx::query_as::<_, Failed>(
        r#"
        UPDATE document AS d
           SET matching_status      = 'failed',
               matching_error       = $2,
               matching_claimed_at  = NULL,
               matching_failed_at   = now(),
               matching_notified_at = NULL,
               matching_notice_claimed_at = now(),
               updated_at           = now()
          FROM tenant AS t
         WHERE d.id = $1
           AND t.id = d.tenant_id
           AND CASE WHEN $3::int IS NULL
                    THEN d.matching_status IS DISTINCT FROM 'succeeded'
                         AND d.matching_status IS DISTINCT FROM 'failed'
                    ELSE d.matching_status = 'in-progress' AND d.matching_attempts = $3
               END
        RETURNING d.tenant_id, t.name AS tenant_name, d.matching_attempts, d.type::text AS doc_type,
                  d.matching_failed_at AS failed_at, d.matching_error AS error
        "#,
    )
    .bind(id)
    .bind(error)
    .bind(attempt.claimed())
    .fetch_optional(pool)
    .await
}

impl Attempt {
    fn claimed(self) -> Option<i32> {
        match self {
            Attempt::Claimed(n) => Some(n),
            Attempt::Unclaimed => None,
        }
    }
}

/// How long a claim on a failure's notice holds: longer than any delivery spends
/// notifying (bounded by its invocation, at most the function's 120 s timeout), so only
/// the claim of a delivery that died is taken over.
pub const NOTICE_CLAIM_GRACE: std::time::Duration = std::time::Duration::from_secs(300);

/// Takes over the untold notice of the failure of `failed_at` (no claim, or a stale
/// one); returns whether this delivery now tells the admins.
pub async fn claim_notice(
    pool: &PgPool,
    id: Uuid,
    failed_at: DateTime<Utc>,
) -> Result<Held, sqlx::Error> {
    let claimed = sqlx::query(
        r#"
        UPDATE document
           SET matching_notice_claimed_at = now()
         WHERE id = $1
           AND matching_status = 'failed'
           AND matching_failed_at = $2
           AND matching_notified_at IS NULL
           AND (matching_notice_claimed_at IS NULL
                OR matching_notice_claimed_at < now() - make_interval(secs => $3))
        "#,
    )
    .bind(id)
    .bind(failed_at)
    .bind(NOTICE_CLAIM_GRACE.as_secs_f64())
    .execute(pool)
    .await?
    .rows_affected();
    Ok(Held::when(claimed == 1))
}

/// Gives up this delivery's claim on the notice of `failed_at` when no channel took
/// it, so the next delivery tells the admins at once.
pub async fn release_notice(
    pool: &PgPool,
    id: Uuid,
    failed_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        r#"
        UPDATE document
           SET matching_notice_claimed_at = NULL
         WHERE id = $1
           AND matching_failed_at = $2
           AND matching_notified_at IS NULL
        "#,
    )
    .bind(id)
    .bind(failed_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// Records that the admins were told about the failure of `failed_at` (a later failure
/// or a new matching cycle is not marked). Returns whether it marked the row.
pub async fn mark_notified(
    pool: &PgPool,
    id: Uuid,
    failed_at: DateTime<Utc>,
) -> Result<Held, sqlx::Error> {
    let marked = sqlx::query(
        r#"
        UPDATE document
           SET matching_notified_at = now()
         WHERE id = $1
           AND matching_status = 'failed'
           AND matching_failed_at = $2
        "#,
    )
    .bind(id)
    .bind(failed_at)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(Held::when(marked == 1))
}

/// Records the error of a transient failure that will be retried; the status stays
/// `in-progress` until the retry ends it. Like [`fail`], only while `attempt` owns the
/// document: a late error of an older delivery never lands on a finished document or
/// on a newer attempt's row. Returns whether it recorded.
pub async fn record_error(
    pool: &PgPool,
    id: Uuid,
    attempt: Attempt,
    error: &str,
) -> Result<Held, sqlx::Error> {
    let recorded = sqlx::query(
        r#"
        UPDATE document
           SET matching_error = $2,
               -- This delivery's run is over: its retry (or another delivery) may claim.
               matching_claimed_at = CASE WHEN $3::int IS NULL THEN matching_claimed_at END
         WHERE id = $1
           AND CASE WHEN $3::int IS NULL
                    THEN matching_status IS DISTINCT FROM 'succeeded'
                         AND matching_status IS DISTINCT FROM 'failed'
                    ELSE matching_status = 'in-progress' AND matching_attempts = $3
               END
        "#,
    )
    .bind(id)
    .bind(error)
    .bind(attempt.claimed())
    .execute(pool)
    .await?
    .rows_affected();
    Ok(Held::when(recorded == 1))
}
