//! `docflow export <document-id> --by <identity>` (the document page's manual re-export)
//! and `docflow export resolve <audit-id> --absent | --present --by <identity> --note "…"`:
//! a person's decision on a DATEV export docflow could not settle; `docflow export
//! allow-both <document-id>` ([`allow_both`]): a person's decision that both invoices of a
//! corrected-invoice pair belong in DATEV.
//!
//! An export ends *in doubt* when Maesn may have booked it but docflow does not know
//! (a 5xx or a timeout after the POST, a worker that died during the call, a job the
//! sweeper gave up on, a task Maesn forgot or never ended). Its audit is `failed` and not
//! retryable, so it blocks every re-export of the document: a second booking would be
//! worse than none. Only a person who looked in DATEV can end that:
//!
//! - `--absent`: DATEV does not have it. The audit stays `failed` but becomes retryable,
//!   so `docflow export <document-id>` is accepted again. Refused while Maesn's
//!   asynchronous task may still land: the audit must be older than the resolve window
//!   (`EXPORT_RESOLVE_WINDOW_SECONDS`, default one hour), unless `--force "<reason>"`
//!   says why it cannot;
//! - `--present`: DATEV has it. The audit becomes `succeeded` (and keeps blocking
//!   re-exports, as every success does).
//!
//! A later decision supersedes an earlier one: every decision is kept in
//! `ap_datev_export_resolution` (who, when, why, whether the window was overridden and
//! what the audit was before), and the audit's `resolution`, `resolved_by`,
//! `resolved_at` and `resolution_note` are the latest. `docflow status` shows them all.
//! Only an audit that was in doubt can be resolved, by an identity of the document's
//! organization, with a note.

use anyhow::Context as _;
use std::time::Duration;

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

/// How long after an export's POST `--absent` is refused without `--force`: Maesn books
/// a proposal asynchronously, and a task that has not landed yet may still land.
pub const DEFAULT_ABSENT_WINDOW: Duration = Duration::from_secs(3600);

/// The variable that sets the resolve window, in seconds.
pub const ABSENT_WINDOW_VAR: &str = "EXPORT_RESOLVE_WINDOW_SECONDS";

/// The resolve window from [`ABSENT_WINDOW_VAR`]'s value: unset means
/// [`DEFAULT_ABSENT_WINDOW`]; anything but whole seconds is an error.
pub fn absent_window(value: Option<&str>) -> anyhow::Result<Duration> {
    match value.map(str::trim) {
        None | Some("") => Ok(DEFAULT_ABSENT_WINDOW),
        Some(v) => v.parse::<u64>().map(Duration::from_secs).map_err(|_| {
            anyhow::anyhow!("{ABSENT_WINDOW_VAR} must be whole seconds (e.g. 3600), not {v:?}")
        }),
    }
}

/// A person's decision, as `docflow export resolve` takes it.
#[derive(Debug, Clone, Copy)]
pub struct Decide<'a> {
    pub decision: Decision,
    /// An identity id or email of the document's organization.
    pub by: &'a str,
    /// Why: what was checked in DATEV.
    pub note: &'a str,
    /// `--force "<reason>"`: record `--absent` inside the resolve window.
    pub force: Option<&'a str>,
}

/// The decision a new one superseded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    pub decision: String,
    /// The email (or id) of who decided it; `None` when that identity was deleted.
    pub by: Option<String>,
    pub at: DateTime<Utc>,
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
    /// The earlier decision this one replaced, if any.
    pub superseded: Option<Superseded>,
    /// `--absent` was recorded inside the resolve window with `--force`.
    pub forced: bool,
    /// Later exports of the document that succeeded: with `--present`, DATEV may hold
    /// the document twice.
    pub later_successes: Vec<Uuid>,
}

impl std::fmt::Display for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.decision {
            Decision::Absent => write!(
                f,
                "audit {} resolved as absent from DATEV{}: failed and retryable; export the \
                 document again with: docflow export {} --by <identity>",
                self.audit_id,
                if self.forced {
                    " (inside the resolve window, forced)"
                } else {
                    ""
                },
                self.document_id
            )?,
            Decision::Present => write!(
                f,
                "audit {} resolved as present in DATEV: succeeded; document {} is not exported \
                 again",
                self.audit_id, self.document_id
            )?,
        }
        if let Some(earlier) = &self.superseded {
            write!(
                f,
                "\n  this supersedes the decision {} by {} at {} (kept in the history)",
                earlier.decision,
                earlier.by.as_deref().unwrap_or("someone since deleted"),
                earlier.at.format("%Y-%m-%d %H:%M:%S UTC")
            )?;
        }
        for audit in &self.later_successes {
            write!(
                f,
                "\n  warning: the document was exported again after that decision and audit \
                 {audit} succeeded: DATEV may hold it twice; check DATEV and remove one \
                 booking proposal there"
            )?;
        }
        Ok(())
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
    created_at: DateTime<Utc>,
    now: DateTime<Utc>,
    resolution: Option<String>,
    resolved_at: Option<DateTime<Utc>>,
    resolver: Option<String>,
    allowed: bool,
}

