//! Tests of the normalisation: company names, VAT ids, IBANs, references and the
//! normalised extraction.

use super::*;
use crate::extract::test_data;
use serde_json::json;

fn name(raw: &str) -> Option<String> {
    normalize_name(raw)
}

#[test]
fn a_field_holding_two_references_is_split() {
    for raw in [
        "4500012345 / AB-778",
        "4500012345 AB-778",
        "4500012345AB778",
        "4500012345 / AB 778",
    ] {
        let keys: Vec<String> = split_references(raw)
            .iter()
            .filter_map(|r| normalize_reference(r))
            .collect();
        assert_eq!(keys, ["4500012345", "AB-778"], "{raw}");
    }
    let both = References::read(
        &test_data(json!({"po_reference": "PO-2024-0042 / LS-2024-0107"})),
        DocumentType::Invoice,
    );
    assert_eq!(both.purchase_orders, ["LS-2024-107", "PO-2024-42"]);
}

#[test]
fn bt_10_is_the_order_reference_matching_cites_when_bt_13_is_empty() {
    // As the e-invoice reader stores KoSIT 03.04a: no BT-13, BT-10 set.
    let mut without = test_data(json!({"invoice_number": "RE-1"}));
    without.einvoice = Some(crate::extract::einvoice::EInvoiceSource {
        buyer_reference: Some("4500012345".into()),
        ..Default::default()
    });
    let refs = References::read(&without, DocumentType::Invoice);
    assert_eq!(refs.purchase_orders, ["4500012345"]);
    let keys = SearchKeys::read(&without, DocumentType::Invoice);
    assert!(keys.cited.contains(&"po:4500012345".to_owned()), "{keys:?}");
    // BT-13 present: BT-13 alone.
    let mut with = without.clone();
    with.po_reference = Some("PO-2024-0042".into());
    let refs = References::read(&with, DocumentType::Invoice);
    assert_eq!(refs.purchase_orders, ["PO-2024-42"]);
}

#[test]
fn one_reference_written_with_spaces_or_slashes_stays_one() {
    for raw in [
        "PO-2024/0042",
        "PO 2024 42",
        "2024-LS-123",
        "PO-2O24-0042",
        "45000 12345",
    ] {
        assert_eq!(
            split_references(raw).len(),
            1,
            "{raw}: {:?}",
            split_references(raw)
        );
    }
}

#[test]
fn gmbh_is_dropped() {
    assert_eq!(name("Acme GmbH").as_deref(), Some("acme"));
}

#[test]
fn dotted_gmbh_is_dropped() {
    assert_eq!(name("Acme G.m.b.H.").as_deref(), Some("acme"));
}

#[test]
fn ag_is_dropped() {
    assert_eq!(name("Siemens AG").as_deref(), Some("siemens"));
}

#[test]
fn ltd_with_dot_is_dropped() {
    assert_eq!(name("Widgets Ltd.").as_deref(), Some("widgets"));
}

#[test]
fn inc_after_a_comma_is_dropped() {
    assert_eq!(name("Globex, Inc.").as_deref(), Some("globex"));
}

#[test]
fn gmbh_and_co_kg_is_dropped_entirely() {
    assert_eq!(
        name("Müller Logistik GmbH & Co. KG").as_deref(),
        Some("mueller logistik")
    );
}

#[test]
fn ug_haftungsbeschraenkt_in_parentheses_is_dropped() {
    assert_eq!(
        name("Kaffeerösterei Süd UG (haftungsbeschränkt)").as_deref(),
        Some("kaffeeroesterei sued")
    );
}

#[test]
fn case_and_whitespace_do_not_matter() {
    assert_eq!(
        name("  ACME   gmbh ").as_deref(),
        name("Acme GmbH").as_deref()
    );
}

#[test]
fn umlauts_and_their_spelled_out_form_agree() {
    assert_eq!(name("Müller GmbH"), name("Mueller GmbH"));
}

#[test]
fn eszett_is_folded() {
    assert_eq!(
        name("Großhandel Weiß AG").as_deref(),
        Some("grosshandel weiss")
    );
}

#[test]
fn hyphens_and_ampersands_separate_words() {
    assert_eq!(
        name("Hewlett-Packard & Partner").as_deref(),
        Some("hewlett packard partner")
    );
}

#[test]
fn legal_forms_inside_a_name_are_kept() {
    assert_eq!(name("AG Bau Nord GmbH").as_deref(), Some("ag bau nord"));
}

#[test]
fn a_name_that_is_only_a_legal_form_is_kept() {
    assert_eq!(name("AG").as_deref(), Some("ag"));
}

#[test]
fn an_empty_or_punctuation_only_name_is_none() {
    assert_eq!(name(""), None);
    assert_eq!(name(" - / . "), None);
}

