//! Typed settings, read once at cold start from environment variables (set by
//! Terraform). A missing or malformed variable fails fast with its name; values are
//! never echoed, since some of them (`DATABASE_URL`) may carry credentials.

use std::str::FromStr;
use std::time::Duration;

use secrecy::SecretString;
use sqlx::postgres::PgSslMode;

use crate::retry::ReceivePolicy;
use crate::sqs::{BatchConfig, Heartbeat, MAX_VISIBILITY};

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("environment variable {var} is required but not set")]
    Missing { var: &'static str },
    #[error("environment variable {var} is invalid: {reason}")]
    Invalid { var: &'static str, reason: String },
}

/// Reads variables through a lookup function, so tests need not mutate the process
/// environment.
pub struct Env<F>(F);

impl<F: Fn(&str) -> Option<String>> Env<F> {
    pub fn new(lookup: F) -> Self {
        Env(lookup)
    }

    /// The variable's value, with empty treated as unset.
    pub fn optional(&self, var: &'static str) -> Option<String> {
        (self.0)(var).filter(|v| !v.trim().is_empty())
    }

    pub fn required(&self, var: &'static str) -> Result<String, SettingsError> {
        self.optional(var).ok_or(SettingsError::Missing { var })
    }

    pub fn or(&self, var: &'static str, default: &str) -> String {
        self.optional(var).unwrap_or_else(|| default.to_owned())
    }

    pub fn parse_or<T>(&self, var: &'static str, default: T) -> Result<T, SettingsError>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        match self.optional(var) {
            None => Ok(default),
            Some(raw) => raw
                .trim()
                .parse()
                .map_err(|e: T::Err| SettingsError::Invalid {
                    var,
                    reason: e.to_string(),
                }),
        }
    }

    pub fn seconds_or(&self, var: &'static str, default: u64) -> Result<Duration, SettingsError> {
        self.parse_or(var, default).map(Duration::from_secs)
    }
}

/// An environment of fixed values (tests, and tools that set variables themselves).
pub fn fixed_env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String> + use<>> {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Env::new(move |var| map.get(var).cloned())
}

/// Environment of the running process.
pub fn process_env() -> Env<impl Fn(&str) -> Option<String>> {
    Env::new(|var| std::env::var(var).ok())
}

/// URLs of the queues a function sends to (only those it feeds are set).
#[derive(Debug, Clone, Default)]
pub struct QueueUrls {
    pub ingestion: Option<String>,
    pub matching: Option<String>,
    pub document_output: Option<String>,
}

/// Settings every function shares.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `DOCFLOW_SECRET_ID` (required): name or ARN of the JSON secret with credentials.
    pub secret_id: String,
    /// `DOCFLOW_SECRET_TTL_SECONDS` (default 300): how long a fetched secret is reused.
    pub secret_ttl: Duration,
    /// `DATABASE_URL` (optional): overrides the secret's `database_url` (local runs).
    pub database_url: Option<SecretString>,
    /// `DATABASE_TLS` (optional; set by Terraform from `var.database_tls`): the TLS mode
    /// of every database connection, `verify-full`, `verify-ca` or `require`. It
    /// overrides whatever `sslmode` the database URL carries, so a weaker one in a secret
    /// (`disable`, `prefer`, ...) cannot downgrade the connection. Unset: the URL's own
    /// `sslmode` (local runs against a database without TLS).
    pub database_tls: Option<PgSslMode>,
    /// `DATABASE_MAX_CONNECTIONS` (default 2): per Lambda instance; the event source
    /// mapping's maximum concurrency multiplies it.
    pub database_max_connections: u32,
    /// `MAX_RECEIVE_COUNT` (default 3): the redrive policy's maxReceiveCount.
    pub receive_policy: ReceivePolicy,
    /// `BATCH_CONCURRENCY` (default 10), `DEADLINE_MARGIN_MS` (default 2000),
    /// `HEARTBEAT_SECONDS` (default 60), `HEARTBEAT_EXTEND_SECONDS` (default 300, more
    /// than `HEARTBEAT_SECONDS`), `QUEUE_VISIBILITY_TIMEOUT_SECONDS` (the source queue's
    /// visibility timeout, 0–43,200; set by Terraform; unset = unknown, see
    /// [`BatchConfig::queue_visibility`]), `MAXIMUM_BATCHING_WINDOW_SECONDS` (the event
    /// source mapping's batching window, 0–300, default 0; set by Terraform); the
    /// receive policy above.
    pub batch: BatchConfig,
    /// `DOCUMENTS_BUCKET` (default `docflow-documents`).
    pub documents_bucket: String,
    /// `INGESTION_QUEUE_URL`, `MATCHING_QUEUE_URL`, `DOCUMENT_OUTPUT_QUEUE_URL`.
    pub queues: QueueUrls,
}

