//! The DATEV connector: booking proposals through the Maesn API.
//!
//! [`DatevConnector`] is the one seam between document output and DATEV: start an
//! export (`POST /accounting/bookingProposals/async`, answered with a `taskId`) and
//! read the state of that asynchronous task (`GET /accounting/asyncTask/{taskId}`).
//! [`MaesnClient`] is the real implementation over reqwest. It makes exactly one HTTP
//! request per call: in-process retries are the caller's decision (see
//! [`crate::output`]), so that every retried request is logged in one place.
//!
//! Errors are classified at this edge. Two questions matter for a booking proposal, and
//! [`DatevError`] answers both:
//!
//! - **Did Maesn possibly act?** ([`DatevError::may_have_been_accepted`]) Maesn offers no
//!   idempotency key, so a second POST after one it may have accepted could book the
//!   document twice. Only answers that prove nothing was done are "refusals": no
//!   connection was made (refused, connect timeout, DNS, TLS handshake — all before a
//!   byte of the request was written), 4xx (the request was judged and turned down,
//!   408 included), 307/308 (the request must be sent elsewhere; redirects are not
//!   followed) and a 429 or 503 **that Maesn itself sent** ("not now"): one with Maesn's
//!   JSON error envelope and no mark of a proxy ([`said_by_maesn`]). A `Retry-After`
//!   alone proves nothing: a proxy or gateway in front of Maesn sends one too, and its
//!   429 or 503 can come after the origin booked. Everything else is **in doubt**: a timeout or a broken
//!   connection after the request was written (a reset, a body cut short — also on a
//!   200), any other 5xx (500, 501, 502, 504, 505–599, CDN 520/524, proxy 598/599), a
//!   429 or 503 without Maesn's envelope or from a proxy (a non-JSON body, `server: envoy`/`cloudflare`/`awselb`,
//!   "upstream connect error": the origin may have booked before the proxy gave up),
//!   every 3xx but 307/308 (a 303 "see other" answers a request that was processed),
//!   a 2xx whose body is not the documented envelope.
//! - **May trying again help?** ([`Classify::retry_class`]) 408, 429, 5xx and transport
//!   failures are transient; other statuses and broken contracts are permanent.
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
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use uuid::Uuid;

use crate::retry::{Classify, RetryClass, classify_http_status};

/// How long a task poll (GET) may reuse an idle connection: long enough for the polls
/// of one sweeper run, which follow each other at once; short, because a load balancer
/// drops idle connections (after 60 s or so) and a Lambda may be frozen far longer.
pub const GET_POOL_IDLE: Duration = Duration::from_millis(500);

/// Statuses Maesn documents as definite refusals (module docs); every other status goes
/// by the shared table, where unknown means transient.
fn classify_maesn_status(status: u16) -> RetryClass {
    match status {
        400 | 404 | 405 => RetryClass::Permanent,
        _ => classify_http_status(status),
    }
}
use crate::secrets::{SecretError, SecretFamily, SecretStore, key_changed};
use crate::settings::{Env, SettingsError};

/// The secret store key holding Maesn's `X-API-KEY`.
pub const API_KEY_SECRET: &str = "maesn_api_key";

/// The key in a tenant's DATEV secret holding Maesn's `X-ACCOUNT-KEY`.
pub const ACCOUNT_KEY_SECRET: &str = "account_key";

/// Which DATEV connection (Maesn account) a call is made for; from
/// `tenant_datev_integration`. The account key itself is read from the tenant's secret
/// by the connector, so it never travels through the database or this struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatevAccount {
    pub tenant_id: Uuid,
    /// Sent as the `companyId` query parameter.
    pub company_id: String,
}

/// The document file uploaded with the booking proposal. `Bytes`: each attempt shares
/// the one buffer instead of copying the file.
#[derive(Debug, Clone)]
pub struct DocumentFile {
    pub file_name: String,
    pub mime_type: String,
    pub bytes: Bytes,
}

