//! The SQS batch runtime against real queues on the local emulator: every outcome's
//! effect on the message, isolation, deadline, FIFO order, heartbeat, concurrency.
//!
//! The runtime's SQS client records every call it makes (`docflow_tests::aws_calls`)
//! and refuses any the runtime does not declare in `docflow::sqs::AWS_ACTIONS`: moto does
//! not enforce IAM, this does.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use docflow::sqs::{BatchConfig, BatchRuntime, Heartbeat, MAX_VISIBILITY, Message, Outcome};
use docflow_dev::local::QueueSpec;
use docflow_tests::aws_calls::{AwsCalls, recorded_runtime};
use docflow_tests::*;

fn spec(visibility_s: u64) -> QueueSpec {
    QueueSpec {
        visibility_timeout: Duration::from_secs(visibility_s),
        max_receive_count: 3,
        fifo: false,
    }
}

#[tokio::test]
async fn done_and_discard_are_deleted_retry_and_release_are_kept() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "outcomes", spec(30)).await;
    for body in ["done", "discard", "retry", "release"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 4).await;
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
    let (runtime, calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;

    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| async move {
            match m.body.as_str() {
                "done" => Outcome::Done,
                "discard" => Outcome::discard("poison"),
                "retry" => Outcome::Retry {
                    after: Duration::from_secs(2),
                },
                _ => Outcome::Release,
            }
        })
        .await
        .unwrap();

    assert_eq!(
        failed_ids(&response),
        HashSet::from([id_of("retry"), id_of("release")])
    );
    let completion = esm.complete(&event, &response).await.unwrap();
    assert_eq!(completion.deleted.len(), 2);
    assert!(!completion.whole_batch_failed);
    assert_eq!(
        calls.visibility_timeouts(),
        vec![2],
        "only Retry touches the visibility"
    );
    calls.assert_declared();
}

#[tokio::test]
async fn retry_hides_the_message_for_the_requested_time() {
    let sqs = sqs().await;
    // Queue visibility 30 s: if the runtime did not change it, the message would stay
    // hidden for 30 s, not 2.
    let queue = fresh_queue(&sqs, "retry", spec(30)).await;
    send(&sqs, &queue.url, "retry-me").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let (runtime, calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;

    let response = runtime
        .run(lambda_event(event.clone(), None), |_m| async {
            Outcome::Retry {
                after: Duration::from_secs(2),
            }
        })
        .await
        .unwrap();
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(response.batch_item_failures.len(), 1);
    // No GetQueueUrl first: the role does not grant it, the URL comes from the ARN.
    assert_eq!(calls.actions(), vec!["sqs:ChangeMessageVisibility"]);
    assert_eq!(calls.visibility_timeouts(), vec![2]);
    calls.assert_declared();
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "hidden right after the retry"
    );
    // Back after the retry's 2 s: well before the queue's 30 s would bring it back.
    let again = poll_n_within(&esm, 1, Duration::from_secs(20)).await;
    assert_eq!(again.records[0].body.as_deref(), Some("retry-me"));
    assert_eq!(
        again.records[0]
            .attributes
            .get("ApproximateReceiveCount")
            .map(String::as_str),
        Some("2")
    );
}

#[tokio::test]
async fn release_leaves_the_queue_visibility_timeout_in_charge() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "release", spec(3)).await;
    send(&sqs, &queue.url, "release-me").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let runtime = BatchRuntime::new(sqs.clone(), BatchConfig::default());

    let response = runtime
        .run(lambda_event(event.clone(), None), |_m| async {
            Outcome::Release
        })
        .await
        .unwrap();
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(response.batch_item_failures.len(), 1);
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "still within the queue's 3 s"
    );
    // Back once the queue's 3 s are over (however long this machine takes to notice).
    wait_until(
        "the released message is visible again",
        Duration::from_secs(30),
        || async { !visible_bodies(&sqs, &queue.url).await.is_empty() },
    )
    .await;
    assert_eq!(
        visible_bodies(&sqs, &queue.url).await,
        vec!["release-me".to_owned()]
    );
}

