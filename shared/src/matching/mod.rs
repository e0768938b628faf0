//! The matching pipeline (seeds 000/001): link invoices, purchase orders and delivery
//! notes of one tenant.
//!
//! [`match_document`] runs, for one claimed document:
//!
//! 1. [`normalize`]: counterparty (name, VAT id, IBAN), references and searchable text,
//!    persisted on the row *outside* the write transaction — the same input gives the
//!    same values, so a retry simply overwrites them;
//! 2. [`candidates`]: same tenant, matchable type pairs, shared references / VAT id /
//!    IBAN or trigram-similar names, bounded;
//! 3. [`score`]: a score in 0–1 with explicit evidence per candidate;
//! 4. [`decide`]: above the match threshold → match; ambiguous band → the LLM (or the
//!    score alone when no LLM is configured); below → nothing. LLM calls happen here,
//!    before any transaction is opened;
//! 5. [`write`]: one transaction — delete the document's edges, insert the new ones,
//!    recompute the clusters they touch. A failure rolls all of it back.
//!
//! Status bookkeeping (`matching_status`, attempts, errors) lives in [`status`].

pub mod candidates;
pub mod decide;
pub mod normalize;
pub mod score;
pub mod status;
pub mod write;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::llm::{LlmClient, LlmError};
pub use crate::retry::error_chain;
use crate::retry::{Classify, RetryClass};

pub use crate::document::{Confidence, DocumentType};

/// Who decided a match (`document_match.decided_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecidedBy {
    Score,
    Llm,
}

impl DecidedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Score => "score",
            DecidedBy::Llm => "llm",
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

/// Pipeline settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchingConfig {
    pub thresholds: Thresholds,
    /// At most this many candidates are scored per document.
    pub max_candidates: i64,
}

impl Default for MatchingConfig {
    fn default() -> Self {
        MatchingConfig {
            thresholds: Thresholds::default(),
            max_candidates: 50,
        }
    }
}

/// A document as matching reads it (returned by [`status::claim`]).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Document {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub doc_type: DocumentType,
    pub structured_data: Value,
    pub cluster_id: Option<Uuid>,
    pub matching_attempts: i32,
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
            MatchingError::OutOfTime { .. } => RetryClass::Transient,
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

/// Runs the pipeline for one document (already claimed, see [`status::claim`]).
///
/// Fails with a [`MatchingError`]: database errors classified by sqlx's error (connection
/// trouble transient, constraint violations permanent), LLM errors as the client
/// classified them after its in-process retries. When it fails, the write transaction
/// has not committed: the previous edges and clusters are intact.
#[tracing::instrument(skip_all, fields(document_id = %doc.id, doc_type = doc.doc_type.as_str()))]
pub async fn match_document(
    pool: &PgPool,
    llm: Option<&LlmClient>,
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

    let normalized = normalize::normalize(&doc.structured_data);
    status::save_normalized(pool, doc.id, &normalized)
        .await
        .map_err(db("persist the normalised fields"))?;

    let query = candidates::Query {
        tenant_id: doc.tenant_id,
        document_id: doc.id,
        doc_type: doc.doc_type,
        counterparty: normalized.counterparty.as_deref(),
        vat_id: normalized.vat_id.as_deref(),
        iban: normalized.iban.as_deref(),
        references: &normalized.references,
    };
    let found = candidates::find_candidates(pool, &query, config.max_candidates)
        .await
        .map_err(db("search for candidates"))?;

    let source_side = score::Side {
        vat_id: normalized.vat_id.as_deref(),
        iban: normalized.iban.as_deref(),
        references: &normalized.references,
        structured: &doc.structured_data,
    };
    let scored: Vec<decide::Scored> = found
        .iter()
        .map(|c| {
            let side = score::Side {
                vat_id: c.normalized_vat_id.as_deref(),
                iban: c.normalized_iban.as_deref(),
                references: &c.normalized_references,
                structured: &c.structured_data,
            };
            decide::Scored {
                id: c.id,
                doc_type: c.doc_type,
                structured_data: c.structured_data.clone(),
                score: score::score(&source_side, &side, c.name_similarity),
            }
        })
        .collect();
    for s in &scored {
        tracing::debug!(candidate = %s.id, score = s.score.score, "candidate scored");
    }

    let decisions = decide::decide(
        llm,
        &config.thresholds,
        doc.doc_type,
        &doc.structured_data,
        &scored,
    )
    .await
    .map_err(|source| MatchingError::Llm {
        document_id: doc.id,
        source,
    })?;

    let mut tx = pool
        .begin()
        .await
        .map_err(db("begin the write transaction"))?;
    let written = write::write_matches(&mut tx, doc.tenant_id, doc.id, &decisions)
        .await
        .map_err(db("write the matches"))?;
    tx.commit().await.map_err(db("commit the matches"))?;

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
