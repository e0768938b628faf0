//! Property tests of the SQS batch runtime (docs/batch-runtime.md) on real queues of the
//! local emulator: for any mix of outcomes (`Done`, `Discard`, `Retry`, `Release`),
//! panics and records still running at the deadline, on standard and FIFO queues,
//!
//! - the reported `batchItemFailures` are exactly the records that did not end `Done` or
//!   `Discard` (on FIFO queues: also every later record of a group after its first
//!   failure), each a message id of the batch, never empty, never twice;
//! - within a FIFO group records run in order and none runs after the group's first
//!   failure;
//! - Lambda's side (`EventSourceMapping::complete`) accepts the response and deletes
//!   exactly the others;
//! - the only SQS calls are the visibility changes the outcomes ask for: `Retry { after }`
//!   sets `after` (rounded up), a FIFO record skipped behind a failure is made visible at
//!   once.
//!
//! The batch runs through `BatchRuntime::run`, the entry point every function's handler
//! calls; its SQS client records every call (`docflow_tests::aws_calls`). Each case uses a
//! fresh queue; the case count is kept small so the suite stays fast.
//!
//! The cases come from a pinned seed (printed; `PROPTEST_RNG_SEED` picks others), so a
//! failure repeats. Only the hung records depend on the deadline; everything else must
//! be done by then, which on a busy machine may take longer than the first budget: a
//! case that reached its deadline and broke a property runs again with twice the time,
//! up to [`MAX_BUDGET`], and only that last run's verdict counts.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use docflow::sqs::{BatchConfig, BatchRuntime, Message, Outcome};
use docflow_dev::local::QueueSpec;
use docflow_tests::aws_calls::AwsCalls;
use docflow_tests::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
});

/// What `process` does with one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Done,
    Discard,
    /// `Retry { after }` in milliseconds (sub-second ones are rounded up).
    Retry(u64),
    Release,
    Panic,
    /// Still running when the invocation's deadline comes.
    Hang,
    /// `Done` after a pause, so records finish in another order than they started.
    SlowDone,
}

impl Behaviour {
    fn code(self) -> String {
        match self {
            Behaviour::Done => "done".into(),
            Behaviour::Discard => "discard".into(),
            Behaviour::Retry(ms) => format!("retry-{ms}"),
            Behaviour::Release => "release".into(),
            Behaviour::Panic => "panic".into(),
            Behaviour::Hang => "hang".into(),
            Behaviour::SlowDone => "slow".into(),
        }
    }

    fn from_code(code: &str) -> Self {
        match code {
            "done" => Behaviour::Done,
            "discard" => Behaviour::Discard,
            "release" => Behaviour::Release,
            "panic" => Behaviour::Panic,
            "hang" => Behaviour::Hang,
            "slow" => Behaviour::SlowDone,
            retry => Behaviour::Retry(retry.strip_prefix("retry-").unwrap().parse().unwrap()),
        }
    }

    /// Whether the record, once run, is deleted by Lambda.
    fn deleted(self) -> bool {
        matches!(
            self,
            Behaviour::Done | Behaviour::Discard | Behaviour::SlowDone
        )
    }
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        4 => Just(Behaviour::Done),
        2 => Just(Behaviour::Discard),
        2 => prop_oneof![Just(0u64), Just(400), 1_000..30_000u64].prop_map(Behaviour::Retry),
        2 => Just(Behaviour::Release),
        1 => Just(Behaviour::Panic),
        1 => Just(Behaviour::SlowDone),
        1 => Just(Behaviour::Hang),
    ]
}

/// One message to send: its group (FIFO) and what `process` will do with it.
fn batch() -> impl Strategy<Value = Vec<(u8, Behaviour)>> {
    prop::collection::vec((0..3u8, behaviour()), 1..=10)
}

/// The invocation's time at first: the runtime stops waiting `MARGIN` before it.
const BUDGET: Duration = Duration::from_millis(1_500);
/// The most time a case is given (see the module's doc).
const MAX_BUDGET: Duration = Duration::from_secs(12);
const MARGIN: Duration = Duration::from_millis(300);