#[tokio::test]
async fn a_message_that_keeps_failing_lands_in_the_dlq_after_max_receive_count() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "poison", spec(30)).await;
    send(&sqs, &queue.url, "always-fails").await;
    let esm = mapping(&sqs, &queue.url).await;
    let (runtime, calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;
    let seen = Arc::new(AtomicUsize::new(0));

    for receive in 1..=3 {
        let event = poll_n(&esm, 1).await;
        let seen = seen.clone();
        let response = runtime
            .run(lambda_event(event.clone(), None), move |m: Message| {
                let seen = seen.clone();
                async move {
                    assert_eq!(m.receive_count, receive);
                    seen.fetch_add(1, Ordering::SeqCst);
                    // Retry at once so the test need not wait for the visibility timeout.
                    Outcome::Retry {
                        after: Duration::ZERO,
                    }
                }
            })
            .await
            .unwrap();
        esm.complete(&event, &response).await.unwrap();
    }

    // The receive after the third moves the message to the DLQ (as in AWS).
    assert!(esm.poll().await.unwrap().is_none());
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    assert_eq!(
        visible_bodies(&sqs, &queue.dlq_url).await,
        vec!["always-fails".to_owned()]
    );
    calls.assert_declared();
}

#[tokio::test]
async fn a_panicking_record_fails_alone() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "panic", spec(30)).await;
    for body in ["ok-1", "boom", "ok-2"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 3).await;
    let boom_id = event
        .records
        .iter()
        .find(|r| r.body.as_deref() == Some("boom"))
        .unwrap()
        .message_id
        .clone();
    let runtime = BatchRuntime::new(sqs.clone(), BatchConfig::default());

    let response = runtime
        .run(lambda_event(event.clone(), None), |m: Message| async move {
            if m.body == "boom" {
                panic!("simulated bug while processing");
            }
            Outcome::Done
        })
        .await
        .unwrap();

    assert_eq!(failed_ids(&response), HashSet::from([boom_id.unwrap()]));
    let completion = esm.complete(&event, &response).await.unwrap();
    assert_eq!(completion.deleted.len(), 2);
}

#[tokio::test]
async fn a_record_still_running_at_the_deadline_is_reported_failed_and_finished_ones_are_not() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "deadline", spec(30)).await;
    for body in ["fast", "slow"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 2).await;
    let slow_id = event
        .records
        .iter()
        .find(|r| r.body.as_deref() == Some("slow"))
        .unwrap()
        .message_id
        .clone();
    let config = BatchConfig {
        deadline_margin: Duration::from_millis(500),
        ..BatchConfig::default()
    };
    let runtime = BatchRuntime::new(sqs.clone(), config);

    // The slow record never finishes: the run can only return by giving up on it.
    let response = tokio::time::timeout(
        Duration::from_secs(60),
        runtime.run(
            lambda_event(event.clone(), Some(Duration::from_millis(1500))),
            |m: Message| async move {
                if m.body == "slow" {
                    std::future::pending::<()>().await;
                }
                Outcome::Done
            },
        ),
    )
    .await
    .expect("returned at the deadline although the slow record never finished")
    .unwrap();

    assert_eq!(failed_ids(&response), HashSet::from([slow_id.unwrap()]));
    let completion = esm.complete(&event, &response).await.unwrap();
    assert_eq!(completion.deleted.len(), 1);
}

