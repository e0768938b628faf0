//! The sweeper: on a schedule, finds work that was committed but whose message was
//! lost or whose worker died, and re-sends its message; gives up visibly on work that
//! never finishes; polls DATEV's asynchronous tasks to their end (docs/sweeper.md).
//!
//! Guarantees:
//! - **It finds every hand-off.** The stuck states are exactly those docs/sweeper.md
//!   lists; the functions leave unfinished work in one of them.
//! - **It never re-sends live work.** Thresholds are at least what a live worker or a
//!   queued backoff could still hold (validated at cold start, see [`SweepConfig`]).
//! - **It never loops.** After `SWEEP_MAX_RESENDS` re-sends the work is failed with the
//!   reason, and admins are notified once.
//! - **It is idempotent.** Rows are claimed with `FOR UPDATE SKIP LOCKED` in the same
//!   statement; the messages are sent after that commits (no transaction open across
//!   SQS or Maesn), and only a sent message counts a re-send; a failed send releases the
//!   claim. A sweep killed at any point loses nothing: the claim lapses after
//!   [`SWEEP_CLAIM_SECONDS`] and the row is re-sent, without a re-send used up. Every
//!   message it sends is one the function's claim rejects if the work finished meanwhile.
//! - **It is bounded.** Per kind at most `SWEEP_BATCH_LIMIT` rows per run; no new step
//!   starts when the invocation's time runs low.
//!
//! The SQL of each kind of work is in `kinds`, the admin notices the sweeper owes in
//! `notices`.

pub mod config;
mod kinds;
mod notices;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use chrono::{DateTime, Utc};
use docflow::bootstrap::Common;
use docflow::datev::{MaesnClient, MaesnConfig};
use docflow::notify::{AdminNotice, Notifier, NotifySettings};
use docflow::output::worker::{PollSettings, poll_open_tasks_with};
use docflow::settings::{Env, SettingsError, process_env};
use docflow::telemetry::metrics::{MetricSet, MetricsSink};
use lambda_runtime::LambdaEvent;
use serde::Serialize;
use sqlx::PgPool;
use tokio::time::Instant;
use uuid::Uuid;

pub use config::SweepConfig;
use kinds::Kind;
use notices::{tell, tell_untold};

/// The queues the sweeper re-sends to.
#[derive(Debug, Clone)]
pub struct Queues {
    /// `INGESTION_QUEUE_URL` (body: ingestion id).
    pub ingestion: String,
    /// `MATCHING_QUEUE_URL` (body: document id).
    pub matching: String,
    /// `DOCUMENT_OUTPUT_QUEUE_URL` (body: output job id).
    pub document_output: String,
}

impl Queues {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        Ok(Queues {
            ingestion: env.required("INGESTION_QUEUE_URL")?,
            matching: env.required("MATCHING_QUEUE_URL")?,
            document_output: env.required("DOCUMENT_OUTPUT_QUEUE_URL")?,
        })
    }
}

/// Everything a sweep borrows, built once per cold start.
pub struct Deps {
    pub pool: PgPool,
    pub sqs: aws_sdk_sqs::Client,
    pub queues: Queues,
    /// Polls open DATEV tasks; `None` turns task polling off (a deployment without DATEV).
    pub maesn: Option<MaesnClient>,
    pub notifier: Notifier,
    pub config: SweepConfig,
}

impl Deps {
    /// The shared cold-start wiring plus the queue URLs, the sweep settings, the Maesn
    /// client (`MAESN_BASE_URL`, `MAESN_TIMEOUT_SECONDS`; its key is read from the secret
    /// when a task is polled) and the admin notification channels. Fails naming what is
    /// missing; Lambda retries the cold start.
    pub async fn from_env() -> anyhow::Result<Self> {
        let common = Common::from_env().await?;
        let env = process_env();
        let queues = Queues::from_env(&env)?;
        let config = SweepConfig::from_env(&env)?;
        let secrets = Arc::new(common.secrets);
        let notifier =
            Notifier::from_settings(&NotifySettings::from_env(&env)?, &secrets, &common.aws)
                .await
                .context("failed to set up the admin notification channels")?;
        let maesn = MaesnClient::new(&MaesnConfig::from_env(&env)?, secrets)
            .context("failed to build the Maesn client")?;
        Ok(Deps {
            pool: common.pool,
            sqs: common.sqs,
            queues,
            maesn: Some(maesn),
            notifier,
            config,
        })
    }
}

