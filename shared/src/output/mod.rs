//! Document output: the enqueue side (final approval, manual re-export) and the worker
//! steps of the document-output function (seed 002). docs/document-output.md has the
//! whole picture, with timelines.
//!
//! A `document_output_job` is the durable record of "dispatch this document's
//! outputs" (today: one DATEV booking proposal through Maesn). Its states:
//!
//! ```text
//! pending ──claim──▶ running ──▶ dispatched   (Maesn accepted; ap_datev_export_audit tracks the rest)
//!    ▲ │                │  └───▶ failed       (in doubt, refused for good, ineligible; last_error, admins notified)
//!    │ └─ send failed ──┼──────▶ failed       (guarded: only while still pending)
//!    └──────────────────┘ passing refusal or no time left: back to pending, the message backs off
//! ```
//!
//! - **Enqueue** ([`on_final_approval`], [`request_manual_export`], [`Dispatcher`]): the
//!   job row is written in the caller's transaction; the SQS message (body = job id) is
//!   sent after the commit. A send failure marks the job failed only `WHERE status =
//!   'pending'`: if a worker already claimed it, the current state is returned untouched.
//!   The partial unique index `idx_document_output_job_document_active` allows one
//!   pending/running job per document; a second request gets
//!   [`EnqueueError::AlreadyInFlight`] and nothing is sent.
//! - **Worker steps** ([`worker`]): claim (with a claim token every later update
//!   checks), heartbeat touch, recovery from a linked audit, eligibility, export, and the
//!   async-task poll the sweeper calls.
//!
//! Every status change fires `NOTIFY output_dispatch` (a trigger in the schema); every
//! insert and status (or `retryable`) change of an `ap_datev_export_audit` fires `NOTIFY
//! datev_export_audit`, the audit event the page waits for. A document has at most one
//! open audit (`requested`/`submitted`/`in_progress`, a partial unique index), and an
//! export in doubt leaves its audit `failed`, not retryable, until a person records what
//! DATEV has (`docflow export resolve`).

pub mod proposal;
pub mod worker;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::ids::{DocumentId, OutputJobId};
use crate::retry::{Classify, RetryClass};

/// `document_output_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type, serde::Serialize)]
#[sqlx(type_name = "document_output_status", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Pending,
    Running,
    Dispatched,
    Failed,
}

/// `document_output_domain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "document_output_domain", rename_all = "snake_case")]
pub enum Domain {
    Ap,
    Ar,
}

/// `document_output_trigger`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "document_output_trigger", rename_all = "snake_case")]
pub enum Trigger {
    ApprovalCompleted,
    Manual,
}

impl JobStatus {
    /// The label as stored; `None` for a value this version of docflow does not know (one
    /// the application added to the enum later).
    pub fn from_label(label: &str) -> Option<Self> {
        Some(match label {
            "pending" => JobStatus::Pending,
            "running" => JobStatus::Running,
            "dispatched" => JobStatus::Dispatched,
            "failed" => JobStatus::Failed,
            _ => return None,
        })
    }
}

impl Domain {
    /// The label as stored; `None` for a value this version of docflow does not know.
    pub fn from_label(label: &str) -> Option<Self> {
        Some(match label {
            "ap" => Domain::Ap,
            "ar" => Domain::Ar,
            _ => return None,
        })
    }
}

impl Trigger {
    /// The label as stored; `None` for a value this version of docflow does not know.
    pub fn from_label(label: &str) -> Option<Self> {
        Some(match label {
            "approval_completed" => Trigger::ApprovalCompleted,
            "manual" => Trigger::Manual,
            _ => return None,
        })
    }
}

/// A `document_output_job` row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutputJob {
    pub id: OutputJobId,
    pub tenant_id: Uuid,
    pub document_id: Uuid,
    pub document_domain: Domain,
    pub trigger: Trigger,
    pub status: JobStatus,
    pub document_version: Option<i32>,
    pub requested_by: Option<Uuid>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Why a job could not be created. The variants other than `Database` are answers
