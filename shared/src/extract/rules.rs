//! The offline `rules` extractor: explicit patterns over transcribed text, no model.
//!
//! It reads text as PDF text extraction or OCR produce it — lines, columns separated by
//! runs of spaces, labels with their values beside or under them — in German, Dutch and
//! English layouts. Each field has its own module; this one puts them together and
//! judges the result:
//!
//! - `confidence` is `high` only when the document type, number, date, supplier,
//!   currency and total were found and the amounts were checked (net + VAT = gross as
//!   printed, or the items add up to the net or gross) with nothing contradicting them;
//!   `medium` when at least three of number, date, supplier and total were found;
//!   `low` otherwise. Delivery notes carry no amounts, so for them number, date and
//!   supplier are the core.
//! - `missing_fields` lists the [`CORE_FIELDS`](super::CORE_FIELDS) not found (and
//!   `document_type` when no heading names a known type), plus `subtotal` and
//!   `vat_amount` on invoices and credit notes, which booking needs.
//! - `extraction_successful` is false when nothing invoice-like was found: no known
//!   type, no document number, and no labelled total with a date or supplier.
//!
//! Nothing is invented: a value is either read from the text or derived arithmetically
//! from values read (the third of net/VAT/gross, a due date from payment terms, EUR for
//! a euro-area German or Dutch text with amounts).
//!
//! Choices worth knowing: on a purchase order, its own number is both `invoice_number`
//! and `po_reference`, and the supplier is the addressed vendor (the issuer is the
//! customer); on a delivery note its own number is both `invoice_number` and
//! `delivery_note_reference`. An "invoice" whose total is negative is a credit note.

mod amount;
mod date;
pub(crate) mod ids;
mod items;
mod kind;
mod labels;
mod parties;
mod text;
mod totals;

#[cfg(test)]
mod documents;

use std::sync::LazyLock;

use regex::Regex;

use self::amount::close;
use self::parties::Parties;
use self::text::{Doc, Lang, col_of};
use super::{CORE_FIELDS, Confidence, DocumentType, Extraction};

/// What [`extract`] holds at its peak for a text of `text_len` bytes: the text and a few
/// copies of its lines (the blocking pool's memory budget, `docflow::ocr::on_cpu`).
pub fn job_bytes(text_len: usize) -> u64 {
    text_len as u64 * 4
}

