//! `docflow local run`: the local event-source mappings for every function, and the
//! sweeper on its schedule, on [`docflow_dev::local::Runner`].
//!
//! Functions run in this process by default (each with its own `Deps`, built by
//! [`crate::wiring`] as its `main.rs` would), or, with `--via URL`, behind `cargo
//! lambda watch`'s invoke endpoint, where each runs as its real binary.

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use docflow_dev::local::{
    BoxFuture, Completion, HttpInvoke, InProcess, Invocation, Invoke, Observer, QueueStats,
    RunOptions, Runner, Scheduled, Source, SweepSummary,
};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use lambda_runtime::LambdaEvent;

use docflow::telemetry::metrics::{self, Metric, MetricSet, MetricsSink, Unit};

use crate::wiring::Local;

/// The SQS-triggered functions, in pipeline order.
pub const FUNCTIONS: [&str; 3] = ["ingestion", "matching", "document-output"];

/// Each function's timeout in AWS (infra/main.tf): the local deadline too.
pub fn default_timeout(function: &str) -> Duration {
    docflow_dev::local::function_timeout(function)
}

/// How `local run` maps queues to functions.
#[derive(Debug, Clone)]
pub struct Options {
    pub functions: Vec<String>,
    pub batch_size: i32,
    pub batching_window: Duration,
    /// Concurrent batches per function (`ScalingConfig.MaximumConcurrency`).
    pub concurrency: usize,
    /// Overrides every function's timeout.
    pub timeout: Option<Duration>,
    /// `cargo lambda watch`'s address, e.g. `http://127.0.0.1:9000`.
    pub via: Option<String>,
    /// Run the sweeper (on `run.schedule_every`, and when idle).
    pub sweeper: bool,
    pub run: RunOptions,
    /// Test-only: wraps each function's invoker (the soak injects worker crashes and
    /// duplicate deliveries here). `None` everywhere else.
    pub fault_injection: Option<FaultInjection>,
}

/// Test-only hook of [`Options`]: given a function's name and its invoker, returns the
/// invoker the event-source mapping calls instead.
#[derive(Clone)]
pub struct FaultInjection(pub Arc<WrapInvoke>);

/// What [`FaultInjection`] holds: function name and invoker in, invoker out.
pub type WrapInvoke = dyn Fn(&str, Arc<dyn Invoke>) -> Arc<dyn Invoke> + Send + Sync;

impl std::fmt::Debug for FaultInjection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FaultInjection(..)")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            functions: FUNCTIONS.iter().map(|f| (*f).to_owned()).collect(),
            batch_size: 10,
            batching_window: Duration::ZERO,
            concurrency: 2,
            timeout: None,
            via: None,
            sweeper: true,
            run: RunOptions::default(),
            fault_injection: None,
        }
    }
}

