//! Semantic candidates: the embedding of each document's searchable text,
//! stored with the model that made it, and the nearest documents of the same tenant by
//! cosine distance (pgvector, HNSW).
//!
//! [`ensure_embedding`] runs in the pre-processing, outside the write transaction (seed
//! 001): the stored embedding is reused when it was made by the configured model at the
//! configured dimension for the current searchable text (`status::save_normalized` clears
//! it when the text changes); otherwise the text is embedded (an HTTP call, no
//! connection held) and stored. A retry writes the same values.
//!
//! [`nearest`] first counts the tenant's embeddings of the model (up to
//! [`EXACT_SEARCH_BELOW`], through `idx_document_embedding_tenant`). A tenant below that
//! is ranked exactly: all its embeddings, sorted by distance ([`exact_sql`]) — a filtered
//! HNSW scan gives a small tenant in a large table too few neighbours (the
//! graph walk stops after `hnsw.max_scan_tuples` tuples, most of them other
//! tenants'). A larger tenant gets one scan of the partial HNSW index of the configured
//! dimension (migration `20261123140200_add_document_embedding.sql`) with the tenant,
//! the matchable types and the model as filters and a `LIMIT`, with pgvector's iterative
//! scan (`hnsw.iterative_scan = relaxed_order`, 0.8), `hnsw.ef_search` =
//! [`EF_SEARCH`] and `hnsw.max_scan_tuples` = [`MAX_SCAN_TUPLES`], set per query
//! (`SET LOCAL` in the search's read-only transaction).

use std::collections::HashMap;

use sqlx::PgPool;
use uuid::Uuid;

use super::candidates::{Candidate, Query};
use crate::embeddings::{EmbeddingClient, EmbeddingError, to_pgvector_text};

/// Why the embedding could not be made or stored.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
    #[error("could not read or store the embedding")]
    Database(#[from] sqlx::Error),
}

/// The embedding of the document's current searchable text by `client`'s model, in
/// pgvector's text form: the stored one when it is current, else a new one, stored.
/// `None` when the document has no searchable text.
pub async fn ensure_embedding(
    pool: &PgPool,
    client: &EmbeddingClient,
    document_id: Uuid,
    searchable_text: &str,
) -> Result<Option<String>, EmbedError> {
    if searchable_text.trim().is_empty() {
        return Ok(None);
    }
    let stored: Option<Option<String>> = sqlx::query_scalar(
        r#"
        SELECT CASE WHEN embedding_model = $2 AND vector_dims(embedding) = $3
                         AND searchable_text = $4
                    THEN embedding::text END
          FROM document
         WHERE id = $1
        "#,
    )
    .bind(document_id)
    .bind(client.model())
    .bind(client.dimensions() as i32)
    .bind(searchable_text)
    .fetch_optional(pool)
    .await?;
    if let Some(Some(current)) = stored {
        return Ok(Some(current));
    }
    let vector = to_pgvector_text(&client.embed(searchable_text).await?);
    // Only for the text it was made of: an edit in the meantime clears it again.
    sqlx::query(
        r#"
        UPDATE document
           SET embedding = $2::text::vector, embedding_model = $3
         WHERE id = $1 AND searchable_text = $4
        "#,
    )
    .bind(document_id)
    .bind(&vector)
    .bind(client.model())
    .bind(searchable_text)
    .execute(pool)
    .await?;
    Ok(Some(vector))
}

/// The source's embedding and how to search with it.
#[derive(Debug, Clone, Copy)]
pub struct Probe<'a> {
    /// pgvector text form, from [`ensure_embedding`].
    pub vector: &'a str,
    pub model: &'a str,
    /// One of [`crate::embeddings::INDEXED_DIMENSIONS`] (checked by the settings).
    pub dimensions: u32,
}

