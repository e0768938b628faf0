//! The local wiring hands each function what Terraform hands it in AWS: a source queue
//! whose visibility timeout outlasts the function and its heartbeat, and that queue's
//! own visibility timeout as the batch runtime's `QUEUE_VISIBILITY_TIMEOUT_SECONDS`.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use docflow::settings::Settings;
use docflow_cli::run::FUNCTIONS;
use docflow_cli::wiring::{Local, Options, Queues};
use docflow_dev::local::{QueueSpec, function_timeout, source_visibility};
use docflow_tests::*;

async fn visibility_of(sqs: &aws_sdk_sqs::Client, url: &str) -> Duration {
    let seconds: u64 = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::VisibilityTimeout)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::VisibilityTimeout]
        .parse()
        .unwrap();
    Duration::from_secs(seconds)
}

#[tokio::test]
async fn local_up_gives_each_source_queue_six_times_its_function_timeout() {
    let aws = aws().await;
    let stack = docflow_dev::local::provision(&aws, 3, &serde_json::json!({}))
        .await
        .unwrap();
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let defaults = Settings::from_env(&docflow::settings::fixed_env(&[(
        "DOCFLOW_SECRET_ID",
        "docflow/app",
    )]))
    .unwrap();
    for function in FUNCTIONS {
        let queue = format!("docflow-{function}");
        let url = &stack.queues[queue.as_str()].url;
        let visibility = visibility_of(&sqs, url).await;
        assert_eq!(visibility, 6 * function_timeout(function), "{queue}");
        assert_eq!(visibility, source_visibility(&queue));
        // A message must not reappear while a run is still within its timeout, nor at
        // the moment of the first heartbeat.
        assert!(visibility > function_timeout(function), "{queue}");
        assert!(visibility > defaults.batch.heartbeat.every, "{queue}");
    }
}

#[tokio::test]
async fn each_function_s_runtime_knows_its_own_source_queue_s_visibility() {
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let spec = |seconds| QueueSpec {
        visibility_timeout: Duration::from_secs(seconds),
        ..QueueSpec::default()
    };
    let queues = Queues {
        ingestion: fresh_queue(&sqs, "wiring-ingestion", spec(1800)).await,
        matching: fresh_queue(&sqs, "wiring-matching", spec(720)).await,
        document_output: fresh_queue(&sqs, "wiring-output", spec(725)).await,
    };
    let vars = [("LLM_PROVIDER", "rules")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let local = Local::build(
        aws,
        queues,
        None,
        Options {
            concurrency: 1,
            vars,
        },
    )
    .await
    .unwrap();

    for (function, seconds) in [
        ("ingestion", 1800),
        ("matching", 720),
        ("document-output", 725),
    ] {
        assert_eq!(
            local.settings_of(function).batch.queue_visibility,
            Some(Duration::from_secs(seconds)),
            "{function}"
        );
    }
}
