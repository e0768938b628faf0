//! How an export ended, and the statements that record it on the job and its audit.
//!
//! **Outcomes of an export** ([`ExportOutcome`]), each recorded in one transaction with
//! the audit when one exists:
//!
//! | what happened                                   | audit                         | job                    |
//! |-------------------------------------------------|-------------------------------|------------------------|
//! | Maesn answered with a task id                   | `submitted`, task id          | `dispatched`           |
//! | a 2xx that could not be read, a task id salvaged from it | `submitted`, task id, the answer in `response_body` | `dispatched` |
//! | Maesn may have acted (in doubt)                 | `failed`, `retryable = false` (a broken 2xx kept in `response_body`) | `failed` "in doubt"    |
//! | DATEV already has it (409, or a 4xx saying "duplicate") | `succeeded` (present), `retryable = false`, Maesn's answer in `error` | `failed`, admins told what Maesn said |
//! | a lasting refusal (4xx, 307/308)                | `failed`, `retryable = true`  | `failed`               |
//! | refused before the audit: a key unreadable, the file missing or too large, a job of another tenant than its document | — (none written) | `failed` (a passing key or S3 error: back to `pending`) |
//! | a passing refusal (408, Maesn's own 429 or 503, no connection, keys rotated with too little time left, a 401 with the keys unchanged in the secrets), not the final receive | `failed`, `retryable = true` | back to `pending` + `last_error` |
//! | the same on the final receive                   | `failed`, `retryable = true`  | `failed`               |
//! | not enough time left to call Maesn              | — (none written)              | back to `pending`      |
//! | the same, found after the audit was written (its insert waited) | `failed`, `retryable = true`, "nothing was sent" | back to `pending` |

use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

use super::WorkerSettings;
use super::claim::{Claimed, defer, fail, park};
use crate::datev::DatevError;
use crate::ids::OutputJobId;
use crate::retry::{Classify, RetryClass, error_chain};

/// How an export ended. All but `ClaimLost` are recorded on the job (and the audit,
/// once one exists), so the message is finished or backed off either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportOutcome {
    /// Maesn accepted the export: audit `submitted` with the task id, job `dispatched`.
    Dispatched { audit_id: Uuid, task_id: String },
    /// The job is `failed` with `error`. `in_doubt`: Maesn may have acted on the request
    /// (the audit is `failed` and non-retryable until a person checked DATEV).
    Failed { error: String, in_doubt: bool },
    /// A passing refusal (nothing booked): the job is back to `pending` with `error`;
    /// back off (at least `retry_after`) and try again.
    Deferred {
        error: String,
        retry_after: Option<Duration>,
    },
    /// Not enough time left in the invocation to call Maesn and record the answer:
    /// nothing was sent, the job is back to `pending`.
    OutOfTime { error: String },
    /// Maesn refused for now and asked (`Retry-After`) for a longer wait than a backoff
    /// through the queue: nothing was booked, the job is `pending` with `not_before =
    /// until`, and the sweeper sends it again then. The message is done.
    Parked {
        error: String,
        until: chrono::DateTime<chrono::Utc>,
    },
    /// The claim was lost (the job went stale and another delivery took it over, or
    /// the sweeper failed it): this worker changed nothing.
    ClaimLost,
}

/// Why an outcome could not be recorded: the job stays `running` (and becomes stale,
/// so a later delivery or the sweeper recovers it; an audit already written makes that
/// recovery choose "in doubt" over a second export).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("database error during the export of job {job_id}")]
    Database {
        job_id: OutputJobId,
        #[source]
        source: sqlx::Error,
    },
    /// Maesn accepted the export, but the task id could not be stored. It is in this
    /// error (and was logged when it arrived) so an operator can link it by hand.
    #[error(
        "Maesn accepted the export of job {job_id} as task {task_id} (audit {audit_id}), \
         but the database did not take it; record the task id on the audit by hand"
    )]
    Unrecorded {
        job_id: OutputJobId,
        audit_id: Uuid,
        task_id: String,
        #[source]
        source: sqlx::Error,
    },
}

