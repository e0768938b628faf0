//! The DATEV connector: booking proposals through the Maesn API.
//!
//! [`DatevConnector`] is the one seam between document output and DATEV: start an
//! export (`POST /accounting/bookingProposals/async`, answered with a `taskId`) and
//! read the state of that asynchronous task (`GET /accounting/asyncTask/{taskId}`).
//! [`MaesnClient`] is the real implementation over reqwest. It makes exactly one HTTP
//! request per call: in-process retries are the caller's decision (see
//! [`crate::output`]), so that every retried request is logged in one place.
//!
//! Errors are classified at this edge (Maesn's own guidance): 429, 5xx, timeouts and
//! refused connections are transient; 400, 401, 403, 404, 405 are permanent; a 2xx
//! without the expected body is permanent (retrying will not change what Maesn says).
//! The API key is a [`SecretString`] read from the secret store on each call (cached
//! by the store), the account key likewise: neither is ever logged.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::retry::{Classify, RetryClass, classify_http_status};

/// Statuses Maesn documents as definite refusals (module docs); every other status goes
/// by the shared table, where unknown means transient.
fn classify_maesn_status(status: u16) -> RetryClass {
    match status {
        400 | 404 | 405 => RetryClass::Permanent,
        _ => classify_http_status(status),
    }
}
use crate::secrets::{SecretError, SecretStore};
use crate::settings::{Env, SettingsError};

/// The secret store key holding Maesn's `X-API-KEY`.
pub const API_KEY_SECRET: &str = "maesn_api_key";

/// Which DATEV connection (Maesn account) a call is made for; from
/// `tenant_datev_integration`.
#[derive(Debug, Clone)]
pub struct DatevAccount {
    /// Sent as `X-ACCOUNT-KEY`.
    pub account_key: SecretString,
    /// Sent as the `companyId` query parameter.
    pub company_id: String,
}

/// The document file uploaded with the booking proposal.
#[derive(Debug, Clone)]
pub struct DocumentFile {
    pub file_name: String,
    pub mime_type: String,
    pub bytes: Vec<u8>,
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
    /// `SUCCESS`, `PARTIAL_SUCCESS`, `FINISHED`.
    Succeeded { information: Vec<String> },
    /// `FAILED`, `CANCELLED_SUCCESSFULLY`; `information` holds DATEV's messages.
    Failed { information: Vec<String> },
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
    #[error("could not read the Maesn API key from the secret store")]
    ApiKey(#[source] SecretError),
}

impl Classify for DatevError {
    /// 408/429/5xx and transport failures are transient; other statuses and bodies that
    /// break the documented contract are permanent; the API key follows the secret
    /// store's classification.
    fn retry_class(&self) -> RetryClass {
        match self {
            DatevError::Status { status, .. } => classify_maesn_status(*status),
            DatevError::Transport { source, .. } => source.retry_class(),
            DatevError::UnexpectedBody { .. } => RetryClass::Permanent,
            DatevError::ApiKey(e) => e.retry_class(),
        }
    }
}

impl DatevError {
    /// Whether Maesn may have acted on the request although it failed: a timeout or a
    /// connection lost after sending, a 500/502/504, or a 2xx answer we could not read.
    /// Retrying such a booking proposal could book the document twice. Definite refusals
    /// (a connection never made, 4xx, 503 "not now", 429) are not in doubt.
    pub fn may_have_been_accepted(&self) -> bool {
        match self {
            DatevError::Status { status, .. } => matches!(status, 500 | 502 | 504),
            DatevError::Transport { source, .. } => !source.is_connect() && !source.is_builder(),
            DatevError::UnexpectedBody { .. } => true,
            DatevError::ApiKey(_) => false,
        }
    }
}

/// The narrow seam to DATEV. One request per call, no retries inside.
pub trait DatevConnector: Send + Sync {
    /// Starts an asynchronous booking proposal; returns Maesn's task id.
    fn create_booking_proposal(
        &self,
        proposal: &BookingProposal,
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
    /// `MAESN_TIMEOUT_SECONDS` (default 30): per request, connect included.
    pub timeout: Duration,
}

impl MaesnConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        Ok(MaesnConfig {
            base_url: env
                .or("MAESN_BASE_URL", "https://api.maesn.dev")
                .trim_end_matches('/')
                .to_owned(),
            timeout: env.seconds_or("MAESN_TIMEOUT_SECONDS", 30)?,
        })
    }
}

