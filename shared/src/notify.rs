//! Admin notifications on permanent failures (seed 001): opt-in channels, each enabled by
//! its configuration alone.
//!
//! - Slack: an incoming webhook, URL from the secret's `slack_webhook_url` (absent → off);
//! - email through SES (v2): `NOTIFY_EMAIL_FROM` and `NOTIFY_EMAIL_TO` (comma-separated;
//!   either unset → off). The sender must be a verified SES identity.
//!
//! Every notice carries the document id (and type, when known), the tenant, the error,
//! the attempt count and a link to the admin document page (`ADMIN_BASE_URL` +
//! `/admin/documents/{id}`) — nothing of the document's content: an admin opens the
//! document in the app.
//!
//! [`Notifier::notify`] never fails and can be used fire-and-forget; it returns a
//! [`Delivery`] saying which channels delivered, so a caller can record that the admins
//! were told. Each channel is tried with a timeout per attempt (`NOTIFY_TIMEOUT_SECONDS`),
//! and a transient failure (HTTP 429/5xx, a timeout, SES throttling) is retried up to
//! `NOTIFY_ATTEMPTS` attempts with exponential waits from `NOTIFY_RETRY_BASE_MS`;
//! [`Notifier::notify_until`] also stops retrying at the caller's deadline. A channel that
//! still failed is logged at error with the field `notification_failed = true`
//! ([`FAILED_LOG_FIELD`]), which a CloudWatch metric filter turns into the
//! `AdminNotificationsFailed` metric and alarm (infra/notify_alarms.tf); the others still
//! deliver. The notice is awaited (not spawned) because a Lambda instance is frozen as
//! soon as the handler returns.
//!
//! Slack: every text taken from the notice is escaped (`&`, `<`, `>`), so an error or a
//! tenant name cannot mention `<!channel>` or forge a link.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use aws_sdk_sesv2::error::SdkError;
use aws_sdk_sesv2::operation::send_email::SendEmailError;
use futures::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use uuid::Uuid;

use crate::retry::{Classify, RetryClass, classify_http_status};
use crate::secrets::{SecretError, SecretStore};
use crate::settings::{Env, SettingsError};

/// The log field set on every channel failure that retries did not cure; the metric
/// filter of the `AdminNotificationsFailed` alarm matches `$.fields.notification_failed`.
pub const FAILED_LOG_FIELD: &str = "notification_failed";

/// What happened, for whom, and where to look. `title` is free text (one line, e.g.
/// "Document matching failed", "DATEV export failed"); build a notice with a struct
/// literal and `..Default::default()` for the fields you do not have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminNotice {
    pub title: String,
    pub document_id: Uuid,
    /// The document's type (`invoice`, …), when known.
    pub document_type: Option<String>,
    /// `None` when the document could not be read (e.g. the database was unreachable).
    pub tenant_id: Option<Uuid>,
    pub tenant_name: Option<String>,
    /// What went wrong (an error chain); never document content.
    pub error: String,
    pub attempts: i32,
}

impl AdminNotice {
    fn tenant(&self) -> String {
        match (&self.tenant_name, self.tenant_id) {
            (Some(name), Some(id)) => format!("{name} ({id})"),
            (None, Some(id)) => id.to_string(),
            (Some(name), None) => name.clone(),
            (None, None) => "unknown".to_owned(),
        }
    }
}

/// Notification settings: `NOTIFY_EMAIL_FROM`, `NOTIFY_EMAIL_TO` (comma-separated),
/// `ADMIN_BASE_URL`, `NOTIFY_TIMEOUT_SECONDS` (per attempt, default 10),
/// `NOTIFY_ATTEMPTS` (default 3), `NOTIFY_RETRY_BASE_MS` (default 1000: waits of 1 s,
/// 2 s, … between attempts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifySettings {
    pub email_from: Option<String>,
    pub email_to: Vec<String>,
    pub admin_base_url: Option<String>,
    pub timeout: Duration,
    pub retry: NotifyRetry,
}

/// How a channel is retried after a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotifyRetry {
    /// Attempts per channel, at least 1.
    pub attempts: u32,
    /// The wait after the first failed attempt; doubled after each further one (±25 %).
    pub base_delay: Duration,
}