impl Settings {
    pub fn from_process_env() -> Result<Self, SettingsError> {
        Self::from_env(&process_env())
    }

    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        let max_receive_count: u32 = env.parse_or("MAX_RECEIVE_COUNT", 3)?;
        if max_receive_count == 0 {
            return Err(SettingsError::Invalid {
                var: "MAX_RECEIVE_COUNT",
                reason: "must be at least 1 (it is the redrive policy's maxReceiveCount)".into(),
            });
        }
        let concurrency: usize = env.parse_or("BATCH_CONCURRENCY", 10)?;
        if concurrency == 0 {
            return Err(SettingsError::Invalid {
                var: "BATCH_CONCURRENCY",
                reason: "must be at least 1".into(),
            });
        }
        let heartbeat = Heartbeat {
            every: env.seconds_or("HEARTBEAT_SECONDS", 60)?,
            extend_to: env.seconds_or("HEARTBEAT_EXTEND_SECONDS", 300)?,
        };
        if heartbeat.every.is_zero() {
            return Err(SettingsError::Invalid {
                var: "HEARTBEAT_SECONDS",
                reason: "must be at least 1".into(),
            });
        }
        if heartbeat.extend_to <= heartbeat.every || heartbeat.extend_to > MAX_VISIBILITY {
            return Err(SettingsError::Invalid {
                var: "HEARTBEAT_EXTEND_SECONDS",
                reason: "must be more than HEARTBEAT_SECONDS (or the message reappears between \
                         two beats) and at most 43200"
                    .into(),
            });
        }
        let queue_visibility = match env.optional("QUEUE_VISIBILITY_TIMEOUT_SECONDS") {
            None => None,
            Some(_) => {
                let seconds: u64 = env.parse_or("QUEUE_VISIBILITY_TIMEOUT_SECONDS", 0)?;
                if seconds > MAX_VISIBILITY.as_secs() {
                    return Err(SettingsError::Invalid {
                        var: "QUEUE_VISIBILITY_TIMEOUT_SECONDS",
                        reason: "must be at most 43200 (SQS's maximum visibility timeout)".into(),
                    });
                }
                Some(Duration::from_secs(seconds))
            }
        };
        let batching_window = env.seconds_or("MAXIMUM_BATCHING_WINDOW_SECONDS", 0)?;
        if batching_window > Duration::from_secs(300) {
            return Err(SettingsError::Invalid {
                var: "MAXIMUM_BATCHING_WINDOW_SECONDS",
                reason: "must be at most 300 (the event source mapping's maximum)".into(),
            });
        }
        let receive_policy = ReceivePolicy { max_receive_count };
        Ok(Settings {
            secret_id: env.required("DOCFLOW_SECRET_ID")?,
            secret_ttl: env.seconds_or("DOCFLOW_SECRET_TTL_SECONDS", 300)?,
            database_url: env.optional("DATABASE_URL").map(SecretString::from),
            database_tls: database_tls(env)?,
            database_max_connections: env.parse_or("DATABASE_MAX_CONNECTIONS", 2)?,
            receive_policy,
            batch: BatchConfig {
                concurrency,
                deadline_margin: Duration::from_millis(env.parse_or("DEADLINE_MARGIN_MS", 2000)?),
                heartbeat,
                receive_policy,
                queue_visibility,
                start_reserve: Duration::ZERO,
                batching_window,
                extend_before_work: false,
            },
            documents_bucket: env.or("DOCUMENTS_BUCKET", "docflow-documents"),
            queues: QueueUrls {
                ingestion: env.optional("INGESTION_QUEUE_URL"),
                matching: env.optional("MATCHING_QUEUE_URL"),
                document_output: env.optional("DOCUMENT_OUTPUT_QUEUE_URL"),
            },
        })
    }
}

/// The environment variable with the TLS mode every database connection must use.
pub const DATABASE_TLS_ENV: &str = "DATABASE_TLS";

/// The modes `DATABASE_TLS` accepts: each encrypts the connection; none falls back to
/// plain text.
pub fn parse_database_tls(raw: &str) -> Option<PgSslMode> {
    match raw.trim() {
        "verify-full" => Some(PgSslMode::VerifyFull),
        "verify-ca" => Some(PgSslMode::VerifyCa),
        "require" => Some(PgSslMode::Require),
        _ => None,
    }
}

