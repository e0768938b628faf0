//! The local stack and a local event-source mapping, for development and tests.
//!
//! [`provision`] creates what Terraform creates in AWS — every queue with its DLQ and
//! redrive policy, the documents bucket, the secret — on the local emulator, idempotently.
//! [`EventSourceMapping`] does what Lambda's SQS event source mapping does: receives a
//! batch, builds a real `SqsEvent`, and applies the partial batch response exactly as
//! Lambda does (an invalid response fails the whole batch; otherwise every record not
//! listed is deleted).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use anyhow::Context as _;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageSystemAttributeName, QueueAttributeName,
};

/// The queues docflow runs on (locally; in AWS with an environment prefix).
pub const QUEUES: [&str; 3] = [
    "docflow-ingestion",
    "docflow-matching",
    "docflow-document-output",
];
/// The local documents bucket.
pub const DOCUMENTS_BUCKET: &str = "docflow-documents";
/// The local secret.
pub const SECRET_ID: &str = "docflow/app";

/// A source queue and its dead-letter queue.
#[derive(Debug, Clone)]
pub struct QueuePair {
    pub url: String,
    pub arn: String,
    pub dlq_url: String,
    pub dlq_arn: String,
}

/// How a queue is created.
#[derive(Debug, Clone, Copy)]
pub struct QueueSpec {
    pub visibility_timeout: Duration,
    pub max_receive_count: u32,
    pub fifo: bool,
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec {
            visibility_timeout: Duration::from_secs(60),
            max_receive_count: 3,
            fifo: false,
        }
    }
}

/// Creates (or finds) `name` and `name-dlq` with the redrive policy; DLQ retention
/// 14 days, source 7 days (seed 002), so a message never expires in the DLQ before its source
/// retention would have ended.
pub async fn ensure_queue_with_dlq(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    spec: QueueSpec,
) -> anyhow::Result<QueuePair> {
    let (base, suffix) = match name.strip_suffix(".fifo") {
        Some(base) => (base, ".fifo"),
        None => (name, ""),
    };
    let fifo = spec.fifo || !suffix.is_empty();
    let suffix = if fifo { ".fifo" } else { "" };
    let dlq_name = format!("{base}-dlq{suffix}");
    let source_name = format!("{base}{suffix}");

    let mut dlq_attrs = HashMap::from([(
        QueueAttributeName::MessageRetentionPeriod,
        "1209600".to_owned(),
    )]);
    if fifo {
        dlq_attrs.insert(QueueAttributeName::FifoQueue, "true".into());
    }
    let dlq_url = create_queue(sqs, &dlq_name, dlq_attrs).await?;
    let dlq_arn = queue_arn(sqs, &dlq_url).await?;

    let redrive = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": spec.max_receive_count.to_string(),
    });
    let mut attrs = HashMap::from([
        (
            QueueAttributeName::VisibilityTimeout,
            spec.visibility_timeout.as_secs().to_string(),
        ),
        (
            QueueAttributeName::MessageRetentionPeriod,
            "604800".to_owned(),
        ),
        (QueueAttributeName::RedrivePolicy, redrive.to_string()),
    ]);
    if fifo {
        attrs.insert(QueueAttributeName::FifoQueue, "true".into());
        attrs.insert(QueueAttributeName::ContentBasedDeduplication, "true".into());
    }
    let url = create_queue(sqs, &source_name, attrs.clone()).await?;
    // CreateQueue on an existing queue with other attributes fails in AWS; keep the
    // attributes current explicitly so re-running `make up` converges.
    attrs.remove(&QueueAttributeName::FifoQueue);
    sqs.set_queue_attributes()
        .queue_url(&url)
        .set_attributes(Some(attrs))
        .send()
        .await
        .with_context(|| format!("failed to set the attributes of queue {source_name}"))?;
    let arn = queue_arn(sqs, &url).await?;
    Ok(QueuePair {
        url,
        arn,
        dlq_url,
        dlq_arn,
    })
}

async fn create_queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    attributes: HashMap<QueueAttributeName, String>,
) -> anyhow::Result<String> {
    if let Ok(existing) = sqs.get_queue_url().queue_name(name).send().await {
        return Ok(existing.queue_url.unwrap_or_default());
    }
    let created = sqs
        .create_queue()
        .queue_name(name)
        .set_attributes(Some(attributes))
        .send()
        .await
        .with_context(|| format!("failed to create queue {name}"))?;
    created
        .queue_url
        .context("CreateQueue returned no queue URL")
}

/// The ARN of a queue, from its attributes.
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<String> {
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .with_context(|| format!("failed to read the ARN of queue {url}"))?;
    attrs
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .with_context(|| format!("queue {url} has no QueueArn attribute"))
}

/// What [`provision`] created.
#[derive(Debug, Clone)]
pub struct Stack {
    pub queues: HashMap<&'static str, QueuePair>,
}