#[tokio::test]
async fn after_a_fifo_failure_later_records_of_the_group_are_failed_unprocessed_and_other_groups_go_on()
 {
    let sqs = sqs().await;
    let queue = fresh_queue(
        &sqs,
        "fifo",
        QueueSpec {
            fifo: true,
            ..spec(30)
        },
    )
    .await;
    for body in ["a1", "a2", "a3"] {
        send_to_group(&sqs, &queue.url, "a", body).await;
    }
    for body in ["b1", "b2"] {
        send_to_group(&sqs, &queue.url, "b", body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 5).await;
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
    let processed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let runtime = BatchRuntime::new(sqs.clone(), BatchConfig::default());

    let response = {
        let processed = processed.clone();
        runtime
            .run(lambda_event(event.clone(), None), move |m: Message| {
                let processed = processed.clone();
                async move {
                    processed.lock().unwrap().push(m.body.clone());
                    if m.body == "a2" {
                        Outcome::Release
                    } else {
                        Outcome::Done
                    }
                }
            })
            .await
            .unwrap()
    };

    assert_eq!(
        failed_ids(&response),
        HashSet::from([id_of("a2"), id_of("a3")])
    );
    let processed = processed.lock().unwrap().clone();
    assert!(
        !processed.contains(&"a3".to_owned()),
        "a3 must not run after a2 failed: {processed:?}"
    );
    let order_a: Vec<_> = processed
        .iter()
        .filter(|b| b.starts_with('a'))
        .cloned()
        .collect();
    assert_eq!(order_a, vec!["a1", "a2"]);
    let order_b: Vec<_> = processed
        .iter()
        .filter(|b| b.starts_with('b'))
        .cloned()
        .collect();
    assert_eq!(order_b, vec!["b1", "b2"]);
}

#[tokio::test]
async fn a_failing_visibility_change_still_reports_the_record_as_failed() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "vis-fail", spec(30)).await;
    send(&sqs, &queue.url, "retry-me").await;
    let esm = mapping(&sqs, &queue.url).await;
    let mut event = poll_n(&esm, 1).await;
    let id = event.records[0].message_id.clone().unwrap();
    // A receipt handle SQS no longer accepts (as after the message was received again):
    // ChangeMessageVisibility itself is rejected.
    event.records[0].receipt_handle = Some("expired-receipt-handle".into());
    let (runtime, calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;

    let response = runtime
        .run(lambda_event(event, None), |_m| async {
            Outcome::Retry {
                after: Duration::from_secs(600),
            }
        })
        .await
        .unwrap();

    assert_eq!(
        calls.visibility_timeouts(),
        vec![600],
        "the change was attempted"
    );
    assert_eq!(failed_ids(&response), HashSet::from([id]));
    calls.assert_declared();
}

#[tokio::test]
async fn a_sub_second_retry_is_rounded_up_instead_of_making_the_message_visible_at_once() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "sub-second", spec(30)).await;
    send(&sqs, &queue.url, "retry-soon").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let (runtime, calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;

    let response = runtime
        .run(lambda_event(event.clone(), None), |_m| async {
            Outcome::Retry {
                after: Duration::from_millis(400),
            }
        })
        .await
        .unwrap();
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(calls.visibility_timeouts(), vec![1]);
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "hidden for a second, not visible at once"
    );
    calls.assert_declared();
}

#[tokio::test]
async fn a_twelve_hour_retry_leaves_room_for_the_time_since_the_receive() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "twelve-hours", spec(30)).await;
    send(&sqs, &queue.url, "retry-much-later").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    // The receive happened before the invocation began, at most the queue's visibility
    // timeout before: SQS rejects a visibility that would end more than 12 h after it.
    let (runtime, calls) = recorded_runtime(
        BatchConfig {
            queue_visibility: Some(Duration::from_secs(30)),
            ..BatchConfig::default()
        },
        docflow::sqs::AWS_ACTIONS,
    )
    .await;

    let response = runtime
        .run(lambda_event(event.clone(), None), |_m| async {
            Outcome::Retry {
                after: MAX_VISIBILITY,
            }
        })
        .await
        .unwrap();
    esm.complete(&event, &response).await.unwrap();

    let sent = calls.visibility_timeouts();
    assert_eq!(sent.len(), 1);
    assert!(
        (43_100..=43_170).contains(&sent[0]),
        "12 h minus the time since the receive: {sent:?}"
    );
    assert!(visible_bodies(&sqs, &queue.url).await.is_empty());
    calls.assert_declared();
}

#[tokio::test]
async fn concurrency_never_exceeds_the_configured_bound() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "bound", spec(30)).await;
    for i in 0..10 {
        send(&sqs, &queue.url, &format!("m{i}")).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 10).await;
    let runtime = BatchRuntime::new(
        sqs.clone(),
        BatchConfig {
            concurrency: 3,
            ..BatchConfig::default()
        },
    );
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));

    let response = {
        let (in_flight, peak) = (in_flight.clone(), peak.clone());
        runtime
            .run(lambda_event(event.clone(), None), move |_m| {
                let (in_flight, peak) = (in_flight.clone(), peak.clone());
                async move {
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    Outcome::Done
                }
            })
            .await
            .unwrap()
    };

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        peak.load(Ordering::SeqCst),
        3,
        "bounded at 3 and actually concurrent"
    );
}

/// The beats a heartbeat test lets through: the next call of the hook (a lease renewal,
/// in a function) never returns, so the beats are counted exactly, however slow the
/// machine, and no visibility change is in flight when the work ends.
const BEATS: usize = 3;

