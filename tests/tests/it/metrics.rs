//! The batch runtime's metrics (CloudWatch Embedded Metric Format) against real batches
//! on the local emulator: every counter follows what happened to the records, the lines
//! are valid EMF as CloudWatch reads them (`docflow_tests::emf`, written from the
//! specification), and in a real process they reach stdout as lines of their own, next to
//! the JSON logs, which carry the invocation's trace id.

use std::collections::HashSet;
use std::time::Duration;

use docflow::sqs::{BatchConfig, BatchRuntime, DiscardKind, Message, Outcome};
use docflow::telemetry::metrics::{self, MetricsSink, batch as m, dimension};
use docflow_dev::local::QueueSpec;
use docflow_tests::emf::Metrics;
use docflow_tests::*;

const NS: &str = "docflow/test";

fn spec(fifo: bool) -> QueueSpec {
    QueueSpec {
        visibility_timeout: Duration::from_secs(30),
        max_receive_count: 3,
        fifo,
    }
}

fn function() -> String {
    unique("fn")
}

async fn runtime(config: BatchConfig, function: &str) -> (BatchRuntime, metrics::Captured) {
    let (sink, captured) = MetricsSink::capture(NS);
    let runtime = BatchRuntime::new(sqs().await, config)
        .with_function(function)
        .with_metrics(sink);
    (runtime, captured)
}

/// Every record ends in exactly one outcome counter.
fn assert_partition(metrics: &Metrics, f: &str) {
    let by = [(dimension::FUNCTION, f)];
    let ended: f64 = [
        m::RECORDS_DONE,
        m::RECORDS_DISCARDED,
        m::RECORDS_RETRIED,
        m::RECORDS_RELEASED,
        m::RECORDS_CUT_OFF,
        m::RECORDS_NOT_STARTED,
        m::RECORDS_SKIPPED,
    ]
    .iter()
    .map(|metric| metrics.sum(metric.name, &by))
    .sum();
    assert_eq!(ended, metrics.sum(m::RECORDS_RECEIVED.name, &by));
}

#[tokio::test]
async fn every_outcome_of_a_real_batch_is_counted_once_in_valid_emf() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-outcomes", spec(false)).await;
    let bodies = [
        "done",
        "not-an-id",
        "duplicate",
        "retry",
        "release",
        "panic",
        "failed",
    ];
    for body in bodies {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, bodies.len()).await;
    let f = function();
    let (runtime, captured) = runtime(BatchConfig::default(), &f).await;

    let response = runtime
        .run(
            lambda_event(event.clone(), None),
            |msg: Message| async move {
                match msg.body.as_str() {
                    "done" => Outcome::Done,
                    "not-an-id" => Outcome::discard_as(DiscardKind::NotAnId, "not a uuid"),
                    "duplicate" => Outcome::discard_as(DiscardKind::Duplicate, "already done"),
                    "retry" => Outcome::Retry {
                        after: Duration::from_millis(2500),
                    },
                    "release" => Outcome::Release,
                    "panic" => panic!("simulated bug"),
                    _ => {
                        metrics::failed_permanently();
                        Outcome::Done
                    }
                }
            },
        )
        .await
        .unwrap();
    let completion = esm.complete(&event, &response).await.unwrap();

    let lines = captured.lines();
    let metrics = Metrics::of(&lines);
    assert_eq!(
        lines.len(),
        3,
        "one line for the batch, one per discard reason: {lines:#?}"
    );
    assert!(metrics.0.iter().all(|d| d.namespace == NS));
    let by = [(dimension::FUNCTION, f.as_str())];
    let sum = |metric: metrics::Metric| metrics.sum(metric.name, &by);
    assert_eq!(sum(m::RECORDS_RECEIVED), 7.0);
    assert_eq!(sum(m::RECORDS_DONE), 2.0);
    assert_eq!(
        sum(m::RECORDS_DONE) + sum(m::RECORDS_DISCARDED),
        completion.deleted.len() as f64,
        "what the metrics call deleted is what Lambda deleted"
    );
    assert_eq!(sum(m::RECORDS_DISCARDED), 2.0);
    for reason in ["not_an_id", "duplicate"] {
        assert_eq!(
            metrics.sum(
                m::RECORDS_DISCARDED.name,
                &[(dimension::FUNCTION, &f), (dimension::REASON, reason)]
            ),
            1.0,
            "{reason}"
        );
    }
    assert_eq!(sum(m::RECORDS_RETRIED), 1.0);
    assert_eq!(
        metrics.values(m::RETRY_DELAY.name, &by),
        vec![3.0],
        "the delay SQS was asked for"
    );
    assert_eq!(metrics.unit(m::RETRY_DELAY.name), "Seconds");
    assert_eq!(sum(m::RECORDS_RELEASED), 2.0, "release and the panic");
    assert_eq!(sum(m::RECORD_PANICS), 1.0);
    assert_eq!(sum(m::RECORDS_FAILED_PERMANENTLY), 1.0);
    assert_eq!(sum(m::RECORDS_CUT_OFF), 0.0, "written as 0, not left out");
    assert_eq!(sum(m::VISIBILITY_CHANGES_FAILED), 0.0);
    assert_eq!(metrics.values(m::RECORD_DURATION.name, &by).len(), 7);
    assert_eq!(metrics.unit(m::RECORD_DURATION.name), "Milliseconds");
    assert_eq!(metrics.values(m::BATCH_DURATION.name, &by).len(), 1);
    assert_eq!(metrics.values(m::OLDEST_RECORD_AGE.name, &by).len(), 1);
    assert_partition(&metrics, &f);
    assert_eq!(
        response.batch_item_failures.len() as f64,
        sum(m::RECORDS_RETRIED) + sum(m::RECORDS_RELEASED)
    );
}