/// One booking proposal export: the multipart parts of
/// `POST /accounting/bookingProposals/async`.
#[derive(Debug, Clone)]
pub struct BookingProposal {
    pub account: DatevAccount,
    /// The `bookingProposal` part (JSON).
    pub proposal: serde_json::Value,
    /// The `bookingType` part (e.g. `BILL`).
    pub booking_type: String,
    /// The `folderManagement` part (JSON), where DATEV files the document.
    pub folder_management: serde_json::Value,
    /// The `files` part.
    pub file: DocumentFile,
}

/// The state of a Maesn asynchronous task, reduced to what the export audit records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// `OPEN`, `IN_PROGRESS` (and `CANCEL_FAILED`: the task goes on).
    InProgress,
    /// `SUCCESS`, `FINISHED`.
    Succeeded { information: Vec<String> },
    /// `PARTIAL_SUCCESS`: booked, but DATEV's `information` says what it dropped or
    /// changed; a person should read it.
    PartiallySucceeded { information: Vec<String> },
    /// `FAILED`, `CANCELLED_SUCCESSFULLY`; `information` holds DATEV's messages.
    Failed { information: Vec<String> },
}

/// Whether DATEV's messages on a failed task say it rejected the booking as a duplicate
/// (the document number or the document itself is already there). Such a failure must
/// not be "fixed" by exporting again. Matched on the wording DATEV and Maesn use
/// (German and English), case-insensitively.
pub fn is_duplicate_rejection(information: &[String]) -> bool {
    const MARKERS: &[&str] = &[
        "duplicate",
        "already exists",
        "bereits vorhanden",
        "bereits existiert",
        "bereits übertragen",
        "bereits gebucht",
        "dublette",
        "doppelt",
    ];
    information.iter().any(|message| {
        let message = message.to_lowercase();
        MARKERS.iter().any(|m| message.contains(m))
    })
}

/// Why a Maesn call failed.
#[derive(Debug, thiserror::Error)]
pub enum DatevError {
    #[error("Maesn answered HTTP {status} to {operation}: {body}")]
    Status {
        operation: &'static str,
        status: u16,
        /// The response body, cut to 500 characters.
        body: String,
        /// The `Retry-After` header (seconds or an HTTP date), when Maesn sent one.
        retry_after: Option<Duration>,
        /// Whether the answer bears Maesn's own marks ([`said_by_maesn`]); only then is
        /// a 503 a refusal.
        from_maesn: bool,
    },
    #[error("could not reach Maesn for {operation}")]
    Transport {
        operation: &'static str,
        #[source]
        source: reqwest::Error,
    },
    #[error("Maesn's answer to {operation} is not what its API documents: {reason}")]
    UnexpectedBody {
        operation: &'static str,
        reason: String,
    },
    /// A 2xx answer to the booking proposal that could not be read: cut off by a reset
    /// or not the documented envelope. Maesn may well have accepted it (in doubt); what
    /// arrived is kept (`body`, keys redacted, at most [`KEPT_BODY_CHARS`]) and a task
    /// id found in it is salvaged, so the task can be followed to its end.
    #[error("Maesn's answer to {operation} is not what its API documents: {reason}")]
    BrokenAnswer {
        operation: &'static str,
        reason: String,
        body: String,
        task_id: Option<String>,
    },
    #[error("could not read the Maesn API key from the secret store")]
    ApiKey(#[source] SecretError),
    #[error(
        "the {which} in the secret is not a valid HTTP header value (control characters or \
         non-ASCII); store the key as Maesn issued it"
    )]
    InvalidKey { which: &'static str },
    #[error(
        "Maesn refused the keys (HTTP {status}) and the secrets now hold rotated ones, but too \
         little time is left for a whole second request; nothing was booked, retried later"
    )]
    KeysRotated { status: u16 },
    #[error(
        "could not read the DATEV account key of tenant {tenant_id}: it belongs in secret \
         {secret_id} as {{\"account_key\": \"…\"}}"
    )]
    AccountKey {
        tenant_id: Uuid,
        secret_id: String,
        #[source]
        source: SecretError,
    },
}

