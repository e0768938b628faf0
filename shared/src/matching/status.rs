//! The matching state of a document (seed 001): `NULL → pending → in-progress →
//! succeeded | failed`, with `matching_attempts` counting deliveries (not in-process LLM
//! retries), `matching_error` the last error and `matching_failed_at` the failure time.
//! Every transition is one statement.

use sqlx::PgPool;
use uuid::Uuid;

use super::Document;
use super::normalize::Normalized;

/// The result of claiming a document for matching.
#[derive(Debug, Clone)]
pub enum Claim {
    /// Now `in-progress`, attempts incremented.
    Claimed(Document),
    /// No document with that id.
    Missing,
    /// The document exists but has no structured data (ingestion did not finish).
    NoStructuredData,
}

/// Marks the document `in-progress` and counts the delivery, in one statement; only a
/// document with structured data is claimed. Fails with the database error.
pub async fn claim(pool: &PgPool, id: Uuid) -> Result<Claim, sqlx::Error> {
    let claimed = sqlx::query_as::<_, Document>(
        r#"
        UPDATE document
           SET matching_status   = 'in-progress',
               matching_attempts = matching_attempts + 1,
               updated_at        = now()
         WHERE id = $1
           AND structured_data IS NOT NULL
        RETURNING id, tenant_id, type AS doc_type, structured_data, cluster_id, matching_attempts
        "#,
    )
    .bind(id)
    .fetch_optional(pool)
    .await?;
    if let Some(doc) = claimed {
        return Ok(Claim::Claimed(doc));
    }
    let exists: Option<bool> = sqlx::query_scalar(r#"SELECT true FROM document WHERE id = $1"#)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(match exists {
        Some(_) => Claim::NoStructuredData,
        None => Claim::Missing,
    })
}

/// Persists the normalised fields (outside the write transaction: a retry overwrites
/// them with the same values).
pub async fn save_normalized(pool: &PgPool, id: Uuid, n: &Normalized) -> Result<(), sqlx::Error> {
    sqlx::query(
        r#"
        UPDATE document
           SET normalized_counterparty = $2,
               normalized_vat_id       = $3,
               normalized_iban         = $4,
               normalized_references   = $5,
               searchable_text         = $6
         WHERE id = $1
        "#,
    )
    .bind(id)
    .bind(n.counterparty.as_deref())
    .bind(n.vat_id.as_deref())
    .bind(n.iban.as_deref())
    .bind(&n.references)
    .bind(&n.searchable_text)
    .execute(pool)
    .await?;
    Ok(())
}

/// Marks the document `succeeded` and clears the error of earlier attempts.
pub async fn succeed(pool: &PgPool, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        r#"
        UPDATE document
           SET matching_status    = 'succeeded',
               matching_error     = NULL,
               matching_failed_at = NULL,
               updated_at         = now()
         WHERE id = $1
        "#,
    )
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// A document marked `failed`, with what the admin notification needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Failed {
    pub tenant_id: Uuid,
    pub tenant_name: String,
    pub matching_attempts: i32,
}

/// Marks the document `failed` with the error and the time; `None` when it does not
/// exist.
pub async fn fail(pool: &PgPool, id: Uuid, error: &str) -> Result<Option<Failed>, sqlx::Error> {
    sqlx::query_as::<_, Failed>(
        r#"
        UPDATE document AS d
           SET matching_status    = 'failed',
               matching_error     = $2,
               matching_failed_at = now(),
               updated_at         = now()
          FROM tenant AS t
         WHERE d.id = $1
           AND t.id = d.tenant_id
        RETURNING d.tenant_id, t.name AS tenant_name, d.matching_attempts
        "#,
    )
    .bind(id)
    .bind(error)
    .fetch_optional(pool)
    .await
}

/// Records the error of a transient failure that will be retried; the status stays
/// `in-progress` until the retry ends it.
pub async fn record_error(pool: &PgPool, id: Uuid, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query(r#"UPDATE document SET matching_error = $2 WHERE id = $1"#)
        .bind(id)
        .bind(error)
        .execute(pool)
        .await?;
    Ok(())
}