impl Default for NotifyRetry {
    fn default() -> Self {
        NotifyRetry {
            attempts: 3,
            base_delay: Duration::from_secs(1),
        }
    }
}

impl NotifyRetry {
    fn delay_after(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(10);
        let delay = self.base_delay * (1u32 << exp);
        if delay.is_zero() {
            return delay;
        }
        use rand::Rng;
        delay.mul_f64(rand::rng().random_range(0.75..=1.25))
    }
}

impl NotifySettings {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        Ok(NotifySettings {
            email_from: env
                .optional("NOTIFY_EMAIL_FROM")
                .map(|s| s.trim().to_owned()),
            email_to: env
                .optional("NOTIFY_EMAIL_TO")
                .map(|s| {
                    s.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            admin_base_url: env
                .optional("ADMIN_BASE_URL")
                .map(|s| s.trim().trim_end_matches('/').to_owned()),
            timeout: env.seconds_or("NOTIFY_TIMEOUT_SECONDS", 10)?,
            retry: NotifyRetry {
                attempts: env.parse_or::<u32>("NOTIFY_ATTEMPTS", 3)?.max(1),
                base_delay: Duration::from_millis(env.parse_or("NOTIFY_RETRY_BASE_MS", 1000)?),
            },
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("could not reach the Slack webhook")]
    SlackTransport(#[source] reqwest::Error),
    #[error("the Slack webhook answered HTTP {status}: {body}")]
    SlackStatus { status: u16, body: String },
    #[error("SES could not send the email")]
    Ses(#[source] Box<SdkError<SendEmailError>>),
    #[error("could not build the email: {0}")]
    EmailBuild(String),
    #[error("the {channel} channel did not answer within {seconds} s")]
    Timeout { channel: &'static str, seconds: u64 },
}

impl Classify for NotifyError {
    fn retry_class(&self) -> RetryClass {
        match self {
            NotifyError::SlackTransport(e) => e.retry_class(),
            NotifyError::SlackStatus { status, .. } => classify_slack_status(*status),
            NotifyError::Ses(e) => match e.as_ref() {
                SdkError::ServiceError(s) if s.err().is_message_rejected() => RetryClass::Permanent,
                _ => RetryClass::Transient,
            },
            NotifyError::EmailBuild(_) => RetryClass::Permanent,
            NotifyError::Timeout { .. } => RetryClass::Transient,
        }
    }
}

/// Slack's incoming webhooks answer a broken request or a removed webhook/channel with
/// 400 (`invalid_payload`), 403 (`action_prohibited`), 404 (`no_service`,
/// `channel_not_found`) or 410 (`channel_is_archived`): sending the same again cannot
/// succeed. Every other status follows the shared table (unknown = transient).
fn classify_slack_status(status: u16) -> RetryClass {
    match status {
        400 | 403 | 404 | 410 => RetryClass::Permanent,
        _ => classify_http_status(status),
    }
}

/// A notice rendered for one delivery: the channels share the text.
#[derive(Debug, Clone)]
pub struct Rendered<'a> {
    pub notice: &'a AdminNotice,
    /// Link to the admin document page, when `ADMIN_BASE_URL` is set.
    pub link: Option<String>,
}

impl Rendered<'_> {
    pub fn subject(&self) -> String {
        format!(
            "[docflow] {}: document {}",
            self.notice.title, self.notice.document_id
        )
    }

    pub fn text(&self) -> String {
        let n = self.notice;
        let mut text = format!("{}\n\nDocument: {}\n", n.title, n.document_id);
        if let Some(doc_type) = &n.document_type {
            text.push_str(&format!("Type: {doc_type}\n"));
        }
        text.push_str(&format!(
            "Tenant: {}\nAttempts: {}\nError: {}\n",
            n.tenant(),
            n.attempts,
            n.error
        ));
        if let Some(link) = &self.link {
            text.push_str(&format!("Admin page: {link}\n"));
        }
        text
    }
}

/// One way of reaching the admins.
pub trait Channel: Send + Sync + fmt::Debug {
    fn name(&self) -> &'static str;
    fn send<'a>(&'a self, message: &'a Rendered<'a>) -> BoxFuture<'a, Result<(), NotifyError>>;
}

/// Slack incoming webhook: POST JSON with `text` (fallback) and Block Kit `blocks`;
/// Slack answers 200 `ok`, or 4xx with a reason (`invalid_payload`, `no_service`, …).
pub struct SlackChannel {
    http: reqwest::Client,
    webhook_url: SecretString,
}

impl fmt::Debug for SlackChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The webhook URL is a credential.
        f.debug_struct("SlackChannel").finish_non_exhaustive()
    }
}

impl SlackChannel {
    pub fn new(http: reqwest::Client, webhook_url: SecretString) -> Self {
        SlackChannel { http, webhook_url }
    }

