//! Tests of the e-invoice reader: the XRechnung and KoSIT corpora, the mapping onto the
//! contract, and hostile input refused before or while it is parsed.

use std::path::PathBuf;

use super::*;

/// The public corpora (see their README): `DOCFLOW_CORPORA` (the Makefile sets it,
/// so a clone anywhere finds them), else `../shared/corpora` beside this checkout.
fn corpus(path: &str) -> PathBuf {
    std::env::var_os("DOCFLOW_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"))
        .join(path)
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![corpus(dir)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

const UBL: &str = "xrechnung-testsuite/src/test/business-cases/standard/01.01a-INVOICE_ubl.xml";

/// KoSIT 01.01a as a PEPPOL BIS Billing 3.0 invoice (its BT-24), changed by `edit`.
fn peppol(edit: impl Fn(String) -> String) -> Extraction {
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replace(
        "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0",
        "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0",
    );
    read(edit(xml).as_bytes()).unwrap_or_else(|e| panic!("read and kept: {e}"))
}

fn source(e: &Extraction) -> &EInvoiceSource {
    e.einvoice.as_ref().unwrap()
}

fn cites(lines: &[String], rule: &str) -> bool {
    lines.iter().any(|l| l.starts_with(rule))
}

#[test]
fn peppol_r010_and_r020_missing_electronic_addresses_are_warnings_and_the_data_is_used() {
    let e = peppol(|xml| {
        xml.replace(
            r#"<cbc:EndpointID schemeID="EM">seller@email.de</cbc:EndpointID>"#,
            "",
        )
        .replace(
            r#"<cbc:EndpointID schemeID="EM">buyer@info.de</cbc:EndpointID>"#,
            "",
        )
    });
    let s = source(&e);
    assert!(
        cites(&s.warnings, "PEPPOL-EN16931-R010"),
        "{:?}",
        s.warnings
    );
    assert!(
        cites(&s.warnings, "PEPPOL-EN16931-R020"),
        "{:?}",
        s.warnings
    );
    assert!(s.review.is_empty(), "{:?}", s.review);
    assert!(!e.needs_human_review());
    // KoSIT 01.01a's own values, read as they are.
    assert_eq!(e.total, Some(336.9));
    assert_eq!(e.supplier_name.as_deref(), Some("[Seller name]"));
}

#[test]
fn peppol_r003_no_buyer_reference_and_br_cl_25_an_endpoint_scheme_outside_the_eas_list_are_warnings()
 {
    let e = peppol(|xml| {
        xml.replace(
            "<cbc:BuyerReference>04011000-12345-03</cbc:BuyerReference>",
            "",
        )
        .replace(
            r#"schemeID="EM">seller@email.de"#,
            r#"schemeID="XX">seller@email.de"#,
        )
    });
    let s = source(&e);
    assert!(
        cites(&s.warnings, "PEPPOL-EN16931-R003"),
        "{:?}",
        s.warnings
    );
    assert!(cites(&s.warnings, "BR-CL-25"), "{:?}", s.warnings);
    assert!(s.review.is_empty(), "{:?}", s.review);
    assert!(!e.needs_human_review());
    assert!(s.findings.iter().any(|f| f.starts_with("BR-CL-25")));
}

#[test]
fn br_de_15_an_xrechnung_without_its_leitweg_id_is_a_warning() {
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replace(
        "<cbc:BuyerReference>04011000-12345-03</cbc:BuyerReference>",
        "",
    );
    let e = read(xml.as_bytes()).unwrap();
    assert!(cites(&source(&e).warnings, "BR-DE-15"));
    assert!(!e.needs_human_review());
}

#[test]
fn br_co_16_an_amount_due_that_does_not_add_up_keeps_what_was_read_and_goes_to_review() {
    // BT-115 1336.9 where BT-112 − BT-113 + BT-114 is 336.9.
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replace(
        r#"<cbc:PayableAmount currencyID="EUR">"#,
        r#"<cbc:PayableAmount currencyID="EUR">1"#,
    );
    let e = read(xml.as_bytes()).unwrap();
    let s = source(&e);
    assert!(cites(&s.review, "BR-CO-16"), "{:?}", s.review);
    assert!(e.needs_human_review());
    assert_eq!(e.total, Some(336.9), "BT-112 as written");
    assert_eq!(e.invoice_number.as_deref(), Some("123456XX"));
}

#[test]
fn br_06_an_invoice_without_its_seller_keeps_what_was_read_and_goes_to_review() {
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
    let start = xml.find("<cac:AccountingSupplierParty>").unwrap();
    let end = xml.find("</cac:AccountingSupplierParty>").unwrap()
        + "</cac:AccountingSupplierParty>".len();
    let no_seller = format!("{}{}", &xml[..start], &xml[end..]);
    let e = read(no_seller.as_bytes()).unwrap();
    assert!(
        cites(&source(&e).review, "BR-06"),
        "{:?}",
        source(&e).review
    );
    assert!(e.needs_human_review());
    assert_eq!(e.total, Some(336.9));
    assert_eq!(e.supplier_name, None);
}

/// KoSIT 01.01a rewritten as a UBL `CreditNote` (381) as the UBL 2.1 CreditNote
/// schema spells it, with BT-9 where that schema puts it: the suite has no UBL credit
/// note of its own.
fn ubl_credit_note(payment_due_date: &str) -> String {
    std::fs::read_to_string(corpus(UBL))
        .unwrap()
        .replace("ubl:Invoice", "ubl:CreditNote")
        .replace(
            "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
            "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
        )
        .replace(
            "<cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>",
            "<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>",
        )
        .replace("cac:InvoiceLine", "cac:CreditNoteLine")
        .replace("cbc:InvoicedQuantity", "cbc:CreditedQuantity")
        .replace(
            "<cbc:PaymentMeansCode>58</cbc:PaymentMeansCode>",
            &format!(
                "<cbc:PaymentMeansCode>58</cbc:PaymentMeansCode><cbc:PaymentDueDate>{payment_due_date}</cbc:PaymentDueDate>"
            ),
        )
}

#[test]
fn bt_9_of_a_ubl_credit_note_is_its_payment_means_payment_due_date() {
    let e = read(ubl_credit_note("2016-05-04").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.document_type, Some(DocumentType::CreditNote));
    assert_eq!(e.due_date, chrono::NaiveDate::from_ymd_opt(2016, 5, 4));
    assert_eq!(e.invoice_date, chrono::NaiveDate::from_ymd_opt(2016, 4, 4));
    // Not a date: no BT-9, never a guess.
    let e = read(ubl_credit_note("bald").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.due_date, None);
}

fn standard(case: &str) -> Extraction {
    let path = corpus(&format!(
        "xrechnung-testsuite/src/test/business-cases/standard/{case}"
    ));
    read(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{case}: {e}"))
}

#[test]
fn bt_115_amount_due_and_bt_113_prepaid_amount_of_a_refund_are_kept_beside_bt_112() {
    // KoSIT 03.01a: BT-112 804.86, BT-113 1030, BT-115 −225.14 (a refund).
    for case in ["03.01a-INVOICE_ubl.xml", "03.01a-INVOICE_uncefact.xml"] {
        let e = standard(case);
        let s = source(&e);
        assert_eq!(e.total, Some(804.86), "{case}: total is BT-112");
        assert_eq!(s.prepaid_amount, Some(1030.0), "{case}");
        assert_eq!(s.amount_due, Some(-225.14), "{case}");
    }
}

#[test]
fn bt_111_the_vat_total_in_the_accounting_currency_is_kept() {
    // KoSIT 02.01a: BT-6 GBP, BT-111 2048.44.
    for case in ["02.01a-INVOICE_ubl.xml", "02.01a-INVOICE_uncefact.xml"] {
        let e = standard(case);
        assert_eq!(
            source(&e).vat_total_accounting_currency,
            Some(2048.44),
            "{case}"
        );
    }
    assert_eq!(
        source(&standard("01.01a-INVOICE_ubl.xml")).vat_total_accounting_currency,
        None,
        "no accounting currency, no BT-111"
    );
}

#[test]
fn an_absent_bt_112_bt_109_or_bt_115_stays_absent_never_zero_with_high_confidence() {
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
    let without = |element: &str| {
        let start = xml.find(&format!("<cbc:{element}")).unwrap();
        let end = xml.find(&format!("</cbc:{element}>")).unwrap() + element.len() + 7;
        let e = read(format!("{}{}", &xml[..start], &xml[end..]).as_bytes())
            .unwrap_or_else(|e| panic!("{element}: {e}"));
        assert!(e.needs_human_review(), "{element}: a person looks");
        e
    };
    let no_gross = without("TaxInclusiveAmount");
    assert_eq!(no_gross.total, None);
    assert_eq!(no_gross.field_confidence_of("total"), None);
    assert!(no_gross.missing_fields.contains(&"total".to_owned()));
    assert_eq!(no_gross.subtotal, Some(314.86));
    assert_eq!(without("TaxExclusiveAmount").subtotal, None);
    let no_due = without("PayableAmount");
    assert_eq!(source(&no_due).amount_due, None);
    assert_eq!(no_due.total, Some(336.9));
}

#[test]
fn every_xrechnung_business_case_is_read_exactly_with_high_confidence() {
    let cases = files("xrechnung-testsuite/src/test/business-cases", "xml");
    assert_eq!(cases.len(), 72, "the suite's 72 business cases");
    let (mut ubl, mut cii) = (0, 0);
    for path in &cases {
        let e = read(&std::fs::read(path).unwrap())
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let source = e.einvoice.as_ref().unwrap();
        assert_eq!(source.provider, "einvoice");
        match source.syntax.as_deref() {
            Some("UBL 2.1") => ubl += 1,
            Some("UN/CEFACT CII D16B") => cii += 1,
            other => panic!("{}: syntax {other:?}", path.display()),
        }
        assert!(source.profile.is_some() && source.type_code.is_some());
        assert_eq!(e.confidence, Confidence::High);
        assert!(e.passes_quality_gate(), "{}", path.display());
        assert!(e.invoice_number.is_some() && e.invoice_date.is_some());
        assert!(e.supplier_name.is_some() && e.total.is_some() && e.currency.is_some());
        assert!(!e.line_items.is_empty(), "{}", path.display());
        assert_eq!(e.field_confidence_of("total"), Some(Confidence::High));
    }
    assert!(ubl > 30 && cii > 30, "{ubl} UBL, {cii} CII");
}

#[test]
fn bt_84_an_iban_failing_its_check_digits_is_a_finding_not_the_suppliers_iban() {
    // KoSIT 01.01a's account, one digit changed: DE79000000001234567890 passes
    // ISO 13616's mod 97, DE79000000001234567891 does not.
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
    assert!(xml.contains("DE79000000001234567890"));
    let broken = xml.replace("DE79000000001234567890", "DE79000000001234567891");

    let e = read(broken.as_bytes()).unwrap();

    assert_eq!(e.supplier_iban, None);
    let findings = &e.einvoice.as_ref().unwrap().findings;
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("BT-84 DE79000000001234567891: the IBAN fails")),
        "{findings:?}"
    );
    // The published sample's own IBAN is taken as it is.
    let e = read(xml.as_bytes()).unwrap();
    assert_eq!(e.supplier_iban.as_deref(), Some("DE79000000001234567890"));
}