#[tokio::test]
async fn records_cut_off_at_the_deadline_are_counted() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-deadline", spec(false)).await;
    for body in ["fast", "slow"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 2).await;
    let f = function();
    let (runtime, captured) = runtime(
        BatchConfig {
            deadline_margin: Duration::from_millis(500),
            ..BatchConfig::default()
        },
        &f,
    )
    .await;

    let response = runtime
        .run(
            lambda_event(event.clone(), Some(Duration::from_millis(1500))),
            |msg: Message| async move {
                if msg.body == "slow" {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Outcome::Done
            },
        )
        .await
        .unwrap();

    assert_eq!(response.batch_item_failures.len(), 1);
    let metrics = Metrics::of(&captured.lines());
    let by = [(dimension::FUNCTION, f.as_str())];
    assert_eq!(metrics.sum(m::RECORDS_CUT_OFF.name, &by), 1.0);
    assert_eq!(metrics.sum(m::RECORDS_DONE.name, &by), 1.0);
    assert_eq!(
        metrics.values(m::RECORD_DURATION.name, &by).len(),
        1,
        "only finished records have a duration"
    );
    assert_partition(&metrics, &f);
}

#[tokio::test]
async fn records_not_started_and_skipped_behind_their_fifo_group_are_counted() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-fifo", spec(true)).await;
    for body in ["a1", "a2", "a3"] {
        send_to_group(&sqs, &queue.url, "a", body).await;
    }
    for body in ["b1", "b2"] {
        send_to_group(&sqs, &queue.url, "b", body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 5).await;
    let f = function();
    // Stops waiting 3 s after the start; a record needs 2 s to be worth starting. a1
    // takes 1.5 s, so a2 is not started and a3 is skipped behind it; b1 is retried, so
    // b2 is skipped.
    let (runtime, captured) = runtime(
        BatchConfig {
            deadline_margin: Duration::from_millis(500),
            start_reserve: Duration::from_secs(2),
            ..BatchConfig::default()
        },
        &f,
    )
    .await;

    let response = runtime
        .run(
            lambda_event(event.clone(), Some(Duration::from_millis(3500))),
            |msg: Message| async move {
                match msg.body.as_str() {
                    "a1" => {
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        Outcome::Done
                    }
                    _ => Outcome::Retry {
                        after: Duration::from_secs(1),
                    },
                }
            },
        )
        .await
        .unwrap();

    assert_eq!(response.batch_item_failures.len(), 4);
    let metrics = Metrics::of(&captured.lines());
    let by = [(dimension::FUNCTION, f.as_str())];
    assert_eq!(metrics.sum(m::RECORDS_DONE.name, &by), 1.0);
    assert_eq!(metrics.sum(m::RECORDS_NOT_STARTED.name, &by), 1.0);
    assert_eq!(metrics.sum(m::RECORDS_RETRIED.name, &by), 1.0);
    assert_eq!(metrics.sum(m::RECORDS_SKIPPED.name, &by), 2.0);
    assert_partition(&metrics, &f);
}