    /// The webhook body. Every text from the notice is escaped for Slack's markup
    /// ([`slack_escape`]); the header is plain text, which Slack does not parse.
    pub fn payload(message: &Rendered<'_>) -> serde_json::Value {
        let n = message.notice;
        let document = match &message.link {
            Some(link) => format!("<{link}|{}>", n.document_id),
            None => n.document_id.to_string(),
        };
        let document = match &n.document_type {
            Some(doc_type) => format!("{document} ({})", slack_escape(doc_type)),
            None => document,
        };
        let tenant = slack_escape(&n.tenant());
        // Section text is limited to 3000 characters; a ``` in the error would close the
        // code block early.
        let error: String = n.error.chars().take(2500).collect();
        let error = slack_escape(&error).replace("```", "'''");
        json!({
            "text": format!("{}: document {} (tenant {tenant}): {error}", slack_escape(&n.title), n.document_id),
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": n.title}},
                {"type": "section", "fields": [
                    {"type": "mrkdwn", "text": format!("*Document*\n{document}")},
                    {"type": "mrkdwn", "text": format!("*Tenant*\n{tenant}")},
                    {"type": "mrkdwn", "text": format!("*Attempts*\n{}", n.attempts)},
                ]},
                {"type": "section", "text": {"type": "mrkdwn", "text": format!("*Error*\n```{error}```")}},
            ],
        })
    }
}

/// Escapes the three characters Slack's message markup reserves: `&` → `&amp;`,
/// `<` → `&lt;`, `>` → `&gt;`. Unescaped, `<!channel>` in an error would notify the
/// whole channel and `<https://…|…>` would forge a link.
pub fn slack_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

impl Channel for SlackChannel {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn send<'a>(&'a self, message: &'a Rendered<'a>) -> BoxFuture<'a, Result<(), NotifyError>> {
        Box::pin(async move {
            let response = self
                .http
                .post(self.webhook_url.expose_secret())
                .json(&Self::payload(message))
                .send()
                .await
                .map_err(|e| NotifyError::SlackTransport(e.without_url()))?;
            let status = response.status().as_u16();
            if !(200..300).contains(&status) {
                let body: String = response
                    .text()
                    .await
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect();
                return Err(NotifyError::SlackStatus { status, body });
            }
            Ok(())
        })
    }
}

/// Email through SES v2 (`SendEmail`, simple content, plain text).
#[derive(Debug)]
pub struct SesChannel {
    client: aws_sdk_sesv2::Client,
    from: String,
    to: Vec<String>,
}

impl SesChannel {
    pub fn new(client: aws_sdk_sesv2::Client, from: String, to: Vec<String>) -> Self {
        SesChannel { client, from, to }
    }
}

impl Channel for SesChannel {
    fn name(&self) -> &'static str {
        "email"
    }

    fn send<'a>(&'a self, message: &'a Rendered<'a>) -> BoxFuture<'a, Result<(), NotifyError>> {
        use aws_sdk_sesv2::types::{Body, Content, Destination, EmailContent, Message};
        Box::pin(async move {
            let build =
                |e: aws_sdk_sesv2::error::BuildError| NotifyError::EmailBuild(e.to_string());
            let content = |text: String| {
                Content::builder()
                    .data(text)
                    .charset("UTF-8")
                    .build()
                    .map_err(build)
            };
            let email = EmailContent::builder()
                .simple(
                    Message::builder()
                        .subject(content(message.subject())?)
                        .body(Body::builder().text(content(message.text())?).build())
                        .build(),
                )
                .build();
            self.client
                .send_email()
                .from_email_address(&self.from)
                .destination(
                    Destination::builder()
                        .set_to_addresses(Some(self.to.clone()))
                        .build(),
                )
                .content(email)
                .send()
                .await
                .map_err(|e| NotifyError::Ses(Box::new(e)))?;
            Ok(())
        })
    }
}

