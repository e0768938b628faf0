//! The document-output function: one SQS message = one `document_output_job` id
//! (seed 002). Built on the shared batch runtime; `process` decides per message:
//!
//! | job state at delivery                    | what happens                                  | outcome   |
//! |------------------------------------------|-----------------------------------------------|-----------|
//! | body not a UUID / no such job            | nothing                                       | `Discard` |
//! | `pending`, or `running` older than stale | claimed (→ `running`), then worked on          | see below |
//! | `running`, fresh                         | another worker has it: no second export       | `Release` |
//! | `dispatched` or `failed`                 | duplicate delivery of finished work            | `Done`    |
//!
//! A claimed job: if an earlier (dead) worker's audit shows the export reached Maesn
//! (task id or terminal status), the job is completed from it (`Done`); an audit that
//! does not say (no task id) leaves the job for repair (`Release`, so the message ends
//! in the DLQ). Otherwise eligibility (failed → `failed`, `Done`), then the export:
//! `dispatched` or `failed` with `last_error` (`Done`). While it works, the heartbeat
//! extends the message's visibility and touches `updated_at`. A database failure that
//! leaves the job `running` returns `Retry` after the stale threshold, so the next
//! delivery can reclaim it.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::datev::{MaesnClient, MaesnConfig};
use docflow::ids::OutputJobId;
use docflow::output::worker::{self, ExportOutcome, Recovery, WorkerSettings};
use docflow::output::{Domain, JobStatus, OutputJob, check_eligibility};
use docflow::{BatchRuntime, Message, Outcome};
use lambda_runtime::LambdaEvent;
use sqlx::PgPool;

/// Everything `process` borrows, built once per cold start.
pub struct Deps {
    pub pool: PgPool,
    pub runtime: BatchRuntime,
    pub s3: aws_sdk_s3::Client,
    pub maesn: MaesnClient,
    pub settings: WorkerSettings,
}

impl Deps {
    /// The shared cold-start wiring plus the S3 and Maesn clients and the worker
    /// settings (`STALE_RUNNING_SECONDS`, `HTTP_RETRY_BASE_MS`, `MAESN_BASE_URL`,
    /// `MAESN_TIMEOUT_SECONDS`).
    pub async fn from_env() -> anyhow::Result<Self> {
        let common = docflow::bootstrap::Common::from_env().await?;
        let env = docflow::settings::process_env();
        let settings = WorkerSettings::from_env(&env, &common.settings.documents_bucket)?;
        let maesn = MaesnClient::new(&MaesnConfig::from_env(&env)?, Arc::new(common.secrets))?;
        Ok(Deps {
            pool: common.pool,
            runtime: common.runtime,
            s3: docflow::aws::s3_client(&common.aws),
            maesn,
            settings,
        })
    }
}

/// The Lambda handler: the shared batch runtime over [`process`].
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(deps.runtime.run(event, |msg| process(deps, msg)).await?)
}

/// Handles one message (see the module docs for the decision table).
pub async fn process(deps: &Deps, msg: Message) -> Outcome {
    let job_id = match OutputJobId::parse(&msg.body) {
        Ok(id) => id,
        Err(e) => return Outcome::discard(e.to_string()),
    };
    msg.record_entity(&job_id);
    let job = match worker::claim(&deps.pool, job_id, deps.settings.stale_running).await {
        Ok(Some(job)) => job,
        Ok(None) => return unclaimed(deps, job_id).await,
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not claim the output job");
            return Outcome::Release;
        }
    };
    tracing::info!(started_at = ?job.started_at, "output job claimed");
    // Seed 002: extend the visibility before starting work, then on every beat.
    let extend_to = deps.runtime.config().heartbeat.extend_to;
    if let Err(e) = msg.set_visibility(extend_to).await {
        tracing::warn!(error.message = %e, error.cause_chain = ?e, "could not extend visibility before work");
    }
    let pool = &deps.pool;
    msg.with_heartbeat(work(deps, &job), || async move {
        if let Err(e) = worker::touch(pool, job_id).await {
            tracing::warn!(error.message = %e, error.cause_chain = ?e, "heartbeat could not touch the job");
        }
    })
    .await
}