/// [`run_case`] with [`BUDGET`], then, while the case reached its deadline and broke a
/// property, with twice the time up to [`MAX_BUDGET`]: the verdict of the last run.
async fn run_plan(fifo: bool, plan: Vec<(u8, Behaviour)>) -> Result<(), TestCaseError> {
    let mut budget = BUDGET;
    loop {
        let mut deadline_reached = false;
        let result = run_case(fifo, plan.clone(), budget, &mut deadline_reached).await;
        if result.is_ok() || !deadline_reached || budget >= MAX_BUDGET {
            return result;
        }
        eprintln!(
            "a case reached its {} ms deadline with a property broken; again with twice the time \
             (plan {plan:?}): {result:?}",
            budget.as_millis()
        );
        budget = (budget * 2).min(MAX_BUDGET);
    }
}

/// Sends the batch, receives it as Lambda would, runs it with `budget` and checks the
/// properties; `deadline_reached` tells whether the run lasted until its deadline.
async fn run_case(
    fifo: bool,
    plan: Vec<(u8, Behaviour)>,
    budget: Duration,
    deadline_reached: &mut bool,
) -> Result<(), TestCaseError> {
    let sqs = sqs().await;
    let queue = fresh_queue(
        &sqs,
        "rt-prop",
        QueueSpec {
            visibility_timeout: Duration::from_secs(60),
            max_receive_count: 3,
            fifo,
        },
    )
    .await;
    for (index, (group, behaviour)) in plan.iter().enumerate() {
        let body = format!("{index}:g{group}:{}", behaviour.code());
        if fifo {
            send_to_group(&sqs, &queue.url, &format!("g{group}"), &body).await;
        } else {
            send(&sqs, &queue.url, &body).await;
        }
    }
    let esm = mapping(&sqs, &queue.url).await;
    let event = poll_n(&esm, plan.len()).await;
    prop_assert_eq!(event.records.len(), plan.len());

    let calls = AwsCalls::new("the batch runtime", docflow::sqs::AWS_ACTIONS);
    let runtime = BatchRuntime::new(
        calls.sqs(&aws().await),
        BatchConfig {
            deadline_margin: MARGIN,
            ..BatchConfig::default()
        },
    );
    let started: Arc<Mutex<Vec<usize>>> = Arc::default();
    let run_started = std::time::Instant::now();
    let response = {
        let started = started.clone();
        runtime
            .run(
                lambda_event(event.clone(), Some(budget)),
                move |m: Message| {
                    let started = started.clone();
                    async move {
                        let mut parts = m.body.splitn(3, ':');
                        let index: usize = parts.next().unwrap().parse().unwrap();
                        let _group = parts.next().unwrap();
                        let behaviour = Behaviour::from_code(parts.next().unwrap());
                        started.lock().unwrap().push(index);
                        match behaviour {
                            Behaviour::Done => Outcome::Done,
                            Behaviour::Discard => Outcome::discard("poison"),
                            Behaviour::Retry(ms) => Outcome::Retry {
                                after: Duration::from_millis(ms),
                            },
                            Behaviour::Release => Outcome::Release,
                            Behaviour::Panic => panic!("record {index} panics"),
                            Behaviour::Hang => {
                                tokio::time::sleep(Duration::from_secs(60)).await;
                                Outcome::Done
                            }
                            Behaviour::SlowDone => {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                Outcome::Done
                            }
                        }
                    }
                },
            )
            .await
            .expect("every record has a message id")
    };
    *deadline_reached = run_started.elapsed() >= budget.saturating_sub(MARGIN);

    // The records as received, by their index in the plan.
    let index_of = |body: &str| -> usize { body.split(':').next().unwrap().parse().unwrap() };
    let received: Vec<(usize, String)> = event
        .records
        .iter()
        .map(|r| {
            (
                index_of(r.body.as_deref().unwrap()),
                r.message_id.clone().unwrap(),
            )
        })
        .collect();
    let id_of: HashMap<usize, String> = received.iter().cloned().collect();

    // The model: which records run, which are reported failed, which visibility changes.
    let mut expected_failed = HashSet::new();
    let mut expected_visibility = Vec::new();
    let mut expected_unstarted = HashSet::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    if fifo {
        // Records of a group, in the order the batch holds them.
        let mut by_group: HashMap<u8, Vec<usize>> = HashMap::new();
        for (index, _) in &received {
            by_group.entry(plan[*index].0).or_default().push(*index);
        }
        groups.extend(by_group.into_values());
    } else {
        groups.extend(received.iter().map(|(index, _)| vec![*index]));
    }
    for group in &groups {
        let mut failed = false;
        let mut hung = false;
        for &index in group {
            let behaviour = plan[index].1;
            if hung {
                // Never reached: still pending when the deadline came.
                expected_failed.insert(index);
                expected_unstarted.insert(index);
            } else if failed {
                expected_failed.insert(index);
                expected_unstarted.insert(index);
                expected_visibility.push(0);
            } else {
                if !behaviour.deleted() {
                    expected_failed.insert(index);
                    failed = true;
                }
                if let Behaviour::Retry(ms) = behaviour {
                    expected_visibility.push(ms.div_ceil(1000) as i32);
                }
                hung = behaviour == Behaviour::Hang;
            }
        }
    }

    // Reported failures: ids of this batch, never empty, never twice, exactly the model's.
    let reported: Vec<String> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    let reported_set: HashSet<String> = reported.iter().cloned().collect();
    prop_assert_eq!(reported.len(), reported_set.len(), "an id reported twice");
    for id in &reported {
        prop_assert!(!id.is_empty(), "an empty itemIdentifier");
        prop_assert!(id_of.values().any(|known| known == id), "unknown id {}", id);
    }
    let expected_ids: HashSet<String> = expected_failed.iter().map(|i| id_of[i].clone()).collect();
    prop_assert_eq!(&reported_set, &expected_ids, "plan {:?}", plan);

    // Order: in each FIFO group, the records that ran are the group's first ones, in order.
    let started = started.lock().unwrap().clone();
    for group in &groups {
        let ran: Vec<usize> = started
            .iter()
            .copied()
            .filter(|i| group.contains(i))
            .collect();
        let should_run: Vec<usize> = group
            .iter()
            .copied()
            .filter(|i| !expected_unstarted.contains(i))
            .collect();
        prop_assert_eq!(ran, should_run, "group order, plan {:?}", plan);
    }
    if fifo {
        // SQS delivered each group in the order it was sent.
        for group in &groups {
            prop_assert!(
                group.windows(2).all(|w| w[0] < w[1]),
                "received out of order: {:?}",
                group
            );
        }
    }

    // The visibility changes asked for, and no other SQS call.
    calls.assert_declared();
    let mut seen = calls.visibility_timeouts();
    seen.sort_unstable();
    expected_visibility.sort_unstable();
    prop_assert_eq!(
        seen,
        expected_visibility,
        "visibility changes, plan {:?}",
        plan
    );

    // Lambda accepts the response and deletes exactly the others.
    let completion = esm.complete(&event, &response).await.unwrap();
    prop_assert!(!completion.whole_batch_failed, "{:?}", completion.failure);
    let deleted: HashSet<String> = completion.deleted.into_iter().collect();
    let expected_deleted: HashSet<String> = id_of
        .iter()
        .filter(|(i, _)| !expected_failed.contains(i))
        .map(|(_, id)| id.clone())
        .collect();
    prop_assert_eq!(deleted, expected_deleted);
    Ok(())
}

/// The seed of the cases unless `PROPTEST_RNG_SEED` gives another.
const SEED: u64 = 2_311_260_023;

fn config(cases: u32) -> Config {
    // `Config::default()` reads `PROPTEST_RNG_SEED`.
    let mut config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(SEED);
    }
    if let RngSeed::Fixed(seed) = config.rng_seed {
        eprintln!("cases from PROPTEST_RNG_SEED={seed} (the same value repeats them)");
    }
    config
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn a_standard_queue_reports_exactly_the_records_not_done_or_discarded(plan in batch()) {
        RUNTIME.block_on(run_plan(false, plan))?;
    }

    #[test]
    fn a_fifo_queue_also_reports_every_record_after_a_groups_first_failure_unprocessed(
        plan in batch(),
    ) {
        RUNTIME.block_on(run_plan(true, plan))?;
    }
}
