//! Candidate retrieval: the documents of the same tenant that a source document may be
//! linked to: [`find_candidates`]; the semantic (embedding) neighbours join them in
//! [`super::semantic`].
//!
//! Every path is one tenant-scoped index scan with a LIMIT, so the cost does not grow
//! with the tenant (the plans at 100,000 and at 1,000,000 documents are in
//! docs/matching.md):
//!
//! | path | index |
//! |---|---|
//! | the numbers the source cites, among the others' own numbers | `idx_document_tenant_own_keys` (GIN on `matching_tenant_keys(tenant, matching_own_keys)`) |
//! | the source's own and cited numbers, among what the others cite | `idx_document_tenant_cited_keys` |
//! | documents normalised before the typed keys (pooled keys) | `idx_document_tenant_references_legacy` (partial: only those) |
//! | same VAT id, nearest dates | `idx_document_vat_date` |
//! | same IBAN, nearest dates | `idx_document_iban_date` |
//! | similar name: the 5 nearest names of the tenant, then their nearest dates | `idx_matching_counterparty_trgm` (GiST KNN), `idx_document_counterparty_date` |
//! | documents already linked to the source | `document_match` keys |
//!
//! Keys are typed (`po:PO-12345`, [`super::normalize::SearchKeys`]) and own and cited
//! numbers are indexed apart, so a number part common among other
//! suppliers' own numbers (`12345` of `RE-12345`, `LS-12345`) does not fill the slots of
//! a document citing order `PO-12345`. Each path has its own quota ([`Quotas`]): its
//! nearest documents up to the quota are kept whatever the other paths found; the
//! slots left over go to references first, then by nearness in date.
//!
//! The already-linked documents are always returned, beyond the limit: the write phase
//! replaces only the edges of documents this run judged, so an edge it did not judge is
//! never dropped, and one it did is judged afresh.

use chrono::NaiveDate;
use sqlx::PgPool;
use uuid::Uuid;

use super::DocumentType;
use crate::extract::Extraction;

/// A document that may match the source, with its normalised fields and the pg_trgm
/// similarity of its counterparty name to the source's.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: Uuid,
    pub doc_type: DocumentType,
    /// Its extraction (`document.structured_data`).
    pub data: Extraction,
    /// The version of `structured_data` read (`document.data_version`): the write phase
    /// links nothing from data that changed since.
    pub data_version: i64,
    pub cluster_id: Option<Uuid>,
    pub normalized_counterparty: Option<String>,
    pub normalized_vat_id: Option<String>,
    pub normalized_iban: Option<String>,
    pub normalized_references: Vec<String>,
    pub name_similarity: f64,
    /// Already linked to the source (it has an edge with it).
    pub linked: bool,
    /// Cosine similarity (1 − distance) of the two embeddings, when both documents have
    /// one by the configured model ([`super::semantic`]).
    pub semantic_similarity: Option<f64>,
}

/// An invoice in a replacement with the source ([`replacements`]): the corrected invoice
/// and the invoice it replaces.
#[derive(Debug, Clone)]
pub struct Replacement {
    pub id: Uuid,
    /// The version of its data read: the write phase links nothing from data that
    /// changed since.
    pub data_version: i64,
    /// The replaced invoice of the pair (the source or this one).
    pub replaced: Uuid,
    /// The number of the replaced invoice, as the corrected one's BT-25 names it.
    pub invoice_number: String,
}

#[derive(Debug, sqlx::FromRow)]
struct ReplacementRow {
    id: Uuid,
    structured_data: serde_json::Value,
    data_version: i64,
    normalized_counterparty: Option<String>,
    normalized_vat_id: Option<String>,
}

