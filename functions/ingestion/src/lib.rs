//! The ingestion function: one message = one ingestion id; file → text → structured
//! data (seed 003, with seed 004's retry taxonomy).
//!
//! Per message: parse the id (poison → `Discard`), claim the ingestion with one
//! conditional `UPDATE … RETURNING` (the `started_at` lease, owned by the claim's fresh
//! `claim_token`, which every later write matches: see `lease.rs`). A claim that finds the
//! work finished or unknown → `Discard`; one that meets a live lease → `Retry` until the
//! lease would be stale (the message may still be needed: it can be the redelivery of a
//! message whose worker is alive, or the only copy once that worker fails). Then, under
//! a heartbeat that renews the lease and extends the message's visibility beyond the
//! stale threshold: load the document, fetch its file from S3, transcribe it (or reuse
//! the stored transcription), extract, apply the quality gate, complete (the trigger
//! copies the result to the document) and hand matchable documents to the matching queue.
//!
//! Every failure after the claim goes through [`record_failure`]: one statement counts
//! the attempt and fails the ingestion at the last attempt, on a permanent error, or on
//! the message's final receive (`Done`); otherwise the lease is released and the message
//! retried with backoff `min(30·2^(n-1), 600)` s (`Retry`). Work that cannot even be
//! recorded stays `in-progress` with its lease free or going stale, which is what the
//! sweeper finds (docs/sweeper.md). An attempt whose lease another delivery took over
//! writes nothing: its failure is not counted, and its message is kept or dropped as for
//! a delivery that claimed nothing.

mod einvoice;
mod lease;
mod pipeline;
mod store;
mod transcribe;

use std::time::Duration;

use anyhow::Context as _;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::bootstrap::Common;
use docflow::extract::Extractor;
use docflow::ids::IngestionId;
use docflow::llm::{LlmClient, LlmSettings};
use docflow::ocr::Transcriber;
use docflow::retry::ingestion_backoff;
use docflow::secrets::SecretStore;
use docflow::settings::{Env, Settings, SettingsError, process_env};
use docflow::sqs::{BatchConfig, Heartbeat};
use docflow::telemetry::metrics;
use docflow::{BatchRuntime, DiscardKind, Failure, Message, Outcome};
use lambda_runtime::LambdaEvent;
use sqlx::PgPool;

pub use lease::{Claimed, claim, count_failed_attempt, renew_lease};

pub use pipeline::HandOff;

/// The steps after the claim, for a record this delivery claimed: what [`process`] runs
/// under the deadline and the heartbeat (here with a hand-off of its own instead of the
/// batch's). Public so tests can interleave two workers.
pub async fn run_claimed(deps: &Deps, claimed: &Claimed) -> Result<HandOff, Failure> {
    pipeline::run(deps, claimed, None).await
}

/// When a message whose hand-off to matching failed comes back: it then sends the
/// hand-off again ([`pipeline::resend_hand_off`]).
pub const HAND_OFF_RETRY: Duration = Duration::from_secs(30);

/// Time kept back from the invocation to record a failed attempt and set the backoff.
/// A record with less than this left is not started at all.
pub const FAILURE_RESERVE: Duration = Duration::from_secs(5);

/// How far beyond the stale threshold the heartbeat keeps the message hidden, and a
/// delivery that met a live lease waits: a redelivery then finds the lease stale (its
/// worker died) or the work finished, never a lease renewed moments earlier.
pub const LEASE_MARGIN: Duration = Duration::from_secs(60);

/// Ingestion's own settings.
#[derive(Debug, Clone)]
pub struct IngestionConfig {
    /// `DOCUMENTS_BUCKET`.
    pub bucket: String,
    /// `MATCHING_QUEUE_URL` (required): where matchable documents go next.
    pub matching_queue_url: String,
    /// `STALE_INGESTION_SECONDS` (default 300): a lease older than this is reclaimable.
    pub stale_after: Duration,
    /// `INGESTION_MAX_ATTEMPTS` (default 3, at most `MAX_RECEIVE_COUNT`).
    pub max_attempts: i32,
    /// `OCR_QUALITY_THRESHOLD` (default 0.7): below it, a scan is preprocessed once.
    pub quality_threshold: f64,
    /// `MAX_FILE_BYTES` (default 20 MiB): larger files fail permanently, checked while
    /// the file is read.
    pub max_file_bytes: u64,
}

