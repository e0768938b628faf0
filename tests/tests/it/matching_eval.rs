//! The labelled evaluation set (`docflow::matching::eval`) through the real matching
//! function: a local queue on moto, several concurrent event-source mappings, Postgres,
//! score-only decisions. A small seed with the quality bar asserted; `docflow eval
//! matching --documents 3000` gives the figure in docs/matching.md.

use crate::matching_support;

use std::time::Duration;

use docflow::matching::eval::{EvalOptions, Mix, Scenario, evaluate, stand_in_llm_response};
use docflow::notify::Notifier;
use matching_support::deps;
use sqlx::PgPool;

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_small_labelled_set_is_matched_with_high_precision_and_recall(pool: PgPool) {
    let deps = deps(&pool, None, Notifier::default()).await;
    let sqs = docflow_tests::sqs().await;
    let options = EvalOptions {
        seed: 11,
        documents: 300,
        pollers: 3,
        stall: Duration::from_secs(60),
        semantic_cases: false,
        mix: Mix::Classic,
    };

    let outcome = evaluate(&pool, &sqs, options, |event| {
        matching::handler(&deps, event)
    })
    .await
    .unwrap();

    let r = &outcome.report;
    println!("{r}");
    assert_eq!((outcome.run.unfinished, outcome.run.failed), (0, 0));
    assert!(r.documents >= 300);
    assert!(r.clusters.precision() >= 0.95, "{r}");
    assert!(r.clusters.recall() >= 0.95, "{r}");
    assert!(r.edges.precision() >= 0.9, "{r}");
    assert!(r.edges.recall() >= 0.9, "{r}");
}

/// The held-out seed of docs/matching.md (never tuned on): the full mix — framework
/// orders, messy reference shapes, look-alike suppliers, sparse fields, re-extraction
/// during the run, instructions in the document text — with the LLM stand-in that obeys
/// such instructions deciding the ambiguous band.
const HELD_OUT_SEED: u64 = 2424;

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_held_out_seed_of_the_full_mix_meets_the_edge_targets_with_every_scenario_listed(
    pool: PgPool,
) {
    let llm = wiremock::MockServer::start().await;
    matching_support::messages()
        .respond_with(|request: &wiremock::Request| {
            let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
            wiremock::ResponseTemplate::new(200).set_body_json(stand_in_llm_response(&body))
        })
        .mount(&llm)
        .await;
    let deps = deps(
        &pool,
        Some(matching_support::llm_client(&llm)),
        Notifier::default(),
    )
    .await;
    let sqs = docflow_tests::sqs().await;
    let options = EvalOptions {
        seed: HELD_OUT_SEED,
        // About 40 s on the shared 2-core box: every scenario appears at this size.
        documents: 400,
        pollers: 3,
        stall: Duration::from_secs(60),
        semantic_cases: false,
        mix: Mix::Full,
    };

    let outcome = evaluate(&pool, &sqs, options, |event| {
        matching::handler(&deps, event)
    })
    .await
    .unwrap();

    let r = &outcome.report;
    println!("{r}");
    assert_eq!((outcome.run.unfinished, outcome.run.failed), (0, 0), "{r}");
    let listed: Vec<Scenario> = r.by_scenario.iter().map(|(s, _)| *s).collect();
    for scenario in Scenario::ALL {
        if scenario != Scenario::RenamedSupplier {
            assert!(listed.contains(&scenario), "{scenario:?} missing: {r}");
        }
    }
    assert!(
        !outcome.set.re_extractions.is_empty(),
        "a re-extraction ran during the run"
    );
    assert!(
        llm_called(&llm).await,
        "the ambiguous band reached the LLM stand-in"
    );
    assert!(r.edges.precision() >= 0.95, "{r}");
    assert!(r.edges.recall() >= 0.9, "{r}");
}

async fn llm_called(server: &wiremock::MockServer) -> bool {
    matching_support::llm_calls(server).await > 0
}