/// A heartbeat hook that counts its calls (noting each in `calls`, at `times`) and holds
/// the call after [`BEATS`] for ever. `alive` lives as long as the hook and its calls.
fn counting_hook(
    beats: Arc<AtomicUsize>,
    times: Arc<std::sync::Mutex<Vec<tokio::time::Instant>>>,
    calls: AwsCalls,
    alive: Arc<()>,
) -> impl FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    move || {
        let (beats, times, calls, alive) =
            (beats.clone(), times.clone(), calls.clone(), alive.clone());
        Box::pin(async move {
            let _alive = alive;
            times.lock().unwrap().push(tokio::time::Instant::now());
            calls.note("hook");
            if beats.fetch_add(1, Ordering::SeqCst) + 1 > BEATS {
                std::future::pending::<()>().await;
            }
        })
    }
}

#[tokio::test]
async fn heartbeat_extends_visibility_and_calls_the_hook_until_the_record_ends() {
    let sqs = sqs().await;
    // Visibility 2 s: without the heartbeat the message would reappear mid-work.
    let queue_visibility = Duration::from_secs(2);
    let queue = fresh_queue(&sqs, "heartbeat", spec(2)).await;
    send(&sqs, &queue.url, "long-job").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let received = tokio::time::Instant::now();
    let (runtime, calls) = recorded_runtime(
        BatchConfig {
            heartbeat: Heartbeat {
                every: Duration::from_millis(300),
                extend_to: Duration::from_secs(20),
            },
            queue_visibility: Some(queue_visibility),
            ..BatchConfig::default()
        },
        docflow::sqs::AWS_ACTIONS,
    )
    .await;
    let beats = Arc::new(AtomicUsize::new(0));
    let seen_during_work = Arc::new(std::sync::Mutex::new(Vec::new()));
    // Whether the hook (and every call of it) was gone once `with_heartbeat` returned.
    let hook_gone_after_work = Arc::new(std::sync::Mutex::new(None));

    let response = {
        let (beats, seen, gone, sqs, url, calls) = (
            beats.clone(),
            seen_during_work.clone(),
            hook_gone_after_work.clone(),
            sqs.clone(),
            queue.url.clone(),
            calls.clone(),
        );
        runtime
            .run(lambda_event(event.clone(), None), move |m: Message| {
                let (beats, seen, gone, sqs, url, calls) = (
                    beats.clone(),
                    seen.clone(),
                    gone.clone(),
                    sqs.clone(),
                    url.clone(),
                    calls.clone(),
                );
                async move {
                    let alive = Arc::new(());
                    let probe = Arc::downgrade(&alive);
                    let work = {
                        let beats = beats.clone();
                        async move {
                            // The beats that extend, then the hook held; and past the
                            // queue's 2 s since the receive: only the heartbeat keeps the
                            // message hidden.
                            wait_until("the heartbeat beats", Duration::from_secs(60), || {
                                let beats = beats.clone();
                                async move { beats.load(Ordering::SeqCst) > BEATS }
                            })
                            .await;
                            tokio::time::sleep_until(
                                received + queue_visibility + Duration::from_millis(500),
                            )
                            .await;
                            let bodies = visible_bodies(&sqs, &url).await;
                            seen.lock().unwrap().extend(bodies);
                        }
                    };
                    m.with_heartbeat(work, counting_hook(beats, Arc::default(), calls, alive))
                        .await;
                    *gone.lock().unwrap() = Some(probe.upgrade().is_none());
                    Outcome::Release
                }
            })
            .await
            .unwrap()
    };

    assert!(
        seen_during_work.lock().unwrap().is_empty(),
        "message stayed hidden while working"
    );
    assert_eq!(
        *hook_gone_after_work.lock().unwrap(),
        Some(true),
        "heartbeat stopped with the record: nothing holds its hook any more"
    );
    assert_eq!(beats.load(Ordering::SeqCst), BEATS + 1);
    assert_eq!(response.batch_item_failures.len(), 1);
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "extended to 20 s, still hidden past the queue's 2 s"
    );
    // The hook (a lease renewal) runs before each extension, so the message is never
    // kept hidden on the strength of a lease that was not renewed: the held hook call
    // has no extension after it.
    let actions = calls.actions();
    let mut expected: Vec<&str> = (0..BEATS)
        .flat_map(|_| ["hook", "sqs:ChangeMessageVisibility"])
        .collect();
    expected.push("hook");
    assert_eq!(actions, expected);
    calls.assert_declared();
}