impl Classify for ExportError {
    fn retry_class(&self) -> RetryClass {
        match self {
            ExportError::Database { source, .. } | ExportError::Unrecorded { source, .. } => {
                source.retry_class()
            }
        }
    }
}

/// How a failure of the Maesn call is recorded.
pub(super) enum Ending {
    InDoubt,
    /// DATEV already has the document ([`DatevError::says_already_there`]).
    Present,
    Lasting,
    Passing {
        retry_after: Option<Duration>,
    },
    /// A passing refusal whose `Retry-After` is longer than the longest backoff: wait
    /// this long (at most [`MAX_PARK`](super::MAX_PARK)) outside the queue.
    Parked {
        wait: Duration,
    },
}

/// Records Maesn's task id and the job `dispatched` in one statement (atomic without a
/// transaction block: one round trip instead of `BEGIN`, two updates and `COMMIT`),
/// retried in process on transient database errors. The task id is stored even when
/// the claim was lost meanwhile: Maesn has the export, so the audit must say so (a
/// data-modifying `WITH` part runs whatever the outer update matches). `salvaged`: the
/// task id came from a broken answer, whose note and body the audit keeps.
pub(super) async fn record_accepted(
    pool: &PgPool,
    settings: &WorkerSettings,
    claim: &Claimed,
    audit_id: Uuid,
    task_id: String,
    salvaged: Option<(&str, &str)>,
) -> Result<ExportOutcome, ExportError> {
    let recorded = settings
        .retry
        .run(|_| async {
            let done = sqlx::query(
                r#"
                WITH submitted AS (
                    UPDATE ap_datev_export_audit
                       SET status = 'submitted', task_id = $4, error = $5, response_body = $6,
                           updated_at = now()
                     WHERE id = $3
                )
                UPDATE document_output_job
                   SET status = 'dispatched', last_error = NULL, completed_at = now(),
                       updated_at = now()
                 WHERE id = $1 AND status = 'running' AND claim_token = $2
                "#,
            )
            .bind(claim.job.id)
            .bind(claim.token)
            .bind(audit_id)
            .bind(&task_id)
            .bind(salvaged.map(|(note, _)| note))
            .bind(salvaged.map(|(_, body)| body))
            .execute(pool)
            .await?;
            Ok::<_, sqlx::Error>(done.rows_affected() == 1)
        })
        .await;
    match recorded {
        Ok(true) => Ok(ExportOutcome::Dispatched { audit_id, task_id }),
        Ok(false) => {
            tracing::warn!(task_id = %task_id, audit_id = %audit_id, "the job's claim was lost while Maesn accepted its export; task id recorded on the audit");
            Ok(ExportOutcome::ClaimLost)
        }
        Err(source) => {
            let e = ExportError::Unrecorded {
                job_id: claim.job.id,
                audit_id,
                task_id,
                source,
            };
            tracing::error!(error.message = %e, error.cause_chain = ?e, "Maesn task id not recorded");
            Err(e)
        }
    }
}

