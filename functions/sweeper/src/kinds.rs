//! The three kinds of work the sweeper recovers, as SQL (docs/sweeper.md).
//!
//! Every statement takes the same parameters: `$1` batch limit, `$2` the most re-sends,
//! `$3` and `$4` two thresholds in seconds whose meaning each kind states, `$5`
//! SWEEP_UNDELIVERED_AFTER_SECONDS, `$6` how long a sweep's claim on a row it is about to
//! re-send holds ([`crate::SWEEP_CLAIM_SECONDS`]).
//!
//! A re-send is three steps, so that a sweep killed at any point loses nothing: `take`
//! claims the rows (`sweep_claimed_at`, nothing else changes), the message is sent, and
//! only then `mark` counts the re-send (`sweep_count`, `swept_at`) and clears the claim
//! (`release` clears it when the send failed). Killed before the send: the row is as it
//! was, taken again once the claim lapses. Killed after it: the message is on its way
//! and the row is re-sent again once the claim lapses (a duplicate, which the
//! function's claim discards), without having used up a re-send.
//!
//! A row the sweeper re-sent counts again only once that message was delivered (a
//! claim or a recorded failure moved `updated_at` past `swept_at`): work whose message
//! merely waits in a backlog is neither re-sent again nor given up. A re-send that was
//! never delivered (lost, or burnt on receives that could not even claim) counts again
//! after `$5`. Every statement
//! takes its rows with `FOR UPDATE SKIP LOCKED` and changes them in the same statement, so
//! two sweeps running at once never take the same row, and a row one sweep just re-sent
//! is invisible to the next until its threshold passes again (`swept_at`).

/// The stuck state of each kind (docs/sweeper.md), written once and used by both the
/// re-send and the give-up statement, so the two can never disagree.
macro_rules! stuck_ingestion {
    () => {
        r#"
             WHERE status = 'in-progress'
               AND (started_at IS NULL OR started_at < now() - make_interval(secs => $4))
               AND updated_at < now() - make_interval(secs => $3)
               AND (swept_at IS NULL OR swept_at < now() - make_interval(secs => $3))
               AND (swept_at IS NULL OR updated_at > swept_at
                    OR swept_at < now() - make_interval(secs => $5))
               AND (sweep_claimed_at IS NULL OR sweep_claimed_at < now() - make_interval(secs => $6))
"#
    };
}

macro_rules! stuck_matching {
    () => {
        r#"
             WHERE matching_status IN ('pending', 'in-progress')
               AND updated_at < now() - make_interval(secs => $3)
               AND (matching_swept_at IS NULL OR matching_swept_at < now() - make_interval(secs => $4))
               AND (matching_swept_at IS NULL OR updated_at > matching_swept_at
                    OR matching_swept_at < now() - make_interval(secs => $5))
               AND (matching_sweep_claimed_at IS NULL OR matching_sweep_claimed_at < now() - make_interval(secs => $6))
"#
    };
}

macro_rules! stuck_output {
    () => {
        r#"
             WHERE ((status = 'pending' AND not_before IS NULL
                     AND updated_at < now() - make_interval(secs => $3)
                     AND (swept_at IS NULL OR swept_at < now() - make_interval(secs => $3)))
                 -- Parked (Maesn's long Retry-After): due once not_before has passed,
                 -- and not before; re-sent again after $3 like any pending job.
                 OR (status = 'pending' AND not_before <= now()
                     AND (swept_at IS NULL OR swept_at < not_before
                          OR swept_at < now() - make_interval(secs => $3)))
                 OR (status = 'running'
                     AND updated_at < now() - make_interval(secs => $4)
                     AND (swept_at IS NULL OR swept_at < now() - make_interval(secs => $4))))
               AND (swept_at IS NULL OR updated_at > swept_at
                    OR swept_at < now() - make_interval(secs => $5))
               AND (sweep_claimed_at IS NULL OR sweep_claimed_at < now() - make_interval(secs => $6))
"#
    };
}

/// One kind of recoverable work.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// `ingestion`, `matching` or `output`: in logs and the report.
    pub name: &'static str,
    /// The admin notice's title when the sweeper gives up.
    pub give_up_title: &'static str,
    /// Claims the rows to re-send (fewer than `$2` re-sends so far): sets only the claim,
    /// returns `id` and `claimed_at`.
    pub take: &'static str,
    /// Fails the rows re-sent `$2` times already, with the reason; returns `id`,
    /// `document_id`, `tenant_id`, `tenant_name`, `error`, `attempts`.
    pub give_up: &'static str,
    /// Records that the admins were told about a give-up (`$1` id), where the kind keeps
    /// that on the row.
    pub mark_notified: Option<&'static str>,
    /// After the send: counts the re-send and clears the claim (`$1` id, `$2` the
    /// `claimed_at` the take returned). `swept_at` is the claim's time, before the send,
    /// so any delivery of the message moves `updated_at` past it.
    pub mark: &'static str,
    /// Clears a claim whose message could not be sent (`$1` id, `$2` `claimed_at`): the
    /// row is found again at once, no re-send used.
    pub release: &'static str,
}