/// The invoices of the tenant in a replacement with the source invoice, both ways
/// round: the one its `replaces_invoice` names (its own number among the others' own
/// `inv:` keys), and those whose `replaces_invoice` names the source's own number
/// (among the others' cited `rep:` keys), so the link is made whichever arrives first.
/// The number must be the whole number (no number-part forms), and the supplier the
/// same: equal VAT ids when both have one, else equal normalised names; a pair with
/// neither known is not linked. Two index scans (`idx_document_tenant_own_keys`,
/// `idx_document_tenant_cited_keys`), at most [`MAX_REPLACEMENTS`] rows.
pub async fn replacements(
    pool: &PgPool,
    tenant_id: Uuid,
    source_id: Uuid,
    source: &Extraction,
    counterparty: Option<&str>,
    vat_id: Option<&str>,
) -> Result<Vec<Replacement>, sqlx::Error> {
    use super::normalize::{REPLACES_TAG, replacement_keys};
    let replaced = replacement_keys(&source.replaces_invoice, "inv:");
    let replacing = replacement_keys(&source.invoice_number, REPLACES_TAG);
    if replaced.is_empty() && replacing.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<ReplacementRow> = sqlx::query_as(
        r#"
        SELECT d.id, d.structured_data, d.data_version,
               d.normalized_counterparty, d.normalized_vat_id
          FROM document d
         WHERE d.tenant_id = $1 AND d.id <> $2 AND d.type = 'invoice'
           AND d.structured_data IS NOT NULL
           AND (matching_tenant_keys(d.tenant_id, d.matching_own_keys)
                    && matching_tenant_keys($1, $3::text[])
                OR matching_tenant_keys(d.tenant_id, d.matching_cited_keys)
                    && matching_tenant_keys($1, $4::text[]))
         ORDER BY d.id
         LIMIT $5
        "#,
    )
    .bind(tenant_id)
    .bind(source_id)
    .bind(&replaced)
    .bind(&replacing)
    .bind(MAX_REPLACEMENTS)
    .fetch_all(pool)
    .await?;
    let same_number = |a: &Option<String>, b: &Option<String>| {
        let keys = |n: &Option<String>| replacement_keys(n, "");
        let (a, b) = (keys(a), keys(b));
        !a.is_empty() && a.iter().any(|k| b.contains(k))
    };
    Ok(rows
        .into_iter()
        .filter(|row| {
            let same_supplier = match (vat_id, row.normalized_vat_id.as_deref()) {
                (Some(a), Some(b)) => a == b,
                _ => matches!(
                    (counterparty, row.normalized_counterparty.as_deref()),
                    (Some(a), Some(b)) if a == b
                ),
            };
            if !same_supplier {
                tracing::info!(
                    document_id = %source_id,
                    other = %row.id,
                    "an invoice with the number a corrected invoice replaces is of another (or an unknown) supplier; not linked"
                );
            }
            same_supplier
        })
        .filter_map(|row| {
            let other = Extraction::from_stored(&row.structured_data).ok()?;
            if same_number(&source.replaces_invoice, &other.invoice_number) {
                Some(Replacement {
                    id: row.id,
                    data_version: row.data_version,
                    replaced: row.id,
                    invoice_number: other.invoice_number?,
                })
            } else if same_number(&other.replaces_invoice, &source.invoice_number) {
                Some(Replacement {
                    id: row.id,
                    data_version: row.data_version,
                    replaced: source_id,
                    invoice_number: source.invoice_number.clone()?,
                })
            } else {
                None
            }
        })
        .collect())
}

/// At most this many invoices in a replacement with one invoice: a chain of corrections
/// of one invoice is short; more is a number reused, not a chain.
pub const MAX_REPLACEMENTS: i64 = 10;

/// A candidate as the queries return it ([`CANDIDATES`], [`super::semantic`]):
/// `structured_data` still JSON, read by [`readable`].
#[derive(Debug, sqlx::FromRow)]
pub(super) struct CandidateRow {
    id: Uuid,
    doc_type: DocumentType,
    structured_data: serde_json::Value,
    data_version: i64,
    cluster_id: Option<Uuid>,
    normalized_counterparty: Option<String>,
    normalized_vat_id: Option<String>,
    normalized_iban: Option<String>,
    normalized_references: Vec<String>,
    name_similarity: f64,
    linked: bool,
    semantic_similarity: Option<f64>,
}