/// Which channels delivered a notice, after their retries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    pub sent: Vec<&'static str>,
    pub failed: Vec<&'static str>,
}

impl Delivery {
    /// At least one channel delivered: the admins were told. `false` with no channel
    /// configured (the notice was only logged).
    pub fn delivered(&self) -> bool {
        !self.sent.is_empty()
    }
}

/// The configured channels. With none, notices are only logged.
#[derive(Debug, Default)]
pub struct Notifier {
    channels: Vec<Box<dyn Channel>>,
    admin_base_url: Option<String>,
    timeout: Duration,
    retry: NotifyRetry,
}

#[derive(Debug, thiserror::Error)]
pub enum NotifySetupError {
    #[error("could not read the Slack webhook URL from the secret")]
    Secret(#[from] SecretError),
    #[error("could not build the HTTP client for Slack")]
    Http(#[from] reqwest::Error),
}

impl Notifier {
    /// A notifier without channels; add them with [`Notifier::with_channel`]. `timeout`
    /// bounds each attempt; transient failures are retried as [`NotifyRetry::default`]
    /// says unless [`Notifier::with_retry`] changes it.
    pub fn new(admin_base_url: Option<String>, timeout: Duration) -> Self {
        Notifier {
            channels: Vec::new(),
            admin_base_url,
            timeout,
            retry: NotifyRetry::default(),
        }
    }

    pub fn with_retry(mut self, retry: NotifyRetry) -> Self {
        self.retry = NotifyRetry {
            attempts: retry.attempts.max(1),
            ..retry
        };
        self
    }

    pub fn with_channel(mut self, channel: impl Channel + 'static) -> Self {
        self.channels.push(Box::new(channel));
        self
    }

    /// The channels the configuration enables: Slack when the secret has
    /// `slack_webhook_url`, email when both email settings are set. Fails when the secret
    /// cannot be read (the cold start is retried).
    pub async fn from_settings(
        settings: &NotifySettings,
        secrets: &SecretStore,
        aws: &crate::aws::SdkConfig,
    ) -> Result<Self, NotifySetupError> {
        let mut notifier = Notifier::new(settings.admin_base_url.clone(), settings.timeout)
            .with_retry(settings.retry);
        if let Some(url) = secrets.get_optional("slack_webhook_url").await? {
            let http = reqwest::Client::builder()
                .timeout(settings.timeout)
                .build()?;
            notifier = notifier.with_channel(SlackChannel::new(http, url));
        }
        if let (Some(from), false) = (&settings.email_from, settings.email_to.is_empty()) {
            notifier = notifier.with_channel(SesChannel::new(
                aws_sdk_sesv2::Client::new(aws),
                from.clone(),
                settings.email_to.clone(),
            ));
        }
        tracing::info!(
            channels = ?notifier.channels.iter().map(|c| c.name()).collect::<Vec<_>>(),
            "admin notification channels"
        );
        Ok(notifier)
    }

    pub fn channel_names(&self) -> Vec<&'static str> {
        self.channels.iter().map(|c| c.name()).collect()
    }

    /// The admin page of a document, when `ADMIN_BASE_URL` is set.
    pub fn link(&self, document_id: Uuid) -> Option<String> {
        self.admin_base_url
            .as_ref()
            .map(|base| format!("{base}/admin/documents/{document_id}"))
    }

    /// Sends the notice on every channel at once, retrying transient failures (see the
    /// module docs), and says which channels delivered. Never fails: a channel that still
    /// fails is logged (with [`FAILED_LOG_FIELD`]) and reported in [`Delivery::failed`].
    /// Bounded by the attempts and their timeouts; under a deadline use
    /// [`Notifier::notify_until`].
    pub async fn notify(&self, notice: &AdminNotice) -> Delivery {
        self.notify_until(notice, None).await
    }

    /// [`Notifier::notify`], but no attempt runs past `deadline` and no retry starts
    /// after it: a channel that has not delivered by then is reported failed. Dropping
    /// the future cancels it too, without a report.
    pub async fn notify_until(&self, notice: &AdminNotice, deadline: Option<Instant>) -> Delivery {
        let rendered = Rendered {
            notice,
            link: self.link(notice.document_id),
        };
        tracing::warn!(
            document_id = %notice.document_id,
            document_type = notice.document_type.as_deref(),
            tenant = %notice.tenant(),
            attempts = notice.attempts,
            error = %notice.error,
            title = %notice.title,
            "admin notice"
        );
        let rendered = &rendered;
        let results = futures::future::join_all(self.channels.iter().map(|channel| async move {
            let outcome = self.deliver(channel.as_ref(), rendered, deadline).await;
            (channel.name(), outcome)
        }))
        .await;
        let mut delivery = Delivery::default();
        for (name, outcome) in results {
            match outcome {
                Ok(()) => delivery.sent.push(name),
                Err(e) => {
                    crate::telemetry::metrics::notification_failed();
                    tracing::error!(
                        notification_failed = true,
                        channel = name,
                        document_id = %notice.document_id,
                        title = %notice.title,
                        error.message = %e,
                        error.cause_chain = ?e,
                        "admin notification failed"
                    );
                    delivery.failed.push(name);
                }
            }
        }
        delivery
    }

    /// One channel, with its retries, within the deadline.
    async fn deliver(
        &self,
        channel: &dyn Channel,
        rendered: &Rendered<'_>,
        deadline: Option<Instant>,
    ) -> Result<(), NotifyError> {
        let mut attempt = 1;
        loop {
            let timeout = match deadline {
                Some(deadline) => self
                    .timeout
                    .min(deadline.saturating_duration_since(Instant::now())),
                None => self.timeout,
            };
            let result = match tokio::time::timeout(timeout, channel.send(rendered)).await {
                Ok(result) => result,
                Err(_) => Err(NotifyError::Timeout {
                    channel: channel.name(),
                    seconds: timeout.as_secs(),
                }),
            };
            let error = match result {
                Ok(()) => return Ok(()),
                Err(e) if e.is_transient() && attempt < self.retry.attempts => e,
                Err(e) => return Err(e),
            };
            let wait = self.retry.delay_after(attempt);
            if deadline.is_some_and(|deadline| Instant::now() + wait >= deadline) {
                return Err(error);
            }
            tracing::warn!(
                channel = channel.name(),
                attempt,
                max_attempts = self.retry.attempts,
                delay_ms = wait.as_millis() as u64,
                error.message = %error,
                "admin notification failed transiently; retrying"
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::new(move |var| map.get(var).cloned())
    }

    #[test]
    fn email_recipients_are_split_on_commas_and_the_base_url_loses_its_slash() {
        let s = NotifySettings::from_env(&env(&[
            ("NOTIFY_EMAIL_FROM", "docflow@example.com"),
            ("NOTIFY_EMAIL_TO", "ops@example.com, ap@example.com,"),
            ("ADMIN_BASE_URL", "https://admin.example.com/"),
        ]))
        .unwrap();
        assert_eq!(s.email_to, vec!["ops@example.com", "ap@example.com"]);
        assert_eq!(
            s.admin_base_url.as_deref(),
            Some("https://admin.example.com")
        );
        assert_eq!(s.timeout, Duration::from_secs(10));
        assert_eq!(s.retry, NotifyRetry::default());
    }

    #[test]
    fn slack_markup_characters_are_escaped() {
        assert_eq!(
            slack_escape("<!channel> & <https://evil.example|click>"),
            "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;"
        );
    }

    #[test]
    fn the_text_names_document_tenant_attempts_error_and_link() {
        let notice = AdminNotice {
            title: "Document matching failed".into(),
            document_id: Uuid::nil(),
            document_type: Some("invoice".into()),
            tenant_id: Some(Uuid::nil()),
            tenant_name: Some("Acme GmbH".into()),
            error: "LLM rejected the request".into(),
            attempts: 3,
        };
        let notifier = Notifier::new(Some("https://admin.example.com".into()), Duration::ZERO);
        let text = Rendered {
            notice: &notice,
            link: notifier.link(notice.document_id),
        }
        .text();
        for part in [
            "Document: 00000000-0000-0000-0000-000000000000",
            "Type: invoice",
            "Tenant: Acme GmbH (00000000-0000-0000-0000-000000000000)",
            "Attempts: 3",
            "Error: LLM rejected the request",
            "Admin page: https://admin.example.com/admin/documents/00000000-0000-0000-0000-000000000000",
        ] {
            assert!(text.contains(part), "{part:?} missing in {text}");
        }
    }
}
