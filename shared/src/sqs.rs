//! The SQS batch runtime: one generic handler under every SQS-triggered function.
//!
//! A function writes only `process(&Deps, Message) -> Outcome`. The runtime turns a
//! Lambda `SqsEvent` into an `SqsBatchResponse` and guarantees:
//!
//! - **Nothing is lost.** A record is left out of `batchItemFailures` (and so deleted by
//!   Lambda) only when `process` returned [`Outcome::Done`] or [`Outcome::Discard`]. A
//!   panic, a record still running at the deadline, a record skipped behind a failed
//!   FIFO group member, or a visibility change that failed are all reported as failures.
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
//!   so the partial response still reaches Lambda and finished work is not redone.
//! - **FIFO order.** Records with a `MessageGroupId` run in order within their group;
//!   once one fails, the later records of that group are reported as failures without
//!   being processed. Other groups go on.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use futures::{FutureExt, StreamExt};
use lambda_runtime::LambdaEvent;
use tracing::{Instrument, field};

/// The longest visibility timeout SQS accepts (12 hours).
pub const MAX_VISIBILITY: Duration = Duration::from_secs(43_200);

/// What `process` decided for one message, and so what happens to it in SQS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Finished: success, or a definitive failure already recorded in the database.
    /// Lambda deletes the message.
    Done,
    /// A poison message (not an id, unknown id, duplicate of finished work). Logged with
    /// the reason; Lambda deletes the message.
    Discard { reason: String },
    /// A transient failure with backoff: the message is hidden for `after` (at most 12 h)
    /// and reported as failed, so SQS redelivers it after that.
    Retry { after: Duration },
    /// Reported as failed with the visibility untouched: the queue's visibility timeout
    /// decides when it comes back, and on the final receive the redrive policy moves it to
    /// the DLQ.
    Release,
}

impl Outcome {
    pub fn discard(reason: impl Into<String>) -> Self {
        Outcome::Discard {
            reason: reason.into(),
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
    /// How often to extend (seed 002: 60 s).
    pub every: Duration,
    /// The new visibility timeout set at each beat (seed 002: 300 s).
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
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            concurrency: 10,
            deadline_margin: Duration::from_secs(2),
            heartbeat: Heartbeat::default(),
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
        "event source ARN {0:?} is not an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>)"
    )]
    BadArn(String),
    #[error("could not resolve the URL of queue {queue}")]
    QueueUrl {
        queue: String,
        #[source]
        source: Box<
            aws_sdk_sqs::error::SdkError<aws_sdk_sqs::operation::get_queue_url::GetQueueUrlError>,
        >,
    },
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

/// Changes message visibility on the queue a record came from. Queue URLs are resolved
/// from the record's event source ARN once and cached.
#[derive(Clone, Debug)]
pub struct Visibility {
    client: aws_sdk_sqs::Client,
    urls: Arc<Mutex<HashMap<String, String>>>,
}

impl Visibility {
    pub fn new(client: aws_sdk_sqs::Client) -> Self {
        Visibility {
            client,
            urls: Arc::default(),
        }
    }

    async fn queue_url(&self, arn: &str) -> Result<String, VisibilityError> {
        if let Some(url) = self.urls.lock().expect("queue url cache poisoned").get(arn) {
            return Ok(url.clone());
        }
        let (account, name) = parse_queue_arn(arn)?;
        let url = self
            .client
            .get_queue_url()
            .queue_name(name)
            .queue_owner_aws_account_id(account)
            .send()
            .await
            .map_err(|source| VisibilityError::QueueUrl {
                queue: arn.to_owned(),
                source: Box::new(source),
            })?
            .queue_url
            .unwrap_or_default();
        self.urls
            .lock()
            .expect("queue url cache poisoned")
            .insert(arn.to_owned(), url.clone());
        Ok(url)
    }

