//! The extraction contract: what ingestion turns a transcribed document into, whichever
//! provider produced it (an LLM, or the offline [`rules`] extractor).
//!
//! The JSON shape is the contract with the LLM prompt, the `structured_data` column and
//! matching: `extraction_successful`, `confidence` (high/medium/low), `missing_fields`,
//! then the document's fields. Dates are ISO 8601 (`2014-05-07`), amounts are JSON
//! numbers, currency is ISO 4217. An answer that does not deserialize or validate is a
//! transient error (the next LLM answer may be fine).
//!
//! [`Extraction`] is the one type of a document's data from ingestion to matching and
//! output: ingestion stores it with [`Extraction::to_stored`], every reader takes it back
//! with [`Extraction::from_stored`] and reads its fields. The stored JSON carries
//! `schema_version` ([`SCHEMA_VERSION`]); keys of earlier shapes are read through
//! `#[serde(alias)]` (`po_number` for `po_reference`, …). Data that does not read as an
//! `Extraction` is an error naming the reason, never a document read as empty.

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

/// The version of the stored shape ([`Extraction::to_stored`]) this build writes. Data
/// stored before the field existed reads as version 1: the same keys, and the older
/// variants the aliases below accept.
pub const SCHEMA_VERSION: u32 = 2;

fn unversioned() -> u32 {
    1
}

/// One extraction result. Absent keys deserialize as `null`/empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// The shape the data was stored in ([`SCHEMA_VERSION`]). Not part of the provider's
    /// answer: only [`Extraction::to_stored`] writes it.
    #[serde(default = "unversioned", skip_serializing)]
    pub schema_version: u32,
    pub extraction_successful: bool,
    pub confidence: Confidence,
    #[serde(default)]
    pub missing_fields: Vec<String>,
    #[serde(default)]
    pub document_type: Option<DocumentType>,
    /// The document's own number, whatever its type (invoice, credit note, order or
    /// delivery note number).
    #[serde(
        default,
        alias = "document_number",
        alias = "number",
        alias = "credit_note_number"
    )]
    pub invoice_number: Option<String>,
    /// The document's own date, whatever its type.
    #[serde(
        default,
        alias = "document_date",
        alias = "order_date",
        alias = "delivery_date"
    )]
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
    /// The purchase order(s) cited; on a purchase order, its own number may stand here.
    /// Several are separated by commas.
    #[serde(
        default,
        alias = "po_number",
        alias = "purchase_order_number",
        alias = "purchase_order_reference",
        alias = "order_number",
        alias = "order_reference"
    )]
    pub po_reference: Option<String>,
    /// The delivery note(s) cited; on a delivery note, its own number may stand here.
    #[serde(default, alias = "delivery_note_number")]
    pub delivery_note_reference: Option<String>,
    /// On a credit note: the number of the invoice it corrects (`zu Rechnung Nr.`,
    /// `Original invoice`, `Facture d'origine`, `Korekta do faktury nr`). Matching links
    /// the credit note to that invoice through it.
    #[serde(default, alias = "corrected_invoice_number")]
    pub invoice_reference: Option<String>,
    /// On a corrected invoice (UNTDID 1001 `384`, a `Rechnungskorrektur` that replaces an
    /// earlier invoice rather than crediting it): the number of the invoice it replaces
    /// (BT-25). Matching links the two; output books neither beside the other without a
    /// person's decision.
    #[serde(default)]
    pub replaces_invoice: Option<String>,
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

/// Stored data that is not an [`Extraction`]: the reason, for the log and the document's
/// error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the document's extracted data is not an extraction of schema version {SCHEMA_VERSION} or earlier: {reason}"
)]
pub struct UnreadableData {
    pub reason: String,
}

impl Extraction {
    /// An extraction that found nothing: what a document without data compares as.
    pub fn empty() -> Extraction {
        Extraction {
            schema_version: SCHEMA_VERSION,
            extraction_successful: false,
            confidence: Confidence::Low,
            missing_fields: Vec::new(),
            document_type: None,
            invoice_number: None,
            invoice_date: None,
            due_date: None,
            supplier_name: None,
            supplier_address: None,
            supplier_vat_id: None,
            supplier_iban: None,
            customer_name: None,
            currency: None,
            subtotal: None,
            vat_amount: None,
            total: None,
            po_reference: None,
            delivery_note_reference: None,
            invoice_reference: None,
            replaces_invoice: None,
            line_items: Vec::new(),
            field_confidence: BTreeMap::new(),
            einvoice: None,
        }
    }

