//! Metrics as CloudWatch Embedded Metric Format (EMF): JSON log lines that CloudWatch
//! Logs turns into metrics, with no API call and no agent.
//!
//! - The batch runtime owns one [`MetricSet`] per batch and writes it once, at the end
//!   of the batch, through a [`MetricsSink`] (stdout in Lambda: each document is a line
//!   of its own, since CloudWatch extracts EMF only from a line that is itself the EMF
//!   object, never from one nested in the tracing JSON).
//! - While a record is processed, the runtime makes the batch's set current
//!   ([`scope`]); anything on that task (a function, the LLM client, the Maesn client)
//!   adds to it with [`count`] / [`count_by`] without passing a handle around. Work
//!   moved to another task (`spawn_blocking`, `tokio::spawn`) counts after it returns.
//! - Names, units and dimension names are the constants below: the Terraform alarms and
//!   the dashboard are checked against them (`tests/tests/it/infra_contract.rs`).
//!
//! Dimensions are low-cardinality only: the function, and per group one of
//! [`dimension::REASON`], [`dimension::PROVIDER`], [`dimension::OUTCOME`],
//! [`dimension::KIND`], [`dimension::STAGE`]. Never an id.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

/// The namespace when `METRICS_NAMESPACE` is not set (Terraform sets
/// `docflow/<environment>`).
pub const DEFAULT_NAMESPACE: &str = "docflow";
/// The environment variable holding the namespace.
pub const NAMESPACE_ENV: &str = "METRICS_NAMESPACE";

/// CloudWatch's limits for one EMF directive and one metric's values.
pub const MAX_METRICS_PER_DOCUMENT: usize = 100;
pub const MAX_VALUES_PER_METRIC: usize = 100;

/// Dimension names (top-level members of every document).
pub mod dimension {
    /// The function's logical name (`ingestion`, `matching`, `document-output`,
    /// `sweeper`): in every document.
    pub const FUNCTION: &str = "function";
    /// Why records were discarded ([`crate::sqs::DiscardKind`]).
    pub const REASON: &str = "reason";
    /// The OCR or LLM provider used.
    pub const PROVIDER: &str = "provider";
    /// The decision or result of a step (an LLM decision, an export).
    pub const OUTCOME: &str = "outcome";
    /// The sweeper's kind of work (`ingestion`, `matching`, `output`).
    pub const KIND: &str = "kind";
    /// A step of a function's record path ([`super::stage`]): one of the fixed names in
    /// [`super::stages`].
    pub const STAGE: &str = "stage";
}

/// A CloudWatch unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    Count,
    Milliseconds,
    Seconds,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
        }
    }

    /// Counts are summed into one value per document; times are kept as the list of
    /// observations (EMF value arrays), so CloudWatch has their percentiles.
    fn is_summed(self) -> bool {
        self == Unit::Count
    }
}

/// One metric: its name and unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
}

const fn counter(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Count,
    }
}

const fn millis(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Milliseconds,
    }
}

const fn seconds(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Seconds,
    }
}

/// What the batch runtime writes for every SQS function (dimension: `function`; the
/// discards also per `reason`). Every record received ends in exactly one of done,
/// discarded, retried, released, not started, skipped in its FIFO group, or cut off at
/// the deadline.
pub mod batch {
    use super::*;
    pub const RECORDS_RECEIVED: Metric = counter("RecordsReceived");
    pub const RECORDS_DONE: Metric = counter("RecordsDone");
    pub const RECORDS_DISCARDED: Metric = counter("RecordsDiscarded");
    pub const RECORDS_RETRIED: Metric = counter("RecordsRetried");
    /// The delay of each `Retry { after }`.
    pub const RETRY_DELAY: Metric = seconds("RetryDelay");
    pub const RECORDS_RELEASED: Metric = counter("RecordsReleased");
    /// Records whose `process` panicked (also counted as released).
    pub const RECORD_PANICS: Metric = counter("RecordPanics");
    /// Records still running when the deadline (minus the margin) came.
    pub const RECORDS_CUT_OFF: Metric = counter("RecordsCutOffAtDeadline");
    /// Records not started for lack of time (`start_reserve`).
    pub const RECORDS_NOT_STARTED: Metric = counter("RecordsNotStarted");
    /// FIFO records reported failed unprocessed behind a failed one of their group.
    pub const RECORDS_SKIPPED: Metric = counter("RecordsSkippedInGroup");
    /// Work that failed for good (recorded in the database, the message deleted): the
    /// function says so with [`super::failed_permanently`].
    pub const RECORDS_FAILED_PERMANENTLY: Metric = counter("RecordsFailedPermanently");
    /// Visibility changes (retry delays) that SQS refused.
    pub const VISIBILITY_CHANGES_FAILED: Metric = counter("VisibilityChangesFailed");
    pub const BATCH_DURATION: Metric = millis("BatchDuration");
    /// Each processed record's time in `process`.
    pub const RECORD_DURATION: Metric = millis("RecordDuration");
    /// Now minus the oldest record's `SentTimestamp`, when the batch started.
    pub const OLDEST_RECORD_AGE: Metric = seconds("OldestRecordAge");

