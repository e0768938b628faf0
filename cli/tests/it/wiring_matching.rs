//! The local wiring builds each function's `Deps` from the settings its `main.rs` reads.

use std::time::Duration;

use docflow_cli::wiring::{Local, Options, Queues};
use docflow_dev::local::QueueSpec;
use docflow_tests::*;

/// Found by the soak: `docflow local run` used the default matching thresholds whatever
/// `MATCH_*` said, while the Lambda (`matching::Deps::from_env`) reads them.
#[tokio::test]
async fn local_matching_reads_the_match_settings_as_the_lambda_does() {
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let spec = QueueSpec {
        visibility_timeout: Duration::from_secs(30),
        ..QueueSpec::default()
    };
    let queues = Queues {
        ingestion: fresh_queue(&sqs, "wiring-ingestion", spec).await,
        matching: fresh_queue(&sqs, "wiring-matching", spec).await,
        document_output: fresh_queue(&sqs, "wiring-output", spec).await,
    };
    let secret_id = unique("docflow-wiring/app");
    aws_sdk_secretsmanager::Client::new(&aws)
        .create_secret()
        .name(&secret_id)
        .secret_string("{}")
        .send()
        .await
        .unwrap();
    let vars = [
        ("DOCFLOW_SECRET_ID", secret_id),
        ("LLM_PROVIDER", "rules".to_owned()),
        ("MATCH_THRESHOLD", "0.9".to_owned()),
        ("MATCH_MAX_CANDIDATES", "7".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let pool = sqlx::PgPool::connect_lazy("postgres://postgres@127.0.0.1:5432/docflow").unwrap();
    let local = Local::build(
        aws,
        queues,
        Some(pool),
        Options {
            concurrency: 1,
            vars,
        },
    )
    .await
    .unwrap();

    let deps = local.matching().await.unwrap();

    assert_eq!(deps.config.thresholds.matched, 0.9);
    assert_eq!(deps.config.max_candidates, 7);
}
