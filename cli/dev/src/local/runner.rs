//! Several event source mappings and a schedule, run together: the local stand-in for
//! what AWS runs around the functions (`docflow local run`, `make demo`, soak, bench).
//!
//! Per source, `max_concurrency` pollers each receive a batch, invoke the function and
//! apply the result through one [`EventSourceMapping`] — at most `max_concurrency`
//! batches of a queue are in flight, as with `ScalingConfig.MaximumConcurrency`. The
//! scheduled function (the sweeper) runs every `schedule_every`, never twice at once
//! (its reserved concurrency is 1 in AWS).
//!
//! With `until_idle`, the run ends when all of these hold, and then the scheduled
//! function reports it found nothing:
//!
//! - no record this run left on a queue can still come back: every record reported as
//!   failed (or of a batch that failed as a whole) below its queue's `maxReceiveCount`
//!   has been received again. The runner knows these by message id, so it never trusts
//!   a counter for them;
//! - two checks in a row, the second starting more than one long poll (plus the
//!   batching window) after the first ended, found nothing in flight here, no batch
//!   started or ended during or between them, and every source queue empty (no
//!   visible, in-flight or delayed message: a message waiting out a retry backoff is
//!   still work).
//!
//! Why two checks: SQS (and moto) compute `ApproximateNumberOfMessages` and
//! `ApproximateNumberOfMessagesNotVisible` at different moments, so a record whose
//! visibility expires between the two is counted in neither. It can expire only once;
//! at the second check it is visible (counted), was received (a batch started) or was
//! moved to the DLQ by a receive in between (really gone). Messages in the DLQs do not
//! count: they wait for a person.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use aws_sdk_sqs::types::QueueAttributeName;
use tokio::time::Instant;

use aws_lambda_events::event::sqs::SqsEvent;

use super::invoke::{BoxFuture, Invoke};
use super::mapping::{Completion, EventSourceMapping};

/// One queue and the function it triggers.
pub struct Source {
    /// Short name for progress and reports (`ingestion`).
    pub name: String,
    pub mapping: EventSourceMapping,
    /// The queue's DLQ, whose depth is reported.
    pub dlq_url: Option<String>,
    pub function: Arc<dyn Invoke>,
    /// Passed in the Lambda context (`invoked_function_arn`).
    pub function_arn: String,
    /// Batches in flight at most (`ScalingConfig.MaximumConcurrency`).
    pub max_concurrency: usize,
    /// The function timeout: the context's deadline, and past it the batch fails.
    pub timeout: Duration,
}

/// What a scheduled run reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSummary {
    /// Whether it found anything to do (stuck work, open tasks). An idle run needs false.
    pub found_anything: bool,
    /// One line for the progress output.
    pub summary: String,
}

/// A function run on a schedule (the sweeper).
pub trait Scheduled: Send + Sync {
    fn run(&self) -> BoxFuture<'_, anyhow::Result<SweepSummary>>;
}

/// How long and how a [`Runner`] runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Stop once everything is idle (see the module docs).
    pub until_idle: bool,
    /// Stop after this long in any case (the report says whether it was idle).
    pub max_duration: Option<Duration>,
    /// The schedule of the scheduled function (AWS: `rate(5 minutes)`).
    pub schedule_every: Duration,
    /// How often queue depths are read (and, with `until_idle`, idleness checked).
    pub check_every: Duration,
    /// Least time between two scheduled runs started by idle checks, so open work the
    /// scheduled function keeps finding (e.g. a DATEV task still running) is asked
    /// about at a sane pace.
    pub min_idle_sweep_gap: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            until_idle: false,
            max_duration: None,
            schedule_every: Duration::from_secs(60),
            check_every: Duration::from_millis(500),
            min_idle_sweep_gap: Duration::from_secs(1),
        }
    }
}