#[test]
fn llc_and_corporation_are_dropped() {
    assert_eq!(name("Initech LLC").as_deref(), Some("initech"));
    assert_eq!(name("Umbrella Corporation").as_deref(), Some("umbrella"));
}

#[test]
fn accented_letters_are_folded() {
    assert_eq!(
        name("Société Générale S.A.").as_deref(),
        Some("societe generale")
    );
}

#[test]
fn vat_ids_lose_spaces_dots_and_case() {
    assert_eq!(
        normalize_vat_id("de 123.456.789").as_deref(),
        Some("DE123456789")
    );
    assert_eq!(
        normalize_vat_id("ATU-1234 5678").as_deref(),
        Some("ATU12345678")
    );
    assert_eq!(normalize_vat_id("DE"), None);
}

#[test]
fn ibans_lose_spaces_and_must_look_like_ibans() {
    assert_eq!(
        normalize_iban("de89 3704 0044 0532 0130 00").as_deref(),
        Some("DE89370400440532013000")
    );
    assert_eq!(normalize_iban("12345"), None);
    assert_eq!(normalize_iban("DEXX370400440532013000"), None);
}

fn key(raw: &str) -> Option<String> {
    normalize_reference(raw)
}

#[test]
fn references_lose_case_separators_and_leading_zeros() {
    assert_eq!(key("PO-000123").as_deref(), Some("PO-123"));
    assert_eq!(key("po 123").as_deref(), Some("PO-123"));
    assert_eq!(key("PO123").as_deref(), Some("PO-123"));
    assert_eq!(key("PO-2024/0042"), key("po 2024-042"));
    assert_eq!(key("0004500123").as_deref(), Some("4500123"));
}

#[test]
fn digit_group_boundaries_keep_different_numbers_apart() {
    assert_ne!(key("LS-2024-1-15"), key("LS-2024-11-5"));
    assert_ne!(key("PO 12-34"), key("PO 1-234"));
    assert_eq!(key("LS-2024-1-15").as_deref(), Some("LS-2024-1-15"));
}

#[test]
fn a_letter_between_digits_is_read_as_the_digit_ocr_mistook() {
    assert_eq!(key("PO-2O24-0042"), key("PO-2024-0042"));
    assert_eq!(key("RE 1I5"), key("RE 115"));
    assert_eq!(
        key("PO2024").as_deref(),
        Some("PO-2024"),
        "a prefix is not a digit"
    );
}

#[test]
fn a_letter_next_to_a_separator_between_digits_is_read_as_a_digit_too() {
    assert_eq!(key("PO-2024-O042"), key("PO-2024-0042"));
    assert_eq!(key("LS 2024 I5").as_deref(), Some("LS-2024-15"));
    assert_eq!(
        key("PO-O042").as_deref(),
        Some("PO-O-42"),
        "after a prefix: a letter"
    );
}

#[test]
fn references_keep_their_letter_prefix_and_zero_groups() {
    assert_ne!(key("INV-1001"), key("PO-1001"));
    assert_eq!(key("LS-000-A").as_deref(), Some("LS-0-A"));
    assert_eq!(number_part("PO-2024-42"), "2024-42");
    assert_eq!(letter_part("PO-2024-42"), "PO");
}

#[test]
fn too_short_or_digitless_references_are_dropped() {
    assert_eq!(key("7"), None);
    assert_eq!(key("--"), None);
    assert_eq!(key("n/a"), None);
    assert_eq!(key("siehe Anlage"), None);
}

#[test]
fn the_own_number_is_kept_apart_from_the_cited_ones() {
    let data = test_data(json!({
        "invoice_number": "RE-2024-0815",
        "po_reference": "PO-0042, PO-0043",
        "delivery_note_reference": "LS-77; 12345",
    }));

    let refs = References::read(&data, DocumentType::Invoice);

    assert_eq!(refs.own, vec!["RE-2024-815"]);
    assert_eq!(refs.purchase_orders, vec!["PO-42", "PO-43"]);
    assert_eq!(refs.delivery_notes, vec!["12345", "LS-77"]);
    assert!(refs.invoices.is_empty());
}

#[test]
fn a_purchase_orders_po_number_and_a_credit_notes_number_are_their_own() {
    let po = References::read(
        &test_data(json!({"po_number": "4500123"})),
        DocumentType::PurchaseOrder,
    );
    assert_eq!(po.own, vec!["4500123"]);
    assert!(po.purchase_orders.is_empty());

    let dn = References::read(
        &test_data(json!({"invoice_number": "LS-1", "po_reference": "PO-9"})),
        DocumentType::DeliveryNote,
    );
    assert_eq!(
        (dn.own.clone(), dn.purchase_orders.clone()),
        (vec!["LS-1".to_owned()], vec!["PO-9".to_owned()])
    );

    let cn = References::read(
        &test_data(json!({"invoice_number": "GS-7", "invoice_reference": "RE-2024-0815"})),
        DocumentType::CreditNote,
    );
    assert_eq!(cn.own, vec!["GS-7"]);
    assert_eq!(cn.invoices, vec!["RE-2024-815"]);
}

