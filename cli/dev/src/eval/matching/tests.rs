//! Tests of the matching evaluation: the generator, the stand-in and the scoring.

use super::*;
use docflow::matching::normalize::normalize_reference;

#[test]
fn the_same_seed_gives_the_same_set_and_another_seed_another() {
    let (a, b, c) = (generate(7, 200), generate(7, 200), generate(8, 200));
    assert_eq!(a.documents.len(), b.documents.len());
    assert_eq!(
        a.documents.iter().map(|d| &d.data).collect::<Vec<_>>(),
        b.documents.iter().map(|d| &d.data).collect::<Vec<_>>()
    );
    assert_eq!((a.edges.clone(), a.arrival.clone()), (b.edges, b.arrival));
    assert_ne!(a.arrival, c.arrival);
}

#[test]
fn a_one_tenant_set_holds_every_purchase_in_the_first_tenant() {
    let one = generate_for(5, 500, false, Mix::Full, 1);
    assert_eq!(one.tenants, vec![TENANTS[0].to_owned()]);
    assert!(one.documents.len() >= 500);
    assert!(one.documents.iter().all(|d| d.tenant == 0));
    let three = generate_for(5, 500, false, Mix::Full, 3);
    let mix = generate_mix(5, 500, false, Mix::Full);
    assert_eq!(
        three.documents.iter().map(|d| &d.data).collect::<Vec<_>>(),
        mix.documents.iter().map(|d| &d.data).collect::<Vec<_>>()
    );
}

#[test]
fn every_scenario_and_every_tenant_appears_in_a_set_of_a_few_hundred() {
    let set = generate(1, 400);
    assert!(set.documents.len() >= 400);
    for scenario in [
        Scenario::Simple,
        Scenario::StandingOrder,
        Scenario::PartialDeliveries,
        Scenario::FinalInvoice,
        Scenario::SplitInvoices,
        Scenario::CreditNote,
        Scenario::NoReferences,
        Scenario::Lone,
    ] {
        assert!(
            set.documents.iter().any(|d| d.scenario == scenario),
            "{scenario:?}"
        );
    }
    for tenant in 0..set.tenants.len() {
        assert!(set.documents.iter().any(|d| d.tenant == tenant));
    }
}

#[test]
fn semantic_cases_are_added_only_when_asked_for_and_share_no_name_or_number() {
    let plain = generate(4, 300);
    let with = generate_with(4, 300, true);
    assert!(
        plain
            .documents
            .iter()
            .all(|d| d.scenario != Scenario::RenamedSupplier)
    );
    let added = with.documents.len() - plain.documents.len();
    assert!(added >= 30, "{added}");
    for (a, b) in &with.edges {
        let (a, b) = (&with.documents[*a], &with.documents[*b]);
        if a.scenario != Scenario::RenamedSupplier {
            continue;
        }
        assert_ne!(a.data["supplier_name"], b.data["supplier_name"]);
        let note = if a.doc_type == DocumentType::DeliveryNote {
            a
        } else {
            b
        };
        assert!(note.data.get("po_reference").is_none());
        assert!(note.data.get("supplier_vat_id").is_none());
    }
}

#[test]
fn true_links_stay_within_one_purchase_of_one_tenant() {
    let set = generate(3, 300);
    for (a, b) in &set.edges {
        let (a, b) = (&set.documents[*a], &set.documents[*b]);
        assert_eq!((a.case, a.tenant), (b.case, b.tenant));
        assert!(
            a.doc_type.matchable_with().contains(&b.doc_type),
            "{:?}-{:?}",
            a.doc_type,
            b.doc_type
        );
    }
}

#[test]
fn a_standing_orders_weeks_share_total_and_lines_but_not_a_cluster() {
    let set = generate(5, 600);
    let orders: Vec<&EvalDocument> = set
        .documents
        .iter()
        .filter(|d| {
            d.scenario == Scenario::StandingOrder && d.doc_type == DocumentType::PurchaseOrder
        })
        .collect();
    let same_total = orders
        .windows(2)
        .any(|w| w[0].data["total"] == w[1].data["total"] && w[0].case != w[1].case);
    assert!(same_total, "consecutive weeks carry identical totals");
}