impl IngestionConfig {
    /// Reads and validates the settings. How they fit the batch runtime's
    /// (`INGESTION_MAX_ATTEMPTS` against `MAX_RECEIVE_COUNT`, the heartbeat against the
    /// stale threshold) is checked by [`batch_config`].
    pub fn from_env<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
        bucket: &str,
    ) -> Result<Self, SettingsError> {
        let config = IngestionConfig {
            bucket: bucket.to_owned(),
            matching_queue_url: env.required("MATCHING_QUEUE_URL")?,
            stale_after: env.seconds_or("STALE_INGESTION_SECONDS", 300)?,
            max_attempts: env.parse_or("INGESTION_MAX_ATTEMPTS", 3)?,
            quality_threshold: env.parse_or("OCR_QUALITY_THRESHOLD", 0.7)?,
            max_file_bytes: env.parse_or("MAX_FILE_BYTES", 20 * 1024 * 1024)?,
        };
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), SettingsError> {
        if self.stale_after.is_zero() {
            return Err(SettingsError::Invalid {
                var: "STALE_INGESTION_SECONDS",
                reason: "must be at least 1".into(),
            });
        }
        if !(0.0..=1.0).contains(&self.quality_threshold) {
            return Err(SettingsError::Invalid {
                var: "OCR_QUALITY_THRESHOLD",
                reason: "must be between 0 and 1".into(),
            });
        }
        if self.max_file_bytes == 0 {
            return Err(SettingsError::Invalid {
                var: "MAX_FILE_BYTES",
                reason: "must be at least 1".into(),
            });
        }
        Ok(())
    }
}

/// The batch runtime's configuration for ingestion: the heartbeat keeps the message
/// hidden beyond the stale threshold (`STALE_INGESTION_SECONDS` + [`LEASE_MARGIN`], or
/// `HEARTBEAT_EXTEND_SECONDS` when longer), and a record is not started with less than
/// [`FAILURE_RESERVE`] left. Fails (at cold start) when `INGESTION_MAX_ATTEMPTS` is not
/// between 1 and `MAX_RECEIVE_COUNT` — a receive counts at most one attempt, so a
/// larger limit is never reached before the message goes to the DLQ — or when the
/// heartbeat would not renew the lease before it goes stale.
pub fn batch_config(
    base: BatchConfig,
    config: &IngestionConfig,
) -> Result<BatchConfig, SettingsError> {
    let receives = base.receive_policy.max_receive_count;
    if config.max_attempts < 1 || config.max_attempts as u32 > receives {
        return Err(SettingsError::Invalid {
            var: "INGESTION_MAX_ATTEMPTS",
            reason: format!(
                "must be between 1 and MAX_RECEIVE_COUNT ({receives}): a receive counts at most \
                 one attempt, so a larger limit is never reached before the message goes to the DLQ"
            ),
        });
    }
    if base.heartbeat.every >= config.stale_after {
        return Err(SettingsError::Invalid {
            var: "HEARTBEAT_SECONDS",
            reason: "must be less than STALE_INGESTION_SECONDS, or the lease goes stale between two renewals"
                .into(),
        });
    }
    Ok(BatchConfig {
        heartbeat: Heartbeat {
            every: base.heartbeat.every,
            extend_to: base
                .heartbeat
                .extend_to
                .max(config.stale_after + LEASE_MARGIN),
        },
        start_reserve: FAILURE_RESERVE,
        ..base
    })
}

