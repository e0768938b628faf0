//! The matching pipeline (seeds 000/001): link invoices, purchase orders and delivery
//! notes of one tenant.
//!
//! [`match_document`] runs, for one claimed document:
//!
//! 1. [`normalize`]: counterparty (name, VAT id, IBAN), references and searchable text,
//!    persisted on the row *outside* the write transaction — the same input gives the
//!    same values, so a retry simply overwrites them;
//! 2. [`candidates`]: same tenant, matchable type pairs, shared references / VAT id /
//!    IBAN or trigram-similar names, each path index-bounded, plus the documents already
//!    linked to it;
//! 3. [`score`]: a score in 0–1 with explicit evidence per candidate;
//! 4. [`decide`]: above the match threshold → match; ambiguous band → the LLM (or the
//!    score alone when no LLM is configured); below → nothing. LLM calls happen here,
//!    before any transaction is opened;
//! 5. [`write`]: one transaction — replace the edges to the candidates this run judged,
//!    recompute the clusters they touch, mark the document `succeeded`. A failure rolls
//!    all of it back.
//!
//! Status bookkeeping (`matching_status`, attempts, errors) lives in [`status`]. The
//! labelled evaluation set and its metrics are development tooling, in `docflow-dev`.

pub mod candidates;
pub mod decide;
pub mod normalize;
pub mod prompt;
pub mod score;
pub mod semantic;
pub mod status;
pub mod write;

use crate::extract::Extraction;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

use crate::embeddings::EmbeddingClient;
use crate::llm::{LlmClient, LlmError};
pub use crate::retry::error_chain;
use crate::retry::{Classify, RetryClass};
use crate::settings::{Env, SettingsError};
use crate::telemetry::metrics;

pub use crate::document::{Confidence, DocumentType};

/// How often one run tries its write transaction when Postgres picks it as a deadlock's
/// victim (see [`match_document_with`]).
const WRITE_ATTEMPTS: u32 = 3;

/// Whether the transaction was rolled back to break a deadlock (40P01).
fn is_deadlock(e: &sqlx::Error) -> bool {
    e.as_database_error().and_then(|d| d.code()).as_deref() == Some("40P01")
}

/// Who decided a match (`document_match.decided_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecidedBy {
    Score,
    Llm,
    /// A rule, not a score: a corrected invoice and the invoice it replaces
    /// ([`candidates::replacements`]).
    Rule,
}

impl DecidedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Score => "score",
            DecidedBy::Llm => "llm",
            DecidedBy::Rule => "rule",
        }
    }
}

/// Score bands. `matched` and above: a match decided by the score. From `ambiguous` to
/// `matched`: the LLM decides, or without an LLM the score against `score_only`. Below
/// `ambiguous`: no match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub matched: f64,
    pub ambiguous: f64,
    pub score_only: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            matched: 0.75,
            ambiguous: 0.5,
            score_only: 0.6,
        }
    }
}

/// Pipeline settings (`MATCH_*` variables; the defaults are the values docs/matching.md
/// states).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchingConfig {
    pub thresholds: Thresholds,
    pub weights: score::Weights,
    /// At most this many candidates are scored per document (plus the documents already
    /// linked to it).
    pub max_candidates: i64,
    /// With embeddings: at most this many nearest neighbours join the candidates.
    pub semantic_candidates: i64,
    /// How long a delivery's claim on a document is live ([`status::claim`]).
    pub claim_lease: std::time::Duration,
}

impl Default for MatchingConfig {
    fn default() -> Self {
        MatchingConfig {
            thresholds: Thresholds::default(),
            weights: score::Weights::default(),
            max_candidates: 50,
            semantic_candidates: 10,
            claim_lease: status::DEFAULT_CLAIM_LEASE,
        }
    }
}

