//! The worker steps of the document-output function, each one short database
//! statement or one external call, so that no transaction or pooled connection is ever
//! held across S3 or Maesn.
//!
//! Order in the function: [`claim`] → (claimed) [`linked_audit`] → either
//! [`complete_from_audit`] (a stale job whose export already reached Maesn) or
//! [`super::check_eligibility`] → [`export`]. While it works, the function's heartbeat
//! calls [`touch`], which keeps `updated_at` fresh: `updated_at` is the liveness marker
//! the stale-running claim reads.
//!
//! [`poll_open_tasks`] is the async-task poll the sweeper calls: it moves
//! `ap_datev_export_audit` rows from `submitted`/`in_progress` to their terminal state.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{JobStatus, OutputJob};
use crate::datev::{
    BookingProposal, DatevAccount, DatevConnector, DatevError, DocumentFile, TaskState,
};
use crate::ids::OutputJobId;
use crate::retry::{Classify, RetryClass, RetryPolicy};
use crate::settings::{Env, SettingsError};

/// Settings of the worker steps.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// `STALE_RUNNING_SECONDS` (default 600): a running job whose `updated_at` is older
    /// is presumed dead and may be claimed again. Longer than several heartbeats.
    pub stale_running: Duration,
    /// `HTTP_RETRY_BASE_MS` (default 2000): base delay of the in-process retries of the
    /// Maesn call and the S3 read (3 attempts).
    pub retry: RetryPolicy,
    /// `DOCUMENTS_BUCKET` (shared setting): where the document files are.
    pub documents_bucket: String,
}

impl WorkerSettings {
    pub fn from_env<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
        documents_bucket: &str,
    ) -> Result<Self, SettingsError> {
        let stale_running = env.seconds_or("STALE_RUNNING_SECONDS", 600)?;
        if stale_running.is_zero() {
            return Err(SettingsError::Invalid {
                var: "STALE_RUNNING_SECONDS",
                reason: "must be at least 1 (0 would let every delivery re-run a live job)".into(),
            });
        }
        Ok(WorkerSettings {
            stale_running,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(
                env.parse_or("HTTP_RETRY_BASE_MS", 2000)?,
            )),
            documents_bucket: documents_bucket.to_owned(),
        })
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

/// Claims a pending job, or a running one whose worker stopped touching it for
/// `stale_running`, in one statement. `None`: someone else holds it, it is finished,
/// or it does not exist (ask [`load_job`] which).
pub async fn claim(
    pool: &PgPool,
    job_id: OutputJobId,
    stale_running: Duration,
) -> Result<Option<OutputJob>, sqlx::Error> {
    sqlx::query_as(
        r#"
        UPDATE document_output_job
           SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now()
         WHERE id = $1
           AND (status = 'pending'
                OR (status = 'running' AND updated_at < now() - make_interval(secs => $2)))
        RETURNING *
        "#,
    )
    .bind(job_id)
    .bind(stale_running.as_secs_f64())
    .fetch_optional(pool)
    .await
}

/// The heartbeat's liveness touch: moves `updated_at` while the job is still running.
pub async fn touch(pool: &PgPool, job_id: OutputJobId) -> Result<(), sqlx::Error> {
    sqlx::query(
        r#"
        UPDATE document_output_job SET updated_at = now()
         WHERE id = $1 AND status = 'running'
        "#,
    )
    .bind(job_id)
    .execute(pool)
    .await
    .map(drop)
}

/// Marks a running job failed with `error`. Returns whether it was still running (a
/// job taken over by another worker after going stale is left alone).
pub async fn mark_failed(
    pool: &PgPool,
    job_id: OutputJobId,
    error: &str,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job
           SET status = 'failed', last_error = $2, completed_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'running'
        "#,
    )
    .bind(job_id)
    .bind(error)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

async fn mark_dispatched(
    conn: &mut sqlx::PgConnection,
    job_id: OutputJobId,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        r#"
        UPDATE document_output_job
           SET status = 'dispatched', last_error = NULL, completed_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'running'
        "#,
    )
    .bind(job_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
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

/// The newest audit this job created, if any (only a job that was claimed before, by a
/// worker that then died, can have one).
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

/// What [`complete_from_audit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// The job was completed from its audit (`dispatched` or `failed`).
    Completed(JobStatus),
    /// The audit does not say whether Maesn received the export (no task id, not
    /// terminal): the job is left running for manual repair; exporting again could
    /// book the document twice.
    Ambiguous,
}