#[test]
fn a_ubl_invoice_maps_onto_the_contract() {
    let e = read(&std::fs::read(corpus(UBL)).unwrap()).unwrap();
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
    assert_eq!(e.document_type, Some(DocumentType::Invoice));
    assert!(xml.contains(&format!(
        "<cbc:ID>{}</cbc:ID>",
        e.invoice_number.as_deref().unwrap()
    )));
    assert!(xml.contains(&format!(
        "<cbc:IssueDate>{}</cbc:IssueDate>",
        e.invoice_date.unwrap()
    )));
    assert_eq!(e.total, Some(336.9));
    assert!(
        xml.contains("<cbc:TaxInclusiveAmount currencyID=\"EUR\">336.9</cbc:TaxInclusiveAmount>")
    );
    assert_eq!(e.subtotal, Some(314.86));
    assert_eq!(e.vat_amount, Some(22.04));
    assert_eq!(e.supplier_iban.as_deref(), Some("DE79000000001234567890"));
    assert_eq!(e.line_items.len(), 2);
    assert_eq!(e.line_items[0].amount, Some(288.79));
    let source = e.einvoice.unwrap();
    assert_eq!(source.type_code.as_deref(), Some("380"));
    assert!(source.buyer_reference.is_some());
}

#[test]
fn bt_3_credit_note_codes_of_untdid_1001_map_to_credit_notes_and_keep_the_code() {
    // BR-CL-01's credit-note list (EN 16931, UNTDID 1001 restricted).
    for code in [
        "81", "83", "261", "262", "296", "308", "381", "396", "420", "458", "502", "503", "532",
    ] {
        assert_eq!(
            document_type(Some(code), false, Some(10.0)),
            DocumentType::CreditNote,
            "{code}"
        );
    }
    for code in ["380", "384", "389", "326", "386", "875"] {
        assert_eq!(
            document_type(Some(code), false, Some(10.0)),
            DocumentType::Invoice,
            "{code}"
        );
    }
    assert_eq!(document_type(None, true, None), DocumentType::CreditNote);
    assert_eq!(document_type(None, false, None), DocumentType::Invoice);
    let cii = UBL.replace("_ubl.xml", "_uncefact.xml");
    let xml = std::fs::read_to_string(corpus(&cii)).unwrap().replacen(
        "<ram:TypeCode>380</ram:TypeCode>",
        "<ram:TypeCode>381</ram:TypeCode>",
        1,
    );
    let e = read(xml.as_bytes()).unwrap();
    assert_eq!(e.document_type, Some(DocumentType::CreditNote));
    assert_eq!(
        e.einvoice.unwrap().type_code.as_deref(),
        Some("381"),
        "the code is kept"
    );
}