/// The rows whose data reads as an [`Extraction`]. A row that does not is left out with
/// a warning naming it and the reason: it cannot be compared, and its own matching
/// fails visibly on the same reason.
pub(super) fn readable(rows: Vec<CandidateRow>) -> Vec<Candidate> {
    rows.into_iter()
        .filter_map(|row| match Extraction::from_stored(&row.structured_data) {
            Ok(data) => Some(Candidate {
                id: row.id,
                doc_type: row.doc_type,
                data,
                data_version: row.data_version,
                cluster_id: row.cluster_id,
                normalized_counterparty: row.normalized_counterparty,
                normalized_vat_id: row.normalized_vat_id,
                normalized_iban: row.normalized_iban,
                normalized_references: row.normalized_references,
                name_similarity: row.name_similarity,
                linked: row.linked,
                semantic_similarity: row.semantic_similarity,
            }),
            Err(error) => {
                tracing::warn!(
                    candidate = %row.id,
                    error.message = %error,
                    "a candidate's extracted data cannot be read; it is not compared"
                );
                None
            }
        })
        .collect()
}

/// How many of a tenant's documents must carry a VAT id before it counts as a company
/// behind a name ([`names_with_several_vat_ids`]).
pub const VAT_ID_MIN_DOCUMENTS: i32 = 2;

/// What the search runs on: the source document and its normalised fields.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub tenant_id: Uuid,
    pub document_id: Uuid,
    pub doc_type: DocumentType,
    pub counterparty: Option<&'a str>,
    pub vat_id: Option<&'a str>,
    pub iban: Option<&'a str>,
    /// The source's pooled search keys ([`super::normalize::References::search_keys`]):
    /// looked up among documents normalised before the typed keys.
    pub references: &'a [String],
    /// Looked up in the others' own keys ([`super::normalize::SearchKeys::own_probe`]).
    pub own_probe: &'a [String],
    /// Looked up in the others' cited keys
    /// ([`super::normalize::SearchKeys::cited_probe`]).
    pub cited_probe: &'a [String],
    /// The source's date ([`super::normalize::Normalized::date`]), else today.
    pub date: NaiveDate,
}

/// The trigram similarity below which a name is not a candidate's (pg_trgm's default).
pub const NAME_SIMILARITY_FLOOR: f64 = 0.3;
/// How many distinct similar counterparty names the name path follows.
const NAMES: i64 = 5;

/// The slots each path keeps for its nearest documents, whatever the others found;
/// the rest of the limit goes to references first, then by date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// The numbers the source cites, among the others' own numbers.
    pub cites: i64,
    /// The source's numbers among what the others cite (and pooled legacy keys).
    pub cited: i64,
    /// Same VAT id or IBAN.
    pub supplier: i64,
    /// Similar names.
    pub name: i64,
}

impl Quotas {
    /// Of `limit` (`MATCH_MAX_CANDIDATES`, 50): a fifth each (10) for the source's
    /// citations, for the others' citations, for the VAT id and IBAN and for names; the
    /// last fifth to the best of any path (references first, then by date). The semantic
    /// path has its own, `MATCH_SEMANTIC_CANDIDATES` (10), beyond the limit.
    pub fn of(limit: i64) -> Quotas {
        let fifth = (limit / 5).max(1);
        Quotas {
            cites: fifth,
            cited: fifth,
            supplier: fifth,
            name: fifth,
        }
    }
}

/// Documents of the same tenant and of a type that pairs with the source's (see
/// [`DocumentType::matchable_with`]) that share a reference key, the VAT id, the IBAN or a
/// similar counterparty name, with structured data; at most `limit` of them, those
/// sharing a reference first, then by nearness in date; plus every document already
/// linked to the source.
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
    let quotas = Quotas::of(limit);
    let rows = sqlx::query_as::<_, CandidateRow>(CANDIDATES)
        .bind(query.tenant_id)
        .bind(query.document_id)
        .bind(&types)
        .bind(query.counterparty)
        .bind(query.references)
        .bind(query.vat_id)
        .bind(query.iban)
        .bind(query.date)
        .bind(limit)
        .bind(NAME_SIMILARITY_FLOOR)
        .bind(NAMES)
        .bind(query.own_probe)
        .bind(query.cited_probe)
        .bind(quotas.cites)
        .bind(quotas.cited)
        .bind(quotas.supplier)
        .bind(quotas.name)
        .fetch_all(pool)
        .await?;
    Ok(readable(rows))
}

