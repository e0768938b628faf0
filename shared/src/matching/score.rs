//! Scoring of one candidate against the source document, with the evidence behind the
//! score. Pure: the inputs are the normalised fields, the structured data and the
//! trigram name similarity the candidate query computed.
//!
//! | evidence                                        | weight          |
//! |-------------------------------------------------|-----------------|
//! | a shared normalised reference (PO, invoice, DN)  | +0.45           |
//! | same VAT id / different VAT ids                  | +0.15 / −0.30   |
//! | same IBAN                                        | +0.05           |
//! | totals agree (same currency, ±0.5 %, min 0.01)   | +0.20           |
//! | dates ≤ 14 days apart / ≤ 45 days apart          | +0.10 / +0.05   |
//! | name similarity (pg_trgm `similarity`, 0–1)      | +0.15 × s       |
//!
//! The score is the sum, clamped to 0–1. "Same supplier, nothing else" stays below the
//! ambiguous band; a shared reference from the same supplier is a match.

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::Value;

pub const WEIGHT_REFERENCE: f64 = 0.45;
pub const WEIGHT_VAT_ID: f64 = 0.15;
pub const PENALTY_VAT_ID_MISMATCH: f64 = -0.30;
pub const WEIGHT_IBAN: f64 = 0.05;
pub const WEIGHT_AMOUNT: f64 = 0.20;
pub const WEIGHT_DATE_CLOSE: f64 = 0.10;
pub const WEIGHT_DATE_NEAR: f64 = 0.05;
pub const WEIGHT_NAME: f64 = 0.15;

/// Relative tolerance for totals to agree (rounding, cents), with 0.01 as the floor.
pub const AMOUNT_TOLERANCE: f64 = 0.005;

/// The side of a comparison: normalised fields and the raw structured data.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub vat_id: Option<&'a str>,
    pub iban: Option<&'a str>,
    pub references: &'a [String],
    pub structured: &'a Value,
}

/// One piece of evidence and what it contributed to the score (stored as JSON on the
/// match edge).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    Reference {
        references: Vec<String>,
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
    Date {
        days_apart: i64,
        weight: f64,
    },
    NameSimilarity {
        similarity: f64,
        weight: f64,
    },
}

impl Evidence {
    pub fn weight(&self) -> f64 {
        match self {
            Evidence::Reference { weight, .. }
            | Evidence::VatId { weight, .. }
            | Evidence::VatIdMismatch { weight, .. }
            | Evidence::Iban { weight, .. }
            | Evidence::Amount { weight, .. }
            | Evidence::Date { weight, .. }
            | Evidence::NameSimilarity { weight, .. } => *weight,
        }
    }
}

/// A score in 0–1 and the evidence it is the sum of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    pub score: f64,
    pub evidence: Vec<Evidence>,
}

/// Scores `candidate` against `source`. `name_similarity` is pg_trgm's similarity of the
/// two normalised counterparty names (0 when either is missing).
pub fn score(source: &Side<'_>, candidate: &Side<'_>, name_similarity: f64) -> Score {
    let mut evidence = Vec::new();

    let shared: Vec<String> = source
        .references
        .iter()
        .filter(|r| candidate.references.contains(r))
        .cloned()
        .collect();
    if !shared.is_empty() {
        evidence.push(Evidence::Reference {
            references: shared,
            weight: WEIGHT_REFERENCE,
        });
    }

    match (source.vat_id, candidate.vat_id) {
        (Some(a), Some(b)) if a == b => evidence.push(Evidence::VatId {
            vat_id: a.to_owned(),
            weight: WEIGHT_VAT_ID,
        }),
        (Some(a), Some(b)) => evidence.push(Evidence::VatIdMismatch {
            source: a.to_owned(),
            candidate: b.to_owned(),
            weight: PENALTY_VAT_ID_MISMATCH,
        }),
        _ => {}
    }

    if let (Some(a), Some(b)) = (source.iban, candidate.iban)
        && a == b
    {
        evidence.push(Evidence::Iban {
            iban: a.to_owned(),
            weight: WEIGHT_IBAN,
        });
    }

    if let Some(amount) = amount_agreement(source.structured, candidate.structured) {
        evidence.push(amount);
    }

    if let (Some(a), Some(b)) = (
        document_date(source.structured),
        document_date(candidate.structured),
    ) {
        let days_apart = (a - b).num_days().abs();
        let weight = if days_apart <= 14 {
            WEIGHT_DATE_CLOSE
        } else if days_apart <= 45 {
            WEIGHT_DATE_NEAR
        } else {
            0.0
        };
        if weight > 0.0 {
            evidence.push(Evidence::Date { days_apart, weight });
        }
    }

    let similarity = name_similarity.clamp(0.0, 1.0);
    if similarity > 0.0 {
        evidence.push(Evidence::NameSimilarity {
            similarity: round3(similarity),
            weight: round3(WEIGHT_NAME * similarity),
        });
    }

    let total: f64 = evidence.iter().map(Evidence::weight).sum();
    Score {
        score: round3(total.clamp(0.0, 1.0)),
        evidence,
    }
}

