//! ZUGFeRD 1.0 read by hand and by this reader. The expected values are the ones the
//! samples' own XML states (Mustang's `MustangGnuaccountingBeispielRE-20170509_505.pdf`
//! and `zugferd_invoice.pdf`, BASIC; `validV2PDF.pdf`'s second attachment
//! `ZUGFeRD-invoice.xml`, EXTENDED), read from the inflated attachment, not from any
//! labeller. COMFORT has no public sample in the corpora: it is the hand-made XML below.

use std::path::PathBuf;

use super::super::{
    EInvoiceError, EInvoiceSource, hybrid, is_partial_profile, pdf_limits, read,
    unchecked_partial_profile,
};
use super::{NO_RULES, SYNTAX};
use crate::extract::{DocumentType, Extraction, LineItem};
use en16931_formats::zugferd;

/// The public corpora (see their README): `DOCFLOW_CORPORA` (the Makefile sets it,
/// so a clone anywhere finds them), else `../shared/corpora` beside this checkout.
fn corpus(path: &str) -> PathBuf {
    std::env::var_os("DOCFLOW_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"))
        .join(path)
}

fn mustang_bytes(file: &str) -> Vec<u8> {
    std::fs::read(corpus(&format!("mustang-samples/{file}")))
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn mustang(file: &str) -> Extraction {
    read(&mustang_bytes(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn source(e: &Extraction) -> &EInvoiceSource {
    e.einvoice.as_ref().unwrap()
}

/// Gnuaccounting's RE-20170509/505, ZUGFeRD 1.0 BASIC.
const GNUACCOUNTING: &str = "MustangGnuaccountingBeispielRE-20170509_505.pdf";
/// PDFlib's cookbook invoice 2014-03, ZUGFeRD 1.0 BASIC, no bank account, no due date.
const PDFLIB: &str = "zugferd_invoice.pdf";

#[test]
fn zugferd_1_hybrids_no_longer_fall_back_to_the_page_as_not_an_en_16931_invoice() {
    for file in [GNUACCOUNTING, PDFLIB] {
        let read = read(&mustang_bytes(file));
        assert!(
            !matches!(read, Err(EInvoiceError::NotAnInvoice(_))),
            "{file}: {read:?}"
        );
        // Ingestion keeps a hybrid's XML unless a person would have to look at it.
        let kept = hybrid(read).unwrap_or_else(|e| panic!("{file}: {e}"));
        let s = source(&kept);
        assert_eq!(s.provider, "einvoice", "{file}");
        assert_eq!(s.syntax.as_deref(), Some(SYNTAX), "{file}");
        assert_eq!(
            s.attachment.as_deref(),
            Some("ZUGFeRD-invoice.xml"),
            "{file}"
        );
        assert!(s.review.is_empty(), "{file}: {:?}", s.review);
    }
}

#[test]
fn zugferd_1_basic_invoice_number_date_and_type_are_the_header_exchanged_documents() {
    let e = mustang(GNUACCOUNTING);
    assert_eq!(e.invoice_number.as_deref(), Some("RE-20170509/505"));
    assert_eq!(e.invoice_date, "2017-05-09".parse().ok());
    assert_eq!(source(&e).type_code.as_deref(), Some("380"));
    assert_eq!(e.document_type, Some(DocumentType::Invoice));
}

#[test]
fn zugferd_1_basic_profile_is_the_guideline_parameter_and_no_rules_were_run() {
    let e = mustang(GNUACCOUNTING);
    let s = source(&e);
    assert_eq!(s.profile.as_deref(), Some("ZUGFeRD 1.0 BASIC"));
    // The sample writes its ID between line breaks.
    assert_eq!(
        s.specification_id.as_deref(),
        Some("urn:ferd:CrossIndustryDocument:invoice:1p0:basic")
    );
    assert_eq!(s.recommendation.as_deref(), Some("undefined"));
    assert!(s.findings.iter().any(|f| f == NO_RULES), "{:?}", s.findings);
    assert!(is_partial_profile(&e));
}

#[test]
fn zugferd_1_basic_seller_is_the_seller_trade_party_with_its_va_registration() {
    let e = mustang(GNUACCOUNTING);
    assert_eq!(e.supplier_name.as_deref(), Some("Bei Spiel GmbH"));
    // schemeID VA, not the tax number (FC 22/815/0815/4) registered before it.
    assert_eq!(e.supplier_vat_id.as_deref(), Some("DE136695976"));
    assert_eq!(
        e.supplier_address.as_deref(),
        Some("Ecke 12, 12345 Stadthausen, DE")
    );
    assert_eq!(e.customer_name.as_deref(), Some("Theodor Est"));
}

#[test]
fn zugferd_1_basic_gross_total_is_grand_total_amount_and_an_absent_prepaid_amount_stays_absent() {
    let e = mustang(GNUACCOUNTING);
    assert_eq!(e.currency.as_deref(), Some("EUR"));
    assert_eq!(e.subtotal, Some(496.00));
    assert_eq!(e.vat_amount, Some(75.04));
    assert_eq!(e.total, Some(571.04));
    assert_eq!(source(&e).amount_due, Some(571.04));
    // The XML has no TotalPrepaidAmount: none, not 0.00.
    assert_eq!(source(&e).prepaid_amount, None);
}

#[test]
fn zugferd_1_basic_due_date_is_the_payment_terms_due_date_and_the_iban_the_payees() {
    let e = mustang(GNUACCOUNTING);
    assert_eq!(e.due_date, "2017-05-30".parse().ok());
    // `DE88 2008 0000 0970 3757 00`, its check digits valid, without spaces.
    assert_eq!(e.supplier_iban.as_deref(), Some("DE88200800000970375700"));
}

#[test]
fn zugferd_1_basic_line_items_are_the_included_trade_line_items() {
    let e = mustang(GNUACCOUNTING);
    let line = |description: &str, quantity: f64, unit_price: f64, amount: f64| LineItem {
        description: description.to_owned(),
        quantity: Some(quantity),
        unit_price: Some(unit_price),
        amount: Some(amount),
    };
    // Name, BilledQuantity, NetPriceProductTradePrice (per BasisQuantity 1), LineTotalAmount.
    assert_eq!(
        e.line_items,
        [
            line(
                "Künstlerische Gestaltung (Stunde): Einer Beispielrechnung",
                1.0,
                160.0,
                160.0
            ),
            line("Luftballon: Bunt, ca. 500ml", 400.0, 0.79, 316.0),
            line("Heiße Luft pro Liter", 200.0, 0.1, 20.0),
        ]
    );
}

#[test]
fn zugferd_1_basic_without_due_date_or_bank_account_leaves_them_absent() {
    let e = mustang(PDFLIB);
    assert_eq!(e.invoice_number.as_deref(), Some("2014-03"));
    assert_eq!(e.invoice_date, "2014-07-11".parse().ok());
    assert_eq!(e.supplier_name.as_deref(), Some("Kraxi GmbH"));
    assert_eq!(e.supplier_vat_id.as_deref(), Some("DE123456789"));
    assert_eq!(
        e.customer_name.as_deref(),
        Some("Papierflieger-Vertriebs-GmbH")
    );
    assert_eq!(e.subtotal, Some(845.00));
    assert_eq!(e.vat_amount, Some(160.55));
    assert_eq!(e.total, Some(1005.55));
    assert_eq!(source(&e).amount_due, Some(1005.55));
    // Its payment terms are a sentence ("Zahlbar innerhalb von 30 Tagen netto"), without
    // DueDateDateTime; no payment means names an account.
    assert_eq!(e.due_date, None);
    assert_eq!(e.supplier_iban, None);
    // Seven lines, without net prices; the last a free one of 0.00.
    assert_eq!(e.line_items.len(), 7);
    assert!(e.line_items.iter().all(|l| l.unit_price.is_none()));
    let last = e.line_items.last().unwrap();
    assert_eq!(
        (last.description.as_str(), last.quantity, last.amount),
        ("Kostenlose Zugabe", Some(1.0), Some(0.0))
    );
    assert_eq!(source(&e).profile.as_deref(), Some("ZUGFeRD 1.0 BASIC"));
}

/// The embedded file `name` of a PDF, by its file specification: `validV2PDF.pdf`
/// carries a ZUGFeRD 1.0 `ZUGFeRD-invoice.xml` beside the `factur-x.xml` the reader
/// prefers.
fn attachment_named(pdf: &[u8], name: &str) -> Vec<u8> {
    let doc = lopdf::Document::load_mem(pdf).unwrap();
    for object in doc.objects.values() {
        let Ok(spec) = object.as_dict() else { continue };
        if spec.get(b"F").and_then(lopdf::Object::as_str).ok() != Some(name.as_bytes()) {
            continue;
        }
        let files = spec
            .get_deref(b"EF", &doc)
            .and_then(lopdf::Object::as_dict)
            .unwrap();
        let stream = files
            .get_deref(b"F", &doc)
            .and_then(lopdf::Object::as_stream)
            .unwrap();
        return if stream.dict.has(b"Filter") {
            stream.decompressed_content().unwrap()
        } else {
            stream.content.clone()
        };
    }
    panic!("no embedded file {name}")
}

#[test]
fn zugferd_1_extended_gross_total_is_grand_total_amount() {
    let xml = attachment_named(&mustang_bytes("validV2PDF.pdf"), "ZUGFeRD-invoice.xml");
    let e = read(&xml).unwrap();
    let s = source(&e);
    assert_eq!(s.profile.as_deref(), Some("ZUGFeRD 1.0 EXTENDED"));
    assert_eq!(e.invoice_number.as_deref(), Some("RE-20171118/506"));
    assert_eq!(e.invoice_date, "2017-11-18".parse().ok());
    assert_eq!(e.due_date, "2017-12-09".parse().ok());
    assert_eq!(e.supplier_name.as_deref(), Some("Bei Spiel GmbH"));
    assert_eq!(e.currency.as_deref(), Some("EUR"));
    assert_eq!(e.total, Some(571.04));
    assert_eq!(s.amount_due, Some(571.04));
    assert_eq!(e.line_items.len(), 3);
    assert!(s.review.is_empty(), "{:?}", s.review);
}

#[test]
fn a_zugferd_1_xml_upload_without_its_page_goes_to_a_person_with_what_was_read_kept() {
    let payload = zugferd::extract(&mustang_bytes(GNUACCOUNTING), &pdf_limits())
        .unwrap()
        .xml;
    let mut e = read(&payload).unwrap();
    assert_eq!(source(&e).attachment, None);
    unchecked_partial_profile(&mut e, "an XML upload has no page");
    let review = &source(&e).review;
    assert!(
        review.len() == 1 && review[0].starts_with("ZUGFeRD 1.0 BASIC:"),
        "{review:?}"
    );
    assert!(e.needs_human_review());
    assert_eq!(e.total, Some(571.04));
}

/// A minimal ZUGFeRD 1.0 COMFORT invoice written by hand: one line of 100.00 at 19 %.
fn comfort() -> String {
    r#"<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryDocument xmlns:rsm="urn:ferd:CrossIndustryDocument:invoice:1p0" xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:12" xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:15">
<rsm:SpecifiedExchangedDocumentContext><ram:GuidelineSpecifiedDocumentContextParameter><ram:ID>urn:ferd:CrossIndustryDocument:invoice:1p0:comfort</ram:ID></ram:GuidelineSpecifiedDocumentContextParameter></rsm:SpecifiedExchangedDocumentContext>
<rsm:HeaderExchangedDocument><ram:ID>ZF1-7</ram:ID><ram:TypeCode>380</ram:TypeCode><ram:IssueDateTime><udt:DateTimeString format="102">20180301</udt:DateTimeString></ram:IssueDateTime></rsm:HeaderExchangedDocument>
<rsm:SpecifiedSupplyChainTradeTransaction>
<ram:ApplicableSupplyChainTradeAgreement>
<ram:BuyerReference>B-1</ram:BuyerReference>
<ram:SellerTradeParty><ram:Name>Lieferant GmbH</ram:Name></ram:SellerTradeParty>
<ram:BuyerTradeParty><ram:Name>Kunde AG</ram:Name></ram:BuyerTradeParty>
<ram:BuyerOrderReferencedDocument><ram:ID>PO-42</ram:ID></ram:BuyerOrderReferencedDocument>
</ram:ApplicableSupplyChainTradeAgreement>
<ram:ApplicableSupplyChainTradeDelivery><ram:DeliveryNoteReferencedDocument><ram:ID>LS-9</ram:ID></ram:DeliveryNoteReferencedDocument></ram:ApplicableSupplyChainTradeDelivery>
<ram:ApplicableSupplyChainTradeSettlement>
<ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>
<ram:ApplicableTradeTax><ram:CalculatedAmount currencyID="EUR">19.00</ram:CalculatedAmount><ram:TypeCode>VAT</ram:TypeCode><ram:BasisAmount currencyID="EUR">100.00</ram:BasisAmount><ram:ApplicablePercent>19.00</ram:ApplicablePercent></ram:ApplicableTradeTax>
<ram:SpecifiedTradeSettlementMonetarySummation>
<ram:LineTotalAmount currencyID="EUR">100.00</ram:LineTotalAmount>
<ram:TaxBasisTotalAmount currencyID="EUR">100.00</ram:TaxBasisTotalAmount>
<ram:TaxTotalAmount currencyID="EUR">19.00</ram:TaxTotalAmount>
<ram:GrandTotalAmount currencyID="EUR">119.00</ram:GrandTotalAmount>
<ram:TotalPrepaidAmount currencyID="EUR">19.00</ram:TotalPrepaidAmount>
<ram:DuePayableAmount currencyID="EUR">100.00</ram:DuePayableAmount>
</ram:SpecifiedTradeSettlementMonetarySummation>
</ram:ApplicableSupplyChainTradeSettlement>
<ram:IncludedSupplyChainTradeLineItem>
<ram:SpecifiedSupplyChainTradeAgreement><ram:NetPriceProductTradePrice><ram:ChargeAmount currencyID="EUR">50.00</ram:ChargeAmount><ram:BasisQuantity unitCode="C62">5</ram:BasisQuantity></ram:NetPriceProductTradePrice></ram:SpecifiedSupplyChainTradeAgreement>
<ram:SpecifiedSupplyChainTradeDelivery><ram:BilledQuantity unitCode="C62">10</ram:BilledQuantity></ram:SpecifiedSupplyChainTradeDelivery>
<ram:SpecifiedSupplyChainTradeSettlement><ram:SpecifiedTradeSettlementMonetarySummation><ram:LineTotalAmount currencyID="EUR">100.00</ram:LineTotalAmount></ram:SpecifiedTradeSettlementMonetarySummation></ram:SpecifiedSupplyChainTradeSettlement>
<ram:SpecifiedTradeProduct><ram:Name>Schrauben</ram:Name></ram:SpecifiedTradeProduct>
</ram:IncludedSupplyChainTradeLineItem>
</rsm:SpecifiedSupplyChainTradeTransaction>
</rsm:CrossIndustryDocument>"#
        .to_owned()
}

fn read_str(xml: &str) -> Extraction {
    read(xml.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn zugferd_1_comfort_references_prepaid_amount_and_unit_price_over_basis_quantity() {
    let e = read_str(&comfort());
    let s = source(&e);
    assert_eq!(s.profile.as_deref(), Some("ZUGFeRD 1.0 COMFORT"));
    assert_eq!(s.buyer_reference.as_deref(), Some("B-1"));
    assert_eq!(e.po_reference.as_deref(), Some("PO-42"));
    assert_eq!(e.delivery_note_reference.as_deref(), Some("LS-9"));
    assert_eq!(e.total, Some(119.00));
    assert_eq!(s.prepaid_amount, Some(19.00));
    assert_eq!(s.amount_due, Some(100.00));
    // 50.00 for 5 units: 10.00 a unit.
    assert_eq!(e.line_items[0].unit_price, Some(10.0));
    assert!(s.review.is_empty(), "{:?}", s.review);
    assert!(e.missing_fields.is_empty(), "{:?}", e.missing_fields);
}

#[test]
fn zugferd_1_without_grand_total_amount_has_no_gross_total_not_zero() {
    let xml = comfort().replace(
        r#"<ram:GrandTotalAmount currencyID="EUR">119.00</ram:GrandTotalAmount>"#,
        "",
    );
    let e = read_str(&xml);
    assert_eq!(e.total, None);
    assert!(e.missing_fields.contains(&"total".to_owned()));
    assert_eq!(e.field_confidence_of("total"), None);
    let review = &source(&e).review;
    assert!(
        review.iter().any(|r| r.contains("GrandTotalAmount")),
        "{review:?}"
    );
    // The terms it does have are read.
    assert_eq!(e.subtotal, Some(100.00));
    assert!(e.needs_human_review());
}

#[test]
fn zugferd_1_totals_that_do_not_add_up_are_review_findings() {
    let xml = comfort().replace(
        r#"<ram:GrandTotalAmount currencyID="EUR">119.00</ram:GrandTotalAmount>"#,
        r#"<ram:GrandTotalAmount currencyID="EUR">129.00</ram:GrandTotalAmount>"#,
    );
    let e = read_str(&xml);
    let review = &source(&e).review;
    // 100.00 + 19.00 is not 129.00, and 129.00 - 19.00 is not the 100.00 due.
    assert_eq!(review.len(), 2, "{review:?}");
    assert!(
        review[0].contains("GrandTotalAmount is 129.00"),
        "{review:?}"
    );
    assert!(
        review[1].contains("DuePayableAmount is 100.00"),
        "{review:?}"
    );
    assert!(matches!(hybrid(Ok(e)), Err(EInvoiceError::Invalid { .. })));
}

#[test]
fn zugferd_1_type_code_381_is_a_credit_note() {
    let xml = comfort().replace(
        "<ram:TypeCode>380</ram:TypeCode>",
        "<ram:TypeCode>381</ram:TypeCode>",
    );
    assert_eq!(read_str(&xml).document_type, Some(DocumentType::CreditNote));
}

#[test]
fn a_cross_industry_document_outside_zugferd_1_or_with_a_doctype_is_refused() {
    let foreign = comfort().replace(
        r#"xmlns:rsm="urn:ferd:CrossIndustryDocument:invoice:1p0""#,
        r#"xmlns:rsm="urn:example:other""#,
    );
    let err = read(foreign.as_bytes()).unwrap_err();
    assert!(matches!(err, EInvoiceError::NotAnInvoice(_)), "{err}");

    let doctype = comfort().replace(
        "<rsm:CrossIndustryDocument ",
        "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><rsm:CrossIndustryDocument ",
    );
    let err = read(doctype.as_bytes()).unwrap_err();
    assert!(matches!(err, EInvoiceError::Unreadable(_)), "{err}");
    assert!(err.to_string().contains("DTD"), "{err}");
}

#[test]
fn an_unknown_zugferd_1_profile_is_read_and_named_as_unknown() {
    let xml = comfort().replace(
        "urn:ferd:CrossIndustryDocument:invoice:1p0:comfort",
        "urn:ferd:CrossIndustryDocument:invoice:1p0:premium",
    );
    let e = read_str(&xml);
    let s = source(&e);
    assert_eq!(s.profile.as_deref(), Some("ZUGFeRD 1.0, profile unknown"));
    assert!(
        s.findings.iter().any(|f| f.contains("1p0:premium")),
        "{:?}",
        s.findings
    );
    assert_eq!(e.total, Some(119.00));
}
