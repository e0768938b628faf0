//! The SQS batch runtime: one generic handler under every SQS-triggered function.
//!
//! A function writes only `process(&Deps, Message) -> Outcome`. The runtime turns a
//! Lambda `SqsEvent` into an `SqsBatchResponse` and guarantees:
//!
//! - **Nothing is lost.** A record is left out of `batchItemFailures` (and so deleted by
//!   Lambda) only when `process` returned [`Outcome::Done`] or [`Outcome::Discard`]. A
//!   panic, a record still running at the deadline, a record skipped behind a failed
//!   FIFO group member, a record not started for lack of time, or a visibility change
//!   that failed are all reported as failures.
//! - **Isolation.** Records run concurrently (bounded by [`BatchConfig::concurrency`]),
//!   each in its own span; a panic in one is caught and turned into [`Outcome::Release`]
//!   for that record only.
//! - **A valid response.** Only message ids received in this batch are reported, never
//!   an empty one: Lambda treats an unknown or empty `itemIdentifier` as a failure of the
//!   whole batch. A record without a message id is the one case where the runtime cannot
//!   report per record, so [`BatchRuntime::run`] returns an error and the whole batch is
//!   retried.
//! - **Deadline awareness.** Records still running when the invocation deadline minus
//!   [`BatchConfig::deadline_margin`] is reached are abandoned and reported as failures,
//!   so the partial response still reaches Lambda and finished work is not redone. A
//!   record that would start with less than [`BatchConfig::start_reserve`] left is not
//!   started at all (reported as failed untouched), so it does not use up an attempt
//!   for no work.
//! - **FIFO order.** On a FIFO queue (its ARN ends in `.fifo`) records run in order
//!   within their `MessageGroupId`; once one fails, the later records of that group are
//!   reported as failures without being processed, and made visible again at once (SQS
//!   still delivers them only after the failed one, so a `Retry { after }` means `after`
//!   for the whole group). Other groups go on. On a standard queue a `MessageGroupId`
//!   (fair queues) does not order anything.
//! - **No AWS call beyond [`AWS_ACTIONS`].** The queue URL a visibility change needs is
//!   derived from the record's event source ARN, so the function's role needs no
//!   `sqs:GetQueueUrl`.

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

use crate::retry::ReceivePolicy;
use crate::telemetry::metrics::{self, MetricSet, MetricsSink, batch as m};

/// The longest a message may stay invisible, counted from the receive (12 hours):
/// SQS rejects a `ChangeMessageVisibility` whose timeout would end later.
pub const MAX_VISIBILITY: Duration = Duration::from_secs(43_200);

/// The AWS API actions (IAM names) the runtime itself calls. Every function's own list
/// (`<function>::aws_actions`) includes these, and its role must grant them.
pub const AWS_ACTIONS: &[&str] = &["sqs:ChangeMessageVisibility"];

/// How long before the invocation started a record may have been received, when the
/// queue's visibility timeout is not configured: Lambda's batching window (at most
/// 300 s) plus its retries of a throttled invocation, with room to spare.
const DEFAULT_RECEIPT_SLACK: Duration = Duration::from_secs(900);

/// What `process` decided for one message, and so what happens to it in SQS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Finished: success, or a definitive failure already recorded in the database.
    /// Lambda deletes the message.
    Done,
    /// A poison message (not an id, unknown id, duplicate of finished work). Logged with
    /// the reason; Lambda deletes the message. `kind` is the metric's `reason`
    /// dimension (low-cardinality; `reason` may name ids).
    Discard { reason: String, kind: DiscardKind },
    /// A transient failure with backoff: the message is hidden for `after` and reported
    /// as failed, so SQS redelivers it after that. `after` is rounded up to whole
    /// seconds and cut to what is left of the 12 hours since the receive.
    Retry { after: Duration },
    /// Reported as failed with the visibility untouched: the queue's visibility timeout
    /// decides when it comes back, and on the final receive the redrive policy moves it to
    /// the DLQ.
    Release,
}

/// Why a message was discarded, as the `reason` dimension of `RecordsDiscarded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiscardKind {
    /// The body is not the id the queue carries.
    NotAnId,
    /// No such entity.
    Unknown,
    /// The work is already finished (a duplicate delivery).
    Duplicate,
    /// The entity exists but cannot be processed (e.g. no structured data).
    Unprocessable,
    Other,
}

impl DiscardKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiscardKind::NotAnId => "not_an_id",
            DiscardKind::Unknown => "unknown",
            DiscardKind::Duplicate => "duplicate",
            DiscardKind::Unprocessable => "unprocessable",
            DiscardKind::Other => "other",
        }
    }
}