/// Completes a (stale) job from the audit its earlier export created, without a new
/// export: a task id or `succeeded` → `dispatched` (the audit tracks the rest);
/// `failed` → `failed` with the audit's error; anything else is [`Recovery::Ambiguous`].
pub async fn complete_from_audit(
    pool: &PgPool,
    job: &OutputJob,
    audit: &ExportAudit,
) -> Result<Recovery, sqlx::Error> {
    if audit.status == "failed" {
        let error = format!(
            "DATEV export failed (audit {}): {}",
            audit.id,
            audit.error.as_deref().unwrap_or("no error recorded")
        );
        mark_failed(pool, job.id, &error).await?;
        return Ok(Recovery::Completed(JobStatus::Failed));
    }
    if audit.task_id.is_some() || audit.status == "succeeded" {
        let mut conn = pool.acquire().await?;
        mark_dispatched(&mut conn, job.id).await?;
        return Ok(Recovery::Completed(JobStatus::Dispatched));
    }
    Ok(Recovery::Ambiguous)
}

/// Says on a job left `running` for repair why it is stuck (the status stays, so no
/// new export starts; the document page shows the reason).
pub async fn note_in_doubt(
    pool: &PgPool,
    job_id: OutputJobId,
    note: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE document_output_job SET last_error = $2 WHERE id = $1 AND status = 'running'",
    )
    .bind(job_id)
    .bind(note)
    .execute(pool)
    .await?;
    Ok(())
}

/// How an export attempt ended; both are recorded on the job (and the audit, once one
/// exists), so the message is finished either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportOutcome {
    Dispatched { audit_id: Uuid, task_id: String },
    Failed { error: String },
}

/// Why nothing could be recorded: the job stays `running` (and becomes stale, so a
/// later delivery recovers it; if an audit row was already written, recovery finds it
/// and does not export again).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("database error during the export of job {job_id}")]
    Database {
        job_id: OutputJobId,
        #[source]
        source: sqlx::Error,
    },
}

impl Classify for ExportError {
    fn retry_class(&self) -> RetryClass {
        match self {
            ExportError::Database { source, .. } => source.retry_class(),
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
    file_path: String,
    file_name: Option<String>,
    mime_type: Option<String>,
    structured_data: Option<serde_json::Value>,
    account_key: String,
    company_id: String,
    config: serde_json::Value,
}

/// Exports a claimed, eligible job: reads the document file from S3, writes a
/// `requested` audit linked to the job, calls Maesn (transient failures retried in
/// process with `settings.retry`), then in one transaction stores the task id on the
/// audit (`submitted`) and marks the job `dispatched` — or, if the export could not be
/// initiated, marks audit and job `failed` with the error.
///
/// Returns `Err` only when the database did not take the outcome; see [`ExportError`].
pub async fn export<C: DatevConnector>(
    pool: &PgPool,
    s3: &aws_sdk_s3::Client,
    connector: &C,
    settings: &WorkerSettings,
    job: &OutputJob,
) -> Result<ExportOutcome, ExportError> {
    let db = |source| ExportError::Database {
        job_id: job.id,
        source,
    };
    let context: Option<ExportContext> = sqlx::query_as(
        r#"
        SELECT d.file_path, d.file_name, d.mime_type, d.structured_data,
               i.account_key, i.company_id, i.config
          FROM document d
          JOIN tenant_datev_integration i ON i.tenant_id = d.tenant_id AND i.status = 'active'
         WHERE d.id = $1
        "#,
    )
    .bind(job.document_id)
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    let Some(context) = context else {
        let error = super::Ineligible::NoActiveIntegration.to_string();
        mark_failed(pool, job.id, &error).await.map_err(db)?;
        return Ok(ExportOutcome::Failed { error });
    };

    let bytes = match settings
        .retry
        .run(|_| read_file(s3, &settings.documents_bucket, &context.file_path))
        .await
    {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "document file unreadable");
            let error = crate::retry::error_chain(&e);
            mark_failed(pool, job.id, &error).await.map_err(db)?;
            return Ok(ExportOutcome::Failed { error });
        }
    };

