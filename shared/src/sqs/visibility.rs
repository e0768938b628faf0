//! Message visibility: the `ChangeMessageVisibility(Batch)` calls, addressed by the queue
//! URL derived from a record's event source ARN, the whole-second and 12-hour arithmetic
//! of a timeout, and the [`Heartbeat`] settings that keep a long-running record hidden.

use std::time::Duration;

use super::MAX_BATCH_ENTRIES;

/// The longest a message may stay invisible, counted from the receive (12 hours):
/// SQS rejects a `ChangeMessageVisibility` whose timeout would end later.
pub const MAX_VISIBILITY: Duration = Duration::from_secs(43_200);

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
    pub(super) client: aws_sdk_sqs::Client,
}

impl Visibility {
    pub fn new(client: aws_sdk_sqs::Client) -> Self {
        Visibility { client }
    }

    /// Sets the visibility timeout of one received message: `timeout` rounded up to whole
    /// seconds, at most 43,200 s. (A [`Message`](super::Message) also cuts it to what is
    /// left of the 12 hours since its receive; see
    /// [`Message::set_visibility`](super::Message::set_visibility).)
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
pub(super) fn visibility_seconds(requested: Duration, since_receipt: Duration) -> i32 {
    let room = MAX_VISIBILITY.saturating_sub(since_receipt).as_secs();
    let whole = requested.as_secs() + u64::from(requested.subsec_nanos() > 0);
    whole.min(room) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