/// Counters of one source queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    pub name: String,
    /// Records delivered to the function.
    pub received: u64,
    /// Records deleted after the function returned (success, or finished failure).
    pub done: u64,
    /// Records the function reported as failed: left on the queue, they come back (or
    /// go to the DLQ on their last receive).
    pub retried: u64,
    /// Records of batches that failed as a whole (error, timeout, invalid response).
    pub failed: u64,
    pub batches: u64,
    pub whole_batch_failures: u64,
    /// Messages in the queue at the last check: visible, in flight and delayed.
    pub in_queue: u64,
    /// Messages in the DLQ at the last check.
    pub dlq: u64,
    /// Receive or delete calls that failed (the batch comes back by itself).
    pub errors: u64,
    pub last_error: Option<String>,
}

/// What a run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RunReport {
    pub queues: Vec<QueueStats>,
    /// Scheduled runs, and those that failed.
    pub sweeps: u64,
    pub sweep_errors: u64,
    /// The last scheduled run's error, if it failed.
    pub last_sweep_error: Option<String>,
    /// Whether the run ended because everything was idle.
    pub idle: bool,
    pub elapsed_ms: u128,
}

/// Progress callbacks (the CLI draws bars; tests ignore them). All default to nothing.
pub trait Observer: Send + Sync {
    /// A batch was applied.
    fn batch(&self, _queue: &QueueStats, _completion: &Completion) {}
    /// Queue depths were read.
    fn depths(&self, _queues: &[QueueStats]) {}
    /// A scheduled run ended.
    fn sweep(&self, _result: &Result<SweepSummary, String>) {}
    /// A receive or delete failed.
    fn error(&self, _queue: &str, _error: &str) {}
}

struct Silent;
impl Observer for Silent {}

/// Event source mappings and a schedule, run together. Build it, then [`Runner::run`].
pub struct Runner {
    sources: Vec<Source>,
    scheduled: Option<Arc<dyn Scheduled>>,
    options: RunOptions,
    observer: Arc<dyn Observer>,
}

struct Shared {
    stats: Vec<Mutex<QueueStats>>,
    in_flight: AtomicUsize,
    /// Bumped whenever a batch starts or ends: an idle check that saw it change is void.
    generation: AtomicU64,
    stop: AtomicBool,
    /// Records this run left on a queue that will be delivered again. The run is not
    /// idle while any is awaited.
    awaited: Mutex<Awaited>,
    /// Each source queue's `maxReceiveCount` (its redrive policy); `None` without one,
    /// and then every record left on the queue comes back.
    max_receive: Vec<Option<u32>>,
}

impl Runner {
    pub fn new(sources: Vec<Source>, options: RunOptions) -> Self {
        Runner {
            sources,
            scheduled: None,
            options,
            observer: Arc::new(Silent),
        }
    }

    /// Adds the scheduled function.
    pub fn with_schedule(mut self, scheduled: Arc<dyn Scheduled>) -> Self {
        self.scheduled = Some(scheduled);
        self
    }

    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// Runs until `shutdown` resolves, `max_duration` passes, or (with `until_idle`)
    /// everything is idle. Batches in flight when it stops are finished first. Fails
    /// only when a queue's depth cannot be read at all at the start (wrong URL, emulator
    /// down); later errors are counted in the report and retried.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> anyhow::Result<RunReport> {
        let started = Instant::now();
        let sources: Vec<Arc<Source>> = self.sources.into_iter().map(Arc::new).collect();
        let mut max_receive = Vec::with_capacity(sources.len());
        for source in &sources {
            depth(&source.mapping.sqs, &source.mapping.queue_url)
                .await
                .with_context(|| format!("cannot read the depth of the {} queue", source.name))?;
            max_receive.push(
                max_receive_count(&source.mapping.sqs, &source.mapping.queue_url)
                    .await
                    .with_context(|| {
                        format!(
                            "cannot read the redrive policy of the {} queue",
                            source.name
                        )
                    })?,
            );
        }
        // One long poll plus the batching window: a record whose visibility expired
        // during one check has, by the next check this far apart, been received or
        // moved to the DLQ by a receive, or is visible and counted (module docs).
        let confirm_gap = sources
            .iter()
            .map(|s| s.mapping.wait + s.mapping.batching_window)
            .max()
            .unwrap_or_default()
            + Duration::from_millis(500);
        let shared = Arc::new(Shared {
            stats: sources
                .iter()
                .map(|s| {
                    Mutex::new(QueueStats {
                        name: s.name.clone(),
                        ..QueueStats::default()
                    })
                })
                .collect(),
            in_flight: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            awaited: Mutex::new(Awaited::default()),
            max_receive,
        });

