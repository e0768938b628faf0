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
//! The client and its answers have files of their own: `maesn` holds [`MaesnClient`]
//! (its settings, connections and credentials), `answer` reads Maesn's answers (pure,
//! what the fuzz targets call). This file holds the seam and its error classification.

mod answer;
mod maesn;

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use secrecy::SecretString;
use uuid::Uuid;

use crate::retry::{Classify, RetryClass, classify_http_status};
use crate::secrets::SecretError;

pub use answer::{
    KEPT_BODY_CHARS, parse_retry_after, read_created_task, read_created_task_from, read_task_state,
    salvage_task_id,
};
pub use maesn::{ACCOUNT_KEY_SECRET, API_KEY_SECRET, GET_POOL_IDLE, MaesnClient, MaesnConfig};

/// Statuses Maesn documents as definite refusals (module docs); every other status goes
/// by the shared table, where unknown means transient.
fn classify_maesn_status(status: u16) -> RetryClass {
    match status {
        400 | 404 | 405 => RetryClass::Permanent,
        _ => classify_http_status(status),
    }
}

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

#[cfg(test)]
mod tests {
    use super::answer::{CREATE, TASK};
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
}
