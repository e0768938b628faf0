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

/// Between the end of the batching window and the runtime getting the batch: the invoke
/// itself and, on a cold start, the init phase (Lambda gives it at most 10 s). Taken off
/// the lower bound of a record's visibility on top of the batching window.
pub const INVOKE_SLACK: Duration = Duration::from_secs(10);

/// The most entries one `ChangeMessageVisibilityBatch` or `SendMessageBatch` takes.
pub const MAX_BATCH_ENTRIES: usize = 10;

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
    /// The event source mapping's `maximum_batching_window_in_seconds`
    /// (`MAXIMUM_BATCHING_WINDOW_SECONDS`, default 0 as in Terraform): a record was
    /// received at most this long before the invocation began, which bounds what is left
    /// of its visibility from below (see [`Message::visibility_left`]).
    pub batching_window: Duration,
    /// Seed 002's "extend the visibility before starting work": no record starts before
    /// its visibility is known to last [`Heartbeat::extend_to`]. The runtime makes sure
    /// of it for the whole batch before the first record starts: nothing when what is
    /// left of the receive's visibility already covers it, otherwise one
    /// `ChangeMessageVisibilityBatch` per 10 records; an entry that fails is logged and
    /// counted for its record alone. Default off (ingestion's lease is renewed
    /// by its heartbeat; the queue's timeout covers its start).
    pub extend_before_work: bool,
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
            batching_window: Duration::ZERO,
            extend_before_work: false,
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
    #[error("ChangeMessageVisibilityBatch failed on queue {queue}")]
    ChangeBatch {
        queue: String,
        /// Shared by every entry of the call.
        #[source]
        source: std::sync::Arc<
            aws_sdk_sqs::error::SdkError<
                aws_sdk_sqs::operation::change_message_visibility_batch::ChangeMessageVisibilityBatchError,
            >,
        >,
    },
    #[error(
        "ChangeMessageVisibilityBatch refused this record's entry ({seconds} s) on queue {queue}: {code}: {message}"
    )]
    EntryFailed {
        queue: String,
        seconds: i32,
        code: String,
        message: String,
    },
    #[error("ChangeMessageVisibilityBatch on queue {queue} did not answer for this record's entry")]
    EntryMissing { queue: String },
}

/// One entry of [`Visibility::change_batch`]: a received message and the timeout to give it.
#[derive(Debug, Clone)]
pub struct VisibilityEntry<'a> {
    pub receipt_handle: Option<&'a str>,
    pub seconds: i32,
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

    /// Sets the visibility of up to [`MAX_BATCH_ENTRIES`] messages of the queue
    /// `queue_arn` in one `ChangeMessageVisibilityBatch` (IAM: `sqs:ChangeMessageVisibility`).
    /// Returns one result per entry, in order: SQS answers each entry on its own, and a
    /// refused entry (an expired receipt handle, say) fails only its message. A failure of
    /// the whole call fails every entry.
    pub async fn change_batch(
        &self,
        queue_arn: Option<&str>,
        entries: &[VisibilityEntry<'_>],
    ) -> Vec<Result<(), VisibilityError>> {
        assert!(
            entries.len() <= MAX_BATCH_ENTRIES,
            "a ChangeMessageVisibilityBatch takes at most {MAX_BATCH_ENTRIES} entries"
        );
        let queue = queue_arn.unwrap_or_default().to_owned();
        let url = match queue_arn
            .ok_or(VisibilityError::NoEventSource)
            .and_then(queue_url_from_arn)
        {
            Ok(url) => url,
            Err(e) => {
                let e = e.to_string();
                return entries
                    .iter()
                    .map(|_| Err(VisibilityError::BadArn(e.clone())))
                    .collect();
            }
        };
        let mut results: Vec<Option<Result<(), VisibilityError>>> =
            entries.iter().map(|_| None).collect();
        let mut request = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            match entry.receipt_handle {
                None => results[index] = Some(Err(VisibilityError::NoReceiptHandle)),
                Some(receipt) => request.push(
                    aws_sdk_sqs::types::ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(index.to_string())
                        .receipt_handle(receipt)
                        .visibility_timeout(entry.seconds)
                        .build()
                        .expect("id and receipt handle are set"),
                ),
            }
        }
        if request.is_empty() {
            return results
                .into_iter()
                .map(|r| r.expect("an entry without a receipt handle is answered"))
                .collect();
        }
        let answer = Box::pin(
            self.client
                .change_message_visibility_batch()
                .queue_url(url)
                .set_entries(Some(request))
                .send(),
        )
        .await;
        match answer {
            Ok(answer) => {
                for ok in answer.successful() {
                    if let Some(slot) = ok
                        .id()
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| results.get_mut(i))
                    {
                        *slot = Some(Ok(()));
                    }
                }
                for failed in answer.failed() {
                    if let Some(index) = failed
                        .id()
                        .parse::<usize>()
                        .ok()
                        .filter(|i| *i < entries.len())
                    {
                        results[index] = Some(Err(VisibilityError::EntryFailed {
                            queue: queue.clone(),
                            seconds: entries[index].seconds,
                            code: failed.code().to_owned(),
                            message: failed.message().unwrap_or_default().to_owned(),
                        }));
                    }
                }
                results
                    .into_iter()
                    .map(|r| {
                        r.unwrap_or_else(|| {
                            Err(VisibilityError::EntryMissing {
                                queue: queue.clone(),
                            })
                        })
                    })
                    .collect()
            }
            Err(source) => {
                let source = std::sync::Arc::new(source);
                results
                    .into_iter()
                    .map(|r| match r {
                        Some(done) => done,
                        None => Err(VisibilityError::ChangeBatch {
                            queue: queue.clone(),
                            source: source.clone(),
                        }),
                    })
                    .collect()
            }
        }
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