/// Every AWS API action the sweeper calls (IAM names): what Terraform must grant its
/// role (`tests/tests/it/iam_calls.rs` holds the two together).
pub fn aws_actions<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Vec<&'static str> {
    // The app secret at cold start and the tenants' DATEV secrets; the re-sends
    // (SendMessageBatch is authorised as sqs:SendMessage).
    let mut actions = vec!["secretsmanager:GetSecretValue", "sqs:SendMessage"];
    if env.optional("NOTIFY_EMAIL_FROM").is_some() && env.optional("NOTIFY_EMAIL_TO").is_some() {
        actions.push("ses:SendEmail");
    }
    actions
}

/// What one kind's sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KindReport {
    /// Stuck rows taken this run (re-sent, given up, or whose send failed).
    pub found: usize,
    pub resent: usize,
    /// Failed for good after `SWEEP_MAX_RESENDS` re-sends (and admins notified).
    pub given_up: usize,
    /// Taken but not sent (SQS refused): undone, found again next run.
    pub send_failed: usize,
}

/// What the DATEV task poll did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TaskReport {
    /// Open tasks asked about.
    pub polled: usize,
    pub still_running: usize,
    pub succeeded: usize,
    pub failed: usize,
    /// Tasks whose state could not be read (left for the next run).
    pub errors: usize,
    /// Of `succeeded`: ended `PARTIAL_SUCCESS` (DATEV's remarks kept, admins told).
    pub partial: usize,
    /// Of `failed`: open longer than `SWEEP_MAX_TASK_AGE_SECONDS` and given up.
    pub expired: usize,
    /// Age in seconds of the oldest task still open after the poll (0: none); `None`
    /// when the poll did not finish (no metric is written then, rather than a 0).
    pub oldest_open_seconds: Option<u64>,
}

/// What the notices step did: failures nobody has told the admins about yet (docs/sweeper.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NoticeReport {
    /// Notices delivered (or only logged, where no channel is configured).
    pub told: usize,
    /// Notices no channel took; tried again after `NOTICE_RETRY`.
    pub undelivered: usize,
}

/// What one sweep did; logged, and returned by the handler.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    pub ingestion: KindReport,
    pub matching: KindReport,
    pub output: KindReport,
    pub tasks: TaskReport,
    pub notices: NoticeReport,
    /// Steps that failed (database unreachable, out of time), each one line; the next
    /// run tries again. The handler fails the invocation when there are any, so the
    /// sweeper's error alarm sees them.
    pub errors: Vec<String>,
}

impl SweepReport {
    /// Whether the sweep found anything to do: stuck work, or open DATEV tasks. `docflow
    /// local run --until-idle` stops only when this is false.
    pub fn found_anything(&self) -> bool {
        [&self.ingestion, &self.matching, &self.output]
            .iter()
            .any(|k| k.found > 0)
            || self.tasks.polled > 0
            || self.notices.told + self.notices.undelivered > 0
    }
}

/// This function's name in its metrics (`function` dimension).
pub const FUNCTION: &str = "sweeper";

/// A sweep's metrics: per `kind`, stuck work found, re-sent and given up (and the
/// function's totals, which the alarms watch); DATEV tasks polled, succeeded, failed;
/// notices no channel took; failed steps.
pub fn metric_set(report: &SweepReport) -> MetricSet {
    use docflow::telemetry::metrics::{NOTIFICATIONS_FAILED, dimension, sweeper as m};
    let mut set = MetricSet::new();
    for metric in [m::FOUND, m::RESENT, m::GIVEN_UP] {
        set.ensure(metric);
    }
    for (kind, r) in [
        ("ingestion", &report.ingestion),
        ("matching", &report.matching),
        ("output", &report.output),
    ] {
        for (metric, n) in [
            (m::FOUND, r.found),
            (m::RESENT, r.resent),
            (m::GIVEN_UP, r.given_up),
        ] {
            set.add(metric, n as f64);
            set.add_by(dimension::KIND, kind, metric, n as f64);
        }
    }
    set.add(m::TASKS_POLLED, report.tasks.polled as f64);
    set.add(m::TASKS_SUCCEEDED, report.tasks.succeeded as f64);
    set.add(m::TASKS_FAILED, report.tasks.failed as f64);
    set.add(m::TASKS_PARTIAL, report.tasks.partial as f64);
    set.add(m::TASKS_EXPIRED, report.tasks.expired as f64);
    if let Some(age) = report.tasks.oldest_open_seconds {
        set.add(m::OLDEST_OPEN_TASK_AGE, age as f64);
    }
    set.add(NOTIFICATIONS_FAILED, report.notices.undelivered as f64);
    set.add(m::STEPS_FAILED, report.errors.len() as f64);
    set
}