impl MatchingConfig {
    /// Reads `MATCH_THRESHOLD`, `MATCH_AMBIGUOUS_THRESHOLD`, `MATCH_SCORE_ONLY_THRESHOLD`,
    /// `MATCH_MAX_CANDIDATES`, the `MATCH_WEIGHT_*` / `MATCH_PENALTY_*` weights and
    /// `MATCHING_CLAIM_LEASE_SECONDS`, each defaulting to [`MatchingConfig::default`].
    /// Fails, naming the variable, when a value is not a number, a threshold is outside
    /// 0–1 or out of order (ambiguous ≤ score-only ≤ matched), a weight is negative, a
    /// penalty positive, the limit or the lease below 1.
    ///
    /// The lease is production's 150 s unless set: only the local soak, whose invocations
    /// time out after 30 s, shortens it (with the rest of its clock; docs/soak.md).
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        let d = MatchingConfig::default();
        let invalid = |var: &'static str, reason: &str| SettingsError::Invalid {
            var,
            reason: reason.to_owned(),
        };
        let threshold = |var: &'static str, default: f64| -> Result<f64, SettingsError> {
            let v: f64 = env.parse_or(var, default)?;
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(invalid(var, "must be between 0 and 1"))
            }
        };
        let weight = |var: &'static str, default: f64| -> Result<f64, SettingsError> {
            let v: f64 = env.parse_or(var, default)?;
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(invalid(var, "must be a number ≥ 0"))
            }
        };
        let penalty = |var: &'static str, default: f64| -> Result<f64, SettingsError> {
            let v: f64 = env.parse_or(var, default)?;
            if v.is_finite() && v <= 0.0 {
                Ok(v)
            } else {
                Err(invalid(var, "must be a number ≤ 0 (it is subtracted)"))
            }
        };
        let thresholds = Thresholds {
            matched: threshold("MATCH_THRESHOLD", d.thresholds.matched)?,
            ambiguous: threshold("MATCH_AMBIGUOUS_THRESHOLD", d.thresholds.ambiguous)?,
            score_only: threshold("MATCH_SCORE_ONLY_THRESHOLD", d.thresholds.score_only)?,
        };
        if !(thresholds.ambiguous <= thresholds.score_only
            && thresholds.score_only <= thresholds.matched)
        {
            return Err(invalid(
                "MATCH_SCORE_ONLY_THRESHOLD",
                "thresholds must keep MATCH_AMBIGUOUS_THRESHOLD ≤ MATCH_SCORE_ONLY_THRESHOLD ≤ MATCH_THRESHOLD",
            ));
        }
        let w = d.weights;
        let weights = score::Weights {
            reference: weight("MATCH_WEIGHT_REFERENCE", w.reference)?,
            near_reference: weight("MATCH_WEIGHT_NEAR_REFERENCE", w.near_reference)?,
            shared_reference: weight("MATCH_WEIGHT_SHARED_REFERENCE", w.shared_reference)?,
            reference_conflict: penalty("MATCH_PENALTY_REFERENCE_CONFLICT", w.reference_conflict)?,
            vat_id: weight("MATCH_WEIGHT_VAT_ID", w.vat_id)?,
            vat_id_mismatch: penalty("MATCH_PENALTY_VAT_ID_MISMATCH", w.vat_id_mismatch)?,
            iban: weight("MATCH_WEIGHT_IBAN", w.iban)?,
            amount: weight("MATCH_WEIGHT_AMOUNT", w.amount)?,
            lines: weight("MATCH_WEIGHT_LINES", w.lines)?,
            lines_conflict: penalty("MATCH_PENALTY_LINES_CONFLICT", w.lines_conflict)?,
            date_close: weight("MATCH_WEIGHT_DATE_CLOSE", w.date_close)?,
            date_near: weight("MATCH_WEIGHT_DATE_NEAR", w.date_near)?,
            date_order: penalty("MATCH_PENALTY_DATE_ORDER", w.date_order)?,
            name: weight("MATCH_WEIGHT_NAME", w.name)?,
            name_alone: weight("MATCH_WEIGHT_NAME_ALONE", w.name_alone)?,
            semantic: weight("MATCH_WEIGHT_SEMANTIC", w.semantic)?,
            semantic_floor: threshold("MATCH_SEMANTIC_MIN_SIMILARITY", w.semantic_floor)?,
            name_mismatch: penalty("MATCH_PENALTY_NAME_MISMATCH", w.name_mismatch)?,
        };
        let max_candidates: i64 = env.parse_or("MATCH_MAX_CANDIDATES", d.max_candidates)?;
        if max_candidates < 1 {
            return Err(invalid("MATCH_MAX_CANDIDATES", "must be at least 1"));
        }
        let semantic_candidates: i64 =
            env.parse_or("MATCH_SEMANTIC_CANDIDATES", d.semantic_candidates)?;
        if semantic_candidates < 0 {
            return Err(invalid("MATCH_SEMANTIC_CANDIDATES", "must be at least 0"));
        }
        let lease: u64 = env.parse_or("MATCHING_CLAIM_LEASE_SECONDS", d.claim_lease.as_secs())?;
        if lease < 1 {
            return Err(invalid(
                "MATCHING_CLAIM_LEASE_SECONDS",
                "must be at least 1",
            ));
        }
        Ok(MatchingConfig {
            thresholds,
            weights,
            max_candidates,
            semantic_candidates,
            claim_lease: std::time::Duration::from_secs(lease),
        })
    }
}

