//! The document-output function: one SQS message = one `document_output_job` id
//! (seed 002). Built on the shared batch runtime; `process` decides per message:
//!
//! | job state at delivery                    | what happens                                   | outcome   |
//! |------------------------------------------|------------------------------------------------|-----------|
//! | body not a UUID / no such job            | nothing                                        | `Discard` |
//! | `pending`, or `running` older than stale | claimed (→ `running`, new claim token), worked | see below |
//! | `running`, fresh                         | another worker has it: no second export        | `Retry` until just after it would turn stale |
//! | `dispatched` or `failed`                 | duplicate delivery of finished work            | `Done`    |
//! | `pending`, parked (`not_before` ahead)    | not before its time; the sweeper re-sends it    | `Done`    |
//! | a status docflow does not know, or a claimed job whose `document_domain`/`trigger` it does not know (a label the app added later) | `failed` at once, `last_error` names the column and the value, admins notified | `Done` |
//!
//! A claimed job: an audit left by an earlier attempt decides first ([`worker::recover`]):
//! a task id → `dispatched`; failed for good → `failed`; no task id and no outcome (the
//! worker died during the Maesn call) → `failed` **in doubt**, admins notified, no new
//! export. A refused earlier attempt (failed, retryable) lets the export run again.
//! Then eligibility (failed → `failed`, notified), then the export:
//!
//! | export outcome                          | job                        | admins   | message |
//! |-----------------------------------------|----------------------------|----------|---------|
//! | accepted (task id)                      | `dispatched`               | —        | `Done`  |
//! | in doubt / lasting refusal              | `failed`                   | notified | `Done`  |
//! | passing refusal, not the final receive  | `pending`, `last_error`    | —        | `Retry{max(Retry-After, 60 s·2^(n−1)) ≤ 900 s}` |
//! | passing refusal on the final receive    | `failed`                   | notified | `Done`  |
//! | passing refusal whose `Retry-After` is longer than the longest backoff (any receive) | `pending`, `not_before` = now + `Retry-After` (at most a day): parked | — | `Done` (the sweeper sends it again after `not_before`) |
//! | too little time left to call Maesn      | `pending`                  | —        | `Retry{0}`, or on the final receive `Release` (the sweeper re-sends the pending job) |
//! | the database did not take the outcome   | stays `running`            | —        | `Retry{stale + 5 s}` (the next delivery, or the sweeper, reclaims it once stale) |
//!
//! While it works, the heartbeat extends the message's visibility and touches
//! `updated_at` (only while the claim token still holds). On the final receive every
//! path that leaves work unfinished leaves the job `pending` or `running` — the states
//! the sweeper finds (docs/sweeper.md) — and says so in the log.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::datev::{MaesnClient, MaesnConfig};
use docflow::db::Held;
use docflow::ids::OutputJobId;
use docflow::notify::{AdminNotice, Notifier, NotifySettings};
use docflow::output::worker::{
    self, Attempt, ClaimError, Claimed, ExportOutcome, Recovery, Unclaimed, Unworkable,
    WorkerSettings,
};
use docflow::output::{Domain, JobStatus, check_eligibility};
use docflow::retry::ReceivePolicy;
use docflow::sqs::BatchConfig;
use docflow::telemetry::metrics::{self, output as m};
use docflow::{BatchRuntime, DiscardKind, Message, Outcome};
use lambda_runtime::LambdaEvent;
use sqlx::PgPool;
use uuid::Uuid;

/// Title of the admin notification for an export that may have reached DATEV.
pub const IN_DOUBT_TITLE: &str = "DATEV export in doubt: check DATEV before exporting again";
/// Title of the admin notification for every other failed output job.
pub const FAILURE_TITLE: &str = "Document output failed";

/// Everything `process` borrows, built once per cold start.
pub struct Deps {
    pub pool: PgPool,
    pub runtime: BatchRuntime,
    pub s3: aws_sdk_s3::Client,
    pub maesn: MaesnClient,
    pub settings: WorkerSettings,
    pub notifier: Notifier,
    pub receive_policy: ReceivePolicy,
}