impl Outcome {
    /// A discard of kind [`DiscardKind::Other`].
    pub fn discard(reason: impl Into<String>) -> Self {
        Self::discard_as(DiscardKind::Other, reason)
    }

    pub fn discard_as(kind: DiscardKind, reason: impl Into<String>) -> Self {
        Outcome::Discard {
            reason: reason.into(),
            kind,
        }
    }

    /// Whether Lambda should keep the message (report it in `batchItemFailures`).
    fn keeps_message(&self) -> bool {
        matches!(self, Outcome::Retry { .. } | Outcome::Release)
    }
}

/// Periodic visibility extension for long-running records.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat {
    /// How often to beat (seed 002: 60 s).
    pub every: Duration,
    /// At each beat the message stays hidden at least this long from then (seed 002:
    /// 300 s). A function whose claim is a lease must extend beyond its stale threshold,
    /// so that a redelivery never meets a lease renewed moments earlier.
    pub extend_to: Duration,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Heartbeat {
            every: Duration::from_secs(60),
            extend_to: Duration::from_secs(300),
        }
    }
}

/// How a batch is run.
#[derive(Debug, Clone, Copy)]
pub struct BatchConfig {
    /// Records processed at the same time (default 10, the largest batch without a
    /// batching window).
    pub concurrency: usize,
    /// Stop waiting for records this long before the invocation deadline, leaving time to
    /// return the partial response.
    pub deadline_margin: Duration,
    pub heartbeat: Heartbeat,
    /// The redrive policy's `maxReceiveCount` (`MAX_RECEIVE_COUNT`), so that
    /// [`Message::is_final_receive`] knows the last receive before the DLQ.
    pub receive_policy: ReceivePolicy,
    /// The source queue's own visibility timeout (`QUEUE_VISIBILITY_TIMEOUT_SECONDS`).
    /// Known, it keeps the heartbeat from ever shortening the visibility the receive
    /// gave the message; `None` (unknown) makes every beat set `heartbeat.extend_to`.
    pub queue_visibility: Option<Duration>,
    /// A record that would start with less time than this before the runtime stops
    /// waiting is not started: it is reported as failed untouched and comes back after
    /// the queue's visibility timeout. A function that keeps a reserve to record its
    /// failures sets it to that reserve (default zero: always start).
    pub start_reserve: Duration,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            concurrency: 10,
            deadline_margin: Duration::from_secs(2),
            heartbeat: Heartbeat::default(),
            receive_policy: ReceivePolicy::default(),
            queue_visibility: None,
            start_reserve: Duration::ZERO,
        }
    }
}

/// Errors of the SQS calls the runtime makes itself.
#[derive(Debug, thiserror::Error)]
pub enum VisibilityError {
    #[error("record has no receipt handle")]
    NoReceiptHandle,
    #[error("record has no event source ARN")]
    NoEventSource,
    #[error(
        "event source ARN {0:?} is not an SQS queue ARN (arn:<partition>:sqs:<region>:<account>:<name>)"
    )]
    BadArn(String),
    #[error("ChangeMessageVisibility to {seconds} s failed on queue {queue}")]
    Change {
        queue: String,
        seconds: i32,
        #[source]
        source: Box<
            aws_sdk_sqs::error::SdkError<
                aws_sdk_sqs::operation::change_message_visibility::ChangeMessageVisibilityError,
            >,
        >,
    },
}

/// Changes message visibility on the queue a record came from, addressed by the URL
/// derived from the record's event source ARN (no `GetQueueUrl`).
#[derive(Clone, Debug)]
pub struct Visibility {
    client: aws_sdk_sqs::Client,
}

impl Visibility {
    pub fn new(client: aws_sdk_sqs::Client) -> Self {
        Visibility { client }
    }

    /// Sets the visibility timeout of one received message: `timeout` rounded up to whole
    /// seconds, at most 43,200 s. (A [`Message`] also cuts it to what is left of the
    /// 12 hours since its receive; see [`Message::set_visibility`].)
    pub async fn change(
        &self,
        queue_arn: Option<&str>,
        receipt_handle: Option<&str>,
        timeout: Duration,
    ) -> Result<(), VisibilityError> {
        let arn = queue_arn.ok_or(VisibilityError::NoEventSource)?;
        let receipt = receipt_handle.ok_or(VisibilityError::NoReceiptHandle)?;
        let url = queue_url_from_arn(arn)?;
        let seconds = visibility_seconds(timeout, Duration::ZERO);
        self.client
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(receipt)
            .visibility_timeout(seconds)
            .send()
            .await
            .map_err(|source| VisibilityError::Change {
                queue: arn.to_owned(),
                seconds,
                source: Box::new(source),
            })?;
        Ok(())
    }
}

