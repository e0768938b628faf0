//! The async-task poll the sweeper calls ([`poll_open_tasks`]): it moves
//! `ap_datev_export_audit` rows from `submitted`/`in_progress` to their terminal state
//! and returns the exports it failed, so the sweeper can notify once per failure.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::datev::{DatevAccount, DatevConnector, DatevError, TaskState, is_duplicate_rejection};
use crate::retry::error_chain;

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