impl Deps {
    /// The shared cold-start wiring plus the S3 and Maesn clients, the notification
    /// channels and the worker settings (`STALE_RUNNING_SECONDS`, `HTTP_RETRY_BASE_MS`,
    /// `OUTPUT_BACKOFF_*`, `OUTPUT_RECORD_RESERVE_SECONDS`, `MAESN_*`,
    /// `DATEV_CREDENTIALS_PREFIX`, the notification settings). Fails when the stale
    /// threshold is too short for the heartbeat and Maesn's timeouts.
    pub async fn from_env() -> anyhow::Result<Self> {
        let common = docflow::bootstrap::Common::from_env().await?;
        let env = docflow::settings::process_env();
        let maesn_config = MaesnConfig::from_env(&env)?;
        let settings = WorkerSettings::from_env(
            &env,
            &common.settings.documents_bucket,
            &common.settings.batch.heartbeat,
            &maesn_config,
        )?;
        let notifier = Notifier::from_settings(
            &NotifySettings::from_env(&env)?,
            &common.secrets,
            &common.aws,
        )
        .await?;
        let maesn = MaesnClient::new(&maesn_config, Arc::new(common.secrets))?;
        Ok(Deps {
            pool: common.pool.clone(),
            runtime: BatchRuntime::new(common.sqs.clone(), batch_config(common.settings.batch))
                .with_database_gate(common.pool.clone()),
            s3: docflow::aws::s3_client(&common.aws),
            maesn,
            settings,
            notifier,
            receive_policy: common.settings.receive_policy,
        })
    }
}

/// This function's name in its metrics (`function` dimension) and batch span.
pub const FUNCTION: &str = "document-output";

/// The batch runtime's configuration for document output: seed 002's extension before
/// work, which the runtime makes for the whole batch at once
/// ([`BatchConfig::extend_before_work`]: skipped when what is left of the receive's
/// visibility covers it, else one `ChangeMessageVisibilityBatch` per 10 records).
pub fn batch_config(base: BatchConfig) -> BatchConfig {
    BatchConfig {
        extend_before_work: true,
        ..base
    }
}

/// The Lambda handler: the shared batch runtime over [`process`].
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(deps
        .runtime
        .run_as(FUNCTION, event, |msg| process(deps, msg))
        .await?)
}

/// Handles one message (see the module docs for the decision tables).
pub async fn process(deps: &Deps, msg: Message) -> Outcome {
    let job_id = match OutputJobId::parse(&msg.body) {
        Ok(id) => id,
        Err(e) => return Outcome::discard_as(DiscardKind::NotAnId, e.to_string()),
    };
    msg.record_entity(&job_id);
    let final_receive = deps.receive_policy.is_final(msg.receive_count);
    let claim = match metrics::stage(
        metrics::stages::CLAIM,
        worker::claim(&deps.pool, job_id, deps.settings.stale_running),
    )
    .await
    {
        Ok(Some(claim)) => claim,
        Ok(None) => return unclaimed(deps, &msg, job_id, final_receive).await,
        Err(ClaimError::Unworkable(job)) => {
            return unworkable(deps, &msg, &job, final_receive).await;
        }
        Err(ClaimError::Database(e)) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not claim the output job");
            if final_receive {
                tracing::error!(
                    "final receive: the job could not be claimed and keeps its state (pending or \
                     running), where the sweeper finds it; the message goes to the DLQ"
                );
            }
            return Outcome::Release;
        }
    };
    msg.record_document(&claim.job.document_id);
    msg.record_tenant(&claim.job.tenant_id);
    tracing::info!(started_at = ?claim.job.started_at, "output job claimed");
    // Seed 002's extension before work was made (or found unneeded) by the runtime for
    // the whole batch ([`batch_config`]); the heartbeat extends on every beat (never
    // shortening what the queue's own timeout still gives the message).
    let pool = &deps.pool;
    let claim_ref = &claim;
    msg.with_heartbeat(work(deps, &msg, &claim, final_receive), || async move {
        match worker::touch(pool, claim_ref).await {
            Ok(Held::Held) => {}
            Ok(Held::Lost) => tracing::warn!("heartbeat: the job's claim was lost (taken over or finished)"),
            Err(e) => {
                tracing::warn!(error.message = %e, error.cause_chain = ?e, "heartbeat could not touch the job")
            }
        }
    })
    .await
}