fn in_process<D, F, Fut>(deps: D, handler: F) -> Arc<dyn Invoke>
where
    D: Send + Sync + 'static,
    F: Fn(Arc<D>, LambdaEvent<SqsEvent>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<
            Output = Result<aws_lambda_events::event::sqs::SqsBatchResponse, lambda_runtime::Error>,
        > + Send
        + 'static,
{
    let deps = Arc::new(deps);
    Arc::new(InProcess(move |event| handler(deps.clone(), event)))
}

/// The invoker of one function.
async fn function(local: &Local, name: &str, via: Option<&str>) -> anyhow::Result<Arc<dyn Invoke>> {
    if let Some(base) = via {
        return Ok(Arc::new(HttpInvoke::new(
            reqwest::Client::new(),
            base,
            name,
        )));
    }
    Ok(match name {
        "ingestion" => in_process(local.ingestion().await?, |deps, event| async move {
            ingestion::handler(&deps, event).await
        }),
        "matching" => in_process(local.matching().await?, |deps, event| async move {
            matching::handler(&deps, event).await
        }),
        "document-output" => in_process(local.document_output().await?, |deps, event| async move {
            document_output::handler(&deps, event).await
        }),
        other => {
            anyhow::bail!("unknown function {other:?}; use ingestion, matching or document-output")
        }
    })
}

/// Builds the runner: one source per function, the sweeper on its schedule.
pub async fn build(local: &Local, options: &Options) -> anyhow::Result<Runner> {
    let mut sources = Vec::new();
    for name in &options.functions {
        let pair = local.queues.by_name(name).ok_or_else(|| {
            anyhow::anyhow!("unknown function {name:?}; use ingestion, matching or document-output")
        })?;
        let mut mapping =
            docflow_dev::local::EventSourceMapping::new(local.sqs.clone(), &pair.url).await?;
        mapping.batch_size = options.batch_size;
        mapping.batching_window = options.batching_window;
        let region = local
            .aws
            .region()
            .map(|r| r.to_string())
            .unwrap_or_default();
        sources.push(Source {
            name: name.clone(),
            mapping,
            dlq_url: Some(pair.dlq_url.clone()),
            function: match &options.fault_injection {
                Some(FaultInjection(wrap)) => {
                    wrap(name, function(local, name, options.via.as_deref()).await?)
                }
                None => function(local, name, options.via.as_deref()).await?,
            },
            function_arn: format!("arn:aws:lambda:{region}:123456789012:function:{name}"),
            max_concurrency: options.concurrency,
            timeout: options.timeout.unwrap_or_else(|| default_timeout(name)),
        });
    }
    let mut runner = Runner::new(sources, options.run.clone());
    if options.sweeper {
        runner = runner.with_schedule(sweeper(local, options.via.as_deref()).await?);
    }
    Ok(runner)
}

/// The sweeper's timeout in AWS (infra/sweeper.tf): each local sweep's budget.
pub const SWEEPER_TIMEOUT: Duration = Duration::from_secs(120);

/// The sweeper: in process, or through cargo lambda watch.
async fn sweeper(local: &Local, via: Option<&str>) -> anyhow::Result<Arc<dyn Scheduled>> {
    match via {
        Some(base) => Ok(Arc::new(HttpSweeper(HttpInvoke::new(
            reqwest::Client::new(),
            base,
            "sweeper",
        )))),
        None => Ok(Arc::new(InProcessSweeper(
            local.sweeper().await?,
            local.metrics.clone(),
        ))),
    }
}

/// `sweeper::sweep` with the budget of one scheduled invocation; its metrics go where
/// the handler's would (the local sink instead of stdout).
struct InProcessSweeper(sweeper::Deps, MetricsSink);

impl Scheduled for InProcessSweeper {
    fn run(&self) -> BoxFuture<'_, anyhow::Result<SweepSummary>> {
        Box::pin(async move {
            let report = sweeper::sweep(&self.0, Some(SWEEPER_TIMEOUT)).await?;
            self.1
                .emit(sweeper::FUNCTION, &sweeper::metric_set(&report));
            summarize(&report)
        })
    }
}

/// A sweep report as the runner sees it; a sweep with failed steps is a failed run (as
/// the Lambda handler reports it), so `--until-idle` never calls that idle.
pub fn summarize(report: &sweeper::SweepReport) -> anyhow::Result<SweepSummary> {
    if !report.errors.is_empty() {
        anyhow::bail!("sweep steps failed: {}", report.errors.join("; "));
    }
    let value = serde_json::to_value(report)?;
    Ok(SweepSummary {
        found_anything: report.found_anything(),
        summary: report_line(&value),
    })
}

/// The EventBridge scheduled event the sweeper receives (as in `events/sweeper/`).
pub fn scheduled_event() -> serde_json::Value {
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    serde_json::json!({
        "version": "0",
        "id": uuid::Uuid::new_v4(),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": now,
        "region": "eu-central-1",
        "resources": ["arn:aws:events:eu-central-1:123456789012:rule/docflow-sweeper"],
        "detail": {}
    })
}