#[test]
fn bt_112_negative_on_an_invoice_code_is_a_credit_note() {
    assert_eq!(
        document_type(Some("380"), false, Some(-233.47)),
        DocumentType::CreditNote
    );
    assert_eq!(
        document_type(Some("384"), false, Some(-1.0)),
        DocumentType::CreditNote
    );
    // Mustang's French "avoir" issued as a 380 (BASIC WL): BT-112 −233.47. A credit
    // note's amounts are their sizes, the way a 381 carries them.
    let e =
        read(&std::fs::read(corpus("mustang-samples/validAvoir_FR_type380_BASICWL.pdf")).unwrap())
            .unwrap();
    assert_eq!(e.total, Some(233.47));
    assert_eq!(e.document_type, Some(DocumentType::CreditNote));
    assert_eq!(e.einvoice.unwrap().type_code.as_deref(), Some("380"));
}

#[test]
fn a_credit_in_substance_and_its_page_are_in_one_sign_convention() {
    // The avoir's page prints its amounts with minus signs, its XML has BT-112 −233.47:
    // both readings settle to the size, and they agree.
    let bytes = std::fs::read(corpus("mustang-samples/validAvoir_FR_type380_BASICWL.pdf")).unwrap();
    let mut xml = read(&bytes).unwrap();
    let text = crate::ocr::read_text_layer(&bytes).unwrap().join("\n\n");
    let page = crate::extract::rules::extract(&text);
    assert_eq!(page.document_type, Some(DocumentType::CreditNote));
    assert_eq!(page.total, Some(233.47), "{text}");
    assert!(!compare_with_page(&mut xml, &page), "{:?}", xml.einvoice);
}