/// The candidate query ($1 tenant, $2 source id, $3 types, $4 name, $5 pooled reference
/// keys, $6 VAT id, $7 IBAN, $8 date, $9 limit, $10 name similarity floor, $11 names,
/// $12 own-key probe, $13 cited-key probe, $14–$17 the quotas: citations, cited,
/// supplier, name). Public so a test can `EXPLAIN` it.
pub const CANDIDATES: &str = r#"
WITH by_reference AS (
    -- The numbers the source cites, among the others' own numbers. A hit on a whole key
    -- with its letters (`dn:LS-12345`) ranks before a hit on a number part only
    -- (`dn:12345`, which other suppliers' numbers share): a century of distance.
    (SELECT d.id, 0 AS path, 0 AS quota,
            abs(d.document_date - $8::date)
              + CASE WHEN matching_tenant_keys(d.tenant_id, d.matching_own_keys)
                          && matching_tenant_keys($1, ARRAY(SELECT k FROM unnest($12::text[]) k
                                                             WHERE k ~ ':.*[A-Z]'))
                     THEN 0 ELSE 36500 END AS distance
       FROM document d
      WHERE d.tenant_id = $1
        AND matching_tenant_keys(d.tenant_id, d.matching_own_keys)
            && matching_tenant_keys($1, $12::text[])
        AND d.id <> $2
        AND d.type = ANY($3::text[]::document_type[])
      ORDER BY distance, d.id
      LIMIT $9)
    UNION ALL
    -- The source's own (and cited) numbers, among what the others cite (whole keys
    -- first, as above).
    (SELECT d.id, 0, 1,
            abs(d.document_date - $8::date)
              + CASE WHEN matching_tenant_keys(d.tenant_id, d.matching_cited_keys)
                          && matching_tenant_keys($1, ARRAY(SELECT k FROM unnest($13::text[]) k
                                                             WHERE k ~ ':.*[A-Z]'))
                     THEN 0 ELSE 36500 END AS distance
       FROM document d
      WHERE d.tenant_id = $1
        AND matching_tenant_keys(d.tenant_id, d.matching_cited_keys)
            && matching_tenant_keys($1, $13::text[])
        AND d.id <> $2
        AND d.type = ANY($3::text[]::document_type[])
      ORDER BY distance, d.id
      LIMIT $9)
    UNION ALL
    -- Documents normalised before the typed keys: their pooled keys.
    (SELECT d.id, 0, 1, abs(d.document_date - $8::date) AS distance
       FROM document d
      WHERE d.tenant_id = $1
        AND d.matching_own_keys IS NULL AND cardinality(d.normalized_references) > 0
        AND matching_tenant_keys(d.tenant_id, d.normalized_references)
            && matching_tenant_keys($1, $5::text[])
        AND d.id <> $2
        AND d.type = ANY($3::text[]::document_type[])
      ORDER BY distance, d.id
      LIMIT $9)
), by_vat AS (
    (SELECT d.id, 1 AS path, 2 AS quota, d.document_date - $8::date AS distance
       FROM document d
      WHERE d.tenant_id = $1 AND d.normalized_vat_id = $6 AND d.document_date >= $8::date
        AND d.id <> $2 AND d.type = ANY($3::text[]::document_type[])
      ORDER BY d.document_date
      LIMIT $9)
    UNION ALL
    (SELECT d.id, 1, 2, $8::date - d.document_date
       FROM document d
      WHERE d.tenant_id = $1 AND d.normalized_vat_id = $6 AND d.document_date < $8::date
        AND d.id <> $2 AND d.type = ANY($3::text[]::document_type[])
      ORDER BY d.document_date DESC
      LIMIT $9)
), by_iban AS (
    (SELECT d.id, 1 AS path, 2 AS quota, d.document_date - $8::date AS distance
       FROM document d
      WHERE d.tenant_id = $1 AND d.normalized_iban = $7 AND d.document_date >= $8::date
        AND d.id <> $2 AND d.type = ANY($3::text[]::document_type[])
      ORDER BY d.document_date
      LIMIT $9)
    UNION ALL
    (SELECT d.id, 1, 2, $8::date - d.document_date
       FROM document d
      WHERE d.tenant_id = $1 AND d.normalized_iban = $7 AND d.document_date < $8::date
        AND d.id <> $2 AND d.type = ANY($3::text[]::document_type[])
      ORDER BY d.document_date DESC
      LIMIT $9)
), names AS (
    SELECT nearest.name
      FROM (SELECT n.name
              FROM matching_counterparty n
             WHERE n.tenant_id = $1
             ORDER BY n.name <-> $4
             LIMIT $11) nearest
     WHERE similarity(nearest.name, $4) >= $10
), by_name AS (
    SELECT x.id, 1 AS path, 3 AS quota, x.distance
      FROM names n
      CROSS JOIN LATERAL (
          (SELECT d.id, d.document_date - $8::date AS distance
             FROM document d
            WHERE d.tenant_id = $1 AND d.normalized_counterparty = n.name
              AND d.document_date >= $8::date
              AND d.id <> $2 AND d.type = ANY($3::text[]::document_type[])
            ORDER BY d.document_date
            LIMIT $9)
          UNION ALL
          (SELECT d.id, $8::date - d.document_date
             FROM document d
            WHERE d.tenant_id = $1 AND d.normalized_counterparty = n.name
              AND d.document_date < $8::date
              AND d.id <> $2 AND d.type = ANY($3::text[]::document_type[])
            ORDER BY d.document_date DESC
            LIMIT $9)
      ) x
), ranked AS (
    -- Each path's (quota's) documents numbered by nearness: the first of each, up to its
    -- quota, are kept whatever the other paths found.
    SELECT id, path, distance,
           row_number() OVER (PARTITION BY quota ORDER BY distance, id)
               <= CASE quota WHEN 0 THEN $14::bigint WHEN 1 THEN $15::bigint
                             WHEN 2 THEN $16::bigint ELSE $17::bigint END
               AS reserved
      FROM (SELECT id, quota, min(path) AS path, min(distance) AS distance
              FROM (SELECT * FROM by_reference
                    UNION ALL SELECT * FROM by_vat
                    UNION ALL SELECT * FROM by_iban
                    UNION ALL SELECT * FROM by_name) f
             GROUP BY id, quota) g
), found AS (
    SELECT id
      FROM ranked
     GROUP BY id
     ORDER BY bool_or(reserved) DESC, min(path), min(distance), id
     LIMIT $9
), linked AS (
    -- Bounded like the search: a document linked to hundreds (a framework order's
    -- invoices) re-judges its newest links; the others are not judged, so they stay.
    SELECT id
      FROM (SELECT document_b_id AS id, created_at FROM document_match WHERE document_a_id = $2
            UNION ALL
            SELECT document_a_id, created_at FROM document_match WHERE document_b_id = $2) l
     GROUP BY id
     ORDER BY max(created_at) DESC, id
     LIMIT $9
), picked AS (
    -- A join on the union, not `id IN found OR id IN linked`: the OR would scan the
    -- whole table.
    SELECT id, bool_or(linked) AS linked
      FROM (SELECT id, false AS linked FROM found
            UNION ALL
            SELECT id, true FROM linked) p
     GROUP BY id
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
       p.linked,
       NULL::float8 AS semantic_similarity
  FROM picked p
  JOIN document d ON d.id = p.id
 WHERE d.structured_data IS NOT NULL
 ORDER BY d.id
"#;

/// Of `names` (normalised counterparty names), those behind which two or more different
/// VAT ids stand, each carried by at least [`VAT_ID_MIN_DOCUMENTS`] of the tenant's
/// documents: look-alike suppliers ("Müller GmbH" and "Mueller GmbH" of two companies),
/// whose name alone tells nothing. One document's misread VAT id does
/// not make a name ambiguous. Read from `counterparty_vat_id`, which triggers keep.
pub async fn names_with_several_vat_ids(
    pool: &PgPool,
    tenant_id: Uuid,
    names: &[String],
) -> Result<std::collections::HashSet<String>, sqlx::Error> {
    if names.is_empty() {
        return Ok(Default::default());
    }
    let ambiguous: Vec<String> = sqlx::query_scalar(
        r#"
        SELECT normalized_name
          FROM counterparty_vat_id
         WHERE tenant_id = $1
           AND normalized_name = ANY($2)
           AND documents >= $3
         GROUP BY normalized_name
        HAVING count(*) >= 2
        "#,
    )
    .bind(tenant_id)
    .bind(names)
    .bind(VAT_ID_MIN_DOCUMENTS)
    .fetch_all(pool)
    .await?;
    Ok(ambiguous.into_iter().collect())
}