impl Classify for DatevError {
    /// 408/429/5xx and transport failures are transient; other statuses and bodies that
    /// break the documented contract are permanent; the keys follow the secret store's
    /// classification.
    fn retry_class(&self) -> RetryClass {
        match self {
            DatevError::Status { status, .. } => classify_maesn_status(*status),
            DatevError::Transport { source, .. } => source.retry_class(),
            DatevError::UnexpectedBody { .. } | DatevError::BrokenAnswer { .. } => {
                RetryClass::Permanent
            }
            DatevError::ApiKey(e) => e.retry_class(),
            DatevError::AccountKey { source, .. } => source.retry_class(),
            DatevError::InvalidKey { .. } => RetryClass::Permanent,
            DatevError::KeysRotated { .. } => RetryClass::Transient,
        }
    }
}

/// Whether an HTTP error status leaves open that Maesn acted on the request
/// (`from_maesn`: the answer bears Maesn's own marks, [`said_by_maesn`]). Refusals:
/// 4xx but 429, 307/308, and a 429 or 503 from Maesn. In doubt: every other 3xx (a 303
/// answers a request that was processed), every other 5xx, and a 429 or 503 that Maesn's
/// envelope does not vouch for (a proxy's "too many" or "unavailable" may follow a
/// booking at the origin).
pub fn status_in_doubt(status: u16, from_maesn: bool) -> bool {
    match status {
        307 | 308 => false,
        300..=399 => true,
        429 | 503 => !from_maesn,
        s => s >= 500,
    }
}

/// Whether an error answer comes from Maesn itself rather than from a proxy or load
/// balancer in front of it: no proxy's mark (a `server` header naming envoy,
/// cloudflare or awselb; "upstream connect error", "no healthy upstream" or an HTML
/// page in the body) and Maesn's JSON error envelope: an object with an `error` object,
/// with `validationErrors` (the 400 of Maesn's error-handling guide, v2: "Client-side
/// validation failed. See validationErrors for details."), or with `statusCode` and
/// `message`. A `Retry-After` is not a mark of Maesn's: any proxy or gateway sends one.
pub fn said_by_maesn(body: &str, server: Option<&str>) -> bool {
    let server = server.unwrap_or_default().to_ascii_lowercase();
    if ["envoy", "cloudflare", "awselb"]
        .iter()
        .any(|proxy| server.contains(proxy))
    {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    if [
        "upstream connect error",
        "no healthy upstream",
        "<html",
        "<!doctype",
    ]
    .iter()
    .any(|mark| lower.contains(mark))
    {
        return false;
    }
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .is_some_and(|o| {
            o.get("error").is_some_and(|e| e.is_object())
                || o.contains_key("validationErrors")
                || (o.contains_key("statusCode") && o.contains_key("message"))
        })
}

impl DatevError {
    /// Whether Maesn may have acted on the request although it failed (see the module
    /// docs). Retrying such a booking proposal could book the document twice.
    pub fn may_have_been_accepted(&self) -> bool {
        match self {
            DatevError::Status {
                status, from_maesn, ..
            } => status_in_doubt(*status, *from_maesn),
            // A connect error (refused, connect timeout, DNS, TLS) happens before any
            // byte of the request is written; a builder error before anything is sent.
            DatevError::Transport { source, .. } => !(source.is_connect() || source.is_builder()),
            DatevError::UnexpectedBody { .. } | DatevError::BrokenAnswer { .. } => true,
            DatevError::ApiKey(_)
            | DatevError::AccountKey { .. }
            | DatevError::InvalidKey { .. }
            | DatevError::KeysRotated { .. } => false,
        }
    }

    /// A definite refusal that may pass: nothing was done, and trying again later may
    /// succeed — 408, 429, a 503 from Maesn, no connection, a secret store that is
    /// throttled or down, keys rotated with too little time left to use them.
    /// Decided here rather than by [`Classify::retry_class`], so that a booking proposal
    /// is retried for exactly these answers whatever the shared status table says; every
    /// other refusal (4xx, 3xx, a missing key) is lasting.
    pub fn is_passing_refusal(&self) -> bool {
        match self {
            DatevError::Status {
                status, from_maesn, ..
            } => *status == 408 || (matches!(status, 429 | 503) && *from_maesn),
            DatevError::Transport { source, .. } => source.is_connect(),
            DatevError::UnexpectedBody { .. }
            | DatevError::BrokenAnswer { .. }
            | DatevError::InvalidKey { .. } => false,
            DatevError::KeysRotated { .. } => true,
            DatevError::ApiKey(e) | DatevError::AccountKey { source: e, .. } => e.is_transient(),
        }
    }

    /// Maesn refused the booking proposal because DATEV already holds it: a 409
    /// (Conflict), or a 4xx whose body says so in DATEV's or Maesn's duplicate wording
    /// ([`is_duplicate_rejection`]). The document is there, whatever put it there: it is
    /// recorded as present, and exporting it again could only book it twice.
    pub fn says_already_there(&self) -> bool {
        match self {
            DatevError::Status { status: 409, .. } => true,
            DatevError::Status { status, body, .. } if (400..500).contains(status) => {
                is_duplicate_rejection(std::slice::from_ref(body))
            }
            _ => false,
        }
    }

    /// How long Maesn asked us to wait (`Retry-After`), if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            DatevError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A 401 (Unauthorized: "missing or invalid authentication credentials", Maesn's
    /// error-handling guide). When the keys, read again past the cache, are unchanged,
    /// the rotation may simply not have reached the secrets yet (a key rotated at Maesn
    /// first, the secret a minute later): the export treats it as passing until the
    /// final receive. A 403 (an inactive account, no access to the company) is not.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, DatevError::Status { status: 401, .. })
    }

    /// Maesn refused the keys (401/403): they may have been rotated since they were
    /// cached ([`DatevConnector::rotated_keys`]).
    pub fn refused_keys(&self) -> bool {
        matches!(
            self,
            DatevError::Status {
                status: 401 | 403,
                ..
            }
        )
    }
}