#[test]
fn bt_149_base_quantity_divides_the_net_price_into_a_unit_price() {
    assert_eq!(unit_price(Some(250.0), Some(100.0)), Some(2.5));
    assert_eq!(unit_price(Some(250.0), None), Some(250.0));
    assert_eq!(unit_price(Some(250.0), Some(0.0)), Some(250.0));
    // A KoSIT invoice whose first line's price is written per 10 units: BT-146 ten
    // times the unit price, BT-149 10. The unit price is the one the original states.
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
    let plain = read(xml.as_bytes()).unwrap();
    let first = &plain.line_items[0];
    let (unit_before, quantity) = (first.unit_price.unwrap(), first.quantity.unwrap());
    let open = xml.find("<cbc:PriceAmount").unwrap();
    let value = open + xml[open..].find('>').unwrap() + 1;
    let close = value + xml[value..].find('<').unwrap();
    let per_ten = format!(
        "{}{:.2}</cbc:PriceAmount><cbc:BaseQuantity>10</cbc:BaseQuantity>{}",
        &xml[..value],
        unit_before * 10.0,
        &xml[close + "</cbc:PriceAmount>".len()..]
    );
    let e = read(per_ten.as_bytes()).unwrap();
    let unit = e.line_items[0].unit_price.unwrap();
    assert!((unit - unit_before).abs() < 1e-9, "{unit} vs {unit_before}");
    assert_eq!(e.line_items[0].quantity, Some(quantity));
}

#[test]
fn the_kosit_technical_cases_are_read_or_refused_without_a_panic() {
    for path in files("xrechnung-testsuite/src/test/technical-cases", "xml") {
        match read(&std::fs::read(&path).unwrap()) {
            Ok(e) => assert_eq!(e.einvoice.unwrap().provider, "einvoice"),
            Err(e) => assert!(!e.to_string().is_empty(), "{}", path.display()),
        }
    }
}

