//! The sweeper's settings: thresholds derived from the queues' visibility timeouts and
//! the functions' stale-lease settings (docs/sweeper.md), each overridable.

use std::time::Duration;

use docflow::settings::{Env, SettingsError};

/// Longest SQS backoff ingestion asks for after a failed attempt (`min(30·2^(n-1), 600)`).
pub const INGESTION_MAX_BACKOFF: Duration = Duration::from_secs(600);
/// Longest SQS backoff matching asks for (seed 001: 300 s, then 1800 s).
pub const MATCHING_MAX_BACKOFF: Duration = Duration::from_secs(1800);
/// Longest SQS backoff document output asks for after a refusal from Maesn.
pub const OUTPUT_MAX_BACKOFF: Duration = Duration::from_secs(900);
/// Kept on top of every derived threshold, for clock skew and a slow poller.
pub const MARGIN: Duration = Duration::from_secs(60);

/// What the sweeper looks for and how patiently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepConfig {
    /// `SWEEP_BATCH_LIMIT` (default 100): rows taken per kind and run.
    pub batch_limit: i64,
    /// `SWEEP_MAX_RESENDS` (default 3): re-sends of one piece of work before the sweeper
    /// fails it instead.
    pub max_resends: i32,
    /// `STALE_INGESTION_SECONDS` (default 300): an ingestion lease older than this has
    /// no live worker (the ingestion function's own setting).
    pub stale_ingestion: Duration,
    /// `SWEEP_INGESTION_AFTER_SECONDS` (default: ingestion queue visibility + 600 s + 60 s).
    pub ingestion_after: Duration,
    /// `SWEEP_MATCHING_AFTER_SECONDS` (default: matching queue visibility + 1800 s + 60 s).
    pub matching_after: Duration,
    /// `SWEEP_OUTPUT_PENDING_AFTER_SECONDS` (default: output queue visibility + 900 s + 60 s).
    pub output_pending_after: Duration,
    /// `SWEEP_OUTPUT_RUNNING_AFTER_SECONDS` (default: `STALE_RUNNING_SECONDS` + 60 s).
    pub output_running_after: Duration,
    /// `SWEEP_UNDELIVERED_AFTER_SECONDS` (default 86400): a re-sent message that has not
    /// reached its function after this long (lost, or its receives were all spent before
    /// a claim) is re-sent again; until then the work is taken to be waiting in a backlog.
    pub undelivered_after: Duration,
    /// `SWEEP_TASK_POLL_LIMIT` (default 50): open DATEV tasks polled per run.
    pub task_poll_limit: i64,
    /// `SWEEP_TIME_RESERVE_MS` (default 5000): no new step starts with less time left.
    pub time_reserve: Duration,
    /// `SWEEP_MAX_TASK_AGE_SECONDS` (default 172800 = 48 h): a DATEV task still open
    /// after this long (or unreadable, or of a tenant that disconnected DATEV) is ended
    /// `failed`, not retryable, "check DATEV", with one admin notice.
    pub max_task_age: Duration,
}

/// The queues' visibility timeouts, which the defaults are derived from:
/// `INGESTION_QUEUE_VISIBILITY_SECONDS` (default 1800 = 6 × the 300 s function timeout),
/// `MATCHING_QUEUE_VISIBILITY_SECONDS` and `DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS`
/// (default 720 = 6 × 120 s). Terraform sets all three from the queues it creates.
#[derive(Debug, Clone, Copy)]
struct Visibility {
    ingestion: Duration,
    matching: Duration,
    output: Duration,
}

