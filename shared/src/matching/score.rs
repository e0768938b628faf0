//! Scoring of one candidate against the source document, with the evidence behind the
//! score. Pure: the inputs are the normalised fields, the structured data and the
//! trigram name similarity the candidate query computed. The weights are settings
//! ([`Weights`], `MATCH_WEIGHT_*`); the defaults:
//!
//! | evidence                                                          | weight          |
//! |-------------------------------------------------------------------|-----------------|
//! | one cites the other's own number (PO, delivery note, invoice)      | +0.50 × spec    |
//! | one cites a number one slip away from the other's own (a typo)     | 0 (no contradiction) |
//! | both cite the same number (an invoice and a delivery note, one PO) | +0.25 × spec    |
//! | the references contradict (cites another PO / delivery note / invoice) | −0.60       |
//! | same VAT id / different VAT ids                                    | +0.15 / −0.30   |
//! | same IBAN                                                          | +0.05           |
//! | totals agree (same currency, ±0.5 %, min 0.01)                     | +0.20           |
//! | line items agree (same goods, same quantities)                     | +0.20           |
//! | invoice ↔ delivery note: same goods, other quantities (another partial delivery) | −0.20 |
//! | dates ≤ 7 days apart / ≤ 30 days apart                             | +0.10 / +0.05   |
//! | a delivery note / invoice dated > 3 days before its order, a credit note before its invoice | −0.30 |
//! | name similarity s (pg_trgm), VAT ids compared / one side without   | +0.15 × s / +0.30 × s |
//!
//! `spec` is how specific the shared number is ([`specificity`]): `PO-2024-0042` counts
//! fully, a bare `1001` less. The score is the sum, clamped to 0–1.
//!
//! References are compared by kind ([`References`]): a document's own number is never
//! compared with another's own number, only with what the other cites. When both sides
//! say which purchase order (or delivery note, or invoice) they belong to and the
//! answers differ, that weighs heavily against the pair — a weekly standing order with
//! identical totals stays one cluster per week. A cited number one slip away from the
//! other's own (two digits swapped, one dropped or doubled) is a likely typo: no
//! contradiction, and by default no evidence either — sequential numbers make such
//! slips land on real neighbours too often (`MATCH_WEIGHT_NEAR_REFERENCE` gives it
//! weight).

use serde::Serialize;
use uuid::Uuid;

use super::DocumentType;
use super::normalize::{RefKind, References, letter_part, number_part};
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
    /// ([`add_semantic`]).
    pub semantic: f64,
    /// Below this similarity the embeddings say nothing (0 weight, still recorded).
    pub semantic_floor: f64,
    /// Both names known and dissimilar (trigram similarity below the candidate search's
    /// floor) while the embeddings stand in for the supplier ([`add_semantic`]): the
    /// same goods from another supplier look alike to an embedding, the name says they
    /// are not the same supplier.
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

/// How two references relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RefMatch {
    /// Of different shapes (another prefix, another count of digits — an
    /// order-confirmation number beside an order number), or the same digits grouped
    /// differently: neither the same number nor a contradiction.
    Unrelated,
    /// The same prefix and as many digits (one of slack where the groups agree), but
    /// other digits, however grouped: a contradiction.
    Different,
    /// One slip apart (swapped, dropped or doubled digit): probably a typo.
    Near,
    /// The same digit groups, one of them without its letter prefix.
    SameNumber,
    Exact,
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
            | Evidence::NameMismatch { weight, .. } => *weight,
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

/// Adds the embeddings' cosine similarity to a score: `semantic × similarity` from
/// [`Weights::semantic_floor`] on, 0 below it (recorded either way), the total clamped
/// to 0–1 again. It stands in for the supplier's identity, so it weighs only when
/// nothing else tells the supplier (no similar name, VAT id or IBAN compared): on top of
/// them it would make every document of the same supplier and goods (another partial
/// delivery, next week's order) look like a match.
///
/// `dissimilar_names`: both documents name their counterparty and the names are not
/// alike (below the candidate search's similarity floor). When the similarity weighs,
/// that counts against the pair ([`Weights::name_mismatch`]): the same goods of another
/// supplier look alike to an embedding. Such a pair rests on the embedding alone
/// ([`semantic_only`]) and is never linked on the score's word (`decide`).
pub fn add_semantic(w: &Weights, score: &mut Score, similarity: f64, dissimilar_names: bool) {
    let similarity = similarity.clamp(-1.0, 1.0);
    let supplier_known = score.evidence.iter().any(|e| match e {
        Evidence::NameSimilarity { similarity, .. } => {
            *similarity >= super::candidates::NAME_SIMILARITY_FLOOR
        }
        Evidence::VatId { .. } | Evidence::VatIdMismatch { .. } | Evidence::Iban { .. } => true,
        _ => false,
    });
    let weighs = similarity >= w.semantic_floor && !supplier_known;
    let weight = if weighs {
        round3(w.semantic * similarity)
    } else {
        0.0
    };
    score.evidence.push(Evidence::SemanticSimilarity {
        similarity: round3(similarity),
        weight,
    });
    if weighs && dissimilar_names && w.name_mismatch != 0.0 {
        let name = score
            .evidence
            .iter()
            .find_map(|e| match e {
                Evidence::NameSimilarity { similarity, .. } => Some(*similarity),
                _ => None,
            })
            .unwrap_or(0.0);
        score.evidence.push(Evidence::NameMismatch {
            similarity: name,
            weight: w.name_mismatch,
        });
    }
    let total: f64 = score.evidence.iter().map(Evidence::weight).sum();
    score.score = round3(total.clamp(0.0, 1.0));
}

