//! The batch runtime's SQS calls per batch, not per record, on real
//! queues (moto), counted by the recording SDK client (`docflow_tests::aws_calls`):
//!
//! - seed 002's extension before work is one `ChangeMessageVisibilityBatch` for the
//!   batch, or none when what is left of the receive's visibility covers it; a refused
//!   entry keeps only its own record from starting;
//! - hand-offs to another queue go out as one `SendMessageBatch`; a refused entry fails
//!   only its record; a record cut off while it waits to hand off sends nothing.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use docflow::sqs::{BatchConfig, Heartbeat, Message, Outcome};
use docflow_dev::local::QueueSpec;
use docflow_tests::aws_calls::recorded_runtime;
use docflow_tests::*;

const VISIBILITY_BATCH: &str = "ChangeMessageVisibilityBatch";
const VISIBILITY_ONE: &str = "ChangeMessageVisibility";
const SEND_BATCH: &str = "SendMessageBatch";

/// The runtime's own actions plus `sqs:SendMessage`, which a function that hands off
/// declares (ingestion).
fn declared() -> Vec<&'static str> {
    let mut actions = docflow::sqs::AWS_ACTIONS.to_vec();
    actions.push("sqs:SendMessage");
    actions
}

fn spec(visibility_s: u64) -> QueueSpec {
    QueueSpec {
        visibility_timeout: Duration::from_secs(visibility_s),
        max_receive_count: 3,
        fifo: false,
    }
}

/// Seed 002 as document output configures it, on a queue whose timeout is `visibility`.
fn extending(visibility: Duration, extend_to: Duration, window: Duration) -> BatchConfig {
    BatchConfig {
        heartbeat: Heartbeat {
            every: Duration::from_secs(5),
            extend_to,
        },
        queue_visibility: Some(visibility),
        batching_window: window,
        extend_before_work: true,
        ..BatchConfig::default()
    }
}

async fn batch_of(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    n: usize,
) -> aws_lambda_events::event::sqs::SqsEvent {
    for i in 0..n {
        send(sqs, url, &format!("m{i}")).await;
    }
    poll_n(&mapping(sqs, url).await, n).await
}

#[tokio::test]
async fn a_batch_of_ten_is_extended_before_work_in_one_call() {
    let sqs = sqs().await;
    // 5 s of visibility from the receive: less than the 30 s the work needs.
    let queue = fresh_queue(&sqs, "extend-ten", spec(5)).await;
    let event = batch_of(&sqs, &queue.url, 10).await;
    let esm = mapping(&sqs, &queue.url).await;
    let (runtime, calls) = recorded_runtime(
        extending(
            Duration::from_secs(5),
            Duration::from_secs(30),
            Duration::ZERO,
        ),
        &declared(),
    )
    .await;
    let seen_at_start = Arc::new(Mutex::new(Vec::new()));

    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| {
            let calls = calls.clone();
            let seen = seen_at_start.clone();
            async move {
                // No record's work starts before the extension was made.
                seen.lock()
                    .unwrap()
                    .push((calls.operations(VISIBILITY_BATCH), m.visibility_left()));
                Outcome::Release
            }
        })
        .await
        .unwrap();
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(calls.operations(VISIBILITY_BATCH), 1);
    assert_eq!(calls.calls_of(VISIBILITY_BATCH)[0].entries, 10);
    assert_eq!(calls.operations(VISIBILITY_ONE), 0, "no call per record");
    let seen = seen_at_start.lock().unwrap().clone();
    assert_eq!(seen.len(), 10);
    for (batch_calls, left) in seen {
        assert_eq!(batch_calls, 1, "a record started before the extension");
        assert!(left > Duration::from_secs(25), "{left:?}");
    }
    calls.assert_declared();
    // Released, they stay hidden for the 30 s given, not the queue's 5 s.
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "the extension did not take"
    );
}