/// The Lambda handler for the EventBridge schedule (the event's content is not used).
/// Fails the invocation when the database session is refused ([`docflow::db::Gate`]) or
/// a step failed, after logging the report.
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<SweepReport, lambda_runtime::Error> {
    let budget = budget_from_deadline(event.context.deadline);
    let span = tracing::info_span!(
        "sweep",
        function = FUNCTION,
        request_id = %event.context.request_id,
        xray_trace_id = event.context.xray_trace_id.as_deref(),
    );
    // A session the functions must not work with (the role's settings off, the schema
    // older than this code): the run fails, saying why, and sweeps nothing.
    let gate = docflow::db::Gate::new(deps.pool.clone());
    if let Err(refused) = tracing::Instrument::instrument(gate.check(), span.clone()).await {
        return Err(format!("database session refused, nothing swept: {refused}").into());
    }
    let report = tracing::Instrument::instrument(sweep(deps, budget), span).await?;
    MetricsSink::stdout().emit(FUNCTION, &metric_set(&report));
    if report.errors.is_empty() {
        Ok(report)
    } else {
        Err(format!(
            "sweep finished with {} failed step(s): {}",
            report.errors.len(),
            report.errors.join("; ")
        )
        .into())
    }
}

/// One sweep: for ingestion, matching and output (in that order) give up on work
/// re-sent too often, then re-send the rest; then poll open DATEV tasks. `budget` is the
/// time this run may take (`None`: unbounded, e.g. the CLI). Never fails as a whole: a
/// step that fails is logged, listed in [`SweepReport::errors`], and the others go on.
pub async fn sweep(deps: &Deps, budget: Option<Duration>) -> anyhow::Result<SweepReport> {
    let stop_at = budget.map(|b| Instant::now() + b);
    let time_left = || stop_at.map(|s| s.saturating_duration_since(Instant::now()));
    let out_of_time = || time_left().is_some_and(|left| left < deps.config.time_reserve);
    let c = &deps.config;
    let secs = |d: Duration| d.as_secs_f64();
    let mut report = SweepReport::default();

    let steps: [(Kind, &str, f64, f64); 3] = [
        (
            kinds::INGESTION,
            &deps.queues.ingestion,
            secs(c.ingestion_after),
            secs(c.stale_ingestion),
        ),
        (
            kinds::MATCHING,
            &deps.queues.matching,
            secs(c.matching_after),
            secs(c.matching_after),
        ),
        (
            kinds::OUTPUT,
            &deps.queues.document_output,
            secs(c.output_pending_after),
            secs(c.output_running_after),
        ),
    ];
    let mut kind_reports: [KindReport; 3] = Default::default();
    for ((kind, queue_url, a, b), kind_report) in steps.into_iter().zip(kind_reports.iter_mut()) {
        if out_of_time() {
            report.errors.push(format!(
                "{}: skipped, the invocation is out of time",
                kind.name
            ));
            continue;
        }
        if let Err(e) = sweep_kind(deps, kind, queue_url, (a, b), kind_report, stop_at).await {
            tracing::error!(kind = kind.name, error.message = %e, error.cause_chain = ?e, "sweep step failed");
            report.errors.push(format!(
                "{}: {}",
                kind.name,
                docflow::retry::error_chain(&e)
            ));
        }
    }
    [report.ingestion, report.matching, report.output] = kind_reports;

    match &deps.maesn {
        Some(maesn) if c.task_poll_limit > 0 => {
            let settings = PollSettings {
                max_task_age: c.max_task_age,
            };
            let poll = poll_open_tasks_with(&deps.pool, maesn, c.task_poll_limit, &settings);
            let result = match time_left() {
                None => Ok(poll.await),
                Some(left) => tokio::time::timeout(left.saturating_sub(c.time_reserve), poll).await,
            };
            match result {
                Ok(Ok(summary)) => {
                    report.tasks = TaskReport {
                        polled: summary.still_running
                            + summary.succeeded
                            + summary.failed
                            + summary.errors,
                        still_running: summary.still_running,
                        succeeded: summary.succeeded,
                        failed: summary.failed,
                        errors: summary.errors,
                        partial: summary.partial,
                        expired: summary.expired,
                        oldest_open_seconds: Some(summary.oldest_open_seconds),
                    };
                }
                Ok(Err(e)) => {
                    tracing::error!(error.message = %e, error.cause_chain = ?e, "polling DATEV tasks failed");
                    report
                        .errors
                        .push(format!("tasks: {}", docflow::retry::error_chain(&e)));
                }
                Err(_) => report
                    .errors
                    .push("tasks: stopped, the invocation ran out of time".to_owned()),
            }
        }
        _ => {}
    }

    // Last: the failures found above (a give-up, a failed DATEV task) are told in this
    // same run; those whose notice was cut short earlier are told now.
    if out_of_time() {
        report
            .errors
            .push("notices: skipped, the invocation is out of time".to_owned());
    } else if let Err(e) = tell_untold(deps, stop_at, &mut report.notices).await {
        tracing::error!(error.message = %e, error.cause_chain = ?e, "telling untold failures failed");
        report
            .errors
            .push(format!("notices: {}", docflow::retry::error_chain(&e)));
    }

    tracing::info!(
        ingestion = ?report.ingestion,
        matching = ?report.matching,
        output = ?report.output,
        tasks = ?report.tasks,
        notices = ?report.notices,
        errors = report.errors.len(),
        "sweep finished"
    );
    Ok(report)
}

