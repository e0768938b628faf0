//! One SQS record as `process` sees it ([`Message`]): its attributes (receive count,
//! group, send time), its deadline, the visibility it is known to have left and the
//! heartbeat that extends it, and its hand-off to the next queue.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsMessage;
use chrono::{DateTime, Utc};
use tracing::field;

use super::BatchConfig;
use super::hand_off::{HandOffError, HandOffs};
use super::visibility::{Heartbeat, Visibility, VisibilityError, visibility_seconds};
use crate::retry::ReceivePolicy;

/// How long before the invocation started a record may have been received, when the
/// queue's visibility timeout is not configured: Lambda's batching window (at most
/// 300 s) plus its retries of a throttled invocation, with room to spare.
const DEFAULT_RECEIPT_SLACK: Duration = Duration::from_secs(900);

/// Between the end of the batching window and the runtime getting the batch: the invoke
/// itself and, on a cold start, the init phase (Lambda gives it at most 10 s). Taken off
/// the lower bound of a record's visibility on top of the batching window.
pub const INVOKE_SLACK: Duration = Duration::from_secs(10);

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
    pub(super) receipt_handle: Option<String>,
    pub(super) queue_arn: Option<String>,
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
    pub(super) hand_offs: Option<std::sync::Arc<HandOffs>>,
}

/// [`Message::within_deadline`] gave up: the invocation's time ran out first.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error(
    "the invocation ran out of time before the work finished (Lambda timeout too short for it?)"
)]
pub struct OutOfTime;

impl Message {
    pub(super) fn from_record(
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
    pub(super) fn since_receipt(&self) -> Duration {
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
    pub(super) fn hidden_from(&self, asked: tokio::time::Instant, seconds: i32) {
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
    pub(super) fn needs_extension_before_work(&self) -> bool {
        self.visibility_left() < self.heartbeat.extend_to
    }

    /// Whether a record may still start on the visibility it has: at least
    /// `extend_to − every` left, what the heartbeat itself leaves a running record just
    /// before its next beat. A record of the batch extended moments ago passes; one that
    /// waited for a free slot for longer than a beat interval does not.
    pub(super) fn covered_to_start(&self) -> bool {
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
    pub(super) fn heartbeat_extension(&self) -> Duration {
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
}