/// A lower bound of what is left of a record's visibility when the runtime gets the
/// batch: the queue's timeout minus the batching window (the longest a record waits for
/// the invocation) minus [`INVOKE_SLACK`]; zero when the queue's timeout is unknown.
fn receive_visibility_left(config: &BatchConfig) -> Duration {
    config.queue_visibility.map_or(Duration::ZERO, |timeout| {
        timeout
            .saturating_sub(config.batching_window)
            .saturating_sub(INVOKE_SLACK)
    })
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
    /// Until when the message is known to stay hidden (a lower bound): from the receive
    /// (the queue's timeout minus the batching window and [`INVOKE_SLACK`], counted from
    /// `batch_started`), then from each visibility change that succeeded. Shared by the
    /// clones `process` is given.
    visible_until: std::sync::Arc<Mutex<tokio::time::Instant>>,
    /// The batch's hand-offs ([`Message::hand_off`]).
    hand_offs: Option<std::sync::Arc<HandOffs>>,
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
            visible_until: std::sync::Arc::new(Mutex::new(
                batch_started + receive_visibility_left(config),
            )),
            hand_offs: None,
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
        let asked = tokio::time::Instant::now();
        self.visibility
            .change(
                self.queue_arn.as_deref(),
                self.receipt_handle.as_deref(),
                Duration::from_secs(seconds as u64),
            )
            .await?;
        self.hidden_from(asked, seconds);
        Ok(())
    }

    /// Records that a visibility change to `seconds`, asked for at `asked`, succeeded:
    /// the message stays hidden at least until `asked + seconds` (SQS counts from when
    /// it gets the call, which is later).
    fn hidden_from(&self, asked: tokio::time::Instant, seconds: i32) {
        *self.visible_until.lock().expect("visibility poisoned") =
            asked + Duration::from_secs(seconds.max(0) as u64);
    }

    /// A lower bound of how long the message stays hidden from now. Before any change
    /// the runtime made: the queue's visibility timeout minus the batching window minus
    /// [`INVOKE_SLACK`] minus the time since the batch began (zero when the queue's
    /// timeout is unknown); after one: what that change gave, minus the time since.
    pub fn visibility_left(&self) -> Duration {
        self.visible_until
            .lock()
            .expect("visibility poisoned")
            .saturating_duration_since(tokio::time::Instant::now())
    }

    /// Whether the message must be extended before work starts (seed 002): what is left
    /// of its visibility does not cover a heartbeat's extension.
    fn needs_extension_before_work(&self) -> bool {
        self.visibility_left() < self.heartbeat.extend_to
    }

    /// Whether a record may still start on the visibility it has: at least
    /// `extend_to − every` left, what the heartbeat itself leaves a running record just
    /// before its next beat. A record of the batch extended moments ago passes; one that
    /// waited for a free slot for longer than a beat interval does not.
    fn covered_to_start(&self) -> bool {
        self.visibility_left()
            >= self
                .heartbeat
                .extend_to
                .saturating_sub(self.heartbeat.every)
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

    /// Sends `body` to the queue at `queue_url`, batched with the other records'
    /// hand-offs of this batch (`SendMessageBatch`, IAM `sqs:SendMessage`): it returns
    /// once SQS answered for this message — `Ok` when it is in the queue, an error of
    /// this record's alone otherwise (see [`HandOffError`]). It waits for the other
    /// records of the batch still running to reach their hand-off or end (at most 10
    /// go in one call). Dropped while waiting, the message is not sent.
    pub async fn hand_off(&self, queue_url: &str, body: String) -> Result<(), HandOffError> {
        match &self.hand_offs {
            Some(hand_offs) => Box::pin(hand_offs.send(queue_url, body)).await,
            // Outside a batch: alone.
            None => {
                let alone = HandOffs::new(self.visibility.client.clone());
                Box::pin(alone.send(queue_url, body)).await
            }
        }
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

/// Why a hand-off ([`Message::hand_off`]) is not known to be in the queue. Each is
/// this record's alone: another record's refused entry, or a sibling cut off while it
/// sent the batch, does not touch it (except [`HandOffError::Abandoned`], which says the
/// call may or may not have happened).
#[derive(Debug, Clone, thiserror::Error)]
pub enum HandOffError {
    #[error("SendMessageBatch to {queue} failed")]
    Call {
        queue: String,
        /// Shared by every entry of the call.
        #[source]
        source: std::sync::Arc<
            aws_sdk_sqs::error::SdkError<
                aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError,
            >,
        >,
    },
    #[error("SendMessageBatch to {queue} refused this record's message: {code}: {message}")]
    Refused {
        queue: String,
        code: String,
        message: String,
    },
    #[error("SendMessageBatch to {queue} did not answer for this record's message")]
    Missing { queue: String },
    #[error(
        "the record that was sending this hand-off in its batch was cut off before SQS answered;          it may or may not be in the queue"
    )]
    Abandoned,
}