/// How long a sweep's claim on a row it is about to re-send holds (`kinds`'s `$6`):
/// Lambda's longest timeout, so no sweep that took a row can still be running when
/// another takes it again. A sweep killed between its claim and its bookkeeping leaves
/// the row claimed for at most this long (never for `SWEEP_UNDELIVERED_AFTER_SECONDS`).
pub const SWEEP_CLAIM_SECONDS: u64 = 900;

#[derive(Debug, sqlx::FromRow)]
struct Taken {
    id: Uuid,
    claimed_at: DateTime<Utc>,
}

#[derive(Debug, sqlx::FromRow)]
struct GivenUp {
    id: Uuid,
    document_id: Uuid,
    document_type: Option<String>,
    tenant_id: Uuid,
    tenant_name: String,
    error: String,
    attempts: i32,
}

/// Gives up on the rows re-sent too often, then re-sends the others.
async fn sweep_kind(
    deps: &Deps,
    kind: Kind,
    queue_url: &str,
    (a, b): (f64, f64),
    report: &mut KindReport,
    stop_at: Option<Instant>,
) -> Result<(), sqlx::Error> {
    let c = &deps.config;
    let given_up: Vec<GivenUp> = sqlx::query_as(kind.give_up)
        .bind(c.batch_limit)
        .bind(c.max_resends)
        .bind(a)
        .bind(b)
        .bind(c.undelivered_after.as_secs_f64())
        .bind(SWEEP_CLAIM_SECONDS as f64)
        .fetch_all(&deps.pool)
        .await?;
    report.found += given_up.len();
    report.given_up += given_up.len();
    for row in &given_up {
        tracing::error!(kind = kind.name, id = %row.id, document_id = %row.document_id, error = %row.error, "sweeper gave up");
        let notice = AdminNotice {
            title: kind.give_up_title.to_owned(),
            document_id: row.document_id,
            document_type: row.document_type.clone(),
            tenant_id: Some(row.tenant_id),
            tenant_name: Some(row.tenant_name.clone()),
            error: row.error.clone(),
            attempts: row.attempts,
        };
        let told = tell(deps, &notice, stop_at).await;
        // Record that the admins were told: so the notices step does not tell them again
        // (and, for matching, a late message for the document does not either,
        // functions/matching). Not told (no channel answered, or this run is killed
        // first): the give-up's notice claim stays, and the notices step takes it over
        // once it is old ([`tell_untold`]).
        if let (Some(mark), true) = (kind.mark_notified, told) {
            sqlx::query(mark).bind(row.id).execute(&deps.pool).await?;
        }
    }

    // Claim, send, then count (kinds.rs): a sweep killed at any point loses nothing.
    let taken: Vec<Taken> = sqlx::query_as(kind.take)
        .bind(c.batch_limit)
        .bind(c.max_resends)
        .bind(a)
        .bind(b)
        .bind(c.undelivered_after.as_secs_f64())
        .bind(SWEEP_CLAIM_SECONDS as f64)
        .fetch_all(&deps.pool)
        .await?;
    report.found += taken.len();
    for chunk in taken.chunks(10) {
        let failed = send_batch(&deps.sqs, queue_url, chunk).await;
        for row in chunk {
            if failed.contains(&row.id) {
                report.send_failed += 1;
                // Not sent: release the claim so an SQS outage uses up no re-send.
                sqlx::query(kind.release)
                    .bind(row.id)
                    .bind(row.claimed_at)
                    .execute(&deps.pool)
                    .await?;
            } else {
                report.resent += 1;
                let resend: Option<i32> = sqlx::query_scalar(kind.mark)
                    .bind(row.id)
                    .bind(row.claimed_at)
                    .fetch_optional(&deps.pool)
                    .await?;
                tracing::warn!(kind = kind.name, id = %row.id, resend = ?resend, "re-sent the message of stuck work");
            }
        }
    }
    Ok(())
}

