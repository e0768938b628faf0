//! The job row under the claim token: [`claim`] takes a job, [`touch`] keeps it alive,
//! [`fail`], [`defer`] and [`park`] end the claim or hand the job back, and [`recover`]
//! completes a job from the audit an earlier attempt left ([`linked_audit`]).
//!
//! **The claim token.** Every claim writes a fresh `claim_token`; every worker-side
//! update afterwards ([`touch`], [`fail`], [`defer`], the export's final transaction,
//! [`recover`]) matches `status = 'running' AND claim_token = <ours>`. A worker whose job
//! went stale and was claimed again by another delivery can therefore no longer change
//! it: its update matches nothing and it reports
//! [`ExportOutcome::ClaimLost`](super::ExportOutcome::ClaimLost). That no longer depends
//! on the Lambda timeout being below the stale threshold; what still does — that a live
//! worker is never taken for dead — is checked at cold start by
//! [`WorkerSettings::from_env`](super::WorkerSettings::from_env)
//! (`stale > 2 × heartbeat + the Maesn budget`).

use std::time::Duration;

use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::db::Held;
use crate::ids::OutputJobId;
use crate::output::{Domain, JobStatus, OutputJob, Trigger};

/// The job as it is, or `None` when no such job exists.
pub async fn load_job(
    pool: &PgPool,
    job_id: OutputJobId,
) -> Result<Option<OutputJob>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM document_output_job WHERE id = $1")
        .bind(job_id)
        .fetch_optional(pool)
        .await
}

/// A job this worker claimed, with the token every later update must match.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub job: OutputJob,
    pub token: Uuid,
}

/// A job whose row holds a value of one of its own enums (`document_domain`, `trigger`,
/// `status`) that this version of docflow does not know: a label the application added
/// to the type later. Retrying cannot teach docflow the value, so the function fails the
/// job at once with [`fail_unworkable`] and tells the admins.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "document_output_job.{column} is {value:?}, a value this version of docflow does not know; \
     the job was failed without an export (deploy a docflow that knows the value, then export \
     the document again)"
)]
pub struct Unworkable {
    pub job_id: OutputJobId,
    pub tenant_id: Uuid,
    pub document_id: Uuid,
    /// The column holding the unknown value.
    pub column: &'static str,
    /// The unknown value.
    pub value: String,
    /// The job's status as stored (text): the failure update matches it.
    pub status: String,
    /// Our claim token when the claim took the job (then `status` is `running`).
    pub token: Option<Uuid>,
}

/// Why [`claim`] returned no claim.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The statement failed: nothing is known to have changed (transient).
    #[error("could not claim the output job")]
    Database(#[from] sqlx::Error),
    /// The claim took the job (it is `running` under the token in [`Unworkable::token`])
    /// but cannot work it: fail it with [`fail_unworkable`].
    #[error(transparent)]
    Unworkable(Box<Unworkable>),
}

/// The job row with its enum columns as text, so that a value this version does not know
/// is an answer ([`Unworkable`]) rather than a decode error that would leave a claimed job
/// `running` for the sweeper to find.
#[derive(sqlx::FromRow)]
struct StoredJob {
    id: OutputJobId,
    tenant_id: Uuid,
    document_id: Uuid,
    document_domain: String,
    trigger: String,
    status: String,
    document_version: Option<i32>,
    requested_by: Option<Uuid>,
    started_at: Option<chrono::DateTime<chrono::Utc>>,
    completed_at: Option<chrono::DateTime<chrono::Utc>>,
    last_error: Option<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    updated_at: chrono::DateTime<chrono::Utc>,
    claim_token: Option<Uuid>,
    not_before: Option<chrono::DateTime<chrono::Utc>>,
}

/// The columns of [`StoredJob`], the enums read as text.
const STORED_JOB_COLUMNS: &str = "id, tenant_id, document_id, \
     document_domain::text AS document_domain, trigger::text AS trigger, status::text AS status, \
     document_version, requested_by, started_at, completed_at, last_error, created_at, updated_at, \
     claim_token, not_before";

impl StoredJob {
    fn unworkable(&self, column: &'static str, value: &str) -> Box<Unworkable> {
        Box::new(Unworkable {
            job_id: self.id,
            tenant_id: self.tenant_id,
            document_id: self.document_id,
            column,
            value: value.to_owned(),
            status: self.status.clone(),
            token: self.claim_token,
        })
    }

    /// The status, or the job as [`Unworkable`] when the status is not known.
    fn known_status(&self) -> Result<JobStatus, Box<Unworkable>> {
        JobStatus::from_label(&self.status).ok_or_else(|| self.unworkable("status", &self.status))
    }