/// for the user, not faults: nothing is retried.
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    #[error("document {0} does not exist")]
    DocumentNotFound(DocumentId),
    #[error("identity {identity} may not export documents of tenant {tenant_id}")]
    NotAllowed { identity: Uuid, tenant_id: Uuid },
    #[error("{0}")]
    Ineligible(#[from] Ineligible),
    /// The partial unique index holds another pending or running job for the document.
    #[error("an output job for document {document_id} is already in flight: {job_id}")]
    AlreadyInFlight {
        document_id: DocumentId,
        job_id: OutputJobId,
    },
    #[error("database error while creating an output job")]
    Database(#[from] sqlx::Error),
}

impl Classify for EnqueueError {
    fn retry_class(&self) -> RetryClass {
        match self {
            EnqueueError::Database(e) => e.retry_class(),
            _ => RetryClass::Permanent,
        }
    }
}

/// Why a document may not be exported to DATEV (checked by the enqueue side and again
/// by the worker, since time passes in between).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ineligible {
    #[error("document is not approved")]
    NotApproved,
    #[error("tenant has no active DATEV integration")]
    NoActiveIntegration,
    #[error(
        "document already has a DATEV export that must not be repeated (audit {audit_id}, status {status})"
    )]
    AlreadyExported { audit_id: Uuid, status: String },
    #[error(
        "a corrected invoice and the invoice it replaces are never both booked without a \
         person's decision: document {partner}, paired with this one, already has a DATEV \
         export (audit {audit_id}, status {status}); if both belong in DATEV, record that with \
         `docflow export allow-both {document} --by <identity> --note <why>` and export again"
    )]
    PartnerExported {
        document: Uuid,
        partner: Uuid,
        audit_id: Uuid,
        status: String,
    },
}

/// The statuses of an export that must not be repeated: under way, in doubt, succeeded,
/// or failed as non-retryable (SQL, on an audit row `a`).
const BLOCKING_AUDIT: &str = "(a.status IN ('requested', 'submitted', 'in_progress', 'succeeded') OR (a.status = 'failed' AND NOT a.retryable))";

/// The documents paired with the document row `d` as a corrected invoice and the invoice
/// it replaces by a `replaces` match (docs/matching.md *Corrected invoices*), as a SQL
/// `uuid[]` expression: read with the document in the statement that reads it.
pub(crate) const BOOKING_PARTNERS: &str = r#"ARRAY(
    SELECT CASE WHEN m.document_a_id = d.id THEN m.document_b_id ELSE m.document_a_id END
      FROM document_match m
     WHERE (m.document_a_id = d.id OR m.document_b_id = d.id)
       AND m.decided_by = 'rule'
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(m.evidence) e
                    WHERE e->>'kind' = 'replaces'))"#;

/// Of `partners` (the other invoices of a corrected-invoice pair: its `replaces` matches,
/// [`BOOKING_PARTNERS`], and the ones matching would pair it with), the first that already has an export that
/// must not be repeated, unless a person decided `document_id` may be booked beside it
/// (`document_booking_decision`, `docflow export allow-both`).
pub async fn partner_exported(
    conn: &mut PgConnection,
    document_id: Uuid,
    partners: &[Uuid],
) -> Result<Option<Ineligible>, sqlx::Error> {
    if partners.is_empty() {
        return Ok(None);
    }
    let found: Option<(Uuid, Uuid, String)> = sqlx::query_as(&format!(
        r#"
        SELECT a.document_id, a.id, a.status
          FROM ap_datev_export_audit a
         WHERE a.document_id = ANY($2) AND {BLOCKING_AUDIT}
           AND NOT EXISTS (SELECT 1 FROM document_booking_decision b WHERE b.document_id = $1)
         ORDER BY a.created_at DESC
         LIMIT 1
        "#
    ))
    .bind(document_id)
    .bind(partners)
    .fetch_optional(conn)
    .await?;
    Ok(
        found.map(|(partner, audit_id, status)| Ineligible::PartnerExported {
            document: document_id,
            partner,
            audit_id,
            status,
        }),
    )
}

/// Serialises the exports of the invoices of a corrected-invoice pair: a
/// transaction-scoped advisory lock per document (`document_id` and its `partners`),
/// smallest key first. Two workers exporting the two invoices at once take the same locks
/// in the same order, so the second sees the first's `requested` audit
/// ([`partner_exported`]) instead of booking beside it.
pub async fn lock_booking_pair(
    conn: &mut PgConnection,
    document_id: Uuid,
    partners: &[Uuid],
) -> Result<(), sqlx::Error> {
    let mut ids = partners.to_vec();
    ids.push(document_id);
    sqlx::query(
        r#"
        SELECT pg_advisory_xact_lock(k.key)
          FROM (SELECT DISTINCT hashtextextended('docflow.output.booking:' || id::text, 0) AS key
                  FROM unnest($1::uuid[]) AS id) k
         ORDER BY k.key
        "#,
    )
    .bind(&ids)
    .execute(conn)
    .await?;
    Ok(())
}