#[tokio::test]
async fn the_first_heartbeats_never_shorten_the_queue_s_own_visibility() {
    let sqs = sqs().await;
    // The queue hides a received message for 20 s; the heartbeat's own extension is 2 s.
    let queue_visibility = Duration::from_secs(20);
    let extend_to = Duration::from_secs(2);
    let queue = fresh_queue(&sqs, "hb-no-shorten", spec(20)).await;
    send(&sqs, &queue.url, "short-job").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let (runtime, calls) = recorded_runtime(
        BatchConfig {
            heartbeat: Heartbeat {
                every: Duration::from_millis(300),
                extend_to,
            },
            queue_visibility: Some(queue_visibility),
            ..BatchConfig::default()
        },
        docflow::sqs::AWS_ACTIONS,
    )
    .await;
    let beats = Arc::new(AtomicUsize::new(0));
    let hook_times = Arc::new(std::sync::Mutex::new(Vec::new()));
    let before_run = tokio::time::Instant::now();

    let response = {
        let (beats, hook_times, calls) = (beats.clone(), hook_times.clone(), calls.clone());
        runtime
            .run(lambda_event(event.clone(), None), move |m: Message| {
                let (beats, hook_times, calls) = (beats.clone(), hook_times.clone(), calls.clone());
                async move {
                    let work = {
                        let beats = beats.clone();
                        wait_until("the heartbeat beats", Duration::from_secs(60), move || {
                            let beats = beats.clone();
                            async move { beats.load(Ordering::SeqCst) > BEATS }
                        })
                    };
                    m.with_heartbeat(work, counting_hook(beats, hook_times, calls, Arc::new(())))
                        .await;
                    Outcome::Release
                }
            })
            .await
            .unwrap()
    };
    esm.complete(&event, &response).await.unwrap();

    let sent = calls.visibility_timeouts();
    let hook_times = hook_times.lock().unwrap().clone();
    assert_eq!(sent.len(), BEATS, "the heartbeat beat");
    assert_eq!(hook_times.len(), BEATS + 1);
    // Beat i computed its extension after its hook call and before the next one began:
    // at most `hook_times[i + 1] - before_run` into the queue's 20 s.
    for (i, &s) in sent.iter().enumerate() {
        let elapsed = hook_times[i + 1].duration_since(before_run).as_secs_f64();
        let left = queue_visibility.as_secs_f64() - elapsed.ceil();
        assert!(
            s as f64 >= left && s as u64 > extend_to.as_secs(),
            "each beat kept what was left of the queue's 20 s ({left} s at beat {i}): {sent:?}"
        );
    }
    // A 2 s extension at the last beat would be over 2 s after it had been answered,
    // which was before the next hook call.
    tokio::time::sleep_until(hook_times[BEATS] + extend_to + Duration::from_secs(1)).await;
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "still hidden by the queue's own visibility"
    );
    calls.assert_declared();
}