/// The nearest-neighbour query for one dimension ($1 tenant, $2 source id, $3 types,
/// $4 counterparty name, $5 vector, $6 model, $7 limit). The dimension is a literal: the
/// expression and the predicate must be the partial index's. Public so a test and
/// `scripts/explain-semantic.sh` can `EXPLAIN` it.
pub fn nearest_sql(dimensions: u32) -> String {
    format!(
        r#"
SELECT d.id,
       d.type AS doc_type,
       d.structured_data,
       d.data_version,
       d.cluster_id,
       d.normalized_counterparty,
       d.normalized_vat_id,
       d.normalized_iban,
       d.normalized_references,
       COALESCE(similarity(d.normalized_counterparty, $4), 0)::float8 AS name_similarity,
       false AS linked,
       (1 - (d.embedding::vector({dimensions}) <=> $5::text::vector({dimensions})))::float8
           AS semantic_similarity
  FROM document d
 WHERE vector_dims(d.embedding) = {dimensions}
   -- Compared as text: no btree index (idx_document_embedding_tenant,
   -- idx_document_tenant_type) can serve it, so the planner walks the HNSW graph with
   -- the tenant as a filter instead of ranking a large tenant's rows one by one on a
   -- misestimate. Small tenants never come here (`exact_sql`).
   AND d.tenant_id::text = $1::text
   AND d.id <> $2
   AND d.type = ANY($3::text[]::document_type[])
   AND d.embedding_model = $6
   AND d.structured_data IS NOT NULL
 ORDER BY d.embedding::vector({dimensions}) <=> $5::text::vector({dimensions})
 LIMIT $7
"#
    )
}

/// Below this many embeddings (of the model and dimension) a tenant is searched exactly
/// ([`exact_sql`]); at or above it through the HNSW index. Measured on the 2-core dev box
/// (PostgreSQL 18, pgvector 0.8.2, warm cache), ranking a tenant's rows exactly takes
/// about 5 ms per 1,000 embeddings at 256 dimensions and 45–50 ms per 1,000 at 1,536
/// (the vectors are TOASTed): 2,000 keeps the worst case near 100 ms, about what one
/// filtered HNSW scan of a few thousand tuples costs. Above it, a tenant holds at least
/// 2,000 rows, so the iterative scan's [`MAX_SCAN_TUPLES`] reach its neighbours in a
/// table of up to ~7 million embeddings (2,000 / N × ⅔ of the types × 50,000 ≥ 10).
pub const EXACT_SEARCH_BELOW: i64 = 2_000;

/// `hnsw.ef_search` for the HNSW search: the candidate list of the graph walk (pgvector's
/// default 40 is less than what the filters leave of it in a shared table).
pub const EF_SEARCH: i64 = 100;

/// `hnsw.max_scan_tuples` for the iterative HNSW scan (pgvector's default 20,000): how far
/// the walk goes on when the filters drop most of what it finds.
pub const MAX_SCAN_TUPLES: i64 = 50_000;

/// The exact nearest-neighbour query for one dimension, same parameters and columns as
/// [`nearest_sql`]: the tenant's embedded rows read through
/// `idx_document_embedding_tenant` (the `MATERIALIZED` CTE keeps the planner from
/// ordering through the HNSW index), all compared, sorted, limited.
pub fn exact_sql(dimensions: u32) -> String {
    format!(
        r#"
WITH mine AS MATERIALIZED (
    SELECT d.id,
           (d.embedding::vector({dimensions}) <=> $5::text::vector({dimensions})) AS distance
      FROM document d
     WHERE d.tenant_id = $1
       AND d.embedding IS NOT NULL
       AND d.embedding_model || '/' || vector_dims(d.embedding)::text = $6 || '/{dimensions}'
       AND d.id <> $2
       AND d.type = ANY($3::text[]::document_type[])
       AND d.structured_data IS NOT NULL
)
SELECT d.id,
       d.type AS doc_type,
       d.structured_data,
       d.data_version,
       d.cluster_id,
       d.normalized_counterparty,
       d.normalized_vat_id,
       d.normalized_iban,
       d.normalized_references,
       COALESCE(similarity(d.normalized_counterparty, $4), 0)::float8 AS name_similarity,
       false AS linked,
       (1 - m.distance)::float8 AS semantic_similarity
  FROM (SELECT id, distance FROM mine ORDER BY distance, id LIMIT $7) m
  JOIN document d ON d.id = m.id
 ORDER BY m.distance, m.id
"#
    )
}

/// How many embeddings of `model` at `dimensions` the tenant holds, counted up to
/// `cap` (an index-only count through `idx_document_embedding_tenant`).
pub async fn tenant_embeddings(
    conn: &mut sqlx::PgConnection,
    tenant_id: Uuid,
    model: &str,
    dimensions: u32,
    cap: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        r#"
        SELECT count(*) FROM (
            SELECT 1 FROM document
             WHERE tenant_id = $1 AND embedding IS NOT NULL
               AND embedding_model || '/' || vector_dims(embedding)::text = $2 || '/' || $3::text
             LIMIT $4) n
        "#,
    )
    .bind(tenant_id)
    .bind(model)
    .bind(dimensions as i32)
    .bind(cap)
    // Planned for this tenant each time: a cached generic plan does not know its size.
    .persistent(false)
    .fetch_one(&mut *conn)
    .await
}

