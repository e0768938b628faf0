//! Several event source mappings and a schedule, run together: the local stand-in for
//! what AWS runs around the functions (`docflow local run`, `make demo`, soak, bench).
//!
//! Per source, `max_concurrency` pollers each receive a batch, invoke the function and
//! apply the result through one [`EventSourceMapping`] — at most `max_concurrency`
//! batches of a queue are in flight, as with `ScalingConfig.MaximumConcurrency`. The
//! scheduled function (the sweeper) runs every `schedule_every`, never twice at once
//! (its reserved concurrency is 1 in AWS).
//!
//! With `until_idle`, the run ends when, at one check, nothing is in flight here, every
//! source queue is empty (no visible, in-flight or delayed message: a message waiting
//! out a retry backoff is still work), no batch started or ended during the check, and
//! then the scheduled function reports it found nothing. Messages in the DLQs do not
//! count: they wait for a person.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use aws_sdk_sqs::types::QueueAttributeName;
use tokio::time::Instant;

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
        let shared = Arc::new(Shared {
            stats: self
                .sources
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
        });
        let sources: Vec<Arc<Source>> = self.sources.into_iter().map(Arc::new).collect();
        for source in &sources {
            depth(&source.mapping.sqs, &source.mapping.queue_url)
                .await
                .with_context(|| format!("cannot read the depth of the {} queue", source.name))?;
        }

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
            let generation = shared.generation.load(Ordering::SeqCst);
            let quiet_before = shared.in_flight.load(Ordering::SeqCst) == 0;
            let empty = refresh_depths(&sources, &shared, self.observer.as_ref()).await;
            let quiet = quiet_before
                && shared.in_flight.load(Ordering::SeqCst) == 0
                && shared.generation.load(Ordering::SeqCst) == generation;

            let scheduled_due = Instant::now() >= next_schedule;
            let idle_candidate = self.options.until_idle && empty && quiet;
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
        shared.generation.fetch_add(1, Ordering::SeqCst);
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
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