/// The claim matched nothing: say why, from the job as it is.
async fn unclaimed(
    deps: &Deps,
    msg: &Message,
    job_id: OutputJobId,
    final_receive: bool,
) -> Outcome {
    match worker::unclaimed_state(&deps.pool, job_id).await {
        Ok(None) => Outcome::discard_as(
            DiscardKind::Unknown,
            format!("no document output job {job_id}"),
        ),
        Ok(Some(Unclaimed {
            status: Err(job), ..
        })) => unworkable(deps, msg, &job, final_receive).await,
        Ok(Some(
            job @ Unclaimed {
                status: Ok(status), ..
            },
        )) => match status {
            JobStatus::Dispatched | JobStatus::Failed => {
                tracing::info!(status = ?status, "duplicate delivery of a finished job; deleting the message");
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
                if final_receive {
                    tracing::warn!(
                        updated_at = %job.updated_at,
                        receive_count = msg.receive_count,
                        "final receive of a job held by another worker: the job stays running; if \
                         its worker died, the sweeper re-sends it once updated_at is older than \
                         STALE_RUNNING_SECONDS; this message goes to the DLQ"
                    );
                } else {
                    tracing::info!(updated_at = %job.updated_at, retry_after_s = after.as_secs(), "job is held by another worker; retrying once it would be stale");
                }
                Outcome::Retry {
                    after: after.min(docflow::sqs::MAX_VISIBILITY),
                }
            }
            // Parked (Maesn asked to wait longer than a backoff): not before its time.
            // This message is a duplicate or an early re-send; the sweeper sends the job
            // again once `not_before` has passed, so it is deleted.
            JobStatus::Pending
                if job
                    .not_before
                    .is_some_and(|until| until > chrono::Utc::now()) =>
            {
                tracing::info!(
                    not_before = ?job.not_before,
                    "the job is parked until Maesn's Retry-After has passed; the sweeper sends it again then; deleting this message"
                );
                Outcome::Done
            }
            // Put back to pending between our claim and this read (a backoff of another
            // delivery): the queue brings this message back and it claims the job then.
            JobStatus::Pending => {
                if final_receive {
                    tracing::warn!(
                        "final receive: the job is pending, where the sweeper finds it; this message goes to the DLQ"
                    );
                } else {
                    tracing::info!("job changed under the claim; releasing the message");
                }
                Outcome::Release
            }
        },
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not read the output job");
            Outcome::Release
        }
    }
}

/// A job holding an enum value this version does not know: failed at once, visibly
/// (`last_error` names the column and the value, the admins are told), and the message
/// deleted, since no retry can teach docflow the value.
async fn unworkable(deps: &Deps, msg: &Message, job: &Unworkable, final_receive: bool) -> Outcome {
    let error = job.to_string();
    tracing::error!(column = job.column, value = %job.value, %error, "output job holds a value this version does not know");
    match worker::fail_unworkable(&deps.pool, job).await {
        Ok(Held::Held) => {
            metrics::failed_permanently();
            metrics::count(m::EXPORTS_FAILED, 1);
            notify(deps, msg, Subject::from(job), FAILURE_TITLE, &error).await;
            Outcome::Done
        }
        // Claimed by us: only a take-over after going stale changes it, and its new holder
        // meets the same value.
        Ok(Held::Lost) if job.token.is_some() => claim_lost(),
        Ok(Held::Lost) => {
            tracing::warn!(
                "the job's status changed meanwhile; releasing the message to look again"
            );
            Outcome::Release
        }
        // Left running under our claim: the next delivery reclaims it once stale.
        Err(e) if job.token.is_some() => still_running(deps, final_receive, &e),
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not fail the output job");
            Outcome::Release
        }
    }
}