    let proposal = booking_proposal(job, &context, bytes);
    let request_payload = json!({
        "bookingProposal": proposal.proposal,
        "bookingType": proposal.booking_type,
        "folderManagement": proposal.folder_management,
        "file": { "name": proposal.file.file_name, "mimeType": proposal.file.mime_type, "size": proposal.file.bytes.len() },
    });
    // Committed before the call: if this worker dies during it, recovery finds an audit
    // without a task id and leaves the job for repair instead of exporting twice.
    let audit_id: Uuid = sqlx::query_scalar(
        r#"
        INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, request_payload)
        VALUES ($1, $2, $3, 'requested', $4)
        RETURNING id
        "#,
    )
    .bind(job.tenant_id)
    .bind(job.document_id)
    .bind(job.id)
    .bind(&request_payload)
    .fetch_one(pool)
    .await
    .map_err(db)?;

    let result = settings
        .retry
        .run(|attempt| {
            tracing::info!(attempt, audit_id = %audit_id, "sending booking proposal to Maesn");
            let proposal = &proposal;
            async move {
                connector
                    .create_booking_proposal(proposal)
                    .await
                    .map_err(CreateError)
            }
        })
        .await
        .map_err(|CreateError(e)| e);

    let mut tx = pool.begin().await.map_err(db)?;
    let outcome = match result {
        Ok(task_id) => {
            sqlx::query(
                r#"
                UPDATE ap_datev_export_audit
                   SET status = 'submitted', task_id = $2, updated_at = now()
                 WHERE id = $1
                "#,
            )
            .bind(audit_id)
            .bind(&task_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            if !mark_dispatched(&mut tx, job.id).await.map_err(db)? {
                tracing::warn!(job_id = %job.id, "job was no longer running when its export was accepted");
            }
            tracing::info!(task_id = %task_id, audit_id = %audit_id, "booking proposal accepted by Maesn");
            ExportOutcome::Dispatched { audit_id, task_id }
        }
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, audit_id = %audit_id, "DATEV export could not be initiated");
            // A refusal booked nothing, so a later export may try again; an answer Maesn
            // may have acted on must be checked in DATEV by a person before any new export.
            let in_doubt = e.may_have_been_accepted();
            let error = if in_doubt {
                format!(
                    "DATEV export in doubt: Maesn may have accepted it ({e}); check DATEV before exporting again"
                )
            } else {
                format!("DATEV export could not be initiated: {e}")
            };
            sqlx::query(
                r#"
                UPDATE ap_datev_export_audit
                   SET status = 'failed', error = $2, retryable = $3, updated_at = now()
                 WHERE id = $1
                "#,
            )
            .bind(audit_id)
            .bind(&error)
            .bind(!in_doubt)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            sqlx::query(
                r#"
                UPDATE document_output_job
                   SET status = 'failed', last_error = $2, completed_at = now(), updated_at = now()
                 WHERE id = $1 AND status = 'running'
                "#,
            )
            .bind(job.id)
            .bind(&error)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            ExportOutcome::Failed { error }
        }
    };
    tx.commit().await.map_err(db)?;
    Ok(outcome)
}

/// A booking-proposal error as the in-process retry sees it: one Maesn may have acted on
/// is not retried, whatever its class, since a second POST could book twice.
#[derive(Debug)]
struct CreateError(DatevError);

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Classify for CreateError {
    fn retry_class(&self) -> RetryClass {
        if self.0.may_have_been_accepted() {
            RetryClass::Permanent
        } else {
            self.0.retry_class()
        }
    }
}

async fn read_file(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Result<Vec<u8>, FileError> {
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
    let bytes = object
        .body
        .collect()
        .await
        .map_err(|e| err(RetryClass::Transient, Box::new(e)))?;
    Ok(bytes.into_bytes().to_vec())
}

/// The booking proposal for the document, from its extracted data (fields the
/// extraction did not find are left out; DATEV's own validation reports what is
/// missing). `bookingType` and `folderManagement` come from the integration's config
/// (`booking_type`, default `BILL`; `folder_management`, default Accounting/Invoices).
fn booking_proposal(job: &OutputJob, c: &ExportContext, bytes: Vec<u8>) -> BookingProposal {
    let data = c.structured_data.clone().unwrap_or_else(|| json!({}));
    let pick = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| data.get(*k).filter(|v| !v.is_null()).cloned())
    };
    let mut proposal = serde_json::Map::new();
    // Maesn uses a UUID `id` to link the uploaded file to the proposal.
    proposal.insert("id".into(), json!(job.document_id));
    for (field, keys) in [
        ("number", &["invoice_number", "number"][..]),
        ("bookingProposalDate", &["invoice_date", "date"][..]),
        ("dueDate", &["due_date"][..]),
        ("deliveryDate", &["delivery_date"][..]),
        ("currency", &["currency"][..]),
        (
            "totalGrossAmount",
            &["total_gross_amount", "total_amount", "gross_amount"][..],
        ),
        ("vatId", &["vendor_vat_id", "vat_id"][..]),
        ("orderId", &["order_number", "purchase_order_number"][..]),
        ("notes", &["notes", "description"][..]),
    ] {
        if let Some(value) = pick(keys) {
            proposal.insert(field.into(), value);
        }
    }
    if let Some(name) = pick(&["vendor_name", "counterparty_name", "supplier_name"]) {
        proposal.insert("contact".into(), json!({ "name": name }));
    }
    let file_name = c.file_name.clone().unwrap_or_else(|| {
        c.file_path
            .rsplit('/')
            .next()
            .unwrap_or(&c.file_path)
            .to_owned()
    });
    BookingProposal {
        account: DatevAccount {
            account_key: c.account_key.clone().into(),
            company_id: c.company_id.clone(),
        },
        proposal: proposal.into(),
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
    }
}