/// Whether a sweep report (as JSON) found anything: stuck work of any kind, or open
/// DATEV tasks (`SweepReport::found_anything`).
pub fn report_found_anything(report: &serde_json::Value) -> bool {
    let found = |kind: &str| report[kind]["found"].as_u64().unwrap_or(0) > 0;
    found("ingestion")
        || found("matching")
        || found("output")
        || report["tasks"]["polled"].as_u64().unwrap_or(0) > 0
}

/// One line about a sweep report (as JSON).
pub fn report_line(report: &serde_json::Value) -> String {
    let kind = |k: &str| {
        let r = &report[k];
        format!(
            "{k} found {} resent {} given up {}",
            r["found"].as_u64().unwrap_or(0),
            r["resent"].as_u64().unwrap_or(0),
            r["given_up"].as_u64().unwrap_or(0)
        )
    };
    let t = &report["tasks"];
    format!(
        "{} · {} · {} · DATEV tasks polled {} (succeeded {}, failed {}, running {})",
        kind("ingestion"),
        kind("matching"),
        kind("output"),
        t["polled"].as_u64().unwrap_or(0),
        t["succeeded"].as_u64().unwrap_or(0),
        t["failed"].as_u64().unwrap_or(0),
        t["still_running"].as_u64().unwrap_or(0)
    )
}

struct HttpSweeper(HttpInvoke);

impl Scheduled for HttpSweeper {
    fn run(&self) -> BoxFuture<'_, anyhow::Result<SweepSummary>> {
        Box::pin(async move {
            match self.0.call(&scheduled_event()).await {
                Invocation::Returned(report) => Ok(SweepSummary {
                    found_anything: report_found_anything(&report),
                    summary: report_line(&report),
                }),
                Invocation::Failed(why) => Err(anyhow::anyhow!("sweeper failed: {why}")),
            }
        })
    }
}

/// Progress on stderr: one live line per queue (received / done / retried / failed /
/// DLQ, with a bar toward an empty queue) on a terminal; one line per batch and sweep
/// otherwise (CI logs, `make demo | tee`).
pub struct Progress {
    multi: MultiProgress,
    bars: Vec<(String, ProgressBar)>,
    sweep: ProgressBar,
    live: bool,
    last_sweep: Mutex<Option<String>>,
}