/// The hand-offs of one batch to other queues, sent together: `SendMessageBatch` of up
/// to 10 messages (IAM: `sqs:SendMessage`). A record that hands off waits until either
/// 10 hand-offs are waiting or every record still running is waiting to hand off (the
/// others ended); then one of the waiting records sends them and gives each its own
/// entry's answer. Records that have not started yet (a batch larger than the
/// concurrency) are not waited for, so a full set of waiting records never blocks the
/// rest. A record cut off while waiting withdraws its entry (never sent behind its back
/// after it was cut off); one cut off while sending leaves the others
/// [`HandOffError::Abandoned`].
#[derive(Debug)]
struct HandOffs {
    client: aws_sdk_sqs::Client,
    state: Mutex<HandOffState>,
    changed: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct HandOffState {
    /// Units of work (a record, or a FIFO group's records in order) holding one of the
    /// runtime's concurrency slots: counted for the first wave before any starts (the
    /// first record polled must not find itself alone and send at once), then as later
    /// units take a slot freed by one that ended.
    running: usize,
    /// First-wave slots counted in `running` whose unit has not started yet.
    reserved: usize,
    next_id: u64,
    waiting: Vec<PendingHandOff>,
}

#[derive(Debug)]
struct PendingHandOff {
    id: u64,
    queue_url: String,
    body: String,
    answer: tokio::sync::oneshot::Sender<Result<(), HandOffError>>,
}

/// Counts a record as running while it lives.
struct Running<'a>(&'a HandOffs);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.state.lock().expect("hand-offs poisoned").running -= 1;
        self.0.changed.notify_waiters();
    }
}

/// Takes a waiting entry back when its record stops waiting before it was sent.
struct Withdraw<'a> {
    hand_offs: &'a HandOffs,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.hand_offs
            .state
            .lock()
            .expect("hand-offs poisoned")
            .waiting
            .retain(|p| p.id != self.id);
    }
}