/// Maesn's two keys for one account, read before a booking proposal is recorded as
/// started. `Debug` shows neither value.
#[derive(Debug, Clone)]
pub struct Keys {
    pub api_key: SecretString,
    pub account_key: SecretString,
}

/// The narrow seam to DATEV. One request per call, no retries inside.
pub trait DatevConnector: Send + Sync {
    /// Both keys of `account` (each secret read bounded by the secret store's timeout).
    fn keys(&self, account: &DatevAccount)
    -> impl Future<Output = Result<Keys, DatevError>> + Send;

    /// After Maesn refused `refused` (401/403): the keys the secrets hold now, read
    /// again, when one of them differs (rotated); `None` when they are the same (the
    /// key is simply wrong: repeating would be refused again).
    fn rotated_keys(
        &self,
        account: &DatevAccount,
        refused: &Keys,
    ) -> impl Future<Output = Result<Option<Keys>, DatevError>> + Send;

    /// Starts an asynchronous booking proposal with `keys`: exactly one request, on a
    /// fresh connection, no redirect followed; returns Maesn's task id.
    fn create_booking_proposal(
        &self,
        proposal: &BookingProposal,
        keys: &Keys,
    ) -> impl Future<Output = Result<String, DatevError>> + Send;

    /// Reads the state of an asynchronous task started by
    /// [`DatevConnector::create_booking_proposal`].
    fn async_task(
        &self,
        account: &DatevAccount,
        task_id: &str,
    ) -> impl Future<Output = Result<TaskState, DatevError>> + Send;
}

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