    /// The counters written in every batch document, zero included.
    pub const ALWAYS: &[Metric] = &[
        RECORDS_RECEIVED,
        RECORDS_DONE,
        RECORDS_DISCARDED,
        RECORDS_RETRIED,
        RECORDS_RELEASED,
        RECORD_PANICS,
        RECORDS_CUT_OFF,
        RECORDS_NOT_STARTED,
        RECORDS_SKIPPED,
        RECORDS_FAILED_PERMANENTLY,
        VISIBILITY_CHANGES_FAILED,
    ];
}

/// Ingestion's own metrics.
pub mod ingestion {
    use super::*;
    pub const PAGES: Metric = counter("Pages");
    /// Pages sent to OCR, per `provider`.
    pub const OCR_PAGES: Metric = counter("OcrPages");
    pub const PREPROCESSING_PASSES: Metric = counter("PreprocessingPasses");
    pub const QUALITY_GATE_FAILURES: Metric = counter("QualityGateFailures");
    /// Documents read from their structured e-invoice (no OCR, no LLM), per `kind`
    /// (`xml`, `pdf`).
    pub const EINVOICES_READ: Metric = counter("EInvoicesRead");
    /// Hybrid PDFs whose XML was invalid, unreadable or not an invoice: read from the
    /// page instead.
    pub const EINVOICE_FALLBACKS: Metric = counter("EInvoiceFallbacks");
    /// Hybrid PDFs whose page and XML disagree on the number or the total (the XML is
    /// kept, the disagreement flagged in `structured_data.einvoice.disagreements`).
    pub const EINVOICE_DISAGREEMENTS: Metric = counter("EInvoiceDisagreements");
}

/// LLM calls (ingestion and matching), per `provider`.
pub mod llm {
    use super::*;
    pub const INPUT_TOKENS: Metric = counter("LlmInputTokens");
    pub const OUTPUT_TOKENS: Metric = counter("LlmOutputTokens");
    pub const LATENCY: Metric = millis("LlmLatency");
    pub const CALLS_FAILED: Metric = counter("LlmCallsFailed");
}

/// Matching's own metrics.
pub mod matching {
    use super::*;
    pub const CANDIDATES_CONSIDERED: Metric = counter("CandidatesConsidered");
    /// LLM decisions, per `outcome`.
    pub const LLM_DECISIONS: Metric = counter("LlmDecisions");
    pub const CLUSTERS_MERGED: Metric = counter("ClustersMerged");
    pub const CLUSTERS_SPLIT: Metric = counter("ClustersSplit");
    /// Time the write phase waited for the locks of the clusters it touches.
    pub const WRITE_LOCK_WAIT: Metric = millis("WriteLockWait");
    /// Write phases that gave up waiting for a cluster lock (`lock_timeout`, 55P03).
    pub const WRITE_LOCK_TIMEOUTS: Metric = counter("WriteLockTimeouts");
    /// Write phases Postgres chose as a deadlock's victim (40P01), retried in place.
    pub const WRITE_LOCK_DEADLOCKS: Metric = counter("WriteLockDeadlocks");
}