impl Progress {
    pub fn new(functions: &[String], sweeper: bool) -> Arc<Self> {
        let live = std::io::stderr().is_terminal();
        let multi = MultiProgress::with_draw_target(if live {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let style = ProgressStyle::with_template("{prefix:>16} [{bar:24}] {pos}/{len}  {msg}")
            .expect("valid template")
            .progress_chars("=> ");
        let bars = functions
            .iter()
            .map(|name| {
                let bar = multi.add(ProgressBar::new(0));
                bar.set_style(style.clone());
                bar.set_prefix(name.clone());
                (name.clone(), bar)
            })
            .collect();
        let sweep = multi.add(ProgressBar::new_spinner());
        sweep
            .set_style(ProgressStyle::with_template("{prefix:>16} {msg}").expect("valid template"));
        sweep.set_prefix("sweeper");
        sweep.set_message(if sweeper {
            "waiting for its first run"
        } else {
            "off"
        });
        Arc::new(Progress {
            multi,
            bars,
            sweep,
            live,
            last_sweep: Mutex::new(None),
        })
    }

    /// The multi-bar, so log lines can be printed above it.
    pub fn multi(&self) -> &MultiProgress {
        &self.multi
    }

    fn line(stats: &QueueStats) -> String {
        format!(
            "received {} · done {} · retried {} · failed {} · DLQ {}",
            stats.received, stats.done, stats.retried, stats.failed, stats.dlq
        )
    }

    fn update(&self, stats: &QueueStats) {
        if let Some((_, bar)) = self.bars.iter().find(|(n, _)| *n == stats.name) {
            bar.set_length(stats.done + stats.in_queue);
            bar.set_position(stats.done);
            bar.set_message(Self::line(stats));
        }
    }

    /// Ends the bars, leaving their last state on screen.
    pub fn finish(&self) {
        for (_, bar) in &self.bars {
            bar.finish();
        }
        self.sweep.finish();
    }
}

impl Observer for Progress {
    fn batch(&self, queue: &QueueStats, completion: &Completion) {
        self.update(queue);
        if !self.live {
            let what = match &completion.failure {
                Some(why) => format!("whole batch failed ({why})"),
                None => format!(
                    "{} done, {} left on the queue",
                    completion.deleted.len(),
                    completion.kept.len()
                ),
            };
            eprintln!(
                "{}: batch of {} → {what}",
                queue.name,
                completion.deleted.len() + completion.kept.len()
            );
        }
    }

    fn depths(&self, queues: &[QueueStats]) {
        for stats in queues {
            self.update(stats);
        }
    }

    fn sweep(&self, result: &Result<SweepSummary, String>) {
        let line = match result {
            Ok(s) => s.summary.clone(),
            Err(e) => format!("failed: {e}"),
        };
        self.sweep.set_message(line.clone());
        let mut last = self.last_sweep.lock().expect("lock");
        if !self.live && last.as_deref() != Some(line.as_str()) {
            eprintln!("sweeper: {line}");
        }
        *last = Some(line);
    }

    fn error(&self, queue: &str, error: &str) {
        let line = format!("{queue}: {error}");
        if self.live {
            self.multi.suspend(|| eprintln!("{line}"));
        } else {
            eprintln!("{line}");
        }
    }
}

/// The final per-queue lines (always printed, also without a terminal).
pub fn report_lines(report: &docflow_dev::local::RunReport) -> Vec<String> {
    let mut lines: Vec<String> = report
        .queues
        .iter()
        .map(|q| {
            format!(
                "{:>16}: {} · in queue {}{}",
                q.name,
                Progress::line(q),
                q.in_queue,
                if q.errors > 0 {
                    format!(
                        " · {} SQS errors (last: {})",
                        q.errors,
                        q.last_error.as_deref().unwrap_or("")
                    )
                } else {
                    String::new()
                }
            )
        })
        .collect();
    lines.push(format!(
        "{:>16}: {} runs, {} failed",
        "sweeper", report.sweeps, report.sweep_errors
    ));
    lines
}

/// The per-function summary of a run, read back from the EMF lines the functions wrote
/// (the same lines CloudWatch turns into metrics): one line per function with every
/// counter that is not zero, times as count / mean / max, and the grouped metrics
/// (`RecordsDiscarded[reason=not_an_id]`).
pub fn metrics_summary<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    metrics::parse_lines(lines.iter().map(AsRef::as_ref))
        .iter()
        .map(|(function, set)| format!("{function:>16}: {}", summary_of(set)))
        .collect()
}

fn summary_of(set: &MetricSet) -> String {
    let mut parts = Vec::new();
    for metric in metrics::ALL {
        if let Some(part) = describe(metric, &set.values(None, *metric)) {
            parts.push(part);
        }
        for (dimension, group) in set.groups_of(*metric) {
            let values = set.values(Some((dimension, group.as_str())), *metric);
            if let Some(part) = describe(metric, &values) {
                parts.push(part.replacen(
                    metric.name,
                    &format!("{}[{dimension}={group}]", metric.name),
                    1,
                ));
            }
        }
    }
    if parts.is_empty() {
        "no batches".to_owned()
    } else {
        parts.join(" · ")
    }
}

fn describe(metric: &Metric, values: &[f64]) -> Option<String> {
    if values.is_empty() {
        return None;
    }
    let unit = match metric.unit {
        Unit::Count => "",
        Unit::Milliseconds => " ms",
        Unit::Seconds => " s",
    };
    if metric.unit == Unit::Count {
        let total: f64 = values.iter().sum();
        return (total != 0.0).then(|| format!("{} {total}", metric.name));
    }
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Some(format!(
        "{} n={} mean {mean:.0}{unit} max {max:.0}{unit}",
        metric.name,
        values.len()
    ))
}