#[tokio::test]
async fn no_extension_call_when_the_remaining_visibility_covers_the_work() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "extend-none", spec(600)).await;
    let event = batch_of(&sqs, &queue.url, 10).await;
    // 600 s − 0 s window − 10 s invoke slack = 590 s left at least: covers 300 s.
    let (runtime, calls) = recorded_runtime(
        extending(
            Duration::from_secs(600),
            Duration::from_secs(300),
            Duration::ZERO,
        ),
        &declared(),
    )
    .await;

    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| async move {
            assert!(m.visibility_left() >= Duration::from_secs(580));
            Outcome::Done
        })
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert!(calls.calls().is_empty(), "{:?}", calls.calls());

    // The same batch behind a 300 s batching window is not covered (600 − 300 − 10 =
    // 290 s < 300 s): one call.
    let (runtime, calls) = recorded_runtime(
        extending(
            Duration::from_secs(600),
            Duration::from_secs(300),
            Duration::from_secs(300),
        ),
        &declared(),
    )
    .await;
    runtime
        .run(lambda_event(event.clone(), None), |_m: Message| async {
            Outcome::Done
        })
        .await
        .unwrap();
    assert_eq!(calls.operations(VISIBILITY_BATCH), 1);
    assert_eq!(calls.calls_of(VISIBILITY_BATCH)[0].entries, 10);
}

#[tokio::test]
async fn more_than_ten_records_are_extended_in_calls_of_ten() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "extend-twelve", spec(30)).await;
    let mut event = batch_of(&sqs, &queue.url, 10).await;
    event
        .records
        .extend(batch_of(&sqs, &queue.url, 2).await.records);
    let (runtime, calls) = recorded_runtime(
        extending(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::ZERO,
        ),
        &declared(),
    )
    .await;

    runtime
        .run(lambda_event(event, None), |_m: Message| async {
            Outcome::Done
        })
        .await
        .unwrap();

    let entries: Vec<usize> = calls
        .calls_of(VISIBILITY_BATCH)
        .iter()
        .map(|c| c.entries)
        .collect();
    assert_eq!(entries, vec![10, 2]);
}

#[tokio::test]
async fn a_refused_extension_entry_is_its_record_s_alone() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "extend-refused", spec(5)).await;
    let mut event = batch_of(&sqs, &queue.url, 3).await;
    // A receipt handle SQS does not know: its entry is refused, the others are not.
    event.records[1].receipt_handle = Some("not-a-receipt-handle".into());
    let bogus = event.records[1].message_id.clone().unwrap();
    let (runtime, calls) = recorded_runtime(
        extending(
            Duration::from_secs(5),
            Duration::from_secs(30),
            Duration::ZERO,
        ),
        &declared(),
    )
    .await;
    let (sink, metrics) = docflow::telemetry::metrics::MetricsSink::capture("docflow/test");
    let runtime = runtime.with_function("extend-refused").with_metrics(sink);
    let left_at_start = Arc::new(Mutex::new(Vec::new()));

    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| {
            let left = left_at_start.clone();
            async move {
                left.lock()
                    .unwrap()
                    .push((m.message_id.clone(), m.visibility_left()));
                Outcome::Done
            }
        })
        .await
        .unwrap();

    // The failure is the refused record's alone: the others were extended, and every
    // record ran (as after a failed single change before; its claim is the guard).
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(calls.operations(VISIBILITY_BATCH), 1);
    assert_eq!(calls.calls_of(VISIBILITY_BATCH)[0].entries, 3);
    let left = left_at_start.lock().unwrap().clone();
    assert_eq!(left.len(), 3);
    for (id, left) in left {
        if id == bogus {
            assert!(left < Duration::from_secs(5), "{left:?}: not extended");
        } else {
            assert!(left > Duration::from_secs(25), "{id}: {left:?}");
        }
    }
    // Its record tried once more on its own as it started (not covered), and only it.
    assert_eq!(calls.operations(VISIBILITY_ONE), 1);
    let emf = docflow_tests::emf::Metrics::of(&metrics.lines());
    assert_eq!(
        emf.sum(
            docflow::telemetry::metrics::batch::VISIBILITY_CHANGES_FAILED.name,
            &[(
                docflow::telemetry::metrics::dimension::FUNCTION,
                "extend-refused"
            )]
        ),
        2.0
    );
}

