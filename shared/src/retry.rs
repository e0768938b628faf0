//! The retry taxonomy shared by every function, and the schedules built on it.
//!
//! Errors are classified once, at the edge where they are understood (an HTTP status,
//! an SDK error, a database error), into [`RetryClass::Transient`] or
//! [`RetryClass::Permanent`]. Everything downstream — the in-process retry loop, the
//! receive-count schedule of matching, the attempt backoff of ingestion — asks
//! [`Classify::retry_class`] and never guesses from error strings.
//!
//! | error                                                   | class     |
//! |---------------------------------------------------------|-----------|
//! | HTTP 429, HTTP 5xx, network timeout / connection refused | transient |
//! | LLM response not JSON / fails schema validation          | transient |
//! | HTTP 400 context window exceeded, HTTP 401/403           | permanent |
//! | S3 object missing / access denied                        | permanent |
//! | database unreachable, serialization failure, deadlock    | transient |
//! | constraint violation, data error in our own SQL          | permanent |
//! | unsupported document type, empty file, file too large    | permanent |
//!
//! **Unknown means transient.** Only errors known to fail the same way every time are
//! permanent: a permanent class fails the work for good and deletes its message, a
//! transient one costs at most the remaining attempts (which are bounded) before the
//! work fails anyway. So a database failover (read-only transaction, admin shutdown,
//! too many connections, a dropped connection), an HTTP 404 or 422 from a provider, or
//! an error nobody listed, is retried.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

/// Whether trying the same thing again may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    /// May succeed later: rate limits, outages, timeouts, non-deterministic LLM output.
    Transient,
    /// Will fail the same way every time: bad input, missing object, rejected credentials.
    Permanent,
}

impl RetryClass {
    pub fn is_transient(self) -> bool {
        self == RetryClass::Transient
    }
}

/// Implemented by every error that may reach a retry decision.
pub trait Classify {
    fn retry_class(&self) -> RetryClass;

    fn is_transient(&self) -> bool {
        self.retry_class().is_transient()
    }
}

/// A failure of one processing step, carrying its class and its cause.
///
/// Functions that have no richer error type of their own use this one; its `Display`
/// shows the whole cause chain so the database and the notifications say what happened.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("transient: {0:#}")]
    Transient(#[source] anyhow::Error),
    #[error("permanent: {0:#}")]
    Permanent(#[source] anyhow::Error),
}

impl Failure {
    pub fn transient(e: impl Into<anyhow::Error>) -> Self {
        Failure::Transient(e.into())
    }

    pub fn permanent(e: impl Into<anyhow::Error>) -> Self {
        Failure::Permanent(e.into())
    }

    /// Keeps the class of a classified error and its whole chain.
    pub fn classified<E>(e: E) -> Self
    where
        E: Classify + std::error::Error + Send + Sync + 'static,
    {
        match e.retry_class() {
            RetryClass::Transient => Failure::Transient(e.into()),
            RetryClass::Permanent => Failure::Permanent(e.into()),
        }
    }
}

impl Classify for Failure {
    fn retry_class(&self) -> RetryClass {
        match self {
            Failure::Transient(_) => RetryClass::Transient,
            Failure::Permanent(_) => RetryClass::Permanent,
        }
    }
}

/// The message and every cause, joined with ": " — what error columns and admin
/// notifications show.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Classifies an HTTP error status (seed 001's table): 401 and 403 (rejected
/// credentials) are permanent; every other status is transient — 429 and 5xx by the
/// table, the rest (a plain 400, 404, 409, 413, 422, …) because they are not known to
/// be permanent. A 400 whose body says the context window was exceeded is permanent:
/// that decision needs the body, see [`is_context_window_exceeded`] (the LLM client
/// makes it). An API that documents more permanent statuses (Maesn) classifies them at
/// its own edge.
pub fn classify_http_status(status: u16) -> RetryClass {
    match status {
        401 | 403 => RetryClass::Permanent,
        _ => RetryClass::Transient,
    }
}

/// Whether an HTTP 400 body says the request was too large for the model's context.
/// Anthropic: "prompt is too long"; OpenAI-compatible servers: `context_length_exceeded`
/// or "maximum context length".
pub fn is_context_window_exceeded(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "context window",
    ]
    .iter()
    .any(|needle| body.contains(needle))
}

impl Classify for reqwest::Error {
    /// Transport failures (timeouts, refused or reset connections, bodies cut short) are
    /// transient; an error status is classified by [`classify_http_status`]; building a
    /// request wrongly is a bug and permanent.
    fn retry_class(&self) -> RetryClass {
        if let Some(status) = self.status() {
            return classify_http_status(status.as_u16());
        }
        if self.is_builder() || self.is_redirect() {
            RetryClass::Permanent
        } else {
            RetryClass::Transient
        }
    }
}