/// A document as matching reads it (returned by [`status::claim`]).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Document {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub doc_type: DocumentType,
    /// Its extraction (`document.structured_data`).
    pub data: Extraction,
    pub cluster_id: Option<Uuid>,
    pub matching_attempts: i32,
    /// The version of `structured_data` the claim read (`document.data_version`).
    pub data_version: i64,
}

/// A failed step of the pipeline, classified for the retry decision.
#[derive(Debug, thiserror::Error)]
pub enum MatchingError {
    #[error("could not {step} for document {document_id}")]
    Database {
        step: &'static str,
        document_id: Uuid,
        #[source]
        source: sqlx::Error,
    },
    #[error("the LLM could not decide the ambiguous candidates of document {document_id}")]
    Llm {
        document_id: Uuid,
        #[source]
        source: LlmError,
    },
    /// The document's `type` is an enum label this version does not know (added to the
    /// database after it was built): permanent, no retry makes it known.
    #[error(
        "document {document_id} has type {label:?}, which this version of docflow does not know how to match"
    )]
    UnknownType { document_id: Uuid, label: String },
    /// The document's `structured_data` is not an extraction this version reads:
    /// permanent until the document is extracted again.
    #[error("document {document_id} cannot be matched: {source}")]
    UnreadableData {
        document_id: Uuid,
        #[source]
        source: crate::extract::UnreadableData,
    },
    #[error("could not embed document {document_id} for the semantic search")]
    Embedding {
        document_id: Uuid,
        #[source]
        source: semantic::EmbedError,
    },
    /// While the run decided, the document was re-extracted (its data version changed,
    /// `pending` again) or a newer delivery claimed it: nothing of this run was written
    /// (its transaction rolled back) and its message is discarded — the newer message
    /// or delivery matches the current data. Never recorded as a failure.
    #[error(
        "document {document_id} was re-extracted or claimed by a newer delivery while this run matched it; its result is discarded"
    )]
    Superseded { document_id: Uuid },
    /// The invocation's time ran out mid-run (a slow LLM, a long lock wait): transient,
    /// the next delivery starts over.
    #[error("matching document {document_id} did not finish in the invocation's time")]
    OutOfTime {
        document_id: Uuid,
        #[source]
        source: crate::sqs::OutOfTime,
    },
}

impl Classify for MatchingError {
    fn retry_class(&self) -> RetryClass {
        match self {
            MatchingError::Database { source, .. } => source.retry_class(),
            MatchingError::Llm { source, .. } => source.retry_class(),
            MatchingError::UnknownType { .. } | MatchingError::UnreadableData { .. } => {
                RetryClass::Permanent
            }
            MatchingError::Embedding { source, .. } => match source {
                semantic::EmbedError::Embedding(e) => e.retry_class(),
                semantic::EmbedError::Database(e) => e.retry_class(),
            },
            MatchingError::OutOfTime { .. } => RetryClass::Transient,
            // Handled before any retry decision (the message is discarded); were it
            // classified, retrying could not make this run current again.
            MatchingError::Superseded { .. } => RetryClass::Permanent,
        }
    }
}

/// What one matching run found and wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchReport {
    pub candidates: usize,
    pub decisions: Vec<decide::Decision>,
    pub written: write::Written,
}

/// Runs the pipeline for one document (already claimed, see [`status::claim`]) and marks
/// it `succeeded` in the same transaction as its edges.
///
/// Fails with a [`MatchingError`]: database errors classified by sqlx's error (connection
/// trouble transient, constraint violations permanent), LLM errors as the client
/// classified them after its in-process retries. When it fails, the write transaction
/// has not committed: the previous edges and clusters are intact and the document is
/// still `in-progress`.
pub async fn match_document(
    pool: &PgPool,
    llm: Option<&LlmClient>,
    config: &MatchingConfig,
    doc: &Document,
) -> Result<MatchReport, MatchingError> {
    match_document_with(pool, llm, None, config, doc).await
}