/// Where a record's time goes: each step of the record path, timed with [`stage`], per
/// `stage` (the names below). What `make bench` breaks the pipeline's time down by, and
/// in CloudWatch the answer to "which step got slow".
pub mod stages {
    use super::*;
    pub const DURATION: Metric = millis("StageDuration");

    /// Claiming the work in the database (every function).
    pub const CLAIM: &str = "claim";
    /// Ingestion: reading the stored file (or a stored transcription) from S3.
    pub const FETCH: &str = "fetch";
    /// Ingestion: the structured e-invoice, looked for in a PDF and read (an XML upload
    /// or a hybrid), before any transcription.
    pub const EINVOICE: &str = "einvoice";
    /// Ingestion: the text of the file (text layer, or OCR).
    pub const TRANSCRIBE: &str = "transcribe";
    /// Ingestion: writing the transcription to S3 and its row.
    pub const STORE_TRANSCRIPTION: &str = "store_transcription";
    /// Ingestion: structured data from the text (LLM, or the rules extractor).
    pub const EXTRACT: &str = "extract";
    /// Recording the finished work: ingestion's document data and status (one
    /// transaction), document output's accepted export (one statement).
    pub const COMPLETE: &str = "complete";
    /// Ingestion: the matching message.
    pub const HAND_OFF: &str = "hand_off";
    /// Matching: the normalised fields of the document, saved.
    pub const NORMALIZE: &str = "normalize";
    /// Matching: the candidate search (and the embeddings' nearest neighbours).
    pub const CANDIDATES: &str = "candidates";
    /// Matching: scoring and the decisions (the LLM for the ambiguous ones).
    pub const DECIDE: &str = "decide";
    /// Matching: the cluster writes and the succeeded status, in one transaction.
    pub const WRITE: &str = "write";
    /// Document output: the visibility extension before work (seed 002).
    pub const EXTEND_VISIBILITY: &str = "extend_visibility";
    /// Document output: the checks before an export (an earlier attempt's audit, the
    /// document's eligibility, the export context).
    pub const CHECKS: &str = "checks";
    /// Document output: the document's file from S3.
    pub const READ_FILE: &str = "read_file";
    /// Document output: the audit row committed before the Maesn call.
    pub const AUDIT: &str = "audit";
    /// Document output: the Maesn call (with its in-process retries).
    pub const MAESN: &str = "maesn";

    /// Every stage name (the values of the `stage` dimension).
    pub const ALL: &[&str] = &[
        CLAIM,
        FETCH,
        EINVOICE,
        TRANSCRIBE,
        STORE_TRANSCRIPTION,
        EXTRACT,
        COMPLETE,
        HAND_OFF,
        NORMALIZE,
        CANDIDATES,
        DECIDE,
        WRITE,
        EXTEND_VISIBILITY,
        CHECKS,
        READ_FILE,
        AUDIT,
        MAESN,
    ];
}

/// Runs `work` and adds its wall time to [`stages::DURATION`] in the group
/// `stage = name` of the current batch.
///
/// `work` is awaited boxed: an `async fn` keeps its argument and the future it awaits
/// as two copies in its state (rust-lang/rust#62958), so wrapping a large step unboxed
/// would double its size in the caller's future, on the stack of whoever polls it.
pub async fn stage<F: std::future::Future>(name: &'static str, work: F) -> F::Output {
    let started = std::time::Instant::now();
    let out = Box::pin(work).await;
    stage_time(name, started.elapsed());
    out
}

/// Adds `elapsed` to [`stages::DURATION`] in the group `stage = name` (a stage that is
/// not one future).
pub fn stage_time(name: &'static str, elapsed: std::time::Duration) {
    record_by(
        dimension::STAGE,
        name,
        stages::DURATION,
        elapsed.as_secs_f64() * 1000.0,
    );
}

/// Admin notifications that reached no channel (matching, output, sweeper).
pub const NOTIFICATIONS_FAILED: Metric = counter("NotificationsFailed");

/// Document output's own metrics.
pub mod output {
    use super::*;
    pub const EXPORTS_DISPATCHED: Metric = counter("ExportsDispatched");
    pub const EXPORTS_FAILED: Metric = counter("ExportsFailed");
    pub const EXPORTS_IN_DOUBT: Metric = counter("ExportsInDoubt");
    pub const MAESN_LATENCY: Metric = millis("MaesnLatency");
}

