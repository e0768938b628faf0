//! Tests of the score: each weight of the table, the contradictions, and the ranking
//! of evidence, on pairs of documents.

use serde_json::{Value, json};

use super::*;
use crate::extract::test_data;
use crate::matching::normalize::References;

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
