//! [`MaesnClient`], the real connector: Maesn's REST API over reqwest, with its settings
//! ([`MaesnConfig`]), its two HTTP clients and the keys it reads from the secrets.
//!
//! **Connections.** The booking proposal is sent on a connection of its own
//! ([`MaesnClient`] keeps no idle connection for the POST): after a Lambda freeze a
//! pooled keep-alive connection may long have been dropped by a load balancer, and a
//! POST written into it fails with a reset that could not be told apart from one after
//! Maesn received it (in doubt, although nothing reached Maesn). Task polls (GET, safe
//! to repeat) reuse connections idle for at most [`GET_POOL_IDLE`].
//!
//! A connect timeout (`MAESN_CONNECT_TIMEOUT_SECONDS`) shorter than the request timeout
//! is what makes a hanging connect (NAT or DNS trouble) surface as a connect error, i.e.
//! a refusal, rather than as the request timeout, which could not be told apart from
//! a Maesn that is slow to answer a request it already has.
//!
//! Credentials: Maesn's API key is the app secret's `maesn_api_key`; a tenant's account
//! key (`X-ACCOUNT-KEY`) is the `account_key` of its own secret
//! `DATEV_CREDENTIALS_PREFIX` + tenant id. Both are [`SecretString`]s read through the
//! cached secret stores and never logged (the header values are marked sensitive);
//! the database holds neither. For the booking proposal the worker reads both
//! ([`DatevConnector::keys`]) before it writes the audit, so no secret read can eat into
//! the time of a request already recorded as started. A 401 or 403 makes the client
//! read both secrets again and, only when a key there changed (rotated since it was
//! cached), repeat the request once with the new keys — for the POST, only when the
//! caller still has a full request budget ([`DatevConnector::rotated_keys`]).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use uuid::Uuid;

use super::answer::{
    CREATE, TASK, broken_answer, read_created_task_from, read_task_state, retry_after,
};
use super::{
    BookingProposal, DatevAccount, DatevConnector, DatevError, Keys, TaskState, said_by_maesn,
    status_in_doubt,
};
use crate::secrets::{SecretFamily, SecretStore, key_changed};
use crate::settings::{Env, SettingsError};

/// How long a task poll (GET) may reuse an idle connection: long enough for the polls
/// of one sweeper run, which follow each other at once; short, because a load balancer
/// drops idle connections (after 60 s or so) and a Lambda may be frozen far longer.
pub const GET_POOL_IDLE: Duration = Duration::from_millis(500);

/// The secret store key holding Maesn's `X-API-KEY`.
pub const API_KEY_SECRET: &str = "maesn_api_key";

/// The key in a tenant's DATEV secret holding Maesn's `X-ACCOUNT-KEY`.
pub const ACCOUNT_KEY_SECRET: &str = "account_key";

/// Settings of the Maesn client.
#[derive(Debug, Clone)]
pub struct MaesnConfig {
    /// `MAESN_BASE_URL` (default `https://api.maesn.dev`).
    pub base_url: String,
    /// `MAESN_TIMEOUT_SECONDS` (default 30): per request, connect included. Also the
    /// time budget the worker reserves for one attempt.
    pub timeout: Duration,
    /// `MAESN_CONNECT_TIMEOUT_SECONDS` (default 5): for making the connection (DNS, TCP,
    /// TLS). Must be shorter than `timeout`, or a hanging connect would look like a
    /// request Maesn may have received.
    pub connect_timeout: Duration,
    /// `DATEV_CREDENTIALS_PREFIX` (default `docflow/datev/`): a tenant's account key is
    /// the `account_key` of the secret named this prefix + the tenant id.
    pub credentials_prefix: String,
}

impl Default for MaesnConfig {
    fn default() -> Self {
        MaesnConfig {
            base_url: "https://api.maesn.dev".into(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            credentials_prefix: "docflow/datev/".into(),
        }
    }
}

impl MaesnConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        let defaults = MaesnConfig::default();
        let config = MaesnConfig {
            base_url: env
                .or("MAESN_BASE_URL", &defaults.base_url)
                .trim_end_matches('/')
                .to_owned(),
            timeout: env.seconds_or("MAESN_TIMEOUT_SECONDS", defaults.timeout.as_secs())?,
            connect_timeout: env.seconds_or(
                "MAESN_CONNECT_TIMEOUT_SECONDS",
                defaults.connect_timeout.as_secs(),
            )?,
            credentials_prefix: env.or("DATEV_CREDENTIALS_PREFIX", &defaults.credentials_prefix),
        };
        config.validate()?;
        Ok(config)
    }

    /// Both timeouts set, the connect timeout the shorter.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.connect_timeout.is_zero() {
            return Err(SettingsError::Invalid {
                var: "MAESN_CONNECT_TIMEOUT_SECONDS",
                reason: "must be at least 1".into(),
            });
        }
        if self.connect_timeout >= self.timeout {
            return Err(SettingsError::Invalid {
                var: "MAESN_CONNECT_TIMEOUT_SECONDS",
                reason: format!(
                    "must be shorter than MAESN_TIMEOUT_SECONDS ({} s): otherwise a hanging connect \
                     surfaces as the request timeout and the export is recorded as in doubt",
                    self.timeout.as_secs()
                ),
            });
        }
        Ok(())
    }
}