/// The claim matched nothing: say why, from the job as it is.
async fn unclaimed(deps: &Deps, job_id: OutputJobId) -> Outcome {
    match worker::load_job(&deps.pool, job_id).await {
        Ok(None) => Outcome::discard(format!("no document output job {job_id}")),
        Ok(Some(job)) => match job.status {
            JobStatus::Dispatched | JobStatus::Failed => {
                tracing::info!(status = ?job.status, "duplicate delivery of a finished job; deleting the message");
                Outcome::Done
            }
            // Running and not stale: its worker is alive, or died less than the stale
            // threshold ago. Come back just after it would turn stale: a plain Release
            // could use up the receives (and land in the DLQ) before the job ever becomes
            // reclaimable, leaving it running for good.
            JobStatus::Running => {
                let stale_at = job.updated_at
                    + chrono::Duration::from_std(deps.settings.stale_running)
                        .unwrap_or(chrono::Duration::MAX);
                let after = (stale_at - chrono::Utc::now())
                    .to_std()
                    .unwrap_or(Duration::ZERO)
                    + Duration::from_secs(2);
                tracing::info!(updated_at = %job.updated_at, retry_after_s = after.as_secs(), "job is held by another worker; retrying once it would be stale");
                Outcome::Retry {
                    after: after.min(docflow::sqs::MAX_VISIBILITY),
                }
            }
            // Claimed and reset in between (should not happen): let the queue bring it back.
            JobStatus::Pending => {
                tracing::info!(status = ?job.status, "job changed under the claim; releasing the message");
                Outcome::Release
            }
        },
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not read the output job");
            Outcome::Release
        }
    }
}

/// The claimed job's work.
async fn work(deps: &Deps, job: &OutputJob) -> Outcome {
    let pool = &deps.pool;
    match worker::linked_audit(pool, job.id).await {
        Ok(Some(audit)) => {
            return match worker::complete_from_audit(pool, job, &audit).await {
                Ok(Recovery::Completed(status)) => {
                    tracing::info!(audit_id = %audit.id, ?status, "stale job completed from its DATEV audit, no new export");
                    Outcome::Done
                }
                Ok(Recovery::Ambiguous) => {
                    tracing::error!(
                        audit_id = %audit.id,
                        audit_status = %audit.status,
                        "stale job's DATEV audit has no task id: Maesn may or may not have the export; \
                         left running for manual repair (no new export)"
                    );
                    let note = format!(
                        "in doubt: DATEV export audit {} has no task id (the worker stopped during the Maesn call); \
                         check DATEV and repair this job by hand",
                        audit.id
                    );
                    if let Err(e) = worker::note_in_doubt(pool, job.id, &note).await {
                        tracing::error!(error.message = %e, error.cause_chain = ?e, "could not record the in-doubt state");
                    }
                    Outcome::Release
                }
                Err(e) => still_running(deps, &e),
            };
        }
        Ok(None) => {}
        Err(e) => return still_running(deps, &e),
    }

    let ineligible = if job.document_domain != Domain::Ap {
        Some("only AP documents have outputs so far".to_owned())
    } else {
        let eligibility = match pool.acquire().await {
            Ok(mut conn) => check_eligibility(&mut conn, job.document_id, Some(job.id)).await,
            Err(e) => Err(e),
        };
        match eligibility {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(format!("not eligible for DATEV export: {why}")),
            Err(e) => return still_running(deps, &e),
        }
    };
    if let Some(error) = ineligible {
        tracing::warn!(%error, "output job failed before export");
        return match worker::mark_failed(pool, job.id, &error).await {
            Ok(_) => Outcome::Done,
            Err(e) => still_running(deps, &e),
        };
    }

    match worker::export(pool, &deps.s3, &deps.maesn, &deps.settings, job).await {
        Ok(ExportOutcome::Dispatched { audit_id, task_id }) => {
            tracing::info!(%audit_id, %task_id, "output job dispatched");
            Outcome::Done
        }
        Ok(ExportOutcome::Failed { error }) => {
            tracing::warn!(%error, "output job failed");
            Outcome::Done
        }
        Err(e) => still_running(deps, &e),
    }
}

/// The job is left `running` because the database did not take the outcome: come back
/// once it is stale, so the next delivery can reclaim it (and find any audit written).
fn still_running(deps: &Deps, e: &(dyn std::error::Error + 'static)) -> Outcome {
    tracing::error!(error.message = %e, error.cause_chain = ?e, "output job left running after a database error");
    Outcome::Retry {
        after: deps.settings.stale_running + Duration::from_secs(5),
    }
}

/// Every AWS API action document output calls (IAM names): what Terraform must grant its
/// role (`tests/tests/iam_calls.rs` holds the two together). Tests that give it AWS
/// clients from `docflow_tests::aws_calls` refuse any call outside this list.
pub fn aws_actions<F: Fn(&str) -> Option<String>>(
    _env: &docflow::settings::Env<F>,
) -> Vec<&'static str> {
    let mut actions = vec!["secretsmanager:GetSecretValue"]; // cold start: the secret
    actions.extend_from_slice(docflow::sqs::AWS_ACTIONS);
    actions.push("s3:GetObject"); // the document's file, attached to the export
    actions
}
