//! The worker steps of the document-output function, each one short database
//! statement (or transaction) or one external call, so that no transaction or pooled
//! connection is ever held across S3 or Maesn.
//!
//! Order in the function: [`claim`] → (claimed) [`linked_audit`] → either [`recover`]
//! (a job whose earlier attempt reached Maesn or died during the call) or
//! [`super::check_eligibility`] → [`export`]. While it works, the function's heartbeat
//! calls [`touch`], which keeps `updated_at` fresh: `updated_at` is the liveness marker
//! the stale-running claim reads.
//!
//! **The claim token.** Every claim writes a fresh `claim_token`; every worker-side
//! update afterwards ([`touch`], [`fail`], [`defer`], the export's final transaction,
//! [`recover`]) matches `status = 'running' AND claim_token = <ours>`. A worker whose job
//! went stale and was claimed again by another delivery can therefore no longer change
//! it: its update matches nothing and it reports [`ExportOutcome::ClaimLost`]. That no
//! longer depends on the Lambda timeout being below the stale threshold; what still
//! does — that a live worker is never taken for dead — is checked at cold start by
//! [`WorkerSettings::from_env`] (`stale > 2 × heartbeat + the Maesn budget`).
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
//!
//! [`poll_open_tasks`] is the async-task poll the sweeper calls: it moves
//! `ap_datev_export_audit` rows from `submitted`/`in_progress` to their terminal state
//! and returns the exports it failed, so the sweeper can notify once per failure.

use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use tokio::time::Instant;
use uuid::Uuid;

use super::{Domain, JobStatus, OutputJob, Trigger};
use crate::datev::{
    BookingProposal, DatevAccount, DatevConnector, DatevError, DocumentFile, Keys, MaesnConfig,
    TaskState, is_duplicate_rejection,
};
use crate::db::Held;
use crate::extract::Extraction;
use crate::ids::OutputJobId;
use crate::retry::{Classify, RetryClass, RetryPolicy, error_chain};
use crate::settings::{Env, SettingsError};
use crate::sqs::Heartbeat;

/// The longest SQS backoff the worker sets itself: the sweeper re-sends a `pending` job
/// only once it is older than the queue visibility + 900 s + 60 s (docs/sweeper.md), so a
/// job waiting out a longer backoff would be re-sent while its own message still waits.
pub const MAX_BACKOFF: Duration = Duration::from_secs(900);

/// The longest a job is parked when Maesn's `Retry-After` asks for more than a backoff
/// through the queue can wait ([`Backoff::max`]): a day. A longer wait is a day, after
/// which Maesn is asked again (and may ask again: every re-send of a parked job counts
/// against the sweeper's `SWEEP_MAX_RESENDS`, so a job Maesn never takes ends visibly).
pub const MAX_PARK: Duration = Duration::from_secs(24 * 3600);

/// SQS backoff after a passing refusal: `base · 2^(receive − 1)`, at least what Maesn
/// asked for (`Retry-After`), at most `max` (≤ [`MAX_BACKOFF`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(60),
            max: MAX_BACKOFF,
        }
    }
}

impl Backoff {
    /// How long to hide the message after receive `receive_count` (1-based).
    pub fn after(&self, receive_count: u32, retry_after: Option<Duration>) -> Duration {
        let factor = 1u32 << receive_count.saturating_sub(1).min(16);
        self.base
            .saturating_mul(factor)
            .max(retry_after.unwrap_or_default())
            .min(self.max)
    }
}

/// Settings of the worker steps.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// `STALE_RUNNING_SECONDS` (default 600): a running job whose `updated_at` is older
    /// is presumed dead and may be claimed again. Must exceed 2 × the heartbeat period
    /// plus [`WorkerSettings::maesn_budget`] (checked by [`WorkerSettings::from_env`]).
    pub stale_running: Duration,
    /// `HTTP_RETRY_BASE_MS` (default 2000): base delay of the in-process retries of the
    /// Maesn call and the S3 read (3 attempts).
    pub retry: RetryPolicy,
    /// `DOCUMENTS_BUCKET` (shared setting): where the document files are.
    pub documents_bucket: String,
    /// `OUTPUT_BACKOFF_BASE_SECONDS` (default 60), `OUTPUT_BACKOFF_MAX_SECONDS` (default
    /// and at most 900): the SQS backoff after a passing refusal.
    pub backoff: Backoff,
    /// `MAESN_TIMEOUT_SECONDS`: the time one Maesn attempt may take.
    pub maesn_timeout: Duration,
    /// `OUTPUT_RECORD_RESERVE_SECONDS` (default 15): time kept back after a Maesn
    /// attempt to record its outcome (a transaction, a notification, the visibility
    /// change). An attempt starts only while `maesn_timeout + record_reserve` is left.
    pub record_reserve: Duration,
    /// `OUTPUT_MAX_FILE_BYTES` (default [`DEFAULT_MAX_FILE_BYTES`]): the largest document
    /// file an export reads. Checked against the object's size before a byte is read; a
    /// larger file is a lasting refusal. Bounds the memory of one record (module docs,
    /// [`WorkerSettings::validate_memory`]).
    pub max_file_bytes: u64,
}

/// The default largest document file an export carries: 10 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// How many copies of its file one record may hold at its peak: the body as S3's SDK
/// collects it (segments) and the one buffer it becomes; the multipart upload and the
/// payload hash share that buffer.
const FILE_COPIES_PER_RECORD: u64 = 2;