    /// What `document.structured_data` holds: the JSON of this extraction, stamped with
    /// the current [`SCHEMA_VERSION`].
    pub fn to_stored(&self) -> serde_json::Value {
        let mut stored = serde_json::to_value(self).expect("an extraction is plain JSON");
        stored["schema_version"] = SCHEMA_VERSION.into();
        stored
    }

    /// Reads `document.structured_data` back. Keys of earlier versions are accepted
    /// through their aliases; anything else that is not an extraction (a wrong type, a
    /// key given twice under two of its names, a newer version that renamed a field) is
    /// an [`UnreadableData`] saying why.
    pub fn from_stored(stored: &serde_json::Value) -> Result<Extraction, UnreadableData> {
        let mut extraction = Extraction::deserialize(stored).map_err(|e| UnreadableData {
            reason: e.to_string(),
        })?;
        // Data stored before the convention may carry a credit note's minus signs.
        extraction.settle_credit_sign();
        Ok(extraction)
    }

    /// The house convention for a credit note's amounts: their sizes, the way EN 16931
    /// writes a 381 (BT-106 to BT-115 positive; BT-3 says it is a credit). A credit note
    /// whose total is negative (a page printed with minus signs; an invoice code with a
    /// negative BT-112, a credit in substance) is turned round: subtotal, VAT, total and
    /// every line amount are negated, and each line's quantity (when negative) or unit
    /// price, so the lines still add up to the totals. A credit note with a positive total
    /// is left as it is: a negative line on it is a charge against the credit. Every
    /// producer (the rules, an LLM's answer, the e-invoice reader) and
    /// [`Extraction::from_stored`] apply it, so every reader sees one convention.
    pub fn settle_credit_sign(&mut self) {
        if self.document_type != Some(DocumentType::CreditNote) {
            return;
        }
        let negative = match self.total {
            Some(total) => total < 0.0,
            None => self.subtotal.is_some_and(|s| s < 0.0),
        };
        if !negative {
            return;
        }
        let flip = |v: &mut Option<f64>| *v = v.map(|x| -x);
        flip(&mut self.subtotal);
        flip(&mut self.vat_amount);
        flip(&mut self.total);
        for line in &mut self.line_items {
            flip(&mut line.amount);
            if line.quantity.is_some_and(|q| q < 0.0) {
                flip(&mut line.quantity);
            } else {
                flip(&mut line.unit_price);
            }
        }
    }

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
    /// invoice or credit note lacks a gate field, any filled field has `low` confidence,
    /// an e-invoice broke a rule about its money or parties
    /// ([`einvoice::EInvoiceSource::review`]), or a hybrid's page and XML disagree.
    /// Ingestion records it as `document.needs_human_review`.
    pub fn needs_human_review(&self) -> bool {
        let einvoice_review = self
            .einvoice
            .as_ref()
            .is_some_and(|s| !s.review.is_empty() || !s.disagreements.is_empty());
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
            || einvoice_review
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

/// A test's extraction from the JSON of its fields: `extraction_successful` and
/// `confidence` default to `true` and `high`. Panics on JSON that is not an extraction.
#[cfg(test)]
pub(crate) fn test_data(fields: serde_json::Value) -> Extraction {
    let mut fields = fields;
    let object = fields.as_object_mut().expect("fields are a JSON object");
    object
        .entry("extraction_successful")
        .or_insert(serde_json::Value::Bool(true));
    object.entry("confidence").or_insert("high".into());
    Extraction::from_stored(&fields).unwrap_or_else(|e| panic!("{e}: {fields}"))
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
- "replaces_invoice": on a corrected invoice that replaces an earlier invoice (not a credit note: "Rechnungskorrektur", "ersetzt Rechnung Nr.", "corrected invoice", type code 384), the number of the invoice it replaces, else null
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
                extraction.settle_credit_sign();
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
    fn the_stored_shape_carries_the_schema_version_and_reads_back_the_same() {
        let e = test_data(serde_json::json!({
            "document_type": "invoice", "invoice_number": "RE-1", "total": 119.0,
            "po_reference": "PO-7", "line_items": [{"description": "Toner", "quantity": 2}]
        }));
        let stored = e.to_stored();
        assert_eq!(stored["schema_version"], SCHEMA_VERSION);
        let back = Extraction::from_stored(&stored).unwrap();
        assert_eq!(
            back,
            Extraction {
                schema_version: SCHEMA_VERSION,
                ..e
            }
        );
    }

    #[test]
    fn keys_of_earlier_shapes_read_as_their_fields() {
        let stored = serde_json::json!({
            "extraction_successful": true, "confidence": "medium",
            "document_number": "LS-4711", "delivery_date": "2024-03-01",
            "po_number": "4500012345", "corrected_invoice_number": "RE-9"
        });
        let e = Extraction::from_stored(&stored).unwrap();
        assert_eq!(e.schema_version, 1);
        assert_eq!(e.invoice_number.as_deref(), Some("LS-4711"));
        assert_eq!(e.invoice_date, NaiveDate::from_ymd_opt(2024, 3, 1));
        assert_eq!(e.po_reference.as_deref(), Some("4500012345"));
        assert_eq!(e.invoice_reference.as_deref(), Some("RE-9"));
    }

    #[test]
    fn data_that_is_not_an_extraction_is_unreadable_with_the_reason() {
        for (stored, reason) in [
            (
                serde_json::json!({"confidence": "high"}),
                "extraction_successful",
            ),
            (
                serde_json::json!({"extraction_successful": true, "confidence": "high", "total": "119,00"}),
                "invalid type",
            ),
            (
                serde_json::json!({"extraction_successful": true, "confidence": "high",
                                   "invoice_number": "RE-1", "number": "RE-2"}),
                "duplicate field `invoice_number`",
            ),
            (serde_json::json!([1, 2]), "invalid type"),
        ] {
            let error = Extraction::from_stored(&stored).unwrap_err();
            assert!(error.to_string().contains(reason), "{stored}: {error}");
        }
    }

    #[test]
    fn a_credit_note_printed_with_minus_signs_keeps_its_sizes_and_its_lines_add_up() {
        let mut e: Extraction = serde_json::from_value(serde_json::json!({
            "extraction_successful": true, "confidence": "high",
            "document_type": "credit_note",
            "subtotal": -100.0, "vat_amount": -19.0, "total": -119.0,
            "line_items": [
                {"description": "Rücksendung", "quantity": -2.0, "unit_price": 40.0, "amount": -80.0},
                {"description": "Gutschrift", "quantity": 1.0, "unit_price": -20.0, "amount": -20.0}
            ]
        }))
        .unwrap();
        e.settle_credit_sign();
        assert_eq!(
            (e.subtotal, e.vat_amount, e.total),
            (Some(100.0), Some(19.0), Some(119.0))
        );
        for line in &e.line_items {
            let (q, p, a) = (
                line.quantity.unwrap(),
                line.unit_price.unwrap(),
                line.amount.unwrap(),
            );
            assert!(a > 0.0 && (q * p - a).abs() < 1e-9, "{line:?}");
        }
        // Once settled it stays settled: a second pass changes nothing.
        let settled = e.clone();
        e.settle_credit_sign();
        assert_eq!(e, settled);
    }

    #[test]
    fn a_positive_credit_note_and_a_negative_invoice_are_left_as_they_are() {
        let credit = test_data(serde_json::json!({
            "document_type": "credit_note", "total": 90.0,
            "line_items": [
                {"description": "Gutschrift", "amount": 100.0},
                {"description": "Bearbeitungsgebühr", "amount": -10.0}
            ]
        }));
        assert_eq!(credit.total, Some(90.0));
        assert_eq!(credit.line_items[1].amount, Some(-10.0));
        // An invoice whose amount due is negative is a refund, not ours to turn round.
        let invoice = test_data(serde_json::json!({"document_type": "invoice", "total": -5.0}));
        assert_eq!(invoice.total, Some(-5.0));
    }

    #[test]
    fn a_credit_note_stored_with_minus_signs_reads_back_as_its_sizes() {
        let stored = serde_json::json!({
            "extraction_successful": true, "confidence": "high",
            "document_type": "credit_note", "total": -190.04, "subtotal": -159.7
        });
        let e = Extraction::from_stored(&stored).unwrap();
        assert_eq!((e.subtotal, e.total), (Some(159.7), Some(190.04)));
    }

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
