//! The ingestion function: one message = one ingestion id; file → text → structured
//! data (seed 003, with seed 004's retry taxonomy).
//!
//! Per message: parse the id (poison → `Discard`), claim the ingestion with one
//! conditional `UPDATE … RETURNING` (the `started_at` lease; 0 rows → `Discard`), then
//! under a heartbeat that extends the message's visibility and renews the lease:
//! load the document, fetch its file from S3, transcribe it (or reuse the stored
//! transcription), extract, apply the quality gate, complete (the trigger copies the
//! result to the document) and hand matchable documents to the matching queue.
//!
//! Every failure after the claim goes through [`record_failure`]: one statement counts
//! the attempt and fails the ingestion at the last attempt or on a permanent error
//! (`Done`); otherwise the lease is released and the message retried with backoff
//! `min(30·2^(n-1), 600)` s (`Retry`).

mod pipeline;

use std::time::Duration;

use anyhow::Context as _;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::bootstrap::Common;
use docflow::extract::Extractor;
use docflow::ids::IngestionId;
use docflow::llm::{LlmClient, LlmSettings};
use docflow::ocr::Transcriber;
use docflow::retry::ingestion_backoff;
use docflow::settings::{Env, SettingsError, process_env};
use docflow::{BatchRuntime, Failure, Message, Outcome};
use lambda_runtime::LambdaEvent;
use sqlx::PgPool;

pub use pipeline::{Claimed, claim};

/// Time kept back from the invocation to record a failed attempt and set the backoff.
pub const FAILURE_RESERVE: Duration = Duration::from_secs(5);

/// Ingestion's own settings.
#[derive(Debug, Clone)]
pub struct IngestionConfig {
    /// `DOCUMENTS_BUCKET`.
    pub bucket: String,
    /// `MATCHING_QUEUE_URL` (required): where matchable documents go next.
    pub matching_queue_url: String,
    /// `STALE_INGESTION_SECONDS` (default 300): a lease older than this is reclaimable.
    pub stale_after: Duration,
    /// `INGESTION_MAX_ATTEMPTS` (default 3).
    pub max_attempts: i32,
    /// `OCR_QUALITY_THRESHOLD` (default 0.7): below it, images are preprocessed once.
    pub quality_threshold: f64,
    /// `MAX_FILE_BYTES` (default 20 MiB): larger files fail permanently.
    pub max_file_bytes: u64,
}

impl IngestionConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
        bucket: &str,
    ) -> Result<Self, SettingsError> {
        Ok(IngestionConfig {
            bucket: bucket.to_owned(),
            matching_queue_url: env.required("MATCHING_QUEUE_URL")?,
            stale_after: env.seconds_or("STALE_INGESTION_SECONDS", 300)?,
            max_attempts: env.parse_or("INGESTION_MAX_ATTEMPTS", 3)?,
            quality_threshold: env.parse_or("OCR_QUALITY_THRESHOLD", 0.7)?,
            max_file_bytes: env.parse_or("MAX_FILE_BYTES", 20 * 1024 * 1024)?,
        })
    }
}

/// Everything the handler borrows, built once per cold start.
#[derive(Debug)]
pub struct Deps {
    pub pool: PgPool,
    pub s3: aws_sdk_s3::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub runtime: BatchRuntime,
    pub config: IngestionConfig,
    pub transcriber: Transcriber,
    pub extractor: Extractor,
}

impl Deps {
    /// Reads settings (`OCR_PROVIDER` = `native` | `textract`, default `native`; the LLM
    /// settings of [`LlmSettings`]) and builds the clients.
    pub async fn from_env() -> anyhow::Result<Self> {
        let common = Common::from_env().await?;
        let env = process_env();
        let config = IngestionConfig::from_env(&env, &common.settings.documents_bucket)?;
        let transcriber = match env.or("OCR_PROVIDER", "native").as_str() {
            "native" => Transcriber::Native,
            "textract" => Transcriber::Textract(aws_sdk_textract::Client::new(&common.aws)),
            other => anyhow::bail!("OCR_PROVIDER {other:?} is not one of native, textract"),
        };
        let llm = LlmClient::from_secret(&LlmSettings::from_env(&env)?, &common.secrets)
            .await
            .context("failed to build the LLM client")?;
        let extractor = match llm {
            Some(client) => Extractor::Llm(client),
            None => Extractor::Rules,
        };
        Ok(Deps {
            s3: docflow::aws::s3_client(&common.aws),
            sqs: common.sqs,
            pool: common.pool,
            runtime: common.runtime,
            config,
            transcriber,
            extractor,
        })
    }
}

/// The Lambda handler: the batch runtime around [`process`].
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(deps
        .runtime
        .run(event, |message| process(deps, message))
        .await?)
}

/// Processes one ingestion message.
pub async fn process(deps: &Deps, message: Message) -> Outcome {
    let id = match IngestionId::parse(&message.body) {
        Ok(id) => id,
        Err(e) => return Outcome::discard(e.to_string()),
    };
    message.record_entity(&id);

    let claimed = match claim(&deps.pool, id, deps.config.stale_after).await {
        Ok(Some(claimed)) => claimed,
        Ok(None) => return Outcome::discard(pipeline::why_not_claimable(&deps.pool, id).await),
        Err(e) => {
            // Nothing was claimed, so no attempt is counted: let the queue retry.
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not claim the ingestion");
            return Outcome::Release;
        }
    };

    let work = message.within_deadline(FAILURE_RESERVE, pipeline::run(deps, &claimed));
    let renew_lease = || pipeline::renew_lease(&deps.pool, id);
    match message.with_heartbeat(work, renew_lease).await {
        Ok(Ok(())) => Outcome::Done,
        Ok(Err(failure)) => record_failure(deps, id, &failure).await,
        // Counted like any transient failure, so a document whose extraction never fits
        // in the function's timeout ends `failed` instead of cycling to the DLQ.
        Err(out_of_time) => record_failure(deps, id, &Failure::transient(out_of_time)).await,
    }
}

/// Counts the attempt and decides the message's fate, in one statement (seed 003's
/// unified failure handling).
async fn record_failure(deps: &Deps, id: IngestionId, failure: &Failure) -> Outcome {
    let permanent = !docflow::Classify::is_transient(failure);
    let error = failure.to_string();
    tracing::warn!(permanent, error.message = %error, error.cause_chain = ?failure, "ingestion attempt failed");
    match pipeline::count_failed_attempt(
        &deps.pool,
        id,
        permanent,
        deps.config.max_attempts,
        &error,
    )
    .await
    {
        Ok(Some((attempts, status))) if status == "failed" => {
            tracing::error!(
                attempts,
                "ingestion failed for good; the document needs human review"
            );
            Outcome::Done
        }
        Ok(Some((attempts, _))) => Outcome::Retry {
            after: ingestion_backoff(attempts as u32),
        },
        Ok(None) => {
            tracing::warn!("ingestion was finished elsewhere while this attempt failed");
            Outcome::Done
        }
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not record the failed attempt");
            Outcome::Release
        }
    }
}