impl WorkerSettings {
    /// Reads the settings and checks them against the heartbeat and Maesn's timeouts:
    /// fails with the variable's name when the stale threshold could take a live worker
    /// for dead.
    pub fn from_env<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
        documents_bucket: &str,
        heartbeat: &Heartbeat,
        maesn: &MaesnConfig,
    ) -> Result<Self, SettingsError> {
        let backoff = Backoff {
            base: env.seconds_or("OUTPUT_BACKOFF_BASE_SECONDS", 60)?,
            max: env.seconds_or("OUTPUT_BACKOFF_MAX_SECONDS", MAX_BACKOFF.as_secs())?,
        };
        if backoff.max > MAX_BACKOFF {
            return Err(SettingsError::Invalid {
                var: "OUTPUT_BACKOFF_MAX_SECONDS",
                reason: format!(
                    "must be at most {} s: the sweeper re-sends pending jobs older than the queue \
                     visibility + 900 s + 60 s",
                    MAX_BACKOFF.as_secs()
                ),
            });
        }
        let settings = WorkerSettings {
            stale_running: env.seconds_or("STALE_RUNNING_SECONDS", 600)?,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(
                env.parse_or("HTTP_RETRY_BASE_MS", 2000)?,
            )),
            documents_bucket: documents_bucket.to_owned(),
            backoff,
            maesn_timeout: maesn.timeout,
            record_reserve: env.seconds_or("OUTPUT_RECORD_RESERVE_SECONDS", 15)?,
            max_file_bytes: env.parse_or("OUTPUT_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES)?,
        };
        settings.validate(heartbeat)?;
        settings.validate_memory(
            env.parse_or("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", 512)?,
            env.parse_or("BATCH_CONCURRENCY", 10)?,
        )?;
        Ok(settings)
    }

    /// The files of `concurrency` records at their peak ([`FILE_COPIES_PER_RECORD`]
    /// copies of the largest file each) must fit in half the function's memory
    /// (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, MB; the rest is the runtime's, the SDKs' and
    /// the buffers of the HTTP stack): 512 MB and 10 records allow 12.8 MiB per file.
    pub fn validate_memory(&self, memory_mb: u64, concurrency: u64) -> Result<(), SettingsError> {
        let budget = memory_mb * 1024 * 1024 / 2;
        let peak = self
            .max_file_bytes
            .saturating_mul(FILE_COPIES_PER_RECORD)
            .saturating_mul(concurrency.max(1));
        if self.max_file_bytes == 0 || peak > budget {
            return Err(SettingsError::Invalid {
                var: "OUTPUT_MAX_FILE_BYTES",
                reason: format!(
                    "must be at least 1 and at most {} bytes: {} records at once, each holding up \
                     to {FILE_COPIES_PER_RECORD} copies of its file, must fit in half of the \
                     function's {memory_mb} MB",
                    budget / FILE_COPIES_PER_RECORD / concurrency.max(1),
                    concurrency.max(1)
                ),
            });
        }
        Ok(())
    }

    /// The longest a live worker can spend in the Maesn call: every attempt's timeout
    /// and the longest in-process waits between them (jitter included).
    pub fn maesn_budget(&self) -> Duration {
        let waits: Duration = (1..self.retry.attempts)
            .map(|attempt| self.retry.delay_after(attempt).mul_f64(1.25))
            .sum();
        self.maesn_timeout * self.retry.attempts + waits
    }

    /// `stale_running > 2 × heartbeat.every + maesn_budget`: a live worker touches
    /// `updated_at` every beat; allowing one missed beat and the longest Maesn call, it
    /// never looks stale to another delivery.
    pub fn validate(&self, heartbeat: &Heartbeat) -> Result<(), SettingsError> {
        let floor = heartbeat.every * 2 + self.maesn_budget();
        if self.stale_running <= floor {
            return Err(SettingsError::Invalid {
                var: "STALE_RUNNING_SECONDS",
                reason: format!(
                    "must exceed 2 × HEARTBEAT_SECONDS + the Maesn budget ({} s attempts × {} s \
                     timeout + waits) = {} s, or a second delivery could take a live job for dead",
                    self.retry.attempts,
                    self.maesn_timeout.as_secs(),
                    floor.as_secs()
                ),
            });
        }
        Ok(())
    }
}

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

/// The circumstances of one export: the point by which its outcome must be recorded
/// (the invocation's deadline minus the runtime's margin; `None`: no deadline), and
/// whether this is the message's final receive.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    pub deadline: Option<Instant>,
    pub final_receive: bool,
}

impl Attempt {
    fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether `needed` still fits before the deadline.
    fn has(&self, needed: Duration) -> bool {
        self.time_left().is_none_or(|left| left >= needed)
    }
}

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

