//! Credentials from one Secrets Manager secret holding a JSON object of strings
//! (`database_url`, `anthropic_api_key`, `openai_api_key`, `slack_webhook_url`,
//! `maesn_api_key`, …). Fetched on first use (at cold start) and reused for a TTL, so a
//! rotated value is picked up without a redeploy. Values are `SecretString`s: they are
//! never printed, and no error message contains one.
//!
//! [`SecretFamily`] is the per-tenant variant: one secret per member under a common name
//! prefix (e.g. `docflow/datev/<tenant id>` holding that tenant's DATEV account key), so
//! that a tenant's credential never sits in the database and IAM can grant the prefix.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueError;
use secrecy::SecretString;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::retry::{Classify, RetryClass};

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "secret {secret_id} does not exist; create it (see README: `make up` creates the local one)"
    )]
    NotFound { secret_id: String },
    #[error("could not fetch secret {secret_id}")]
    Fetch {
        secret_id: String,
        #[source]
        source: Box<SdkError<GetSecretValueError>>,
    },
    #[error("secret {secret_id} has no string value; store a JSON object of strings")]
    NoString { secret_id: String },
    // The serde_json error is left out on purpose: its message may quote the value.
    #[error("secret {secret_id} is not a JSON object of strings")]
    NotJson { secret_id: String },
    #[error("secret {secret_id} has no key {key:?}; add it to the secret's JSON")]
    MissingKey { secret_id: String, key: String },
    #[error("Secrets Manager did not answer for secret {secret_id} within {} s", after.as_secs_f64())]
    TimedOut { secret_id: String, after: Duration },
}

impl Classify for SecretError {
    /// Throttling, outages and network errors are transient; a secret that is missing,
    /// malformed, denied to us or undecryptable stays that way until an operator acts.
    fn retry_class(&self) -> RetryClass {
        match self {
            SecretError::Fetch { source, .. } => {
                match source.as_service_error().and_then(|e| e.code()) {
                    Some("AccessDeniedException") | Some("DecryptionFailure") => {
                        RetryClass::Permanent
                    }
                    _ => RetryClass::Transient,
                }
            }
            SecretError::TimedOut { .. } => RetryClass::Transient,
            _ => RetryClass::Permanent,
        }
    }
}

/// Whether a key read again after a refusal differs from the one refused (a rotation):
/// only then is a refused request worth repeating.
pub fn key_changed(refused: Option<&SecretString>, fresh: Option<&SecretString>) -> bool {
    use secrecy::ExposeSecret;
    match (refused, fresh) {
        (Some(a), Some(b)) => a.expose_secret() != b.expose_secret(),
        (a, b) => a.is_some() != b.is_some(),
    }
}

type Values = Arc<HashMap<String, SecretString>>;

/// How long one Secrets Manager call may take (the SDK sets no operation timeout: a
/// call into a black hole would otherwise hang until the invocation's deadline).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
struct Timing {
    refresh_min_age: Duration,
    fetch_timeout: Duration,
}

/// The cached secret. Cheap to clone (clones share the cache); concurrent callers after
/// expiry wait for one fetch.
#[derive(Debug, Clone)]
pub struct SecretStore {
    client: aws_sdk_secretsmanager::Client,
    secret_id: String,
    ttl: Duration,
    /// The refresh minimum age and the fetch timeout (behind an `Arc`: the store is
    /// cloned into every client that reads a secret, and kept small).
    timing: Arc<Timing>,
    cache: Arc<Mutex<Option<(Instant, Values)>>>,
}

impl SecretStore {
    pub fn new(
        client: aws_sdk_secretsmanager::Client,
        secret_id: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        SecretStore {
            client,
            secret_id: secret_id.into(),
            ttl,
            timing: Arc::new(Timing {
                refresh_min_age: Duration::from_secs(10),
                fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            }),
            cache: Arc::new(Mutex::new(None)),
        }
    }