#[test]
fn hybrids_are_read_from_their_attachment() {
    let e = read(&std::fs::read(corpus("mustang-samples/EN16931_Einfach.pdf")).unwrap()).unwrap();
    let source = e.einvoice.as_ref().unwrap();
    assert_eq!(source.attachment.as_deref(), Some("factur-x.xml"));
    assert_eq!(source.syntax.as_deref(), Some("UN/CEFACT CII D16B"));
    assert_eq!(e.invoice_number.as_deref(), Some("471102"));
    assert_eq!(e.total, Some(529.87));
    let basic_wl =
        read(&std::fs::read(corpus("mustang-samples/validAvoir_FR_type380_BASICWL.pdf")).unwrap())
            .unwrap();
    let source = basic_wl.einvoice.unwrap();
    assert_eq!(source.recommendation.as_deref(), Some("undefined"));
    assert!(source.profile.unwrap().contains("BASIC WL"));
}

#[test]
fn a_basic_wl_xml_without_a_page_to_check_it_against_goes_to_a_person() {
    let mustang = |file: &str| {
        read(&std::fs::read(corpus(&format!("mustang-samples/{file}"))).unwrap()).unwrap()
    };
    let mut basic_wl = mustang("validAvoir_FR_type380_BASICWL.pdf");
    assert!(is_partial_profile(&basic_wl));
    assert!(
        !basic_wl.needs_human_review(),
        "checked against its page, it may pass"
    );
    unchecked_partial_profile(&mut basic_wl, "an XML upload has no page");
    let review = &basic_wl.einvoice.as_ref().unwrap().review;
    assert!(
        review.len() == 1 && review[0].contains("BASIC WL") && review[0].contains("no page"),
        "{review:?}"
    );
    assert!(basic_wl.needs_human_review());
    // BASIC WL carries no lines: none is invented, none has a confidence.
    assert!(basic_wl.line_items.is_empty());
    assert_eq!(basic_wl.field_confidence_of("line_items"), None);

    let mut full = mustang("EN16931_Einfach.pdf");
    assert!(!is_partial_profile(&full));
    unchecked_partial_profile(&mut full, "an XML upload has no page");
    assert!(full.einvoice.as_ref().unwrap().review.is_empty());
}

#[test]
fn a_credit_note_printed_with_minus_signs_agrees_with_its_positive_381() {
    let mut xml = crate::extract::test_data(serde_json::json!({
        "document_type": "credit_note", "invoice_number": "GS-1", "total": 233.47
    }));
    xml.einvoice = Some(EInvoiceSource::default());
    let printed = crate::extract::test_data(serde_json::json!({
        "document_type": "credit_note", "invoice_number": "GS-1", "total": -233.47
    }));
    assert!(!compare_with_page(&mut xml, &printed));
    let other = crate::extract::test_data(serde_json::json!({"total": -23.47}));
    assert!(compare_with_page(&mut xml, &other));
}

#[test]
fn broken_plain_and_foreign_pdfs_are_refused_with_a_clear_error() {
    for (file, want) in [
        ("corrupt-factur-x-waytoosmall.pdf", "unreadable"),
        ("corruptedV2PDF.pdf", "unreadable"),
        ("invalidXMP-ParseError.pdf", "unreadable"),
        ("veraPDFtestsuite6-7-11-t01-fail-a.pdf", "no embedded"),
        ("EmptyPDFA1.pdf", "no embedded"),
        (
            "ORDER-X_EX01_ORDER_FULL_DATA-COMFORT.pdf",
            "not an EN 16931 invoice",
        ),
    ] {
        let path = corpus(&format!("mustang-samples/{file}"));
        let err = read(&std::fs::read(path).unwrap()).unwrap_err();
        assert!(err.to_string().contains(want), "{file}: {err}");
    }
    // A read payload breaking a rule about payment is kept, for a person to look at
    // (ingestion reads such a hybrid's page instead).
    let path = corpus("mustang-samples/MustangBeispiel20221026.pdf");
    let kept = read(&std::fs::read(path).unwrap()).unwrap();
    assert!(
        cites(&source(&kept).review, "BR-49"),
        "{:?}",
        source(&kept).review
    );
    // Every sample, whatever it is: an answer, never a panic.
    for path in files("mustang-samples", "pdf") {
        let _ = read(&std::fs::read(path).unwrap());
    }
}

