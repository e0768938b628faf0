//! The `bookingProposal` part of Maesn's "Create booking proposal async"
//! (`POST /accounting/bookingProposals/async`, docs.maesn.com, request schema
//! `CreateBookingProposalRequestDtoV2`), built from the document's extraction.
//!
//! The document's `structured_data` is read as [`Extraction`], the one type ingestion
//! writes it from, so a renamed field stops the build here instead of vanishing from
//! what DATEV receives. Each field of the proposal comes from one field of the
//! extraction:
//!
//! | Maesn field | extraction field | format |
//! |---|---|---|
//! | `id` | the document id | UUID (Maesn links the uploaded file to the proposal by it) |
//! | `number` | `invoice_number` | text |
//! | `bookingProposalDate` | `invoice_date` | ISO 8601 date-time in UTC, `2025-07-14T00:00:00Z` (Maesn's standardized dates) |
//! | `dueDate` | `due_date` | as above |
//! | `currency` | `currency` | ISO 4217 code |
//! | `totalGrossAmount` | `total` | number, major units |
//! | `vatId` | `supplier_vat_id` | text, without spaces |
//! | `orderId` | `po_reference` | text |
//! | `contact.name` | `supplier_name` | text |
//! | `bankAccount.iban` | `supplier_iban` | text, without spaces |
//! | `lineItems[].description`, `.totalNetAmount` | `line_items[].description`, `.amount` | text, number |
//!
//! A field the extraction did not find is left out, never sent empty or as zero: DATEV's
//! own validation then says what is missing.

use chrono::NaiveDate;
use serde::Serialize;
use uuid::Uuid;

use crate::extract::Extraction;

/// What the `bookingProposal` part holds (the subset of Maesn's schema docflow fills).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalBody {
    pub id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub booking_proposal_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_gross_amount: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vat_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact: Option<Contact>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank_account: Option<BankAccount>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub line_items: Vec<ProposalLine>,
}

/// `contact`: the supplier of an incoming invoice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contact {
    pub name: String,
}

/// `bankAccount`: where the supplier is paid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BankAccount {
    pub iban: String,
}

/// One of `lineItems`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_net_amount: Option<f64>,
}

/// Maesn's standardized date: ISO 8601, a date-time in UTC.
pub fn maesn_date(date: NaiveDate) -> String {
    format!("{}T00:00:00Z", date.format("%Y-%m-%d"))
}

/// Text that holds something, trimmed.
fn text(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The proposal for document `id` from its extraction (see the module docs' table).
pub fn proposal_body(id: Uuid, extraction: &Extraction) -> ProposalBody {
    ProposalBody {
        id,
        number: text(&extraction.invoice_number),
        booking_proposal_date: extraction.invoice_date.map(maesn_date),
        due_date: extraction.due_date.map(maesn_date),
        currency: text(&extraction.currency).map(|c| c.to_ascii_uppercase()),
        total_gross_amount: extraction.total.filter(|t| t.is_finite()),
        vat_id: text(&extraction.supplier_vat_id)
            .map(|id| id.chars().filter(|c| !c.is_whitespace()).collect()),
        order_id: text(&extraction.po_reference),
        contact: text(&extraction.supplier_name).map(|name| Contact { name }),
        bank_account: text(&extraction.supplier_iban).map(|iban| BankAccount {
            iban: iban.chars().filter(|c| !c.is_whitespace()).collect(),
        }),
        line_items: extraction
            .line_items
            .iter()
            .map(|line| ProposalLine {
                description: Some(line.description.trim().to_owned()).filter(|d| !d.is_empty()),
                total_net_amount: line.amount.filter(|a| a.is_finite()),
            })
            .filter(|line| line.description.is_some() || line.total_net_amount.is_some())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::LineItem;

    fn extraction() -> Extraction {
        serde_json::from_value(serde_json::json!({
            "extraction_successful": true,
            "confidence": "high",
            "invoice_number": " RE-2026-0042 ",
            "invoice_date": "2026-01-15",
            "due_date": "2026-02-14",
            "supplier_name": "Lieferant GmbH",
            "supplier_vat_id": "DE123456789",
            "supplier_iban": "DE89 3704 0044 0532 0130 00",
            "currency": "eur",
            "subtotal": 100.0,
            "vat_amount": 19.0,
            "total": 119.0,
            "po_reference": "PO-4711",
        }))
        .unwrap()
    }

    #[test]
    fn every_field_the_extraction_knows_reaches_the_proposal_under_maesns_name() {
        let mut e = extraction();
        e.line_items = vec![LineItem {
            description: "Druckerpapier A4".into(),
            quantity: Some(10.0),
            unit_price: Some(10.0),
            amount: Some(100.0),
        }];
        let id = Uuid::new_v4();

        let body = serde_json::to_value(proposal_body(id, &e)).unwrap();

        assert_eq!(
            body,
            serde_json::json!({
                "id": id,
                "number": "RE-2026-0042",
                "bookingProposalDate": "2026-01-15T00:00:00Z",
                "dueDate": "2026-02-14T00:00:00Z",
                "currency": "EUR",
                "totalGrossAmount": 119.0,
                "vatId": "DE123456789",
                "orderId": "PO-4711",
                "contact": {"name": "Lieferant GmbH"},
                "bankAccount": {"iban": "DE89370400440532013000"},
                "lineItems": [{"description": "Druckerpapier A4", "totalNetAmount": 100.0}],
            })
        );
    }

    #[test]
    fn what_the_extraction_did_not_find_is_left_out_not_sent_empty() {
        let e: Extraction = serde_json::from_value(serde_json::json!({
            "extraction_successful": false,
            "confidence": "low",
            "invoice_number": "  ",
        }))
        .unwrap();
        let id = Uuid::new_v4();

        let body = serde_json::to_value(proposal_body(id, &e)).unwrap();

        assert_eq!(body, serde_json::json!({ "id": id }));
    }
}
