//! Tests of the decisions: the bands, contested and outranked candidates, the LLM's answer
//! checked and applied.

use serde_json::json;

use super::*;
use crate::extract::test_data;
use crate::llm::parse_json_answer;
use crate::matching::score::Relation;

pub(in crate::matching) fn scored(score: f64) -> Scored {
    Scored {
        id: Uuid::new_v4(),
        doc_type: DocumentType::PurchaseOrder,
        data: Extraction::empty(),
        score: Score {
            score,
            evidence: vec![Evidence::Reference {
                relation: Relation::Cites,
                references: vec!["PO-42".into()],
                specificity: 1.0,
                weight: 0.5,
            }],
        },
    }
}

/// A candidate whose score rests on supplier, lines and dates only.
pub(in crate::matching) fn circumstantial_candidate(doc_type: DocumentType, score: f64) -> Scored {
    Scored {
        doc_type,
        score: Score {
            score,
            evidence: vec![],
        },
        ..scored(score)
    }
}

#[tokio::test]
async fn without_an_llm_the_score_alone_decides_the_ambiguous_band() {
    let t = Thresholds::default();
    let (strong, mid_high, mid_low, weak) = (scored(0.9), scored(0.65), scored(0.55), scored(0.3));
    let all = vec![strong.clone(), mid_high.clone(), mid_low, weak];

    let decisions = decide(None, &t, DocumentType::Invoice, &Extraction::empty(), &all)
        .await
        .unwrap();

    let picked: Vec<(Uuid, Confidence)> = decisions
        .iter()
        .map(|d| (d.candidate_id, d.confidence))
        .collect();
    assert_eq!(
        picked,
        vec![
            (strong.id, Confidence::High),
            (mid_high.id, Confidence::Low)
        ]
    );
    assert!(decisions.iter().all(|d| d.decided_by == DecidedBy::Score));
}

#[tokio::test]
async fn two_orders_fitting_on_circumstance_alone_are_left_to_the_llm() {
    let t = Thresholds::default();
    let week_1 = circumstantial_candidate(DocumentType::PurchaseOrder, 0.65);
    let week_2 = circumstantial_candidate(DocumentType::PurchaseOrder, 0.65);
    let invoice = circumstantial_candidate(DocumentType::Invoice, 0.65);

    let decisions = decide(
        None,
        &t,
        DocumentType::DeliveryNote,
        &Extraction::empty(),
        &[week_1, week_2, invoice.clone()],
    )
    .await
    .unwrap();

    let picked: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    assert_eq!(picked, vec![invoice.id], "the only invoice is no contest");
}

#[tokio::test]
async fn a_circumstantial_candidate_beside_a_referenced_one_of_its_type_is_not_linked() {
    let t = Thresholds::default();
    let cited = scored(0.9);
    let look_alike = circumstantial_candidate(DocumentType::PurchaseOrder, 0.65);

    let decisions = decide(
        None,
        &t,
        DocumentType::Invoice,
        &Extraction::empty(),
        &[cited.clone(), look_alike],
    )
    .await
    .unwrap();

    let picked: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    assert_eq!(picked, vec![cited.id]);
}

#[test]
fn an_answer_naming_a_missing_candidate_is_rejected() {
    let answer: LlmAnswer =
        parse_json_answer(r#"{"matches":[{"candidate":3,"confidence":"high","reasoning":"x"}]}"#)
            .unwrap();
    assert!(validate(&answer, 2).unwrap_err().contains("does not exist"));
}

#[test]
fn an_answer_listing_a_candidate_twice_is_rejected() {
    let answer: LlmAnswer = parse_json_answer(
        r#"{"matches":[{"candidate":1,"confidence":"high","reasoning":"x"},
                       {"candidate":1,"confidence":"low","reasoning":"y"}]}"#,
    )
    .unwrap();
    assert!(validate(&answer, 2).unwrap_err().contains("twice"));
}

