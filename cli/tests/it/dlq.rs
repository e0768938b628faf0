//! `docflow dlq list|redrive` on real queues: messages that went to the DLQ through
//! the redrive policy go back to the source queue, bodies and attributes kept; a dry run
//! and a listing move nothing.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use aws_sdk_sqs::types::MessageAttributeValue;
use docflow_cli::dlq;
use docflow_dev::local::{QueuePair, QueueSpec, depth};
use docflow_tests::*;

/// A queue whose redrive policy moved `bodies` to its DLQ (one receive allowed, then
/// the next receive moves them, as in SQS).
async fn dead_lettered(sqs: &aws_sdk_sqs::Client, bodies: &[&str]) -> QueuePair {
    let queue = fresh_queue(
        sqs,
        "dlq-cli",
        QueueSpec {
            visibility_timeout: Duration::from_secs(30),
            max_receive_count: 1,
            fifo: false,
        },
    )
    .await;
    for body in bodies {
        sqs.send_message()
            .queue_url(&queue.url)
            .message_body(*body)
            .message_attributes(
                "origin",
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(format!("test-{body}"))
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
    }
    let mut received = 0;
    while received < bodies.len() {
        received += visible_bodies(sqs, &queue.url).await.len();
    }
    for _ in 0..5 {
        if depth(sqs, &queue.dlq_url).await.unwrap() == bodies.len() as u64 {
            break;
        }
        // The next receive is what moves them (nothing comes back).
        assert!(visible_bodies(sqs, &queue.url).await.is_empty());
    }
    assert_eq!(
        depth(sqs, &queue.dlq_url).await.unwrap(),
        bodies.len() as u64
    );
    assert_eq!(depth(sqs, &queue.url).await.unwrap(), 0);
    queue
}

fn set(items: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    items.into_iter().collect()
}

#[tokio::test]
async fn redrive_moves_every_message_back_with_its_body_and_attributes() {
    let sqs = sqs().await;
    let queue = dead_lettered(&sqs, &["doc-a", "doc-b", "doc-c"]).await;

    let listed = dlq::list(&sqs, &queue.dlq_url, 100).await.unwrap();
    let dry = dlq::redrive(&sqs, &queue.dlq_url, &queue.url, 100, true)
        .await
        .unwrap();

    assert_eq!(
        set(listed.iter().map(|m| m.body.clone())),
        set(["doc-a", "doc-b", "doc-c"].map(String::from))
    );
    assert!(
        listed
            .iter()
            .all(|m| m.receive_count.is_some_and(|c| c >= 1))
    );
    assert_eq!(dry.moved.len(), 3);
    assert_eq!(
        depth(&sqs, &queue.dlq_url).await.unwrap(),
        3,
        "listing and a dry run move nothing"
    );
    assert_eq!(depth(&sqs, &queue.url).await.unwrap(), 0);

    let report = dlq::redrive(&sqs, &queue.dlq_url, &queue.url, 100, false)
        .await
        .unwrap();

    assert_eq!(report.moved.len(), 3);
    assert!(
        report.failed.is_empty() && report.duplicated.is_empty(),
        "{report:?}"
    );
    assert_eq!(depth(&sqs, &queue.dlq_url).await.unwrap(), 0);
    let back = sqs
        .receive_message()
        .queue_url(&queue.url)
        .max_number_of_messages(10)
        .message_attribute_names("All")
        .visibility_timeout(0)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(
        set(back.iter().filter_map(|m| m.body.clone())),
        set(["doc-a", "doc-b", "doc-c"].map(String::from))
    );
    for message in &back {
        let origin = message
            .message_attributes()
            .and_then(|a| a.get("origin"))
            .and_then(|v| v.string_value())
            .map(str::to_owned);
        assert_eq!(origin, Some(format!("test-{}", message.body().unwrap())));
    }
}

#[tokio::test]
async fn redrive_stops_at_the_maximum() {
    let sqs = sqs().await;
    let queue = dead_lettered(&sqs, &["one", "two", "three"]).await;

    let report = dlq::redrive(&sqs, &queue.dlq_url, &queue.url, 2, false)
        .await
        .unwrap();

    assert_eq!(report.moved.len(), 2);
    assert_eq!(depth(&sqs, &queue.url).await.unwrap(), 2);
    assert_eq!(depth(&sqs, &queue.dlq_url).await.unwrap(), 1);
}

#[tokio::test]
async fn the_command_redrives_a_queue_named_by_url_and_says_how_many() {
    let sqs = sqs().await;
    let queue = dead_lettered(&sqs, &["x", "y"]).await;

    let output = Command::new(env!("CARGO_BIN_EXE_docflow"))
        .args(["dlq", "redrive", &queue.dlq_url])
        .env("AWS_ENDPOINT_URL", endpoint())
        .env("AWS_REGION", "eu-central-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap();

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.starts_with("moved 2 message(s)"), "{stdout}");
    assert_eq!(depth(&sqs, &queue.url).await.unwrap(), 2);
    assert_eq!(depth(&sqs, &queue.dlq_url).await.unwrap(), 0);
}

/// A listing that outlasts its messages' hiding (a large DLQ, a slow endpoint: here a
/// hiding of zero, so every message comes straight back) still ends, with each message
/// once, and leaves them all visible. It used to make a message received twice visible
/// at once, so it came back on the next receive, and so on for ever: the 2,000-document
/// soak hung there, listing its DLQs.
#[tokio::test]
async fn a_listing_whose_messages_come_back_while_it_runs_still_ends_with_each_once() {
    let sqs = aws_sdk_sqs::Client::new(&aws().await);
    let dlq = dead_lettered(&sqs, &["a", "b", "c"]).await;

    let listed = tokio::time::timeout(
        Duration::from_secs(60),
        dlq::list_hiding_for(&sqs, &dlq.dlq_url, 100, Duration::ZERO),
    )
    .await
    .expect("the listing ends")
    .unwrap();

    let bodies: BTreeSet<String> = listed.iter().map(|m| m.body.clone()).collect();
    assert_eq!(listed.len(), 3, "each message once: {bodies:?}");
    assert_eq!(bodies, BTreeSet::from(["a".into(), "b".into(), "c".into()]));
    assert_eq!(
        depth(&sqs, &dlq.dlq_url).await.unwrap(),
        3,
        "all visible again"
    );
}