/// At most `limit` documents of the tenant, of a type that pairs with the source's,
/// embedded by the same model, nearest to the probe by cosine distance, with
/// `semantic_similarity` = 1 − distance; those below `min_similarity` are left out.
/// Exact for a tenant with fewer than [`EXACT_SEARCH_BELOW`] embeddings, else through
/// the HNSW index (see the module).
pub async fn nearest(
    pool: &PgPool,
    query: &Query<'_>,
    probe: &Probe<'_>,
    limit: i64,
    min_similarity: f64,
) -> Result<Vec<Candidate>, sqlx::Error> {
    let types: Vec<&str> = query
        .doc_type
        .matchable_with()
        .iter()
        .map(|t| t.as_str())
        .collect();
    if types.is_empty() || limit < 1 {
        return Ok(Vec::new());
    }
    // SET LOCAL needs a transaction: a short read-only one, no HTTP call inside. Dropped
    // (cancelled) it rolls back and the settings go with it.
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION READ ONLY")
        .execute(&mut *tx)
        .await?;
    let size = tenant_embeddings(
        &mut tx,
        query.tenant_id,
        probe.model,
        probe.dimensions,
        EXACT_SEARCH_BELOW,
    )
    .await?;
    let sql = if size < EXACT_SEARCH_BELOW {
        exact_sql(probe.dimensions)
    } else {
        sqlx::query(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), \
                    set_config('hnsw.ef_search', $1, true), \
                    set_config('hnsw.max_scan_tuples', $2, true)",
        )
        .bind(EF_SEARCH.max(limit).to_string())
        .bind(MAX_SCAN_TUPLES.to_string())
        .execute(&mut *tx)
        .await?;
        nearest_sql(probe.dimensions)
    };
    let rows = sqlx::query_as::<_, super::candidates::CandidateRow>(&sql)
        .bind(query.tenant_id)
        .bind(query.document_id)
        .bind(&types)
        .bind(query.counterparty)
        .bind(probe.vector)
        .bind(probe.model)
        .bind(limit)
        // Planned with this tenant's values each time (an unnamed statement): a warm
        // connection's cached generic plan would plan for an average tenant.
        .persistent(false)
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    let mut found = super::candidates::readable(rows);
    tracing::debug!(
        tenant_embeddings = size,
        exact = size < EXACT_SEARCH_BELOW,
        neighbours = found.len(),
        "nearest-neighbour search"
    );
    found.retain(|c| c.semantic_similarity.unwrap_or(0.0) >= min_similarity);
    Ok(found)
}

/// The cosine similarity of the probe to each of `ids` embedded by the same model (by
/// primary key: the candidates the other paths found).
pub async fn similarities(
    pool: &PgPool,
    ids: &[Uuid],
    probe: &Probe<'_>,
) -> Result<HashMap<Uuid, f64>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(Uuid, f64)> = sqlx::query_as(&format!(
        r#"
        SELECT id, (1 - (embedding::vector({d}) <=> $2::text::vector({d})))::float8
          FROM document
         WHERE id = ANY($1) AND vector_dims(embedding) = {d} AND embedding_model = $3
        "#,
        d = probe.dimensions
    ))
    .bind(ids)
    .bind(probe.vector)
    .bind(probe.model)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().collect())
}

/// Today's candidates ∪ the semantic neighbours: each candidate gets its similarity;
/// neighbours the other paths did not find are added (at most the neighbour limit).
pub fn merge(
    found: &mut Vec<Candidate>,
    similarities: &HashMap<Uuid, f64>,
    neighbours: Vec<Candidate>,
) {
    for c in found.iter_mut() {
        if let Some(s) = similarities.get(&c.id) {
            c.semantic_similarity = Some(*s);
        }
    }
    for n in neighbours {
        if let Some(existing) = found.iter_mut().find(|c| c.id == n.id) {
            existing.semantic_similarity = n.semantic_similarity;
        } else {
            found.push(n);
        }
    }
}
