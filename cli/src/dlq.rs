//! `docflow dlq list|redrive <queue>`: what a dead-letter queue holds, and moving it back.
//!
//! Redrive is receive → send to the source queue (same body and message attributes;
//! on a FIFO queue the same group, deduplicated by the original message id) → delete from
//! the DLQ only after the send succeeded. A message whose send fails stays in the DLQ
//! (made visible again at once); one whose delete fails after a good send is reported:
//! it will be in both queues, and the function's claim discards the second delivery.
//! This, rather than SQS's `StartMessageMoveTask`, because the local emulator does not
//! implement that call; against AWS both work.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::Context as _;
use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// A queue named on the command line: a function (`ingestion`, with the environment's
/// name `prefix`), a queue name (`docflow-ingestion`), its DLQ's name
/// (`docflow-ingestion-dlq`) or either's URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueNames {
    pub source: String,
    pub dlq: String,
}

impl QueueNames {
    pub fn parse(given: &str, prefix: &str) -> anyhow::Result<Self> {
        let name = given.rsplit('/').next().unwrap_or(given).trim();
        if name.is_empty() {
            anyhow::bail!("name a queue: ingestion, matching or document-output");
        }
        let (base, fifo) = match name.strip_suffix(".fifo") {
            Some(base) => (base, ".fifo"),
            None => (name, ""),
        };
        let base = base.strip_suffix("-dlq").unwrap_or(base);
        let base = match base {
            "ingestion" | "matching" | "document-output" => format!("{prefix}docflow-{base}"),
            other => other.to_owned(),
        };
        Ok(QueueNames {
            source: format!("{base}{fifo}"),
            dlq: format!("{base}-dlq{fifo}"),
        })
    }
}

/// A message in a DLQ.
#[derive(Debug, Clone, Serialize)]
pub struct DlqMessage {
    pub message_id: String,
    pub body: String,
    /// Receives in the source queue plus looks in the DLQ.
    pub receive_count: Option<u32>,
    pub sent_at: Option<DateTime<Utc>>,
    pub group_id: Option<String>,
    #[serde(skip)]
    receipt_handle: Option<String>,
    #[serde(skip)]
    attributes: Option<std::collections::HashMap<String, MessageAttributeValue>>,
}

async fn receive(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    hide_for: Duration,
) -> anyhow::Result<Vec<DlqMessage>> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .visibility_timeout(hide_for.as_secs() as i32)
        .wait_time_seconds(1)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot receive from {url}: {}", crate::errors::short(&e)))?;
    Ok(out
        .messages
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let attrs = m.attributes.unwrap_or_default();
            let attr = |name: MessageSystemAttributeName| attrs.get(&name).cloned();
            DlqMessage {
                message_id: m.message_id.unwrap_or_default(),
                body: m.body.unwrap_or_default(),
                receive_count: attr(MessageSystemAttributeName::ApproximateReceiveCount)
                    .and_then(|v| v.parse().ok()),
                sent_at: attr(MessageSystemAttributeName::SentTimestamp)
                    .and_then(|v| v.parse::<i64>().ok())
                    .and_then(DateTime::from_timestamp_millis),
                group_id: attr(MessageSystemAttributeName::MessageGroupId),
                receipt_handle: m.receipt_handle,
                attributes: m.message_attributes,
            }
        })
        .collect())
}

async fn make_visible(sqs: &aws_sdk_sqs::Client, url: &str, message: &DlqMessage) {
    if let Some(receipt) = &message.receipt_handle
        && let Err(e) = sqs
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(receipt)
            .visibility_timeout(0)
            .send()
            .await
    {
        tracing::warn!(message_id = %message.message_id, error.message = %crate::errors::short(&e), "could not make the message visible again; it is after its visibility timeout");
    }
}

/// Lists up to `max` messages of the DLQ. Each is received once (hidden for 30 s while
/// the listing runs) and then made visible again; nothing is deleted.
pub async fn list(
    sqs: &aws_sdk_sqs::Client,
    dlq_url: &str,
    max: usize,
) -> anyhow::Result<Vec<DlqMessage>> {
    list_hiding_for(sqs, dlq_url, max, LIST_HIDE_FOR).await
}

/// How long listing hides each message it has received.
const LIST_HIDE_FOR: Duration = Duration::from_secs(30);
/// Receives in a row that bring no message not listed yet, after which the listing
/// ends: every message reappearing is one already listed (its hiding ran out).
const LIST_STALE_RECEIVES: usize = 3;