#[tokio::test]
async fn the_hand_offs_of_a_batch_go_out_in_one_call_each_answered() {
    let sqs = sqs().await;
    let source = fresh_queue(&sqs, "handoff-source", spec(30)).await;
    let target = fresh_queue(&sqs, "handoff-target", spec(30)).await;
    let event = batch_of(&sqs, &source.url, 10).await;
    let (runtime, calls) = recorded_runtime(BatchConfig::default(), &declared()).await;
    let target_url = target.url.clone();

    // Every other record hands off; the rest end at once, and are not waited for.
    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| {
            let target_url = target_url.clone();
            async move {
                let n: usize = m.body[1..].parse().unwrap();
                if n % 2 == 1 {
                    return Outcome::Done;
                }
                match m.hand_off(&target_url, format!("next-{}", m.body)).await {
                    Ok(()) => Outcome::Done,
                    Err(e) => panic!("hand-off failed: {e}"),
                }
            }
        })
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(calls.operations(SEND_BATCH), 1);
    assert_eq!(calls.calls_of(SEND_BATCH)[0].entries, 5);
    assert_eq!(calls.operations("SendMessage"), 0);
    let mut bodies = visible_bodies(&sqs, &target.url).await;
    bodies.sort();
    assert_eq!(
        bodies,
        vec!["next-m0", "next-m2", "next-m4", "next-m6", "next-m8"]
    );
    calls.assert_declared();
}

#[tokio::test]
async fn a_refused_hand_off_fails_only_its_record() {
    let sqs = sqs().await;
    let source = fresh_queue(&sqs, "handoff-refused", spec(30)).await;
    let target = fresh_queue(&sqs, "handoff-refused-target", spec(30)).await;
    let event = batch_of(&sqs, &source.url, 10).await;
    let (runtime, calls) = recorded_runtime(BatchConfig::default(), &declared()).await;
    // SQS itself refuses this one entry of the batch call (see `refuse_batch_entry`).
    calls.refuse_batch_entry("next-m3");
    let target_url = target.url.clone();
    let id_of = |body: &str| {
        event
            .records
            .iter()
            .find(|r| r.body.as_deref() == Some(body))
            .unwrap()
            .message_id
            .clone()
            .unwrap()
    };

    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| {
            let target_url = target_url.clone();
            async move {
                match m.hand_off(&target_url, format!("next-{}", m.body)).await {
                    Ok(()) => Outcome::Done,
                    Err(e) => {
                        assert!(e.to_string().contains("refused"), "{e}");
                        Outcome::Release
                    }
                }
            }
        })
        .await
        .unwrap();

    assert_eq!(failed_ids(&response), HashSet::from([id_of("m3")]));
    assert_eq!(calls.operations(SEND_BATCH), 1);
    let mut bodies = visible_bodies(&sqs, &target.url).await;
    bodies.extend(visible_bodies(&sqs, &target.url).await);
    let bodies: HashSet<String> = bodies.into_iter().collect();
    assert_eq!(bodies.len(), 9, "{bodies:?}");
    assert!(!bodies.contains("next-m3"));
}

#[tokio::test]
async fn a_record_cut_off_while_waiting_to_hand_off_sends_nothing() {
    let sqs = sqs().await;
    let source = fresh_queue(&sqs, "handoff-cut", spec(30)).await;
    let target = fresh_queue(&sqs, "handoff-cut-target", spec(30)).await;
    let event = batch_of(&sqs, &source.url, 2).await;
    let (runtime, calls) = recorded_runtime(BatchConfig::default(), &declared()).await;
    let target_url = target.url.clone();

    // m0 hands off and waits for m1, which is still working when the deadline comes.
    let response = runtime
        .run(
            lambda_event(event.clone(), Some(Duration::from_secs(3))),
            |m: Message| {
                let target_url = target_url.clone();
                async move {
                    if m.body == "m1" {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        return Outcome::Done;
                    }
                    m.hand_off(&target_url, "promised".into()).await.ok();
                    Outcome::Done
                }
            },
        )
        .await
        .unwrap();

    assert_eq!(response.batch_item_failures.len(), 2, "both cut off");
    assert_eq!(calls.operations(SEND_BATCH), 0);
    assert!(visible_bodies(&sqs, &target.url).await.is_empty());
}