/// The claimed job's work.
async fn work(deps: &Deps, msg: &Message, claim: &Claimed, final_receive: bool) -> Outcome {
    let pool = &deps.pool;
    let job = &claim.job;
    let checks_started = std::time::Instant::now();
    match worker::linked_audit(pool, job.id).await {
        Ok(Some(audit)) if !audit.allows_new_export() => {
            return match worker::recover(pool, claim, &audit).await {
                Ok(Recovery::Dispatched) => {
                    tracing::info!(audit_id = %audit.id, "job completed from its DATEV audit (task id present), no new export");
                    Outcome::Done
                }
                Ok(Recovery::Failed { error }) => {
                    tracing::warn!(audit_id = %audit.id, %error, "job failed from its DATEV audit, no new export");
                    metrics::failed_permanently();
                    metrics::count(m::EXPORTS_FAILED, 1);
                    notify(deps, msg, Subject::from(claim), FAILURE_TITLE, &error).await;
                    Outcome::Done
                }
                Ok(Recovery::InDoubt { error }) => {
                    tracing::error!(
                        audit_id = %audit.id,
                        audit_status = %audit.status,
                        "the job's earlier worker stopped during the Maesn call: export in doubt, \
                         job failed, no new export"
                    );
                    metrics::failed_permanently();
                    metrics::count(m::EXPORTS_IN_DOUBT, 1);
                    notify(deps, msg, Subject::from(claim), IN_DOUBT_TITLE, &error).await;
                    Outcome::Done
                }
                Ok(Recovery::ClaimLost) => claim_lost(),
                Err(e) => still_running(deps, final_receive, &e),
            };
        }
        Ok(Some(audit)) => {
            tracing::info!(audit_id = %audit.id, "the job's last attempt was refused; exporting again");
        }
        Ok(None) => {}
        Err(e) => return still_running(deps, final_receive, &e),
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
            Err(e) => return still_running(deps, final_receive, &e),
        }
    };
    if let Some(error) = ineligible {
        tracing::warn!(%error, "output job failed before export");
        let failed = match pool.acquire().await {
            Ok(mut conn) => worker::fail(&mut conn, claim, &error).await,
            Err(e) => Err(e),
        };
        return match failed {
            Ok(Held::Held) => {
                metrics::failed_permanently();
                notify(deps, msg, Subject::from(claim), FAILURE_TITLE, &error).await;
                Outcome::Done
            }
            Ok(Held::Lost) => claim_lost(),
            Err(e) => still_running(deps, final_receive, &e),
        };
    }

    metrics::stage_time(metrics::stages::CHECKS, checks_started.elapsed());

    let attempt = Attempt {
        deadline: msg
            .time_left()
            .map(|left| tokio::time::Instant::now() + left),
        final_receive,
    };
    match worker::export(pool, &deps.s3, &deps.maesn, &deps.settings, claim, attempt).await {
        Ok(ExportOutcome::Dispatched { audit_id, task_id }) => {
            tracing::info!(%audit_id, %task_id, "output job dispatched");
            metrics::count(m::EXPORTS_DISPATCHED, 1);
            Outcome::Done
        }
        Ok(ExportOutcome::Failed { error, in_doubt }) => {
            tracing::warn!(%error, in_doubt, "output job failed");
            metrics::failed_permanently();
            metrics::count(
                if in_doubt {
                    m::EXPORTS_IN_DOUBT
                } else {
                    m::EXPORTS_FAILED
                },
                1,
            );
            let title = if in_doubt {
                IN_DOUBT_TITLE
            } else {
                FAILURE_TITLE
            };
            notify(deps, msg, Subject::from(claim), title, &error).await;
            Outcome::Done
        }
        Ok(ExportOutcome::Deferred { error, retry_after }) => {
            let after = deps.settings.backoff.after(msg.receive_count, retry_after);
            tracing::warn!(%error, retry_after_s = after.as_secs(), "DATEV export refused for now; job back to pending, backing off");
            Outcome::Retry { after }
        }
        Ok(ExportOutcome::Parked { error, until }) => {
            tracing::warn!(%error, %until, "DATEV export refused for longer than a backoff; job parked, the sweeper sends it again then");
            Outcome::Done
        }
        Ok(ExportOutcome::OutOfTime { error }) => {
            if final_receive {
                tracing::warn!(%error, "final receive: the job is back to pending, where the sweeper finds it; this message goes to the DLQ");
                Outcome::Release
            } else {
                tracing::warn!(%error, "job back to pending; redelivering at once to an invocation with time to spare");
                Outcome::Retry {
                    after: Duration::ZERO,
                }
            }
        }
        Ok(ExportOutcome::ClaimLost) => claim_lost(),
        Err(e) => still_running(deps, final_receive, &e),
    }
}