/// [`match_document`] with an embeddings client: the pre-processing stores the
/// embedding of the searchable text (outside the write transaction; an embeddings
/// failure fails the run, classified like an LLM failure), and the nearest neighbours
/// by cosine distance join the candidates, each candidate's similarity recorded as
/// evidence.
#[tracing::instrument(skip_all, fields(document_id = %doc.id, doc_type = doc.doc_type.as_str()))]
pub async fn match_document_with(
    pool: &PgPool,
    llm: Option<&LlmClient>,
    embeddings: Option<&EmbeddingClient>,
    config: &MatchingConfig,
    doc: &Document,
) -> Result<MatchReport, MatchingError> {
    let db = |step: &'static str| {
        move |source| MatchingError::Database {
            step,
            document_id: doc.id,
            source,
        }
    };

    use metrics::stages;
    let owner = doc.owner();
    let superseded = || {
        tracing::info!(
            document_id = %doc.id,
            attempt = owner.attempt,
            data_version = owner.data_version,
            "the document was re-extracted or claimed by a newer delivery; this run's result is discarded"
        );
        MatchingError::Superseded {
            document_id: doc.id,
        }
    };
    let normalized = normalize::normalize(&doc.data, doc.doc_type);
    let saved = metrics::stage(
        stages::NORMALIZE,
        status::save_normalized(pool, &owner, &normalized),
    )
    .await
    .map_err(db("persist the normalised fields"))?;
    if saved.is_lost() {
        return Err(superseded());
    }

    let own_probe = normalized.search_keys.own_probe();
    let cited_probe = normalized.search_keys.cited_probe();
    let query = candidates::Query {
        tenant_id: doc.tenant_id,
        document_id: doc.id,
        doc_type: doc.doc_type,
        counterparty: normalized.counterparty.as_deref(),
        vat_id: normalized.vat_id.as_deref(),
        iban: normalized.iban.as_deref(),
        references: &normalized.reference_keys,
        own_probe: &own_probe,
        cited_probe: &cited_probe,
        date: normalized
            .date
            .unwrap_or_else(|| chrono::Utc::now().date_naive()),
    };
    let candidates_started = std::time::Instant::now();
    let mut found = candidates::find_candidates(pool, &query, config.max_candidates)
        .await
        .map_err(db("search for candidates"))?;
    metrics::count(metrics::matching::CANDIDATES_CONSIDERED, found.len() as u64);

    if let Some(client) = embeddings {
        let vector = match semantic::ensure_embedding(
            pool,
            client,
            doc.id,
            &normalized.searchable_text,
        )
        .await
        {
            Ok(vector) => vector,
            // The text is too long for the embeddings model even cut to its budget (a
            // small local model): no retry changes that. The document is matched without
            // the semantic search, as without embeddings, rather than failed; its
            // candidates keep their own embeddings.
            Err(semantic::EmbedError::Embedding(
                too_long @ crate::embeddings::EmbeddingError::TooLong { .. },
            )) => {
                tracing::warn!(
                    error = %error_chain(&too_long),
                    text_chars = normalized.searchable_text.chars().count(),
                    "the document's text is too long for the embeddings model; matched without the semantic search"
                );
                None
            }
            Err(source) => {
                return Err(MatchingError::Embedding {
                    document_id: doc.id,
                    source,
                });
            }
        };
        if let Some(vector) = vector.as_deref() {
            let probe = semantic::Probe {
                vector,
                model: client.model(),
                dimensions: client.dimensions(),
            };
            let ids: Vec<Uuid> = found.iter().map(|c| c.id).collect();
            let similarities = semantic::similarities(pool, &ids, &probe)
                .await
                .map_err(db("compare the embeddings of the candidates"))?;
            let neighbours = semantic::nearest(
                pool,
                &query,
                &probe,
                config.semantic_candidates,
                config.weights.semantic_floor,
            )
            .await
            .map_err(db("search for the nearest embeddings"))?;
            semantic::merge(&mut found, &similarities, neighbours);
        }
    }
    metrics::stage_time(stages::CANDIDATES, candidates_started.elapsed());

    // Names that two or more VAT ids carry in this tenant: the name alone is no evidence.
    let mut names: Vec<String> = found
        .iter()
        .filter_map(|c| c.normalized_counterparty.clone())
        .chain(normalized.counterparty.clone())
        .collect();
    names.sort();
    names.dedup();
    let ambiguous_names = candidates::names_with_several_vat_ids(pool, doc.tenant_id, &names)
        .await
        .map_err(db("look up look-alike supplier names"))?;
    let ambiguous_name = |name: Option<&str>| name.is_some_and(|n| ambiguous_names.contains(n));

    let source_side = score::Side {
        doc_type: doc.doc_type,
        vat_id: normalized.vat_id.as_deref(),
        iban: normalized.iban.as_deref(),
        references: &normalized.references,
        data: &doc.data,
    };
    let scored: Vec<decide::Scored> = found
        .iter()
        .map(|c| {
            let references = normalize::References::read(&c.data, c.doc_type);
            let side = score::Side {
                doc_type: c.doc_type,
                vat_id: c.normalized_vat_id.as_deref(),
                iban: c.normalized_iban.as_deref(),
                references: &references,
                data: &c.data,
            };
            let mut score = score::score(&config.weights, &source_side, &side, c.name_similarity);
            if ambiguous_name(normalized.counterparty.as_deref())
                || ambiguous_name(c.normalized_counterparty.as_deref())
            {
                score::discount_ambiguous_name(&mut score);
            }
            if let Some(similarity) = c.semantic_similarity {
                let dissimilar_names = normalized.counterparty.is_some()
                    && c.normalized_counterparty.is_some()
                    && c.name_similarity < candidates::NAME_SIMILARITY_FLOOR;
                score::add_semantic(&config.weights, &mut score, similarity, dissimilar_names);
            }
            decide::Scored {
                id: c.id,
                doc_type: c.doc_type,
                data: c.data.clone(),
                score,
            }
        })
        .collect();
    for s in &scored {
        tracing::debug!(candidate = %s.id, score = s.score.score, "candidate scored");
    }

    let decisions = metrics::stage(
        stages::DECIDE,
        decide::decide(llm, &config.thresholds, doc.doc_type, &doc.data, &scored),
    )
    .await
    .map_err(|source| MatchingError::Llm {
        document_id: doc.id,
        source,
    })?;

    let mut judged: Vec<(Uuid, i64)> = found.iter().map(|c| (c.id, c.data_version)).collect();
    // A linked document is a candidate whatever its type (the write phase judges its
    // edge afresh); only the types that pair up are linked by a score or the LLM: an
    // invoice linked to an invoice by the rule below loses that link once the rule no
    // longer holds (the correction re-extracted without what it replaces).
    let mut decisions: Vec<decide::Decision> = decisions
        .into_iter()
        .filter(|d| doc.doc_type.matchable_with().contains(&d.candidate_type))
        .collect();
    // A corrected invoice and the invoice it replaces: linked by rule, not scored.
    if doc.doc_type == DocumentType::Invoice {
        let pairs = candidates::replacements(
            pool,
            doc.tenant_id,
            doc.id,
            &doc.data,
            normalized.counterparty.as_deref(),
            normalized.vat_id.as_deref(),
        )
        .await
        .map_err(db("look up the invoices a corrected invoice replaces"))?;
        for pair in pairs {
            if !judged.iter().any(|(id, _)| *id == pair.id) {
                judged.push((pair.id, pair.data_version));
            }
            decisions.push(decide::replacement(&pair));
        }
    }
    let write_started = std::time::Instant::now();
    // A deadlock's victim (40P01: two write phases whose clusters merged while they
    // waited, see write/mod.rs *Locking*) is rolled back whole and runs again at once, up to
    // WRITE_ATTEMPTS times; any other error goes to the queue's retry.
    let mut attempt = 1;
    let written = loop {
        let mut tx = pool
            .begin()
            .await
            .map_err(db("begin the write transaction"))?;
        let result: Result<Option<write::Written>, MatchingError> = async {
            let Some(written) = write::write_matches(
                &mut tx,
                doc.tenant_id,
                &owner,
                doc.doc_type,
                &judged,
                &decisions,
            )
            .await
            .map_err(db("write the matches"))?
            else {
                return Ok(None);
            };
            if status::succeed(&mut tx, &owner)
                .await
                .map_err(db("mark the document succeeded"))?
                .is_lost()
            {
                return Ok(None);
            }
            Ok(Some(written))
        }
        .await;
        match result {
            // Stale: dropping the transaction rolls it back (and releases the locks).
            Ok(None) => return Err(superseded()),
            Ok(Some(written)) => {
                tx.commit().await.map_err(db("commit the matches"))?;
                break written;
            }
            Err(MatchingError::Database { source, .. })
                if attempt < WRITE_ATTEMPTS && is_deadlock(&source) =>
            {
                drop(tx);
                tracing::info!(
                    document_id = %doc.id,
                    attempt,
                    "the write phase lost a deadlock; writing again"
                );
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    };
    metrics::stage_time(stages::WRITE, write_started.elapsed());
    metrics::count(metrics::matching::CLUSTERS_MERGED, written.merged as u64);
    metrics::count(metrics::matching::CLUSTERS_SPLIT, written.split as u64);

    tracing::info!(
        candidates = found.len(),
        edges = written.edges,
        cluster_id = ?written.cluster_id,
        "matches written"
    );
    Ok(MatchReport {
        candidates: found.len(),
        decisions,
        written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::new(move |var| map.get(var).cloned())
    }

    #[test]
    fn without_variables_the_documented_defaults_apply() {
        let config = MatchingConfig::from_env(&env(&[])).unwrap();
        assert_eq!(config, MatchingConfig::default());
        assert_eq!(
            (
                config.thresholds.matched,
                config.thresholds.ambiguous,
                config.thresholds.score_only
            ),
            (0.75, 0.5, 0.6)
        );
        assert_eq!(config.max_candidates, 50);
        assert_eq!(config.weights.reference, 0.5);
        // Production's lease: longer than the function's 120 s timeout. Only the soak
        // shortens it, with the rest of its clock.
        assert_eq!(config.claim_lease, std::time::Duration::from_secs(150));
    }

    #[test]
    fn the_claim_lease_is_read_in_seconds_and_never_zero() {
        let config =
            MatchingConfig::from_env(&env(&[("MATCHING_CLAIM_LEASE_SECONDS", "35")])).unwrap();
        assert_eq!(config.claim_lease, std::time::Duration::from_secs(35));
        for value in ["0", "-5", "soon"] {
            let err = MatchingConfig::from_env(&env(&[("MATCHING_CLAIM_LEASE_SECONDS", value)]))
                .unwrap_err();
            assert!(
                err.to_string().contains("MATCHING_CLAIM_LEASE_SECONDS"),
                "{value}: {err}"
            );
        }
    }

    #[test]
    fn thresholds_weights_and_the_limit_are_read_from_the_environment() {
        let config = MatchingConfig::from_env(&env(&[
            ("MATCH_THRESHOLD", "0.8"),
            ("MATCH_SCORE_ONLY_THRESHOLD", "0.7"),
            ("MATCH_MAX_CANDIDATES", "20"),
            ("MATCH_WEIGHT_AMOUNT", "0.3"),
            ("MATCH_PENALTY_REFERENCE_CONFLICT", "-0.9"),
        ]))
        .unwrap();
        assert_eq!(config.thresholds.matched, 0.8);
        assert_eq!(config.thresholds.score_only, 0.7);
        assert_eq!(config.max_candidates, 20);
        assert_eq!(config.weights.amount, 0.3);
        assert_eq!(config.weights.reference_conflict, -0.9);
    }

    #[test]
    fn nonsense_settings_are_rejected_by_name() {
        for (var, value) in [
            ("MATCH_THRESHOLD", "1.5"),
            ("MATCH_SCORE_ONLY_THRESHOLD", "0.9"),
            ("MATCH_WEIGHT_NAME", "-0.1"),
            ("MATCH_PENALTY_VAT_ID_MISMATCH", "0.3"),
            ("MATCH_MAX_CANDIDATES", "0"),
            ("MATCH_WEIGHT_IBAN", "lots"),
        ] {
            let err = MatchingConfig::from_env(&env(&[(var, value)])).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("MATCH_"), "{var}={value}: {text}");
        }
    }
}