/// Whether the pair rests on the embeddings alone: the similarity weighs (nothing else
/// tells the supplier) and no reference speaks for or against it. Such a pair stays in
/// the ambiguous band: only an LLM may link it, never the score.
pub fn semantic_only(evidence: &[Evidence]) -> bool {
    circumstantial(evidence)
        && evidence
            .iter()
            .any(|e| matches!(e, Evidence::SemanticSimilarity { weight, .. } if *weight > 0.0))
}

/// When the pair's name is carried by two or more VAT ids in the tenant (look-alike
/// suppliers) and the VAT ids were not compared (one side has none), the name is no
/// evidence: its weight becomes 0 (the similarity stays recorded). With both VAT ids,
/// they decide anyway. Returns whether it changed the score.
pub fn discount_ambiguous_name(score: &mut Score) -> bool {
    let vat_compared = score
        .evidence
        .iter()
        .any(|e| matches!(e, Evidence::VatId { .. } | Evidence::VatIdMismatch { .. }));
    if vat_compared {
        return false;
    }
    let mut changed = false;
    for e in &mut score.evidence {
        if let Evidence::NameSimilarity { weight, .. } = e
            && *weight != 0.0
        {
            *weight = 0.0;
            changed = true;
        }
    }
    if changed {
        let total: f64 = score.evidence.iter().map(Evidence::weight).sum();
        score.score = round3(total.clamp(0.0, 1.0));
    }
    changed
}

/// Scores `candidate` against `source`. `name_similarity` is pg_trgm's similarity of the
/// two normalised counterparty names (0 when either is missing).
pub fn score(w: &Weights, source: &Side<'_>, candidate: &Side<'_>, name_similarity: f64) -> Score {
    let mut evidence = Vec::new();

    let references = reference_evidence(w, source, candidate);
    let cites_directly = matches!(
        references,
        Some(Evidence::Reference {
            relation: Relation::Cites,
            ..
        })
    );
    evidence.extend(references);

    match (source.vat_id, candidate.vat_id) {
        (Some(a), Some(b)) if a == b => evidence.push(Evidence::VatId {
            vat_id: a.to_owned(),
            weight: w.vat_id,
        }),
        (Some(a), Some(b)) => evidence.push(Evidence::VatIdMismatch {
            source: a.to_owned(),
            candidate: b.to_owned(),
            weight: w.vat_id_mismatch,
        }),
        _ => {}
    }

    if let (Some(a), Some(b)) = (source.iban, candidate.iban)
        && a == b
    {
        evidence.push(Evidence::Iban {
            iban: a.to_owned(),
            weight: w.iban,
        });
    }

    if let Some(amount) = amount_agreement(w, source.data, candidate.data) {
        evidence.push(amount);
    }

    match lines_agreement(source.data, candidate.data) {
        Some(true) => evidence.push(Evidence::Lines {
            agree: true,
            weight: w.lines,
        }),
        // Other quantities of the same goods: another partial delivery — unless the
        // invoice names this delivery note itself (a final invoice over several).
        Some(false)
            if DocumentType::invoice_and_delivery(source.doc_type, candidate.doc_type)
                && !cites_directly =>
        {
            evidence.push(Evidence::Lines {
                agree: false,
                weight: w.lines_conflict,
            })
        }
        _ => {}
    }

    if let (Some(a), Some(b)) = (source.data.invoice_date, candidate.data.invoice_date) {
        let days_apart = (a - b).num_days().abs();
        let weight = if days_apart <= DATE_CLOSE_DAYS {
            w.date_close
        } else if days_apart <= DATE_NEAR_DAYS {
            w.date_near
        } else {
            0.0
        };
        if weight != 0.0 {
            evidence.push(Evidence::Date { days_apart, weight });
        }
        if let Some(days_before) =
            dated_before_its_origin(source.doc_type, a, candidate.doc_type, b)
            && days_before > DATE_ORDER_TOLERANCE_DAYS
        {
            evidence.push(Evidence::DateOrder {
                days_before,
                weight: w.date_order,
            });
        }
    }

    let similarity = name_similarity.clamp(0.0, 1.0);
    if similarity > 0.0 {
        let vat_compared = source.vat_id.is_some() && candidate.vat_id.is_some();
        let name_weight = if vat_compared { w.name } else { w.name_alone };
        evidence.push(Evidence::NameSimilarity {
            similarity: round3(similarity),
            weight: round3(name_weight * similarity),
        });
    }

    let total: f64 = evidence.iter().map(Evidence::weight).sum();
    Score {
        score: round3(total.clamp(0.0, 1.0)),
        evidence,
    }
}

/// Dates at most this many days apart are close (a delivery within the week of its
/// order); a standing order's neighbouring weeks are not.
pub const DATE_CLOSE_DAYS: i64 = 7;
/// Dates at most this many days apart are near.
pub const DATE_NEAR_DAYS: i64 = 30;

/// Days of slack before a document counts as dated before its origin.
pub const DATE_ORDER_TOLERANCE_DAYS: i64 = 3;

/// How many days the later document of the pair (a delivery note or invoice against its
/// order, a credit note against its invoice) is dated before the earlier one; `None`
/// for pairs without such an order.
fn dated_before_its_origin(
    a_type: DocumentType,
    a: chrono::NaiveDate,
    b_type: DocumentType,
    b: chrono::NaiveDate,
) -> Option<i64> {
    if b_type.follows(a_type) {
        Some((a - b).num_days())
    } else if a_type.follows(b_type) {
        Some((b - a).num_days())
    } else {
        None
    }
}