/// Extracts the contract's fields from transcribed text. Never fails: what is not found
/// is `None` and named in `missing_fields`. CPU work: callers run it on the blocking pool
/// within its budget (`on_cpu(job_bytes(len), …)`).
pub fn extract(text: &str) -> Extraction {
    let doc = Doc::new(text);
    let mut kind = kind::classify(&doc);
    let items = items::line_items(&doc);
    let totals = totals::totals(&doc, &items.rows);
    if kind == DocumentType::Invoice && totals.total.is_some_and(|t| t < 0.0) {
        kind = DocumentType::CreditNote;
    }
    let has_amounts = totals.total.is_some()
        || totals.subtotal.is_some()
        || items.items.iter().any(|i| i.amount.is_some());
    let printed_currency = totals::currency(&doc);
    let currency_printed = printed_currency.is_some();
    let currency = printed_currency.or_else(|| totals::default_currency(&doc, has_amounts));
    let month_first = is_american(&doc, currency.as_deref());
    let number = labels::own_number(&doc, kind);
    let date = labels::document_date(&doc, kind, month_first);
    let invoice_date = date.map(|d| d.0);
    let labelled_due = labels::due_date(&doc, invoice_date, month_first)
        .filter(|due| invoice_date.is_none_or(|issued| due.0 >= issued));
    let parties = parties::parties(&doc, kind);
    let (supplier_vat_id, supplier_iban) = supplier_ids(&doc, kind, &parties);
    let invoice_number = number.as_ref().map(|n| n.0.clone());
    let po_reference = match kind {
        DocumentType::PurchaseOrder => invoice_number.clone(),
        _ => labels::po_reference(&doc),
    };
    let delivery_note_reference = match kind {
        DocumentType::DeliveryNote => invoice_number.clone(),
        DocumentType::PurchaseOrder => None,
        _ => labels::delivery_note_reference(&doc),
    };
    let invoice_reference = match kind {
        DocumentType::CreditNote => labels::invoice_reference(&doc)
            .filter(|r| invoice_number.as_deref().is_none_or(|own| own != r)),
        _ => None,
    };

    let mut extraction = Extraction {
        schema_version: super::SCHEMA_VERSION,
        extraction_successful: false,
        confidence: Confidence::Low,
        missing_fields: Vec::new(),
        document_type: Some(kind),
        invoice_number,
        invoice_date,
        due_date: labelled_due.map(|d| d.0),
        supplier_name: parties.supplier.clone(),
        supplier_address: parties.supplier_address.clone(),
        supplier_vat_id,
        supplier_iban,
        customer_name: parties.customer.clone(),
        currency,
        subtotal: totals.subtotal,
        vat_amount: totals.vat,
        total: totals.total,
        po_reference,
        delivery_note_reference,
        invoice_reference,
        replaces_invoice: None,
        line_items: items.items.clone(),
        field_confidence: Default::default(),
        einvoice: None,
    };
    extraction.missing_fields = missing_fields(&extraction, kind);
    let items_add_up = {
        let sum: f64 = items.items.iter().filter_map(|i| i.amount).sum();
        !items.items.is_empty()
            && items.items.iter().all(|i| i.amount.is_some())
            && [totals.subtotal, totals.total]
                .into_iter()
                .flatten()
                .any(|t| close(sum, t))
    };
    let checked = totals.agree || items_add_up;
    let contradicted = totals.disagree || !items.consistent;
    let e = &extraction;
    let core = [
        e.invoice_number.is_some(),
        e.invoice_date.is_some(),
        e.supplier_name.is_some(),
        e.total.is_some() || kind == DocumentType::DeliveryNote,
    ];
    let found = core.iter().filter(|&&f| f).count();
    let successful = kind != DocumentType::Other
        || e.invoice_number.is_some()
        || (e.total.is_some() && (e.invoice_date.is_some() || e.supplier_name.is_some()));
    let money_checked = checked || kind == DocumentType::DeliveryNote && !contradicted;
    let has_currency = e.currency.is_some();
    extraction.extraction_successful = successful;
    extraction.confidence = if !successful {
        Confidence::Low
    } else if found == 4
        && kind != DocumentType::Other
        && (has_currency || kind == DocumentType::DeliveryNote)
        && money_checked
        && !contradicted
    {
        Confidence::High
    } else if found >= 3 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    let money = if totals.agree {
        Confidence::High
    } else if contradicted {
        Confidence::Low
    } else {
        Confidence::Medium
    };
    let of = |evidence: labels::Evidence| match evidence {
        labels::Evidence::Labelled => Confidence::High,
        labels::Evidence::Inferred => Confidence::Medium,
        labels::Evidence::Weak => Confidence::Low,
    };
    let supplier = match parties.supplier_source {
        parties::SupplierSource::Labelled => Confidence::High,
        parties::SupplierSource::LegalForm => Confidence::High,
        parties::SupplierSource::Letterhead | parties::SupplierSource::None => Confidence::Medium,
    };
    let e = &extraction;
    let judged: [(&str, bool, Confidence); 17] = [
        (
            "document_type",
            true,
            if kind == DocumentType::Other {
                Confidence::Low
            } else {
                Confidence::High
            },
        ),
        (
            "invoice_number",
            e.invoice_number.is_some(),
            number.map_or(Confidence::Low, |n| of(n.1)),
        ),
        (
            "invoice_date",
            e.invoice_date.is_some(),
            date.map_or(Confidence::Low, |d| of(d.1)),
        ),
        (
            "due_date",
            e.due_date.is_some(),
            labelled_due.map_or(Confidence::Low, |d| of(d.1)),
        ),
        ("supplier_name", e.supplier_name.is_some(), supplier),
        (
            "supplier_address",
            e.supplier_address.is_some(),
            Confidence::Medium,
        ),
        (
            "supplier_vat_id",
            e.supplier_vat_id.is_some(),
            Confidence::High,
        ),
        ("supplier_iban", e.supplier_iban.is_some(), Confidence::High),
        (
            "customer_name",
            e.customer_name.is_some(),
            Confidence::Medium,
        ),
        (
            "currency",
            e.currency.is_some(),
            if currency_printed {
                Confidence::High
            } else {
                Confidence::Medium
            },
        ),
        ("subtotal", e.subtotal.is_some(), money),
        ("vat_amount", e.vat_amount.is_some(), money),
        ("total", e.total.is_some(), money),
        ("po_reference", e.po_reference.is_some(), Confidence::High),
        (
            "delivery_note_reference",
            e.delivery_note_reference.is_some(),
            Confidence::High,
        ),
        (
            "invoice_reference",
            e.invoice_reference.is_some(),
            Confidence::High,
        ),
        (
            "line_items",
            !e.line_items.is_empty(),
            if items.consistent {
                Confidence::High
            } else {
                Confidence::Medium
            },
        ),
    ];
    extraction.field_confidence = judged
        .into_iter()
        .filter(|(_, filled, _)| *filled)
        .map(|(field, _, confidence)| (field.to_owned(), confidence))
        .collect();
    extraction.settle_credit_sign();
    extraction
}