#[test]
fn an_unknown_confidence_is_a_transient_schema_failure() {
    let err = parse_json_answer::<LlmAnswer>(
        r#"{"matches":[{"candidate":1,"confidence":"certain","reasoning":"x"}]}"#,
    )
    .unwrap_err();
    assert!(matches!(err, LlmError::Schema(_)));
    use crate::retry::Classify;
    assert!(err.is_transient());
}

fn answer(json: &str) -> LlmAnswer {
    parse_json_answer(json).unwrap()
}

#[test]
fn a_low_confidence_answer_does_not_link() {
    let order = circumstantial_candidate(DocumentType::PurchaseOrder, 0.6);
    let note = circumstantial_candidate(DocumentType::DeliveryNote, 0.6);
    let decisions = confirmed(
        DocumentType::Invoice,
        &[&order, &note],
        answer(
            r#"{"matches":[{"candidate":1,"confidence":"low","reasoning":"maybe"},
                           {"candidate":2,"confidence":"medium","reasoning":"same goods"}]}"#,
        ),
    );
    let picked: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    assert_eq!(picked, vec![note.id]);
}

#[test]
fn confirming_two_orders_for_one_invoice_links_neither() {
    let week_1 = circumstantial_candidate(DocumentType::PurchaseOrder, 0.6);
    let week_2 = circumstantial_candidate(DocumentType::PurchaseOrder, 0.6);
    let everything = answer(
        r#"{"matches":[{"candidate":1,"confidence":"high","reasoning":"as told"},
                       {"candidate":2,"confidence":"high","reasoning":"as told"}]}"#,
    );
    assert_eq!(
        confirmed(
            DocumentType::Invoice,
            &[&week_1, &week_2],
            everything.clone()
        ),
        vec![]
    );
    // A purchase order may have several delivery notes: both confirmed when the
    // references tie them…
    let note_1 = scored(0.6);
    let note_2 = scored(0.6);
    let (note_1, note_2) = (
        Scored {
            doc_type: DocumentType::DeliveryNote,
            ..note_1
        },
        Scored {
            doc_type: DocumentType::DeliveryNote,
            ..note_2
        },
    );
    assert_eq!(
        confirmed(
            DocumentType::PurchaseOrder,
            &[&note_1, &note_2],
            everything.clone()
        )
        .len(),
        2
    );
    // …but not two on circumstance alone: an invoice citing nothing that tells the
    // reader to link all candidates gets neither look-alike delivery note.
    let look_alike_1 = circumstantial_candidate(DocumentType::DeliveryNote, 0.6);
    let look_alike_2 = circumstantial_candidate(DocumentType::DeliveryNote, 0.6);
    assert_eq!(
        confirmed(
            DocumentType::Invoice,
            &[&look_alike_1, &look_alike_2],
            everything
        ),
        vec![]
    );
}

/// A delivery note tied to the source only by the order both cite.
fn sharing_the_order(score: f64, date: &str, quantity: u32) -> Scored {
    Scored {
        doc_type: DocumentType::DeliveryNote,
        data: test_data(json!({"invoice_date": date,
                                "line_items": [{"description": "Copy paper", "quantity": quantity}]})),
        score: Score {
            score,
            evidence: vec![Evidence::Reference {
                relation: Relation::Shared,
                references: vec!["4500012345".into()],
                specificity: 1.0,
                weight: 0.25,
            }],
        },
        ..scored(score)
    }
}

fn invoice_of(date: &str, quantity: u32) -> Extraction {
    test_data(
        json!({"invoice_date": date, "line_items": [{"description": "Copy paper", "quantity": quantity}]}),
    )
}

async fn picked(source: &Extraction, candidates: &[Scored]) -> Vec<Uuid> {
    decide(
        None,
        &Thresholds::default(),
        DocumentType::Invoice,
        source,
        candidates,
    )
    .await
    .unwrap()
    .iter()
    .map(|d| d.candidate_id)
    .collect()
}