    /// The typed job, or the first column holding a value this version does not know.
    fn into_job(self) -> Result<OutputJob, Box<Unworkable>> {
        let status = self.known_status()?;
        let document_domain = Domain::from_label(&self.document_domain)
            .ok_or_else(|| self.unworkable("document_domain", &self.document_domain))?;
        let trigger = Trigger::from_label(&self.trigger)
            .ok_or_else(|| self.unworkable("trigger", &self.trigger))?;
        Ok(OutputJob {
            id: self.id,
            tenant_id: self.tenant_id,
            document_id: self.document_id,
            document_domain,
            trigger,
            status,
            document_version: self.document_version,
            requested_by: self.requested_by,
            started_at: self.started_at,
            completed_at: self.completed_at,
            last_error: self.last_error,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// Claims a pending job, or a running one whose worker stopped touching it for
/// `stale_running`, in one statement, with a fresh claim token. `Ok(None)`: someone else
/// holds it, it is finished, or it does not exist (ask [`unclaimed_state`] which).
/// [`ClaimError::Unworkable`]: claimed, but a column holds a value this version does not
/// know; the caller fails the job (the claim token is in the error).
pub async fn claim(
    pool: &PgPool,
    job_id: OutputJobId,
    stale_running: Duration,
) -> Result<Option<Claimed>, ClaimError> {
    let row: Option<StoredJob> = sqlx::query_as(&format!(
        r#"
        UPDATE document_output_job
           SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now(),
               claim_token = gen_random_uuid(), not_before = NULL
         WHERE id = $1
           -- A parked job (Maesn asked to wait) is not taken before its time.
           AND ((status = 'pending' AND (not_before IS NULL OR not_before <= now()))
                OR (status = 'running' AND updated_at < now() - make_interval(secs => $2)))
        RETURNING {STORED_JOB_COLUMNS}
        "#
    ))
    .bind(job_id)
    .bind(stale_running.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let token = row
        .claim_token
        .ok_or_else(|| sqlx::Error::Protocol("the claim returned no claim token".into()))?;
    let job = row.into_job().map_err(ClaimError::Unworkable)?;
    Ok(Some(Claimed { job, token }))
}

/// What the function needs of a job its claim did not match.
#[derive(Debug, Clone)]
pub struct Unclaimed {
    /// The status, or the job as [`Unworkable`] when its status is a value this version
    /// does not know (the other enum columns are not read: a finished or held job is not
    /// this delivery's to fail).
    pub status: Result<JobStatus, Box<Unworkable>>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    /// A `pending` job parked until then (a long `Retry-After`): the sweeper sends it
    /// again once it has passed.
    pub not_before: Option<chrono::DateTime<chrono::Utc>>,
}

/// The state of a job [`claim`] did not take, or `None` when no such job exists.
pub async fn unclaimed_state(
    pool: &PgPool,
    job_id: OutputJobId,
) -> Result<Option<Unclaimed>, sqlx::Error> {
    let row: Option<StoredJob> = sqlx::query_as(&format!(
        "SELECT {STORED_JOB_COLUMNS} FROM document_output_job WHERE id = $1"
    ))
    .bind(job_id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|row| Unclaimed {
        status: row.known_status(),
        updated_at: row.updated_at,
        not_before: row.not_before,
    }))
}

/// Fails a job that holds a value this version does not know, with the error naming the
/// column and the value, guarded by the status read (and our claim token, when the claim
/// took it). `false`: the job changed meanwhile, nothing was written.
pub async fn fail_unworkable(pool: &PgPool, job: &Unworkable) -> Result<Held, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job
           SET status = 'failed', last_error = $3, completed_at = now(), updated_at = now()
         WHERE id = $1 AND status::text = $2 AND ($4::uuid IS NULL OR claim_token = $4)
        "#,
    )
    .bind(job.job_id)
    .bind(&job.status)
    .bind(job.to_string())
    .bind(job.token)
    .execute(pool)
    .await?;
    Ok(Held::when(done.rows_affected() == 1))
}

/// The heartbeat's liveness touch: moves `updated_at` while this claim still holds the
/// job. `false`: the claim was lost (taken over after going stale, or finished).
pub async fn touch(pool: &PgPool, claim: &Claimed) -> Result<Held, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job SET updated_at = now()
         WHERE id = $1 AND status = 'running' AND claim_token = $2
        "#,
    )
    .bind(claim.job.id)
    .bind(claim.token)
    .execute(pool)
    .await?;
    Ok(Held::when(done.rows_affected() == 1))
}

/// Marks the claimed job failed with `error`. `false`: the claim was lost, nothing
/// changed.
pub async fn fail(
    conn: &mut PgConnection,
    claim: &Claimed,
    error: &str,
) -> Result<Held, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job
           SET status = 'failed', last_error = $3, completed_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'running' AND claim_token = $2
        "#,
    )
    .bind(claim.job.id)
    .bind(claim.token)
    .bind(error)
    .execute(conn)
    .await?;
    Ok(Held::when(done.rows_affected() == 1))
}

/// Records that the admins were told about the failed job (the sweeper tells them about
/// failed jobs nobody recorded, docs/sweeper.md).
pub async fn mark_told(pool: &PgPool, job_id: OutputJobId) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE document_output_job SET admins_told_at = now() WHERE id = $1")
        .bind(job_id)
        .execute(pool)
        .await
        .map(drop)
}