/// Ingestions `in-progress` whose lease is free or stale (`$4` = STALE_INGESTION_SECONDS)
/// and whose row has not moved for `$3` (SWEEP_INGESTION_AFTER_SECONDS).
pub const INGESTION: Kind = Kind {
    name: "ingestion",
    give_up_title: "Ingestion abandoned: it never finished",
    take: concat!(
        r#"
        WITH stuck AS (
            SELECT id, swept_at
              FROM ingestion
"#,
        stuck_ingestion!(),
        r#"               AND sweep_count < $2
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE ingestion AS t
           SET sweep_claimed_at = now()
          FROM stuck
         WHERE t.id = stuck.id
        RETURNING t.id, t.sweep_claimed_at AS claimed_at
    "#
    ),
    give_up: concat!(
        r#"
        WITH stuck AS (
            SELECT id, last_error, sweep_count
              FROM ingestion
"#,
        stuck_ingestion!(),
        r#"               AND sweep_count >= $2
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE ingestion AS t
           SET status = 'failed', completed_at = now(), updated_at = now(),
               -- The sweeper tells the admins; should no channel take the notice, its
               -- notices step takes this claim over later (one notice per give-up).
               notice_claimed_at = now(), admins_told_at = NULL,
               last_error = format(
                   'gave up: the sweeper re-sent this ingestion %s times and it never finished '
                   '(its worker may crash on it, or its messages are lost); last error: %s',
                   stuck.sweep_count, coalesce(stuck.last_error, 'none recorded'))
          FROM stuck, document AS d, tenant AS tn
         WHERE t.id = stuck.id AND d.id = t.document_id AND tn.id = d.tenant_id
        RETURNING t.id, t.document_id, d.type::text AS document_type, d.tenant_id,
                  tn.name AS tenant_name, t.last_error AS error, t.attempt_count AS attempts
    "#
    ),
    mark_notified: Some("UPDATE ingestion SET admins_told_at = now() WHERE id = $1"),
    mark: r#"
        UPDATE ingestion
           SET sweep_count = sweep_count + 1, swept_at = sweep_claimed_at, sweep_claimed_at = NULL
         WHERE id = $1 AND sweep_claimed_at = $2
        RETURNING sweep_count
    "#,
    release: "UPDATE ingestion SET sweep_claimed_at = NULL WHERE id = $1 AND sweep_claimed_at = $2",
};

/// Documents whose matching is `pending`/`in-progress` and has not moved for `$3`
/// (SWEEP_MATCHING_AFTER_SECONDS); `$4` spaces the re-sends (the same value).
pub const MATCHING: Kind = Kind {
    name: "matching",
    give_up_title: "Document matching abandoned: it never finished",
    take: concat!(
        r#"
        WITH stuck AS (
            SELECT id, matching_swept_at AS swept_at
              FROM document
"#,
        stuck_matching!(),
        r#"               AND matching_sweep_count < $2
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE document AS t
           SET matching_sweep_claimed_at = now()
          FROM stuck
         WHERE t.id = stuck.id
        RETURNING t.id, t.matching_sweep_claimed_at AS claimed_at
    "#
    ),
    give_up: concat!(
        r#"
        WITH stuck AS (
            SELECT id, matching_error, matching_sweep_count
              FROM document
"#,
        stuck_matching!(),
        r#"               AND matching_sweep_count >= $2
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE document AS t
           SET matching_status = 'failed', matching_failed_at = now(), updated_at = now(),
               -- The sweeper tells the admins: it holds the notice, so a delivery meeting
               -- this failure meanwhile does not tell them too (one notice per failure).
               matching_notified_at = NULL, matching_notice_claimed_at = now(),
               matching_error = format(
                   'gave up: the sweeper re-sent this document to matching %s times and it never finished '
                   '(its worker may crash on it, or its messages are lost); last error: %s',
                   stuck.matching_sweep_count, coalesce(stuck.matching_error, 'none recorded'))
          FROM stuck, tenant AS tn
         WHERE t.id = stuck.id AND tn.id = t.tenant_id
        RETURNING t.id, t.id AS document_id, t.type::text AS document_type, t.tenant_id,
                  tn.name AS tenant_name, t.matching_error AS error, t.matching_attempts AS attempts
    "#
    ),
    mark_notified: Some("UPDATE document SET matching_notified_at = now() WHERE id = $1"),
    mark: r#"
        UPDATE document
           SET matching_sweep_count = matching_sweep_count + 1,
               matching_swept_at = matching_sweep_claimed_at, matching_sweep_claimed_at = NULL
         WHERE id = $1 AND matching_sweep_claimed_at = $2
        RETURNING matching_sweep_count
    "#,
    release: "UPDATE document SET matching_sweep_claimed_at = NULL WHERE id = $1 AND matching_sweep_claimed_at = $2",
};

/// Output jobs `pending` for `$3` (SWEEP_OUTPUT_PENDING_AFTER_SECONDS), or `running`
/// without a heartbeat for `$4` (SWEEP_OUTPUT_RUNNING_AFTER_SECONDS, at least the
/// worker's own stale threshold, so the re-sent message can reclaim the job).
pub const OUTPUT: Kind = Kind {
    name: "output",
    give_up_title: "DATEV export abandoned: the output job never finished",
    take: concat!(
        r#"
        WITH stuck AS (
            SELECT id, swept_at
              FROM document_output_job
"#,
        stuck_output!(),
        r#"               AND sweep_count < $2
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED)
        UPDATE document_output_job AS t
           SET sweep_claimed_at = now()
          FROM stuck
         WHERE t.id = stuck.id
        RETURNING t.id, t.sweep_claimed_at AS claimed_at
    "#
    ),
    // A job whose worker died during the Maesn call has a `requested` audit: Maesn may
    // have the export, so the reason says to check DATEV. The audit is ended in the same
    // statement the way recovery ends it (`failed`, not retryable, "in doubt"): it keeps
    // blocking a new export, but no longer looks under way, and `docflow export resolve`
    // settles it once a person checked DATEV. The job's give-up notice covers it (no
    // second notice for the audit).
    give_up: concat!(
        r#"
        WITH stuck AS (
            SELECT id, last_error, sweep_count,
                   (SELECT a.id FROM ap_datev_export_audit a
                     WHERE a.dispatch_job_id = document_output_job.id AND a.status = 'requested'
                       AND a.task_id IS NULL
                     ORDER BY a.created_at DESC LIMIT 1) AS requested_audit
              FROM document_output_job
"#,
        stuck_output!(),
        r#"               AND sweep_count >= $2
             ORDER BY updated_at
             LIMIT $1
               FOR UPDATE OF document_output_job SKIP LOCKED),
        in_doubt AS (
            UPDATE ap_datev_export_audit AS a
               SET status = 'failed', retryable = false, updated_at = now(),
                   error = format(
                       'DATEV export in doubt: the sweeper gave up on output job %s after %s re-sends while this export was requested (no task id), so Maesn may have accepted it; check DATEV, then run docflow export resolve %s --absent or --present',
                       stuck.id, stuck.sweep_count, a.id)
              FROM stuck
             WHERE a.id = stuck.requested_audit AND a.status = 'requested' AND a.task_id IS NULL)
        UPDATE document_output_job AS t
           SET status = 'failed', completed_at = now(), updated_at = now(),
               last_error = format(
                   'gave up: the sweeper re-sent this output job %s times and it never finished%s; last error: %s',
                   stuck.sweep_count,
                   CASE WHEN stuck.requested_audit IS NULL THEN ''
                        ELSE format(' (DATEV export audit %s was started and may have reached Maesn: it is now failed in doubt; check DATEV, then run docflow export resolve on it)',
                                    stuck.requested_audit) END,
                   coalesce(stuck.last_error, 'none recorded'))
          FROM stuck, tenant AS tn, document AS d
         WHERE t.id = stuck.id AND tn.id = t.tenant_id AND d.id = t.document_id
        RETURNING t.id, t.document_id, d.type::text AS document_type, t.tenant_id,
                  tn.name AS tenant_name, t.last_error AS error, t.sweep_count AS attempts
    "#
    ),
    mark_notified: Some("UPDATE document_output_job SET admins_told_at = now() WHERE id = $1"),
    mark: r#"
        UPDATE document_output_job
           SET sweep_count = sweep_count + 1, swept_at = sweep_claimed_at, sweep_claimed_at = NULL
         WHERE id = $1 AND sweep_claimed_at = $2
        RETURNING sweep_count
    "#,
    release: "UPDATE document_output_job SET sweep_claimed_at = NULL WHERE id = $1 AND sweep_claimed_at = $2",
};