/// Checks the DATEV export rules of a document: approved, the tenant's DATEV
/// integration active, no export that must not be repeated (an audit that
/// succeeded, is under way or in doubt, or failed as non-retryable), and no such export
/// of the other invoice of a corrected-invoice pair ([`partner_exported`]). The audits of
/// `except_job` are ignored (a worker checking its own job). Fails only on database
/// errors.
pub async fn check_eligibility(
    conn: &mut PgConnection,
    document_id: Uuid,
    except_job: Option<OutputJobId>,
) -> Result<Result<(), Ineligible>, sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct Row {
        approved: bool,
        integration_active: bool,
        blocking_audit: Option<Uuid>,
        blocking_status: Option<String>,
        partner: Option<Uuid>,
        partner_audit: Option<Uuid>,
        partner_status: Option<String>,
    }
    let row: Row = sqlx::query_as(&format!(
        r#"
        SELECT document_is_approved(d.id) AS approved,
               EXISTS (SELECT 1 FROM tenant_datev_integration i
                        WHERE i.tenant_id = d.tenant_id AND i.status = 'active') AS integration_active,
               own.id AS blocking_audit,
               own.status AS blocking_status,
               p.document_id AS partner,
               p.id AS partner_audit,
               p.status AS partner_status
          FROM document d
          LEFT JOIN LATERAL (
                SELECT a.id, a.status FROM ap_datev_export_audit a
                 WHERE a.document_id = d.id
                   -- Exports made before output jobs (dispatch_job_id NULL) always count.
                   AND ($2::uuid IS NULL OR a.dispatch_job_id IS DISTINCT FROM $2)
                   AND {BLOCKING_AUDIT}
                 ORDER BY a.created_at DESC
                 LIMIT 1) own ON true
          -- The other invoice of a corrected-invoice pair, exported; unless a person
          -- decided this one may be booked beside it.
          LEFT JOIN LATERAL (
                SELECT a.document_id, a.id, a.status FROM ap_datev_export_audit a
                 WHERE a.document_id = ANY({BOOKING_PARTNERS}) AND {BLOCKING_AUDIT}
                   AND NOT EXISTS (SELECT 1 FROM document_booking_decision b
                                    WHERE b.document_id = d.id)
                 ORDER BY a.created_at DESC
                 LIMIT 1) p ON true
         WHERE d.id = $1
        "#
    ))
    .bind(document_id)
    .bind(except_job)
    .fetch_one(&mut *conn)
    .await?;
    Ok(if !row.approved {
        Err(Ineligible::NotApproved)
    } else if !row.integration_active {
        Err(Ineligible::NoActiveIntegration)
    } else if let (Some(audit_id), Some(status)) = (row.blocking_audit, row.blocking_status) {
        Err(Ineligible::AlreadyExported { audit_id, status })
    } else if let (Some(partner), Some(audit_id), Some(status)) =
        (row.partner, row.partner_audit, row.partner_status)
    {
        Err(Ineligible::PartnerExported {
            document: document_id,
            partner,
            audit_id,
            status,
        })
    } else {
        Ok(())
    })
}

/// Inserts a pending job for `document_id` unless one is already in flight (the
/// partial unique index decides; `ON CONFLICT` keeps the caller's transaction usable).
///
/// A conflict is followed by a read of the job in flight. When that read finds none,
/// the conflicting job finished in between (the index no longer covers it) and the
/// insert is tried again; only a document that does not exist is `DocumentNotFound`.
async fn insert_job(
    conn: &mut PgConnection,
    document_id: DocumentId,
    trigger: Trigger,
    requested_by: Option<Uuid>,
) -> Result<OutputJob, EnqueueError> {
    const TRIES: usize = 3;
    for _ in 0..TRIES {
        let inserted: Option<OutputJob> = sqlx::query_as(
            r#"
            INSERT INTO document_output_job
                   (tenant_id, document_id, document_domain, trigger, status, document_version, requested_by)
            SELECT d.tenant_id, d.id, 'ap', $2, 'pending', d.version, $3
              FROM document d
             WHERE d.id = $1
            ON CONFLICT (document_id) WHERE status IN ('pending', 'running') DO NOTHING
            RETURNING *
            "#,
        )
        .bind(document_id)
        .bind(trigger)
        .bind(requested_by)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(job) = inserted {
            return Ok(job);
        }
        let in_flight = in_flight_job(conn, document_id).await?;
        match after_conflict(in_flight, document_exists(conn, document_id).await?) {
            AfterConflict::InFlight(job_id) => {
                return Err(EnqueueError::AlreadyInFlight {
                    document_id,
                    job_id,
                });
            }
            AfterConflict::NoDocument => return Err(EnqueueError::DocumentNotFound(document_id)),
            AfterConflict::TryAgain => {
                tracing::info!(document_id = %document_id, "the conflicting output job finished meanwhile; inserting again");
            }
        }
    }
    // Jobs of this document keep finishing between our statements: report the newest
    // in flight if there is one now, else let the caller retry.
    match in_flight_job(conn, document_id).await? {
        Some(job_id) => Err(EnqueueError::AlreadyInFlight {
            document_id,
            job_id,
        }),
        None => Err(EnqueueError::Database(sqlx::Error::Protocol(format!(
            "output jobs of document {document_id} kept finishing while a new one was inserted; try again"
        )))),
    }
}

