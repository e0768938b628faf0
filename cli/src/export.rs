//! `docflow export <document-id> --by <identity>` (the document page's manual re-export)
//! and `docflow export resolve <audit-id> --absent | --present --by <identity> --note "…"`:
//! a person's decision on a DATEV export docflow could not settle.
//!
//! An export ends *in doubt* when Maesn may have booked it but docflow does not know
//! (a 5xx or a timeout after the POST, a worker that died during the call, a job the
//! sweeper gave up on, a task Maesn forgot or never ended). Its audit is `failed` and not
//! retryable, so it blocks every re-export of the document: a second booking would be
//! worse than none. Only a person who looked in DATEV can end that:
//!
//! - `--absent`: DATEV does not have it. The audit stays `failed` but becomes retryable,
//!   so `docflow export <document-id>` is accepted again;
//! - `--present`: DATEV has it. The audit becomes `succeeded` (and keeps blocking
//!   re-exports, as every success does).
//!
//! Both record who decided (`resolved_by`), when (`resolved_at`) and why
//! (`resolution_note`) on the audit; `docflow status` shows it. Only a settled-in-doubt
//! audit can be resolved, once, by an identity of the document's organization.

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use docflow::ids::DocumentId;
use docflow::output::{Dispatch, Dispatcher};
use sqlx::PgPool;
use uuid::Uuid;

/// What the person found in DATEV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not in DATEV: the audit becomes retryable, a re-export may run.
    Absent,
    /// In DATEV: the audit becomes `succeeded`.
    Present,
}

impl Decision {
    /// The label stored in `ap_datev_export_audit.resolution`.
    pub fn label(self) -> &'static str {
        match self {
            Decision::Absent => "absent",
            Decision::Present => "present",
        }
    }
}

/// A recorded resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub audit_id: Uuid,
    pub document_id: Uuid,
    pub decision: Decision,
    pub resolved_by: Uuid,
    pub resolved_at: DateTime<Utc>,
    /// The audit's status afterwards (`failed` or `succeeded`).
    pub status: String,
}

impl std::fmt::Display for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.decision {
            Decision::Absent => write!(
                f,
                "audit {} resolved as absent from DATEV: failed and retryable; export the document \
                 again with: docflow export {} --by <identity>",
                self.audit_id, self.document_id
            ),
            Decision::Present => write!(
                f,
                "audit {} resolved as present in DATEV: succeeded; document {} is not exported \
                 again",
                self.audit_id, self.document_id
            ),
        }
    }
}

/// An identity id, or the id of the identity with that email.
pub async fn identity(pool: &PgPool, given: &str) -> anyhow::Result<Uuid> {
    if let Ok(id) = Uuid::parse_str(given.trim()) {
        return Ok(id);
    }
    sqlx::query_scalar("SELECT id FROM identity WHERE email = $1")
        .bind(given.trim())
        .fetch_optional(pool)
        .await
        .context("cannot reach the database")?
        .with_context(|| format!("no identity with email {given}"))
}

/// `docflow export <document-id> --by <identity>`: the manual re-export (checks, job,
/// message). Returns the line to print.
pub async fn request(
    pool: &PgPool,
    dispatcher: &Dispatcher,
    document_id: Uuid,
    by: &str,
) -> anyhow::Result<String> {
    let identity = identity(pool, by).await?;
    let export =
        docflow::output::request_manual_export(pool, dispatcher, DocumentId(document_id), identity)
            .await?;
    match export.dispatch {
        Dispatch::Sent { .. } => Ok(format!(
            "export job {} sent to the document-output queue",
            export.job.id
        )),
        Dispatch::SendFailed { error, current } => anyhow::bail!(
            "export job {} could not be sent and is now {:?}: {error}",
            current.id,
            current.status
        ),
    }
}

