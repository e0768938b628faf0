//! The extraction contract: what ingestion turns a transcribed document into, whichever
//! provider produced it (an LLM, or the offline [`rules`] extractor).
//!
//! The JSON shape is the contract with the LLM prompt, the `structured_data` column and
//! matching: `extraction_successful`, `confidence` (high/medium/low), `missing_fields`,
//! then the document's fields. Dates are ISO 8601 (`2014-05-07`), amounts are JSON
//! numbers, currency is ISO 4217. An answer that does not deserialize or validate is a
//! transient error (the next LLM answer may be fine).

pub mod einvoice;
pub mod rules;

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::llm::{LlmClient, LlmError};

pub use crate::document::{Confidence, DocumentType};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineItem {
    pub description: String,
    #[serde(default)]
    pub quantity: Option<f64>,
    #[serde(default)]
    pub unit_price: Option<f64>,
    #[serde(default)]
    pub amount: Option<f64>,
}

/// One extraction result. Absent keys deserialize as `null`/empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub extraction_successful: bool,
    pub confidence: Confidence,
    #[serde(default)]
    pub missing_fields: Vec<String>,
    #[serde(default)]
    pub document_type: Option<DocumentType>,
    #[serde(default)]
    pub invoice_number: Option<String>,
    #[serde(default)]
    pub invoice_date: Option<NaiveDate>,
    #[serde(default)]
    pub due_date: Option<NaiveDate>,
    #[serde(default)]
    pub supplier_name: Option<String>,
    #[serde(default)]
    pub supplier_address: Option<String>,
    #[serde(default)]
    pub supplier_vat_id: Option<String>,
    #[serde(default)]
    pub supplier_iban: Option<String>,
    #[serde(default)]
    pub customer_name: Option<String>,
    #[serde(default)]
    pub currency: Option<String>,
    #[serde(default)]
    pub subtotal: Option<f64>,
    #[serde(default)]
    pub vat_amount: Option<f64>,
    #[serde(default)]
    pub total: Option<f64>,
    #[serde(default)]
    pub po_reference: Option<String>,
    #[serde(default)]
    pub delivery_note_reference: Option<String>,
    /// On a credit note: the number of the invoice it corrects (`zu Rechnung Nr.`,
    /// `Original invoice`, `Facture d'origine`, `Korekta do faktury nr`). Matching links
    /// the credit note to that invoice through it.
    #[serde(default)]
    pub invoice_reference: Option<String>,
    #[serde(default)]
    pub line_items: Vec<LineItem>,
    /// How sure the provider is of each field it filled, by field name (the rules
    /// extractor: from the rule that produced the value; an LLM: its own judgement).
    /// A field without an entry is not judged; see [`Extraction::passes_quality_gate`].
    #[serde(default, deserialize_with = "null_as_empty")]
    pub field_confidence: BTreeMap<String, Confidence>,
    /// Set when the document is (or carries) a structured e-invoice: the provider the
    /// fields came from (`einvoice`, or the page path's after a fallback), the syntax,
    /// the profile, the validation findings ([`einvoice`]). Not part of the LLM's
    /// answer; absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub einvoice: Option<einvoice::EInvoiceSource>,
}

/// `null` where a model leaves the per-field confidence out reads as "none judged".
fn null_as_empty<'de, D>(deserializer: D) -> Result<BTreeMap<String, Confidence>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(Option::deserialize(deserializer)?.unwrap_or_default())
}

/// The fields the quality gate judges by their own confidence: without them a document
/// cannot be booked or matched.
pub const GATE_FIELDS: [&str; 4] = ["invoice_number", "invoice_date", "supplier_name", "total"];

/// The fields whose absence is listed in `missing_fields` by the rules extractor and
/// that the prompt asks the LLM to account for.
pub const CORE_FIELDS: [&str; 6] = [
    "document_type",
    "invoice_number",
    "invoice_date",
    "supplier_name",
    "currency",
    "total",
];