/// Records a failed Maesn call on the audit and the job in one transaction.
pub(super) async fn record_refused(
    pool: &PgPool,
    claim: &Claimed,
    audit_id: Uuid,
    e: &DatevError,
    ending: Ending,
    final_receive: bool,
) -> Result<ExportOutcome, sqlx::Error> {
    let cause = error_chain(e);
    let (error, retryable) = match ending {
        Ending::Present => (
            format!(
                "DATEV already has this document: {cause}; recorded as present and not \
                 exported again (check in DATEV that the booking there is this document's)"
            ),
            false,
        ),
        Ending::InDoubt => (
            format!(
                "DATEV export in doubt: Maesn may have accepted it ({cause}); check DATEV before \
                 exporting again"
            ),
            false,
        ),
        Ending::Passing { .. } => (
            format!("DATEV export refused for now, will be retried: {cause}"),
            true,
        ),
        Ending::Parked { wait } => (
            format!(
                "DATEV export refused for now: Maesn asked to wait {} s (Retry-After), longer \
                 than a retry through the queue waits; the job is parked until {} and the \
                 sweeper sends it again then: {cause}",
                e.retry_after().unwrap_or(wait).as_secs(),
                (chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default())
                    .format("%Y-%m-%d %H:%M:%S UTC")
            ),
            true,
        ),
        Ending::Lasting if final_receive && (e.is_passing_refusal() || e.is_unauthorized()) => (
            format!("DATEV export gave up: Maesn refused on every delivery of the job: {cause}"),
            true,
        ),
        Ending::Lasting => (
            format!("DATEV export could not be initiated: {cause}"),
            true,
        ),
    };
    // Present: succeeded, as `docflow export resolve --present` records it, so that no
    // export of the document is tried again.
    let audit_status = match ending {
        Ending::Present => "succeeded",
        _ => "failed",
    };
    // A broken 2xx answer is kept as it arrived: what a person checking DATEV has.
    let response_body = match e {
        DatevError::BrokenAnswer { body, .. } => Some(body.as_str()),
        _ => None,
    };
    let mut tx = pool.begin().await?;
    sqlx::query(
        r#"
        UPDATE ap_datev_export_audit
           SET status = $4, error = $2, retryable = $3, response_body = $5, updated_at = now()
         WHERE id = $1
        "#,
    )
    .bind(audit_id)
    .bind(&error)
    .bind(retryable)
    .bind(audit_status)
    .bind(response_body)
    .execute(&mut *tx)
    .await?;
    let outcome = match ending {
        Ending::Passing { retry_after } => {
            if defer(&mut tx, claim, &error).await?.is_held() {
                ExportOutcome::Deferred { error, retry_after }
            } else {
                ExportOutcome::ClaimLost
            }
        }
        Ending::Parked { wait } => match park(&mut tx, claim, &error, wait).await? {
            Some(until) => ExportOutcome::Parked { error, until },
            None => ExportOutcome::ClaimLost,
        },
        Ending::InDoubt | Ending::Present | Ending::Lasting => {
            let in_doubt = matches!(ending, Ending::InDoubt);
            if fail(&mut tx, claim, &error).await?.is_held() {
                ExportOutcome::Failed { error, in_doubt }
            } else {
                ExportOutcome::ClaimLost
            }
        }
    };
    // The audit's outcome is committed even when the claim was lost: it is what
    // happened at Maesn, and the job's new holder reads it.
    tx.commit().await?;
    Ok(outcome)
}

/// Records an audit whose request was never sent (`failed`, retryable: nothing was
/// booked) and puts the job back to `pending`, in one transaction. The audit is ours
/// whoever holds the job now, so it is recorded even when the claim was lost.
pub(super) async fn record_not_sent(
    pool: &PgPool,
    claim: &Claimed,
    audit_id: Uuid,
    error: String,
) -> Result<ExportOutcome, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "UPDATE ap_datev_export_audit SET status = 'failed', error = $2, retryable = true, \
                updated_at = now() \
          WHERE id = $1 AND status = 'requested'",
    )
    .bind(audit_id)
    .bind(&error)
    .execute(&mut *tx)
    .await?;
    let outcome = if defer(&mut tx, claim, &error).await?.is_held() {
        ExportOutcome::OutOfTime { error }
    } else {
        ExportOutcome::ClaimLost
    };
    tx.commit().await?;
    Ok(outcome)
}

/// Records a failure before any audit exists: `failed`, or back to `pending` when it
/// may pass (`passing`).
pub(super) async fn record_job_only(
    pool: &PgPool,
    claim: &Claimed,
    error: String,
    passing: bool,
) -> Result<ExportOutcome, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    Ok(if passing {
        if defer(&mut conn, claim, &error).await?.is_held() {
            ExportOutcome::Deferred {
                error,
                retry_after: None,
            }
        } else {
            ExportOutcome::ClaimLost
        }
    } else if fail(&mut conn, claim, &error).await?.is_held() {
        ExportOutcome::Failed {
            error,
            in_doubt: false,
        }
    } else {
        ExportOutcome::ClaimLost
    })
}