/// What an `ON CONFLICT DO NOTHING` that inserted nothing means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterConflict {
    InFlight(OutputJobId),
    NoDocument,
    /// The document exists and nothing is in flight: the conflicting job finished.
    TryAgain,
}

fn after_conflict(in_flight: Option<OutputJobId>, document_exists: bool) -> AfterConflict {
    match (in_flight, document_exists) {
        (Some(job_id), _) => AfterConflict::InFlight(job_id),
        (None, false) => AfterConflict::NoDocument,
        (None, true) => AfterConflict::TryAgain,
    }
}

async fn document_exists(
    conn: &mut PgConnection,
    document_id: DocumentId,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM document WHERE id = $1)")
        .bind(document_id)
        .fetch_one(conn)
        .await
}

/// The document's pending or running job, if any.
async fn in_flight_job(
    conn: &mut PgConnection,
    document_id: DocumentId,
) -> Result<Option<OutputJobId>, sqlx::Error> {
    sqlx::query_scalar(
        r#"
        SELECT id FROM document_output_job
         WHERE document_id = $1 AND status IN ('pending', 'running')
        "#,
    )
    .bind(document_id)
    .fetch_optional(conn)
    .await
}

/// The final approval of an AP document: inserts its output job (trigger
/// `approval_completed`, the document's current version, the approver) inside the
/// caller's approval transaction. The caller commits, then calls
/// [`Dispatcher::dispatch`]. If the transaction rolls back, neither approval nor job
/// exists.
///
/// Fails with [`Ineligible::NotApproved`] when the document is not fully approved in
/// this transaction, and with [`EnqueueError::AlreadyInFlight`] when another job is
/// pending or running (the transaction stays usable in both cases).
pub async fn on_final_approval(
    tx: &mut PgConnection,
    document_id: DocumentId,
    approver: Option<Uuid>,
) -> Result<OutputJob, EnqueueError> {
    let approved: Option<bool> =
        sqlx::query_scalar("SELECT document_is_approved(id) FROM document WHERE id = $1")
            .bind(document_id)
            .fetch_optional(&mut *tx)
            .await?;
    match approved {
        None => Err(EnqueueError::DocumentNotFound(document_id)),
        Some(false) => Err(Ineligible::NotApproved.into()),
        Some(true) => insert_job(tx, document_id, Trigger::ApprovalCompleted, approver).await,
    }
}

/// The result of [`request_manual_export`]: the job, and whether its message was sent.
#[derive(Debug, Clone)]
pub struct ManualExport {
    pub job: OutputJob,
    pub dispatch: Dispatch,
}