#[tokio::test]
async fn the_oldest_record_age_comes_from_sent_timestamp() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-age", spec(false)).await;
    for body in ["new", "old"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let mut event = poll_n(&esm, 2).await;
    // A message first sent ten minutes ago (as after a few retries): SentTimestamp is
    // what SQS delivers; the real one is seconds old.
    let ten_minutes_ago = chrono::Utc::now().timestamp_millis() - 600_000;
    let old = event
        .records
        .iter_mut()
        .find(|r| r.body.as_deref() == Some("old"))
        .unwrap();
    old.attributes
        .insert("SentTimestamp".into(), ten_minutes_ago.to_string());
    let f = function();
    let (runtime, captured) = runtime(BatchConfig::default(), &f).await;

    runtime
        .run(lambda_event(event, None), |_m: Message| async {
            Outcome::Done
        })
        .await
        .unwrap();

    let metrics = Metrics::of(&captured.lines());
    let age = metrics.values(m::OLDEST_RECORD_AGE.name, &[(dimension::FUNCTION, &f)]);
    assert_eq!(age.len(), 1);
    assert!((600.0..630.0).contains(&age[0]), "{age:?}");
    assert_eq!(metrics.unit(m::OLDEST_RECORD_AGE.name), "Seconds");
}

#[tokio::test]
async fn metrics_counted_inside_process_land_in_the_batch_with_their_group() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-domain", spec(false)).await;
    for body in ["one", "two"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 2).await;
    let f = function();
    let (runtime, captured) = runtime(BatchConfig::default(), &f).await;

    runtime
        .run(lambda_event(event, None), |_m: Message| async {
            // Deep in a call chain, without a handle: the batch's set is current.
            metrics::count(metrics::ingestion::PAGES, 3);
            metrics::count_by(
                dimension::PROVIDER,
                "textract",
                metrics::ingestion::OCR_PAGES,
                2,
            );
            Outcome::Done
        })
        .await
        .unwrap();
    // Outside a batch: counted nowhere, and no panic.
    metrics::count(metrics::ingestion::PAGES, 100);

    let metrics = Metrics::of(&captured.lines());
    assert_eq!(
        metrics.sum(metrics::ingestion::PAGES.name, &[(dimension::FUNCTION, &f)]),
        6.0
    );
    assert_eq!(
        metrics.sum(
            metrics::ingestion::OCR_PAGES.name,
            &[(dimension::FUNCTION, &f), (dimension::PROVIDER, "textract")]
        ),
        4.0
    );
}

const CHILD: &str = "DOCFLOW_METRICS_CHILD_QUEUE";
const TRACE_ID: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
const MARK: &str = "--- child output starts ---";

