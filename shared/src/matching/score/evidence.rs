//! What a score is made of: the [`Weights`] of each kind of evidence, the two [`Side`]s
//! compared, each piece of [`Evidence`] with what it contributed (stored as JSON on the
//! match edge), the [`Score`] that sums them, and a candidate with its score
//! ([`Scored`]).

use serde::Serialize;
use uuid::Uuid;

use super::super::DocumentType;
use super::super::normalize::References;
use crate::extract::Extraction;

/// The weight of each piece of evidence (penalties are negative).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// One side cites the other's own number.
    pub reference: f64,
    /// One side cites a number one slip (swap, dropped or doubled digit) away from the
    /// other's own: probably a typo of it.
    pub near_reference: f64,
    /// Both sides cite the same number.
    pub shared_reference: f64,
    /// Both sides name the purchase order / delivery note / invoice they belong to, and
    /// the names differ.
    pub reference_conflict: f64,
    pub vat_id: f64,
    pub vat_id_mismatch: f64,
    pub iban: f64,
    pub amount: f64,
    pub lines: f64,
    /// Invoice ↔ delivery note billing the same goods in other quantities.
    pub lines_conflict: f64,
    pub date_close: f64,
    pub date_near: f64,
    /// A delivery note or invoice dated before the order it would belong to, a credit
    /// note before its invoice (more than 3 days: dates are typed by hand).
    pub date_order: f64,
    /// Name similarity, when the VAT ids were compared too.
    pub name: f64,
    /// Name similarity, when one side has no VAT id: the name is all there is to tell
    /// the supplier by.
    pub name_alone: f64,
    /// Cosine similarity of the embeddings (when both have one), at or above
    /// [`Weights::semantic_floor`], when nothing else tells the supplier
    /// ([`add_semantic`](super::add_semantic)).
    pub semantic: f64,
    /// Below this similarity the embeddings say nothing (0 weight, still recorded).
    pub semantic_floor: f64,
    /// Both names known and dissimilar (trigram similarity below the candidate search's
    /// floor) while the embeddings stand in for the supplier
    /// ([`add_semantic`](super::add_semantic)): the same goods from another supplier look
    /// alike to an embedding, the name says they are not the same supplier.
    pub name_mismatch: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            reference: 0.50,
            near_reference: 0.0,
            shared_reference: 0.25,
            reference_conflict: -0.60,
            vat_id: 0.15,
            vat_id_mismatch: -0.30,
            iban: 0.05,
            amount: 0.20,
            lines: 0.20,
            lines_conflict: -0.20,
            date_close: 0.10,
            date_near: 0.05,
            date_order: -0.30,
            name: 0.15,
            name_alone: 0.30,
            semantic: 0.7,
            semantic_floor: 0.4,
            name_mismatch: -0.1,
        }
    }
}

/// Relative tolerance for totals to agree (rounding, cents), with 0.01 as the floor.
pub const AMOUNT_TOLERANCE: f64 = 0.005;

/// The side of a comparison: normalised fields and the extraction.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub doc_type: DocumentType,
    pub vat_id: Option<&'a str>,
    pub iban: Option<&'a str>,
    pub references: &'a References,
    pub data: &'a Extraction,
}

/// How a reference ties two documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// One cites the other's own number.
    Cites,
    /// Both cite the same number (an invoice and a delivery note naming one order).
    Shared,
    /// One cites a number one slip away from the other's own: probably a typo of it.
    /// Neither a tie nor a contradiction.
    Near,
}

/// One piece of evidence and what it contributed to the score (stored as JSON on the
/// match edge).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    Reference {
        relation: Relation,
        references: Vec<String>,
        specificity: f64,
        weight: f64,
    },
    ReferenceConflict {
        cited: Vec<String>,
        other: Vec<String>,
        weight: f64,
    },
    VatId {
        vat_id: String,
        weight: f64,
    },
    VatIdMismatch {
        source: String,
        candidate: String,
        weight: f64,
    },
    Iban {
        iban: String,
        weight: f64,
    },
    Amount {
        source: f64,
        candidate: f64,
        currency: Option<String>,
        weight: f64,
    },
    Lines {
        agree: bool,
        weight: f64,
    },
    Date {
        days_apart: i64,
        weight: f64,
    },
    DateOrder {
        days_before: i64,
        weight: f64,
    },
    NameSimilarity {
        similarity: f64,
        weight: f64,
    },
    /// Cosine similarity of the two documents' embeddings.
    SemanticSimilarity {
        similarity: f64,
        weight: f64,
    },
    /// Both names known and dissimilar while the embeddings stand in for the supplier.
    NameMismatch {
        similarity: f64,
        weight: f64,
    },
    /// A corrected invoice (BT-3 `384`) and the invoice it replaces: `replaced` is the
    /// replaced one, whose number (`invoice_number`) the corrected invoice's BT-25 names.
    /// Not scored: the rule links the pair ([`super::super::DecidedBy::Rule`]).
    Replaces {
        replaced: uuid::Uuid,
        invoice_number: String,
        weight: f64,
    },
}

impl Evidence {
    pub fn weight(&self) -> f64 {
        match self {
            Evidence::Reference { weight, .. }
            | Evidence::ReferenceConflict { weight, .. }
            | Evidence::VatId { weight, .. }
            | Evidence::VatIdMismatch { weight, .. }
            | Evidence::Iban { weight, .. }
            | Evidence::Amount { weight, .. }
            | Evidence::Lines { weight, .. }
            | Evidence::Date { weight, .. }
            | Evidence::DateOrder { weight, .. }
            | Evidence::NameSimilarity { weight, .. }
            | Evidence::SemanticSimilarity { weight, .. }
            | Evidence::NameMismatch { weight, .. }
            | Evidence::Replaces { weight, .. } => *weight,
        }
    }
}

/// A score in 0–1 and the evidence it is the sum of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    pub score: f64,
    pub evidence: Vec<Evidence>,
}

/// A candidate after scoring.
#[derive(Debug, Clone)]
pub struct Scored {
    pub id: Uuid,
    pub doc_type: DocumentType,
    pub data: Extraction,
    pub score: Score,
}