/// Why the document file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("could not read the document file s3://{bucket}/{key}")]
pub struct FileError {
    pub bucket: String,
    pub key: String,
    class: RetryClass,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl Classify for FileError {
    /// A missing object or denied access stays that way; throttling and outages pass.
    fn retry_class(&self) -> RetryClass {
        self.class
    }
}

#[derive(sqlx::FromRow)]
struct ExportContext {
    document_tenant_id: Uuid,
    file_path: String,
    file_name: Option<String>,
    mime_type: Option<String>,
    structured_data: Option<serde_json::Value>,
    company_id: String,
    config: serde_json::Value,
}

/// How a failure of the Maesn call is recorded.
enum Ending {
    InDoubt,
    /// DATEV already has the document ([`DatevError::says_already_there`]).
    Present,
    Lasting,
    Passing {
        retry_after: Option<Duration>,
    },
    /// A passing refusal whose `Retry-After` is longer than the longest backoff: wait
    /// this long (at most [`MAX_PARK`]) outside the queue.
    Parked {
        wait: Duration,
    },
}

/// Exports a claimed, eligible job: reads the document file from S3, writes a
/// `requested` audit linked to the job (with the payload and its hash), calls Maesn —
/// each attempt only while `maesn_timeout + record_reserve` is left; passing refusals
/// retried in process with `settings.retry` unless Maesn asks for a longer wait — and
/// records the outcome in one transaction (see the module docs' table).
///
/// Returns `Err` only when the database did not take the outcome; see [`ExportError`].
pub async fn export<C: DatevConnector>(
    pool: &PgPool,
    s3: &aws_sdk_s3::Client,
    connector: &C,
    settings: &WorkerSettings,
    claim: &Claimed,
    attempt: Attempt,
) -> Result<ExportOutcome, ExportError> {
    use crate::telemetry::metrics::{self, stages};
    let job = &claim.job;
    let db = |source| ExportError::Database {
        job_id: job.id,
        source,
    };
    let context_started = std::time::Instant::now();
    let context: Option<ExportContext> = sqlx::query_as(
        r#"
        SELECT d.tenant_id AS document_tenant_id, d.file_path, d.file_name, d.mime_type,
               d.structured_data, i.company_id, i.config
          FROM document d
          JOIN tenant_datev_integration i ON i.tenant_id = d.tenant_id AND i.status = 'active'
         WHERE d.id = $1
        "#,
    )
    .bind(job.document_id)
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    metrics::stage_time(stages::CHECKS, context_started.elapsed());
    let Some(context) = context else {
        let error = super::Ineligible::NoActiveIntegration.to_string();
        return record_job_only(pool, claim, error, false).await.map_err(db);
    };
    // The tenant tie: `companyId` is the document's tenant's, the account key the job's.
    // A job of another tenant would book one tenant's document into another's DATEV.
    // (The schema refuses such rows since migration 20261127110000; older ones end here.)
    if context.document_tenant_id != job.tenant_id {
        let error = format!(
            "refused: output job {} belongs to tenant {} but its document {} to tenant {}; \
             nothing was sent to DATEV (a job must be created by the document's own tenant)",
            job.id, job.tenant_id, job.document_id, context.document_tenant_id
        );
        tracing::error!(%error, "output job of another tenant than its document");
        return record_job_only(pool, claim, error, false).await.map_err(db);
    }

    let read = settings.retry.run(|_| {
        read_file(
            s3,
            &settings.documents_bucket,
            &context.file_path,
            settings.max_file_bytes,
        )
    });
    let bytes = match metrics::stage(stages::READ_FILE, read).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "document file unreadable");
            let error = error_chain(&e);
            let passing = e.is_transient() && !attempt.final_receive;
            return record_job_only(pool, claim, error, passing)
                .await
                .map_err(db);
        }
    };

    let proposal = match booking_proposal(job, &context, bytes) {
        Ok(proposal) => proposal,
        Err(error) => {
            tracing::error!(%error, "no booking proposal from the document's data");
            return record_job_only(pool, claim, error, false).await.map_err(db);
        }
    };
    // Both keys before the audit: a secret read (a cache miss, bounded by the secret
    // store's timeout) cannot eat into the time of an attempt already recorded as
    // started, and a key that cannot be read is a refusal with no audit to leave.
    let keys = match connector.keys(&proposal.account).await {
        Ok(keys) => keys,
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "Maesn keys unreadable; nothing was sent");
            let error = format!("DATEV export could not be initiated: {}", error_chain(&e));
            let passing = e.is_passing_refusal() && !attempt.final_receive;
            return record_job_only(pool, claim, error, passing)
                .await
                .map_err(db);
        }
    };

    let needed = settings.maesn_timeout + settings.record_reserve;
    if !attempt.has(needed) {
        let error = format!(
            "not enough time left in the invocation to call Maesn ({} s needed, {} s left); \
             nothing was sent",
            needed.as_secs(),
            attempt.time_left().unwrap_or_default().as_secs()
        );
        tracing::warn!(%error, "export postponed before calling Maesn");
        let mut conn = pool.acquire().await.map_err(db)?;
        return Ok(
            if defer(&mut conn, claim, &error).await.map_err(db)?.is_held() {
                ExportOutcome::OutOfTime { error }
            } else {
                ExportOutcome::ClaimLost
            },
        );
    }

    let (request_payload, payload_hash) = payload_of(&proposal);
    // Committed before the call, and only while the claim holds: if this worker dies
    // during the call, recovery finds an audit without a task id and records the export
    // as in doubt instead of exporting twice. `FOR UPDATE` makes the guard hold against a
    // take-over in flight: a plain read would see the job as this statement's snapshot
    // has it (still ours) while another worker's claim is about to commit; locking the
    // row waits for that claim and checks the token again on the row it wrote.
    let audit_started = std::time::Instant::now();
    let audit_id: Option<Uuid> = sqlx::query_scalar(
        r#"
        INSERT INTO ap_datev_export_audit
               (tenant_id, document_id, dispatch_job_id, status, request_payload, payload_hash)
        SELECT j.tenant_id, j.document_id, j.id, 'requested', $3, $4
          FROM document_output_job j
         WHERE j.id = $1 AND j.status = 'running' AND j.claim_token = $2
           FOR UPDATE OF j
        RETURNING id
        "#,
    )
    .bind(job.id)
    .bind(claim.token)
    .bind(&request_payload)
    .bind(&payload_hash)
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    metrics::stage_time(stages::AUDIT, audit_started.elapsed());
    let Some(audit_id) = audit_id else {
        return Ok(ExportOutcome::ClaimLost);
    };
    // The insert may have waited on the job's row lock (a take-over in flight) or on a
    // slow database: the time left is read again before anything is sent. Too little
    // now, and the audit says "not sent" instead of staying `requested`, which recovery
    // would have to read as in doubt.
    if !attempt.has(needed) {
        let error = format!(
            "not enough time left in the invocation to call Maesn after the audit was \
             written ({} s needed, {} s left); nothing was sent",
            needed.as_secs(),
            attempt.time_left().unwrap_or_default().as_secs()
        );
        tracing::warn!(%error, %audit_id, "export postponed after its audit was written");
        return record_not_sent(pool, claim, audit_id, error)
            .await
            .map_err(db);
    }

    let result = metrics::stage(
        stages::MAESN,
        call_maesn(
            connector, settings, &proposal, keys, audit_id, attempt, needed,
        ),
    )
    .await;

    match result {
        Ok(task_id) => {
            metrics::stage(
                stages::COMPLETE,
                record_accepted(pool, settings, claim, audit_id, task_id, None),
            )
            .await
        }
        // A 2xx that could not be read, but whose task id arrived whole: Maesn has the
        // export; the sweeper follows the task, and the broken answer is kept.
        Err(DatevError::BrokenAnswer {
            reason,
            body,
            task_id: Some(task_id),
            ..
        }) => {
            tracing::warn!(%audit_id, %task_id, %reason, "Maesn's answer was broken; task id salvaged from it");
            let note = format!(
                "Maesn's answer could not be read ({reason}); task id {task_id} salvaged from \
                 it, the task is followed to its end"
            );
            metrics::stage(
                stages::COMPLETE,
                record_accepted(
                    pool,
                    settings,
                    claim,
                    audit_id,
                    task_id,
                    Some((note.as_str(), body.as_str())),
                ),
            )
            .await
        }
        Err(e) => {
            let ending = if e.may_have_been_accepted() {
                Ending::InDoubt
            } else if e.says_already_there() {
                Ending::Present
            } else if let Some(wait) = e
                .retry_after()
                .filter(|asked| e.is_passing_refusal() && *asked > settings.backoff.max)
            {
                // Maesn asks for more than the queue can wait: spending the remaining
                // receives inside that time would only fail the job. Even on the final
                // receive: parking does not need a receive.
                Ending::Parked {
                    wait: wait.min(MAX_PARK),
                }
            } else if (e.is_passing_refusal() || e.is_unauthorized()) && !attempt.final_receive {
                Ending::Passing {
                    retry_after: e.retry_after(),
                }
            } else {
                Ending::Lasting
            };
            record_refused(pool, claim, audit_id, &e, ending, attempt.final_receive)
                .await
                .map_err(db)
        }
    }
}