/// The queue URL SQS gives the queue of an ARN: `https://sqs.<region>.<domain>/<account>/<name>`,
/// the domain following the partition. SQS identifies the queue by the URL's account and
/// name, so the same URL also addresses it through a custom endpoint (a VPC endpoint, or
/// the local emulator).
pub fn queue_url_from_arn(arn: &str) -> Result<String, VisibilityError> {
    let bad = || VisibilityError::BadArn(arn.to_owned());
    let parts: Vec<&str> = arn.split(':').collect();
    let ["arn", partition, "sqs", region, account, name] = parts.as_slice() else {
        return Err(bad());
    };
    if region.is_empty() || account.is_empty() || name.is_empty() {
        return Err(bad());
    }
    let domain = match *partition {
        "aws" | "aws-us-gov" => "amazonaws.com",
        "aws-cn" => "amazonaws.com.cn",
        "aws-iso" => "c2s.ic.gov",
        "aws-iso-b" => "sc2s.sgov.gov",
        "aws-iso-e" => "cloud.adc-e.uk",
        "aws-iso-f" => "csp.hci.ic.gov",
        _ => return Err(bad()),
    };
    Ok(format!("https://sqs.{region}.{domain}/{account}/{name}"))
}

/// The visibility timeout to send for `requested`: rounded up to whole seconds (a
/// sub-second backoff must not become 0, "visible now"), and cut to what is left of
/// [`MAX_VISIBILITY`] after `since_receipt`.
fn visibility_seconds(requested: Duration, since_receipt: Duration) -> i32 {
    let room = MAX_VISIBILITY.saturating_sub(since_receipt).as_secs();
    let whole = requested.as_secs() + u64::from(requested.subsec_nanos() > 0);
    whole.min(room) as i32
}

/// One SQS record as `process` sees it.
#[derive(Debug, Clone)]
pub struct Message {
    pub message_id: String,
    /// The body; an absent body is given as "" (and will fail to parse as an id).
    pub body: String,
    /// `ApproximateReceiveCount`: 1 on the first delivery. Taken as 1 when absent.
    pub receive_count: u32,
    /// `MessageGroupId` (FIFO queues, and fair standard queues).
    pub group_id: Option<String>,
    /// When the message was first sent (`SentTimestamp`).
    pub sent_at: Option<DateTime<Utc>>,
    receipt_handle: Option<String>,
    queue_arn: Option<String>,
    visibility: Visibility,
    heartbeat: Heartbeat,
    receive_policy: ReceivePolicy,
    /// The queue's own visibility timeout, when known.
    queue_visibility: Option<Duration>,
    /// When the runtime got the batch: the receive happened before, at most
    /// `receipt_slack` before.
    batch_started: tokio::time::Instant,
    receipt_slack: Duration,
    /// When the runtime stops waiting for records (deadline minus margin).
    stop_at: Option<tokio::time::Instant>,
}

/// [`Message::within_deadline`] gave up: the invocation's time ran out first.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error(
    "the invocation ran out of time before the work finished (Lambda timeout too short for it?)"
)]
pub struct OutOfTime;

impl Message {
    fn from_record(
        record: &SqsMessage,
        visibility: &Visibility,
        config: &BatchConfig,
        batch_started: tokio::time::Instant,
        stop_at: Option<tokio::time::Instant>,
    ) -> Self {
        let attr = |name: &str| record.attributes.get(name).map(String::as_str);
        Message {
            message_id: record.message_id.clone().unwrap_or_default(),
            body: record.body.clone().unwrap_or_default(),
            receive_count: attr("ApproximateReceiveCount")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
            group_id: attr("MessageGroupId").map(str::to_owned),
            sent_at: attr("SentTimestamp")
                .and_then(|v| v.parse::<i64>().ok())
                .and_then(DateTime::from_timestamp_millis),
            receipt_handle: record.receipt_handle.clone(),
            queue_arn: record.event_source_arn.clone(),
            visibility: visibility.clone(),
            heartbeat: config.heartbeat,
            receive_policy: config.receive_policy,
            queue_visibility: config.queue_visibility,
            batch_started,
            // Lambda invokes within the queue's visibility timeout of the receive (that
            // is why it must be at least 6 x the function timeout).
            receipt_slack: config.queue_visibility.unwrap_or(DEFAULT_RECEIPT_SLACK),
            stop_at,
        }
    }