/// Whether a pair's evidence is circumstance alone: no reference for or against it (a
/// likely typo of a number, `near`, says neither) — same supplier, goods, dates.
pub fn circumstantial(evidence: &[Evidence]) -> bool {
    !evidence.iter().any(|e| match e {
        Evidence::Reference { relation, .. } => *relation != Relation::Near,
        Evidence::ReferenceConflict { .. } => true,
        _ => false,
    })
}

/// How a pair's references tie it, strongest first (docs/matching.md, *Evidence
/// ranking*): one cites the other's own number, both cite the same number (an invoice and a delivery note naming one order), or
/// nothing but circumstance (supplier, goods, amounts, dates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Circumstance,
    Shared,
    Direct,
}

impl Tier {
    pub fn of(evidence: &[Evidence]) -> Tier {
        let mut tier = Tier::Circumstance;
        for e in evidence {
            if let Evidence::Reference { relation, .. } = e {
                let t = match relation {
                    Relation::Cites => Tier::Direct,
                    Relation::Shared => Tier::Shared,
                    Relation::Near => Tier::Circumstance,
                };
                tier = tier.max(t);
            }
        }
        tier
    }
}

/// How near two documents are, for choosing among partners tied only by a shared
/// citation (a framework order's monthly deliveries and invoices): first whether their
/// quantities agree (or, without comparable lines, their totals), then the days between
/// them. Smaller is nearer; equal is a tie nothing can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proximity {
    /// 0: same quantities (or totals), 1: nothing to compare, 2: other quantities.
    pub quantities: u8,
    /// Days between the documents' dates; `i64::MAX` when either has none.
    pub days_apart: i64,
}

pub fn proximity(a: &Extraction, b: &Extraction) -> Proximity {
    let quantities = match lines_agreement(a, b) {
        Some(true) => 0,
        Some(false) => 2,
        None if amount_agreement(&Weights::default(), a, b).is_some() => 0,
        None => 1,
    };
    let days_apart = match (a.invoice_date, b.invoice_date) {
        (Some(x), Some(y)) => (x - y).num_days().abs(),
        _ => i64::MAX,
    };
    Proximity {
        quantities,
        days_apart,
    }
}

/// How specific a key is, 0.4–1: by its count of digits, a letter prefix adding a step.
/// `PO-2024-42` and `4500123` count fully, `1001` 0.7, `17` 0.4.
pub fn specificity(key: &str) -> f64 {
    let digits = key.chars().filter(char::is_ascii_digit).count();
    let base: f64 = match digits {
        0..=2 => 0.4,
        3 => 0.55,
        4 => 0.7,
        5 => 0.85,
        _ => 1.0,
    };
    let prefixed = !letter_part(key).is_empty();
    if prefixed {
        (base + 0.15).min(1.0)
    } else {
        base
    }
}

/// How two keys relate.
pub fn compare_keys(a: &str, b: &str) -> RefMatch {
    if a == b {
        return RefMatch::Exact;
    }
    let (la, lb) = (letter_part(a), letter_part(b));
    let letters_agree = la == lb || la.is_empty() || lb.is_empty();
    if !letters_agree {
        // `AB-77001` (an order confirmation) against `PO-4500012345`: another kind of
        // number, no evidence either way.
        return RefMatch::Unrelated;
    }
    let (na, nb) = (number_part(a), number_part(b));
    if na == nb {
        return RefMatch::SameNumber;
    }
    let (ga, gb): (Vec<&str>, Vec<&str>) = (na.split('-').collect(), nb.split('-').collect());
    // Groups merged or split: `45000-12345` and `4500012345`, `LS-2024-123` (from
    // `LS-2024-00123`) and `LS-202400123`. One side must be a single group, so the other's
    // boundaries (with their trimmed leading zeros) are the only reading.
    if (gb.len() == 1 && zero_padded_groups_spell(&ga, gb[0]))
        || (ga.len() == 1 && zero_padded_groups_spell(&gb, ga[0]))
    {
        return RefMatch::SameNumber;
    }
    let (da, db): (Vec<char>, Vec<char>) = (
        na.chars().filter(char::is_ascii_digit).collect(),
        nb.chars().filter(char::is_ascii_digit).collect(),
    );
    if da == db {
        // `LS-2024-1-15` against `LS-2024-11-5`: the same digits, grouped otherwise.
        return RefMatch::Unrelated;
    }
    if da.len().min(db.len()) >= 4 && one_slip(&da, &db) {
        return RefMatch::Near;
    }
    // Another shape: another count of digits (leading zeros are trimmed, so one digit of
    // slack when the groups agree). The same count of other digits contradicts, however
    // the digits are grouped: `4500012345` and `45000-12346` are two orders.
    // Grouped otherwise, only the same prefix on both sides says "the same kind of
    // number" (`LS-2024-0002` against `77001` is another kind, trimmed zeros and all).
    let slack = if ga.len() == gb.len() {
        1
    } else if la == lb {
        0
    } else {
        return RefMatch::Unrelated;
    };
    if da.len().abs_diff(db.len()) > slack {
        return RefMatch::Unrelated;
    }
    RefMatch::Different
}

/// Whether `groups`, each with any number of leading zeros put back, spell `digits`.
fn zero_padded_groups_spell(groups: &[&str], digits: &str) -> bool {
    let Some((first, rest)) = groups.split_first() else {
        return digits.is_empty();
    };
    let mut tail = digits;
    loop {
        if let Some(after) = tail.strip_prefix(first)
            && zero_padded_groups_spell(rest, after)
        {
            return true;
        }
        match tail.strip_prefix('0') {
            Some(after) => tail = after,
            None => return false,
        }
    }
}