/// The Maesn call with its in-process retries. Each attempt starts only while `needed`
/// is left; the task id is logged the moment it arrives. A 401/403 is repeated once,
/// at once, when the keys in the secrets were rotated meanwhile — and only while a
/// whole attempt (`needed`) is left; otherwise the rotation is a passing refusal
/// ([`DatevError::KeysRotated`]) and the next delivery uses the new keys.
async fn call_maesn<C: DatevConnector>(
    connector: &C,
    settings: &WorkerSettings,
    proposal: &BookingProposal,
    mut keys: Keys,
    audit_id: Uuid,
    attempt: Attempt,
    needed: Duration,
) -> Result<String, DatevError> {
    let mut n = 1;
    let mut rotated = false;
    loop {
        tracing::info!(attempt = n, audit_id = %audit_id, "sending booking proposal to Maesn");
        let e = match connector.create_booking_proposal(proposal, &keys).await {
            Ok(task_id) => {
                tracing::info!(task_id = %task_id, audit_id = %audit_id, "Maesn accepted the booking proposal");
                return Ok(task_id);
            }
            Err(e) => e,
        };
        let in_doubt = e.may_have_been_accepted();
        tracing::warn!(
            attempt = n,
            audit_id = %audit_id,
            in_doubt,
            error.message = %e,
            error.cause_chain = ?e,
            "Maesn did not accept the booking proposal"
        );
        if e.refused_keys() && !rotated {
            rotated = true;
            let Some(fresh) = connector.rotated_keys(&proposal.account, &keys).await? else {
                return Err(e);
            };
            if !attempt.has(needed) {
                tracing::warn!(
                    audit_id = %audit_id,
                    "Maesn refused rotated keys; too little time left for a whole second request, backing off through the queue"
                );
                return Err(DatevError::KeysRotated {
                    status: match e {
                        DatevError::Status { status, .. } => status,
                        _ => 401,
                    },
                });
            }
            tracing::warn!(
                audit_id = %audit_id,
                "Maesn refused its keys; repeating the request once with the keys now in the secrets"
            );
            keys = fresh;
            continue;
        }
        // A second POST after one Maesn may have acted on could book twice.
        if in_doubt || !e.is_passing_refusal() || n >= settings.retry.attempts {
            return Err(e);
        }
        let wait = jitter(settings.retry.delay_after(n));
        if e.retry_after().is_some_and(|asked| asked > wait) {
            tracing::info!(
                retry_after_s = e.retry_after().unwrap_or_default().as_secs(),
                "Maesn asks for a longer wait than an in-process retry; backing off through the queue"
            );
            return Err(e);
        }
        if !attempt.has(wait + needed) {
            tracing::warn!("no time left for another Maesn attempt; backing off through the queue");
            return Err(e);
        }
        tokio::time::sleep(wait).await;
        n += 1;
    }
}

/// ±25 % so that many records refused together do not come back in lockstep.
fn jitter(delay: Duration) -> Duration {
    if delay.is_zero() {
        return delay;
    }
    delay.mul_f64(rand::rng().random_range(0.75..=1.25))
}