/// The sweeper's metrics, per `kind` (`ingestion`, `matching`, `output`) and for DATEV
/// tasks.
pub mod sweeper {
    use super::*;
    pub const FOUND: Metric = counter("StuckFound");
    pub const RESENT: Metric = counter("Resent");
    pub const GIVEN_UP: Metric = counter("GivenUp");
    pub const TASKS_POLLED: Metric = counter("TasksPolled");
    pub const TASKS_SUCCEEDED: Metric = counter("TasksSucceeded");
    pub const TASKS_FAILED: Metric = counter("TasksFailed");
    pub const STEPS_FAILED: Metric = counter("StepsFailed");
    /// Age of the oldest DATEV task still open after the poll (0: none); the alarm on
    /// tasks nobody ends watches its maximum.
    pub const OLDEST_OPEN_TASK_AGE: Metric = seconds("OldestOpenTaskAge");
    /// DATEV tasks ended `PARTIAL_SUCCESS` (booked with remarks; admins told).
    pub const TASKS_PARTIAL: Metric = counter("TasksPartiallySucceeded");
    /// DATEV tasks given up after the maximum task age (failed, "check DATEV").
    pub const TASKS_EXPIRED: Metric = counter("TasksExpired");
}

/// A group of metrics sharing one extra dimension (besides `function`), e.g.
/// `reason = "not_an_id"`.
pub type Group = Option<(&'static str, String)>;

/// Metric values collected over one batch (or one sweep), written as EMF documents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSet {
    groups: BTreeMap<Group, BTreeMap<Metric, Vec<f64>>>,
}

impl MetricSet {
    pub fn new() -> Self {
        Self::default()
    }

    fn put(&mut self, group: Group, metric: Metric, value: f64) {
        let values = self
            .groups
            .entry(group)
            .or_default()
            .entry(metric)
            .or_default();
        if metric.unit.is_summed() {
            match values.first_mut() {
                Some(sum) => *sum += value,
                None => values.push(value),
            }
        } else {
            values.push(value);
        }
    }

    /// Adds `value` to a metric of the function (a count is summed, a time appended).
    pub fn add(&mut self, metric: Metric, value: f64) {
        self.put(None, metric, value);
    }

    /// Adds `value` to a metric of the group `dimension = group` (e.g. `reason`).
    pub fn add_by(
        &mut self,
        dimension: &'static str,
        group: impl Into<String>,
        metric: Metric,
        value: f64,
    ) {
        self.put(Some((dimension, group.into())), metric, value);
    }

    /// Makes sure a counter is written even when nothing was counted (as 0).
    pub fn ensure(&mut self, metric: Metric) {
        self.put(None, metric, 0.0);
    }

    /// The sum of a function-level metric's values (0 when absent).
    pub fn total(&self, metric: Metric) -> f64 {
        self.total_in(&None, metric)
    }

    /// The sum of a grouped metric's values (0 when absent).
    pub fn total_by(&self, dimension: &'static str, group: &str, metric: Metric) -> f64 {
        self.total_in(&Some((dimension, group.to_owned())), metric)
    }

    fn total_in(&self, group: &Group, metric: Metric) -> f64 {
        self.groups
            .get(group)
            .and_then(|m| m.get(&metric))
            .map_or(0.0, |v| v.iter().sum())
    }