/// What `in_a_real_process_metrics_and_logs_are_separate_stdout_lines` runs in its child
/// process: the real subscriber and the default (stdout) sink, as in Lambda.
async fn child_runs_one_batch_on_stdout(url: String) {
    println!("\n{MARK}");
    docflow::telemetry::init();
    let sqs = sqs().await;
    let esm = mapping(&sqs, &url).await;
    let event = poll_n(&esm, 2).await;
    let runtime = BatchRuntime::new(sqs.clone(), BatchConfig::default()).with_function("child");
    let mut event = lambda_event(event, None);
    event.context.xray_trace_id = Some(TRACE_ID.to_owned());
    runtime
        .run(event, |msg: Message| async move {
            msg.record_document(&msg.body);
            msg.record_tenant(&"tenant-7");
            let nested = tracing::info_span!("pipeline_step", step = "extract");
            nested.in_scope(|| tracing::info!("working on it"));
            Outcome::Done
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn in_a_real_process_metrics_and_logs_are_separate_stdout_lines() {
    // In the child process this test runs itself (with the queue in CHILD) as the child.
    if let Ok(url) = std::env::var(CHILD) {
        return child_runs_one_batch_on_stdout(url).await;
    }
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-stdout", spec(false)).await;
    let documents: HashSet<String> = (0..2).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for body in &documents {
        send(&sqs, &queue.url, body).await;
    }
    // The name the test harness knows this test by: its module path without the crate.
    let name = match module_path!().split_once("::") {
        Some((_, module)) => {
            format!("{module}::in_a_real_process_metrics_and_logs_are_separate_stdout_lines")
        }
        None => "in_a_real_process_metrics_and_logs_are_separate_stdout_lines".to_owned(),
    };
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(CHILD, &queue.url)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "child failed: {stdout}");
    let lines: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != MARK)
        .skip(1)
        .filter(|l| l.starts_with('{'))
        .collect();

    let emf: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| docflow_tests::emf::extract(l).is_some())
        .collect();
    assert_eq!(emf.len(), 1, "one EMF line: {stdout}");
    let metrics = Metrics::of(&emf);
    assert_eq!(
        metrics.sum(m::RECORDS_DONE.name, &[(dimension::FUNCTION, "child")]),
        2.0
    );
    assert_eq!(
        metrics.0[0].namespace,
        metrics::DEFAULT_NAMESPACE,
        "METRICS_NAMESPACE unset"
    );

    let logs: Vec<serde_json::Value> = lines
        .iter()
        .filter(|l| !emf.contains(l))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        logs.len() >= 5,
        "batch received, 2 x working, 2 x done: {logs:#?}"
    );
    let mut seen_documents = HashSet::new();
    for log in &logs {
        assert!(
            !log.to_string().contains("CloudWatchMetrics"),
            "no metrics nested in a log line: {log}"
        );
        let spans = log["spans"]
            .as_array()
            .unwrap_or_else(|| panic!("no spans: {log}"));
        assert!(
            spans.iter().any(|s| s["xray_trace_id"] == TRACE_ID),
            "the invocation's trace id on every line: {log}"
        );
        if let Some(record) = spans.iter().find(|s| s["name"] == "sqs_record") {
            assert_eq!(record["tenant_id"], "tenant-7", "{log}");
            seen_documents.insert(record["document_id"].as_str().unwrap().to_owned());
        }
    }
    assert!(
        logs.iter().any(|l| l["span"]["name"] == "pipeline_step"),
        "a line inside a nested span was checked"
    );
    assert_eq!(
        seen_documents, documents,
        "every record line names its document"
    );
}

#[tokio::test]
async fn llm_calls_count_tokens_latency_and_failures_per_provider() {
    use docflow::llm::{LlmClient, LlmSettings, Provider};
    use docflow::retry::RetryPolicy;
    use wiremock::matchers::{body_string_contains, method, path};
    use wiremock::{Mock, MockServer};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_string_contains("answer me"))
        .respond_with(docflow_tests::llm::anthropic_text("ok"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_string_contains("fail me"))
        .respond_with(docflow_tests::llm::anthropic_error(
            401,
            "authentication_error",
            "bad key",
        ))
        .mount(&server)
        .await;
    let llm = LlmClient::new(
        &LlmSettings {
            provider: Some(Provider::Anthropic),
            model: docflow_tests::llm::MODEL.to_owned(),
            base_url: server.uri(),
            timeout: Duration::from_secs(10),
            max_tokens: 100,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(10)),
        },
        None,
    )
    .unwrap()
    .unwrap();
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "emf-llm", spec(false)).await;
    for body in ["answer me", "answer me", "fail me"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 3).await;
    let f = function();
    let (runtime, captured) = runtime(BatchConfig::default(), &f).await;

    let llm = &llm;
    runtime
        .run(lambda_event(event, None), |msg: Message| async move {
            let _ = llm.complete("system", &msg.body).await;
            Outcome::Done
        })
        .await
        .unwrap();

    let metrics = Metrics::of(&captured.lines());
    let by = [
        (dimension::FUNCTION, f.as_str()),
        (dimension::PROVIDER, "anthropic"),
    ];
    assert_eq!(metrics.sum(metrics::llm::INPUT_TOKENS.name, &by), 2468.0);
    assert_eq!(metrics.sum(metrics::llm::OUTPUT_TOKENS.name, &by), 642.0);
    assert_eq!(metrics.values(metrics::llm::LATENCY.name, &by).len(), 2);
    assert_eq!(metrics.unit(metrics::llm::LATENCY.name), "Milliseconds");
    assert_eq!(metrics.sum(metrics::llm::CALLS_FAILED.name, &by), 1.0);
}
