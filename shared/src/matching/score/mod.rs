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
//! References are compared by kind ([`References`](super::normalize::References)): a
//! document's own number is never compared with another's own number, only with what
//! the other cites. When both sides say which purchase order (or delivery note, or
//! invoice) they belong to and the answers differ, that weighs heavily against the pair
//! — a weekly standing order with identical totals stays one cluster per week. A cited
//! number one slip away from the other's own (two digits swapped, one dropped or
//! doubled) is a likely typo: no contradiction, and by default no evidence either —
//! sequential numbers make such slips land on real neighbours too often
//! (`MATCH_WEIGHT_NEAR_REFERENCE` gives it weight).
//!
//! What a score is made of (the weights, the sides, each piece of evidence as stored on
//! the match edge) is in `evidence`; how two reference keys relate, in `keys`. This file
//! weighs the evidence of a pair.

mod evidence;
mod keys;

use super::DocumentType;
use super::normalize::RefKind;
use crate::extract::Extraction;

pub use evidence::{AMOUNT_TOLERANCE, Evidence, Relation, Score, Scored, Side, Weights};
pub use keys::{RefMatch, compare_keys, specificity};

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
mod tests;