#[derive(Deserialize)]
struct Envelope<T> {
    data: Option<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreatedTask {
    task_id: Option<String>,
}

#[derive(Deserialize)]
struct TaskInfo {
    status: Option<String>,
    #[serde(default)]
    information: Vec<Information>,
}

#[derive(Deserialize)]
struct Information {
    message: Option<String>,
}

const CREATE: &str = "POST /accounting/bookingProposals/async";
const TASK: &str = "GET /accounting/asyncTask";

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
    /// `Retry-After` for [`read_created_task`] / [`read_task_state`] to read.
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
    /// `Retry-After` for [`read_created_task`] / [`read_task_state`] to read.
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

/// The most of a broken answer's body an audit keeps.
pub const KEPT_BODY_CHARS: usize = 4096;

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

/// A task id in an answer that could not be read as a whole: the string value of the
/// first `"taskId"` member, when its closing quote arrived and it holds no escape or
/// control character. What the sweeper then polls either is Maesn's task or is unknown
/// to Maesn (which ends it as "check DATEV"), so a wrong salvage cannot book anything.
pub fn salvage_task_id(body: &str) -> Option<String> {
    const MEMBER: &str = "\"taskId\"";
    let rest = &body[body.find(MEMBER)? + MEMBER.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let id = &rest[..rest.find('"')?];
    let usable = !id.is_empty()
        && id.len() <= 200
        && !id.contains('\\')
        && !id.chars().any(char::is_control);
    usable.then(|| id.to_owned())
}

/// The booking proposal's answer when it was a 2xx that could not be read. A task id is
/// salvaged only from a body that is not whole JSON (cut off, or garbled): JSON of
/// another shape than Maesn's envelope is an answer someone else composed, and its
/// `taskId` proves nothing.
fn broken_answer(reason: String, body: &str) -> DatevError {
    let whole_json = serde_json::from_str::<serde_json::Value>(body).is_ok();
    DatevError::BrokenAnswer {
        operation: CREATE,
        reason,
        body: body.chars().take(KEPT_BODY_CHARS).collect(),
        task_id: if whole_json {
            None
        } else {
            salvage_task_id(body)
        },
    }
}

/// Reads one Maesn answer (status and body, the `Retry-After` already parsed): a
/// non-2xx status is [`DatevError::Status`] (body cut to 500 characters), a 2xx body that
/// is not the `{meta, data}` envelope of `T` is [`DatevError::UnexpectedBody`].
fn read_answer<T: for<'de> Deserialize<'de>>(
    operation: &'static str,
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    server: Option<&str>,
) -> Result<T, DatevError> {
    if !(200..300).contains(&status) {
        return Err(DatevError::Status {
            operation,
            status,
            body: body.chars().take(500).collect(),
            retry_after,
            from_maesn: said_by_maesn(body, server),
        });
    }
    let envelope: Envelope<T> =
        serde_json::from_str(body).map_err(|e| DatevError::UnexpectedBody {
            operation,
            reason: format!("not the JSON envelope {{meta, data}}: {e}"),
        })?;
    envelope.data.ok_or(DatevError::UnexpectedBody {
        operation,
        reason: "no `data` object".into(),
    })
}

/// Maesn's answer to `POST /accounting/bookingProposals/async`: the task id, or why the
/// answer is not one. Pure (what the fuzz targets call; no `server` header).
pub fn read_created_task(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
) -> Result<String, DatevError> {
    read_created_task_from(status, body, retry_after, None)
}

/// [`read_created_task`] with the answer's `server` header (a proxy's mark).
pub fn read_created_task_from(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    server: Option<&str>,
) -> Result<String, DatevError> {
    let created: CreatedTask = read_answer(CREATE, status, body, retry_after, server)?;
    created
        .task_id
        .filter(|id| !id.trim().is_empty())
        .ok_or(DatevError::UnexpectedBody {
            operation: CREATE,
            reason: "no `data.taskId`".into(),
        })
}

/// Maesn's answer to `GET /accounting/asyncTask/{id}`: the task's state, or why the answer
/// is not one (an unknown status is [`DatevError::UnexpectedBody`]). Pure.
pub fn read_task_state(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
) -> Result<TaskState, DatevError> {
    let info: TaskInfo = read_answer(TASK, status, body, retry_after, None)?;
    let information = info
        .information
        .into_iter()
        .filter_map(|i| i.message)
        .collect();
    match info.status.as_deref() {
        Some("SUCCESS" | "FINISHED") => Ok(TaskState::Succeeded { information }),
        Some("PARTIAL_SUCCESS") => Ok(TaskState::PartiallySucceeded { information }),
        Some("FAILED" | "CANCELLED_SUCCESSFULLY") => Ok(TaskState::Failed { information }),
        Some("OPEN" | "IN_PROGRESS" | "CANCEL_FAILED") => Ok(TaskState::InProgress),
        other => Err(DatevError::UnexpectedBody {
            operation: TASK,
            reason: format!("unknown task status {other:?}"),
        }),
    }
}

/// `Retry-After` as delay-seconds or an HTTP date (a date in the past is no wait).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    parse_retry_after(headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?)
}

/// A `Retry-After` value: delay-seconds or an HTTP date (a date in the past is no wait);
/// `None` when it is neither.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
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