impl HandOffs {
    fn new(client: aws_sdk_sqs::Client) -> Self {
        HandOffs {
            client,
            state: Mutex::new(HandOffState::default()),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Counts the first `slots` units as running before any of them starts.
    fn reserve(&self, slots: usize) {
        let mut state = self.state.lock().expect("hand-offs poisoned");
        state.running += slots;
        state.reserved += slots;
    }

    /// A unit of work takes its slot (a reserved one, or a freed one) until the guard
    /// is dropped — when it ends, or is cut off.
    fn running(&self) -> Running<'_> {
        let mut state = self.state.lock().expect("hand-offs poisoned");
        if state.reserved > 0 {
            state.reserved -= 1;
        } else {
            state.running += 1;
        }
        Running(self)
    }

    async fn send(&self, queue_url: &str, body: String) -> Result<(), HandOffError> {
        let (answer, mut answered) = tokio::sync::oneshot::channel();
        let id = {
            let mut state = self.state.lock().expect("hand-offs poisoned");
            let id = state.next_id;
            state.next_id += 1;
            state.waiting.push(PendingHandOff {
                id,
                queue_url: queue_url.to_owned(),
                body,
                answer,
            });
            id
        };
        let _withdraw = Withdraw {
            hand_offs: self,
            id,
        };
        loop {
            // Registered before looking, so a change between the look and the wait
            // still wakes this record.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match answered.try_recv() {
                Ok(result) => return result,
                Err(tokio::sync::oneshot::error::TryRecvError::Closed) => {
                    return Err(HandOffError::Abandoned);
                }
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {}
            }
            if let Some((queue_url, batch)) = self.take_ready() {
                self.flush(&queue_url, batch).await;
                continue;
            }
            tokio::select! {
                result = &mut answered => return result.unwrap_or(Err(HandOffError::Abandoned)),
                () = changed => {}
            }
        }
    }

    /// The entries to send now, all for one queue: when 10 are waiting, or every
    /// running record is waiting.
    fn take_ready(&self) -> Option<(String, Vec<PendingHandOff>)> {
        let mut state = self.state.lock().expect("hand-offs poisoned");
        let waiting = state.waiting.len();
        if waiting == 0 || (waiting < MAX_BATCH_ENTRIES && waiting < state.running) {
            return None;
        }
        let queue_url = state.waiting[0].queue_url.clone();
        let mut batch = Vec::new();
        let mut index = 0;
        while index < state.waiting.len() && batch.len() < MAX_BATCH_ENTRIES {
            if state.waiting[index].queue_url == queue_url {
                batch.push(state.waiting.remove(index));
            } else {
                index += 1;
            }
        }
        Some((queue_url, batch))
    }

    /// Sends `batch` and answers each entry; wakes the other waiting records.
    async fn flush(&self, queue_url: &str, batch: Vec<PendingHandOff>) {
        let entries = batch
            .iter()
            .enumerate()
            .map(|(index, pending)| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(index.to_string())
                    .message_body(&pending.body)
                    .build()
                    .expect("id and body are set")
            })
            .collect();
        // Boxed, as the SDK's other calls in the runtime's futures: an SDK call's future
        // is large, and every record's future would carry it inline.
        let sent = Box::pin(
            self.client
                .send_message_batch()
                .queue_url(queue_url)
                .set_entries(Some(entries))
                .send(),
        )
        .await;
        let queue = queue_url.to_owned();
        let mut answers: Vec<Result<(), HandOffError>> = batch
            .iter()
            .map(|_| {
                Err(HandOffError::Missing {
                    queue: queue.clone(),
                })
            })
            .collect();
        match sent {
            Ok(out) => {
                for ok in out.successful() {
                    if let Some(slot) = ok
                        .id()
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| answers.get_mut(i))
                    {
                        *slot = Ok(());
                    }
                }
                for failed in out.failed() {
                    if let Some(slot) = failed
                        .id()
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| answers.get_mut(i))
                    {
                        *slot = Err(HandOffError::Refused {
                            queue: queue.clone(),
                            code: failed.code().to_owned(),
                            message: failed.message().unwrap_or_default().to_owned(),
                        });
                    }
                }
            }
            Err(e) => {
                let source = std::sync::Arc::new(e);
                for slot in &mut answers {
                    *slot = Err(HandOffError::Call {
                        queue: queue.clone(),
                        source: source.clone(),
                    });
                }
            }
        }
        for (pending, answer) in batch.into_iter().zip(answers) {
            // The record may have been cut off meanwhile: nobody to tell.
            let _ = pending.answer.send(answer);
        }
        self.changed.notify_waiters();
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
    /// remaining visibility does not cover [`Heartbeat::extend_to`] get what one
    /// heartbeat would set, in one `ChangeMessageVisibilityBatch` per queue and 10
    /// records; when every record is covered, no call at all. A refused entry (or a
    /// failed call) is logged and counted for its own records only, which still start,
    /// as after a failed single change before (their claim guards against a second
    /// delivery).
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