/// Every AWS API action ingestion calls (IAM names), for the environment it runs in:
/// what Terraform must grant its role. `tests/tests/it/iam_calls.rs` checks the grants;
/// the ingestion tests refuse any call outside this list.
pub fn aws_actions<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Vec<&'static str> {
    let mut actions = vec!["secretsmanager:GetSecretValue"]; // cold start: the secret
    actions.extend_from_slice(docflow::sqs::AWS_ACTIONS);
    actions.extend_from_slice(&[
        "s3:GetObject",    // documents/ and the stored transcription
        "s3:PutObject",    // ingestions/: OCR output and preprocessed files
        "sqs:SendMessage", // the matching queue (SendMessageBatch)
    ]);
    if env.or("OCR_PROVIDER", "native") == "textract" {
        actions.extend_from_slice(docflow::ocr::TEXTRACT_AWS_ACTIONS);
    }
    actions
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
        // The sandbox's check (a child started and answering, about 1.5 ms) runs while
        // the wiring waits on the network (the secret fetch), not after it.
        let sandbox = tokio::spawn(docflow::sandbox::check());
        let common = Common::from_env().await?;
        let s3 = docflow::aws::s3_client(&common.aws);
        Self::assemble(
            &process_env(),
            &common.settings,
            &common.aws,
            (common.pool, common.sqs, s3),
            &common.secrets,
            async move {
                sandbox.await.map_err(|e| {
                    docflow::ocr::OcrError::Sandbox(format!("the check panicked: {e}"))
                })?
            },
        )
        .await
    }

    /// Builds the dependencies from the parts every function shares — what
    /// [`Deps::from_env`] does at cold start, and what a local runner (the CLI) should
    /// call so that it runs ingestion exactly as Lambda does (its batch configuration
    /// included, see [`batch_config`]).
    pub async fn build<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
        settings: &Settings,
        aws: &docflow::aws::SdkConfig,
        pool: PgPool,
        sqs: aws_sdk_sqs::Client,
        s3: aws_sdk_s3::Client,
        secrets: &SecretStore,
    ) -> anyhow::Result<Self> {
        Self::assemble(
            env,
            settings,
            aws,
            (pool, sqs, s3),
            secrets,
            docflow::sandbox::check(),
        )
        .await
    }

    /// [`Deps::build`] with the parsing sandbox's check already under way.
    async fn assemble<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
        settings: &Settings,
        aws: &docflow::aws::SdkConfig,
        (pool, sqs, s3): (PgPool, aws_sdk_sqs::Client, aws_sdk_s3::Client),
        secrets: &SecretStore,
        sandbox_check: impl std::future::Future<
            Output = Result<std::time::Duration, docflow::ocr::OcrError>,
        >,
    ) -> anyhow::Result<Self> {
        let config = IngestionConfig::from_env(env, &settings.documents_bucket)?;
        let runtime = BatchRuntime::new(sqs.clone(), batch_config(settings.batch, &config)?)
            .with_database_gate(pool.clone());
        let transcriber = match env.or("OCR_PROVIDER", "native").as_str() {
            "native" => Transcriber::Native,
            "textract" => Transcriber::Textract(aws_sdk_textract::Client::new(aws)),
            other => anyhow::bail!("OCR_PROVIDER {other:?} is not one of native, textract"),
        };
        let llm = LlmClient::from_secret(&LlmSettings::from_env(env)?, secrets)
            .await
            .context("failed to build the LLM client")?;
        let extractor = match llm {
            Some(client) => Extractor::Llm(client),
            None => Extractor::Rules,
        };
        // A package whose binary cannot run its own parsing sandbox fails its cold start,
        // not every document.
        let took = sandbox_check
            .await
            .context("the parsing sandbox cannot run")?;
        match docflow::sandbox::mode() {
            docflow::sandbox::Mode::InProcess => tracing::warn!(
                sandbox = %docflow::sandbox::describe(),
                "untrusted files are parsed without a child process"
            ),
            docflow::sandbox::Mode::Child { .. } => tracing::info!(
                sandbox = %docflow::sandbox::describe(),
                check_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
                "untrusted files are parsed in the sandbox"
            ),
        }
        Ok(Deps {
            pool,
            s3,
            sqs,
            runtime,
            config,
            transcriber,
            extractor,
        })
    }
}

/// This function's name in its metrics (`function` dimension) and batch span.
pub const FUNCTION: &str = "ingestion";

/// The Lambda handler: the batch runtime around [`process`].
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(deps
        .runtime
        .run_as(FUNCTION, event, |message| process(deps, message))
        .await?)
}