/// Sends the ids in one `SendMessageBatch`; returns the ids that were not sent (all of
/// them when the call itself failed).
async fn send_batch(sqs: &aws_sdk_sqs::Client, queue_url: &str, rows: &[Taken]) -> Vec<Uuid> {
    let entries: Vec<SendMessageBatchRequestEntry> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            SendMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .message_body(row.id.to_string())
                .build()
                .ok()
        })
        .collect();
    match sqs
        .send_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(entries))
        .send()
        .await
    {
        Ok(out) => out
            .failed
            .iter()
            .filter_map(|f| {
                tracing::error!(queue_url, entry = %f.id, code = %f.code, message = ?f.message, "SQS refused a re-sent message");
                f.id.strip_prefix('m')
                    .and_then(|i| i.parse::<usize>().ok())
                    .and_then(|i| rows.get(i))
                    .map(|row| row.id)
            })
            .collect(),
        Err(e) => {
            tracing::error!(queue_url, error.message = %aws_sdk_sqs::error::DisplayErrorContext(&e), "could not re-send messages");
            rows.iter().map(|row| row.id).collect()
        }
    }
}

/// The time this invocation may take: until the deadline, or `None` when the context
/// has no plausible one (local emulators send 0 or a duration).
fn budget_from_deadline(deadline_ms: u64) -> Option<Duration> {
    let deadline = UNIX_EPOCH + Duration::from_millis(deadline_ms);
    match deadline.duration_since(SystemTime::now()) {
        Ok(left) if deadline_ms > 0 && left <= Duration::from_secs(16 * 60) => Some(left),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_s_metrics_count_give_ups_per_kind_and_in_total() {
        use docflow::telemetry::metrics::{dimension, sweeper as m};
        let report = SweepReport {
            ingestion: KindReport {
                found: 3,
                resent: 2,
                given_up: 1,
                send_failed: 0,
            },
            output: KindReport {
                found: 1,
                resent: 0,
                given_up: 1,
                send_failed: 0,
            },
            ..SweepReport::default()
        };
        let set = metric_set(&report);
        assert_eq!(set.total(m::GIVEN_UP), 2.0, "the alarm's metric: all kinds");
        assert_eq!(set.total_by(dimension::KIND, "ingestion", m::GIVEN_UP), 1.0);
        assert_eq!(set.total_by(dimension::KIND, "output", m::GIVEN_UP), 1.0);
        assert_eq!(set.total_by(dimension::KIND, "matching", m::GIVEN_UP), 0.0);
        assert_eq!(set.total(m::RESENT), 2.0);
        assert_eq!(set.total(m::FOUND), 4.0);
        // Written even when nothing happened, so the graphs show 0 rather than gaps.
        let quiet = metric_set(&SweepReport::default());
        assert_eq!(quiet.values(None, m::GIVEN_UP), vec![0.0]);
    }

    #[test]
    fn the_oldest_open_task_s_age_is_written_only_when_the_poll_finished() {
        use docflow::telemetry::metrics::sweeper as m;
        let mut report = SweepReport::default();
        assert!(
            metric_set(&report)
                .values(None, m::OLDEST_OPEN_TASK_AGE)
                .is_empty(),
            "no poll, no age: a 0 would hide tasks nobody polled"
        );
        report.tasks.oldest_open_seconds = Some(90_000);
        report.tasks.expired = 2;
        let set = metric_set(&report);
        assert_eq!(set.values(None, m::OLDEST_OPEN_TASK_AGE), vec![90_000.0]);
        assert_eq!(set.total(m::TASKS_EXPIRED), 2.0);
    }

    #[test]
    fn a_report_with_only_zeroes_found_nothing() {
        let mut report = SweepReport::default();
        assert!(!report.found_anything());
        report.tasks.polled = 1;
        assert!(
            report.found_anything(),
            "open DATEV tasks keep a local run busy"
        );
        let mut report = SweepReport::default();
        report.matching.found = 1;
        assert!(report.found_anything());
    }

    #[test]
    fn implausible_deadlines_give_no_budget() {
        assert_eq!(budget_from_deadline(0), None);
        assert_eq!(budget_from_deadline(600_000), None);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let budget = budget_from_deadline(now + 60_000).unwrap();
        assert!(budget > Duration::from_secs(55) && budget <= Duration::from_secs(60));
    }
}