        let mut pollers = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            for _ in 0..source.max_concurrency.max(1) {
                pollers.push(tokio::spawn(poll_loop(
                    source.clone(),
                    index,
                    shared.clone(),
                    self.observer.clone(),
                )));
            }
        }

        let mut report = RunReport::default();
        let deadline = self.options.max_duration.map(|d| started + d);
        let mut next_schedule = Instant::now() + self.options.schedule_every;
        let mut last_idle_sweep: Option<Instant> = None;
        // The first of two quiet, empty checks: when it ended, and the generation then.
        let mut first_quiet: Option<(Instant, u64)> = None;
        let mut ticker = tokio::time::interval(self.options.check_every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = ticker.tick() => {}
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let check_started = Instant::now();
            let generation = shared.generation.load(Ordering::SeqCst);
            let quiet_before = shared.in_flight.load(Ordering::SeqCst) == 0;
            let empty = refresh_depths(&sources, &shared, self.observer.as_ref()).await;
            let quiet = quiet_before
                && shared.in_flight.load(Ordering::SeqCst) == 0
                && shared.generation.load(Ordering::SeqCst) == generation;
            let awaiting = !shared
                .awaited
                .lock()
                .expect("awaited lock")
                .waiting
                .is_empty();

            let scheduled_due = Instant::now() >= next_schedule;
            let idle_candidate = if self.options.until_idle && empty && quiet && !awaiting {
                match first_quiet {
                    // The second quiet, empty check, far enough after the first with no
                    // batch in between.
                    Some((ended, g)) if g == generation => {
                        check_started.duration_since(ended) > confirm_gap
                    }
                    _ => {
                        first_quiet = Some((Instant::now(), generation));
                        false
                    }
                }
            } else {
                first_quiet = None;
                false
            };
            let idle_sweep_allowed =
                last_idle_sweep.is_none_or(|t| t.elapsed() >= self.options.min_idle_sweep_gap);
            let Some(scheduled) = &self.scheduled else {
                if idle_candidate {
                    report.idle = true;
                    break;
                }
                continue;
            };
            if !(scheduled_due || (idle_candidate && idle_sweep_allowed)) {
                continue;
            }
            if scheduled_due {
                next_schedule = Instant::now() + self.options.schedule_every;
            }
            if idle_candidate {
                last_idle_sweep = Some(Instant::now());
            }
            report.sweeps += 1;
            let result = scheduled.run().await.map_err(|e| format!("{e:#}"));
            self.observer.sweep(&result);
            report.last_sweep_error = result.as_ref().err().cloned();
            match result {
                Ok(summary) => {
                    if idle_candidate
                        && !summary.found_anything
                        && shared.in_flight.load(Ordering::SeqCst) == 0
                        && shared.generation.load(Ordering::SeqCst) == generation
                    {
                        report.idle = true;
                        break;
                    }
                }
                Err(_) => report.sweep_errors += 1,
            }
        }

        shared.stop.store(true, Ordering::SeqCst);
        for poller in pollers {
            if let Err(e) = poller.await {
                tracing::error!(error.message = %e, "a poller task ended abnormally");
            }
        }
        refresh_depths(&sources, &shared, self.observer.as_ref()).await;
        report.queues = shared
            .stats
            .iter()
            .map(|s| s.lock().expect("stats lock").clone())
            .collect();
        report.elapsed_ms = started.elapsed().as_millis();
        Ok(report)
    }
}

