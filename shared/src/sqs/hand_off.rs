//! Hand-offs: the messages the records of one batch send to other queues
//! ([`super::Message::hand_off`]), gathered into `SendMessageBatch` calls of up to 10,
//! each record given its own entry's answer.

use std::sync::Mutex;

use super::MAX_BATCH_ENTRIES;

/// Why a hand-off ([`Message::hand_off`](super::Message::hand_off)) is not known to be
/// in the queue. Each is this record's alone: another record's refused entry, or a
/// sibling cut off while it sent the batch, does not touch it (except
/// [`HandOffError::Abandoned`], which says the call may or may not have happened).
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
pub(super) struct HandOffs {
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
pub(super) struct Running<'a>(&'a HandOffs);

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
    pub(super) fn new(client: aws_sdk_sqs::Client) -> Self {
        HandOffs {
            client,
            state: Mutex::new(HandOffState::default()),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Counts the first `slots` units as running before any of them starts.
    pub(super) fn reserve(&self, slots: usize) {
        let mut state = self.state.lock().expect("hand-offs poisoned");
        state.running += slots;
        state.reserved += slots;
    }

    /// A unit of work takes its slot (a reserved one, or a freed one) until the guard
    /// is dropped — when it ends, or is cut off.
    pub(super) fn running(&self) -> Running<'_> {
        let mut state = self.state.lock().expect("hand-offs poisoned");
        if state.reserved > 0 {
            state.reserved -= 1;
        } else {
            state.running += 1;
        }
        Running(self)
    }

    pub(super) async fn send(&self, queue_url: &str, body: String) -> Result<(), HandOffError> {
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