impl Extraction {
    /// Schema checks serde cannot express. The error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(currency) = &self.currency
            && !(currency.len() == 3 && currency.chars().all(|c| c.is_ascii_uppercase()))
        {
            return Err(format!("currency {currency:?} is not an ISO 4217 code"));
        }
        let amounts = [
            ("subtotal", self.subtotal),
            ("vat_amount", self.vat_amount),
            ("total", self.total),
        ];
        for (name, value) in amounts {
            if value.is_some_and(|v| !v.is_finite()) {
                return Err(format!("{name} is not a finite number"));
            }
        }
        Ok(())
    }

    /// The quality gate ingestion applies before completing a document (seed 003's,
    /// sharpened by per-field confidence): the extraction is successful, its overall
    /// confidence is not `low`, and none of the [`GATE_FIELDS`] that were filled has a
    /// `low` field confidence (a guessed total or supplier must not be booked unseen).
    /// Fields without a `field_confidence` entry are not judged, so an answer that
    /// carries no per-field confidence is gated as before.
    pub fn passes_quality_gate(&self) -> bool {
        self.extraction_successful
            && self.confidence != Confidence::Low
            && GATE_FIELDS
                .iter()
                .all(|field| self.field_confidence_of(field) != Some(Confidence::Low))
    }

    /// Whether a person should look at the document even though it passed the gate: an
    /// invoice or credit note lacks a gate field, or any filled field has `low`
    /// confidence. (Ingestion
    /// may copy this to `document.needs_human_review`; failing the gate implies it.)
    pub fn needs_human_review(&self) -> bool {
        let booked = matches!(
            self.document_type,
            Some(DocumentType::Invoice | DocumentType::CreditNote)
        );
        let gate_field_missing = booked
            && self
                .missing_fields
                .iter()
                .any(|f| GATE_FIELDS.contains(&f.as_str()));
        !self.passes_quality_gate()
            || gate_field_missing
            || self
                .field_confidence
                .values()
                .any(|c| *c == Confidence::Low)
    }

    /// The confidence recorded for `field`, if any.
    pub fn field_confidence_of(&self, field: &str) -> Option<Confidence> {
        self.field_confidence.get(field).copied()
    }
}

/// The instructions sent with every extraction request.
pub const SYSTEM_PROMPT: &str = r#"You extract structured data from business documents (invoices, credit notes, purchase orders, delivery notes) in any language (German, English, Dutch, French, Polish, Spanish, Italian, ...).
Answer with ONE JSON object and nothing else, with exactly these keys:
- "extraction_successful": boolean, false if the text is not a business document or unreadable
- "confidence": "high" | "medium" | "low", your honest confidence in the extracted values
- "missing_fields": array of the key names below that you could not find
- "document_type": "invoice" | "purchase_order" | "delivery_note" | "credit_note" | "other" (a corrective invoice / "Korekta" / "Avoir" / "Gutschrift" is a credit_note)
- "invoice_number": the document's own number (invoice, credit note, PO or delivery note number), string or null
- "invoice_date", "due_date": ISO 8601 dates (YYYY-MM-DD) or null
- "supplier_name", "supplier_address", "supplier_vat_id", "supplier_iban", "customer_name": strings or null. The supplier is the party that issued the document (seller, "Verkäufer", "Vendeur", "Sprzedawca", "Leverancier"), never the customer, a ship-to or attention line; the name without a label prefix. VAT id and IBAN without spaces.
- "currency": ISO 4217 code (EUR, USD, GBP, CHF, PLN, INR, ...) or null
- "subtotal" (net, before VAT), "vat_amount", "total" (gross, amount payable): JSON numbers with a dot as decimal separator, signed as printed (a credit note printed with minus signs gives negative amounts), or null
- "po_reference", "delivery_note_reference": referenced purchase order / delivery note numbers, or null
- "invoice_reference": on a credit note, the number of the invoice it corrects, else null
- "line_items": array of {"description": string, "quantity": number|null, "unit_price": number|null, "amount": number|null}
- "field_confidence": object mapping each key you filled (e.g. "total", "supplier_name") to "high" | "medium" | "low"
Never invent values: use null and list the key in missing_fields."#;

/// One extraction and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionRun {
    pub extraction: Extraction,
    /// `None` for the rules extractor.
    pub input_tokens: Option<i32>,
    pub output_tokens: Option<i32>,
    pub model: String,
}

/// The extraction provider chosen by `LLM_PROVIDER`.
#[derive(Debug, Clone)]
pub enum Extractor {
    Llm(LlmClient),
    /// The offline pattern extractor ([`rules`]).
    Rules,
}

impl Extractor {
    /// Whether the same text always gives the same result (a failed quality gate is then
    /// not worth retrying).
    pub fn is_deterministic(&self) -> bool {
        matches!(self, Extractor::Rules)
    }

    /// Extracts the contract from transcribed text. LLM failures are classified and
    /// retried in process (see [`LlmClient::complete_json`]); the rules extractor cannot
    /// fail.
    pub async fn extract(&self, text: &str) -> Result<ExtractionRun, LlmError> {
        match self {
            Extractor::Rules => Ok(ExtractionRun {
                extraction: rules::extract(text),
                input_tokens: None,
                output_tokens: None,
                model: "rules".into(),
            }),
            Extractor::Llm(client) => {
                let user = format!("Document text:\n<document>\n{text}\n</document>");
                let (mut extraction, completion) = client
                    .complete_json::<Extraction, _>(SYSTEM_PROMPT, &user, Extraction::validate)
                    .await?;
                // Where the fields came from is ours to record, never a model's to claim.
                extraction.einvoice = None;
                Ok(ExtractionRun {
                    extraction,
                    input_tokens: Some(completion.input_tokens),
                    output_tokens: Some(completion.output_tokens),
                    model: completion.model,
                })
            }
        }
    }
}