fn missing_fields(e: &Extraction, kind: DocumentType) -> Vec<String> {
    let present = |field: &str| match field {
        "document_type" => kind != DocumentType::Other,
        "invoice_number" => e.invoice_number.is_some(),
        "invoice_date" => e.invoice_date.is_some(),
        "supplier_name" => e.supplier_name.is_some(),
        "currency" => e.currency.is_some(),
        "total" => e.total.is_some(),
        "subtotal" => e.subtotal.is_some(),
        "vat_amount" => e.vat_amount.is_some(),
        _ => true,
    };
    let booked = matches!(kind, DocumentType::Invoice | DocumentType::CreditNote);
    let extra: &[&str] = if booked {
        &["subtotal", "vat_amount"]
    } else {
        &[]
    };
    CORE_FIELDS
        .iter()
        .chain(extra)
        .filter(|f| !present(f))
        .map(|f| f.to_string())
        .collect()
}

/// Whether ambiguous numeric dates are month-first: an English text in dollars, or one
/// writing `April 19, 2014`, or with a US `ST 12345` address.
fn is_american(doc: &Doc, currency: Option<&str>) -> bool {
    static US_ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC)\s+\d{5}(?:-\d{4})?\b|(?i:sales\s+tax)")
            .unwrap()
    });
    doc.lang == Lang::En
        && (currency == Some("USD")
            || doc.lines.iter().any(|l| {
                US_ADDRESS.is_match(&l.text)
                    || date::dates_in(&l.text, false)
                        .iter()
                        .any(|h| h.month_name_first)
            }))
}