/// Records Maesn's task id and the job `dispatched` in one statement (atomic without a
/// transaction block: one round trip instead of `BEGIN`, two updates and `COMMIT`),
/// retried in process on transient database errors. The task id is stored even when
/// the claim was lost meanwhile: Maesn has the export, so the audit must say so (a
/// data-modifying `WITH` part runs whatever the outer update matches). `salvaged`: the
/// task id came from a broken answer, whose note and body the audit keeps.
async fn record_accepted(
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
async fn record_refused(
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
async fn record_not_sent(
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
async fn record_job_only(
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

/// The audit's `request_payload` (the proposal's parts, the file described by name,
/// type, size and SHA-256) and `payload_hash`: the hex SHA-256 of that payload's JSON
/// (keys sorted), so two exports of the same content have the same hash.
fn payload_of(proposal: &BookingProposal) -> (serde_json::Value, String) {
    let file_sha256 = hex(&Sha256::digest(&proposal.file.bytes));
    let payload = json!({
        "bookingProposal": proposal.proposal,
        "bookingType": proposal.booking_type,
        "folderManagement": proposal.folder_management,
        "file": {
            "name": proposal.file.file_name,
            "mimeType": proposal.file.mime_type,
            "size": proposal.file.bytes.len(),
            "sha256": file_sha256,
        },
    });
    let hash = hex(&Sha256::digest(payload.to_string().as_bytes()));
    (payload, hash)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Reads the document file, checking its size (the object's `Content-Length`, known
/// before the body is read) against `max_bytes` first: a larger file is a lasting
/// refusal, and its bytes are never read.
async fn read_file(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    max_bytes: u64,
) -> Result<Bytes, FileError> {
    let err = |class, source: Box<dyn std::error::Error + Send + Sync>| FileError {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        class,
        source,
    };
    let object = s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| {
            use aws_sdk_s3::error::ProvideErrorMetadata;
            let class = match e.as_service_error() {
                Some(s) if s.is_no_such_key() => RetryClass::Permanent,
                Some(s) if matches!(s.code(), Some("AccessDenied" | "NoSuchBucket")) => {
                    RetryClass::Permanent
                }
                _ => RetryClass::Transient,
            };
            err(class, Box::new(e))
        })?;
    let too_large = |size: u64| {
        err(
            RetryClass::Permanent,
            format!(
                "the file is {size} bytes, more than the {max_bytes} bytes an export may carry \
                 (OUTPUT_MAX_FILE_BYTES); nothing was sent to DATEV"
            )
            .into(),
        )
    };
    let declared = object.content_length().and_then(|n| u64::try_from(n).ok());
    if let Some(size) = declared.filter(|size| *size > max_bytes) {
        return Err(too_large(size));
    }
    let bytes = object
        .body
        .collect()
        .await
        .map_err(|e| err(RetryClass::Transient, Box::new(e)))?
        .into_bytes();
    // No length declared: the limit still holds for what was read.
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The booking proposal for the document, from its extraction
/// ([`super::proposal::proposal_body`]; fields the extraction did not find are left out,
/// and DATEV's own validation reports what is missing). `bookingType` and
/// `folderManagement` come from the integration's config (`booking_type`, default `BILL`;
/// `folder_management`, default Accounting/Invoices). Fails, saying why, when the
/// document has no extracted data or data that is not an [`Extraction`]: a booking
/// without its amount must never leave.
fn booking_proposal(
    job: &OutputJob,
    c: &ExportContext,
    bytes: Bytes,
) -> Result<BookingProposal, String> {
    let Some(data) = &c.structured_data else {
        return Err(format!(
            "document {} has no extracted data; nothing was sent to DATEV (ingest it again)",
            job.document_id
        ));
    };
    let extraction = Extraction::from_stored(data).map_err(|e| {
        format!(
            "document {}: {e}; nothing was sent to DATEV (ingest it again)",
            job.document_id
        )
    })?;
    let proposal =
        serde_json::to_value(super::proposal::proposal_body(job.document_id, &extraction))
            .expect("a proposal body is plain JSON");
    let file_name = maesn_file_name(c.file_name.as_deref(), &c.file_path, c.mime_type.as_deref());
    Ok(BookingProposal {
        account: DatevAccount {
            tenant_id: job.tenant_id,
            company_id: c.company_id.clone(),
        },
        proposal,
        booking_type: c
            .config
            .get("booking_type")
            .and_then(|v| v.as_str())
            .unwrap_or("BILL")
            .to_owned(),
        folder_management: c
            .config
            .get("folder_management")
            .cloned()
            .unwrap_or_else(|| json!({ "category": "Accounting", "folder": "Invoices" })),
        file: DocumentFile {
            file_name,
            mime_type: c
                .mime_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".into()),
            bytes,
        },
    })
}

/// The longest file name Maesn takes, in characters.
pub const MAX_FILE_NAME_CHARS: usize = 255;

/// A file name Maesn accepts, from any document: the document's `file_name`, else the
/// S3 key's last segment; characters file systems and multipart headers choke on
/// (controls, `/ \ : * ? " < > |`) replaced by `_`; `document` when nothing is left;
/// an extension from the MIME type when it has none (`bin` for an unknown type); at
/// most [`MAX_FILE_NAME_CHARS`] characters, the stem cut and the extension kept.
pub fn maesn_file_name(file_name: Option<&str>, key: &str, mime_type: Option<&str>) -> String {
    let raw = file_name
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(n))
        .unwrap_or_else(|| key.rsplit('/').next().unwrap_or(key));
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| c.is_whitespace() || c == '.');
    let (stem, extension) = match cleaned.rsplit_once('.') {
        Some((stem, ext))
            if !stem.trim().is_empty()
                && (1..=10).contains(&ext.chars().count())
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            (stem.trim_end().to_owned(), ext.to_owned())
        }
        _ => (
            cleaned.to_owned(),
            extension_of(mime_type.unwrap_or_default()).to_owned(),
        ),
    };
    let stem = if stem.is_empty() {
        "document".to_owned()
    } else {
        stem
    };
    let room = MAX_FILE_NAME_CHARS - 1 - extension.chars().count();
    let stem: String = stem.chars().take(room).collect();
    format!("{}.{extension}", stem.trim_end())
}

/// The usual extension of a document MIME type (`bin` when unknown).
fn extension_of(mime_type: &str) -> &'static str {
    match mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/tiff" => "tif",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" => "heic",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "application/xml" | "text/xml" => "xml",
        "application/zip" => "zip",
        _ => "bin",
    }
}

/// An export that [`poll_open_tasks`] moved to `failed` in this call (exactly once per
/// audit: the guarded update that flips the status decides). For the sweeper's admin
/// notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedExport {
    pub audit_id: Uuid,
    pub document_id: Uuid,
    pub tenant_id: Uuid,
    /// The output job that started the export (`None` for exports made before jobs).
    pub dispatch_job_id: Option<Uuid>,
    /// What the audit's `error` now says (DATEV's messages).
    pub error: String,
    /// `false` when a new export must not simply be tried (DATEV rejected a duplicate,
    /// or nobody knows whether DATEV has it): such an audit blocks re-exports of the
    /// document until a person resolves it (`docflow export resolve`). `true` otherwise:
    /// the task failed, nothing was booked, and a re-export (e.g. after fixing the data)
    /// may run.
    pub retryable: bool,
}

/// What one [`poll_open_tasks`] run did. The counts are of audits this call changed
/// (or, for `errors`, could not read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollSummary {
    pub still_running: usize,
    pub succeeded: usize,
    pub failed: usize,
    /// Tasks whose state could not be read this time (logged; polled again next run).
    pub errors: usize,
    /// Of `succeeded`: tasks DATEV ended `PARTIAL_SUCCESS` (messages kept on the audit,
    /// admins told).
    pub partial: usize,
    /// Of `failed`: tasks that reached [`PollSettings::max_task_age`] without an end
    /// (failed, not retryable, "check DATEV").
    pub expired: usize,
    /// The audits this call moved to `failed`, one entry each (`failed` of them).
    pub failed_exports: Vec<FailedExport>,
    /// The age in seconds of the oldest task still open after this call (0: none), for
    /// the alarm on tasks nobody ends.
    pub oldest_open_seconds: u64,
}