/// Another delivery (or the sweeper) took the job over: it has its own message.
fn claim_lost() -> Outcome {
    tracing::warn!("the job's claim was lost meanwhile; its new holder finishes it");
    Outcome::Done
}

/// The job is left `running` because the database did not take the outcome: come back
/// once it is stale, so the next delivery can reclaim it (and find any audit written).
/// `stale + 5 s` stays under the 900 s the sweeper allows for a backoff as long as the
/// stale threshold does (600 s by default).
fn still_running(
    deps: &Deps,
    final_receive: bool,
    e: &(dyn std::error::Error + 'static),
) -> Outcome {
    tracing::error!(error.message = %e, error.cause_chain = ?e, "output job left running after a database error");
    if final_receive {
        tracing::error!(
            "final receive: the job stays running; the sweeper re-sends it once updated_at is \
             older than STALE_RUNNING_SECONDS; this message goes to the DLQ"
        );
    }
    Outcome::Retry {
        after: deps.settings.stale_running + Duration::from_secs(5),
    }
}

/// Every AWS API action document output calls (IAM names): what Terraform must grant its
/// role (`tests/tests/it/iam_calls.rs` holds the two together). Tests that give it AWS
/// clients from `docflow_tests::aws_calls` refuse any call outside this list.
pub fn aws_actions<F: Fn(&str) -> Option<String>>(
    env: &docflow::settings::Env<F>,
) -> Vec<&'static str> {
    let mut actions = vec!["secretsmanager:GetSecretValue"]; // cold start: the secret
    actions.extend_from_slice(docflow::sqs::AWS_ACTIONS);
    actions.push("s3:GetObject"); // the document's file, attached to the export
    // Admin notifications by email (docflow::notify::SesChannel) when configured.
    if env.optional("NOTIFY_EMAIL_FROM").is_some() && env.optional("NOTIFY_EMAIL_TO").is_some() {
        actions.push("ses:SendEmail");
    }
    actions
}

/// The job an admin notice is about.
struct Subject {
    id: OutputJobId,
    tenant_id: Uuid,
    document_id: Uuid,
}

impl From<&Claimed> for Subject {
    fn from(claim: &Claimed) -> Self {
        Subject {
            id: claim.job.id,
            tenant_id: claim.job.tenant_id,
            document_id: claim.job.document_id,
        }
    }
}

impl From<&Unworkable> for Subject {
    fn from(job: &Unworkable) -> Self {
        Subject {
            id: job.job_id,
            tenant_id: job.tenant_id,
            document_id: job.document_id,
        }
    }
}

/// Tells the admins about a job this worker failed (once: only the worker whose guarded
/// update failed the job gets here).
async fn notify(deps: &Deps, msg: &Message, job: Subject, title: &str, error: &str) {
    let (tenant_name, document_type) = names(&deps.pool, &job).await;
    let notice = AdminNotice {
        title: title.to_owned(),
        document_id: job.document_id,
        document_type,
        tenant_id: Some(job.tenant_id),
        tenant_name,
        error: format!("output job {}: {error}", job.id),
        attempts: msg.receive_count as i32,
    };
    // Within the invocation's time: a notice cut off here is told by the sweeper later,
    // since only a delivered one is recorded.
    let deadline = msg
        .time_left()
        .map(|left| tokio::time::Instant::now() + left);
    let delivery = deps.notifier.notify_until(&notice, deadline).await;
    if (delivery.delivered() || deps.notifier.channel_names().is_empty())
        && let Err(e) = worker::mark_told(&deps.pool, job.id).await
    {
        tracing::warn!(error.message = %e, "could not record that the admins were told; the sweeper may tell them again");
    }
}

/// The tenant's name and the document's type for the notice (absent when unreadable).
async fn names(pool: &PgPool, job: &Subject) -> (Option<String>, Option<String>) {
    sqlx::query_as(
        "SELECT t.name, d.type::text FROM tenant t, document d WHERE t.id = $1 AND d.id = $2",
    )
    .bind(job.tenant_id)
    .bind(job.document_id)
    .fetch_optional(pool)
    .await
    .inspect_err(|e| tracing::warn!(error.message = %e, "could not read the tenant and document for the notice"))
    .ok()
    .flatten()
    .map(|(name, kind)| (Some(name), Some(kind)))
    .unwrap_or_default()
}
