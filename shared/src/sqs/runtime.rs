//! [`BatchRuntime`]: the batch loop that turns a Lambda `SqsEvent` into an
//! `SqsBatchResponse` — the database gate, units of work (FIFO groups), bounded
//! concurrency, the deadline, the extension before work, each record in its span with
//! its panic caught, and what its [`Outcome`] does in SQS — then the batch's metrics.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use futures::{FutureExt, StreamExt};
use lambda_runtime::LambdaEvent;
use tracing::{Instrument, field};

use super::hand_off::HandOffs;
use super::message::Message;
use super::visibility::{Visibility, VisibilityEntry, visibility_seconds};
use super::{BatchConfig, MAX_BATCH_ENTRIES, Outcome};
use crate::telemetry::metrics::{self, MetricSet, MetricsSink, batch as m};

/// Why the whole batch could not be handled (Lambda retries the batch).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(
        "record {index} of the batch has no messageId, so its failure could not be reported; \
         failing the whole batch so nothing is lost"
    )]
    MissingMessageId { index: usize },
}

/// The generic SQS handler shared by every SQS-triggered function.
#[derive(Clone, Debug)]
pub struct BatchRuntime {
    visibility: Visibility,
    config: BatchConfig,
    /// The `function` dimension of the metrics and the batch span.
    function: String,
    metrics: MetricsSink,
    /// Checked before a batch is consumed ([`BatchRuntime::with_database_gate`]).
    gate: Option<std::sync::Arc<crate::db::Gate>>,
}