    /// The values of `metric` in the function's own group (`None`) or in
    /// `dimension = group`.
    pub fn values(&self, group: Option<(&'static str, &str)>, metric: Metric) -> Vec<f64> {
        let key = group.map(|(d, g)| (d, g.to_owned()));
        self.groups
            .get(&key)
            .and_then(|m| m.get(&metric))
            .cloned()
            .unwrap_or_default()
    }

    /// The groups (`dimension`, value) in which `metric` was counted.
    pub fn groups_of(&self, metric: Metric) -> Vec<(&'static str, String)> {
        self.groups
            .iter()
            .filter(|(_, metrics)| metrics.contains_key(&metric))
            .filter_map(|(group, _)| group.clone())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Adds everything of `other`.
    pub fn merge(&mut self, other: &MetricSet) {
        for (group, metrics) in &other.groups {
            for (metric, values) in metrics {
                for v in values {
                    self.put(group.clone(), *metric, *v);
                }
            }
        }
    }

    /// The EMF documents: one per group (the function's own metrics first), each split
    /// further when it would exceed 100 metrics or 100 values of one metric.
    pub fn documents(&self, namespace: &str, function: &str, timestamp_ms: i64) -> Vec<Value> {
        let mut documents = Vec::new();
        for (group, metrics) in &self.groups {
            // Chunks of values: document i holds values [100·i, 100·(i+1)) of each metric.
            let rounds = metrics
                .values()
                .map(|v| v.len().div_ceil(MAX_VALUES_PER_METRIC))
                .max()
                .unwrap_or(0);
            for round in 0..rounds {
                let present: Vec<(&Metric, &[f64])> = metrics
                    .iter()
                    .filter_map(|(m, v)| {
                        let start = round * MAX_VALUES_PER_METRIC;
                        (start < v.len())
                            .then(|| (m, &v[start..(start + MAX_VALUES_PER_METRIC).min(v.len())]))
                    })
                    .collect();
                for chunk in present.chunks(MAX_METRICS_PER_DOCUMENT) {
                    documents.push(document(
                        namespace,
                        function,
                        group.as_ref(),
                        chunk,
                        timestamp_ms,
                    ));
                }
            }
        }
        documents
    }
}

fn document(
    namespace: &str,
    function: &str,
    group: Option<&(&'static str, String)>,
    metrics: &[(&Metric, &[f64])],
    timestamp_ms: i64,
) -> Value {
    let mut dimensions = vec![dimension::FUNCTION];
    let mut root = Map::new();
    root.insert(dimension::FUNCTION.to_owned(), json!(function));
    if let Some((name, value)) = group {
        dimensions.push(name);
        root.insert((*name).to_owned(), json!(value));
    }
    let definitions: Vec<Value> = metrics
        .iter()
        .map(|(m, _)| json!({ "Name": m.name, "Unit": m.unit.as_str() }))
        .collect();
    for (metric, values) in metrics {
        let value = match values {
            [one] => json!(one),
            many => json!(many),
        };
        root.insert(metric.name.to_owned(), value);
    }
    root.insert(
        "_aws".to_owned(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [dimensions],
                "Metrics": definitions,
            }],
        }),
    );
    Value::Object(root)
}

/// Where EMF documents go: one line each.
#[derive(Clone)]
pub struct MetricsSink {
    namespace: String,
    write: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for MetricsSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSink")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Default for MetricsSink {
    fn default() -> Self {
        Self::stdout()
    }
}

/// Writes `line` and a newline with one `write_all` on a locked writer, so the line is
/// never interleaved with a log line written at the same time.
pub fn write_line(out: &mut impl Write, line: &str) -> std::io::Result<()> {
    let mut buffer = Vec::with_capacity(line.len() + 1);
    buffer.extend_from_slice(line.as_bytes());
    buffer.push(b'\n');
    out.write_all(&buffer)?;
    out.flush()
}

impl MetricsSink {
    /// Lambda's: stdout (the function's log stream), namespace from `METRICS_NAMESPACE`.
    pub fn stdout() -> Self {
        let namespace =
            std::env::var(NAMESPACE_ENV).unwrap_or_else(|_| DEFAULT_NAMESPACE.to_owned());
        Self::new(namespace, |line| {
            let _ = write_line(&mut std::io::stdout().lock(), line);
        })
    }

    /// Any destination (the local summary, tests).
    pub fn new(namespace: impl Into<String>, write: impl Fn(&str) + Send + Sync + 'static) -> Self {
        MetricsSink {
            namespace: namespace.into(),
            write: Arc::new(write),
        }
    }