#[tokio::test]
async fn among_notes_tied_only_by_the_shared_order_the_uniquely_nearest_alone_is_linked() {
    let this_month = sharing_the_order(0.85, "2024-03-03", 20);
    let last_month = sharing_the_order(0.8, "2024-02-03", 20);
    let next_month = sharing_the_order(0.8, "2024-04-03", 20);
    let other_quantity = sharing_the_order(0.75, "2024-03-05", 35);
    let all = [last_month, this_month.clone(), next_month, other_quantity];

    assert_eq!(
        picked(&invoice_of("2024-03-06", 20), &all).await,
        vec![this_month.id]
    );
}

#[tokio::test]
async fn two_equally_near_notes_tied_only_by_the_shared_order_are_neither_linked() {
    // Two partial deliveries of equal quantity, three days before and after.
    let before = sharing_the_order(0.85, "2024-03-03", 10);
    let after = sharing_the_order(0.85, "2024-03-09", 10);

    assert!(
        picked(&invoice_of("2024-03-06", 10), &[before, after])
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_note_the_invoice_cites_outranks_the_notes_that_only_share_its_order() {
    let mut cited = sharing_the_order(0.8, "2024-03-01", 20);
    cited.score.evidence = vec![Evidence::Reference {
        relation: Relation::Cites,
        references: vec!["LS-2024-2".into()],
        specificity: 1.0,
        weight: 0.5,
    }];
    let nearer = sharing_the_order(0.85, "2024-03-05", 20);

    assert_eq!(
        picked(&invoice_of("2024-03-06", 20), &[cited.clone(), nearer]).await,
        vec![cited.id]
    );
}

#[tokio::test]
async fn a_pair_resting_on_its_embedding_alone_is_never_linked_by_the_score() {
    let semantic = |score: f64| {
        let mut c = circumstantial_candidate(DocumentType::PurchaseOrder, score);
        c.score.evidence = vec![Evidence::SemanticSimilarity {
            similarity: 0.95,
            weight: 0.665,
        }];
        c
    };
    let high = semantic(0.9);
    let t = Thresholds::default();
    assert_eq!(band_of(&t, &high.score), Band::Ambiguous);
    assert!(picked(&Extraction::empty(), &[high]).await.is_empty());
    assert!(
        picked(&Extraction::empty(), &[semantic(0.65)])
            .await
            .is_empty()
    );
    // The same score with the supplier known some other way links as before.
    let known = circumstantial_candidate(DocumentType::PurchaseOrder, 0.9);
    assert_eq!(
        picked(&Extraction::empty(), std::slice::from_ref(&known)).await,
        vec![known.id]
    );
}

/// At most [`MAX_LLM_CANDIDATES`] candidates per call, the highest
/// scores, in their order; the others are returned to be decided by the score.
#[test]
fn at_most_the_llm_limit_of_candidates_go_to_one_call_the_highest_scores() {
    let all: Vec<Scored> = (0..MAX_LLM_CANDIDATES + 4)
        .map(|i| scored(0.5 + 0.01 * ((i * 7) % 12) as f64))
        .collect();
    let mut band: Vec<&Scored> = all.iter().collect();
    let over = over_the_llm_limit(&mut band);
    assert_eq!(band.len(), MAX_LLM_CANDIDATES);
    assert_eq!(over.len(), 4);
    let lowest_sent = band.iter().map(|c| c.score.score).fold(1.0, f64::min);
    assert!(over.iter().all(|c| c.score.score <= lowest_sent));
    // In their original order.
    let positions: Vec<usize> = band
        .iter()
        .map(|c| all.iter().position(|a| a.id == c.id).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");

    let mut few: Vec<&Scored> = all.iter().take(3).collect();
    assert!(over_the_llm_limit(&mut few).is_empty());
    assert_eq!(few.len(), 3);
}

#[test]
fn an_empty_match_list_is_a_valid_answer() {
    let answer: LlmAnswer = parse_json_answer(r#"{"matches": []}"#).unwrap();
    assert!(validate(&answer, 1).is_ok());
}
