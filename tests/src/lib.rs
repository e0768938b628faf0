//! Helpers shared by the integration tests: the local AWS emulator, unique names,
//! Lambda events built from real received messages, text PDFs.

pub mod aws_calls;
pub mod emf;
pub mod fuzz_targets;
pub mod gate;
pub mod hostile;
pub mod hostile_files;
pub mod ingestion_harness;
pub mod llm;
pub mod logs;
pub mod pdf;
pub mod sandbox;
pub mod scan;
pub mod time_warp;

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_config::SdkConfig;
use aws_lambda_events::event::sqs::SqsEvent;
use docflow_dev::local::{EventSourceMapping, QueuePair, QueueSpec};
use lambda_runtime::{Context, LambdaEvent};

/// The emulator endpoint: `AWS_ENDPOINT_URL`, default the moto server of `make up`.
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "http://127.0.0.1:4566".to_owned())
}

pub async fn aws() -> SdkConfig {
    docflow::aws::local(&endpoint())
}

pub async fn sqs() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&aws().await)
}

/// A name no other test uses, so tests never share queues, secrets or buckets.
/// A function's pool to the database of `pool` (a test's), as the function connects in
/// AWS: as its own role (`docflow::db::FUNCTION_ROLES`), over TLS with `verify-full`
/// against the local CA, through the RDS Proxy stand-in of `make up`, and checked on
/// connect (the role's session settings, the schema version). The test keeps `pool`
/// (the superuser's) for its own seeding and reading.
pub fn function_pool(pool: &sqlx::PgPool, function: &str) -> sqlx::PgPool {
    let database = pool
        .connect_options()
        .get_database()
        .expect("a test pool names its database")
        .to_owned();
    let local = docflow_dev::local::database::LocalDatabase::from_env().expect("the local stack");
    let url = local
        .function_url(function, Some(&database))
        .expect("a function with a role");
    docflow::db::lazy_pool(
        &secrecy::SecretString::from(url),
        10,
        &format!("docflow-{function}"),
        None,
    )
    .expect("the function's pool")
}

/// A fixture's `structured_data`, written as ingestion writes it: `fields` read as a
/// [`docflow::extract::Extraction`] and stored with
/// [`docflow::extract::Extraction::to_stored`]. `extraction_successful` and `confidence`
/// default to `true` and `high`. Panics on a key the contract does not have (under its
/// current name), so a fixture cannot hold data no extractor writes.
pub fn stored_extraction(fields: serde_json::Value) -> serde_json::Value {
    use docflow::extract::Extraction;
    let mut fields = fields;
    let object = fields.as_object_mut().expect("fields are a JSON object");
    object
        .entry("extraction_successful")
        .or_insert(serde_json::Value::Bool(true));
    object.entry("confidence").or_insert("high".into());
    let extraction = Extraction::from_stored(&fields).unwrap_or_else(|e| panic!("{e}: {fields}"));
    let stored = extraction.to_stored();
    for (key, value) in fields.as_object().expect("an object") {
        assert!(
            value.is_null() || stored.get(key).is_some_and(|v| !v.is_null()),
            "fixture key {key:?} is not a field of the extraction contract: {fields}"
        );
    }
    stored
}

/// [`stored_extraction`] read back: the `Extraction` a reader of the row gets.
pub fn extraction(fields: serde_json::Value) -> docflow::extract::Extraction {
    docflow::extract::Extraction::from_stored(&stored_extraction(fields))
        .expect("a stored extraction reads back")
}