    /// Keeps every line in memory (tests, the local runner).
    pub fn capture(namespace: impl Into<String>) -> (Self, Captured) {
        let captured = Captured::default();
        let lines = captured.clone();
        (Self::new(namespace, move |line| lines.push(line)), captured)
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Writes `set` as EMF documents of `function`, one line each.
    pub fn emit(&self, function: &str, set: &MetricSet) {
        let now = chrono::Utc::now().timestamp_millis();
        for document in set.documents(&self.namespace, function, now) {
            (self.write)(&document.to_string());
        }
    }
}

/// Lines kept by [`MetricsSink::capture`].
#[derive(Debug, Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<String>>>);

impl Captured {
    fn push(&self, line: &str) {
        self.0.lock().expect("captured lines").push(line.to_owned());
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.lock().expect("captured lines").clone()
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("captured lines"))
    }
}

tokio::task_local! {
    static CURRENT: Arc<Mutex<MetricSet>>;
}

/// Runs `work` with `set` as the current metric set of this task.
pub async fn scope<F: std::future::Future>(set: Arc<Mutex<MetricSet>>, work: F) -> F::Output {
    CURRENT.scope(set, work).await
}

fn with_current(f: impl FnOnce(&mut MetricSet)) {
    let _ = CURRENT.try_with(|set| {
        if let Ok(mut set) = set.lock() {
            f(&mut set);
        }
    });
}

/// Adds to a metric of the current batch (nothing outside one).
pub fn record(metric: Metric, value: f64) {
    with_current(|set| set.add(metric, value));
}

/// Adds `n` to a counter of the current batch.
pub fn count(metric: Metric, n: u64) {
    record(metric, n as f64);
}

/// Adds to a metric of the current batch in the group `dimension = group`.
pub fn record_by(dimension: &'static str, group: &str, metric: Metric, value: f64) {
    with_current(|set| set.add_by(dimension, group, metric, value));
}

/// Adds `n` to a grouped counter of the current batch.
pub fn count_by(dimension: &'static str, group: &str, metric: Metric, n: u64) {
    record_by(dimension, group, metric, n as f64);
}

/// Adds a duration in milliseconds.
pub fn time(metric: Metric, elapsed: std::time::Duration) {
    record(metric, elapsed.as_secs_f64() * 1000.0);
}

/// Marks the current record's work as failed for good (recorded in the database, its
/// message deleted): `RecordsFailedPermanently`.
pub fn failed_permanently() {
    count(batch::RECORDS_FAILED_PERMANENTLY, 1);
}

/// An admin notification reached no channel: `NotificationsFailed`.
pub fn notification_failed() {
    count(NOTIFICATIONS_FAILED, 1);
}