/// The real connector: Maesn's REST API over reqwest.
#[derive(Debug, Clone)]
pub struct MaesnClient {
    http: reqwest::Client,
    base_url: String,
    secrets: Arc<SecretStore>,
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
    /// Builds the client once per cold start; fails only if the TLS backend cannot be
    /// initialised.
    pub fn new(config: &MaesnConfig, secrets: Arc<SecretStore>) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder().timeout(config.timeout).build()?;
        Ok(MaesnClient {
            http,
            base_url: config.base_url.clone(),
            secrets,
        })
    }

    async fn api_key(&self) -> Result<SecretString, DatevError> {
        self.secrets
            .get(API_KEY_SECRET)
            .await
            .map_err(DatevError::ApiKey)
    }

    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        operation: &'static str,
        request: reqwest::RequestBuilder,
        account: &DatevAccount,
    ) -> Result<T, DatevError> {
        let api_key = self.api_key().await?;
        let response = request
            .header("X-API-KEY", api_key.expose_secret())
            .header("X-ACCOUNT-KEY", account.account_key.expose_secret())
            .query(&[("companyId", account.company_id.as_str())])
            .send()
            .await
            .map_err(|source| DatevError::Transport { operation, source })?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|source| DatevError::Transport { operation, source })?;
        if !status.is_success() {
            return Err(DatevError::Status {
                operation,
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        let envelope: Envelope<T> =
            serde_json::from_str(&body).map_err(|e| DatevError::UnexpectedBody {
                operation,
                reason: format!("not the JSON envelope {{meta, data}}: {e}"),
            })?;
        envelope.data.ok_or(DatevError::UnexpectedBody {
            operation,
            reason: "no `data` object".into(),
        })
    }
}

impl DatevConnector for MaesnClient {
    async fn create_booking_proposal(&self, p: &BookingProposal) -> Result<String, DatevError> {
        let file = reqwest::multipart::Part::bytes(p.file.bytes.clone())
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
        let created: CreatedTask = self
            .send(CREATE, self.http.post(url).multipart(form), &p.account)
            .await?;
        created
            .task_id
            .filter(|id| !id.trim().is_empty())
            .ok_or(DatevError::UnexpectedBody {
                operation: CREATE,
                reason: "no `data.taskId`".into(),
            })
    }

    async fn async_task(
        &self,
        account: &DatevAccount,
        task_id: &str,
    ) -> Result<TaskState, DatevError> {
        let url = format!("{}/accounting/asyncTask/{task_id}", self.base_url);
        let info: TaskInfo = self.send(TASK, self.http.get(url), account).await?;
        let information = info
            .information
            .into_iter()
            .filter_map(|i| i.message)
            .collect();
        match info.status.as_deref() {
            Some("SUCCESS" | "PARTIAL_SUCCESS" | "FINISHED") => {
                Ok(TaskState::Succeeded { information })
            }
            Some("FAILED" | "CANCELLED_SUCCESSFULLY") => Ok(TaskState::Failed { information }),
            Some("OPEN" | "IN_PROGRESS" | "CANCEL_FAILED") => Ok(TaskState::InProgress),
            other => Err(DatevError::UnexpectedBody {
                operation: TASK,
                reason: format!("unknown task status {other:?}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> DatevError {
        DatevError::Status {
            operation: CREATE,
            status,
            body: String::new(),
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
    fn a_broken_contract_is_permanent() {
        let e = DatevError::UnexpectedBody {
            operation: TASK,
            reason: "x".into(),
        };
        assert!(!e.is_transient());
    }
}