    /// Whether this is the last receive before the redrive policy moves the message to
    /// the DLQ (`receive_count >= MAX_RECEIVE_COUNT`). A transient failure on the final
    /// receive must be recorded as final by the function: the DLQ must never be the only
    /// place a failure is visible.
    pub fn is_final_receive(&self) -> bool {
        self.receive_policy.is_final(self.receive_count)
    }

    /// The receive policy this message is judged by.
    pub fn receive_policy(&self) -> ReceivePolicy {
        self.receive_policy
    }

    /// Time left before the runtime stops waiting for this record (and reports it
    /// failed); `None` when the invocation has no deadline.
    pub fn time_left(&self) -> Option<Duration> {
        self.stop_at
            .map(|stop| stop.saturating_duration_since(tokio::time::Instant::now()))
    }

    /// Runs `work` but gives up `reserve` before the runtime would abandon the record,
    /// so the caller still has `reserve` to record the failure and choose the outcome
    /// itself (a backoff, a failed status, a notification) instead of the runtime's
    /// plain failure report. `work` is dropped (cancelled) when it gives up.
    pub async fn within_deadline<T, W>(&self, reserve: Duration, work: W) -> Result<T, OutOfTime>
    where
        W: Future<Output = T>,
    {
        match self.stop_at {
            None => Ok(work.await),
            Some(stop) => {
                let give_up = stop.checked_sub(reserve).unwrap_or(stop);
                tokio::time::timeout_at(give_up, work)
                    .await
                    .map_err(|_| OutOfTime)
            }
        }
    }

    /// Records the id of the entity this message is about in the record's span.
    pub fn record_entity(&self, id: &dyn std::fmt::Display) {
        tracing::Span::current().record("entity_id", field::display(id));
    }

    /// Records the document this message is about in the record's span
    /// (`document_id`), so one grep on the id follows the document through every
    /// function.
    pub fn record_document(&self, id: &dyn std::fmt::Display) {
        tracing::Span::current().record("document_id", field::display(id));
    }

    /// Records the tenant in the record's span (`tenant_id`).
    pub fn record_tenant(&self, id: &dyn std::fmt::Display) {
        tracing::Span::current().record("tenant_id", field::display(id));
    }

    /// An upper bound of the time since SQS handed out this receipt.
    fn since_receipt(&self) -> Duration {
        self.batch_started.elapsed() + self.receipt_slack
    }

    /// Sets this message's visibility timeout now: `timeout` rounded up to whole
    /// seconds and cut to what is left of the 12 hours since the receive (SQS rejects
    /// more).
    pub async fn set_visibility(&self, timeout: Duration) -> Result<(), VisibilityError> {
        let seconds = visibility_seconds(timeout, self.since_receipt());
        self.visibility
            .change(
                self.queue_arn.as_deref(),
                self.receipt_handle.as_deref(),
                Duration::from_secs(seconds as u64),
            )
            .await
    }

    /// Extends the visibility as one heartbeat would, now: never shorter than what is
    /// left of the queue's own visibility timeout (seed 002's "extend before work").
    pub async fn extend_visibility(&self) -> Result<(), VisibilityError> {
        self.set_visibility(self.heartbeat_extension()).await
    }

    /// What one heartbeat sets: at least `heartbeat.extend_to` from now, and never less
    /// than what may be left of the queue's own visibility timeout, so the first beats
    /// of a queue with a long timeout do not shorten it.
    fn heartbeat_extension(&self) -> Duration {
        let queue_left = self.queue_visibility.map_or(Duration::ZERO, |v| {
            v.saturating_sub(self.batch_started.elapsed())
        });
        self.heartbeat.extend_to.max(queue_left)
    }