/// The function name when none was given: `DOCFLOW_FUNCTION`, else Lambda's
/// `AWS_LAMBDA_FUNCTION_NAME`, else "unknown". Each function's handler names itself
/// ([`BatchRuntime::run_as`]), so this is only a fallback.
fn default_function() -> String {
    std::env::var("DOCFLOW_FUNCTION")
        .or_else(|_| std::env::var("AWS_LAMBDA_FUNCTION_NAME"))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// How one record ended, for the batch's metrics.
enum Ended {
    Kept,
    Deleted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecordState {
    Pending,
    Deleted,
    Failed,
}

impl BatchRuntime {
    pub fn new(sqs: aws_sdk_sqs::Client, config: BatchConfig) -> Self {
        BatchRuntime {
            visibility: Visibility::new(sqs),
            config,
            function: default_function(),
            metrics: MetricsSink::stdout(),
            gate: None,
        }
    }

    /// Checks the function's database session ([`crate::db::Gate`]: the role's settings,
    /// the schema version) before each batch until it passes once; while it is refused,
    /// every record is released with the reason logged, and nothing is processed.
    pub fn with_database_gate(mut self, pool: sqlx::PgPool) -> Self {
        self.gate = Some(std::sync::Arc::new(crate::db::Gate::new(pool)));
        self
    }

    /// The database gate's check now, as the first batch would make it (`None`: no gate).
    /// A test harness makes it up front, as a warm instance has: its pool then holds a
    /// connection, and a test's deadline budget is the work's alone.
    pub async fn check_database(&self) -> Option<Result<(), crate::db::SessionRefused>> {
        match &self.gate {
            Some(gate) => Some(gate.check().await),
            None => None,
        }
    }

    /// The function name of the metrics' `function` dimension and the batch span.
    pub fn with_function(mut self, function: impl Into<String>) -> Self {
        self.function = function.into();
        self
    }

    /// Where the batch's metric lines go (default: stdout, one line each).
    pub fn with_metrics(mut self, sink: MetricsSink) -> Self {
        self.metrics = sink;
        self
    }

    pub fn metrics_sink(&self) -> &MetricsSink {
        &self.metrics
    }

    /// [`BatchRuntime::run`] with `function` as the metrics' and span's function name.
    pub async fn run_as<F, Fut>(
        &self,
        function: &str,
        event: LambdaEvent<SqsEvent>,
        process: F,
    ) -> Result<SqsBatchResponse, BatchError>
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        self.run_named(function, event, process).await
    }

    pub fn config(&self) -> &BatchConfig {
        &self.config
    }

    /// Processes a batch and returns the partial batch response, then writes the
    /// batch's metrics (one EMF line, plus one per discard reason and per group the
    /// function counted).
    ///
    /// Fails only when a record has no message id (see the module docs); every failure
    /// of a single record is reported in `batchItemFailures` instead.
    pub async fn run<F, Fut>(
        &self,
        event: LambdaEvent<SqsEvent>,
        process: F,
    ) -> Result<SqsBatchResponse, BatchError>
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let function = self.function.clone();
        self.run_named(&function, event, process).await
    }

    async fn run_named<F, Fut>(
        &self,
        function: &str,
        event: LambdaEvent<SqsEvent>,
        process: F,
    ) -> Result<SqsBatchResponse, BatchError>
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let span = tracing::info_span!(
            "sqs_batch",
            function,
            request_id = %event.context.request_id,
            xray_trace_id = event.context.xray_trace_id.as_deref(),
        );
        let batch_metrics = std::sync::Arc::new(Mutex::new(MetricSet::new()));
        let started = tokio::time::Instant::now();
        let refused = match &self.gate {
            Some(gate) => gate.check().instrument(span.clone()).await.err(),
            None => None,
        };
        // Boxed: the batch's future is large, and a caller that polls it on a small
        // stack (a test thread, the local runner) should not pay for it twice.
        let result = match refused {
            None => {
                Box::pin(
                    self.run_batch(event, process, batch_metrics.clone())
                        .instrument(span),
                )
                .await
            }
            Some(refused) => {
                let reason = refused.to_string();
                let release = |_: Message| {
                    let reason = reason.clone();
                    async move {
                        tracing::error!(%reason, "database session refused: record released unprocessed");
                        Outcome::Release
                    }
                };
                Box::pin(
                    self.run_batch(event, release, batch_metrics.clone())
                        .instrument(span),
                )
                .await
            }
        };
        if result.is_ok() {
            let mut set = batch_metrics
                .lock()
                .expect("batch metrics poisoned")
                .clone();
            set.add(m::BATCH_DURATION, started.elapsed().as_secs_f64() * 1000.0);
            self.metrics.emit(function, &set);
        }
        result
    }

    async fn run_batch<F, Fut>(
        &self,
        event: LambdaEvent<SqsEvent>,
        process: F,
        batch_metrics: std::sync::Arc<Mutex<MetricSet>>,
    ) -> Result<SqsBatchResponse, BatchError>
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let records = event.payload.records;
        if let Some(index) = records
            .iter()
            .position(|r| r.message_id.as_deref().is_none_or(str::is_empty))
        {
            return Err(BatchError::MissingMessageId { index });
        }

        let batch_started = tokio::time::Instant::now();
        let remaining = remaining_time(&event.context, self.config.deadline_margin);
        let stop_at = remaining.map(|r| batch_started + r);
        tracing::info!(
            records = records.len(),
            time_left_ms = remaining.map(|r| r.as_millis() as u64),
            deadline_ms = event.context.deadline,
            "batch received"
        );
        {
            let mut set = batch_metrics.lock().expect("batch metrics poisoned");
            for metric in m::ALWAYS {
                set.ensure(*metric);
            }
            set.add(m::RECORDS_RECEIVED, records.len() as f64);
            if let Some(age) = oldest_age(&records, Utc::now()) {
                set.add(m::OLDEST_RECORD_AGE, age.as_secs_f64());
            }
        }
        let xray_trace_id = event.context.xray_trace_id.clone();
        let xray_trace_id = xray_trace_id.as_deref();
        let request_id = event.context.request_id.as_str();
        let batch_metrics = &batch_metrics;

        let states = Mutex::new(vec![RecordState::Pending; records.len()]);
        let units = units_of_work(&records);
        let process = &process;
        let states_ref = &states;
        let records_ref = &records;
        let hand_offs = std::sync::Arc::new(HandOffs::new(self.visibility.client.clone()));
        let messages: Vec<Message> = records
            .iter()
            .map(|record| {
                let mut message = Message::from_record(
                    record,
                    &self.visibility,
                    &self.config,
                    batch_started,
                    stop_at,
                );
                message.hand_offs = Some(hand_offs.clone());
                message
            })
            .collect();
        let messages = &messages;

        let concurrency = self.config.concurrency.max(1);
        hand_offs.reserve(units.len().min(concurrency));
        let hand_offs = &hand_offs;
        let records_run = futures::stream::iter(units).for_each_concurrent(concurrency, |unit| async move {
            let _slot = hand_offs.running();
            let mut group_failed = false;
            for index in unit {
                let record = &records_ref[index];
                let message_id = record.message_id.as_deref().unwrap_or_default();
                if group_failed {
                    tracing::warn!(
                        message_id,
                        "earlier record of the FIFO group failed; reporting this one as failed unprocessed"
                    );
                    states_ref.lock().expect("record states poisoned")[index] = RecordState::Failed;
                    batch_metrics.lock().expect("batch metrics poisoned").add(m::RECORDS_SKIPPED, 1.0);
                    self.follow_predecessor(record, batch_started, stop_at).await;
                    continue;
                }
                if let Some(stop) = stop_at {
                    let left = stop.saturating_duration_since(tokio::time::Instant::now());
                    if left < self.config.start_reserve {
                        tracing::warn!(
                            message_id,
                            time_left_ms = left.as_millis() as u64,
                            start_reserve_ms = self.config.start_reserve.as_millis() as u64,
                            "too little time left to start this record; reporting it as failed untouched"
                        );
                        states_ref.lock().expect("record states poisoned")[index] = RecordState::Failed;
                        batch_metrics.lock().expect("batch metrics poisoned").add(m::RECORDS_NOT_STARTED, 1.0);
                        group_failed = true;
                        continue;
                    }
                }
                let ids = SpanIds { request_id, xray_trace_id };
                let ended = self
                    .run_record(&messages[index], process, ids, batch_metrics)
                    .await;
                let keep = matches!(ended, Ended::Kept);
                states_ref.lock().expect("record states poisoned")[index] = if keep {
                    RecordState::Failed
                } else {
                    RecordState::Deleted
                };
                group_failed = keep;
            }
        });
        let all = async {
            if self.config.extend_before_work {
                self.extend_before_work(messages, batch_metrics).await;
            }
            records_run.await
        };

        match stop_at {
            Some(stop_at) => {
                if tokio::time::timeout_at(stop_at, all).await.is_err() {
                    tracing::error!(
                        margin_ms = self.config.deadline_margin.as_millis() as u64,
                        "invocation deadline reached; reporting unfinished records as failed"
                    );
                }
            }
            None => all.await,
        }

        let states = states.into_inner().expect("record states poisoned");
        let mut response = SqsBatchResponse::default();
        for (record, state) in records.iter().zip(states) {
            if state != RecordState::Deleted {
                if state == RecordState::Pending {
                    batch_metrics
                        .lock()
                        .expect("batch metrics poisoned")
                        .add(m::RECORDS_CUT_OFF, 1.0);
                    tracing::warn!(
                        message_id = record.message_id.as_deref().unwrap_or_default(),
                        "record did not finish before the deadline; reported as failed"
                    );
                }
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = record.message_id.clone().unwrap_or_default();
                response.batch_item_failures.push(failure);
            }
        }
        Ok(response)
    }

    /// Seed 002's extension before work, for the whole batch at once: the records whose
    /// remaining visibility does not cover
    /// [`Heartbeat::extend_to`](super::Heartbeat::extend_to) get what one heartbeat would
    /// set, in one `ChangeMessageVisibilityBatch` per queue and 10 records; when every
    /// record is covered, no call at all. A refused entry (or a failed call) is logged and
    /// counted for its own records only, which still start, as after a failed single
    /// change before (their claim guards against a second delivery).
    async fn extend_before_work(
        &self,
        messages: &[Message],
        batch_metrics: &std::sync::Arc<Mutex<MetricSet>>,
    ) {
        let mut by_queue: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
        for (index, message) in messages.iter().enumerate() {
            if !message.needs_extension_before_work() {
                continue;
            }
            let queue = message.queue_arn.as_deref();
            match by_queue.iter_mut().find(|(q, _)| *q == queue) {
                Some((_, indexes)) => indexes.push(index),
                None => by_queue.push((queue, vec![index])),
            }
        }
        let needed: usize = by_queue.iter().map(|(_, i)| i.len()).sum();
        if needed == 0 {
            tracing::debug!(
                "every record's remaining visibility covers the work; no extension before work"
            );
            return;
        }
        let extend = async {
            for (queue, indexes) in &by_queue {
                for chunk in indexes.chunks(MAX_BATCH_ENTRIES) {
                    let entries: Vec<VisibilityEntry<'_>> = chunk
                        .iter()
                        .map(|&i| {
                            let message = &messages[i];
                            VisibilityEntry {
                                receipt_handle: message.receipt_handle.as_deref(),
                                seconds: visibility_seconds(
                                    message.heartbeat_extension(),
                                    message.since_receipt(),
                                ),
                            }
                        })
                        .collect();
                    let asked = tokio::time::Instant::now();
                    let results = self.visibility.change_batch(*queue, &entries).await;
                    for ((&index, entry), result) in chunk.iter().zip(&entries).zip(results) {
                        let message = &messages[index];
                        match result {
                            Ok(()) => message.hidden_from(asked, entry.seconds),
                            // As a failed single change always was (document output's
                            // own extension before this): logged and counted for this
                            // record alone, which still starts — its claim guards against
                            // a second delivery; the other entries are unaffected.
                            Err(e) => {
                                tracing::warn!(
                                    message_id = %message.message_id,
                                    error.message = %e,
                                    error.cause_chain = ?e,
                                    "could not extend the visibility before work"
                                );
                                batch_metrics
                                    .lock()
                                    .expect("batch metrics poisoned")
                                    .add(m::VISIBILITY_CHANGES_FAILED, 1.0);
                            }
                        }
                    }
                }
            }
        };
        metrics::scope(
            batch_metrics.clone(),
            metrics::stage(metrics::stages::EXTEND_VISIBILITY, extend),
        )
        .await;
        tracing::info!(records = needed, "extended visibility before work");
    }

    /// Makes a FIFO record skipped behind a failed one visible again at once. SQS does
    /// not deliver it before the failed record of its group anyway (a group with a
    /// message in flight is locked), so it follows its predecessor; left in flight, it
    /// would lock the group for the queue's whole visibility timeout and turn the
    /// predecessor's `Retry { after }` into that timeout.
    async fn follow_predecessor(
        &self,
        record: &SqsMessage,
        batch_started: tokio::time::Instant,
        stop_at: Option<tokio::time::Instant>,
    ) {
        let message = Message::from_record(
            record,
            &self.visibility,
            &self.config,
            batch_started,
            stop_at,
        );
        if let Err(e) = message.set_visibility(Duration::ZERO).await {
            // It comes back after the queue's visibility timeout instead: later, not lost.
            tracing::warn!(
                message_id = %message.message_id,
                error.message = %e,
                error.cause_chain = ?e,
                "could not release a skipped FIFO record early"
            );
        }
    }

    /// Runs one record in its span, with the batch's metric set current; returns
    /// whether the message must be kept (reported as failed).
    async fn run_record<F, Fut>(
        &self,
        message: &Message,
        process: &F,
        ids: SpanIds<'_>,
        batch_metrics: &std::sync::Arc<Mutex<MetricSet>>,
    ) -> Ended
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let span = tracing::info_span!(
            "sqs_record",
            message_id = %message.message_id,
            receive_count = message.receive_count,
            entity_id = field::Empty,
            document_id = field::Empty,
            tenant_id = field::Empty,
            request_id = ids.request_id,
            xray_trace_id = ids.xray_trace_id,
        );
        let count = |metric, value: f64| {
            batch_metrics
                .lock()
                .expect("batch metrics poisoned")
                .add(metric, value)
        };
        async move {
            // A record that starts long after the batch's extension (a batch larger than
            // the concurrency) may no longer be covered: extended on its own then.
            if self.config.extend_before_work && !message.covered_to_start() {
                let extended = metrics::scope(
                    batch_metrics.clone(),
                    metrics::stage(metrics::stages::EXTEND_VISIBILITY, message.extend_visibility()),
                )
                .await;
                if let Err(e) = extended {
                    count(m::VISIBILITY_CHANGES_FAILED, 1.0);
                    tracing::warn!(
                        error.message = %e,
                        error.cause_chain = ?e,
                        "could not extend the visibility before work"
                    );
                }
            }
            let started = tokio::time::Instant::now();
            let work = AssertUnwindSafe(process(message.clone())).catch_unwind();
            let result = Box::pin(metrics::scope(batch_metrics.clone(), work)).await;
            count(m::RECORD_DURATION, started.elapsed().as_secs_f64() * 1000.0);
            let outcome = match result {
                Ok(outcome) => outcome,
                Err(panic) => {
                    count(m::RECORD_PANICS, 1.0);
                    let reason = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "non-string panic payload".into());
                    tracing::error!(panic = %reason, "record panicked; releasing it for redelivery");
                    Outcome::Release
                }
            };
            match &outcome {
                Outcome::Done => {
                    count(m::RECORDS_DONE, 1.0);
                    tracing::info!("record done")
                }
                Outcome::Discard { reason, kind } => {
                    count(m::RECORDS_DISCARDED, 1.0);
                    batch_metrics.lock().expect("batch metrics poisoned").add_by(
                        metrics::dimension::REASON,
                        kind.as_str(),
                        m::RECORDS_DISCARDED,
                        1.0,
                    );
                    tracing::warn!(%reason, reason_kind = kind.as_str(), "record discarded")
                }
                Outcome::Release => {
                    count(m::RECORDS_RELEASED, 1.0);
                    tracing::warn!("record released for redelivery")
                }
                Outcome::Retry { after } => {
                    count(m::RECORDS_RETRIED, 1.0);
                    count(m::RETRY_DELAY, visibility_seconds(*after, Duration::ZERO) as f64);
                    match message.set_visibility(*after).await {
                        Ok(()) => tracing::info!(retry_after_s = after.as_secs_f64(), "record will be retried"),
                        // Still reported as failed: the message comes back after the queue's
                        // visibility timeout instead of after `after`, but it is not lost.
                        Err(e) => {
                            count(m::VISIBILITY_CHANGES_FAILED, 1.0);
                            tracing::error!(
                            retry_after_s = after.as_secs_f64(),
                            error.message = %e,
                            error.cause_chain = ?e,
                            "could not delay the retry; reporting the record as failed anyway"
                        )
                        }
                    }
                }
            }
            if outcome.keeps_message() {
                Ended::Kept
            } else {
                Ended::Deleted
            }
        }
        .instrument(span)
        .await
    }
}