/// `docflow export resolve`: records a decision on an audit that was in doubt (`failed`,
/// not retryable) or corrects an earlier decision on it, in one transaction holding the
/// audit's row. Refuses, saying why: an audit that does not exist, is still open, was
/// never in doubt; an identity outside the document's organization; an empty note;
/// `--absent` inside the resolve window (`absent_window` after the audit was created,
/// i.e. after the POST) without a `--force` reason; `--present` over an earlier
/// `--absent` while a re-export of the document is still under way.
pub async fn resolve(
    pool: &PgPool,
    audit_id: Uuid,
    decide: &Decide<'_>,
    absent_window: Duration,
) -> anyhow::Result<Resolved> {
    let note = decide.note.trim();
    if note.is_empty() {
        anyhow::bail!("--note must say why (what was checked in DATEV)");
    }
    let force = match decide.force.map(str::trim) {
        Some("") => anyhow::bail!(
            "--force must say why the export cannot land in DATEV any more (e.g. what Maesn's \
             support confirmed)"
        ),
        other => other,
    };
    let decision = decide.decision;
    let identity = identity(pool, decide.by).await?;
    let db = || "cannot resolve the audit in the database";
    let mut tx = pool.begin().await.with_context(db)?;
    let current: Option<Current> = sqlx::query_as(
        r#"
        SELECT a.document_id, a.status, a.retryable, a.created_at, now() AS now,
               a.resolution, a.resolved_at,
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
    let superseded = match (&current.resolution, current.resolved_at) {
        // A correction: the audit was in doubt once, a person decided, and the state
        // it has now is that decision's.
        (Some(resolution), Some(at)) => Some(Superseded {
            decision: resolution.clone(),
            by: current.resolver.clone(),
            at,
        }),
        _ => {
            match (current.status.as_str(), current.retryable) {
                ("failed", false) => {}
                ("requested" | "submitted" | "in_progress", _) => anyhow::bail!(
                    "audit {audit_id} is still {}: docflow is still settling it (the task poll \
                     ends it, at the latest after SWEEP_MAX_TASK_AGE_SECONDS); nothing to \
                     resolve yet",
                    current.status
                ),
                ("failed", true) => anyhow::bail!(
                    "audit {audit_id} failed without booking anything and blocks nothing: \
                     export the document again with docflow export {} --by <identity>",
                    current.document_id
                ),
                (status, _) => {
                    anyhow::bail!("audit {audit_id} is {status}, not in doubt: nothing to resolve")
                }
            }
            None
        }
    };

    let mut forced = false;
    if decision == Decision::Absent {
        let age = (current.now - current.created_at)
            .to_std()
            .unwrap_or_default();
        if age < absent_window {
            let Some(_) = force else {
                let until = current.created_at
                    + chrono::Duration::from_std(absent_window).unwrap_or(chrono::Duration::MAX);
                anyhow::bail!(
                    "audit {audit_id} was sent to Maesn {} min ago; its asynchronous task may \
                     still book the proposal in DATEV until {} ({ABSENT_WINDOW_VAR} = {} s). \
                     Look in DATEV again after that time, or pass --force \"<reason>\" if you \
                     know it cannot land (e.g. Maesn's support confirmed the task failed)",
                    age.as_secs() / 60,
                    until.format("%Y-%m-%d %H:%M:%S UTC"),
                    absent_window.as_secs()
                );
            };
            forced = true;
        }
    }

    // Exports of the document after this audit (there are some only after an earlier
    // `--absent`): one still under way cannot be stopped by a decision, and one that
    // succeeded means DATEV may hold the document twice if this one is present.
    let later: Vec<(Uuid, String)> = sqlx::query_as(
        r#"
        SELECT id, status FROM ap_datev_export_audit
         WHERE document_id = $1 AND id <> $2 AND created_at >= $3
         ORDER BY created_at, id
        "#,
    )
    .bind(current.document_id)
    .bind(audit_id)
    .bind(current.created_at)
    .fetch_all(&mut *tx)
    .await
    .with_context(db)?;
    let job_under_way: Option<Uuid> = sqlx::query_scalar(
        r#"SELECT id FROM document_output_job WHERE document_id = $1 AND status IN ('pending', 'running') LIMIT 1"#,
    )
    .bind(current.document_id)
    .fetch_optional(&mut *tx)
    .await
    .with_context(db)?;
    if decision == Decision::Present {
        let open = later
            .iter()
            .find(|(_, s)| matches!(s.as_str(), "requested" | "submitted" | "in_progress"));
        if let Some((open, status)) = open {
            anyhow::bail!(
                "document {} is being exported again (audit {open} is {status}): a decision now \
                 cannot stop that export; wait until it ends (docflow status {}), then look in \
                 DATEV and decide",
                current.document_id,
                current.document_id
            );
        }
        if let (Some(job), Some(_)) = (job_under_way, &superseded) {
            anyhow::bail!(
                "document {} has an export job {job} waiting or running: a decision now cannot \
                 stop it; wait until it ends (docflow status {}), then look in DATEV and decide",
                current.document_id,
                current.document_id
            );
        }
    }
    let later_successes: Vec<Uuid> = if decision == Decision::Present {
        later
            .iter()
            .filter(|(_, s)| s == "succeeded")
            .map(|(id, _)| *id)
            .collect()
    } else {
        Vec::new()
    };

    let (status, resolved_at): (String, DateTime<Utc>) = sqlx::query_as(
        r#"
        WITH decided AS (
            INSERT INTO ap_datev_export_resolution
                   (audit_id, decision, decided_by, note, forced_reason, status_before, retryable_before)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            RETURNING decided_at
        )
        UPDATE ap_datev_export_audit
           SET status = CASE WHEN $2 = 'present' THEN 'succeeded' ELSE 'failed' END,
               retryable = ($2 = 'absent'),
               resolution = $2, resolved_by = $3, resolution_note = $4,
               resolved_at = (SELECT decided_at FROM decided),
               updated_at = now()
         WHERE id = $1
        RETURNING status, resolved_at
        "#,
    )
    .bind(audit_id)
    .bind(decision.label())
    .bind(identity)
    .bind(note)
    .bind(if forced { force } else { None })
    .bind(&current.status)
    .bind(current.retryable)
    .fetch_one(&mut *tx)
    .await
    .with_context(db)?;
    tx.commit().await.with_context(db)?;
    tracing::info!(
        %audit_id,
        resolution = decision.label(),
        resolved_by = %identity,
        superseded = superseded.as_ref().map(|s| s.decision.as_str()),
        forced,
        "DATEV export audit resolved by hand"
    );
    Ok(Resolved {
        audit_id,
        document_id: current.document_id,
        decision,
        resolved_by: identity,
        resolved_at,
        status,
        superseded,
        forced,
        later_successes,
    })
}

/// `docflow export allow-both <document-id> --by <identity> --note "…"`: a person's
/// decision that the document may be booked in DATEV although the other invoice of its
/// corrected-invoice pair (a corrected invoice, BT-3 `384`, and the invoice it replaces)
/// already has an export — both belong in DATEV. Document output refuses the second of
/// such a pair until this is recorded (docs/document-output.md, *Corrected invoices*);
/// the document is then exported again as usual. A later decision replaces an earlier
/// one. Only an identity of the document's organization can decide, with a note. Returns
/// the line to print.
pub async fn allow_both(
    pool: &PgPool,
    document_id: Uuid,
    by: &str,
    note: &str,
) -> anyhow::Result<String> {
    let note = note.trim();
    if note.is_empty() {
        anyhow::bail!("--note must say why both invoices belong in DATEV");
    }
    let identity = identity(pool, by).await?;
    let decided: Option<(bool, Option<DateTime<Utc>>)> = sqlx::query_as(
        r#"
        WITH doc AS (
            SELECT d.id, d.tenant_id,
                   EXISTS (SELECT 1 FROM identity i
                            WHERE i.id = $2 AND i.organization_id = t.organization_id) AS allowed
              FROM document d JOIN tenant t ON t.id = d.tenant_id
             WHERE d.id = $1
        ), written AS (
            INSERT INTO document_booking_decision (document_id, tenant_id, decided_by, note)
            SELECT id, tenant_id, $2, $3 FROM doc WHERE allowed
            ON CONFLICT (document_id) DO UPDATE
               SET decided_by = EXCLUDED.decided_by, decided_at = now(), note = EXCLUDED.note
            RETURNING decided_at
        )
        SELECT doc.allowed, (SELECT decided_at FROM written) FROM doc
        "#,
    )
    .bind(document_id)
    .bind(identity)
    .bind(note)
    .fetch_optional(pool)
    .await
    .context("cannot record the decision in the database")?;
    match decided {
        None => anyhow::bail!("no document {document_id}"),
        Some((false, _)) => anyhow::bail!(
            "identity {identity} does not belong to the organization of document {document_id}"
        ),
        Some((true, at)) => Ok(format!(
            "document {document_id} may be booked beside the other invoice of its corrected-invoice \
             pair (decided by {identity} at {}); export it again with docflow export {document_id} \
             --by <identity>",
            at.map_or_else(|| "now".to_owned(), |at| at.to_rfc3339())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resolve_window_is_an_hour_unless_set_in_whole_seconds() {
        assert_eq!(absent_window(None).unwrap(), Duration::from_secs(3600));
        assert_eq!(absent_window(Some(" ")).unwrap(), Duration::from_secs(3600));
        assert_eq!(absent_window(Some("0")).unwrap(), Duration::ZERO);
        assert_eq!(
            absent_window(Some("7200")).unwrap(),
            Duration::from_secs(7200)
        );
        for bad in ["1h", "-5", "3600.5"] {
            let err = absent_window(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("EXPORT_RESOLVE_WINDOW_SECONDS"), "{err}");
        }
    }
}