/// The real connector: Maesn's REST API over reqwest.
#[derive(Debug, Clone)]
pub struct MaesnClient {
    /// Task polls (GET): reuses connections idle for at most [`GET_POOL_IDLE`].
    http: reqwest::Client,
    /// Booking proposals (POST): keeps no idle connection, so every POST goes out on a
    /// connection just made (module docs, "Connections").
    post: reqwest::Client,
    base_url: String,
    secrets: Arc<SecretStore>,
    credentials: Arc<SecretFamily>,
}

impl MaesnClient {
    /// Builds the clients once per cold start; fails only if the TLS backend cannot be
    /// initialised. Redirects are not followed: a 3xx is reported as an answer, never
    /// turned into a second request.
    pub fn new(config: &MaesnConfig, secrets: Arc<SecretStore>) -> Result<Self, reqwest::Error> {
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(config.connect_timeout)
                .timeout(config.timeout)
                .redirect(reqwest::redirect::Policy::none())
        };
        let http = builder().pool_idle_timeout(GET_POOL_IDLE).build()?;
        let post = builder().pool_max_idle_per_host(0).build()?;
        Ok(MaesnClient {
            http,
            post,
            base_url: config.base_url.clone(),
            credentials: Arc::new(secrets.family(config.credentials_prefix.clone())),
            secrets,
        })
    }

    async fn api_key(&self) -> Result<SecretString, DatevError> {
        self.secrets
            .get(API_KEY_SECRET)
            .await
            .map_err(DatevError::ApiKey)
    }

    async fn account_key(&self, tenant_id: Uuid) -> Result<SecretString, DatevError> {
        self.credentials
            .get(&tenant_id.to_string(), ACCOUNT_KEY_SECRET)
            .await
            .map_err(|source| DatevError::AccountKey {
                tenant_id,
                secret_id: self.credentials.secret_id(&tenant_id.to_string()),
                source,
            })
    }

    /// Sends one request with both keys; returns the status, the body and the parsed
    /// `Retry-After` for [`read_created_task`](super::read_created_task) /
    /// [`read_task_state`] to read.
    ///
    /// A 401 or 403 may mean a key was rotated since it was cached (the old one revoked):
    /// the secrets are read again and, only when a key there changed, the request is
    /// repeated once with the new keys. Maesn refused to act on the first request, so the
    /// repeat cannot book twice. Otherwise the refusal is returned as it was.
    async fn read_keys(&self, account: &DatevAccount) -> Result<Keys, DatevError> {
        Ok(Keys {
            api_key: self.api_key().await?,
            account_key: self.account_key(account.tenant_id).await?,
        })
    }

    async fn fresh_keys(
        &self,
        account: &DatevAccount,
        refused: &Keys,
        status: u16,
        operation: &'static str,
    ) -> Result<Option<Keys>, DatevError> {
        let tenant = account.tenant_id.to_string();
        // Both, not short-circuited: either key may be the rotated one.
        let (api_forgotten, account_forgotten) =
            tokio::join!(self.secrets.refresh(), self.credentials.refresh(&tenant));
        if !api_forgotten && !account_forgotten {
            return Ok(None);
        }
        let fresh = self.read_keys(account).await?;
        if !key_changed(Some(&refused.api_key), Some(&fresh.api_key))
            && !key_changed(Some(&refused.account_key), Some(&fresh.account_key))
        {
            tracing::error!(status, operation, "Maesn refuses the keys in the secrets");
            return Ok(None);
        }
        Ok(Some(fresh))
    }

    /// Sends one request with both keys; returns the status, the body and the parsed
    /// `Retry-After` for [`read_created_task`](super::read_created_task) /
    /// [`read_task_state`] to read.
    ///
    /// A 401 or 403 may mean a key was rotated since it was cached (the old one revoked):
    /// the secrets are read again and, only when a key there changed, the request is
    /// repeated once with the new keys. Maesn refused to act on the first request, so the
    /// repeat cannot book twice. Otherwise the refusal is returned as it was. (For task
    /// polls; the booking proposal leaves the repeat to the worker, which knows its time.)
    async fn send(
        &self,
        operation: &'static str,
        request: impl Fn() -> Result<reqwest::RequestBuilder, DatevError>,
        account: &DatevAccount,
    ) -> Result<Answer, DatevError> {
        let keys = self.read_keys(account).await?;
        let answer = self
            .send_with(operation, request()?, account, &keys)
            .await?;
        if !matches!(answer.status, 401 | 403) {
            return Ok(answer);
        }
        let Some(fresh) = self
            .fresh_keys(account, &keys, answer.status, operation)
            .await?
        else {
            return Ok(answer);
        };
        tracing::warn!(
            status = answer.status,
            operation,
            "Maesn refused its keys; repeating the request once with the keys now in the secrets"
        );
        self.send_with(operation, request()?, account, &fresh).await
    }

    /// One request with these keys.
    async fn send_with(
        &self,
        operation: &'static str,
        request: reqwest::RequestBuilder,
        account: &DatevAccount,
        keys: &Keys,
    ) -> Result<Answer, DatevError> {
        let started = std::time::Instant::now();
        let response = request
            .headers(key_headers(keys)?)
            .query(&[("companyId", account.company_id.as_str())])
            .send()
            .await
            .map_err(|source| DatevError::Transport { operation, source })?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let server = response
            .headers()
            .get(reqwest::header::SERVER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (mut body, cut_off) = read_body(response).await;
        let cut_off = match cut_off {
            None => None,
            // A 2xx cut short: what arrived is kept for the caller (a task id may be in
            // it), which decides.
            Some(source) if (200..300).contains(&status) => Some(source),
            // The status already says nothing was done; a body cut short changes nothing.
            // (A 429 or 503 needs its body to tell Maesn from a proxy: without it, in
            // doubt.)
            Some(_) if !status_in_doubt(status, said_by_maesn("", server.as_deref())) => {
                body = "(body unreadable)".into();
                None
            }
            Some(source) => return Err(DatevError::Transport { operation, source }),
        };
        crate::telemetry::metrics::time(
            crate::telemetry::metrics::output::MAESN_LATENCY,
            started.elapsed(),
        );
        Ok(Answer {
            status,
            body: scrub_keys(body, keys),
            retry_after,
            server,
            cut_off,
        })
    }
}