const UBL_HEAD: &str = r#"<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">"#;

#[test]
fn a_doctype_an_external_entity_and_an_entity_bomb_are_refused_unexpanded() {
    let xxe = format!(
        "<?xml version=\"1.0\"?><!DOCTYPE Invoice [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>{UBL_HEAD}<cbc:ID>&xxe;</cbc:ID></Invoice>"
    );
    let mut bomb = String::from("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_owned()
        } else {
            format!("lol{}", i - 1)
        };
        bomb += &format!("<!ENTITY lol{i} \"{}\">", format!("&{prev};").repeat(10));
    }
    bomb += &format!("]>{UBL_HEAD}<cbc:ID>&lol9;</cbc:ID></Invoice>");
    for xml in [xxe, bomb] {
        let err = read(xml.as_bytes()).unwrap_err();
        assert!(matches!(err, EInvoiceError::Unreadable(_)), "{err}");
        assert!(err.to_string().contains("DTD"), "{err}");
        assert!(!err.to_string().contains("root:"), "nothing was fetched");
    }
}

#[test]
fn a_100_mb_xml_is_refused_before_parsing() {
    let mut xml = UBL_HEAD.to_owned().into_bytes();
    xml.resize(100 * 1024 * 1024, b' ');
    xml.extend_from_slice(b"</Invoice>");
    let err = read(&xml).unwrap_err();
    assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
    assert!(err.to_string().contains("byte limit"));
}

#[test]
fn too_many_nodes_or_too_deep_nesting_is_refused() {
    let many = format!("{UBL_HEAD}{}</Invoice>", "<a/>".repeat(MAX_XML_NODES + 1));
    let err = read(many.as_bytes()).unwrap_err();
    assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
    let deep = format!(
        "{UBL_HEAD}{}{}</Invoice>",
        "<a>".repeat(10_000),
        "</a>".repeat(10_000)
    );
    let err = read(deep.as_bytes()).unwrap_err();
    assert!(matches!(err, EInvoiceError::Unreadable(_)), "{err}");
    assert!(err.to_string().contains("deep"), "{err}");
}

#[test]
fn xml_that_is_not_an_invoice_says_what_it_found() {
    let err = read(b"<Order xmlns=\"urn:x\"><ID>1</ID></Order>").unwrap_err();
    assert!(matches!(err, EInvoiceError::NotAnInvoice(_)), "{err}");
    assert!(err.to_string().contains("Order"));
    for garbage in [
        &b""[..],
        b"<",
        b"\xff\xfe<\x00",
        b"%PDF-1.7\n",
        b"not xml at all",
    ] {
        let _ = read(garbage);
    }
}

#[test]
fn a_hybrid_whose_page_disagrees_keeps_the_xml_and_flags_it() {
    let mut xml =
        read(&std::fs::read(corpus("mustang-samples/EN16931_Einfach.pdf")).unwrap()).unwrap();
    let mut page = xml.clone();
    assert!(!compare_with_page(&mut xml, &page));
    page.total = Some(1.0);
    page.invoice_number = Some("471-102".into());
    assert!(compare_with_page(&mut xml, &page));
    assert_eq!(xml.total, Some(529.87), "the XML is the invoice");
    let flagged = &xml.einvoice.as_ref().unwrap().disagreements;
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert!(flagged[0].contains("total"));
}

#[test]
fn findings_are_capped_however_many_a_document_produces() {
    let lines: Vec<String> = (0..500).map(|i| format!("BR-{i}")).collect();
    let kept = capped(lines);
    assert_eq!(kept.len(), MAX_FINDINGS + 1);
    assert_eq!(kept.last().unwrap(), "… and 450 more");
    // Each unmapped path is reported once: 2000 different ones.
    let junk: String = (0..2000)
        .map(|i| format!("<cbc:Unknown{i}>x</cbc:Unknown{i}>"))
        .collect();
    let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replacen(
        "<cbc:Note>",
        &format!("{junk}<cbc:Note>"),
        1,
    );
    let findings = match read(xml.as_bytes()) {
        Ok(e) => e.einvoice.unwrap().findings,
        Err(EInvoiceError::Invalid { findings }) => findings,
        Err(other) => panic!("{other}"),
    };
    assert_eq!(findings.len(), MAX_FINDINGS + 1, "{findings:?}");
}

