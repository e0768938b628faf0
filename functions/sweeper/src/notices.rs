//! The admin notices the sweeper owes: failures nobody has told the admins about yet
//! (docs/sweeper.md) — ingestions it gave up on, failed matchings, failed output jobs
//! and DATEV tasks the poll failed. Each row is claimed so two sweeps do not both tell
//! it, told through the notifier, and marked told once a channel took it.

use std::time::Duration;

use docflow::notify::AdminNotice;
use tokio::time::Instant;
use uuid::Uuid;

use crate::{Deps, NoticeReport, kinds};

/// A failed output job is told by the worker that failed it; the sweeper tells it only
/// when that did not happen within this grace (the worker's invocation is long over).
const NOTICE_GRACE: Duration = Duration::from_secs(300);
/// A notice no channel took is tried again after this long.
const NOTICE_RETRY: Duration = Duration::from_secs(600);

/// One failure the admins have not been told about.
#[derive(Debug, sqlx::FromRow)]
struct Untold {
    id: Uuid,
    document_id: Uuid,
    document_type: Option<String>,
    tenant_id: Uuid,
    tenant_name: String,
    error: String,
    retryable: bool,
    attempts: i32,
    /// A DATEV task that ended `PARTIAL_SUCCESS` (only audits have them).
    #[sqlx(default)]
    partial: bool,
}