/// Both keys as header values marked sensitive, so that no `Debug` of the request (the
/// HTTP stack's DEBUG/TRACE logs) prints them.
fn key_headers(keys: &Keys) -> Result<reqwest::header::HeaderMap, DatevError> {
    use reqwest::header::{HeaderMap, HeaderValue};
    let value = |key: &SecretString, which| {
        let mut value = HeaderValue::from_str(key.expose_secret())
            .map_err(|_| DatevError::InvalidKey { which })?;
        value.set_sensitive(true);
        Ok::<_, DatevError>(value)
    };
    let mut headers = HeaderMap::with_capacity(2);
    headers.insert("X-API-KEY", value(&keys.api_key, "Maesn API key")?);
    headers.insert(
        "X-ACCOUNT-KEY",
        value(&keys.account_key, "DATEV account key")?,
    );
    Ok(headers)
}

/// The answer's body with every occurrence of a key the request sent replaced by
/// `[redacted]`. Done before anything reads, cuts, logs or stores the body (the audit's
/// `error`, the job's `last_error`, admin notices): an answer that echoes a header
/// (a gateway's debug page, an error quoting the "invalid key") must not carry it into
/// the database. Done on the whole body, before it is cut to 500 characters, so that no
/// key is left half there.
fn scrub_keys(mut body: String, keys: &Keys) -> String {
    for key in [&keys.api_key, &keys.account_key] {
        let key = key.expose_secret();
        if !key.is_empty() && body.contains(key) {
            body = body.replace(key, "[redacted]");
        }
    }
    body
}

/// One HTTP answer as the connector read it.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// The body (all of it, or what arrived before `cut_off`).
    body: String,
    retry_after: Option<Duration>,
    /// The `server` header (a proxy names itself there).
    server: Option<String>,
    /// Why a 2xx body stopped short (a reset, a timeout mid-body).
    cut_off: Option<reqwest::Error>,
}

/// Reads a body chunk by chunk, so that what arrived before a reset is not lost with it.
async fn read_body(mut response: reqwest::Response) -> (String, Option<reqwest::Error>) {
    let mut bytes = Vec::new();
    let cut_off = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    (String::from_utf8_lossy(&bytes).into_owned(), cut_off)
}

/// `segment` percent-encoded as one URL path segment (RFC 3986 unreserved characters
/// stay), so that a task id can neither leave its segment nor add a query.
fn path_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

impl DatevConnector for MaesnClient {
    async fn keys(&self, account: &DatevAccount) -> Result<Keys, DatevError> {
        self.read_keys(account).await
    }