#[derive(sqlx::FromRow)]
struct Current {
    document_id: Uuid,
    status: String,
    retryable: bool,
    resolution: Option<String>,
    resolved_at: Option<DateTime<Utc>>,
    resolver: Option<String>,
    allowed: bool,
}

/// `docflow export resolve`: records the decision on an in-doubt audit (`failed`, not
/// retryable), in one transaction holding the audit's row. Refuses, saying why, an audit
/// that does not exist, is still open, is not in doubt, or was resolved already; an
/// identity outside the document's organization; an empty note.
pub async fn resolve(
    pool: &PgPool,
    audit_id: Uuid,
    decision: Decision,
    by: &str,
    note: &str,
) -> anyhow::Result<Resolved> {
    let note = note.trim();
    if note.is_empty() {
        anyhow::bail!("--note must say why (what was checked in DATEV)");
    }
    let identity = identity(pool, by).await?;
    let db = || "cannot resolve the audit in the database";
    let mut tx = pool.begin().await.with_context(db)?;
    let current: Option<Current> = sqlx::query_as(
        r#"
        SELECT a.document_id, a.status, a.retryable, a.resolution, a.resolved_at,
               coalesce(r.email, a.resolved_by::text) AS resolver,
               EXISTS (SELECT 1 FROM identity i
                        WHERE i.id = $2 AND i.organization_id = t.organization_id) AS allowed
          FROM ap_datev_export_audit a
          JOIN tenant t ON t.id = a.tenant_id
          LEFT JOIN identity r ON r.id = a.resolved_by
         WHERE a.id = $1
           FOR UPDATE OF a
        "#,
    )
    .bind(audit_id)
    .bind(identity)
    .fetch_optional(&mut *tx)
    .await
    .with_context(db)?;
    let current = current.with_context(|| format!("no DATEV export audit {audit_id}"))?;
    if !current.allowed {
        anyhow::bail!(
            "identity {identity} does not belong to the organization of audit {audit_id}'s document"
        );
    }
    if let (Some(resolution), Some(at)) = (&current.resolution, current.resolved_at) {
        anyhow::bail!(
            "audit {audit_id} was already resolved as {resolution} by {} at {}",
            current
                .resolver
                .as_deref()
                .unwrap_or("someone since deleted"),
            at.format("%Y-%m-%d %H:%M:%S UTC")
        );
    }
    match (current.status.as_str(), current.retryable) {
        ("failed", false) => {}
        ("requested" | "submitted" | "in_progress", _) => anyhow::bail!(
            "audit {audit_id} is still {}: docflow is still settling it (the task poll ends it, \
             at the latest after SWEEP_MAX_TASK_AGE_SECONDS); nothing to resolve yet",
            current.status
        ),
        ("failed", true) => anyhow::bail!(
            "audit {audit_id} failed without booking anything and blocks nothing: export the \
             document again with docflow export {} --by <identity>",
            current.document_id
        ),
        (status, _) => {
            anyhow::bail!("audit {audit_id} is {status}, not in doubt: nothing to resolve")
        }
    }
    let (status, resolved_at): (String, DateTime<Utc>) = sqlx::query_as(
        r#"
        UPDATE ap_datev_export_audit
           SET status = CASE WHEN $2 = 'present' THEN 'succeeded' ELSE status END,
               retryable = ($2 = 'absent'),
               resolution = $2, resolved_by = $3, resolved_at = now(), resolution_note = $4,
               updated_at = now()
         WHERE id = $1
        RETURNING status, resolved_at
        "#,
    )
    .bind(audit_id)
    .bind(decision.label())
    .bind(identity)
    .bind(note)
    .fetch_one(&mut *tx)
    .await
    .with_context(db)?;
    tx.commit().await.with_context(db)?;
    tracing::info!(%audit_id, resolution = decision.label(), resolved_by = %identity, "DATEV export audit resolved by hand");
    Ok(Resolved {
        audit_id,
        document_id: current.document_id,
        decision,
        resolved_by: identity,
        resolved_at,
        status,
    })
}