/// Puts the claimed job back to `pending` with `error` as `last_error`, so the next
/// delivery of its message (after the backoff) can claim it at once. `false`: the claim
/// was lost, nothing changed.
pub async fn defer(
    conn: &mut PgConnection,
    claim: &Claimed,
    error: &str,
) -> Result<Held, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job
           SET status = 'pending', last_error = $3, claim_token = NULL, updated_at = now()
         WHERE id = $1 AND status = 'running' AND claim_token = $2
        "#,
    )
    .bind(claim.job.id)
    .bind(claim.token)
    .bind(error)
    .execute(conn)
    .await?;
    Ok(Held::when(done.rows_affected() == 1))
}

/// Parks the claimed job: `pending` with `not_before = now() + wait` and `error` as
/// `last_error`. No claim takes it before then; the sweeper sends it again after.
/// Returns `not_before`, or `None` when the claim was lost (nothing changed).
pub async fn park(
    conn: &mut PgConnection,
    claim: &Claimed,
    error: &str,
    wait: Duration,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, sqlx::Error> {
    sqlx::query_scalar(
        r#"
        UPDATE document_output_job
           SET status = 'pending', last_error = $3, claim_token = NULL, updated_at = now(),
               not_before = now() + make_interval(secs => $4)
         WHERE id = $1 AND status = 'running' AND claim_token = $2
        RETURNING not_before
        "#,
    )
    .bind(claim.job.id)
    .bind(claim.token)
    .bind(error)
    .bind(wait.as_secs_f64())
    .fetch_optional(conn)
    .await
}

async fn mark_dispatched(conn: &mut PgConnection, claim: &Claimed) -> Result<Held, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job
           SET status = 'dispatched', last_error = NULL, completed_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'running' AND claim_token = $2
        "#,
    )
    .bind(claim.job.id)
    .bind(claim.token)
    .execute(conn)
    .await?;
    Ok(Held::when(done.rows_affected() == 1))
}

/// An `ap_datev_export_audit` row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ExportAudit {
    pub id: Uuid,
    pub document_id: Uuid,
    pub dispatch_job_id: Option<Uuid>,
    pub status: String,
    pub task_id: Option<String>,
    pub error: Option<String>,
    pub retryable: bool,
}

impl ExportAudit {
    /// A refused attempt (`failed`, retryable, no task id): nothing was booked, so the
    /// job may export again.
    pub fn allows_new_export(&self) -> bool {
        self.status == "failed" && self.retryable && self.task_id.is_none()
    }
}

/// The newest audit this job created, if any (a job deferred after a refusal, or one
/// whose earlier worker died, has one).
pub async fn linked_audit(
    pool: &PgPool,
    job_id: OutputJobId,
) -> Result<Option<ExportAudit>, sqlx::Error> {
    sqlx::query_as(
        r#"
        SELECT id, document_id, dispatch_job_id, status, task_id, error, retryable
          FROM ap_datev_export_audit
         WHERE dispatch_job_id = $1
         ORDER BY created_at DESC
         LIMIT 1
        "#,
    )
    .bind(job_id)
    .fetch_optional(pool)
    .await
}

/// What [`recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// The audit has a task id or succeeded: the job is `dispatched`, no new export.
    Dispatched,
    /// The audit failed for good (non-retryable): the job is `failed` with its error.
    Failed { error: String },
    /// The audit has no task id and no outcome: the worker stopped during the Maesn
    /// call, so Maesn may or may not have the export. Audit `failed` with `retryable =
    /// false`, job `failed` with "in doubt … check DATEV"; no new export.
    InDoubt { error: String },
    /// The claim was lost meanwhile; nothing changed.
    ClaimLost,
}

/// Completes a claimed job from the audit its earlier attempt left (one that does not
/// [allow a new export](ExportAudit::allows_new_export)), without calling Maesn.
pub async fn recover(
    pool: &PgPool,
    claim: &Claimed,
    audit: &ExportAudit,
) -> Result<Recovery, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let recovery = if audit.task_id.is_some() || audit.status == "succeeded" {
        if mark_dispatched(&mut tx, claim).await?.is_held() {
            Recovery::Dispatched
        } else {
            Recovery::ClaimLost
        }
    } else if audit.status == "failed" {
        let error = format!(
            "DATEV export failed (audit {}): {}",
            audit.id,
            audit.error.as_deref().unwrap_or("no error recorded")
        );
        if fail(&mut tx, claim, &error).await?.is_held() {
            Recovery::Failed { error }
        } else {
            Recovery::ClaimLost
        }
    } else {
        let error = format!(
            "DATEV export in doubt: the worker stopped during the Maesn call (audit {} has no \
             task id), so Maesn may have accepted it; check DATEV before exporting again",
            audit.id
        );
        if fail(&mut tx, claim, &error).await?.is_held() {
            sqlx::query(
                r#"
                UPDATE ap_datev_export_audit
                   SET status = 'failed', error = $2, retryable = false, updated_at = now()
                 WHERE id = $1 AND task_id IS NULL AND status IN ('requested', 'submitted', 'in_progress')
                "#,
            )
            .bind(audit.id)
            .bind(&error)
            .execute(&mut *tx)
            .await?;
            Recovery::InDoubt { error }
        } else {
            Recovery::ClaimLost
        }
    };
    tx.commit().await?;
    Ok(recovery)
}