    async fn rotated_keys(
        &self,
        account: &DatevAccount,
        refused: &Keys,
    ) -> Result<Option<Keys>, DatevError> {
        self.fresh_keys(account, refused, 401, CREATE).await
    }

    async fn create_booking_proposal(
        &self,
        p: &BookingProposal,
        keys: &Keys,
    ) -> Result<String, DatevError> {
        let file = reqwest::multipart::Part::stream_with_length(
            reqwest::Body::from(p.file.bytes.clone()),
            p.file.bytes.len() as u64,
        )
        .file_name(p.file.file_name.clone())
        .mime_str(&p.file.mime_type)
        .map_err(|source| DatevError::Transport {
            operation: CREATE,
            source,
        })?;
        let json_part = |value: &serde_json::Value| {
            reqwest::multipart::Part::text(value.to_string())
                .mime_str("application/json")
                .expect("application/json is a valid mime type")
        };
        let form = reqwest::multipart::Form::new()
            .part("bookingProposal", json_part(&p.proposal))
            .text("bookingType", p.booking_type.clone())
            .part("folderManagement", json_part(&p.folder_management))
            .part("files", file);
        let url = format!("{}/accounting/bookingProposals/async", self.base_url);
        let request = self.post.post(url).multipart(form);
        let answer = self.send_with(CREATE, request, &p.account, keys).await?;
        if let Some(source) = &answer.cut_off {
            return Err(broken_answer(
                format!(
                    "the answer was cut off: {}",
                    crate::retry::error_chain(source)
                ),
                &answer.body,
            ));
        }
        match read_created_task_from(
            answer.status,
            &answer.body,
            answer.retry_after,
            answer.server.as_deref(),
        ) {
            Err(DatevError::UnexpectedBody { reason, .. }) => {
                Err(broken_answer(reason, &answer.body))
            }
            other => other,
        }
    }

    async fn async_task(
        &self,
        account: &DatevAccount,
        task_id: &str,
    ) -> Result<TaskState, DatevError> {
        if task_id.is_empty() || task_id.chars().all(|c| c == '.') {
            return Err(DatevError::UnexpectedBody {
                operation: TASK,
                reason: format!("task id {task_id:?} cannot name a task"),
            });
        }
        let url = format!(
            "{}/accounting/asyncTask/{}",
            self.base_url,
            path_segment(task_id)
        );
        let answer = self.send(TASK, || Ok(self.http.get(&url)), account).await?;
        if let Some(source) = answer.cut_off {
            // A poll is safe to repeat: the next one reads the task again.
            return Err(DatevError::Transport {
                operation: TASK,
                source,
            });
        }
        read_task_state(answer.status, &answer.body, answer.retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_an_answer_echoes_is_redacted_before_it_is_kept() {
        let keys = Keys {
            api_key: SecretString::from("api-SECRET-1"),
            account_key: SecretString::from("account-SECRET-2"),
        };
        let body = "bad X-API-KEY api-SECRET-1, X-ACCOUNT-KEY account-SECRET-2 (api-SECRET-1)";
        let scrubbed = scrub_keys(body.into(), &keys);
        assert!(!scrubbed.contains("SECRET"), "{scrubbed}");
        assert_eq!(scrubbed.matches("[redacted]").count(), 3);
        assert_eq!(scrub_keys("nothing here".into(), &keys), "nothing here");
    }

    #[test]
    fn the_keys_are_sensitive_header_values() {
        let keys = Keys {
            api_key: SecretString::from("api-SECRET"),
            account_key: SecretString::from("account-SECRET"),
        };
        let headers = key_headers(&keys).unwrap();
        assert!(headers["x-api-key"].is_sensitive());
        assert!(headers["x-account-key"].is_sensitive());
        let printed = format!("{headers:?}");
        assert!(!printed.contains("SECRET"), "{printed}");
        let bad = Keys {
            api_key: SecretString::from("line\nbreak"),
            ..keys
        };
        assert!(matches!(
            key_headers(&bad),
            Err(DatevError::InvalidKey { .. })
        ));
    }

    #[test]
    fn a_task_id_stays_one_path_segment() {
        assert_eq!(path_segment("3f2a-Task_1.x~"), "3f2a-Task_1.x~");
        assert_eq!(path_segment("a/b?c=d#e f"), "a%2Fb%3Fc%3Dd%23e%20f");
        assert_eq!(path_segment("ü"), "%C3%BC");
    }

    #[test]
    fn the_connect_timeout_must_be_shorter_than_the_request_timeout() {
        let config = MaesnConfig {
            connect_timeout: Duration::from_secs(30),
            ..MaesnConfig::default()
        };
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("MAESN_CONNECT_TIMEOUT_SECONDS"), "{err}");
        assert!(MaesnConfig::default().validate().is_ok());
    }
}