    /// How long one Secrets Manager call may take (default [`DEFAULT_FETCH_TIMEOUT`]); a
    /// [`SecretStore::family`] made afterwards inherits it.
    pub fn with_fetch_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.timing).fetch_timeout = timeout;
        self
    }

    pub fn secret_id(&self) -> &str {
        &self.secret_id
    }

    /// The family of secrets named `prefix` + member, read with this store's client and
    /// TTL.
    pub fn family(&self, prefix: impl Into<String>) -> SecretFamily {
        SecretFamily::new(self.client.clone(), prefix, self.ttl)
            .with_refresh_min_age(self.timing.refresh_min_age)
            .with_fetch_timeout(self.timing.fetch_timeout)
    }

    /// The value under `key`. Fails with [`SecretError::MissingKey`] when the secret has
    /// no such key.
    pub async fn get(&self, key: &str) -> Result<SecretString, SecretError> {
        self.get_optional(key)
            .await?
            .ok_or_else(|| SecretError::MissingKey {
                secret_id: self.secret_id.clone(),
                key: key.to_owned(),
            })
    }

    /// The value under `key`, or `None` when the secret has no such key (for opt-in
    /// features such as a Slack webhook).
    pub async fn get_optional(&self, key: &str) -> Result<Option<SecretString>, SecretError> {
        Ok(self.values().await?.get(key).cloned())
    }

    /// How old a cached value must be before [`SecretStore::refresh`] forgets it
    /// (default 10 s; a [`SecretStore::family`] made afterwards inherits it).
    pub fn with_refresh_min_age(mut self, min_age: Duration) -> Self {
        Arc::make_mut(&mut self.timing).refresh_min_age = min_age;
        self
    }

    /// Forgets the cached value unless it was fetched moments ago, so the next read
    /// fetches it again: for a caller whose credential was just refused (rotated since
    /// it was cached). Returns whether it was forgotten; the minimum age keeps a key
    /// that is simply wrong from costing a fetch per call.
    pub async fn refresh(&self) -> bool {
        let mut cache = self.cache.lock().await;
        match cache.as_ref() {
            Some((fetched_at, _)) if fetched_at.elapsed() >= self.timing.refresh_min_age => {
                *cache = None;
                true
            }
            _ => false,
        }
    }

    /// Test support: makes the cached value `by` older, as if it had been fetched that
    /// much earlier, so a test can cross the TTL without waiting for it. Returns whether
    /// a value was cached. Not for production code: the TTL is the only expiry.
    #[doc(hidden)]
    pub async fn age_cache_for_test(&self, by: Duration) -> bool {
        let mut cache = self.cache.lock().await;
        match cache.as_mut() {
            Some((fetched_at, _)) => {
                *fetched_at = fetched_at
                    .checked_sub(by)
                    .expect("the machine has been up longer than the cache is aged");
                true
            }
            None => false,
        }
    }

    async fn values(&self) -> Result<Values, SecretError> {
        let mut cache = self.cache.lock().await;
        if let Some((fetched_at, values)) = cache.as_ref()
            && fetched_at.elapsed() < self.ttl
        {
            return Ok(values.clone());
        }
        let started = Instant::now();
        let values = Arc::new(self.fetch().await?);
        // A cold start's first fetch is its own phase, whichever phase reads first.
        crate::coldstart::nested("secret_fetch", started.elapsed());
        *cache = Some((Instant::now(), values.clone()));
        Ok(values)
    }

    async fn fetch(&self) -> Result<HashMap<String, SecretString>, SecretError> {
        let call = self
            .client
            .get_secret_value()
            .secret_id(&self.secret_id)
            .send();
        let output = tokio::time::timeout(self.timing.fetch_timeout, call)
            .await
            .map_err(|_| SecretError::TimedOut {
                secret_id: self.secret_id.clone(),
                after: self.timing.fetch_timeout,
            })?
            .map_err(|source| match &source {
                SdkError::ServiceError(e) if e.err().is_resource_not_found_exception() => {
                    SecretError::NotFound {
                        secret_id: self.secret_id.clone(),
                    }
                }
                _ => SecretError::Fetch {
                    secret_id: self.secret_id.clone(),
                    source: Box::new(source),
                },
            })?;
        tracing::info!(secret_id = %self.secret_id, "fetched secret");
        let raw = output
            .secret_string()
            .ok_or_else(|| SecretError::NoString {
                secret_id: self.secret_id.clone(),
            })?;
        let map: HashMap<String, String> =
            serde_json::from_str(raw).map_err(|_| SecretError::NotJson {
                secret_id: self.secret_id.clone(),
            })?;
        Ok(map
            .into_iter()
            .map(|(k, v)| (k, SecretString::from(v)))
            .collect())
    }
}

/// Secrets that share a name prefix, one per member (`prefix` + member), each a JSON
/// object of strings cached like a [`SecretStore`]. Members are looked up by name only
/// (e.g. a tenant id): nothing about the value is ever stored outside Secrets Manager.
#[derive(Debug)]
pub struct SecretFamily {
    client: aws_sdk_secretsmanager::Client,
    prefix: String,
    ttl: Duration,
    refresh_min_age: Duration,
    fetch_timeout: Duration,
    members: std::sync::Mutex<HashMap<String, Arc<SecretStore>>>,
}

impl SecretFamily {
    pub fn new(
        client: aws_sdk_secretsmanager::Client,
        prefix: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        SecretFamily {
            client,
            prefix: prefix.into(),
            ttl,
            refresh_min_age: Duration::from_secs(10),
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            members: std::sync::Mutex::default(),
        }
    }

    /// Like [`SecretStore::with_fetch_timeout`], for every member.
    pub fn with_fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Like [`SecretStore::with_refresh_min_age`], for every member.
    pub fn with_refresh_min_age(mut self, min_age: Duration) -> Self {
        self.refresh_min_age = min_age;
        self
    }

    /// The secret name of `member`.
    pub fn secret_id(&self, member: &str) -> String {
        format!("{}{member}", self.prefix)
    }

    /// The value under `key` in `member`'s secret. Fails like [`SecretStore::get`]; a
    /// member without a secret is [`SecretError::NotFound`] (permanent).
    pub async fn get(&self, member: &str, key: &str) -> Result<SecretString, SecretError> {
        self.member(member).get(key).await
    }

    /// [`SecretStore::refresh`] of `member`'s secret.
    pub async fn refresh(&self, member: &str) -> bool {
        self.member(member).refresh().await
    }

    fn member(&self, member: &str) -> Arc<SecretStore> {
        self.members
            .lock()
            .expect("secret family cache poisoned")
            .entry(member.to_owned())
            .or_insert_with(|| {
                Arc::new(
                    SecretStore::new(self.client.clone(), self.secret_id(member), self.ttl)
                        .with_refresh_min_age(self.refresh_min_age)
                        .with_fetch_timeout(self.fetch_timeout),
                )
            })
            .clone()
    }
}