fn deflated(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// A PDF whose `factur-x.xml` is stored as `FlateDecode` with `/DecodeParms`: not the
/// lone-Flate fast path of the reader, so lopdf's bounded decoder inflates it.
fn hybrid_with_predictor_attachment(payload: &[u8]) -> Vec<u8> {
    use lopdf::{Document, Object, Stream, StringFormat, dictionary};
    let name = || Object::String(b"factur-x.xml".to_vec(), StringFormat::Literal);
    let mut doc = Document::with_version("1.7");
    let file = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "EmbeddedFile",
            "Filter" => "FlateDecode",
            "DecodeParms" => dictionary! { "Predictor" => 1 },
        },
        deflated(payload),
    ));
    let spec = doc.add_object(dictionary! {
        "Type" => "Filespec", "F" => name(), "UF" => name(),
        "EF" => dictionary! { "F" => file },
    });
    let pages = doc.add_object(
        dictionary! { "Type" => "Pages", "Kids" => Vec::<Object>::new(), "Count" => 0 },
    );
    let catalog = doc.add_object(dictionary! {
        "Type" => "Catalog", "Pages" => pages,
        "Names" => dictionary! {
            "EmbeddedFiles" => dictionary! { "Names" => vec![name(), spec.into()] },
        },
    });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[test]
fn an_attachment_that_inflates_past_the_stream_limit_is_refused() {
    let bomb = hybrid_with_predictor_attachment(&vec![b' '; MAX_PDF_STREAM_BYTES + 1]);
    assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
    let err = read(&bomb).unwrap_err();
    assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
    assert!(err.to_string().contains("factur-x.xml"), "{err}");

    // The same attachment within the limit is inflated and read (and is no invoice).
    let small = hybrid_with_predictor_attachment(b"<Order xmlns=\"urn:x\"><ID>1</ID></Order>");
    let err = read(&small).unwrap_err();
    assert!(matches!(err, EInvoiceError::NotAnInvoice(_)), "{err}");
}