/// The invocation's ids every record span carries.
#[derive(Clone, Copy)]
struct SpanIds<'a> {
    request_id: &'a str,
    xray_trace_id: Option<&'a str>,
}

/// How long the oldest record of the batch has waited since it was first sent.
fn oldest_age(records: &[SqsMessage], now: DateTime<Utc>) -> Option<Duration> {
    records
        .iter()
        .filter_map(|r| r.attributes.get("SentTimestamp"))
        .filter_map(|v| v.parse::<i64>().ok())
        .filter_map(DateTime::from_timestamp_millis)
        .min()
        .map(|sent| (now - sent).to_std().unwrap_or(Duration::ZERO))
}

/// Records of a standard queue are independent units; on a FIFO queue (event source ARN
/// ending in `.fifo`) the records of one `MessageGroupId` form one ordered unit. A
/// standard queue's group id (fair queues) only spreads work between tenants: it orders
/// nothing.
fn units_of_work(records: &[SqsMessage]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut group_unit: HashMap<(&str, &str), usize> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        let queue = record.event_source_arn.as_deref().unwrap_or_default();
        let group = record
            .attributes
            .get("MessageGroupId")
            .filter(|_| queue.ends_with(".fifo"));
        match group {
            Some(group) => match group_unit.get(&(queue, group.as_str())) {
                Some(&unit) => units[unit].push(index),
                None => {
                    group_unit.insert((queue, group), units.len());
                    units.push(vec![index]);
                }
            },
            None => units.push(vec![index]),
        }
    }
    units
}

/// The longest a Lambda invocation can run; a deadline further away than this (or
/// already past) cannot be a real one.
const MAX_INVOCATION: Duration = Duration::from_secs(15 * 60 + 60);

/// Time left before the deadline minus the margin; `None` when the context carries no
/// usable deadline. Local emulators send 0, the invoke time, or a duration instead of
/// an epoch timestamp (`cargo lambda watch` sends 600000); taking those literally
/// would report every record as failed at once, so they are logged and ignored.
fn remaining_time(context: &lambda_runtime::Context, margin: Duration) -> Option<Duration> {
    if context.deadline == 0 {
        return None;
    }
    let deadline = UNIX_EPOCH + Duration::from_millis(context.deadline);
    match deadline.duration_since(SystemTime::now()) {
        Ok(until) if until <= MAX_INVOCATION => Some(until.saturating_sub(margin)),
        _ => {
            tracing::warn!(
                deadline_ms = context.deadline,
                "invocation deadline is not a plausible epoch time (a local emulator?); running without one"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests;
