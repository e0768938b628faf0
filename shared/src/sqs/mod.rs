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
//!
//! The module's files follow its parts: [`Message`] (one record, its attributes and
//! deadline) in `message`, the visibility calls and the heartbeat's settings in
//! `visibility`, the batched sends to other queues in `hand_off`, and
//! [`BatchRuntime`] (the batch loop and what each [`Outcome`] does) in `runtime`.
//! This file holds what a function writes against: [`Outcome`] and [`BatchConfig`].

mod hand_off;
mod message;
mod runtime;
mod visibility;

use std::time::Duration;

use crate::retry::ReceivePolicy;

pub use hand_off::HandOffError;
pub use message::{INVOKE_SLACK, Message, OutOfTime};
pub use runtime::{BatchError, BatchRuntime};
pub use visibility::{
    Heartbeat, MAX_VISIBILITY, Visibility, VisibilityEntry, VisibilityError, queue_url_from_arn,
};

/// The AWS API actions (IAM names) the runtime itself calls. Every function's own list
/// (`<function>::aws_actions`) includes these, and its role must grant them.
pub const AWS_ACTIONS: &[&str] = &["sqs:ChangeMessageVisibility"];

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
