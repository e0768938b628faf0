//! The local stack and a local event-source mapping, for development, tests, the
//! demo, the soak and the bench.
//!
//! - [`provision`] creates what Terraform creates in AWS — every queue with its DLQ and
//!   redrive policy, the documents bucket, the secret — on the local emulator,
//!   idempotently.
//! - [`EventSourceMapping`] does what Lambda's SQS event source mapping does with one
//!   batch: receives it (batch size, batching window, the 6 MB payload limit), builds a
//!   real `SqsEvent`, invokes a function ([`Invoke`]: in process, or over HTTP through
//!   `cargo lambda watch`), and applies the result exactly as Lambda does with
//!   `ReportBatchItemFailures` ([`interpret`]): every record not listed is deleted; an
//!   error, a timeout or an invalid response (unknown or empty `itemIdentifier`, not
//!   JSON) fails the whole batch and deletes nothing.
//! - [`Runner`] runs several mappings at once (a maximum concurrency per queue, like
//!   `ScalingConfig.MaximumConcurrency`) plus a scheduled function (the sweeper), until
//!   stopped or, with `until_idle`, until every queue is empty, nothing is in flight and
//!   the scheduled function finds nothing.
//!
//! There is one implementation of these semantics: the tests, `docflow local run`, `make
//! demo`, the soak and the bench all use it.

pub mod database;
mod invoke;
mod mapping;
mod runner;

pub use invoke::{BoxFuture, HttpInvoke, InProcess, Invocation, Invoke, lambda_context};
pub use mapping::{Completion, EventSourceMapping, MAX_PAYLOAD_BYTES, Verdict, interpret};
pub use runner::{
    Observer, QueueStats, RunOptions, RunReport, Runner, Scheduled, Source, SweepSummary, depth,
};

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use aws_sdk_sqs::types::QueueAttributeName;

/// The queues docflow runs on (locally; in AWS with an environment prefix).
pub const QUEUES: [&str; 3] = [
    "docflow-ingestion",
    "docflow-matching",
    "docflow-document-output",
];
/// Each queue-triggered function's timeout in AWS (infra/main.tf `timeout_seconds`):
/// locally the deadline of each invocation too.
pub fn function_timeout(function: &str) -> Duration {
    Duration::from_secs(match function {
        "ingestion" => 300,
        _ => 120,
    })
}

/// The visibility timeout a local source queue gets: 6 × its function's timeout, as
/// infra/modules/queue-function sets it in AWS (AWS's guidance for SQS event sources).
/// A default 60 s would equal the heartbeat interval (`HEARTBEAT_SECONDS`, 60): a
/// message would reappear at the very moment its first heartbeat extends it, and a run
/// longer than a minute would be delivered twice.
pub fn source_visibility(queue: &str) -> Duration {
    let function = queue.strip_prefix("docflow-").unwrap_or(queue);
    6 * function_timeout(function)
}

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
    config: &docflow::aws::SdkConfig,
    max_receive_count: u32,
    secret_json: &serde_json::Value,
) -> anyhow::Result<Stack> {
    let sqs = aws_sdk_sqs::Client::new(config);
    let mut queues = HashMap::new();
    for name in QUEUES {
        let spec = QueueSpec {
            max_receive_count,
            visibility_timeout: source_visibility(name),
            ..QueueSpec::default()
        };
        queues.insert(name, ensure_queue_with_dlq(&sqs, name, spec).await?);
    }

    ensure_bucket(&docflow::aws::s3_client(config), DOCUMENTS_BUCKET).await?;

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