    /// An error answer bearing Maesn's own marks.
    fn status(status: u16) -> DatevError {
        DatevError::Status {
            operation: CREATE,
            status,
            body: String::new(),
            retry_after: None,
            from_maesn: true,
        }
    }

    /// An error answer from a proxy in front of Maesn.
    fn proxied(status: u16) -> DatevError {
        DatevError::Status {
            operation: CREATE,
            status,
            body: String::new(),
            retry_after: None,
            from_maesn: false,
        }
    }

    #[test]
    fn rate_limits_and_server_errors_are_transient_client_errors_permanent() {
        assert!(status(429).is_transient());
        assert!(status(503).is_transient());
        assert!(!status(400).is_transient());
        assert!(!status(401).is_transient());
        assert!(!status(404).is_transient());
    }

    #[test]
    fn a_409_or_a_refusal_in_duplicate_wording_says_datev_has_it() {
        let answer = |status: u16, body: &str| DatevError::Status {
            operation: CREATE,
            status,
            body: body.into(),
            retry_after: None,
            from_maesn: true,
        };
        assert!(answer(409, "").says_already_there());
        assert!(
            answer(
                400,
                r#"{"validationErrors":["Belegnummer bereits vorhanden"]}"#
            )
            .says_already_there()
        );
        assert!(answer(422, "Duplicate document number").says_already_there());
        assert!(!answer(400, "currency is not ISO 4217").says_already_there());
        assert!(
            !answer(500, "duplicate key value").says_already_there(),
            "a 5xx stays in doubt"
        );
        assert!(!status(429).says_already_there());
    }