impl SweepConfig {
    /// Reads and validates the settings; a threshold shorter than a live worker could
    /// still hold its work fails the cold start, naming the variable.
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        let visibility = Visibility {
            ingestion: env.seconds_or("INGESTION_QUEUE_VISIBILITY_SECONDS", 1800)?,
            matching: env.seconds_or("MATCHING_QUEUE_VISIBILITY_SECONDS", 720)?,
            output: env.seconds_or("DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS", 720)?,
        };
        let stale_ingestion = env.seconds_or("STALE_INGESTION_SECONDS", 300)?;
        let stale_running = env.seconds_or("STALE_RUNNING_SECONDS", 600)?;
        let seconds = |var, default: Duration| env.seconds_or(var, default.as_secs());
        let config = SweepConfig {
            batch_limit: env.parse_or("SWEEP_BATCH_LIMIT", 100)?,
            max_resends: env.parse_or("SWEEP_MAX_RESENDS", 3)?,
            stale_ingestion,
            ingestion_after: seconds(
                "SWEEP_INGESTION_AFTER_SECONDS",
                visibility.ingestion + INGESTION_MAX_BACKOFF + MARGIN,
            )?,
            matching_after: seconds(
                "SWEEP_MATCHING_AFTER_SECONDS",
                visibility.matching + MATCHING_MAX_BACKOFF + MARGIN,
            )?,
            output_pending_after: seconds(
                "SWEEP_OUTPUT_PENDING_AFTER_SECONDS",
                visibility.output + OUTPUT_MAX_BACKOFF + MARGIN,
            )?,
            output_running_after: seconds(
                "SWEEP_OUTPUT_RUNNING_AFTER_SECONDS",
                stale_running + MARGIN,
            )?,
            undelivered_after: env.seconds_or("SWEEP_UNDELIVERED_AFTER_SECONDS", 86_400)?,
            task_poll_limit: env.parse_or("SWEEP_TASK_POLL_LIMIT", 50)?,
            time_reserve: Duration::from_millis(env.parse_or("SWEEP_TIME_RESERVE_MS", 5000)?),
            max_task_age: env.seconds_or(
                "SWEEP_MAX_TASK_AGE_SECONDS",
                docflow::output::worker::DEFAULT_MAX_TASK_AGE.as_secs(),
            )?,
        };
        config.validate(visibility, stale_running)?;
        Ok(config)
    }

    fn validate(
        &self,
        visibility: Visibility,
        stale_running: Duration,
    ) -> Result<(), SettingsError> {
        let invalid = |var, reason: String| Err(SettingsError::Invalid { var, reason });
        if self.batch_limit < 1 {
            return invalid("SWEEP_BATCH_LIMIT", "must be at least 1".into());
        }
        if self.max_resends < 1 {
            return invalid(
                "SWEEP_MAX_RESENDS",
                "must be at least 1 (0 would fail stuck work without ever re-sending it)".into(),
            );
        }
        // Shorter than the longest a message can wait for its function would re-send
        // (and in the end give up on) work that is only queued.
        let longest_wait = self
            .ingestion_after
            .max(self.matching_after)
            .max(self.output_pending_after);
        if self.undelivered_after < longest_wait {
            return invalid(
                "SWEEP_UNDELIVERED_AFTER_SECONDS",
                format!(
                    "must be at least the longest re-send threshold ({} s)",
                    longest_wait.as_secs()
                ),
            );
        }
        if self.task_poll_limit < 0 {
            return invalid("SWEEP_TASK_POLL_LIMIT", "must not be negative".into());
        }
        // 0 would end every task in doubt before its first answer was read.
        if self.max_task_age.is_zero() {
            return invalid(
                "SWEEP_MAX_TASK_AGE_SECONDS",
                "must be more than 0: every open task would be ended in doubt at once".into(),
            );
        }
        // A live ingestion renews its lease; the sweeper only takes stale or free leases,
        // and waits at least as long as the queue may still hold a message for it.
        if self.ingestion_after < visibility.ingestion.max(self.stale_ingestion) {
            return invalid(
                "SWEEP_INGESTION_AFTER_SECONDS",
                format!(
                    "must be at least the ingestion queue visibility and STALE_INGESTION_SECONDS ({} s)",
                    visibility.ingestion.max(self.stale_ingestion).as_secs()
                ),
            );
        }
        // Matching has no lease: a document is in progress while an invocation runs it,
        // which is always shorter than the queue visibility (≥ 6 × the function timeout).
        if self.matching_after < visibility.matching {
            return invalid(
                "SWEEP_MATCHING_AFTER_SECONDS",
                format!(
                    "must be at least the matching queue visibility ({} s)",
                    visibility.matching.as_secs()
                ),
            );
        }
        if self.output_pending_after < visibility.output {
            return invalid(
                "SWEEP_OUTPUT_PENDING_AFTER_SECONDS",
                format!(
                    "must be at least the document-output queue visibility ({} s)",
                    visibility.output.as_secs()
                ),
            );
        }
        // A running job younger than the worker's stale threshold may have a live worker.
        if self.output_running_after < stale_running {
            return invalid(
                "SWEEP_OUTPUT_RUNNING_AFTER_SECONDS",
                format!(
                    "must be at least STALE_RUNNING_SECONDS ({} s): a younger running job may still have a live worker",
                    stale_running.as_secs()
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        docflow::settings::fixed_env(vars)
    }

    #[test]
    fn defaults_wait_for_the_longest_backoff_after_the_queue_visibility() {
        let config = SweepConfig::from_env(&env(&[])).unwrap();
        assert_eq!(config.ingestion_after, Duration::from_secs(1800 + 600 + 60));
        assert_eq!(config.matching_after, Duration::from_secs(720 + 1800 + 60));
        assert_eq!(
            config.output_pending_after,
            Duration::from_secs(720 + 900 + 60)
        );
        assert_eq!(config.output_running_after, Duration::from_secs(600 + 60));
        assert_eq!(config.max_resends, 3);
        assert_eq!(config.batch_limit, 100);
    }

    #[test]
    fn defaults_follow_the_queue_visibility_and_stale_settings() {
        let config = SweepConfig::from_env(&env(&[
            ("INGESTION_QUEUE_VISIBILITY_SECONDS", "60"),
            ("MATCHING_QUEUE_VISIBILITY_SECONDS", "60"),
            ("DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS", "60"),
            ("STALE_RUNNING_SECONDS", "120"),
        ]))
        .unwrap();
        assert_eq!(config.ingestion_after, Duration::from_secs(720));
        assert_eq!(config.matching_after, Duration::from_secs(1920));
        assert_eq!(config.output_pending_after, Duration::from_secs(1020));
        assert_eq!(config.output_running_after, Duration::from_secs(180));
    }

    #[test]
    fn a_running_threshold_below_the_workers_stale_threshold_is_rejected() {
        let err = SweepConfig::from_env(&env(&[("SWEEP_OUTPUT_RUNNING_AFTER_SECONDS", "300")]))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("SWEEP_OUTPUT_RUNNING_AFTER_SECONDS"),
            "{err}"
        );
    }

    #[test]
    fn an_ingestion_threshold_below_the_lease_is_rejected() {
        let err = SweepConfig::from_env(&env(&[
            ("INGESTION_QUEUE_VISIBILITY_SECONDS", "60"),
            ("SWEEP_INGESTION_AFTER_SECONDS", "100"),
        ]))
        .unwrap_err();
        assert!(
            err.to_string().contains("SWEEP_INGESTION_AFTER_SECONDS"),
            "{err}"
        );
    }

    #[test]
    fn open_datev_tasks_are_given_up_after_48_hours_unless_configured() {
        let config = SweepConfig::from_env(&env(&[])).unwrap();
        assert_eq!(config.max_task_age, Duration::from_secs(48 * 3600));
        let config =
            SweepConfig::from_env(&env(&[("SWEEP_MAX_TASK_AGE_SECONDS", "7200")])).unwrap();
        assert_eq!(config.max_task_age, Duration::from_secs(7200));
        let err = SweepConfig::from_env(&env(&[("SWEEP_MAX_TASK_AGE_SECONDS", "0")])).unwrap_err();
        assert!(
            err.to_string().contains("SWEEP_MAX_TASK_AGE_SECONDS"),
            "{err}"
        );
    }

    #[test]
    fn zero_resends_is_rejected() {
        let err = SweepConfig::from_env(&env(&[("SWEEP_MAX_RESENDS", "0")])).unwrap_err();
        assert!(err.to_string().contains("SWEEP_MAX_RESENDS"), "{err}");
    }
}