/// Settings of the task poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollSettings {
    /// How long a task may stay open (counted from its audit's creation) before the poll
    /// gives up on it: whatever Maesn still answers then — `OPEN`/`IN_PROGRESS`, 401/403,
    /// 5xx, a status docflow does not know — or when the tenant has no DATEV integration
    /// any more, the audit ends `failed`, not retryable, "check DATEV", with one notice.
    pub max_task_age: Duration,
}

/// [`PollSettings::max_task_age`] unless configured (`SWEEP_MAX_TASK_AGE_SECONDS`).
pub const DEFAULT_MAX_TASK_AGE: Duration = Duration::from_secs(48 * 3600);

impl Default for PollSettings {
    fn default() -> Self {
        PollSettings {
            max_task_age: DEFAULT_MAX_TASK_AGE,
        }
    }
}

#[derive(sqlx::FromRow)]
struct OpenTask {
    id: Uuid,
    created_at: chrono::DateTime<chrono::Utc>,
    tenant_id: Uuid,
    task_id: String,
    /// `None`: the tenant has no DATEV integration any more (disconnected).
    company_id: Option<String>,
    /// Older than [`PollSettings::max_task_age`].
    expired: bool,
}

/// How old a task must be before a 404/410 for it means Maesn lost it for good rather
/// than a routing or deploy hiccup (tasks normally end within minutes).
fn unknown_task_after() -> chrono::Duration {
    chrono::Duration::hours(24)
}

/// What polling one task found out.
enum Polled {
    Answered(TaskState),
    /// Maesn does not know the task (404/410): it will never answer.
    Unknown {
        reason: String,
    },
    /// The task reached the maximum age without an end docflow could read.
    Expired {
        reason: String,
    },
}

#[derive(sqlx::FromRow)]
struct Flipped {
    document_id: Uuid,
    tenant_id: Uuid,
    dispatch_job_id: Option<Uuid>,
    error: Option<String>,
    retryable: bool,
}

/// Why a task could not be read this time.
enum Unread {
    NoIntegration,
    Maesn(DatevError),
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::NoIntegration => {
                f.write_str("the tenant has no DATEV integration any more (disconnected)")
            }
            Unread::Maesn(e) => write!(f, "{}", error_chain(e)),
        }
    }
}

/// [`poll_open_tasks_with`] with the default [`PollSettings`].
pub async fn poll_open_tasks<C: DatevConnector>(
    pool: &PgPool,
    connector: &C,
    limit: i64,
) -> Result<PollSummary, sqlx::Error> {
    poll_open_tasks_with(pool, connector, limit, &PollSettings::default()).await
}