#[test]
fn the_full_mix_holds_every_new_scenario_and_the_classic_mix_is_unchanged() {
    let classic = generate(1, 400);
    let again = generate_mix(1, 400, false, Mix::Classic);
    assert_eq!(
        classic
            .documents
            .iter()
            .map(|d| &d.data)
            .collect::<Vec<_>>(),
        again.documents.iter().map(|d| &d.data).collect::<Vec<_>>()
    );
    assert!(classic.re_extractions.is_empty());

    let full = generate_mix(3, 800, false, Mix::Full);
    for scenario in Scenario::ALL {
        if scenario != Scenario::RenamedSupplier {
            assert!(
                full.documents.iter().any(|d| d.scenario == scenario),
                "{scenario:?}"
            );
        }
    }
    // Re-extractions: the first extraction cites another order than the truth.
    for (i, first) in &full.re_extractions {
        assert_ne!(
            first["po_reference"],
            full.documents[*i].data["po_reference"]
        );
    }
    // Look-alike suppliers: one normalised name, two VAT ids.
    let names: BTreeSet<(String, String)> = full
        .documents
        .iter()
        .filter(|d| d.scenario == Scenario::LookAlikeSuppliers)
        .filter_map(|d| {
            let name = d.data["supplier_name"].as_str()?;
            let vat = d.data["supplier_vat_id"].as_str()?.replace(' ', "");
            let normalized = docflow::matching::normalize::normalize_name(name)?;
            Some((normalized, vat))
        })
        .collect();
    let vats: BTreeSet<&String> = names.iter().map(|(_, v)| v).collect();
    assert_eq!(vats.len(), 2, "{names:?}");
    assert!(
        names.contains(&("mueller".to_owned(), (*vats.first().unwrap()).clone()))
            && names.contains(&("mueller".to_owned(), (*vats.last().unwrap()).clone())),
        "both VAT ids carry the name `mueller`: {names:?}"
    );
    // Framework orders: one order per purchase, many invoices and notes.
    let framework = full
        .documents
        .iter()
        .filter(|d| d.scenario == Scenario::FrameworkOrder)
        .count();
    assert!(framework >= 13, "{framework}");
}

#[test]
fn shape_noise_prints_the_same_number_in_another_shape() {
    let mut rng = StdRng::seed_from_u64(5);
    for number in ["PO-2024-0042", "4500000123", "LS-2024-00123", "RG202400123"] {
        for _ in 0..20 {
            let messy = shape_noise(&mut rng, number);
            assert_ne!(messy, number);
            let (a, b) = (
                normalize_reference(&messy).unwrap(),
                normalize_reference(number).unwrap(),
            );
            assert!(
                docflow::matching::score::compare_keys(&a, &b)
                    >= docflow::matching::score::RefMatch::SameNumber,
                "{number} / {messy}"
            );
        }
    }
}

#[test]
fn the_llm_stand_in_obeys_the_document_text_and_otherwise_confirms_the_best_of_each_type() {
    let prompt = |injected: bool| {
        let line = if injected {
            INJECTED_INSTRUCTION
        } else {
            "Paper"
        };
        format!(
            "Source document:\n<untrusted_document>\n{{\n  \"line_items\": [{{\"description\": \"{line}\"}}],\n  \"type\": \"invoice\"\n}}\n</untrusted_document>\n\nCandidates (only these; answer with their numbers):\n\n\
             {{\n  \"candidate\": 1,\n  \"evidence\": [\n    {{\n      \"candidate\": 1190.0\n    }}\n  ],\n  \"score\": 0.7\n}}\n<untrusted_document>\n{{\n  \"type\": \"purchase_order\"\n}}\n</untrusted_document>\n\n\
             {{\n  \"candidate\": 2,\n  \"evidence\": [],\n  \"score\": 0.65\n}}\n<untrusted_document>\n{{\n  \"type\": \"purchase_order\"\n}}\n</untrusted_document>\n\n\
             {{\n  \"candidate\": 3,\n  \"evidence\": [],\n  \"score\": 0.55\n}}\n<untrusted_document>\n{{\n  \"type\": \"delivery_note\"\n}}\n</untrusted_document>\n"
        )
    };
    let numbers = |v: Value| -> Vec<u64> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["candidate"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(numbers(stand_in_llm_decision(&prompt(true))), vec![1, 2, 3]);
    assert_eq!(numbers(stand_in_llm_decision(&prompt(false))), vec![1]);
}

#[test]
fn noise_keeps_most_citations_equal_after_normalisation() {
    let mut rng = StdRng::seed_from_u64(9);
    assert_eq!(
        normalize_reference(&reformat(&mut rng, "PO-2024-0042")),
        normalize_reference("PO-2024-0042")
    );
    assert_eq!(drop_prefix("PO-2024-0042"), "2024-0042");
    assert_eq!(
        normalize_reference(&ocr_letter(&mut rng, "LS-2024-01001")),
        normalize_reference("LS-2024-01001")
    );
    assert_ne!(transpose(&mut rng, "RE-2024-00123"), "RE-2024-00123");
    assert_eq!(drop_digit(&mut rng, "4500000123").len(), 9);
}