/// An id without separators: letters and digits only, upper case
/// (`FV/2024/03-15` = `FV20240315`): two prints of one id compare equal in this form.
pub fn normalise_id(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_uppercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_round_trips_through_json() {
        let json = r#"{
            "extraction_successful": true, "confidence": "high", "missing_fields": [],
            "document_type": "invoice", "invoice_number": "RE-2014-001",
            "invoice_date": "2014-05-07", "due_date": null, "currency": "EUR",
            "subtotal": 100.0, "vat_amount": 19.0, "total": 119.0,
            "line_items": [{"description": "Beratung", "quantity": 2, "unit_price": 50, "amount": 100}]
        }"#;
        let extraction: Extraction = serde_json::from_str(json).unwrap();
        assert_eq!(extraction.invoice_date, NaiveDate::from_ymd_opt(2014, 5, 7));
        assert_eq!(extraction.document_type, Some(DocumentType::Invoice));
        assert!(extraction.validate().is_ok());
        assert!(extraction.passes_quality_gate());
        let again: Extraction =
            serde_json::from_value(serde_json::to_value(&extraction).unwrap()).unwrap();
        assert_eq!(again, extraction);
    }

    #[test]
    fn a_lowercase_currency_fails_validation() {
        let mut extraction: Extraction =
            serde_json::from_str(r#"{"extraction_successful": true, "confidence": "high"}"#)
                .unwrap();
        extraction.currency = Some("eur".into());
        assert!(extraction.validate().unwrap_err().contains("currency"));
    }

    #[test]
    fn low_confidence_or_unsuccessful_fails_the_quality_gate() {
        let low: Extraction =
            serde_json::from_str(r#"{"extraction_successful": true, "confidence": "low"}"#)
                .unwrap();
        let failed: Extraction =
            serde_json::from_str(r#"{"extraction_successful": false, "confidence": "high"}"#)
                .unwrap();
        assert!(!low.passes_quality_gate());
        assert!(!failed.passes_quality_gate());
    }

    #[test]
    fn a_low_confidence_gate_field_fails_the_gate_and_other_fields_only_ask_for_review() {
        let mut e: Extraction = serde_json::from_str(
            r#"{"extraction_successful": true, "confidence": "high", "document_type": "invoice",
                "field_confidence": {"total": "high", "customer_name": "low"}}"#,
        )
        .unwrap();
        assert!(e.passes_quality_gate());
        assert!(
            e.needs_human_review(),
            "a low customer name is worth a look"
        );

        e.field_confidence.insert("total".into(), Confidence::Low);

        assert!(!e.passes_quality_gate());
        assert!(e.needs_human_review());
    }

    #[test]
    fn an_invoice_without_a_total_needs_review_and_a_delivery_note_does_not() {
        let invoice: Extraction = serde_json::from_str(
            r#"{"extraction_successful": true, "confidence": "medium", "document_type": "invoice",
                "missing_fields": ["total"]}"#,
        )
        .unwrap();
        let delivery_note: Extraction = serde_json::from_str(
            r#"{"extraction_successful": true, "confidence": "high", "document_type": "delivery_note",
                "missing_fields": ["total", "currency"]}"#,
        )
        .unwrap();

        assert!(invoice.passes_quality_gate());
        assert!(invoice.needs_human_review());
        assert!(!delivery_note.needs_human_review());
    }

    #[test]
    fn an_answer_without_field_confidence_is_gated_as_before() {
        let e: Extraction = serde_json::from_str(
            r#"{"extraction_successful": true, "confidence": "medium", "invoice_reference": "RE-1"}"#,
        )
        .unwrap();

        assert!(e.field_confidence.is_empty());
        assert!(e.passes_quality_gate());
        assert_eq!(e.invoice_reference.as_deref(), Some("RE-1"));
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["invoice_reference"], "RE-1");
    }

    #[test]
    fn a_null_field_confidence_reads_as_none_judged_and_an_unknown_level_is_a_schema_error() {
        let e: Extraction = serde_json::from_str(
            r#"{"extraction_successful": true, "confidence": "high", "field_confidence": null}"#,
        )
        .unwrap();
        assert!(e.field_confidence.is_empty());

        let err = serde_json::from_str::<Extraction>(
            r#"{"extraction_successful": true, "confidence": "high", "field_confidence": {"total": "sure"}}"#,
        );
        assert!(err.is_err());
    }

    #[test]
    fn the_prompt_asks_for_every_field_of_the_contract() {
        let e: Extraction =
            serde_json::from_str(r#"{"extraction_successful": true, "confidence": "high"}"#)
                .unwrap();
        let json = serde_json::to_value(&e).unwrap();
        for key in json.as_object().unwrap().keys() {
            assert!(
                SYSTEM_PROMPT.contains(&format!("\"{key}\"")),
                "the prompt does not name {key}"
            );
        }
    }

    #[test]
    fn an_unknown_confidence_is_a_schema_error() {
        let err = serde_json::from_str::<Extraction>(
            r#"{"extraction_successful": true, "confidence": "certain"}"#,
        );
        assert!(err.is_err());
    }
}