/// Failed output jobs, DATEV tasks failed by the poll, ingestions the sweeper gave up on
/// and failed matchings whose notice was never delivered (cut off by the invocation's
/// deadline, no channel answering — Slack or SES down —, a run killed after failing
/// them). Each is claimed (`notice_claimed_at`, `SKIP LOCKED`) so two sweeps do not both
/// tell it, and marked told once a channel took it; one no channel took is tried again
/// when its claim is old, however long the outage.
pub(crate) async fn tell_untold(
    deps: &Deps,
    stop_at: Option<Instant>,
    report: &mut NoticeReport,
) -> Result<(), sqlx::Error> {
    let limit = deps.config.batch_limit;
    // Ingestions the sweeper gave up on (only a give-up claims a notice; the function's
    // own failures are flagged for review, not notified).
    let ingestions: Vec<Untold> = sqlx::query_as(
        r#"
        WITH due AS (
            SELECT id FROM ingestion
             WHERE status = 'failed' AND admins_told_at IS NULL
               AND notice_claimed_at < now() - make_interval(secs => $2)
             ORDER BY completed_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE ingestion AS t SET notice_claimed_at = now()
          FROM due, document AS d, tenant AS tn
         WHERE t.id = due.id AND d.id = t.document_id AND tn.id = d.tenant_id
        RETURNING t.id, t.document_id, d.type::text AS document_type, d.tenant_id,
                  tn.name AS tenant_name, coalesce(t.last_error, 'no error recorded') AS error,
                  true AS retryable, t.attempt_count AS attempts
        "#,
    )
    .bind(limit)
    .bind(NOTICE_RETRY.as_secs_f64())
    .fetch_all(&deps.pool)
    .await?;
    tell_each(deps, stop_at, report, &ingestions, |row| Notice {
        title: kinds::INGESTION.give_up_title.to_owned(),
        error: format!("ingestion {}: {}", row.id, row.error),
        mark: "UPDATE ingestion SET admins_told_at = now() WHERE id = $1",
    })
    .await?;

    // Failed matchings, given up by the sweeper or failed by the function, whose notice
    // claim was released (no channel took it) or is older than any delivery spends
    // telling: after the DLQ no delivery comes to take it over.
    let matchings: Vec<Untold> = sqlx::query_as(
        r#"
        WITH due AS (
            SELECT id FROM document
             WHERE matching_status = 'failed' AND matching_notified_at IS NULL
               AND (matching_notice_claimed_at IS NULL
                    OR matching_notice_claimed_at < now() - make_interval(secs => $2))
             ORDER BY matching_failed_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE document AS t SET matching_notice_claimed_at = now()
          FROM due, tenant AS tn
         WHERE t.id = due.id AND tn.id = t.tenant_id
        RETURNING t.id, t.id AS document_id, t.type::text AS document_type, t.tenant_id,
                  tn.name AS tenant_name, coalesce(t.matching_error, 'no error recorded') AS error,
                  true AS retryable, t.matching_attempts AS attempts
        "#,
    )
    .bind(limit)
    .bind(
        NOTICE_RETRY
            .max(docflow::matching::status::NOTICE_CLAIM_GRACE)
            .as_secs_f64(),
    )
    .fetch_all(&deps.pool)
    .await?;
    tell_each(deps, stop_at, report, &matchings, |row| Notice {
        title: "Document matching failed".to_owned(),
        error: row.error.clone(),
        mark: "UPDATE document SET matching_notified_at = now() \
               WHERE id = $1 AND matching_status = 'failed'",
    })
    .await?;

    let jobs: Vec<Untold> = sqlx::query_as(
        r#"
        WITH due AS (
            SELECT id FROM document_output_job
             WHERE status = 'failed' AND admins_told_at IS NULL
               AND completed_at < now() - make_interval(secs => $2)
               AND (notice_claimed_at IS NULL OR notice_claimed_at < now() - make_interval(secs => $3))
             ORDER BY completed_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE document_output_job AS t SET notice_claimed_at = now()
          FROM due, document AS d, tenant AS tn
         WHERE t.id = due.id AND d.id = t.document_id AND tn.id = t.tenant_id
        RETURNING t.id, t.document_id, d.type::text AS document_type, t.tenant_id,
                  tn.name AS tenant_name, coalesce(t.last_error, 'no error recorded') AS error,
                  true AS retryable, 1 AS attempts
        "#,
    )
    .bind(limit)
    .bind(NOTICE_GRACE.as_secs_f64())
    .bind(NOTICE_RETRY.as_secs_f64())
    .fetch_all(&deps.pool)
    .await?;
    tell_each(deps, stop_at, report, &jobs, |job| Notice {
        title: "DATEV export failed".to_owned(),
        error: format!("output job {}: {}", job.id, job.error),
        mark: "UPDATE document_output_job SET admins_told_at = now() WHERE id = $1",
    })
    .await?;

    let audits: Vec<Untold> = sqlx::query_as(
        r#"
        WITH due AS (
            SELECT id FROM ap_datev_export_audit
             WHERE notice_due AND admins_told_at IS NULL
               AND (notice_claimed_at IS NULL OR notice_claimed_at < now() - make_interval(secs => $2))
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE ap_datev_export_audit AS t SET notice_claimed_at = now()
          FROM due, document AS d, tenant AS tn
         WHERE t.id = due.id AND d.id = t.document_id AND tn.id = t.tenant_id
        RETURNING t.id, t.document_id, d.type::text AS document_type, t.tenant_id,
                  tn.name AS tenant_name,
                  CASE WHEN t.status = 'succeeded' THEN
                       'DATEV booked it with remarks (PARTIAL_SUCCESS): '
                       || coalesce((SELECT string_agg(m, '; ')
                                      FROM jsonb_array_elements_text(t.information) AS m),
                                   'no details from DATEV')
                       ELSE coalesce(t.error, 'no details from DATEV') END AS error,
                  t.retryable, 1 AS attempts, t.status = 'succeeded' AS partial
        "#,
    )
    .bind(limit)
    .bind(NOTICE_RETRY.as_secs_f64())
    .fetch_all(&deps.pool)
    .await?;
    tell_each(deps, stop_at, report, &audits, |audit| Notice {
        title: if audit.partial {
            "DATEV export partially succeeded: read DATEV's remarks".to_owned()
        } else if audit.retryable {
            "DATEV export failed".to_owned()
        } else {
            "DATEV export failed; do not export again before checking DATEV".to_owned()
        },
        error: format!("export audit {}: {}", audit.id, audit.error),
        mark: "UPDATE ap_datev_export_audit SET admins_told_at = now() WHERE id = $1",
    })
    .await?;
    Ok(())
}

/// What one kind of untold row says, and the statement that marks it told.
struct Notice {
    title: String,
    error: String,
    mark: &'static str,
}

/// Tells each row (in order, within `stop_at`) and marks the ones a channel took.
async fn tell_each(
    deps: &Deps,
    stop_at: Option<Instant>,
    report: &mut NoticeReport,
    rows: &[Untold],
    describe: impl Fn(&Untold) -> Notice,
) -> Result<(), sqlx::Error> {
    for row in rows {
        let Notice { title, error, mark } = describe(row);
        let notice = AdminNotice {
            title,
            document_id: row.document_id,
            document_type: row.document_type.clone(),
            tenant_id: Some(row.tenant_id),
            tenant_name: Some(row.tenant_name.clone()),
            error,
            attempts: row.attempts,
        };
        let told = tell(deps, &notice, stop_at).await;
        record(deps, told, report, mark, row.id).await?;
    }
    Ok(())
}

/// Sends a notice; true when a channel took it, or when none is configured (the log is
/// then the only channel, and it has the notice).
pub(crate) async fn tell(deps: &Deps, notice: &AdminNotice, stop_at: Option<Instant>) -> bool {
    deps.notifier
        .notify_until(notice, stop_at)
        .await
        .delivered()
        || deps.notifier.channel_names().is_empty()
}

async fn record(
    deps: &Deps,
    told: bool,
    report: &mut NoticeReport,
    mark: &str,
    id: Uuid,
) -> Result<(), sqlx::Error> {
    if told {
        report.told += 1;
        sqlx::query(mark).bind(id).execute(&deps.pool).await?;
    } else {
        report.undelivered += 1;
    }
    Ok(())
}