    /// Sets the visibility timeout of one received message (clamped to 0–43,200 s).
    pub async fn change(
        &self,
        queue_arn: Option<&str>,
        receipt_handle: Option<&str>,
        timeout: Duration,
    ) -> Result<(), VisibilityError> {
        let arn = queue_arn.ok_or(VisibilityError::NoEventSource)?;
        let receipt = receipt_handle.ok_or(VisibilityError::NoReceiptHandle)?;
        let url = self.queue_url(arn).await?;
        let seconds = timeout.min(MAX_VISIBILITY).as_secs() as i32;
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

fn parse_queue_arn(arn: &str) -> Result<(&str, &str), VisibilityError> {
    let parts: Vec<&str> = arn.split(':').collect();
    match parts.as_slice() {
        ["arn", _partition, "sqs", _region, account, name]
            if !account.is_empty() && !name.is_empty() =>
        {
            Ok((account, name))
        }
        _ => Err(VisibilityError::BadArn(arn.to_owned())),
    }
}

/// One SQS record as `process` sees it.
#[derive(Debug, Clone)]
pub struct Message {
    pub message_id: String,
    /// The body; an absent body is given as "" (and will fail to parse as an id).
    pub body: String,
    /// `ApproximateReceiveCount`: 1 on the first delivery. Taken as 1 when absent.
    pub receive_count: u32,
    /// FIFO queues only.
    pub group_id: Option<String>,
    /// When the message was first sent (`SentTimestamp`).
    pub sent_at: Option<DateTime<Utc>>,
    receipt_handle: Option<String>,
    queue_arn: Option<String>,
    visibility: Visibility,
    heartbeat: Heartbeat,
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
        heartbeat: Heartbeat,
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
            heartbeat,
            stop_at,
        }
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

    /// Sets this message's visibility timeout now.
    pub async fn set_visibility(&self, timeout: Duration) -> Result<(), VisibilityError> {
        self.visibility
            .change(
                self.queue_arn.as_deref(),
                self.receipt_handle.as_deref(),
                timeout,
            )
            .await
    }

    /// Runs `work` while, every `heartbeat.every`, extending the message's visibility to
    /// `heartbeat.extend_to` and then calling `hook` (e.g. a database liveness touch).
    /// The heartbeat stops when `work` ends. A failed extension is logged, not fatal:
    /// at worst the message becomes visible and a duplicate delivery meets the claim.
    pub async fn with_heartbeat<T, W, H, HF>(&self, work: W, mut hook: H) -> T
    where
        W: Future<Output = T>,
        H: FnMut() -> HF,
        HF: Future<Output = ()>,
    {
        let beat = async {
            loop {
                tokio::time::sleep(self.heartbeat.every).await;
                match self.set_visibility(self.heartbeat.extend_to).await {
                    Ok(()) => tracing::debug!(
                        extend_to_s = self.heartbeat.extend_to.as_secs(),
                        "heartbeat extended visibility"
                    ),
                    Err(e) => tracing::warn!(
                        error.message = %e,
                        error.cause_chain = ?e,
                        "heartbeat could not extend visibility"
                    ),
                }
                hook().await;
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
        }
    }

    pub fn config(&self) -> &BatchConfig {
        &self.config
    }

    /// Processes a batch and returns the partial batch response.
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
        let records = event.payload.records;
        if let Some(index) = records
            .iter()
            .position(|r| r.message_id.as_deref().is_none_or(str::is_empty))
        {
            return Err(BatchError::MissingMessageId { index });
        }

        let remaining = remaining_time(&event.context, self.config.deadline_margin);
        let stop_at = remaining.map(|r| tokio::time::Instant::now() + r);
        tracing::info!(
            records = records.len(),
            time_left_ms = remaining.map(|r| r.as_millis() as u64),
            deadline_ms = event.context.deadline,
            "batch received"
        );

        let states = Mutex::new(vec![RecordState::Pending; records.len()]);
        let units = units_of_work(&records);
        let process = &process;
        let states_ref = &states;
        let records_ref = &records;

        let all = futures::stream::iter(units).for_each_concurrent(self.config.concurrency.max(1), |unit| async move {
            let mut group_failed = false;
            for index in unit {
                let record = &records_ref[index];
                if group_failed {
                    tracing::warn!(
                        message_id = record.message_id.as_deref().unwrap_or_default(),
                        "earlier record of the FIFO group failed; reporting this one as failed unprocessed"
                    );
                    states_ref.lock().expect("record states poisoned")[index] = RecordState::Failed;
                    continue;
                }
                let keep = self.run_record(record, process, stop_at).await;
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

    /// Runs one record in its span; returns whether the message must be kept (reported
    /// as failed).
    async fn run_record<F, Fut>(
        &self,
        record: &SqsMessage,
        process: &F,
        stop_at: Option<tokio::time::Instant>,
    ) -> bool
    where
        F: Fn(Message) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let message =
            Message::from_record(record, &self.visibility, self.config.heartbeat, stop_at);
        let span = tracing::info_span!(
            "sqs_record",
            message_id = %message.message_id,
            receive_count = message.receive_count,
            entity_id = field::Empty,
        );
        async move {
            let outcome = match AssertUnwindSafe(process(message.clone())).catch_unwind().await {
                Ok(outcome) => outcome,
                Err(panic) => {
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
                Outcome::Done => tracing::info!("record done"),
                Outcome::Discard { reason } => tracing::warn!(%reason, "record discarded"),
                Outcome::Release => tracing::warn!("record released for redelivery"),
                Outcome::Retry { after } => {
                    match message.set_visibility(*after).await {
                        Ok(()) => tracing::info!(retry_after_s = after.as_secs(), "record will be retried"),
                        // Still reported as failed: the message comes back after the queue's
                        // visibility timeout instead of after `after`, but it is not lost.
                        Err(e) => tracing::error!(
                            retry_after_s = after.as_secs(),
                            error.message = %e,
                            error.cause_chain = ?e,
                            "could not delay the retry; reporting the record as failed anyway"
                        ),
                    }
                }
            }
            outcome.keeps_message()
        }
        .instrument(span)
        .await
    }
}

/// Standard-queue records are independent units; FIFO records (those with a
/// `MessageGroupId`) form one ordered unit per group.
fn units_of_work(records: &[SqsMessage]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut group_unit: HashMap<&str, usize> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        match record.attributes.get("MessageGroupId") {
            Some(group) => match group_unit.get(group.as_str()) {
                Some(&unit) => units[unit].push(index),
                None => {
                    group_unit.insert(group, units.len());
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

    fn record(id: &str, group: Option<&str>) -> SqsMessage {
        let mut r = SqsMessage::default();
        r.message_id = Some(id.into());
        if let Some(g) = group {
            r.attributes.insert("MessageGroupId".into(), g.into());
        }
        r
    }

    #[test]
    fn fifo_records_are_grouped_in_order_and_standard_records_stand_alone() {
        let records = vec![
            record("a1", Some("a")),
            record("s1", None),
            record("b1", Some("b")),
            record("a2", Some("a")),
            record("s2", None),
        ];
        assert_eq!(
            units_of_work(&records),
            vec![vec![0, 3], vec![1], vec![2], vec![4]]
        );
    }

    #[test]
    fn queue_arns_are_split_into_account_and_name() {
        assert_eq!(
            parse_queue_arn("arn:aws:sqs:eu-central-1:123456789012:docflow-matching").unwrap(),
            ("123456789012", "docflow-matching")
        );
        assert!(parse_queue_arn("arn:aws:sns:eu-central-1:123456789012:topic").is_err());
        assert!(parse_queue_arn("docflow-matching").is_err());
    }

    #[test]
    fn receive_count_and_group_are_read_from_the_record_attributes() {
        let mut r = record("m", Some("g"));
        r.attributes
            .insert("ApproximateReceiveCount".into(), "3".into());
        r.attributes
            .insert("SentTimestamp".into(), "1700000000000".into());
        let visibility = Visibility::new(aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::Config::builder()
                .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
                .build(),
        ));
        let message = Message::from_record(&r, &visibility, Heartbeat::default(), None);
        assert_eq!(message.receive_count, 3);
        assert_eq!(message.group_id.as_deref(), Some("g"));
        assert_eq!(message.sent_at.unwrap().timestamp(), 1_700_000_000);
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