/// Processes one ingestion message.
pub async fn process(deps: &Deps, message: Message) -> Outcome {
    let id = match IngestionId::parse(&message.body) {
        Ok(id) => id,
        Err(e) => return Outcome::discard_as(DiscardKind::NotAnId, e.to_string()),
    };
    message.record_entity(&id);

    let claimed = match metrics::stage(
        metrics::stages::CLAIM,
        claim(&deps.pool, id, deps.config.stale_after),
    )
    .await
    {
        Ok(Some(claimed)) => claimed,
        Ok(None) => {
            if let Some(hand_off) = Box::pin(pipeline::resend_hand_off(deps, id, &message)).await {
                return after_hand_off(&message, hand_off);
            }
            return lease::unclaimed(&deps.pool, id, deps.config.stale_after).await;
        }
        Err(e) => {
            // Nothing was claimed, so no attempt is counted: let the queue retry. On the
            // final receive the message goes to the DLQ and the row stays in progress
            // with its lease as it was (free or stale): the sweeper finds it.
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not claim the ingestion");
            return Outcome::Release;
        }
    };

    message.record_document(&claimed.document_id);
    message.record_tenant(&claimed.tenant_id);
    // On the heap: the pipeline's future is large, and it is moved into the lease watch
    // and the heartbeat below.
    let work = Box::pin(message.within_deadline(
        FAILURE_RESERVE,
        pipeline::run(deps, &claimed, Some(&message)),
    ));
    // A beat that finds the lease gone (finished, or taken over by another delivery after
    // it went stale) stops this attempt: it would pay Textract and the LLM for a result
    // that is no longer its to write.
    let (lost, mut lost_seen) = tokio::sync::watch::channel(false);
    let renew_lease = || async {
        if !lease::renew_lease(&deps.pool, &claimed).await {
            lost.send_replace(true);
        }
    };
    let work = async {
        tokio::select! {
            biased;
            out = work => out,
            () = lease_gone(&mut lost_seen) => {
                tracing::warn!("the ingestion lease was lost while this attempt ran; stopping it");
                Ok(Err(lease::lease_lost()))
            }
        }
    };
    match message.with_heartbeat(work, renew_lease).await {
        Ok(Ok(hand_off)) => after_hand_off(&message, hand_off),
        Ok(Err(failure)) => record_failure(deps, &message, &claimed, &failure).await,
        // Counted like any transient failure, so a document whose extraction never fits
        // in the function's timeout ends `failed` instead of cycling to the DLQ.
        Err(out_of_time) => {
            record_failure(deps, &message, &claimed, &Failure::transient(out_of_time)).await
        }
    }
}

