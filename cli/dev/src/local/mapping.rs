//! One event source mapping: Lambda's SQS poller for one queue and one function.
//!
//! What Lambda does, and so what this does (AWS Lambda developer guide, "Handling errors
//! for an SQS event source" and "Reporting batch item failures"):
//!
//! - it receives up to `BatchSize` records, waiting up to the batching window for more
//!   (never more than 6 MB of payload), with every system attribute;
//! - with `ReportBatchItemFailures`, a response with an empty or null
//!   `batchItemFailures`, an empty object or a null response means the whole batch
//!   succeeded: every record is deleted;
//! - records listed in `batchItemFailures` are left on the queue (their visibility is
//!   whatever the function made it);
//! - the whole batch fails — nothing is deleted, every record comes back after its
//!   visibility timeout — when the function returns an error, crashes or times out, or
//!   when the response is invalid: not JSON, an empty or null `itemIdentifier`, a wrong
//!   key, or a message id that was not in the batch.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::Context as _;
use aws_lambda_events::encodings::Base64Data;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage, SqsMessageAttribute};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use lambda_runtime::LambdaEvent;
use serde_json::Value;

use super::invoke::{Invocation, Invoke, lambda_context};

/// Lambda's invocation payload limit for a synchronous invoke: a batch never grows past it.
pub const MAX_PAYLOAD_BYTES: usize = 6 * 1024 * 1024;

/// Lambda's SQS poller, locally: receive a batch, invoke, apply the partial response.
#[derive(Debug, Clone)]
pub struct EventSourceMapping {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub queue_arn: String,
    /// `BatchSize` (default 10). Above 10, several receives fill one batch.
    pub batch_size: i32,
    /// Long-poll wait of each receive (whole seconds, at most 20).
    pub wait: Duration,
    /// `MaximumBatchingWindowInSeconds` (default 0): after the first record, keep
    /// receiving this long for a fuller batch.
    pub batching_window: Duration,
}

/// What Lambda did with a batch after the function returned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// Message ids deleted from the queue.
    pub deleted: Vec<String>,
    /// Message ids left on the queue (reported as failed, or all of them when the
    /// batch failed as a whole).
    pub kept: Vec<String>,
    /// Whether the batch failed as a whole (an error, a timeout, an invalid response).
    pub whole_batch_failed: bool,
    /// Why, when it did.
    pub failure: Option<String>,
}

/// How Lambda reads an invocation's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A valid partial batch response: these message ids stay, every other is deleted.
    Partial { keep: HashSet<String> },
    /// The batch failed as a whole: nothing is deleted.
    WholeBatch { reason: String },
}

/// Reads an invocation's result as Lambda does with `ReportBatchItemFailures` (see the
/// module docs). Pure: the rules in one place, unit-tested below.
pub fn interpret(event: &SqsEvent, invocation: &Invocation) -> Verdict {
    let whole = |reason: String| Verdict::WholeBatch { reason };
    let value = match invocation {
        Invocation::Failed(reason) => return whole(reason.clone()),
        Invocation::Returned(value) => value,
    };
    let failures = match value {
        Value::Null => {
            return Verdict::Partial {
                keep: HashSet::new(),
            };
        }
        Value::Object(object) => {
            if let Some(key) = object.keys().find(|k| *k != "batchItemFailures") {
                // Not a batch response (e.g. an error object from a failed cold start):
                // deleting the batch on it would lose every message.
                return whole(format!("invalid response: unexpected key {key:?}"));
            }
            match object.get("batchItemFailures") {
                None | Some(Value::Null) => {
                    return Verdict::Partial {
                        keep: HashSet::new(),
                    };
                }
                Some(Value::Array(items)) => items,
                Some(other) => {
                    return whole(format!("invalid response: batchItemFailures is {other}"));
                }
            }
        }
        other => return whole(format!("invalid response: {other} is not a batch response")),
    };
    let received: HashSet<&str> = event
        .records
        .iter()
        .filter_map(|r| r.message_id.as_deref())
        .collect();
    let mut keep = HashSet::new();
    for item in failures {
        let id = match item.get("itemIdentifier") {
            Some(Value::String(id)) if !id.is_empty() => id,
            Some(Value::String(_)) | Some(Value::Null) | None => {
                return whole(format!(
                    "invalid response: empty, null or missing itemIdentifier in {item}"
                ));
            }
            Some(other) => {
                return whole(format!(
                    "invalid response: itemIdentifier {other} is not a string"
                ));
            }
        };
        if !received.contains(id.as_str()) {
            return whole(format!(
                "invalid response: itemIdentifier {id:?} is not a message of this batch"
            ));
        }
        keep.insert(id.clone());
    }
    Verdict::Partial { keep }
}