/// Creates every queue with its DLQ, the documents bucket and the secret (only if it
/// does not exist yet: an operator's edits to the local secret are kept).
pub async fn provision(
    config: &aws_config::SdkConfig,
    max_receive_count: u32,
    secret_json: &serde_json::Value,
) -> anyhow::Result<Stack> {
    let sqs = aws_sdk_sqs::Client::new(config);
    let mut queues = HashMap::new();
    for name in QUEUES {
        let spec = QueueSpec {
            max_receive_count,
            ..QueueSpec::default()
        };
        queues.insert(name, ensure_queue_with_dlq(&sqs, name, spec).await?);
    }

    ensure_bucket(&crate::aws::s3_client(config), DOCUMENTS_BUCKET).await?;

    let secrets = aws_sdk_secretsmanager::Client::new(config);
    if secrets
        .describe_secret()
        .secret_id(SECRET_ID)
        .send()
        .await
        .is_err()
    {
        secrets
            .create_secret()
            .name(SECRET_ID)
            .secret_string(secret_json.to_string())
            .send()
            .await
            .with_context(|| format!("failed to create secret {SECRET_ID}"))?;
    }
    Ok(Stack { queues })
}

/// Creates the bucket (in eu-central-1) unless it exists.
pub async fn ensure_bucket(s3: &aws_sdk_s3::Client, name: &str) -> anyhow::Result<()> {
    if s3.head_bucket().bucket(name).send().await.is_ok() {
        return Ok(());
    }
    s3.create_bucket()
        .bucket(name)
        .create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::EuCentral1)
                .build(),
        )
        .send()
        .await
        .with_context(|| format!("failed to create bucket {name}"))?;
    Ok(())
}

/// Lambda's SQS poller, locally: receive a batch, invoke, apply the partial response.
#[derive(Debug, Clone)]
pub struct EventSourceMapping {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub queue_arn: String,
    pub batch_size: i32,
    pub wait: Duration,
}

/// What Lambda did with a batch after the function returned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// Message ids deleted from the queue.
    pub deleted: Vec<String>,
    /// Message ids left on the queue (reported as failed, or all of them when the
    /// response was invalid).
    pub kept: Vec<String>,
    /// Whether the response was rejected as a whole (unknown or empty item identifier).
    pub whole_batch_failed: bool,
}

impl EventSourceMapping {
    pub async fn new(sqs: aws_sdk_sqs::Client, queue_url: &str) -> anyhow::Result<Self> {
        let queue_arn = queue_arn(&sqs, queue_url).await?;
        Ok(EventSourceMapping {
            sqs,
            queue_url: queue_url.to_owned(),
            queue_arn,
            batch_size: 10,
            wait: Duration::from_secs(1),
        })
    }

    /// Receives up to `batch_size` messages as a Lambda `SqsEvent`; `None` when the queue
    /// had nothing within `wait`.
    pub async fn poll(&self) -> anyhow::Result<Option<SqsEvent>> {
        let received = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(self.batch_size)
            .wait_time_seconds(self.wait.as_secs() as i32)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .with_context(|| format!("failed to receive from {}", self.queue_url))?;
        let messages = received.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(None);
        }
        let region = self.queue_arn.split(':').nth(3).map(str::to_owned);
        let mut event = SqsEvent::default();
        event.records = messages
            .into_iter()
            .map(|m| {
                let mut record = SqsMessage::default();
                record.message_id = m.message_id;
                record.receipt_handle = m.receipt_handle;
                record.body = m.body;
                record.md5_of_body = m.md5_of_body;
                record.attributes = m
                    .attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v))
                    .collect();
                record.event_source = Some("aws:sqs".into());
                record.event_source_arn = Some(self.queue_arn.clone());
                record.aws_region = region.clone();
                record
            })
            .collect();
        Ok(Some(event))
    }

    /// Applies the function's response as Lambda does with `ReportBatchItemFailures`.
    pub async fn complete(
        &self,
        event: &SqsEvent,
        response: &SqsBatchResponse,
    ) -> anyhow::Result<Completion> {
        let received: HashSet<&str> = event
            .records
            .iter()
            .filter_map(|r| r.message_id.as_deref())
            .collect();
        let failed: HashSet<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        let all_ids = || {
            event
                .records
                .iter()
                .filter_map(|r| r.message_id.clone())
                .collect()
        };
        if failed
            .iter()
            .any(|id| id.is_empty() || !received.contains(id))
        {
            tracing::error!(
                "invalid batch response (empty or unknown itemIdentifier): the whole batch failed"
            );
            return Ok(Completion {
                deleted: vec![],
                kept: all_ids(),
                whole_batch_failed: true,
            });
        }
        let mut completion = Completion::default();
        let mut entries = Vec::new();
        for (i, record) in event.records.iter().enumerate() {
            let id = record.message_id.clone().unwrap_or_default();
            if failed.contains(id.as_str()) {
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
        if !entries.is_empty() {
            let out = self
                .sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .with_context(|| {
                    format!(
                        "failed to delete processed messages from {}",
                        self.queue_url
                    )
                })?;
            if !out.failed.is_empty() {
                anyhow::bail!("DeleteMessageBatch failed for {} entries", out.failed.len());
            }
        }
        Ok(completion)
    }
}