/// The document detail page's re-export: checks that `requested_by` belongs to the
/// document's organization and that the document is eligible, inserts a job (trigger
/// `manual`) and dispatches it. It never calls DATEV itself.
///
/// Fails with [`EnqueueError::AlreadyInFlight`] (and sends nothing) while another job
/// for the document is pending or running. A failed SQS send is not an error: the
/// returned [`Dispatch`] says so, and the job is failed (see [`Dispatcher::dispatch`]).
pub async fn request_manual_export(
    pool: &PgPool,
    dispatcher: &Dispatcher,
    document_id: DocumentId,
    requested_by: Uuid,
) -> Result<ManualExport, EnqueueError> {
    let job = {
        let mut tx = pool.begin().await?;
        let tenant: Option<(Uuid, bool)> = sqlx::query_as(
            r#"
            SELECT d.tenant_id,
                   EXISTS (SELECT 1 FROM identity i
                            WHERE i.id = $2 AND i.organization_id = t.organization_id)
              FROM document d
              JOIN tenant t ON t.id = d.tenant_id
             WHERE d.id = $1
            "#,
        )
        .bind(document_id)
        .bind(requested_by)
        .fetch_optional(&mut *tx)
        .await?;
        let (tenant_id, allowed) = tenant.ok_or(EnqueueError::DocumentNotFound(document_id))?;
        if !allowed {
            return Err(EnqueueError::NotAllowed {
                identity: requested_by,
                tenant_id,
            });
        }
        // In flight first: a running job's own `requested` audit would otherwise make
        // eligibility answer "already exported" instead.
        if let Some(job_id) = in_flight_job(&mut tx, document_id).await? {
            return Err(EnqueueError::AlreadyInFlight {
                document_id,
                job_id,
            });
        }
        check_eligibility(&mut tx, document_id.0, None).await??;
        let job = insert_job(&mut tx, document_id, Trigger::Manual, Some(requested_by)).await?;
        tx.commit().await?;
        job
    };
    let dispatch = dispatcher.dispatch(pool, &job).await?;
    Ok(ManualExport { job, dispatch })
}

/// What happened to a job's message.
#[derive(Debug, Clone)]
pub enum Dispatch {
    /// The job id is on the document-output queue.
    Sent { message_id: Option<String> },
    /// The send failed; `current` is the job as it is now: `failed` with `last_error`
    /// if it was still pending, otherwise whatever a worker made of it (never
    /// overwritten).
    SendFailed { error: String, current: OutputJob },
}

/// Sends job ids to the document-output queue (after the job's transaction committed).
#[derive(Debug, Clone)]
pub struct Dispatcher {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
}

impl Dispatcher {
    pub fn new(sqs: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Dispatcher {
            sqs,
            queue_url: queue_url.into(),
        }
    }

    /// Sends the job id. On a send failure, marks the job failed with the error, but
    /// only while it is still pending (a worker may have received a message whose send
    /// only looked failed); when that guard matches nothing, the job is re-read and
    /// returned as it is. Fails only when the database cannot be reached for that.
    pub async fn dispatch(&self, pool: &PgPool, job: &OutputJob) -> Result<Dispatch, sqlx::Error> {
        match self
            .sqs
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(job.id.to_string())
            .send()
            .await
        {
            Ok(out) => {
                tracing::info!(job_id = %job.id, "output job dispatched to the queue");
                Ok(Dispatch::Sent {
                    message_id: out.message_id,
                })
            }
            Err(e) => {
                let error = format!(
                    "could not send the job to the document-output queue: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(&e)
                );
                tracing::error!(
                    job_id = %job.id,
                    error.message = %e,
                    error.cause_chain = ?e,
                    "output job dispatch failed"
                );
                let current = mark_send_failed(pool, job.id, &error).await?;
                Ok(Dispatch::SendFailed { error, current })
            }
        }
    }
}

/// The guarded failure update after a send error: only a still-pending job becomes
/// failed. Returns the job as it is afterwards (re-read when the guard did not match).
pub async fn mark_send_failed(
    pool: &PgPool,
    job_id: OutputJobId,
    error: &str,
) -> Result<OutputJob, sqlx::Error> {
    let updated: Option<OutputJob> = sqlx::query_as(
        r#"
        UPDATE document_output_job
           SET status = 'failed', last_error = $2, updated_at = now(), completed_at = now()
         WHERE id = $1 AND status = 'pending'
        RETURNING *
        "#,
    )
    .bind(job_id)
    .bind(error)
    .fetch_optional(pool)
    .await?;
    match updated {
        Some(job) => Ok(job),
        None => {
            let current = worker::load_job(pool, job_id)
                .await?
                .ok_or(sqlx::Error::RowNotFound)?;
            tracing::warn!(
                job_id = %job_id,
                status = ?current.status,
                "send failed but the job is no longer pending; keeping its state"
            );
            Ok(current)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflicting_job_that_finished_meanwhile_is_inserted_again_not_reported_missing() {
        let job = OutputJobId(Uuid::new_v4());
        assert_eq!(
            after_conflict(Some(job), true),
            AfterConflict::InFlight(job)
        );
        assert_eq!(after_conflict(None, false), AfterConflict::NoDocument);
        assert_eq!(after_conflict(None, true), AfterConflict::TryAgain);
    }
}