fn amount_agreement(source: &Value, candidate: &Value) -> Option<Evidence> {
    let a = number(source.get("total")?)?;
    let b = number(candidate.get("total")?)?;
    let currency_of = |v: &Value| {
        v.get("currency")
            .and_then(Value::as_str)
            .map(|c| c.trim().to_ascii_uppercase())
    };
    let (ca, cb) = (currency_of(source), currency_of(candidate));
    if let (Some(ca), Some(cb)) = (&ca, &cb)
        && ca != cb
    {
        return None;
    }
    let tolerance = (a.abs().max(b.abs()) * AMOUNT_TOLERANCE).max(0.01);
    ((a - b).abs() <= tolerance).then(|| Evidence::Amount {
        source: a,
        candidate: b,
        currency: ca.or(cb),
        weight: WEIGHT_AMOUNT,
    })
}

/// A number, or a string holding one ("119.00").
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The document's own date: `invoice_date` in the extraction contract (purchase orders
/// and delivery notes use it for their date too), or the common variants.
fn document_date(structured: &Value) -> Option<NaiveDate> {
    [
        "invoice_date",
        "document_date",
        "order_date",
        "delivery_date",
    ]
    .iter()
    .filter_map(|key| structured.get(*key).and_then(Value::as_str))
    .find_map(|raw| NaiveDate::parse_from_str(raw.get(..10)?, "%Y-%m-%d").ok())
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn side<'a>(vat: Option<&'a str>, refs: &'a [String], structured: &'a Value) -> Side<'a> {
        Side {
            vat_id: vat,
            iban: None,
            references: refs,
            structured,
        }
    }

    #[test]
    fn a_shared_reference_from_the_same_supplier_scores_as_a_match() {
        let refs = vec!["PO42".to_owned()];
        let inv = json!({"total": 119.0, "currency": "EUR", "invoice_date": "2024-03-10"});
        let po = json!({"total": 119.0, "currency": "eur", "invoice_date": "2024-03-01"});

        let s = score(
            &side(Some("DE1"), &refs, &inv),
            &side(Some("DE1"), &refs, &po),
            1.0,
        );

        assert_eq!(s.score, 1.0);
        let kinds: Vec<f64> = s.evidence.iter().map(Evidence::weight).collect();
        assert_eq!(kinds, vec![0.45, 0.15, 0.2, 0.1, 0.15]);
    }

    #[test]
    fn the_same_supplier_without_anything_else_stays_below_one_half() {
        let none: Vec<String> = vec![];
        let a = json!({"total": 100.0, "invoice_date": "2024-03-10"});
        let b = json!({"total": 250.0, "invoice_date": "2024-03-12"});

        let s = score(
            &side(Some("DE1"), &none, &a),
            &side(Some("DE1"), &none, &b),
            1.0,
        );

        assert_eq!(s.score, 0.4);
    }

    #[test]
    fn different_vat_ids_pull_the_score_down() {
        let refs = vec!["PO42".to_owned()];
        let a = json!({});

        let s = score(
            &side(Some("DE1"), &refs, &a),
            &side(Some("DE2"), &refs, &a),
            0.0,
        );

        assert_eq!(s.score, 0.15);
    }

    #[test]
    fn totals_agree_within_half_a_percent_and_not_across_currencies() {
        let none: Vec<String> = vec![];
        let a = json!({"total": 1000.0, "currency": "EUR"});
        let close = json!({"total": "1004.50", "currency": "EUR"});
        let far = json!({"total": 1010.0, "currency": "EUR"});
        let usd = json!({"total": 1000.0, "currency": "USD"});

        let agree = |b: &Value| score(&side(None, &none, &a), &side(None, &none, b), 0.0).score;

        assert_eq!(agree(&close), 0.2);
        assert_eq!(agree(&far), 0.0);
        assert_eq!(agree(&usd), 0.0);
    }

    #[test]
    fn dates_further_than_45_days_apart_add_nothing() {
        let none: Vec<String> = vec![];
        let a = json!({"invoice_date": "2024-01-01"});
        let near = json!({"invoice_date": "2024-02-10T00:00:00Z"});
        let far = json!({"invoice_date": "2024-04-01"});

        let s = |b: &Value| score(&side(None, &none, &a), &side(None, &none, b), 0.0).score;

        assert_eq!(s(&near), 0.05);
        assert_eq!(s(&far), 0.0);
    }
}
