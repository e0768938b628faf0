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
//! - Names, units and dimension names are constants, listed in `names` and re-exported
//!   here: the Terraform alarms and the dashboard are checked against them
//!   (`tests/tests/it/infra_contract.rs`).
//!
//! Dimensions are low-cardinality only: the function, and per group one of
//! [`dimension::REASON`], [`dimension::PROVIDER`], [`dimension::OUTCOME`],
//! [`dimension::KIND`], [`dimension::STAGE`]. Never an id.

mod names;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

pub use names::{
    ALL, Metric, NOTIFICATIONS_FAILED, Unit, batch, dimension, ingestion, llm, matching, output,
    stages, sweeper,
};
use names::{known_dimension, known_metric, unit_from};

/// The namespace when `METRICS_NAMESPACE` is not set (Terraform sets
/// `docflow/<environment>`).
pub const DEFAULT_NAMESPACE: &str = "docflow";
/// The environment variable holding the namespace.
pub const NAMESPACE_ENV: &str = "METRICS_NAMESPACE";

/// CloudWatch's limits for one EMF directive and one metric's values.
pub const MAX_METRICS_PER_DOCUMENT: usize = 100;
pub const MAX_VALUES_PER_METRIC: usize = 100;

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