impl Classify for sqlx::Error {
    /// Permanent only when the statement itself cannot succeed with this data: SQLSTATE
    /// class 22 (data exception: a value out of range, an invalid enum text, …) and
    /// class 23 (integrity constraint violation), a row that was expected but is
    /// missing, and a value that cannot be decoded. Everything else is transient:
    /// connection loss and pool timeouts, serialization failures and deadlocks, a
    /// failover (25006 read-only transaction, 57P01–57P03, 53xxx, 08xxx), protocol
    /// errors, and whatever sqlx adds later.
    fn retry_class(&self) -> RetryClass {
        match self {
            sqlx::Error::Database(db) => match db.code().as_deref() {
                Some(code) if code.starts_with("22") || code.starts_with("23") => {
                    RetryClass::Permanent
                }
                _ => RetryClass::Transient,
            },
            sqlx::Error::RowNotFound
            | sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_) => RetryClass::Permanent,
            _ => RetryClass::Transient,
        }
    }
}

/// In-process retry of one call: 3 attempts, waits of `base`, `2·base` (2 s, 4 s with the
/// default base; an 8 s step exists if attempts are raised) with ±25 % jitter, transient
/// errors only.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// The default policy with another base delay (tests use milliseconds).
    pub fn with_base_delay(base_delay: Duration) -> Self {
        RetryPolicy {
            base_delay,
            max_delay: base_delay * 4,
            ..RetryPolicy::default()
        }
    }

    /// The un-jittered wait after failed attempt `attempt` (1-based): base·2^(attempt-1),
    /// capped at `max_delay`.
    pub fn delay_after(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        (self.base_delay * factor).min(self.max_delay)
    }

    /// Runs `op` until it succeeds, fails permanently, or the attempts are used up.
    /// Returns the last error; a permanent error is returned at once.
    pub async fn run<T, E, F, Fut>(&self, mut op: F) -> Result<T, E>
    where
        E: Classify + std::fmt::Display,
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = 1;
        loop {
            match op(attempt).await {
                Ok(value) => return Ok(value),
                Err(e) if e.is_transient() && attempt < self.attempts => {
                    let delay = jitter(self.delay_after(attempt));
                    tracing::warn!(
                        attempt,
                        max_attempts = self.attempts,
                        delay_ms = delay.as_millis() as u64,
                        error.message = %e,
                        "transient failure, retrying in process"
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// ±25 % jitter so that many records failing together do not retry in lockstep.
fn jitter(delay: Duration) -> Duration {
    if delay.is_zero() {
        return delay;
    }
    let factor = rand::rng().random_range(0.75..=1.25);
    delay.mul_f64(factor)
}

/// The final receive is the one after which SQS's redrive policy moves the message to
/// the DLQ: `receive_count >= max_receive_count` (the same number Terraform puts in the
/// redrive policy, `MAX_RECEIVE_COUNT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivePolicy {
    pub max_receive_count: u32,
}

impl Default for ReceivePolicy {
    fn default() -> Self {
        ReceivePolicy {
            max_receive_count: 3,
        }
    }
}

impl ReceivePolicy {
    pub fn is_final(&self, receive_count: u32) -> bool {
        receive_count >= self.max_receive_count
    }

    /// Matching's schedule after a transient failure (seed 001): receive 1 → hide for
    /// 300 s, later non-final receives → 1800 s, the final receive → release to the DLQ.
    pub fn matching_schedule(&self, receive_count: u32) -> TransientSchedule {
        if self.is_final(receive_count) {
            TransientSchedule::Final
        } else if receive_count <= 1 {
            TransientSchedule::RetryAfter(Duration::from_secs(300))
        } else {
            TransientSchedule::RetryAfter(Duration::from_secs(1800))
        }
    }
}

/// What to do with a message after a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransientSchedule {
    /// Hide the message this long, then let SQS redeliver it.
    RetryAfter(Duration),
    /// No receive is left: record the failure and let the redrive policy keep the message.
    Final,
}

/// Ingestion's backoff after failed attempt `n` (1-based, seed 004): `min(30·2^(n-1), 600)` s.
pub fn ingestion_backoff(attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(10);
    Duration::from_secs((30u64 << exp).min(600))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn http_statuses_are_classified_as_the_design_table_says() {
        assert_eq!(classify_http_status(429), RetryClass::Transient);
        assert_eq!(classify_http_status(500), RetryClass::Transient);
        assert_eq!(classify_http_status(503), RetryClass::Transient);
        assert_eq!(classify_http_status(401), RetryClass::Permanent);
        assert_eq!(classify_http_status(403), RetryClass::Permanent);
    }

    #[test]
    fn http_statuses_not_known_to_be_permanent_are_transient() {
        for status in [400, 404, 408, 409, 413, 422, 451, 499] {
            assert_eq!(
                classify_http_status(status),
                RetryClass::Transient,
                "{status}"
            );
        }
    }

    /// A database error with only a SQLSTATE, as Postgres sends them.
    #[derive(Debug)]
    struct PgError(&'static str);

    impl std::fmt::Display for PgError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "SQLSTATE {}", self.0)
        }
    }

    impl std::error::Error for PgError {}

    impl sqlx::error::DatabaseError for PgError {
        fn message(&self) -> &str {
            "test"
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn sqlstate(code: &'static str) -> RetryClass {
        sqlx::Error::Database(Box::new(PgError(code))).retry_class()
    }

    #[test]
    fn a_database_failover_is_transient() {
        // read-only transaction (a writer turned reader), admin/crash shutdown, cannot
        // connect now, too many connections, out of memory, connection failure,
        // serialization failure, deadlock, lock timeout, query canceled
        for code in [
            "25006", "57P01", "57P02", "57P03", "53300", "53200", "53100", "08006", "08001",
            "40001", "40P01", "55P03", "57014", "XX000", "58030",
        ] {
            assert_eq!(sqlstate(code), RetryClass::Transient, "{code}");
        }
        for error in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::WorkerCrashed,
            sqlx::Error::Protocol("unexpected message".into()),
            sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        ] {
            assert_eq!(error.retry_class(), RetryClass::Transient, "{error}");
        }
    }

    #[test]
    fn constraint_and_data_errors_in_our_own_sql_are_permanent() {
        // unique, foreign key, check, not null; invalid text representation, numeric
        // value out of range
        for code in ["23505", "23503", "23514", "23502", "22P02", "22003"] {
            assert_eq!(sqlstate(code), RetryClass::Permanent, "{code}");
        }
        assert_eq!(
            sqlx::Error::RowNotFound.retry_class(),
            RetryClass::Permanent
        );
    }

    #[test]
    fn context_window_errors_of_both_providers_are_recognised() {
        assert!(is_context_window_exceeded(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
        ));
        assert!(is_context_window_exceeded(
            r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 128000 tokens."}}"#
        ));
        assert!(!is_context_window_exceeded(
            r#"{"error":{"message":"invalid model"}}"#
        ));
    }

    #[test]
    fn ingestion_backoff_doubles_from_30_seconds_and_caps_at_ten_minutes() {
        let secs: Vec<u64> = (1..=7).map(|n| ingestion_backoff(n).as_secs()).collect();
        assert_eq!(secs, vec![30, 60, 120, 240, 480, 600, 600]);
        assert_eq!(ingestion_backoff(0).as_secs(), 30);
        assert_eq!(ingestion_backoff(u32::MAX).as_secs(), 600);
    }

    #[test]
    fn matching_schedule_is_300_then_1800_then_final() {
        let policy = ReceivePolicy::default();
        assert_eq!(
            policy.matching_schedule(1),
            TransientSchedule::RetryAfter(Duration::from_secs(300))
        );
        assert_eq!(
            policy.matching_schedule(2),
            TransientSchedule::RetryAfter(Duration::from_secs(1800))
        );
        assert_eq!(policy.matching_schedule(3), TransientSchedule::Final);
        assert_eq!(policy.matching_schedule(4), TransientSchedule::Final);
    }

    #[test]
    fn later_non_final_receives_wait_1800_seconds_when_max_receive_count_is_raised() {
        let policy = ReceivePolicy {
            max_receive_count: 5,
        };
        assert_eq!(
            policy.matching_schedule(3),
            TransientSchedule::RetryAfter(Duration::from_secs(1800))
        );
        assert_eq!(
            policy.matching_schedule(4),
            TransientSchedule::RetryAfter(Duration::from_secs(1800))
        );
        assert_eq!(policy.matching_schedule(5), TransientSchedule::Final);
    }

    #[test]
    fn default_policy_waits_2_4_8_seconds() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_after(1), Duration::from_secs(2));
        assert_eq!(policy.delay_after(2), Duration::from_secs(4));
        assert_eq!(policy.delay_after(3), Duration::from_secs(8));
        assert_eq!(policy.delay_after(4), Duration::from_secs(8));
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_success() {
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy::with_base_delay(Duration::from_millis(1));
        let result: Result<&str, Failure> = policy
            .run(|_| async {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(Failure::transient(anyhow::anyhow!("HTTP 429")))
                } else {
                    Ok("ok")
                }
            })
            .await;
        assert_eq!(result.unwrap(), "ok");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn permanent_errors_are_not_retried() {
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy::with_base_delay(Duration::from_millis(1));
        let result: Result<(), Failure> = policy
            .run(|_| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Failure::permanent(anyhow::anyhow!("HTTP 401")))
            })
            .await;
        assert!(matches!(result, Err(Failure::Permanent(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn persistent_transient_errors_stop_after_three_attempts() {
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy::with_base_delay(Duration::from_millis(1));
        let result: Result<(), Failure> = policy
            .run(|_| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Failure::transient(anyhow::anyhow!("HTTP 503")))
            })
            .await;
        assert!(matches!(result, Err(Failure::Transient(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn waits_grow_exponentially_between_attempts() {
        let start = tokio::time::Instant::now();
        let policy = RetryPolicy::default();
        let _: Result<(), Failure> = policy
            .run(|_| async { Err(Failure::transient(anyhow::anyhow!("HTTP 503"))) })
            .await;
        // Two waits: 2 s and 4 s, each jittered by ±25 % → between 4.5 s and 7.5 s in all.
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(4500) && waited <= Duration::from_millis(7500),
            "{waited:?}"
        );
    }
}