/// [`list`], hiding each received message for `hide_for`. A message received again
/// (its hiding ran out while the listing went on: a large DLQ, a slow endpoint) is kept
/// hidden, under its newest receipt handle, until the end; making it visible at once
/// would hand it straight back and the listing would never end. The listing ends on an
/// empty receive, at `max`, or after [`LIST_STALE_RECEIVES`] receives in a row that
/// bring nothing new; then every received message is made visible again.
#[doc(hidden)]
pub async fn list_hiding_for(
    sqs: &aws_sdk_sqs::Client,
    dlq_url: &str,
    max: usize,
    hide_for: Duration,
) -> anyhow::Result<Vec<DlqMessage>> {
    let mut listed: Vec<DlqMessage> = Vec::new();
    // Every message received, by id, with its newest receipt handle.
    let mut received: std::collections::HashMap<String, DlqMessage> = Default::default();
    let mut stale = 0;
    while listed.len() < max && stale < LIST_STALE_RECEIVES {
        let batch = receive(sqs, dlq_url, hide_for).await?;
        if batch.is_empty() {
            break;
        }
        let mut new = 0;
        for message in batch {
            let id = message.message_id.clone();
            if !received.contains_key(&id) && listed.len() < max {
                listed.push(message.clone());
                new += 1;
            }
            received.insert(id, message);
        }
        stale = if new == 0 { stale + 1 } else { 0 };
    }
    for message in received.values() {
        make_visible(sqs, dlq_url, message).await;
    }
    Ok(listed)
}

/// What a redrive did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Redrive {
    pub dry_run: bool,
    /// Moved back to the source queue (or, in a dry run, that would be).
    pub moved: Vec<DlqMessage>,
    /// Not moved: still in the DLQ. (message id, why)
    pub failed: Vec<(String, String)>,
    /// Sent to the source queue but not deleted from the DLQ: in both now.
    pub duplicated: Vec<(String, String)>,
}

/// Moves up to `max` messages from the DLQ back to the source queue (see the module
/// docs); with `dry_run`, only lists what would move.
pub async fn redrive(
    sqs: &aws_sdk_sqs::Client,
    dlq_url: &str,
    source_url: &str,
    max: usize,
    dry_run: bool,
) -> anyhow::Result<Redrive> {
    if dry_run {
        return Ok(Redrive {
            dry_run: true,
            moved: list(sqs, dlq_url, max).await?,
            ..Redrive::default()
        });
    }
    let fifo = source_url.ends_with(".fifo");
    let mut report = Redrive::default();
    let mut seen = HashSet::new();
    while report.moved.len() < max {
        // Hidden long enough to move the batch; a message received again is one whose
        // move failed before (it was made visible again): not retried in this run.
        let batch = receive(sqs, dlq_url, Duration::from_secs(60)).await?;
        if batch.is_empty() {
            break;
        }
        let mut progressed = false;
        for message in batch {
            if report.moved.len() >= max || !seen.insert(message.message_id.clone()) {
                make_visible(sqs, dlq_url, &message).await;
                continue;
            }
            progressed = true;
            let mut send = sqs
                .send_message()
                .queue_url(source_url)
                .message_body(&message.body)
                .set_message_attributes(message.attributes.clone());
            if fifo {
                send = send
                    .message_group_id(message.group_id.clone().unwrap_or_else(|| "redrive".into()))
                    .message_deduplication_id(message.message_id.clone());
            }
            if let Err(e) = send.send().await {
                let why = crate::errors::short(&e);
                make_visible(sqs, dlq_url, &message).await;
                report.failed.push((message.message_id.clone(), why));
                continue;
            }
            let deleted = sqs
                .delete_message()
                .queue_url(dlq_url)
                .receipt_handle(message.receipt_handle.clone().unwrap_or_default())
                .send()
                .await;
            if let Err(e) = deleted {
                report
                    .duplicated
                    .push((message.message_id.clone(), crate::errors::short(&e)));
            }
            report.moved.push(message);
        }
        if !progressed {
            break;
        }
    }
    Ok(report)
}

/// Resolves the source queue and DLQ URLs for a queue named on the command line.
pub async fn urls(
    sqs: &aws_sdk_sqs::Client,
    given: &str,
    prefix: &str,
) -> anyhow::Result<(String, String)> {
    let names = QueueNames::parse(given, prefix)?;
    let source = crate::wiring::queue_url(sqs, &names.source).await?;
    let dlq = crate::wiring::queue_url(sqs, &names.dlq)
        .await
        .with_context(|| format!("queue {} has no DLQ named {}", names.source, names.dlq))?;
    Ok((source, dlq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_can_be_named_by_function_queue_dlq_or_url() {
        let expected = QueueNames {
            source: "docflow-matching".into(),
            dlq: "docflow-matching-dlq".into(),
        };
        for given in [
            "matching",
            "docflow-matching",
            "docflow-matching-dlq",
            "http://127.0.0.1:4566/123456789012/docflow-matching-dlq",
        ] {
            assert_eq!(QueueNames::parse(given, "").unwrap(), expected, "{given}");
        }
        assert_eq!(
            QueueNames::parse("ingestion", "prod-").unwrap().dlq,
            "prod-docflow-ingestion-dlq"
        );
        assert_eq!(
            QueueNames::parse("other-queue", "").unwrap().dlq,
            "other-queue-dlq"
        );
        assert!(QueueNames::parse("", "").is_err());
    }
}