#[tokio::test]
async fn a_fifo_retry_hides_the_message_and_keeps_the_group_in_order() {
    let sqs = sqs().await;
    let queue = fresh_queue(
        &sqs,
        "fifo-retry",
        QueueSpec {
            fifo: true,
            ..spec(30)
        },
    )
    .await;
    for body in ["a1", "a2"] {
        send_to_group(&sqs, &queue.url, "a", body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 2).await;
    let (runtime, calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;
    let processed = Arc::new(std::sync::Mutex::new(Vec::new()));

    let response = {
        let processed = processed.clone();
        runtime
            .run(lambda_event(event.clone(), None), move |m: Message| {
                let processed = processed.clone();
                async move {
                    processed.lock().unwrap().push(m.body.clone());
                    Outcome::Retry {
                        after: Duration::from_secs(2),
                    }
                }
            })
            .await
            .unwrap()
    };
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(response.batch_item_failures.len(), 2, "a1 retried, a2 kept");
    assert_eq!(*processed.lock().unwrap(), vec!["a1"], "a2 waits for a1");
    // a1 hidden for its backoff; a2 released at once, so that it does not lock the group
    // for the queue's 30 s.
    assert_eq!(calls.visibility_timeouts(), vec![2, 0]);
    assert!(
        esm.poll().await.unwrap().is_none(),
        "a2 is not delivered while a1, before it in the group, is hidden"
    );
    // Back after a1's 2 s: well before the queue's 30 s would bring it back.
    let again = poll_n_within(&esm, 1, Duration::from_secs(20)).await;
    let bodies: Vec<_> = again
        .records
        .iter()
        .filter_map(|r| r.body.clone())
        .collect();
    assert_eq!(bodies.first().map(String::as_str), Some("a1"), "{bodies:?}");
    assert_eq!(
        again.records[0]
            .attributes
            .get("ApproximateReceiveCount")
            .map(String::as_str),
        Some("2")
    );
    calls.assert_declared();
}

#[tokio::test]
async fn group_ids_on_a_standard_queue_do_not_hold_records_back() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "fair", spec(30)).await;
    for body in ["t1", "t2"] {
        send(&sqs, &queue.url, body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let mut event = poll_n(&esm, 2).await;
    // A fair queue: standard, with a MessageGroupId per tenant on every record.
    for record in &mut event.records {
        record
            .attributes
            .insert("MessageGroupId".into(), "tenant-1".into());
    }
    let (runtime, _calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;
    let processed = Arc::new(AtomicUsize::new(0));

    let response = {
        let processed = processed.clone();
        runtime
            .run(lambda_event(event.clone(), None), move |_m: Message| {
                let processed = processed.clone();
                async move {
                    processed.fetch_add(1, Ordering::SeqCst);
                    Outcome::Release
                }
            })
            .await
            .unwrap()
    };

    assert_eq!(processed.load(Ordering::SeqCst), 2, "both records ran");
    assert_eq!(response.batch_item_failures.len(), 2);
}

#[tokio::test]
async fn a_record_with_less_than_the_start_reserve_left_is_not_started() {
    let sqs = sqs().await;
    let queue = fresh_queue(
        &sqs,
        "start-reserve",
        QueueSpec {
            fifo: true,
            ..spec(30)
        },
    )
    .await;
    for body in ["a1", "a2"] {
        send_to_group(&sqs, &queue.url, "a", body).await;
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 2).await;
    let a2 = event
        .records
        .iter()
        .find(|r| r.body.as_deref() == Some("a2"))
        .unwrap()
        .message_id
        .clone()
        .unwrap();
    // Stops waiting 3 s after the start; a record needs 2 s to be worth starting. a1
    // starts with 3 s and takes 1.5 s: a2 would start with 1.5 s.
    let (runtime, calls) = recorded_runtime(
        BatchConfig {
            deadline_margin: Duration::from_millis(500),
            start_reserve: Duration::from_secs(2),
            ..BatchConfig::default()
        },
        docflow::sqs::AWS_ACTIONS,
    )
    .await;
    let processed = Arc::new(std::sync::Mutex::new(Vec::new()));

    let response = {
        let processed = processed.clone();
        runtime
            .run(
                lambda_event(event.clone(), Some(Duration::from_millis(3500))),
                move |m: Message| {
                    let processed = processed.clone();
                    async move {
                        processed.lock().unwrap().push(m.body.clone());
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        Outcome::Done
                    }
                },
            )
            .await
            .unwrap()
    };

    assert_eq!(*processed.lock().unwrap(), vec!["a1"]);
    assert_eq!(failed_ids(&response), HashSet::from([a2]));
    assert!(
        calls.actions().is_empty(),
        "untouched: no visibility change"
    );
}

#[tokio::test]
async fn a_record_without_message_id_fails_the_whole_batch_instead_of_being_lost() {
    let sqs = sqs().await;
    let mut event = aws_lambda_events::event::sqs::SqsEvent::default();
    let mut record = aws_lambda_events::event::sqs::SqsMessage::default();
    record.body = Some("x".into());
    event.records.push(record);
    let runtime = BatchRuntime::new(sqs, BatchConfig::default());

    let result = runtime
        .run(lambda_event(event, None), |_m| async { Outcome::Done })
        .await;

    assert!(result.is_err());
}

#[tokio::test]
async fn the_local_mapping_treats_an_unknown_item_identifier_as_a_whole_batch_failure() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "invalid-resp", spec(30)).await;
    send(&sqs, &queue.url, "m").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let mut response = aws_lambda_events::event::sqs::SqsBatchResponse::default();
    let mut bogus = aws_lambda_events::event::sqs::BatchItemFailure::default();
    bogus.item_identifier = "not-in-this-batch".into();
    response.batch_item_failures.push(bogus);

    let completion = esm.complete(&event, &response).await.unwrap();

    assert!(completion.whole_batch_failed);
    assert!(completion.deleted.is_empty());
}

#[tokio::test]
async fn work_that_would_outlive_the_deadline_gives_up_in_time_for_the_record_to_choose_its_outcome()
 {
    let sqs = sqs().await;
    // Queue visibility 2 s: a plain failure report would make it visible again by the end.
    let queue = fresh_queue(&sqs, "out-of-time", spec(2)).await;
    send(&sqs, &queue.url, "slow").await;
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, 1).await;
    let received = tokio::time::Instant::now();
    let (runtime, calls) = recorded_runtime(
        BatchConfig {
            deadline_margin: Duration::from_millis(500),
            ..BatchConfig::default()
        },
        docflow::sqs::AWS_ACTIONS,
    )
    .await;
    let recorded = Arc::new(AtomicUsize::new(0));

    let response = {
        let recorded = recorded.clone();
        runtime
            .run(
                lambda_event(event.clone(), Some(Duration::from_millis(2500))),
                move |m: Message| {
                    let recorded = recorded.clone();
                    async move {
                        assert!(m.time_left().unwrap() <= Duration::from_millis(2000));
                        let slow = tokio::time::sleep(Duration::from_secs(60));
                        match m.within_deadline(Duration::from_millis(700), slow).await {
                            Ok(()) => Outcome::Done,
                            Err(docflow::sqs::OutOfTime) => {
                                // The record's own failure handling still runs, e.g. a backoff.
                                recorded.fetch_add(1, Ordering::SeqCst);
                                Outcome::Retry {
                                    after: Duration::from_secs(20),
                                }
                            }
                        }
                    }
                },
            )
            .await
            .unwrap()
    };
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(
        recorded.load(Ordering::SeqCst),
        1,
        "the record saw the deadline coming"
    );
    assert_eq!(response.batch_item_failures.len(), 1);
    // Past the queue's own 2 s since the receive: only the Retry keeps it hidden.
    tokio::time::sleep_until(received + Duration::from_secs(3)).await;
    assert!(
        visible_bodies(&sqs, &queue.url).await.is_empty(),
        "its own Retry{{20 s}} applied"
    );
    assert_eq!(calls.visibility_timeouts(), vec![20]);
    calls.assert_declared();
}