#[test]
fn search_keys_hold_every_key_and_the_number_part_of_prefixed_ones() {
    let refs = References::read(
        &test_data(json!({"invoice_number": "RE-1001", "po_reference": "4500123"})),
        DocumentType::Invoice,
    );
    assert_eq!(refs.search_keys(), vec!["1001", "4500123", "RE-1001"]);
}

#[test]
fn digit_groups_split_merged_or_misread_share_a_search_form() {
    let shared = |a: &str, b: &str| {
        let (fa, fb) = (search_forms(a), search_forms(b));
        fa.iter().any(|f| fb.contains(f))
    };
    assert!(shared("45000 12345", "4500012345"));
    assert!(shared("LS-2024-00123", "LS202400123"));
    assert!(shared("PO 45000-77001", "4500077001"));
    assert!(shared("PO-2024-O042", "PO-2024-0042"));
    assert!(shared("po 2024-042", "PO-2024/0042"));
    assert!(!shared("4500012345", "4500012399"));
    assert!(!shared("LS-2024-00123", "LS-2024-00124"));
    assert_eq!(search_forms("n/a"), Vec::<String>::new());
    // A short run is no search form of its own.
    assert_eq!(search_forms("PO-7-1"), vec!["PO-7-1", "7-1"]);
}

#[test]
fn own_and_cited_keys_are_typed_and_kept_apart() {
    let invoice = SearchKeys::read(
        &test_data(
            json!({"invoice_number": "RE-12345", "po_reference": "PO-12345",
                "delivery_note_reference": "LS 4711"}),
        ),
        DocumentType::Invoice,
    );
    assert_eq!(invoice.own, vec!["inv:12345", "inv:RE-12345"]);
    assert_eq!(
        invoice.cited,
        vec!["dn:4711", "dn:LS-4711", "po:12345", "po:PO-12345"]
    );
    // Its citations are looked up among orders' and notes' own numbers only.
    let own_probe = invoice.own_probe();
    assert!(own_probe.contains(&"po:12345".to_owned()));
    assert!(own_probe.contains(&"dn:LS-4711".to_owned()));
    assert!(
        !own_probe.iter().any(|k| k.starts_with("inv:")),
        "{own_probe:?}"
    );
    // Its own number among what others cite as an invoice.
    let cited_probe = invoice.cited_probe();
    assert!(cited_probe.contains(&"inv:RE-12345".to_owned()));
    assert!(cited_probe.contains(&"po:PO-12345".to_owned()));

    let order = SearchKeys::read(
        &test_data(json!({"po_number": "45000 12345"})),
        DocumentType::PurchaseOrder,
    );
    assert_eq!(order.own, vec!["po:45000-12345", "po:4500012345"]);
    assert!(order.cited.is_empty());
    // The invoice citing it merged finds it.
    let citing = SearchKeys::read(
        &test_data(json!({"po_reference": "4500012345"})),
        DocumentType::Invoice,
    );
    assert!(citing.own_probe().iter().any(|k| order.own.contains(k)));
}

#[test]
fn an_extraction_is_normalised_with_every_field() {
    let data = test_data(json!({
        "document_type": "invoice",
        "invoice_number": "RE-2024-0815",
        "invoice_date": "2024-03-10",
        "supplier_name": "Acme Bürobedarf GmbH",
        "supplier_vat_id": "DE 123 456 789",
        "supplier_iban": "DE89 3704 0044 0532 0130 00",
        "po_reference": "PO-0042",
        "total": 119.0,
        "line_items": [{"description": "Toner"}]
    }));

    let n = normalize(&data, DocumentType::Invoice);

    assert_eq!(n.counterparty.as_deref(), Some("acme buerobedarf"));
    assert_eq!(n.vat_id.as_deref(), Some("DE123456789"));
    assert_eq!(n.iban.as_deref(), Some("DE89370400440532013000"));
    assert_eq!(n.date, NaiveDate::from_ymd_opt(2024, 3, 10));
    assert_eq!(
        n.reference_keys,
        vec!["2024-815", "42", "PO-42", "RE-2024-815"]
    );
    assert!(n.searchable_text.contains("Toner"), "{}", n.searchable_text);
    assert!(n.searchable_text.contains("PO-42"), "{}", n.searchable_text);
}

#[test]
fn the_customer_is_the_counterparty_when_no_supplier_was_extracted() {
    let n = normalize(
        &test_data(json!({"customer_name": "Beta AG"})),
        DocumentType::Invoice,
    );
    assert_eq!(n.counterparty.as_deref(), Some("beta"));
    assert!(n.reference_keys.is_empty());
}