/// A PDF whose only cross-reference section is a `FlateDecode` xref stream of
/// `inflated` bytes (zeros: free entries).
fn pdf_with_xref_stream(inflated: usize) -> Vec<u8> {
    let mut pdf = b"%PDF-1.5\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
                    2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
        .to_vec();
    let xref_at = pdf.len();
    let data = deflated(&vec![0; inflated]);
    pdf.extend_from_slice(
        format!(
            "3 0 obj\n<< /Type /XRef /Size 4 /W [1 4 2] /Root 1 0 R /Filter /FlateDecode \
             /Length {} >>\nstream\n",
            data.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(&data);
    pdf.extend_from_slice(format!("\nendstream\nendobj\nstartxref\n{xref_at}\n%%EOF\n").as_bytes());
    pdf
}

#[test]
fn a_cross_reference_stream_that_inflates_past_the_stream_limit_is_refused() {
    let bomb = pdf_with_xref_stream(MAX_PDF_STREAM_BYTES + 1);
    assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
    let err = read(&bomb).unwrap_err();
    assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
    assert!(err.to_string().contains("structure"), "{err}");

    // A small one is parsed, not refused for its size.
    let err = read(&pdf_with_xref_stream(28)).unwrap_err();
    assert!(!matches!(err, EInvoiceError::TooLarge(_)), "{err}");
}

#[test]
fn xml_file_names() {
    assert!(is_xml_name("documents/x.XML") && !is_xml_name("a.pdf"));
}

#[test]
fn bt_3_384_a_corrected_invoice_replaces_the_invoice_its_bt_25_names() {
    // KoSIT 01.18a: a 384 of 10,555.30 whose BT-25 is PRG1502168, in both syntaxes.
    for case in ["01.18a-INVOICE_ubl.xml", "01.18a-INVOICE_uncefact.xml"] {
        let e = standard(case);
        assert_eq!(e.document_type, Some(DocumentType::Invoice), "{case}");
        assert_eq!(source(&e).type_code.as_deref(), Some("384"), "{case}");
        assert_eq!(e.invoice_number.as_deref(), Some("PRG1502112"), "{case}");
        assert_eq!(e.total, Some(10555.3), "{case}");
        assert_eq!(e.replaces_invoice.as_deref(), Some("PRG1502168"), "{case}");
        assert_eq!(
            e.invoice_reference, None,
            "{case}: not a citation: it replaces that invoice"
        );
    }
    // A 380 citing an earlier invoice (BT-25) cites it; it replaces nothing.
    let xml = std::fs::read_to_string(corpus(
        "xrechnung-testsuite/src/test/business-cases/standard/01.18a-INVOICE_ubl.xml",
    ))
    .unwrap()
    .replace(
        "<cbc:InvoiceTypeCode>384</cbc:InvoiceTypeCode>",
        "<cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>",
    );
    let e = read(xml.as_bytes()).unwrap();
    assert_eq!(e.replaces_invoice, None);
    assert_eq!(e.invoice_reference.as_deref(), Some("PRG1502168"));
}

#[test]
fn bt_84_is_the_account_of_a_credit_transfer_even_when_a_direct_debit_is_listed_first() {
    // KoSIT 01.18a pays by two SEPA credit transfers (58); a direct debit (59) with the
    // buyer's mandate and account is put in front of them.
    let ubl = std::fs::read_to_string(corpus(
        "xrechnung-testsuite/src/test/business-cases/standard/01.18a-INVOICE_ubl.xml",
    ))
    .unwrap()
    .replacen(
        "<cac:PaymentMeans>",
        "<cac:PaymentMeans><cbc:PaymentMeansCode>59</cbc:PaymentMeansCode>\
         <cac:PaymentMandate><cbc:ID>MANDATE-1</cbc:ID>\
         <cac:PayerFinancialAccount><cbc:ID>DE02120300000000202051</cbc:ID></cac:PayerFinancialAccount>\
         </cac:PaymentMandate></cac:PaymentMeans><cac:PaymentMeans>",
        1,
    );
    let e = read(ubl.as_bytes()).unwrap();
    assert_eq!(e.supplier_iban.as_deref(), Some("DE79000000001234567890"));

    // CII: a means of another code (a debit transfer, 31) carrying an account comes
    // first; the credit transfer's account is the one to pay.
    let cii = std::fs::read_to_string(corpus(
        "xrechnung-testsuite/src/test/business-cases/standard/01.18a-INVOICE_uncefact.xml",
    ))
    .unwrap()
    .replacen(
        "<ram:TypeCode>58</ram:TypeCode>",
        "<ram:TypeCode>31</ram:TypeCode>",
        1,
    );
    let e = read(cii.as_bytes()).unwrap();
    assert_eq!(e.supplier_iban.as_deref(), Some("DE16000000002345678901"));

    // Unchanged, the first of the two credit transfers.
    assert_eq!(
        standard("01.18a-INVOICE_ubl.xml").supplier_iban.as_deref(),
        Some("DE79000000001234567890")
    );
}

#[test]
fn a_partial_profiles_date_vat_id_currency_and_amounts_are_checked_against_its_page() {
    // The page is a MINIMUM / BASIC WL invoice's legal form: what both carry must agree.
    let bytes = std::fs::read(corpus("mustang-samples/validAvoir_FR_type380_BASICWL.pdf")).unwrap();
    let text = crate::ocr::read_text_layer(&bytes).unwrap().join("\n\n");
    let page = crate::extract::rules::extract(&text);
    let mut xml = read(&bytes).unwrap();
    assert!(is_partial_profile(&xml));
    assert!(
        !compare_with_page(&mut xml.clone(), &page),
        "the sample agrees with its page"
    );

    let mut other = page.clone();
    other.invoice_date = chrono::NaiveDate::from_ymd_opt(2017, 1, 1);
    other.supplier_vat_id = Some("FR00999999999".into());
    other.vat_amount = Some(1.0);
    assert!(compare_with_page(&mut xml, &other));
    let found = &source(&xml).disagreements;
    for field in ["invoice_date", "supplier_vat_id", "vat_amount"] {
        assert!(
            found.iter().any(|d| d.starts_with(field)),
            "{field}: {found:?}"
        );
    }
    assert!(xml.needs_human_review());

    // A full profile is the invoice itself: only the number and the total are compared.
    let mut full =
        read(&std::fs::read(corpus("mustang-samples/EN16931_Einfach.pdf")).unwrap()).unwrap();
    let mut page = full.clone();
    page.invoice_date = chrono::NaiveDate::from_ymd_opt(2017, 1, 1);
    page.einvoice = None;
    assert!(!compare_with_page(&mut full, &page));
}