/// Lambda's poller does not stop when SQS refuses a delete (a handle from before the
/// message was moved on, or, in moto, a delete racing another on its unlocked message
/// list): the refused record is logged and stays, to come back as a duplicate delivery,
/// and the others of the batch are deleted. The local mapping used to fail the whole
/// poll loop on it (`docflow eval matching` stopped once under load).
#[tokio::test]
async fn a_refused_delete_keeps_only_its_record_and_the_poller_goes_on() {
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "refused-delete", spec(30)).await;
    send(&sqs, &queue.url, "fine").await;
    send(&sqs, &queue.url, "stale-handle").await;
    let esm = mapping(&sqs, &queue.url).await;
    let mut event = poll_n(&esm, 2).await;
    let stale = event
        .records
        .iter_mut()
        .find(|r| r.body.as_deref() == Some("stale-handle"))
        .unwrap();
    let stale_id = stale.message_id.clone().unwrap();
    stale.receipt_handle = Some("not-a-handle-sqs-ever-gave".into());
    let (runtime, _calls) =
        recorded_runtime(BatchConfig::default(), docflow::sqs::AWS_ACTIONS).await;
    let response = runtime
        .run(lambda_event(event.clone(), None), |_m| async {
            Outcome::Done
        })
        .await
        .unwrap();
    assert!(response.batch_item_failures.is_empty());

    let completion = esm.complete(&event, &response).await.unwrap();

    assert_eq!(completion.kept, vec![stale_id]);
    assert_eq!(completion.deleted.len(), 1);
    assert!(!completion.whole_batch_failed);
}