/// Polls up to `limit` open Maesn tasks (audits `submitted`/`in_progress` with a task
/// id, least recently updated first; those of tenants that disconnected DATEV too) and
/// moves each audit to what Maesn reports: `in_progress`, `succeeded` (a
/// `PARTIAL_SUCCESS` keeps DATEV's `information` on the audit and marks a notice due),
/// or `failed` with DATEV's messages — `retryable = false` when DATEV rejected the
/// booking as a duplicate ([`crate::datev::is_duplicate_rejection`]), `true` for every
/// other task failure (validation errors, a cancelled task: nothing was booked, a
/// corrected re-export may run). One short statement per audit, none held across a
/// call, each guarded by the audit still being open; an unreadable task is counted in
/// [`PollSummary::errors`] and moved to the back of the poll order for the next run —
/// except a task older than a day that Maesn answers 404/410 for, which will never
/// answer, and a task older than [`PollSettings::max_task_age`] that is still open or
/// unreadable: that audit is `failed`, `retryable = false`, with an error saying to check
/// DATEV. Every audit this fails is reported in [`PollSummary::failed_exports`] and
/// marked `notice_due`, so the sweeper tells the admins (once) even when this call is
/// cut short afterwards. For the sweeper; fails only when the database does.
pub async fn poll_open_tasks_with<C: DatevConnector>(
    pool: &PgPool,
    connector: &C,
    limit: i64,
    settings: &PollSettings,
) -> Result<PollSummary, sqlx::Error> {
    let max_age = match settings.max_task_age.as_secs() {
        secs if secs >= 3600 && secs % 3600 == 0 => format!("{} h", secs / 3600),
        secs => format!("{secs} s"),
    };
    let open: Vec<OpenTask> = sqlx::query_as(
        r#"
        SELECT a.id, a.created_at, a.tenant_id, a.task_id, i.company_id,
               a.created_at < now() - make_interval(secs => $2) AS expired
          FROM ap_datev_export_audit a
          LEFT JOIN tenant_datev_integration i ON i.tenant_id = a.tenant_id
         WHERE a.task_id IS NOT NULL AND a.status IN ('submitted', 'in_progress')
         ORDER BY a.updated_at
         LIMIT $1
        "#,
    )
    .bind(limit)
    .bind(settings.max_task_age.as_secs_f64())
    .fetch_all(pool)
    .await?;
    let mut summary = PollSummary::default();
    for task in open {
        let answer = match &task.company_id {
            None => Err(Unread::NoIntegration),
            Some(company_id) => {
                let account = DatevAccount {
                    tenant_id: task.tenant_id,
                    company_id: company_id.clone(),
                };
                connector
                    .async_task(&account, &task.task_id)
                    .await
                    .map_err(Unread::Maesn)
            }
        };
        let give_up = |why: String| Polled::Expired {
            reason: format!(
                "DATEV export task {} did not end within {max_age} ({why}); whether DATEV \
                 booked the document is unknown: check DATEV, then run docflow export resolve {} \
                 --absent or --present",
                task.task_id, task.id
            ),
        };
        let state = match answer {
            Ok(TaskState::InProgress) if task.expired => {
                give_up("Maesn still reports it open or in progress".to_owned())
            }
            Ok(state) => Polled::Answered(state),
            // Maesn no longer knows the task (expired, another account): asking again
            // will never answer, and whether DATEV booked it is unknown. Ended as a
            // non-retryable failure a person must check, instead of being polled for ever.
            Err(Unread::Maesn(DatevError::Status {
                status: status @ (404 | 410),
                body,
                ..
            })) if chrono::Utc::now() - task.created_at > unknown_task_after() => Polled::Unknown {
                reason: format!(
                    "Maesn does not know task {} (HTTP {status}: {body}); whether DATEV booked the document is unknown: check DATEV before exporting again",
                    task.task_id
                ),
            },
            Err(e) if task.expired => give_up(format!("last poll: {e}")),
            Err(e) => {
                tracing::warn!(audit_id = %task.id, task_id = %task.task_id, error.message = %e, "could not read the Maesn task");
                summary.errors += 1;
                // To the back of the poll order: tasks that cannot be read now must not
                // keep the others from being polled.
                sqlx::query(
                    "UPDATE ap_datev_export_audit SET updated_at = now() \
                      WHERE id = $1 AND status IN ('submitted', 'in_progress')",
                )
                .bind(task.id)
                .execute(pool)
                .await?;
                continue;
            }
        };
        let mut information: Option<serde_json::Value> = None;
        let (status, error, retryable, notice) = match &state {
            Polled::Unknown { reason } | Polled::Expired { reason } => {
                ("failed", Some(reason.clone()), false, true)
            }
            Polled::Answered(TaskState::InProgress) => ("in_progress", None, true, false),
            Polled::Answered(TaskState::Succeeded { information: info }) => {
                if !info.is_empty() {
                    information = Some(json!(info));
                }
                ("succeeded", None, true, false)
            }
            Polled::Answered(TaskState::PartiallySucceeded { information: info }) => {
                information = Some(json!(info));
                ("succeeded", None, true, true)
            }
            Polled::Answered(TaskState::Failed { information }) => {
                let duplicate = is_duplicate_rejection(information);
                let detail = if information.is_empty() {
                    "no details from DATEV".to_owned()
                } else {
                    information.join("; ")
                };
                let error = if duplicate {
                    format!(
                        "DATEV rejected the booking as a duplicate: {detail}; do not export again"
                    )
                } else {
                    format!("DATEV task failed: {detail}")
                };
                ("failed", Some(error), !duplicate, true)
            }
        };
        let flipped: Option<Flipped> = sqlx::query_as(
            r#"
            UPDATE ap_datev_export_audit
               SET status = $2, error = COALESCE($3, error), retryable = $4, updated_at = now(),
                   notice_due = $5, information = COALESCE($6, information)
             WHERE id = $1 AND status IN ('submitted', 'in_progress')
            RETURNING document_id, tenant_id, dispatch_job_id, error, retryable
            "#,
        )
        .bind(task.id)
        .bind(status)
        .bind(&error)
        .bind(retryable)
        .bind(notice)
        .bind(&information)
        .fetch_optional(pool)
        .await?;
        let Some(flipped) = flipped else {
            continue; // another poll settled it first
        };
        match state {
            Polled::Answered(TaskState::InProgress) => summary.still_running += 1,
            Polled::Answered(TaskState::Succeeded { .. }) => summary.succeeded += 1,
            Polled::Answered(TaskState::PartiallySucceeded { .. }) => {
                summary.succeeded += 1;
                summary.partial += 1;
                tracing::warn!(audit_id = %task.id, task_id = %task.task_id, "DATEV booked the export with remarks (PARTIAL_SUCCESS)");
            }
            Polled::Answered(TaskState::Failed { .. })
            | Polled::Unknown { .. }
            | Polled::Expired { .. } => {
                summary.failed += 1;
                if matches!(state, Polled::Expired { .. }) {
                    summary.expired += 1;
                }
                tracing::warn!(audit_id = %task.id, task_id = %task.task_id, retryable = flipped.retryable, "DATEV export task failed");
                summary.failed_exports.push(FailedExport {
                    audit_id: task.id,
                    document_id: flipped.document_id,
                    tenant_id: flipped.tenant_id,
                    dispatch_job_id: flipped.dispatch_job_id,
                    error: flipped.error.unwrap_or_default(),
                    retryable: flipped.retryable,
                });
            }
        }
    }
    summary.oldest_open_seconds = oldest_open_task_seconds(pool).await?;
    Ok(summary)
}