/// The supplier's VAT id and IBAN: the first ones not marked as the customer's
/// (`Ihre USt-IdNr.`, `Customer VAT`, `Uw BTW-nummer`) nor in the recipient block. On a
/// purchase order the issuer is the customer, so only ids in the vendor block count.
fn supplier_ids(
    doc: &Doc,
    kind: DocumentType,
    parties: &Parties,
) -> (Option<String>, Option<String>) {
    static CUSTOMER_MARK: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:ihre?|your|uw|kunden?|customer|client|cliente|klant|käufer|buyer|empfänger|recipient|afnemer|bill\s*to|nabywca|odbiorca|acheteur|destinatario|destinataire)\b")
            .unwrap()
    });
    let is_customers = |i: usize, pos: usize| {
        let line = &doc.lines[i].text;
        let col = col_of(line, pos);
        let cell_start = doc.lines[i]
            .cells
            .iter()
            .rev()
            .find(|c| c.col <= col)
            .map_or(0, |c| c.col);
        let before: String = line
            .chars()
            .skip(cell_start)
            .take(col - cell_start)
            .collect();
        let label_above = before.trim().is_empty()
            && i > 0
            && doc.lines[i - 1].cell_near(col, 10).is_some_and(|c| {
                CUSTOMER_MARK.is_match(&c.text) && !c.text.chars().any(|c| c.is_ascii_digit())
            });
        let in_block = parties.recipient_blocks.iter().any(|b| b.contains(i, col));
        let marked = CUSTOMER_MARK.is_match(&before) || label_above;
        if kind == DocumentType::PurchaseOrder {
            !in_block
        } else {
            marked || in_block
        }
    };
    let vat = doc.lines.iter().enumerate().find_map(|(i, l)| {
        ids::vat_ids_in(&l.text)
            .into_iter()
            .find(|(pos, _)| !is_customers(i, *pos))
            .map(|(_, id)| id)
    });
    // An IBAN may be printed without its `PL` (a Polish NRB) or broken across two lines.
    let iban = doc.lines.iter().enumerate().find_map(|(i, l)| {
        let mut found = ids::ibans_in(&l.text);
        if found.is_empty()
            && let Some(nrb) = ids::nrb_in(&l.text)
        {
            found.push(nrb);
        }
        if found.is_empty()
            && let Some(next) = doc.lines.get(i + 1)
        {
            let joined = format!("{} {}", l.text, next.text.trim_start());
            found = ids::ibans_in(&joined)
                .into_iter()
                .filter(|(pos, _)| *pos < l.text.len())
                .collect();
        }
        found
            .into_iter()
            .find(|(pos, _)| !is_customers(i, *pos))
            .map(|(_, iban)| iban)
    });
    (vat, iban)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_is_not_a_successful_extraction() {
        let extraction = extract("");

        assert!(!extraction.extraction_successful);
        assert_eq!(extraction.confidence, Confidence::Low);
        assert!(extraction.validate().is_ok());
        assert_eq!(extraction.missing_fields.len(), CORE_FIELDS.len());
    }

    #[test]
    fn prose_without_invoice_fields_is_not_a_successful_extraction() {
        let text = "Dear Anna,\n\nthank you for the lovely evening on 19 April 2014. The wine was\n\
                    about 30 euros, which was worth it. Let us meet again in May.\n\nBest, Tom\n";

        let extraction = extract(text);

        assert!(!extraction.extraction_successful);
        assert!(!extraction.passes_quality_gate());
        assert_eq!(extraction.total, None);
        assert!(extraction.validate().is_ok());
    }

    #[test]
    fn a_credit_note_names_the_invoice_it_corrects_and_an_invoice_does_not() {
        let credit = extract(
            "ACME GmbH\nGutschrift Nr. GS-7\nzu Rechnung Nr. RE-1001 vom 01.04.2024\nGesamtbetrag -119,00 EUR\n",
        );
        let invoice = extract(
            "ACME GmbH\nRechnung Nr. RE-1002\nzu Ihrer Bestellung 4711\nGesamtbetrag 119,00 EUR\n",
        );

        assert_eq!(credit.document_type, Some(DocumentType::CreditNote));
        assert_eq!(credit.invoice_number.as_deref(), Some("GS-7"));
        assert_eq!(credit.invoice_reference.as_deref(), Some("RE-1001"));
        assert_eq!(invoice.invoice_reference, None);
    }

    #[test]
    fn field_confidence_follows_the_rule_that_found_the_value() {
        let labelled = extract(
            "ACME GmbH\nRechnung\nRechnungsnummer: RE-1\nRechnungsdatum: 07.05.2024\nNetto 100,00 EUR\nMwSt 19 % 19,00 EUR\nBrutto 119,00 EUR\n",
        );
        let guessed = extract("Nr.: 4711\nBerlin, 07.05.2024\nSumme 119,00\n");

        let c = |e: &Extraction, f: &str| e.field_confidence_of(f);
        assert_eq!(c(&labelled, "invoice_number"), Some(Confidence::High));
        assert_eq!(c(&labelled, "invoice_date"), Some(Confidence::High));
        assert_eq!(c(&labelled, "total"), Some(Confidence::High));
        assert_eq!(c(&labelled, "currency"), Some(Confidence::High));
        assert_eq!(c(&guessed, "invoice_number"), Some(Confidence::Low));
        assert_eq!(c(&guessed, "invoice_date"), Some(Confidence::Medium));
        assert_eq!(c(&guessed, "total"), Some(Confidence::Medium));
        assert_eq!(
            c(&guessed, "supplier_name"),
            None,
            "nothing found, nothing judged"
        );
        assert!(!guessed.passes_quality_gate());
    }

    #[test]
    fn an_iban_broken_across_two_lines_and_a_bill_to_beside_a_deliver_to_are_read() {
        let text = "Brightwater Utilities Ltd\nRiverside House, 2 Water Lane\nNorwich NR3 1AB\n\n\
                    INVOICE\nInvoice No: BW-55012\n\n\
                    Deliver to:                              Invoice to:\n\
                    Site Office                              Anglia Homes Ltd\n\
                    Plot 4, Mill Road                        18 King Street\n\n\
                    Net 30 days\n\
                    Net          1,250.00\nVAT 20%        250.00\nTotal        1,500.00\n\n\
                    Please pay to IBAN GB29 NWBK 6016\n1331 9268 19\n";

        let e = extract(text);

        assert_eq!(e.supplier_iban.as_deref(), Some("GB29NWBK60161331926819"));
        assert_eq!(e.customer_name.as_deref(), Some("Anglia Homes Ltd"));
        assert_eq!(
            (e.subtotal, e.vat_amount, e.total),
            (Some(1250.0), Some(250.0), Some(1500.0))
        );
        assert_eq!(e.field_confidence_of("total"), Some(Confidence::High));
    }

    #[test]
    fn the_customers_vat_id_is_not_taken_for_the_suppliers() {
        let text = "ACME GmbH\nRechnung Nr. 1\nIhre USt-IdNr.: DE 987 654 321\nUnsere USt-IdNr.: DE 123 456 789\n";

        let extraction = extract(text);

        assert_eq!(extraction.supplier_vat_id.as_deref(), Some("DE123456789"));
    }
}