impl EventSourceMapping {
    /// A mapping with Lambda's defaults (batch size 10, no batching window) and a 1 s
    /// long poll.
    pub async fn new(sqs: aws_sdk_sqs::Client, queue_url: &str) -> anyhow::Result<Self> {
        let queue_arn = super::queue_arn(&sqs, queue_url).await?;
        Ok(EventSourceMapping {
            sqs,
            queue_url: queue_url.to_owned(),
            queue_arn,
            batch_size: 10,
            wait: Duration::from_secs(1),
            batching_window: Duration::ZERO,
        })
    }

    /// Receives one batch as a Lambda `SqsEvent`: up to `batch_size` records, gathering
    /// more for up to `batching_window` after the first, never past 6 MB of bodies (a
    /// record that does not fit is made visible again at once). `None` when the queue had
    /// nothing within `wait`.
    pub async fn poll(&self) -> anyhow::Result<Option<SqsEvent>> {
        let mut records = self.receive(self.wait, self.batch_size).await?;
        if records.is_empty() {
            return Ok(None);
        }
        let started = tokio::time::Instant::now();
        let mut bytes: usize = records.iter().map(record_size).sum();
        while (records.len() as i32) < self.batch_size && bytes < MAX_PAYLOAD_BYTES {
            let left = self.batching_window.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            let more = self
                .receive(left, self.batch_size - records.len() as i32)
                .await?;
            if more.is_empty() {
                continue;
            }
            for record in more {
                let size = record_size(&record);
                if bytes + size > MAX_PAYLOAD_BYTES {
                    self.release(&record).await;
                } else {
                    bytes += size;
                    records.push(record);
                }
            }
        }
        let mut event = SqsEvent::default();
        event.records = records;
        Ok(Some(event))
    }