    /// Runs `work` while, every `heartbeat.every`, first calling `hook` (e.g. renewing a
    /// lease or a liveness touch in the database) and then extending the message's
    /// visibility (see [`Heartbeat::extend_to`]; never shorter than what is left of the
    /// queue's own timeout). Renewing first means the message is never kept hidden
    /// longer than the lease it protects. The heartbeat stops when `work` ends. A failed
    /// extension is logged, not fatal: at worst the message becomes visible and a
    /// duplicate delivery meets the claim.
    pub async fn with_heartbeat<T, W, H, HF>(&self, work: W, mut hook: H) -> T
    where
        W: Future<Output = T>,
        H: FnMut() -> HF,
        HF: Future<Output = ()>,
    {
        let beat = async {
            loop {
                tokio::time::sleep(self.heartbeat.every).await;
                hook().await;
                let extend_to = self.heartbeat_extension();
                match self.set_visibility(extend_to).await {
                    Ok(()) => tracing::debug!(
                        extend_to_s = extend_to.as_secs(),
                        "heartbeat extended visibility"
                    ),
                    Err(e) => tracing::warn!(
                        error.message = %e,
                        error.cause_chain = ?e,
                        "heartbeat could not extend visibility"
                    ),
                }
            }
        };
        tokio::select! {
            biased;
            out = work => out,
            never = beat => never,
        }
    }
}

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
        // Boxed: the batch's future is large, and a caller that polls it on a small
        // stack (a test thread, the local runner) should not pay for it twice.
        let result = Box::pin(
            self.run_batch(event, process, batch_metrics.clone())
                .instrument(span),
        )
        .await;
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

        let all = futures::stream::iter(units).for_each_concurrent(self.config.concurrency.max(1), |unit| async move {
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
                    .run_record(record, process, batch_started, stop_at, ids, batch_metrics)
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
        record: &SqsMessage,
        process: &F,
        batch_started: tokio::time::Instant,
        stop_at: Option<tokio::time::Instant>,
        ids: SpanIds<'_>,
        batch_metrics: &std::sync::Arc<Mutex<MetricSet>>,
    ) -> Ended
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let message = Message::from_record(
            record,
            &self.visibility,
            &self.config,
            batch_started,
            stop_at,
        );
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
mod tests {
    use super::*;

    const FIFO: &str = "arn:aws:sqs:eu-central-1:123456789012:docflow-ingestion.fifo";
    const STANDARD: &str = "arn:aws:sqs:eu-central-1:123456789012:docflow-ingestion";

    fn record(id: &str, queue: &str, group: Option<&str>) -> SqsMessage {
        let mut r = SqsMessage::default();
        r.message_id = Some(id.into());
        r.event_source_arn = Some(queue.into());
        if let Some(g) = group {
            r.attributes.insert("MessageGroupId".into(), g.into());
        }
        r
    }

    #[test]
    fn fifo_records_are_grouped_in_order_and_standard_records_stand_alone() {
        let records = vec![
            record("a1", FIFO, Some("a")),
            record("s1", FIFO, None),
            record("b1", FIFO, Some("b")),
            record("a2", FIFO, Some("a")),
            record("s2", FIFO, None),
        ];
        assert_eq!(
            units_of_work(&records),
            vec![vec![0, 3], vec![1], vec![2], vec![4]]
        );
    }

    #[test]
    fn group_ids_on_a_standard_queue_order_nothing() {
        // Fair queues: standard queues accept a MessageGroupId to share capacity between
        // tenants; their records stay independent.
        let records = vec![
            record("a1", STANDARD, Some("tenant-a")),
            record("a2", STANDARD, Some("tenant-a")),
            record("b1", STANDARD, Some("tenant-b")),
        ];
        assert_eq!(units_of_work(&records), vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn queue_urls_are_derived_from_the_arn_without_asking_sqs() {
        assert_eq!(
            queue_url_from_arn("arn:aws:sqs:eu-central-1:123456789012:docflow-matching").unwrap(),
            "https://sqs.eu-central-1.amazonaws.com/123456789012/docflow-matching"
        );
        assert_eq!(
            queue_url_from_arn("arn:aws-cn:sqs:cn-north-1:123456789012:q.fifo").unwrap(),
            "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q.fifo"
        );
        assert!(queue_url_from_arn("arn:aws:sns:eu-central-1:123456789012:topic").is_err());
        assert!(queue_url_from_arn("arn:aws:sqs:eu-central-1::docflow-matching").is_err());
        assert!(queue_url_from_arn("docflow-matching").is_err());
    }

    #[test]
    fn visibility_is_rounded_up_to_whole_seconds() {
        assert_eq!(visibility_seconds(Duration::ZERO, Duration::ZERO), 0);
        assert_eq!(
            visibility_seconds(Duration::from_millis(400), Duration::ZERO),
            1
        );
        assert_eq!(
            visibility_seconds(Duration::from_millis(1500), Duration::ZERO),
            2
        );
        assert_eq!(
            visibility_seconds(Duration::from_secs(30), Duration::ZERO),
            30
        );
    }

    #[test]
    fn visibility_never_reaches_past_twelve_hours_after_the_receive() {
        assert_eq!(visibility_seconds(MAX_VISIBILITY, Duration::ZERO), 43_200);
        assert_eq!(
            visibility_seconds(MAX_VISIBILITY, Duration::from_secs(1800)),
            43_200 - 1800
        );
        assert_eq!(
            visibility_seconds(Duration::from_secs(100_000), Duration::from_secs(60)),
            43_200 - 60
        );
        assert_eq!(
            visibility_seconds(Duration::from_secs(60), Duration::from_secs(50_000)),
            0
        );
    }

    fn client() -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::Config::builder()
                .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
                .build(),
        )
    }

    #[test]
    fn receive_count_and_group_are_read_from_the_record_attributes() {
        let mut r = record("m", FIFO, Some("g"));
        r.attributes
            .insert("ApproximateReceiveCount".into(), "3".into());
        r.attributes
            .insert("SentTimestamp".into(), "1700000000000".into());
        let message = Message::from_record(
            &r,
            &Visibility::new(client()),
            &BatchConfig::default(),
            tokio::time::Instant::now(),
            None,
        );
        assert_eq!(message.receive_count, 3);
        assert_eq!(message.group_id.as_deref(), Some("g"));
        assert_eq!(message.sent_at.unwrap().timestamp(), 1_700_000_000);
        assert!(message.is_final_receive(), "3 of MAX_RECEIVE_COUNT 3");
    }

    #[test]
    fn the_final_receive_follows_the_configured_receive_policy() {
        let mut r = record("m", STANDARD, None);
        r.attributes
            .insert("ApproximateReceiveCount".into(), "3".into());
        let config = BatchConfig {
            receive_policy: ReceivePolicy {
                max_receive_count: 5,
            },
            ..BatchConfig::default()
        };
        let message = Message::from_record(
            &r,
            &Visibility::new(client()),
            &config,
            tokio::time::Instant::now(),
            None,
        );
        assert!(!message.is_final_receive());
    }

    #[tokio::test(start_paused = true)]
    async fn a_heartbeat_never_sets_less_than_what_is_left_of_the_queue_visibility() {
        let config = BatchConfig {
            heartbeat: Heartbeat {
                every: Duration::from_secs(60),
                extend_to: Duration::from_secs(360),
            },
            queue_visibility: Some(Duration::from_secs(1800)),
            ..BatchConfig::default()
        };
        let started = tokio::time::Instant::now();
        let message = Message::from_record(
            &record("m", STANDARD, None),
            &Visibility::new(client()),
            &config,
            started,
            None,
        );
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(message.heartbeat_extension(), Duration::from_secs(1740));
        tokio::time::advance(Duration::from_secs(1500)).await;
        assert_eq!(message.heartbeat_extension(), Duration::from_secs(360));
        let unknown = Message::from_record(
            &record("m", STANDARD, None),
            &Visibility::new(client()),
            &BatchConfig {
                queue_visibility: None,
                ..config
            },
            started,
            None,
        );
        assert_eq!(unknown.heartbeat_extension(), Duration::from_secs(360));
    }

    fn deadline_in(offset_ms: i64) -> lambda_runtime::Context {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let mut context = lambda_runtime::Context::default();
        context.deadline = (now + offset_ms) as u64;
        context
    }

    #[test]
    fn the_margin_is_kept_before_a_real_deadline() {
        let left = remaining_time(&deadline_in(10_000), Duration::from_secs(2)).unwrap();
        assert!(
            left > Duration::from_secs(7) && left <= Duration::from_secs(8),
            "{left:?}"
        );
        let none_left = remaining_time(&deadline_in(1_500), Duration::from_secs(2));
        assert_eq!(
            none_left,
            Some(Duration::ZERO),
            "inside the margin: stop at once"
        );
    }

    #[test]
    fn implausible_deadlines_from_local_emulators_are_ignored() {
        let mut context = lambda_runtime::Context::default();
        assert_eq!(
            remaining_time(&context, Duration::from_secs(2)),
            None,
            "absent"
        );
        context.deadline = 600_000; // cargo lambda watch: a duration, i.e. January 1970
        assert_eq!(remaining_time(&context, Duration::from_secs(2)), None);
        assert_eq!(
            remaining_time(&deadline_in(-5_000), Duration::from_secs(2)),
            None,
            "already past"
        );
        assert_eq!(
            remaining_time(&deadline_in(3_600_000), Duration::from_secs(2)),
            None,
            "an hour away"
        );
    }
}