async fn poll_loop(
    source: Arc<Source>,
    index: usize,
    shared: Arc<Shared>,
    observer: Arc<dyn Observer>,
) {
    let stats = |f: &mut dyn FnMut(&mut QueueStats)| {
        let mut guard = shared.stats[index].lock().expect("stats lock");
        f(&mut guard);
        guard.clone()
    };
    while !shared.stop.load(Ordering::SeqCst) {
        let event = match source.mapping.poll().await {
            Ok(Some(event)) => event,
            Ok(None) => continue,
            Err(e) => {
                let text = format!("{e:#}");
                stats(&mut |s| {
                    s.errors += 1;
                    s.last_error = Some(text.clone());
                });
                observer.error(&source.name, &text);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        shared.generation.fetch_add(1, Ordering::SeqCst);
        shared
            .awaited
            .lock()
            .expect("awaited lock")
            .received(&event);
        let records = event.records.len() as u64;
        stats(&mut |s| s.received += records);

        let invocation = source
            .mapping
            .invoke(
                source.function.as_ref(),
                &source.function_arn,
                event.clone(),
                source.timeout,
            )
            .await;
        match source.mapping.apply(&event, &invocation).await {
            Ok(completion) => {
                {
                    let mut awaited = shared.awaited.lock().expect("awaited lock");
                    awaited.deleted(&completion.deleted);
                    awaited.kept(index, shared.max_receive[index], &event, &completion.kept);
                }
                let snapshot = stats(&mut |s| {
                    s.batches += 1;
                    if completion.whole_batch_failed {
                        s.whole_batch_failures += 1;
                        s.failed += completion.kept.len() as u64;
                    } else {
                        s.retried += completion.kept.len() as u64;
                    }
                    s.done += completion.deleted.len() as u64;
                });
                observer.batch(&snapshot, &completion);
            }
            Err(e) => {
                let text = format!("{e:#}");
                stats(&mut |s| {
                    s.batches += 1;
                    s.errors += 1;
                    s.last_error = Some(text.clone());
                });
                observer.error(&source.name, &text);
            }
        }
        shared
            .awaited
            .lock()
            .expect("awaited lock")
            .finished(&event);
        shared.generation.fetch_add(1, Ordering::SeqCst);
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The records left on a queue that will be delivered again, by message id.
///
/// A record is awaited once its batch reported it failed below the queue's
/// `maxReceiveCount`, and no longer once it is received again. The two can happen in
/// either order: the function itself may make a record visible before its batch ends
/// (a release or a short retry sets its visibility), and another poller of the same
/// queue may receive it and finish with it before the first batch's completion is
/// applied. Noting it as awaited after that receive would wait for a delivery that
/// never comes, and `--until-idle` would never end. So a receive of a record some batch
/// still holds is remembered (its `ApproximateReceiveCount`), and a completion does not
/// await a record already received again with a higher count.
#[derive(Default)]
struct Awaited {
    /// Message id → source index.
    waiting: HashMap<String, usize>,
    /// Message id → how many running batches hold it.
    held: HashMap<String, usize>,
    /// Message id → the highest receive count seen while a batch held it.
    received_while_held: HashMap<String, u32>,
    /// Message ids one batch's completion deleted while another batch still held them.
    deleted_while_held: HashSet<String>,
}

fn receive_count(record: &aws_lambda_events::event::sqs::SqsMessage) -> u32 {
    record
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

impl Awaited {
    /// A batch was received: its records have come back, and it now holds them.
    fn received(&mut self, event: &SqsEvent) {
        for record in &event.records {
            let Some(id) = record.message_id.as_deref() else {
                continue;
            };
            self.waiting.remove(id);
            if self.held.contains_key(id) {
                let seen = self.received_while_held.entry(id.to_owned()).or_insert(0);
                *seen = (*seen).max(receive_count(record));
            }
            *self.held.entry(id.to_owned()).or_insert(0) += 1;
        }
    }

    /// The batch's completion was applied: `kept` stayed on the queue.
    fn kept(&mut self, index: usize, max: Option<u32>, event: &SqsEvent, kept: &[String]) {
        if kept.is_empty() {
            return;
        }
        for record in &event.records {
            let Some(id) = record.message_id.as_deref() else {
                continue;
            };
            if !kept.iter().any(|k| k == id) {
                continue;
            }
            let receives = receive_count(record);
            // A record at its last receive goes to the DLQ instead (on a receive after
            // its visibility expires), which the two-check rule covers.
            let comes_back = max.is_none_or(|max| receives < max);
            let already_back = self
                .received_while_held
                .get(id)
                .is_some_and(|later| *later > receives);
            let deleted_by_another = self.deleted_while_held.contains(id);
            if comes_back && !already_back && !deleted_by_another {
                self.waiting.insert(id.to_owned(), index);
            }
        }
    }

    /// The batch's completion was applied: `deleted` are gone from the queue.
    ///
    /// One message can be in two batches at once: SQS delivers at least once, and moto
    /// hands one message to two concurrent receives. When the second batch keeps it (it
    /// met the first one's lease: a retry minutes away) and the first deletes it, no
    /// delivery is coming, in either order of the two completions: a record deleted here
    /// is no longer awaited, nor will it be by a batch that still holds it. Whether a
    /// deletion with the older receipt handle really removed it (AWS does not promise
    /// it) is then left to the two-check rule, which counts it while it is in flight.
    fn deleted(&mut self, deleted: &[String]) {
        for id in deleted {
            self.waiting.remove(id);
            if self.held.get(id).is_some_and(|n| *n > 1) {
                self.deleted_while_held.insert(id.clone());
            }
        }
    }

    /// The batch ended (whatever its outcome): it no longer holds its records.
    fn finished(&mut self, event: &SqsEvent) {
        for id in event.records.iter().filter_map(|r| r.message_id.as_deref()) {
            if let Some(n) = self.held.get_mut(id) {
                *n -= 1;
                if *n == 0 {
                    self.held.remove(id);
                    self.received_while_held.remove(id);
                    self.deleted_while_held.remove(id);
                }
            }
        }
    }
}

/// The queue's `maxReceiveCount` from its redrive policy, `None` without one.
pub async fn max_receive_count(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
) -> anyhow::Result<Option<u32>> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .with_context(|| format!("failed to read the attributes of {url}"))?;
    let Some(policy) = out
        .attributes
        .unwrap_or_default()
        .remove(&QueueAttributeName::RedrivePolicy)
    else {
        return Ok(None);
    };
    let policy: serde_json::Value = serde_json::from_str(&policy)
        .with_context(|| format!("redrive policy of {url}: {policy}"))?;
    let count = match &policy["maxReceiveCount"] {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    };
    count
        .map(|c| Some(c as u32))
        .with_context(|| format!("redrive policy of {url} has no maxReceiveCount: {policy}"))
}

/// Reads every queue's depth into the stats; true when every source queue is empty.
/// A depth that cannot be read counts as not empty.
async fn refresh_depths(sources: &[Arc<Source>], shared: &Shared, observer: &dyn Observer) -> bool {
    let mut empty = true;
    for (index, source) in sources.iter().enumerate() {
        let sqs = &source.mapping.sqs;
        let in_queue = depth(sqs, &source.mapping.queue_url).await;
        let dlq = match &source.dlq_url {
            Some(url) => depth(sqs, url).await.ok(),
            None => Some(0),
        };
        let mut stats = shared.stats[index].lock().expect("stats lock");
        match in_queue {
            Ok(n) => {
                stats.in_queue = n;
                empty &= n == 0;
            }
            Err(e) => {
                empty = false;
                stats.errors += 1;
                stats.last_error = Some(format!("{e:#}"));
            }
        }
        if let Some(n) = dlq {
            stats.dlq = n;
        }
    }
    let snapshot: Vec<QueueStats> = shared
        .stats
        .iter()
        .map(|s| s.lock().expect("stats lock").clone())
        .collect();
    observer.depths(&snapshot);
    empty
}

/// Visible + in flight + delayed messages of a queue.
pub async fn depth(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<u64> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .with_context(|| format!("failed to read the attributes of {url}"))?;
    let attrs = out.attributes.unwrap_or_default();
    Ok([
        QueueAttributeName::ApproximateNumberOfMessages,
        QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        QueueAttributeName::ApproximateNumberOfMessagesDelayed,
    ]
    .iter()
    .filter_map(|name| attrs.get(name).and_then(|v| v.parse::<u64>().ok()))
    .sum())
}

#[cfg(test)]
mod tests {
    use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};

    use super::Awaited;

    fn batch(records: &[(&str, u32)]) -> SqsEvent {
        let mut event = SqsEvent::default();
        for (id, count) in records {
            let mut record = SqsMessage::default();
            record.message_id = Some((*id).to_owned());
            record
                .attributes
                .insert("ApproximateReceiveCount".to_owned(), count.to_string());
            event.records.push(record);
        }
        event
    }

    fn ids(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn a_kept_record_is_awaited_until_it_is_received_again() {
        let mut awaited = Awaited::default();
        let first = batch(&[("m", 1), ("n", 1)]);
        awaited.received(&first);
        awaited.deleted(&ids(&["n"]));
        awaited.kept(0, Some(3), &first, &ids(&["m"]));
        awaited.finished(&first);
        assert!(awaited.waiting.contains_key("m"));

        awaited.received(&batch(&[("m", 2)]));
        assert!(awaited.waiting.is_empty());
    }

    #[test]
    fn a_record_at_its_last_receive_is_not_awaited() {
        let mut awaited = Awaited::default();
        let last = batch(&[("m", 3)]);
        awaited.received(&last);
        awaited.kept(0, Some(3), &last, &ids(&["m"]));
        awaited.finished(&last);
        assert!(awaited.waiting.is_empty());
    }

    /// The bench's pipeline hung on this for its whole 900 s (2026-11-27): moto gave one
    /// ingestion message to two pollers; the second met the first's lease and kept it
    /// for a 360 s retry, the first completed and deleted it, and the run awaited a
    /// delivery that never came.
    #[test]
    fn a_duplicate_kept_by_one_batch_and_deleted_by_the_other_is_not_awaited() {
        for deleted_first in [false, true] {
            let mut awaited = Awaited::default();
            let first = batch(&[("m", 1)]);
            let second = batch(&[("m", 2)]);
            awaited.received(&first);
            awaited.received(&second);
            if deleted_first {
                awaited.deleted(&ids(&["m"]));
                awaited.finished(&first);
                awaited.kept(0, Some(3), &second, &ids(&["m"]));
                awaited.finished(&second);
            } else {
                awaited.kept(0, Some(3), &second, &ids(&["m"]));
                awaited.finished(&second);
                awaited.deleted(&ids(&["m"]));
                awaited.finished(&first);
            }
            assert!(awaited.waiting.is_empty(), "deleted first: {deleted_first}");
            assert!(awaited.held.is_empty() && awaited.deleted_while_held.is_empty());
        }
    }

    #[test]
    fn a_deletion_by_the_only_holder_does_not_mark_the_record_for_a_later_batch() {
        let mut awaited = Awaited::default();
        let first = batch(&[("m", 1)]);
        awaited.received(&first);
        awaited.deleted(&ids(&["m"]));
        awaited.finished(&first);
        assert!(awaited.deleted_while_held.is_empty());
    }
}
