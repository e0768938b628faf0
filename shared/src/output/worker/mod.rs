//! The worker steps of the document-output function, each one short database
//! statement (or transaction) or one external call, so that no transaction or pooled
//! connection is ever held across S3 or Maesn.
//!
//! Order in the function: [`claim`](fn@claim) → (claimed) [`linked_audit`] → either
//! [`recover`] (a job whose earlier attempt reached Maesn or died during the call) or
//! [`super::check_eligibility`] → [`export`](fn@export). While it works, the function's
//! heartbeat calls [`touch`], which keeps `updated_at` fresh: `updated_at` is the
//! liveness marker the stale-running claim reads.
//!
//! Each part has its file: `claim` holds the job row's statements under the claim token
//! (claim, touch, fail, defer, park) and the recovery from an earlier attempt's audit;
//! `export` reads the document file and calls Maesn; `outcome` holds how an export ended
//! ([`ExportOutcome`]) and records it, with the table of outcomes; `tasks` is the
//! async-task poll the sweeper calls ([`poll_open_tasks`]). The request sent to Maesn is
//! assembled in [`super::proposal`]. This file holds the worker's settings
//! ([`WorkerSettings`], [`Backoff`]).

mod claim;
mod export;
mod outcome;
mod tasks;

use std::time::Duration;

use crate::datev::MaesnConfig;
use crate::retry::RetryPolicy;
use crate::settings::{Env, SettingsError};
use crate::sqs::Heartbeat;

pub use super::proposal::{MAX_FILE_NAME_CHARS, maesn_file_name};
pub use claim::{
    ClaimError, Claimed, ExportAudit, Recovery, Unclaimed, Unworkable, claim, defer, fail,
    fail_unworkable, linked_audit, load_job, mark_told, park, recover, touch, unclaimed_state,
};
pub use export::{Attempt, FileError, export};
pub use outcome::{ExportError, ExportOutcome};
pub use tasks::{
    DEFAULT_MAX_TASK_AGE, FailedExport, PollSettings, PollSummary, oldest_open_task_seconds,
    poll_open_tasks, poll_open_tasks_with,
};

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
}
