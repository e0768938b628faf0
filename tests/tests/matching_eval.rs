//! The labelled evaluation set (`docflow::matching::eval`) through the real matching
//! function: a local queue on moto, several concurrent event-source mappings, Postgres,
//! score-only decisions. A small seed with the quality bar asserted; `docflow eval
//! matching --documents 3000` gives the figure in docs/matching.md.

mod matching_support;

use std::time::Duration;

use docflow::matching::eval::{EvalOptions, evaluate};
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