fn database_tls<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Option<PgSslMode>, SettingsError> {
    match env.optional(DATABASE_TLS_ENV) {
        None => Ok(None),
        Some(raw) => parse_database_tls(&raw)
            .map(Some)
            .ok_or(SettingsError::Invalid {
                var: DATABASE_TLS_ENV,
                reason: "must be verify-full, verify-ca or require".into(),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        fixed_env(vars)
    }

    #[test]
    fn defaults_apply_when_only_the_secret_id_is_set() {
        let settings = Settings::from_env(&env(&[("DOCFLOW_SECRET_ID", "docflow/app")])).unwrap();
        assert_eq!(settings.receive_policy.max_receive_count, 3);
        assert_eq!(settings.batch.concurrency, 10);
        assert_eq!(settings.secret_ttl, Duration::from_secs(300));
        assert_eq!(settings.documents_bucket, "docflow-documents");
        assert!(settings.database_url.is_none());
        assert!(settings.database_tls.is_none());
    }

    #[test]
    fn database_tls_accepts_the_encrypting_modes_only() {
        for (value, expected) in [
            ("verify-full", PgSslMode::VerifyFull),
            ("verify-ca", PgSslMode::VerifyCa),
            ("require", PgSslMode::Require),
        ] {
            let settings =
                Settings::from_env(&env(&[("DOCFLOW_SECRET_ID", "s"), ("DATABASE_TLS", value)]))
                    .unwrap();
            assert_eq!(
                format!("{:?}", settings.database_tls),
                format!("{:?}", Some(expected)),
                "{value}"
            );
        }
        for value in [
            "disable",
            "allow",
            "prefer",
            "VERIFY-FULL",
            "verify_full",
            "true",
        ] {
            let err =
                Settings::from_env(&env(&[("DOCFLOW_SECRET_ID", "s"), ("DATABASE_TLS", value)]))
                    .unwrap_err();
            let text = err.to_string();
            assert!(text.contains("DATABASE_TLS"), "{value}: {text}");
            assert!(!text.contains(value), "{value}: {text}");
        }
    }

    #[test]
    fn a_missing_required_variable_is_named() {
        let err = Settings::from_env(&env(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable DOCFLOW_SECRET_ID is required but not set"
        );
    }

    #[test]
    fn a_malformed_number_names_the_variable_without_echoing_the_value() {
        let err = Settings::from_env(&env(&[
            ("DOCFLOW_SECRET_ID", "s"),
            ("MAX_RECEIVE_COUNT", "three"),
        ]))
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("MAX_RECEIVE_COUNT"), "{text}");
        assert!(!text.contains("three"), "{text}");
    }

    #[test]
    fn max_receive_count_is_read_from_the_environment() {
        let settings = Settings::from_env(&env(&[
            ("DOCFLOW_SECRET_ID", "s"),
            ("MAX_RECEIVE_COUNT", "5"),
        ]))
        .unwrap();
        assert!(!settings.receive_policy.is_final(4));
        assert!(settings.receive_policy.is_final(5));
    }

    #[test]
    fn the_batch_runtime_learns_the_receive_policy_and_the_queue_visibility() {
        let settings = Settings::from_env(&env(&[
            ("DOCFLOW_SECRET_ID", "s"),
            ("MAX_RECEIVE_COUNT", "5"),
            ("QUEUE_VISIBILITY_TIMEOUT_SECONDS", "1800"),
        ]))
        .unwrap();
        assert_eq!(settings.batch.receive_policy.max_receive_count, 5);
        assert_eq!(
            settings.batch.queue_visibility,
            Some(Duration::from_secs(1800))
        );
        let unset = Settings::from_env(&env(&[("DOCFLOW_SECRET_ID", "s")])).unwrap();
        assert_eq!(unset.batch.queue_visibility, None);
    }

    #[test]
    fn the_batching_window_defaults_to_terraform_s_zero_and_is_read_when_set() {
        let unset = Settings::from_env(&env(&[("DOCFLOW_SECRET_ID", "s")])).unwrap();
        assert_eq!(unset.batch.batching_window, Duration::ZERO);
        let set = Settings::from_env(&env(&[
            ("DOCFLOW_SECRET_ID", "s"),
            ("MAXIMUM_BATCHING_WINDOW_SECONDS", "5"),
        ]))
        .unwrap();
        assert_eq!(set.batch.batching_window, Duration::from_secs(5));
        assert!(!set.batch.extend_before_work, "a function opts in");
    }

    #[test]
    fn an_impossible_queue_visibility_or_heartbeat_is_rejected_at_cold_start() {
        for (var, value) in [
            ("QUEUE_VISIBILITY_TIMEOUT_SECONDS", "43201"),
            ("QUEUE_VISIBILITY_TIMEOUT_SECONDS", "-1"),
            ("HEARTBEAT_EXTEND_SECONDS", "60"),
            ("HEARTBEAT_EXTEND_SECONDS", "50000"),
            ("HEARTBEAT_SECONDS", "0"),
            ("MAXIMUM_BATCHING_WINDOW_SECONDS", "301"),
            ("MAXIMUM_BATCHING_WINDOW_SECONDS", "-1"),
        ] {
            let err =
                Settings::from_env(&env(&[("DOCFLOW_SECRET_ID", "s"), (var, value)])).unwrap_err();
            assert!(err.to_string().contains(var), "{var}={value}: {err}");
        }
    }

    #[test]
    fn zero_receive_count_is_rejected() {
        let err = Settings::from_env(&env(&[
            ("DOCFLOW_SECRET_ID", "s"),
            ("MAX_RECEIVE_COUNT", "0"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("MAX_RECEIVE_COUNT"));
    }
}