/// Reads EMF lines back into per-function sets (the local summary): the inverse of
/// [`MetricSet::documents`]. Lines that are not EMF are skipped.
pub fn parse_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, MetricSet> {
    let mut out: BTreeMap<String, MetricSet> = BTreeMap::new();
    for line in lines {
        let Ok(Value::Object(root)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(directive) = root
            .get("_aws")
            .and_then(|a| a.get("CloudWatchMetrics"))
            .and_then(|d| d.get(0))
        else {
            continue;
        };
        let Some(function) = root.get(dimension::FUNCTION).and_then(Value::as_str) else {
            continue;
        };
        let dims: Vec<&str> = directive["Dimensions"][0]
            .as_array()
            .map(|d| d.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let group = dims
            .iter()
            .find(|d| **d != dimension::FUNCTION)
            .and_then(|d| Some((known_dimension(d)?, root.get(*d)?.as_str()?.to_owned())));
        let set = out.entry(function.to_owned()).or_default();
        for definition in directive["Metrics"].as_array().into_iter().flatten() {
            let (Some(name), Some(unit)) = (
                definition["Name"].as_str(),
                definition["Unit"].as_str().and_then(unit_from),
            ) else {
                continue;
            };
            let Some(metric) = known_metric(name, unit) else {
                continue;
            };
            let values: Vec<f64> = match root.get(name) {
                Some(Value::Array(v)) => v.iter().filter_map(Value::as_f64).collect(),
                Some(v) => v.as_f64().into_iter().collect(),
                None => Vec::new(),
            };
            for v in values {
                set.put(group.clone(), metric, v);
            }
        }
    }
    out
}

fn unit_from(unit: &str) -> Option<Unit> {
    [Unit::Count, Unit::Milliseconds, Unit::Seconds]
        .into_iter()
        .find(|u| u.as_str() == unit)
}

fn known_dimension(name: &str) -> Option<&'static str> {
    [
        dimension::REASON,
        dimension::PROVIDER,
        dimension::OUTCOME,
        dimension::KIND,
        dimension::STAGE,
    ]
    .into_iter()
    .find(|d| *d == name)
}

/// Every metric docflow writes.
pub const ALL: &[Metric] = &[
    batch::RECORDS_RECEIVED,
    batch::RECORDS_DONE,
    batch::RECORDS_DISCARDED,
    batch::RECORDS_RETRIED,
    batch::RETRY_DELAY,
    batch::RECORDS_RELEASED,
    batch::RECORD_PANICS,
    batch::RECORDS_CUT_OFF,
    batch::RECORDS_NOT_STARTED,
    batch::RECORDS_SKIPPED,
    batch::RECORDS_FAILED_PERMANENTLY,
    batch::VISIBILITY_CHANGES_FAILED,
    batch::BATCH_DURATION,
    batch::RECORD_DURATION,
    batch::OLDEST_RECORD_AGE,
    ingestion::PAGES,
    ingestion::OCR_PAGES,
    ingestion::PREPROCESSING_PASSES,
    ingestion::QUALITY_GATE_FAILURES,
    ingestion::EINVOICES_READ,
    ingestion::EINVOICE_FALLBACKS,
    ingestion::EINVOICE_DISAGREEMENTS,
    llm::INPUT_TOKENS,
    llm::OUTPUT_TOKENS,
    llm::LATENCY,
    llm::CALLS_FAILED,
    matching::CANDIDATES_CONSIDERED,
    matching::LLM_DECISIONS,
    matching::CLUSTERS_MERGED,
    matching::CLUSTERS_SPLIT,
    matching::WRITE_LOCK_WAIT,
    matching::WRITE_LOCK_TIMEOUTS,
    matching::WRITE_LOCK_DEADLOCKS,
    NOTIFICATIONS_FAILED,
    output::EXPORTS_DISPATCHED,
    output::EXPORTS_FAILED,
    output::EXPORTS_IN_DOUBT,
    output::MAESN_LATENCY,
    stages::DURATION,
    sweeper::FOUND,
    sweeper::RESENT,
    sweeper::GIVEN_UP,
    sweeper::TASKS_POLLED,
    sweeper::TASKS_SUCCEEDED,
    sweeper::TASKS_FAILED,
    sweeper::STEPS_FAILED,
    sweeper::OLDEST_OPEN_TASK_AGE,
    sweeper::TASKS_PARTIAL,
    sweeper::TASKS_EXPIRED,
];

fn known_metric(name: &str, unit: Unit) -> Option<Metric> {
    ALL.iter()
        .copied()
        .find(|m| m.name == name && m.unit == unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_summed_and_times_listed() {
        let mut set = MetricSet::new();
        set.add(batch::RECORDS_DONE, 1.0);
        set.add(batch::RECORDS_DONE, 2.0);
        set.add(batch::RECORD_DURATION, 5.0);
        set.add(batch::RECORD_DURATION, 7.0);
        let docs = set.documents("ns", "f", 1);
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["RecordsDone"], json!(3.0));
        assert_eq!(docs[0]["RecordDuration"], json!([5.0, 7.0]));
    }

    #[test]
    fn more_than_a_hundred_values_are_split_over_documents_and_read_back_whole() {
        let mut set = MetricSet::new();
        for i in 0..250 {
            set.add(batch::RECORD_DURATION, i as f64);
        }
        set.add(batch::RECORDS_DONE, 250.0);
        let docs = set.documents("ns", "f", 1);
        assert_eq!(docs.len(), 3);
        for doc in &docs {
            assert!(doc["RecordDuration"].as_array().unwrap().len() <= 100);
        }
        let lines: Vec<String> = docs.iter().map(Value::to_string).collect();
        let back = parse_lines(lines.iter().map(String::as_str));
        assert_eq!(back["f"], set);
    }

    #[test]
    fn write_line_writes_one_line_in_one_piece() {
        let mut out = Vec::new();
        write_line(&mut out, r#"{"a":1}"#).unwrap();
        assert_eq!(out, b"{\"a\":1}\n");
    }
}