/// What one [`poll_open_tasks`] run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollSummary {
    pub still_running: usize,
    pub succeeded: usize,
    pub failed: usize,
    /// Tasks whose state could not be read this time (logged; polled again next run).
    pub errors: usize,
}

#[derive(sqlx::FromRow)]
struct OpenTask {
    id: Uuid,
    task_id: String,
    account_key: String,
    company_id: String,
}

/// Polls up to `limit` open Maesn tasks (audits `submitted`/`in_progress` with a task
/// id, least recently updated first) and moves each audit to what Maesn reports:
/// `in_progress`, `succeeded`, or `failed` with DATEV's messages. One short statement
/// per audit, none held across a call; an unreadable task is counted in
/// [`PollSummary::errors`] and left for the next run. For the sweeper.
pub async fn poll_open_tasks<C: DatevConnector>(
    pool: &PgPool,
    connector: &C,
    limit: i64,
) -> Result<PollSummary, sqlx::Error> {
    let open: Vec<OpenTask> = sqlx::query_as(
        r#"
        SELECT a.id, a.task_id, i.account_key, i.company_id
          FROM ap_datev_export_audit a
          JOIN tenant_datev_integration i ON i.tenant_id = a.tenant_id
         WHERE a.task_id IS NOT NULL AND a.status IN ('submitted', 'in_progress')
         ORDER BY a.updated_at
         LIMIT $1
        "#,
    )
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let mut summary = PollSummary::default();
    for task in open {
        let account = DatevAccount {
            account_key: task.account_key.into(),
            company_id: task.company_id,
        };
        let state = match connector.async_task(&account, &task.task_id).await {
            Ok(state) => state,
            Err(e) => {
                let e: DatevError = e;
                tracing::warn!(audit_id = %task.id, task_id = %task.task_id, error.message = %e, error.cause_chain = ?e, "could not read the Maesn task");
                summary.errors += 1;
                continue;
            }
        };
        let (status, error) = match &state {
            TaskState::InProgress => {
                summary.still_running += 1;
                ("in_progress", None)
            }
            TaskState::Succeeded { .. } => {
                summary.succeeded += 1;
                ("succeeded", None)
            }
            TaskState::Failed { information } => {
                summary.failed += 1;
                let detail = if information.is_empty() {
                    "no details from DATEV".to_owned()
                } else {
                    information.join("; ")
                };
                ("failed", Some(format!("DATEV task failed: {detail}")))
            }
        };
        sqlx::query(
            r#"
            UPDATE ap_datev_export_audit
               SET status = $2, error = COALESCE($3, error), updated_at = now()
             WHERE id = $1 AND status IN ('submitted', 'in_progress')
            "#,
        )
        .bind(task.id)
        .bind(status)
        .bind(error)
        .execute(pool)
        .await?;
    }
    Ok(summary)
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

    #[test]
    fn the_stale_threshold_defaults_to_600_seconds_and_the_retry_base_to_2_seconds() {
        let settings = WorkerSettings::from_env(&env(&[]), "bucket").unwrap();
        assert_eq!(settings.stale_running, Duration::from_secs(600));
        assert_eq!(settings.retry.base_delay, Duration::from_secs(2));
        assert_eq!(settings.retry.attempts, 3);
    }

    #[test]
    fn a_zero_stale_threshold_is_rejected_by_name() {
        let err =
            WorkerSettings::from_env(&env(&[("STALE_RUNNING_SECONDS", "0")]), "b").unwrap_err();
        assert!(err.to_string().contains("STALE_RUNNING_SECONDS"), "{err}");
    }
}