    #[test]
    fn a_task_id_is_salvaged_only_when_it_arrived_whole() {
        assert_eq!(
            salvage_task_id(r#"{"meta":{},"data":{"taskId" : "8f1c-42","sta"#).as_deref(),
            Some("8f1c-42")
        );
        assert_eq!(
            salvage_task_id(r#"{"meta":{},"data":{"taskId":"8f1c"#),
            None
        );
        assert_eq!(salvage_task_id(r#"{"data":{"taskId":""}}"#), None);
        assert_eq!(salvage_task_id(r#"{"data":{"taskId":"a\"b"}}"#), None);
        assert_eq!(salvage_task_id("<html>502</html>"), None);
        let kept = |body: &str| match broken_answer("x".into(), body) {
            DatevError::BrokenAnswer { task_id, .. } => task_id,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            kept(r#"{"data":{"taskId":"t-1"},"me"#).as_deref(),
            Some("t-1")
        );
        assert_eq!(
            kept(r#"{"taskId": "t-1"}"#),
            None,
            "whole JSON of another shape is someone else's answer"
        );
    }

    #[test]
    fn a_broken_contract_is_permanent() {
        let e = DatevError::UnexpectedBody {
            operation: TASK,
            reason: "x".into(),
        };
        assert!(!e.is_transient());
    }

    #[test]
    fn only_answers_that_prove_maesn_did_not_act_are_refusals() {
        for refused in [400, 401, 403, 404, 405, 408, 409, 422, 429, 307, 308, 503] {
            assert!(
                !status(refused).may_have_been_accepted(),
                "HTTP {refused} is a refusal"
            );
        }
        for in_doubt in [
            300, 301, 302, 303, 304, 305, 306, 500, 501, 502, 504, 505, 507, 511, 520, 521, 522,
            523, 524, 598, 599,
        ] {
            assert!(
                status(in_doubt).may_have_been_accepted(),
                "HTTP {in_doubt} is in doubt"
            );
        }
        assert!(
            proxied(503).may_have_been_accepted(),
            "a proxy's 503 may follow a booking"
        );
        assert!(!proxied(503).is_passing_refusal());
        assert!(
            proxied(429).may_have_been_accepted(),
            "a gateway's 429 may follow a booking too"
        );
        assert!(!proxied(429).is_passing_refusal());
        assert!(
            !proxied(400).may_have_been_accepted(),
            "other 4xx from anyone"
        );
    }

    #[test]
    fn a_503_is_maesns_only_with_its_envelope_and_no_proxy_mark() {
        let envelope = r#"{"meta":{},"error":{"code":"SERVICE_UNAVAILABLE","message":"later"}}"#;
        let status_message = r#"{"statusCode":503,"message":"Service Unavailable"}"#;
        let validation = r#"{"validationErrors":[{"field":"currency","message":"invalid"}]}"#;
        assert!(said_by_maesn(envelope, None));
        assert!(said_by_maesn(status_message, Some("nginx")));
        assert!(said_by_maesn(validation, None));
        assert!(
            !said_by_maesn("busy", None),
            "a Retry-After alone is any gateway's"
        );
        assert!(!said_by_maesn("", None), "nothing says Maesn");
        assert!(!said_by_maesn("Service Unavailable", None));
        assert!(
            !said_by_maesn(r#"{"message":"Service Unavailable"}"#, None),
            "a bare message is any gateway's"
        );
        assert!(!said_by_maesn(
            "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
            None
        ));
        for proxy in ["envoy", "cloudflare", "awselb/2.0"] {
            assert!(!said_by_maesn(envelope, Some(proxy)), "{proxy}");
        }
        assert!(!said_by_maesn(
            "<html><body>503 Service Temporarily Unavailable</body></html>",
            None
        ));
        let read = |body: &str, server: Option<&str>| {
            read_created_task_from(503, body, None, server).unwrap_err()
        };
        assert!(!read(envelope, None).may_have_been_accepted());
        assert!(read("no healthy upstream", None).may_have_been_accepted());
        for status in [429, 503] {
            let with_retry_after = |body: &str| {
                read_created_task_from(status, body, Some(Duration::from_secs(5)), None)
                    .unwrap_err()
            };
            assert!(
                with_retry_after("Too busy, try later").may_have_been_accepted(),
                "{status} with a Retry-After but without Maesn's envelope is in doubt"
            );
            assert!(!with_retry_after(status_message).may_have_been_accepted());
            assert!(with_retry_after(status_message).is_passing_refusal());
        }
        assert!(read(envelope, Some("envoy")).may_have_been_accepted());
    }

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
    fn only_408_and_maesns_own_429_and_503_are_refusals_worth_retrying() {
        let passing: Vec<u16> = (300..600)
            .filter(|s| status(*s).is_passing_refusal())
            .collect();
        assert_eq!(passing, vec![408, 429, 503]);
        let passing: Vec<u16> = (300..600)
            .filter(|s| proxied(*s).is_passing_refusal())
            .collect();
        assert_eq!(passing, vec![408], "a proxy's 429 or 503 is in doubt");
        for s in 300..600 {
            for e in [status(s), proxied(s)] {
                assert!(
                    !(e.is_passing_refusal() && e.may_have_been_accepted()),
                    "HTTP {s}: never both"
                );
            }
        }
    }

    #[test]
    fn a_broken_contract_is_in_doubt() {
        let e = DatevError::UnexpectedBody {
            operation: CREATE,
            reason: "x".into(),
        };
        assert!(e.may_have_been_accepted());
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_as_an_http_date() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "120".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
        let at = chrono::Utc::now() + chrono::Duration::seconds(300);
        headers.insert(
            reqwest::header::RETRY_AFTER,
            at.format("%a, %d %b %Y %H:%M:%S GMT")
                .to_string()
                .parse()
                .unwrap(),
        );
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(290) && wait <= Duration::from_secs(300),
            "{wait:?}"
        );
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn a_task_id_stays_one_path_segment() {
        assert_eq!(path_segment("3f2a-Task_1.x~"), "3f2a-Task_1.x~");
        assert_eq!(path_segment("a/b?c=d#e f"), "a%2Fb%3Fc%3Dd%23e%20f");
        assert_eq!(path_segment("ü"), "%C3%BC");
    }

    #[test]
    fn duplicate_rejections_are_recognised_in_german_and_english() {
        for message in [
            "Belegnummer bereits vorhanden",
            "Der Beleg wurde bereits übertragen",
            "Duplicate document number RE-1",
            "A booking with this number already exists",
        ] {
            assert!(is_duplicate_rejection(&[message.to_owned()]), "{message}");
        }
        assert!(!is_duplicate_rejection(&[
            "Konto 4711 existiert nicht".to_owned()
        ]));
        assert!(!is_duplicate_rejection(&[]));
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