/// Whether `a` and `b` differ by one swap of neighbours, or one character dropped or
/// doubled. A changed digit is *not* a slip: consecutive numbers (the next week's
/// purchase order) differ by exactly that.
fn one_slip(a: &[char], b: &[char]) -> bool {
    if a.len() == b.len() {
        let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
        return diff.len() == 2
            && diff[1] == diff[0] + 1
            && a[diff[0]] == b[diff[1]]
            && a[diff[1]] == b[diff[0]];
    }
    let (long, short) = if a.len() > b.len() { (a, b) } else { (b, a) };
    if long.len() != short.len() + 1 {
        return false;
    }
    (0..long.len()).any(|skip| {
        long.iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, c)| c)
            .eq(short.iter())
    })
}

/// The best relation between any key of `a` and any of `b`, with the keys.
fn best(a: &[String], b: &[String]) -> Option<(RefMatch, Vec<String>)> {
    let mut best: Option<(RefMatch, Vec<String>)> = None;
    for x in a {
        for y in b {
            let m = compare_keys(x, y);
            match &mut best {
                Some((level, keys)) if *level == m && m >= RefMatch::SameNumber => {
                    keys.push(x.clone());
                }
                Some((level, _)) if *level >= m => {}
                _ => best = Some((m, vec![x.clone()])),
            }
        }
    }
    best
}

fn reference_weight(w: f64, level: RefMatch, keys: &[String]) -> (f64, f64) {
    let spec = keys.iter().map(|k| specificity(k)).fold(0.0, f64::max);
    let spec = if level == RefMatch::SameNumber {
        spec * 0.85
    } else {
        spec
    };
    let spec = round3(spec);
    (spec, round3(w * spec))
}

/// The reference evidence of a pair, if any: a direct citation beats a contradiction,
/// which beats a shared citation (an invoice of one partial delivery and the delivery
/// note of another cite the same purchase order but different delivery notes).
fn reference_evidence(w: &Weights, s: &Side<'_>, c: &Side<'_>) -> Option<Evidence> {
    let (Some(sk), Some(ck)) = (RefKind::of(s.doc_type), RefKind::of(c.doc_type)) else {
        return None;
    };
    let sr = s.references;
    let cr = c.references;

    // Direct: what one cites of the other's kind against the other's own number.
    let mut direct_match: Option<(RefMatch, Vec<String>)> = None;
    let mut direct_near: Option<Vec<String>> = None;
    let mut conflict: Option<(Vec<String>, Vec<String>)> = None;
    for (cited, own) in [(sr.cited(ck), &cr.own), (cr.cited(sk), &sr.own)] {
        if cited.is_empty() || own.is_empty() {
            continue;
        }
        match best(cited, own) {
            Some((level, keys))
                if level >= RefMatch::SameNumber
                    && direct_match.as_ref().is_none_or(|(l, _)| *l < level) =>
            {
                direct_match = Some((level, keys));
            }
            Some((level, _)) if level >= RefMatch::SameNumber => {}
            Some((RefMatch::Near, keys)) => {
                direct_near.get_or_insert(keys);
            }
            Some((RefMatch::Different, _)) => {
                conflict.get_or_insert((cited.to_vec(), own.clone()));
            }
            _ => {}
        }
    }
    if let Some((level, keys)) = direct_match {
        let (specificity, weight) = reference_weight(w.reference, level, &keys);
        return Some(Evidence::Reference {
            relation: Relation::Cites,
            references: keys,
            specificity,
            weight,
        });
    }
    // A likely typo of the other's number says "maybe the same", which outweighs what
    // the other direction contradicts.
    if direct_near.is_none()
        && let Some((cited, other)) = conflict
    {
        return Some(Evidence::ReferenceConflict {
            cited,
            other,
            weight: w.reference_conflict,
        });
    }
    let mut conflict = None;

    // Shared: both cite numbers of the same kind (both name their purchase order).
    let mut shared: Option<(RefMatch, Vec<String>)> = None;
    for kind in [
        RefKind::PurchaseOrder,
        RefKind::DeliveryNote,
        RefKind::Invoice,
    ] {
        let (a, b) = (sr.cited(kind), cr.cited(kind));
        if a.is_empty() || b.is_empty() {
            continue;
        }
        match best(a, b) {
            Some((level, keys))
                if level >= RefMatch::SameNumber
                    && shared.as_ref().is_none_or(|(l, _)| *l < level) =>
            {
                shared = Some((level, keys));
            }
            Some((level, _)) if level >= RefMatch::SameNumber => {}
            Some((RefMatch::Different, _)) => {
                conflict.get_or_insert((a.to_vec(), b.to_vec()));
            }
            _ => {}
        }
    }
    if let Some((level, keys)) = shared {
        let (specificity, weight) = reference_weight(w.shared_reference, level, &keys);
        return Some(Evidence::Reference {
            relation: Relation::Shared,
            references: keys,
            specificity,
            weight,
        });
    }
    if let Some((cited, other)) = conflict {
        return Some(Evidence::ReferenceConflict {
            cited,
            other,
            weight: w.reference_conflict,
        });
    }
    if let Some(keys) = direct_near {
        // Probably a typo of this number.
        let (specificity, weight) = reference_weight(w.near_reference, RefMatch::Exact, &keys);
        return Some(Evidence::Reference {
            relation: Relation::Near,
            references: keys,
            specificity,
            weight,
        });
    }

    None
}

