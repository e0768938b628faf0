//! Candidate retrieval: the documents of the same tenant that a source document may be
//! linked to. One function, [`find_candidates`], so a semantic (embedding) search can
//! join it later without the rest of the pipeline changing.

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::DocumentType;

/// A document that may match the source, with its normalised fields and the pg_trgm
/// similarity of its counterparty name to the source's.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Candidate {
    pub id: Uuid,
    pub doc_type: DocumentType,
    pub structured_data: Value,
    pub cluster_id: Option<Uuid>,
    pub normalized_counterparty: Option<String>,
    pub normalized_vat_id: Option<String>,
    pub normalized_iban: Option<String>,
    pub normalized_references: Vec<String>,
    pub name_similarity: f64,
}

/// What the search runs on: the source document and its normalised fields.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub tenant_id: Uuid,
    pub document_id: Uuid,
    pub doc_type: DocumentType,
    pub counterparty: Option<&'a str>,
    pub vat_id: Option<&'a str>,
    pub iban: Option<&'a str>,
    pub references: &'a [String],
}

/// Documents of the same tenant and of a type that pairs with the source's (invoice ↔
/// purchase order, invoice ↔ delivery note, purchase order ↔ delivery note) that share a
/// reference, the VAT id or the IBAN, or whose counterparty name is trigram-similar
/// (pg_trgm `%`, threshold 0.3). Those sharing a reference come first, then by name
/// similarity; at most `limit`.
///
/// Only documents already normalised (matched once) are found: a document normalises
/// itself when it is matched, and then finds the earlier ones.
///
/// Fails with the database error; the caller classifies it (connection trouble is
/// transient).
pub async fn find_candidates(
    pool: &PgPool,
    query: &Query<'_>,
    limit: i64,
) -> Result<Vec<Candidate>, sqlx::Error> {
    let types: Vec<&str> = query
        .doc_type
        .matchable_with()
        .iter()
        .map(|t| t.as_str())
        .collect();
    if types.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query_as::<_, Candidate>(
        r#"
        SELECT d.id,
               d.type AS doc_type,
               d.structured_data,
               d.cluster_id,
               d.normalized_counterparty,
               d.normalized_vat_id,
               d.normalized_iban,
               d.normalized_references,
               COALESCE(similarity(d.normalized_counterparty, $4), 0)::float8 AS name_similarity
          FROM document d
         WHERE d.tenant_id = $1
           AND d.id <> $2
           AND d.type = ANY($3::text[]::document_type[])
           AND d.structured_data IS NOT NULL
           AND (   d.normalized_references && $5
                OR d.normalized_vat_id = $6
                OR d.normalized_iban = $7
                OR d.normalized_counterparty % $4)
         ORDER BY (d.normalized_references && $5) DESC,
                  name_similarity DESC,
                  d.created_at DESC
         LIMIT $8
        "#,
    )
    .bind(query.tenant_id)
    .bind(query.document_id)
    .bind(&types)
    .bind(query.counterparty)
    .bind(query.references)
    .bind(query.vat_id)
    .bind(query.iban)
    .bind(limit)
    .fetch_all(pool)
    .await
}