/// The age in whole seconds of the oldest open task (an audit `submitted`/`in_progress`
/// with a task id), counted from its audit's creation; 0 when none is open.
pub async fn oldest_open_task_seconds(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let age: Option<f64> = sqlx::query_scalar(
        r#"
        SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8
          FROM ap_datev_export_audit
         WHERE task_id IS NOT NULL AND status IN ('submitted', 'in_progress')
        "#,
    )
    .fetch_one(pool)
    .await?;
    Ok(age.unwrap_or(0.0).max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> Env<impl Fn(&str) -> Option<String>> {
        Env::new(move |var| {
            vars.iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.to_string())
        })
    }

    fn settings(
        vars: &'static [(&'static str, &'static str)],
    ) -> Result<WorkerSettings, SettingsError> {
        WorkerSettings::from_env(
            &env(vars),
            "bucket",
            &Heartbeat::default(),
            &MaesnConfig::default(),
        )
    }

    #[test]
    fn the_stale_threshold_defaults_to_600_seconds_and_the_retry_base_to_2_seconds() {
        let settings = settings(&[]).unwrap();
        assert_eq!(settings.stale_running, Duration::from_secs(600));
        assert_eq!(settings.retry.base_delay, Duration::from_secs(2));
        assert_eq!(settings.retry.attempts, 3);
        assert_eq!(settings.backoff, Backoff::default());
        assert_eq!(settings.record_reserve, Duration::from_secs(15));
    }

    #[test]
    fn a_stale_threshold_a_live_worker_could_reach_is_rejected_by_name() {
        // Heartbeat 60 s, Maesn 3 × 30 s + 2.5 s + 5 s of waits: 2 × 60 + 97.5 = 217.5 s.
        for stale in ["0", "217"] {
            let vars: &'static [(&'static str, &'static str)] = match stale {
                "0" => &[("STALE_RUNNING_SECONDS", "0")],
                _ => &[("STALE_RUNNING_SECONDS", "217")],
            };
            let err = settings(vars).unwrap_err().to_string();
            assert!(err.contains("STALE_RUNNING_SECONDS"), "{err}");
        }
        assert!(settings(&[("STALE_RUNNING_SECONDS", "218")]).is_ok());
    }

    #[test]
    fn the_backoff_may_not_outlast_the_sweepers_pending_threshold() {
        let err = settings(&[("OUTPUT_BACKOFF_MAX_SECONDS", "901")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("OUTPUT_BACKOFF_MAX_SECONDS"), "{err}");
    }

    #[test]
    fn the_backoff_doubles_per_receive_honours_retry_after_and_caps_at_900_seconds() {
        let backoff = Backoff::default();
        let secs = |n, ra: Option<u64>| backoff.after(n, ra.map(Duration::from_secs)).as_secs();
        assert_eq!(secs(1, None), 60);
        assert_eq!(secs(2, None), 120);
        assert_eq!(secs(3, None), 240);
        assert_eq!(secs(1, Some(300)), 300, "Retry-After wins when longer");
        assert_eq!(secs(2, Some(30)), 120, "the schedule wins when longer");
        assert_eq!(
            secs(1, Some(86_400)),
            900,
            "never beyond the sweeper's threshold"
        );
        assert_eq!(secs(30, None), 900);
    }

    #[test]
    fn every_s3_key_gives_a_maesn_file_name_with_an_extension_and_at_most_255_chars() {
        let long = "x".repeat(1000);
        let long_unicode = "ü".repeat(400);
        let cases: Vec<(Option<&str>, String, Option<&str>)> = vec![
            (
                Some("RE-2026-0042.pdf"),
                "documents/a.pdf".into(),
                Some("application/pdf"),
            ),
            (None, "documents/abc".into(), Some("application/pdf")),
            (None, "documents/".into(), Some("image/png")),
            (None, "".into(), None),
            (Some("   "), "k/scan.JPEG".into(), Some("image/jpeg")),
            (None, format!("documents/{long}"), Some("application/pdf")),
            (None, format!("documents/{long}.pdf"), None),
            (Some(long_unicode.as_str()), "k".into(), Some("image/tiff")),
            (
                None,
                "documents/...".into(),
                Some("text/plain; charset=utf-8"),
            ),
            (None, "documents/a:b*c?\"<d>|e\u{7}.pdf".into(), None),
            (Some("C:\\Users\\anna\\Rechnung Mai.pdf"), "k".into(), None),
            (
                None,
                "documents/archive.tar.gz.unknownextension".into(),
                None,
            ),
        ];
        for (name, key, mime) in &cases {
            let file = maesn_file_name(*name, key, *mime);
            assert!(file.chars().count() <= MAX_FILE_NAME_CHARS, "{file}");
            let (stem, ext) = file.rsplit_once('.').expect("an extension");
            assert!(!stem.is_empty() && !ext.is_empty(), "{file}");
            assert!(ext.chars().all(|c| c.is_ascii_alphanumeric()), "{file}");
            assert!(
                !file
                    .chars()
                    .any(|c| c.is_control() || "/\\:*?\"<>|".contains(c)),
                "{file}"
            );
        }
        assert_eq!(
            maesn_file_name(Some("RE-2026-0042.pdf"), "x", None),
            "RE-2026-0042.pdf"
        );
        assert_eq!(
            maesn_file_name(None, "documents/abc", Some("application/pdf")),
            "abc.pdf"
        );
        assert_eq!(
            maesn_file_name(None, "documents/", Some("image/png")),
            "document.png"
        );
        assert_eq!(maesn_file_name(None, "", None), "document.bin");
        assert_eq!(
            maesn_file_name(Some("C:\\Users\\anna\\Rechnung Mai.pdf"), "k", None),
            "Rechnung Mai.pdf"
        );
        let cut = maesn_file_name(None, &format!("documents/{long}.pdf"), None);
        assert_eq!(cut.chars().count(), 255);
        assert!(cut.ends_with(".pdf"));
    }

    #[test]
    fn the_largest_file_must_fit_the_memory_of_every_concurrent_record() {
        let defaults = settings(&[]).unwrap();
        assert_eq!(defaults.max_file_bytes, DEFAULT_MAX_FILE_BYTES);
        assert!(defaults.validate_memory(512, 10).is_ok());
        let err = settings(&[("OUTPUT_MAX_FILE_BYTES", "20971520")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("OUTPUT_MAX_FILE_BYTES"), "{err}");
        assert!(
            settings(&[
                ("OUTPUT_MAX_FILE_BYTES", "20971520"),
                ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
            ])
            .is_ok()
        );
        assert!(
            settings(&[
                ("OUTPUT_MAX_FILE_BYTES", "20971520"),
                ("BATCH_CONCURRENCY", "5")
            ])
            .is_ok()
        );
        assert!(settings(&[("OUTPUT_MAX_FILE_BYTES", "0")]).is_err());
    }

    #[test]
    fn the_payload_hash_covers_the_file_and_ignores_nothing_else() {
        let proposal = |bytes: &'static [u8], number: &str| BookingProposal {
            account: DatevAccount {
                tenant_id: Uuid::nil(),
                company_id: "c".into(),
            },
            proposal: json!({ "number": number }),
            booking_type: "BILL".into(),
            folder_management: json!({}),
            file: DocumentFile {
                file_name: "a.pdf".into(),
                mime_type: "application/pdf".into(),
                bytes: Bytes::from_static(bytes),
            },
        };
        let (payload, hash) = payload_of(&proposal(b"one", "1"));
        assert_eq!(hash.len(), 64);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(payload["file"]["size"], 3);
        assert_eq!(payload_of(&proposal(b"one", "1")).1, hash, "stable");
        assert_ne!(payload_of(&proposal(b"two", "1")).1, hash, "file counted");
        assert_ne!(
            payload_of(&proposal(b"one", "2")).1,
            hash,
            "proposal counted"
        );
    }
}