    async fn receive(&self, wait: Duration, max: i32) -> anyhow::Result<Vec<SqsMessage>> {
        let received = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(max.clamp(1, 10))
            .wait_time_seconds(wait.as_secs().min(20) as i32)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .with_context(|| format!("failed to receive from {}", self.queue_url))?;
        let region = self.queue_arn.split(':').nth(3).map(str::to_owned);
        Ok(received
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let mut record = SqsMessage::default();
                record.message_id = m.message_id;
                record.receipt_handle = m.receipt_handle;
                record.body = m.body;
                record.md5_of_body = m.md5_of_body;
                record.md5_of_message_attributes = m.md5_of_message_attributes;
                record.attributes = m
                    .attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v))
                    .collect();
                record.message_attributes = m
                    .message_attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(name, value)| {
                        let mut attribute = SqsMessageAttribute::default();
                        attribute.string_value = value.string_value;
                        attribute.binary_value =
                            value.binary_value.map(|b| base64_data(b.into_inner()));
                        attribute.string_list_values = value.string_list_values.unwrap_or_default();
                        attribute.binary_list_values = value
                            .binary_list_values
                            .unwrap_or_default()
                            .into_iter()
                            .map(|b| base64_data(b.into_inner()))
                            .collect();
                        attribute.data_type = Some(value.data_type);
                        (name, attribute)
                    })
                    .collect();
                record.event_source = Some("aws:sqs".into());
                record.event_source_arn = Some(self.queue_arn.clone());
                record.aws_region = region.clone();
                record
            })
            .collect())
    }

    /// Makes a received record visible again at once (it did not fit the batch).
    async fn release(&self, record: &SqsMessage) {
        let Some(receipt) = record.receipt_handle.as_deref() else {
            return;
        };
        if let Err(e) = self
            .sqs
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(0)
            .send()
            .await
        {
            tracing::warn!(error.message = %aws_sdk_sqs::error::DisplayErrorContext(&e), "could not release a record that did not fit the batch; it returns after its visibility timeout");
        }
    }

    /// Invokes `function` with `event` as Lambda would: a fresh request id, the deadline
    /// `timeout` from now, and a timeout that fails the whole batch.
    pub async fn invoke(
        &self,
        function: &dyn Invoke,
        function_arn: &str,
        event: SqsEvent,
        timeout: Duration,
    ) -> Invocation {
        let context = lambda_context(function_arn, timeout);
        match tokio::time::timeout(timeout, function.invoke(LambdaEvent::new(event, context))).await
        {
            Ok(invocation) => invocation,
            Err(_) => Invocation::Failed(format!(
                "Task timed out after {:.2} seconds",
                timeout.as_secs_f64()
            )),
        }
    }

    /// Applies a function's response as Lambda does with `ReportBatchItemFailures`.
    pub async fn complete(
        &self,
        event: &SqsEvent,
        response: &SqsBatchResponse,
    ) -> anyhow::Result<Completion> {
        let value = serde_json::to_value(response).context("batch response did not serialize")?;
        self.apply(event, &Invocation::Returned(value)).await
    }

    /// Applies an invocation's result: deletes the records Lambda would delete.
    pub async fn apply(
        &self,
        event: &SqsEvent,
        invocation: &Invocation,
    ) -> anyhow::Result<Completion> {
        let all_ids = || {
            event
                .records
                .iter()
                .filter_map(|r| r.message_id.clone())
                .collect()
        };
        let keep = match interpret(event, invocation) {
            Verdict::WholeBatch { reason } => {
                tracing::error!(queue = %self.queue_url, records = event.records.len(), %reason, "the whole batch failed; every record returns after its visibility timeout");
                return Ok(Completion {
                    deleted: vec![],
                    kept: all_ids(),
                    whole_batch_failed: true,
                    failure: Some(reason),
                });
            }
            Verdict::Partial { keep } => keep,
        };
        let mut completion = Completion::default();
        let mut entries = Vec::new();
        for (i, record) in event.records.iter().enumerate() {
            let id = record.message_id.clone().unwrap_or_default();
            if keep.contains(id.as_str()) {
                completion.kept.push(id);
            } else {
                entries.push(
                    DeleteMessageBatchRequestEntry::builder()
                        .id(format!("m{i}"))
                        .receipt_handle(record.receipt_handle.clone().unwrap_or_default())
                        .build()
                        .context("DeleteMessageBatch entry")?,
                );
                completion.deleted.push(id);
            }
        }
        // DeleteMessageBatch takes at most 10 entries. A refused entry is what Lambda's
        // poller meets too (a handle from before the message was moved to the DLQ, or, in
        // moto, a delete racing another on its unlocked message list): Lambda logs it and
        // the message, if it is still there, comes back after its visibility timeout, to
        // be handled as the duplicate delivery it then is. So it is logged and the record
        // counted as kept, not an error that stops the poller.
        let entry_ids: Vec<String> = entries.iter().map(|e| e.id().to_owned()).collect();
        let by_entry: std::collections::HashMap<String, String> = entry_ids
            .iter()
            .cloned()
            .zip(completion.deleted.iter().cloned())
            .collect();
        for chunk in entries.chunks(10) {
            let out = self
                .sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(chunk.to_vec()))
                .send()
                .await
                .with_context(|| {
                    format!(
                        "failed to delete processed messages from {}",
                        self.queue_url
                    )
                })?;
            for failed in &out.failed {
                let message_id = by_entry.get(failed.id()).cloned().unwrap_or_default();
                tracing::warn!(
                    queue = %self.queue_url,
                    message_id = %message_id,
                    code = failed.code(),
                    reason = failed.message().unwrap_or_default(),
                    "DeleteMessageBatch refused an entry; the message, if still there, will be delivered again"
                );
                completion.deleted.retain(|id| id != &message_id);
                completion.kept.push(message_id);
            }
        }
        Ok(completion)
    }
}