fn amount_agreement(w: &Weights, source: &Extraction, candidate: &Extraction) -> Option<Evidence> {
    let a = source.total?;
    let b = candidate.total?;
    let currency_of = |e: &Extraction| e.currency.as_deref().map(|c| c.trim().to_ascii_uppercase());
    let (ca, cb) = (currency_of(source), currency_of(candidate));
    if let (Some(ca), Some(cb)) = (&ca, &cb)
        && ca != cb
    {
        return None;
    }
    // A credit note may carry its total as a negative number.
    let (a, b) = (a.abs(), b.abs());
    let tolerance = (a.max(b) * AMOUNT_TOLERANCE).max(0.01);
    ((a - b).abs() <= tolerance).then(|| Evidence::Amount {
        source: a,
        candidate: b,
        currency: ca.or(cb),
        weight: w.amount,
    })
}

/// A line item reduced to what two documents of one purchase share: the words of its
/// description and its quantity.
#[derive(Debug)]
struct Line {
    words: Vec<String>,
    quantity: Option<f64>,
}

fn lines(data: &Extraction) -> Vec<Line> {
    data.line_items
        .iter()
        .filter_map(|item| {
            let mut words: Vec<String> = item
                .description
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect();
            words.sort();
            words.dedup();
            (!words.is_empty()).then_some(Line {
                words,
                quantity: item.quantity,
            })
        })
        .collect()
}

fn same_goods(a: &Line, b: &Line) -> bool {
    let common = a.words.iter().filter(|w| b.words.contains(w)).count();
    let union = a.words.len() + b.words.len() - common;
    union > 0 && common as f64 / union as f64 >= 0.6
}