/// Completes once a heartbeat found the lease gone; never otherwise.
async fn lease_gone(seen: &mut tokio::sync::watch::Receiver<bool>) {
    if seen.wait_for(|lost| *lost).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The outcome of a completed ingestion: `Done`, unless its hand-off to matching
/// failed — then the message comes back after [`HAND_OFF_RETRY`] to send it again, but
/// on the final receive it is deleted and the sweeper re-sends the pending document (the
/// DLQ holds no finished work).
fn after_hand_off(message: &Message, hand_off: HandOff) -> Outcome {
    match hand_off {
        HandOff::NotNeeded | HandOff::Sent => Outcome::Done,
        HandOff::Failed if message.is_final_receive() => {
            tracing::error!(
                "final receive: the hand-off to matching failed; the document stays matching pending,                  where the sweeper finds and re-sends it"
            );
            Outcome::Done
        }
        HandOff::Failed => Outcome::Retry {
            after: HAND_OFF_RETRY,
        },
    }
}

/// Counts the attempt and decides the message's fate, in one statement (seed 003's
/// unified failure handling). A permanent failure, the last attempt, and any failure on
/// the message's final receive fail the ingestion (`Done`): after the final receive the
/// message is in the DLQ, and the row must not stay `in-progress` for ever.
async fn record_failure(
    deps: &Deps,
    message: &Message,
    claimed: &Claimed,
    failure: &Failure,
) -> Outcome {
    let permanent = !docflow::Classify::is_transient(failure);
    let final_receive = message.is_final_receive();
    let error = failure.to_string();
    tracing::warn!(permanent, final_receive, error.message = %error, error.cause_chain = ?failure, "ingestion attempt failed");
    match lease::count_failed_attempt(
        &deps.pool,
        claimed,
        permanent || final_receive,
        deps.config.max_attempts,
        &error,
    )
    .await
    {
        Ok(Some((attempts, status))) if status == "failed" => {
            tracing::error!(
                attempts,
                permanent,
                final_receive,
                "ingestion failed for good; the document needs human review"
            );
            metrics::failed_permanently();
            Outcome::Done
        }
        Ok(Some((attempts, _))) => Outcome::Retry {
            after: ingestion_backoff(attempts as u32),
        },
        Ok(None) => {
            // Finished, or claimed by another delivery, while this attempt ran: not ours
            // to count. The message goes as one that claimed nothing: dropped when the
            // work is finished, kept (until the live lease would be stale) otherwise —
            // it may be the very message the live worker needs to retry with.
            tracing::warn!("the ingestion is no longer ours; this failed attempt is not counted");
            // Completed by this very attempt, which then ran out of time while its
            // hand-off waited: keep the message, so that it sends the hand-off again.
            if let Ok(Some(_)) = pipeline::owed_hand_off(&deps.pool, IngestionId(claimed.id)).await
                && !final_receive
            {
                tracing::warn!(
                    "the ingestion completed but its hand-off to matching is owed; retrying to send it"
                );
                return Outcome::Retry {
                    after: HAND_OFF_RETRY,
                };
            }
            lease::unclaimed(&deps.pool, IngestionId(claimed.id), deps.config.stale_after).await
        }
        Err(e) => {
            // The row keeps this attempt's lease, which goes stale: the sweeper (or the
            // redelivery) finds it.
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not record the failed attempt");
            Outcome::Release
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        docflow::settings::fixed_env(vars)
    }

    fn receives(n: u32) -> BatchConfig {
        BatchConfig {
            receive_policy: docflow::retry::ReceivePolicy {
                max_receive_count: n,
            },
            ..BatchConfig::default()
        }
    }

    #[test]
    fn more_attempts_than_receives_are_rejected_at_cold_start() {
        let vars = [("MATCHING_QUEUE_URL", "q"), ("INGESTION_MAX_ATTEMPTS", "4")];
        let config = IngestionConfig::from_env(&env(&vars), "b").unwrap();
        let err = batch_config(receives(3), &config).unwrap_err();
        assert!(err.to_string().contains("INGESTION_MAX_ATTEMPTS"), "{err}");
        assert!(batch_config(receives(5), &config).is_ok());
        let zero = [("MATCHING_QUEUE_URL", "q"), ("INGESTION_MAX_ATTEMPTS", "0")];
        let config = IngestionConfig::from_env(&env(&zero), "b").unwrap();
        assert!(batch_config(receives(3), &config).is_err());
    }

    #[test]
    fn the_heartbeat_outlasts_the_stale_threshold_and_a_record_needs_its_reserve_to_start() {
        let config = IngestionConfig::from_env(&env(&[("MATCHING_QUEUE_URL", "q")]), "b").unwrap();
        let batch = batch_config(receives(3), &config).unwrap();
        assert!(batch.heartbeat.extend_to > config.stale_after);
        assert_eq!(batch.heartbeat.extend_to, Duration::from_secs(360));
        assert_eq!(batch.start_reserve, FAILURE_RESERVE);
    }

    #[test]
    fn a_heartbeat_slower_than_the_stale_threshold_is_rejected() {
        let config = IngestionConfig::from_env(
            &env(&[
                ("MATCHING_QUEUE_URL", "q"),
                ("STALE_INGESTION_SECONDS", "60"),
            ]),
            "b",
        )
        .unwrap();
        let err = batch_config(receives(3), &config).unwrap_err();
        assert!(err.to_string().contains("HEARTBEAT_SECONDS"), "{err}");
    }

    #[test]
    fn textract_actions_are_declared_only_when_textract_is_the_ocr_provider() {
        let native = aws_actions(&env(&[]));
        assert!(native.contains(&"sqs:ChangeMessageVisibility"));
        assert!(!native.iter().any(|a| a.starts_with("textract:")));
        let textract = aws_actions(&env(&[("OCR_PROVIDER", "textract")]));
        assert!(textract.contains(&"textract:StartDocumentTextDetection"));
        assert!(textract.contains(&"textract:GetDocumentTextDetection"));
    }
}