fn base64_data(bytes: Vec<u8>) -> Base64Data {
    let mut data = Base64Data::default();
    *data = bytes;
    data
}

fn record_size(record: &SqsMessage) -> usize {
    record.body.as_ref().map_or(0, String::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn batch(ids: &[&str]) -> SqsEvent {
        let mut event = SqsEvent::default();
        event.records = ids
            .iter()
            .map(|id| {
                let mut record = SqsMessage::default();
                record.message_id = Some((*id).to_owned());
                record
            })
            .collect();
        event
    }

    fn keep(ids: &[&str]) -> Verdict {
        Verdict::Partial {
            keep: ids.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn verdict(value: Value) -> Verdict {
        interpret(&batch(&["a", "b", "c"]), &Invocation::Returned(value))
    }

    fn is_whole(v: &Verdict) -> bool {
        matches!(v, Verdict::WholeBatch { .. })
    }

    #[test]
    fn an_empty_or_null_response_means_every_record_succeeded() {
        assert_eq!(verdict(Value::Null), keep(&[]));
        assert_eq!(verdict(json!({})), keep(&[]));
        assert_eq!(verdict(json!({ "batchItemFailures": [] })), keep(&[]));
        assert_eq!(verdict(json!({ "batchItemFailures": null })), keep(&[]));
    }

    #[test]
    fn listed_records_are_kept_and_only_they() {
        assert_eq!(
            verdict(
                json!({ "batchItemFailures": [{ "itemIdentifier": "b" }, { "itemIdentifier": "c" }] })
            ),
            keep(&["b", "c"])
        );
    }

    #[test]
    fn an_unknown_identifier_fails_the_whole_batch() {
        assert!(is_whole(&verdict(
            json!({ "batchItemFailures": [{ "itemIdentifier": "b" }, { "itemIdentifier": "zzz" }] })
        )));
    }

    #[test]
    fn an_empty_null_or_misspelt_identifier_fails_the_whole_batch() {
        assert!(is_whole(&verdict(
            json!({ "batchItemFailures": [{ "itemIdentifier": "" }] })
        )));
        assert!(is_whole(&verdict(
            json!({ "batchItemFailures": [{ "itemIdentifier": null }] })
        )));
        assert!(is_whole(&verdict(
            json!({ "batchItemFailures": [{ "itemIdentifer": "a" }] })
        )));
        assert!(is_whole(&verdict(
            json!({ "batchItemFailures": [{ "itemIdentifier": 7 }] })
        )));
    }

    #[test]
    fn something_that_is_not_a_batch_response_fails_the_whole_batch() {
        assert!(is_whole(&verdict(json!("ok"))));
        assert!(is_whole(&verdict(json!([]))));
        assert!(is_whole(&verdict(json!({ "batchItemFailures": "a" }))));
        // cargo lambda watch answers a failed cold start with HTTP 200 and this body.
        assert!(is_whole(&verdict(
            json!({ "errorType": "InitError", "errorMessage": "DOCFLOW_SECRET_ID is required" })
        )));
    }

    #[test]
    fn a_failed_invocation_fails_the_whole_batch_with_its_reason() {
        let v = interpret(
            &batch(&["a"]),
            &Invocation::Failed("Task timed out after 3.00 seconds".into()),
        );
        assert_eq!(
            v,
            Verdict::WholeBatch {
                reason: "Task timed out after 3.00 seconds".into()
            }
        );
    }
}