/// `Some(true)`: every line of the shorter list has the same goods in the same quantity
/// on the other side. `Some(false)`: common goods appear in other quantities. `None`: no
/// line items to compare, or no common goods.
fn lines_agreement(source: &Extraction, candidate: &Extraction) -> Option<bool> {
    let (a, b) = (lines(source), lines(candidate));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let mut common = 0;
    let mut equal = 0;
    for line in short {
        let matches: Vec<&Line> = long.iter().filter(|l| same_goods(line, l)).collect();
        if matches.is_empty() {
            continue;
        }
        common += 1;
        if matches.iter().any(|l| match (line.quantity, l.quantity) {
            (Some(x), Some(y)) => (x - y).abs() < 1e-6,
            _ => false,
        }) {
            equal += 1;
        }
    }
    if common == 0 {
        None
    } else {
        Some(equal == short.len())
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::test_data;
    use serde_json::{Value, json};

    struct Doc {
        doc_type: DocumentType,
        vat: Option<&'static str>,
        refs: References,
        data: Extraction,
    }

    fn doc(doc_type: DocumentType, vat: Option<&'static str>, data: Value) -> Doc {
        let data = test_data(data);
        Doc {
            doc_type,
            vat,
            refs: References::read(&data, doc_type),
            data,
        }
    }

    fn side(d: &Doc) -> Side<'_> {
        Side {
            doc_type: d.doc_type,
            vat_id: d.vat,
            iban: None,
            references: &d.refs,
            data: &d.data,
        }
    }

    fn s(a: &Doc, b: &Doc, name: f64) -> Score {
        score(&Weights::default(), &side(a), &side(b), name)
    }

    const INV: DocumentType = DocumentType::Invoice;
    const PO: DocumentType = DocumentType::PurchaseOrder;
    const DN: DocumentType = DocumentType::DeliveryNote;

    #[test]
    fn an_invoice_citing_its_purchase_order_from_the_same_supplier_scores_as_a_match() {
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "PO-2024-42", "total": 119.0, "currency": "EUR", "invoice_date": "2024-03-10"}),
        );
        let po = doc(
            PO,
            Some("DE1"),
            json!({"invoice_number": "PO-2024-0042", "total": 119.0, "currency": "eur", "invoice_date": "2024-03-05"}),
        );

        let sc = s(&inv, &po, 1.0);

        assert_eq!(sc.score, 1.0);
        let weights: Vec<f64> = sc.evidence.iter().map(Evidence::weight).collect();
        assert_eq!(weights, vec![0.5, 0.15, 0.2, 0.1, 0.15]);
    }

    #[test]
    fn the_embeddings_weigh_only_when_nothing_else_tells_the_supplier() {
        let w = Weights::default();
        let bare = |evidence: Vec<Evidence>| Score {
            score: evidence.iter().map(Evidence::weight).sum(),
            evidence,
        };
        // Renamed supplier: goods and dates agree, nothing names the supplier.
        let mut renamed = bare(vec![
            Evidence::Lines {
                agree: true,
                weight: w.lines,
            },
            Evidence::Date {
                days_apart: 4,
                weight: w.date_close,
            },
        ]);
        add_semantic(&w, &mut renamed, 0.5, false);
        assert_eq!(renamed.score, round3(0.2 + 0.1 + 0.7 * 0.5));
        // The same supplier by VAT id: the similarity is recorded, weighs nothing.
        let mut known = bare(vec![Evidence::VatId {
            vat_id: "DE1".into(),
            weight: w.vat_id,
        }]);
        add_semantic(&w, &mut known, 0.9, false);
        assert_eq!(known.score, 0.15);
        assert!(matches!(
            known.evidence.last(),
            Some(Evidence::SemanticSimilarity { similarity, weight }) if *similarity == 0.9 && *weight == 0.0
        ));
        // Below the floor: nothing.
        let mut far = bare(vec![]);
        add_semantic(&w, &mut far, 0.39, false);
        assert_eq!(far.score, 0.0);
    }

    #[test]
    fn a_dissimilar_name_counts_against_a_pair_the_embeddings_tie() {
        let w = Weights::default();
        let goods = || Score {
            score: 0.3,
            evidence: vec![
                Evidence::Lines {
                    agree: true,
                    weight: w.lines,
                },
                Evidence::Date {
                    days_apart: 4,
                    weight: w.date_close,
                },
            ],
        };
        let mut unnamed = goods();
        add_semantic(&w, &mut unnamed, 0.9, false);
        let mut other_name = goods();
        add_semantic(&w, &mut other_name, 0.9, true);

        assert_eq!(other_name.score, round3(unnamed.score + w.name_mismatch));
        assert!(matches!(
            other_name.evidence.last(),
            Some(Evidence::NameMismatch { .. })
        ));
        assert!(semantic_only(&other_name.evidence));
        // Below the floor the embedding says nothing, and neither does the name.
        let mut far = goods();
        add_semantic(&w, &mut far, 0.2, true);
        assert_eq!(far.score, 0.3);
        assert!(!semantic_only(&far.evidence));
    }

    #[test]
    fn a_direct_citation_outranks_a_shared_one_which_outranks_circumstance() {
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "4500012345", "delivery_note_reference": "LS-2024-0002"}),
        );
        let cited = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-2024-0002", "po_reference": "4500012345"}),
        );
        let sharing = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "77001", "po_reference": "4500012345"}),
        );
        let nothing = doc(DN, Some("DE1"), json!({"invoice_number": "88002"}));

        assert_eq!(Tier::of(&s(&inv, &cited, 1.0).evidence), Tier::Direct);
        assert_eq!(Tier::of(&s(&inv, &sharing, 1.0).evidence), Tier::Shared);
        assert_eq!(
            Tier::of(&s(&inv, &nothing, 1.0).evidence),
            Tier::Circumstance
        );
        assert!(Tier::Direct > Tier::Shared && Tier::Shared > Tier::Circumstance);
    }

    #[test]
    fn proximity_puts_equal_quantities_before_days_and_missing_dates_last() {
        let inv = test_data(
            json!({"invoice_date": "2024-03-06", "line_items": [{"description": "Paper", "quantity": 20}]}),
        );
        let same_far = test_data(
            json!({"invoice_date": "2024-03-20", "line_items": [{"description": "Paper", "quantity": 20}]}),
        );
        let other_near = test_data(
            json!({"invoice_date": "2024-03-05", "line_items": [{"description": "Paper", "quantity": 25}]}),
        );
        let undated = test_data(json!({"line_items": [{"description": "Paper", "quantity": 20}]}));

        assert!(proximity(&inv, &same_far) < proximity(&inv, &other_near));
        assert!(proximity(&inv, &same_far) < proximity(&inv, &undated));
        assert_eq!(proximity(&inv, &same_far).days_apart, 14);
    }

    #[test]
    fn the_same_supplier_without_anything_else_stays_below_one_half() {
        let a = doc(
            INV,
            Some("DE1"),
            json!({"total": 100.0, "invoice_date": "2024-03-10"}),
        );
        let b = doc(
            PO,
            Some("DE1"),
            json!({"total": 250.0, "invoice_date": "2024-03-12"}),
        );

        assert_eq!(s(&a, &b, 1.0).score, 0.4);
    }

    #[test]
    fn different_vat_ids_pull_the_score_down() {
        let a = doc(INV, Some("DE1"), json!({"po_reference": "PO-2024-42"}));
        let b = doc(PO, Some("DE2"), json!({"invoice_number": "PO-2024-42"}));

        assert_eq!(s(&a, &b, 0.0).score, 0.2);
    }

    #[test]
    fn an_invoice_citing_another_standing_order_is_pulled_far_below_the_threshold() {
        // Same supplier, same total, a week apart: 0.6 without references.
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "PO-2024-0102", "total": 500.0, "invoice_date": "2024-03-10"}),
        );
        let other_week = doc(
            PO,
            Some("DE1"),
            json!({"invoice_number": "PO-2024-0101", "total": 500.0, "invoice_date": "2024-03-01"}),
        );

        let sc = s(&inv, &other_week, 1.0);

        assert!(sc.score < 0.1, "{sc:?}");
        assert!(matches!(sc.evidence[0], Evidence::ReferenceConflict { .. }));
    }

    #[test]
    fn delivery_notes_of_different_purchase_orders_contradict_an_invoices_order() {
        let inv = doc(INV, Some("DE1"), json!({"po_reference": "PO-7"}));
        let dn = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-1", "po_reference": "PO-8"}),
        );

        assert!(matches!(
            s(&inv, &dn, 1.0).evidence[0],
            Evidence::ReferenceConflict { .. }
        ));
    }

    #[test]
    fn an_invoice_of_one_partial_delivery_does_not_match_the_other_delivery_note() {
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "PO-7", "delivery_note_reference": "LS-1001",
                   "line_items": [{"description": "Toner black", "quantity": 40}]}),
        );
        let own = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-1001", "po_reference": "PO-7",
                   "line_items": [{"description": "Toner black", "quantity": 40}]}),
        );
        let other = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-1002", "po_reference": "PO-7",
                   "line_items": [{"description": "Toner black", "quantity": 60}]}),
        );

        assert!(s(&inv, &own, 1.0).score >= 0.75);
        assert!(
            s(&inv, &other, 1.0).score < 0.5,
            "{:?}",
            s(&inv, &other, 1.0)
        );
    }

    #[test]
    fn without_delivery_note_numbers_the_quantities_pick_the_delivery_an_invoice_bills() {
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "PO-7", "line_items": [{"description": "Toner black", "quantity": 40}]}),
        );
        let own = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-1001", "po_reference": "PO-7",
                   "line_items": [{"description": "TONER, black", "quantity": 40}]}),
        );
        let other = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-1002", "po_reference": "PO-7",
                   "line_items": [{"description": "Toner black", "quantity": 60}]}),
        );

        let (yes, no) = (s(&inv, &own, 1.0), s(&inv, &other, 1.0));
        assert!(yes.score >= 0.6, "{yes:?}");
        assert!(no.score < 0.5, "{no:?}");
    }

    #[test]
    fn a_final_invoice_naming_each_delivery_note_matches_all_of_them() {
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "PO-7", "delivery_note_reference": "LS-1001, LS-1002",
                   "invoice_date": "2024-03-20",
                   "line_items": [{"description": "Toner black", "quantity": 100}]}),
        );
        let first = doc(
            DN,
            Some("DE1"),
            json!({"invoice_number": "LS-1001", "po_reference": "PO-7", "invoice_date": "2024-03-12",
                   "line_items": [{"description": "Toner black", "quantity": 40}]}),
        );

        let sc = s(&inv, &first, 1.0);
        assert!(sc.score >= 0.75, "{sc:?}");
        assert!(
            !sc.evidence
                .iter()
                .any(|e| matches!(e, Evidence::Lines { .. })),
            "{sc:?}"
        );
    }

    #[test]
    fn a_suppliers_invoice_number_is_not_taken_for_the_tenants_purchase_order_number() {
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"invoice_number": "1001", "total": 80.0}),
        );
        let po = doc(
            PO,
            Some("DE1"),
            json!({"invoice_number": "1001", "total": 95.0}),
        );

        let sc = s(&inv, &po, 1.0);

        assert!(
            !sc.evidence
                .iter()
                .any(|e| matches!(e, Evidence::Reference { .. })),
            "{sc:?}"
        );
        assert!(sc.score < 0.5);
    }

    #[test]
    fn a_short_shared_number_weighs_less_than_a_specific_one() {
        assert!(specificity("1001") < specificity("PO-2024-42"));
        assert!(specificity("17") < specificity("1001"));
        assert_eq!(specificity("4500123"), 1.0);
        let inv = doc(INV, None, json!({"po_reference": "1001"}));
        let po = doc(PO, None, json!({"invoice_number": "1001"}));
        assert_eq!(s(&inv, &po, 0.0).score, round3(0.5 * 0.7));
    }

    #[test]
    fn a_cited_number_without_its_prefix_still_counts() {
        let inv = doc(INV, None, json!({"po_reference": "2024-0042"}));
        let po = doc(PO, None, json!({"invoice_number": "PO-2024-42"}));

        let sc = s(&inv, &po, 0.0);

        assert!(matches!(
            sc.evidence[0],
            Evidence::Reference {
                relation: Relation::Cites,
                ..
            }
        ));
        assert!(sc.score > 0.3 && sc.score < 0.45, "{sc:?}");
    }

    #[test]
    fn swapped_digits_are_a_typo_but_the_next_number_is_another_document() {
        assert_eq!(compare_keys("PO-2024-142", "PO-2024-124"), RefMatch::Near);
        assert_eq!(compare_keys("PO-2024-142", "PO-2024-1422"), RefMatch::Near);
        assert_eq!(
            compare_keys("PO-2024-142", "PO-2024-143"),
            RefMatch::Different
        );
        assert_eq!(compare_keys("INV-1001", "PO-1001"), RefMatch::Unrelated);
        assert_eq!(compare_keys("1001", "PO-1001"), RefMatch::SameNumber);

        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "PO-2024-124", "total": 10.0}),
        );
        let po = doc(
            PO,
            Some("DE1"),
            json!({"invoice_number": "PO-2024-142", "total": 10.0}),
        );
        assert_eq!(
            s(&inv, &po, 0.0).score,
            0.35,
            "neither evidence nor contradiction"
        );
    }

    fn key_of(raw: &str) -> String {
        crate::matching::normalize::normalize_reference(raw).unwrap()
    }

    fn compare_raw(a: &str, b: &str) -> RefMatch {
        compare_keys(&key_of(a), &key_of(b))
    }

    #[test]
    fn the_same_digits_written_differently_are_the_same_number() {
        for (a, b) in [
            ("45000 12345", "4500012345"),
            ("LS202400123", "LS-2024-00123"),
            ("PO 45000-77001", "PO 4500077001"),
            ("PO 45000-77001", "4500077001"),
            ("PO-2024-O042", "PO-2024-0042"),
        ] {
            assert!(
                compare_raw(a, b) >= RefMatch::SameNumber,
                "{a} / {b}: {:?}",
                compare_raw(a, b)
            );
            assert!(compare_raw(b, a) >= RefMatch::SameNumber, "{b} / {a}");
        }
    }

    #[test]
    fn only_references_of_one_shape_with_other_digits_contradict() {
        // Same prefix, same groups, other digits: the next order.
        assert_eq!(
            compare_raw("PO-2024-0042", "PO-2024-0043"),
            RefMatch::Different
        );
        assert_eq!(compare_raw("4500012345", "4500012346"), RefMatch::Different);
        assert_eq!(
            compare_raw("PO-2024-0099", "PO-2024-0100"),
            RefMatch::Different
        );
        // Other shapes: no evidence either way.
        assert_eq!(
            compare_raw("AB-77001", "PO-4500012345"),
            RefMatch::Unrelated
        );
        assert_eq!(compare_raw("77001", "4500012345"), RefMatch::Unrelated);
        assert_eq!(
            compare_raw("PO-2024-0042", "PO-4500012345"),
            RefMatch::Unrelated
        );
        // The same digits in other groups: neither the same nor a contradiction.
        assert_eq!(
            compare_raw("LS-2024-1-15", "LS-2024-11-5"),
            RefMatch::Unrelated
        );
    }

    #[test]
    fn the_same_count_of_other_digits_contradicts_whatever_the_grouping() {
        for (a, b) in [
            ("4500012345", "45000-12346"),
            ("45000 12345", "4500012399"),
            ("PO-2024-4242", "PO-20244243"),
        ] {
            assert_eq!(compare_raw(a, b), RefMatch::Different, "{a} / {b}");
            assert_eq!(compare_raw(b, a), RefMatch::Different, "{b} / {a}");
        }
        // Other groups and another count of digits: another shape, no evidence.
        assert_eq!(compare_raw("4500012345", "450001-23"), RefMatch::Unrelated);
        // Grouped otherwise with a prefix on one side only: another kind of number.
        assert_eq!(compare_raw("LS-2024-0002", "77001"), RefMatch::Unrelated);
    }

    #[test]
    fn an_order_confirmation_number_in_po_reference_does_not_veto_the_real_order() {
        let po = doc(
            PO,
            Some("DE1"),
            json!({"invoice_number": "4500012345", "total": 119.0, "invoice_date": "2024-03-05"}),
        );
        // The supplier's order confirmation `AB-77001` where the order number belongs.
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "AB-77001", "total": 119.0, "invoice_date": "2024-03-10"}),
        );
        let sc = s(&inv, &po, 0.0);
        assert!(
            !sc.evidence
                .iter()
                .any(|e| matches!(e, Evidence::ReferenceConflict { .. })),
            "{sc:?}"
        );
        // Both, the confirmation and the order: the order is cited.
        let both = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "AB-77001, 45000 12345", "total": 119.0, "invoice_date": "2024-03-10"}),
        );
        let sc = s(&both, &po, 0.0);
        assert!(
            matches!(
                sc.evidence[0],
                Evidence::Reference {
                    relation: Relation::Cites,
                    ..
                }
            ),
            "{sc:?}"
        );
        // A real other order of the same shape still contradicts.
        let other = doc(
            INV,
            Some("DE1"),
            json!({"po_reference": "4500012399", "total": 119.0, "invoice_date": "2024-03-10"}),
        );
        assert!(
            s(&other, &po, 0.0)
                .evidence
                .iter()
                .any(|e| matches!(e, Evidence::ReferenceConflict { .. }))
        );
    }

    #[test]
    fn a_credit_note_matches_the_invoice_it_corrects_and_no_other() {
        let cn = doc(
            DocumentType::CreditNote,
            Some("DE1"),
            json!({"invoice_number": "GS-1", "invoice_reference": "RE-2024-0815", "total": -119.0}),
        );
        let inv = doc(
            INV,
            Some("DE1"),
            json!({"invoice_number": "RE-2024-815", "total": 119.0}),
        );
        let other = doc(
            INV,
            Some("DE1"),
            json!({"invoice_number": "RE-2024-816", "total": 119.0}),
        );

        assert!(s(&cn, &inv, 1.0).score >= 0.75);
        assert!(s(&cn, &other, 1.0).score < 0.5);
    }

    #[test]
    fn totals_agree_within_half_a_percent_and_not_across_currencies() {
        let a = doc(INV, None, json!({"total": 1000.0, "currency": "EUR"}));
        let close = doc(PO, None, json!({"total": 1004.50, "currency": "EUR"}));
        let far = doc(PO, None, json!({"total": 1010.0, "currency": "EUR"}));
        let usd = doc(PO, None, json!({"total": 1000.0, "currency": "USD"}));

        assert_eq!(s(&a, &close, 0.0).score, 0.2);
        assert_eq!(s(&a, &far, 0.0).score, 0.0);
        assert_eq!(s(&a, &usd, 0.0).score, 0.0);
    }

    #[test]
    fn dates_further_than_30_days_apart_add_nothing() {
        let a = doc(INV, None, json!({"invoice_date": "2024-02-01"}));
        let near = doc(PO, None, json!({"invoice_date": "2024-01-13"}));
        let far = doc(PO, None, json!({"invoice_date": "2023-12-01"}));

        assert_eq!(s(&a, &near, 0.0).score, 0.05);
        assert_eq!(s(&a, &far, 0.0).score, 0.0);
    }

    #[test]
    fn a_delivery_dated_a_week_before_its_order_is_implausible() {
        let po = doc(
            PO,
            Some("DE1"),
            json!({"invoice_number": "PO-2024-42", "invoice_date": "2024-03-10"}),
        );
        let early = doc(
            DN,
            Some("DE1"),
            json!({"po_reference": "PO-2024-42", "invoice_date": "2024-03-03"}),
        );
        let same_day = doc(
            DN,
            Some("DE1"),
            json!({"po_reference": "PO-2024-42", "invoice_date": "2024-03-08"}),
        );

        let sc = s(&early, &po, 0.0);
        assert!(
            sc.evidence
                .iter()
                .any(|e| matches!(e, Evidence::DateOrder { days_before: 7, .. })),
            "{sc:?}"
        );
        assert!(
            !s(&same_day, &po, 0.0)
                .evidence
                .iter()
                .any(|e| matches!(e, Evidence::DateOrder { .. }))
        );
    }

    #[test]
    fn without_a_vat_id_on_one_side_the_name_carries_the_supplier_weight() {
        let with_vat = doc(INV, Some("DE1"), json!({}));
        let without = doc(DN, None, json!({}));
        let also_vat = doc(DN, Some("DE1"), json!({}));

        assert_eq!(s(&with_vat, &without, 1.0).score, 0.3);
        assert_eq!(
            s(&with_vat, &also_vat, 1.0).score,
            0.3,
            "0.15 VAT + 0.15 name"
        );
        assert_eq!(s(&with_vat, &without, 0.5).score, 0.15);
    }
}