/// Claims the document for matching and matches it as the matching function does,
/// without an LLM; panics when it cannot be claimed or the run fails.
pub async fn matched(pool: &sqlx::PgPool, id: uuid::Uuid) -> docflow::matching::MatchReport {
    use docflow::matching::{self, MatchingConfig, status};
    let doc = match status::claim(pool, id, None, status::DEFAULT_CLAIM_LEASE)
        .await
        .unwrap()
    {
        status::Claim::Claimed(doc) => doc,
        other => panic!("document {id} not claimable: {other:?}"),
    };
    matching::match_document(pool, None, &MatchingConfig::default(), &doc)
        .await
        .unwrap()
}

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// A fresh queue with its DLQ and redrive policy.
pub async fn fresh_queue(sqs: &aws_sdk_sqs::Client, prefix: &str, spec: QueueSpec) -> QueuePair {
    let name = if spec.fifo {
        format!("{}.fifo", unique(prefix))
    } else {
        unique(prefix)
    };
    docflow_dev::local::ensure_queue_with_dlq(sqs, &name, spec)
        .await
        .expect("create test queue")
}

/// A fresh, empty bucket.
pub async fn fresh_bucket(s3: &aws_sdk_s3::Client) -> String {
    let bucket = unique("docflow-docs");
    docflow_dev::local::ensure_bucket(s3, &bucket)
        .await
        .expect("create test bucket");
    bucket
}

pub async fn send(sqs: &aws_sdk_sqs::Client, url: &str, body: &str) -> String {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .expect("send message")
        .message_id
        .expect("message id")
}

pub async fn send_to_group(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    group: &str,
    body: &str,
) -> String {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .message_group_id(group)
        .message_deduplication_id(uuid::Uuid::new_v4().to_string())
        .send()
        .await
        .expect("send message")
        .message_id
        .expect("message id")
}

/// Bodies currently receivable on a queue (received with visibility 0, so they stay
/// available for the next test step).
pub async fn visible_bodies(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .visibility_timeout(0)
        .send()
        .await
        .expect("receive");
    out.messages
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.body)
        .collect()
}

/// A mapping that polls `url` with batches of 10 and a 1 s long poll.
pub async fn mapping(sqs: &aws_sdk_sqs::Client, url: &str) -> EventSourceMapping {
    EventSourceMapping::new(sqs.clone(), url)
        .await
        .expect("mapping")
}

/// Polls until a batch of exactly `n` records arrives (moto may split a batch).
pub async fn poll_n(esm: &EventSourceMapping, n: usize) -> SqsEvent {
    let mut event = SqsEvent::default();
    for _ in 0..20 {
        if let Some(batch) = esm.poll().await.expect("poll") {
            event.records.extend(batch.records);
        }
        if event.records.len() >= n {
            return event;
        }
    }
    panic!("expected {n} records, got {}", event.records.len());
}

/// Polls until a batch of `n` records arrives, for as long as `timeout` (long polls of
/// 1 s): for a message that must come back (after a `Retry`, say) sooner than something
/// else would bring it back. Panics after `timeout`.
pub async fn poll_n_within(esm: &EventSourceMapping, n: usize, timeout: Duration) -> SqsEvent {
    let mut event = SqsEvent::default();
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        if let Some(batch) = esm.poll().await.expect("poll") {
            event.records.extend(batch.records);
        }
        if event.records.len() >= n {
            return event;
        }
    }
    panic!(
        "expected {n} records within {} s, got {}",
        timeout.as_secs(),
        event.records.len()
    );
}

/// Waits until `check` holds, looking every 20 ms; panics naming `what` after `timeout`.
/// For tests that wait on a condition instead of sleeping for a guess of how long it
/// takes.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let waited = tokio::time::timeout(timeout, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}: not within {} s", timeout.as_secs());
}

/// The message ids a batch response reports as failed.
pub fn failed_ids(response: &aws_lambda_events::event::sqs::SqsBatchResponse) -> HashSet<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

/// A Lambda event with a deadline `budget` from now (or none).
pub fn lambda_event(payload: SqsEvent, budget: Option<Duration>) -> LambdaEvent<SqsEvent> {
    let mut context = Context::default();
    context.request_id = uuid::Uuid::new_v4().to_string();
    if let Some(budget) = budget {
        let deadline = SystemTime::now() + budget;
        context.deadline = deadline.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    }
    LambdaEvent::new(payload, context)
}

pub mod output;
