//! Admin notifications on permanent failures (seed 001): opt-in channels, each enabled by
//! its configuration alone.
//!
//! - Slack: an incoming webhook, URL from the secret's `slack_webhook_url` (absent → off);
//! - email through SES (v2): `NOTIFY_EMAIL_FROM` and `NOTIFY_EMAIL_TO` (comma-separated;
//!   either unset → off). The sender must be a verified SES identity.
//!
//! Every notice carries the document id, the tenant, the error, the attempt count and a
//! link to the admin document page (`ADMIN_BASE_URL` + `/admin/documents/{id}`).
//!
//! Fire-and-forget: [`Notifier::notify`] never fails. Each channel runs with a timeout;
//! a failing channel is logged and the others still deliver. The notice is awaited (not
//! spawned) because a Lambda instance is frozen as soon as the handler returns.

use std::fmt;
use std::time::Duration;

use aws_sdk_sesv2::error::SdkError;
use aws_sdk_sesv2::operation::send_email::SendEmailError;
use futures::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use uuid::Uuid;

use crate::retry::{Classify, RetryClass, classify_http_status};
use crate::secrets::{SecretError, SecretStore};
use crate::settings::{Env, SettingsError};

/// What happened, for whom, and where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminNotice {
    /// One line, e.g. "Document matching failed".
    pub title: String,
    pub document_id: Uuid,
    /// `None` when the document could not be read (e.g. the database was unreachable).
    pub tenant_id: Option<Uuid>,
    pub tenant_name: Option<String>,
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
/// `ADMIN_BASE_URL`, `NOTIFY_TIMEOUT_SECONDS` (default 10).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifySettings {
    pub email_from: Option<String>,
    pub email_to: Vec<String>,
    pub admin_base_url: Option<String>,
    pub timeout: Duration,
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
            NotifyError::SlackStatus { status, .. } => classify_http_status(*status),
            NotifyError::Ses(e) => match e.as_ref() {
                SdkError::ServiceError(s) if s.err().is_message_rejected() => RetryClass::Permanent,
                _ => RetryClass::Transient,
            },
            NotifyError::EmailBuild(_) => RetryClass::Permanent,
            NotifyError::Timeout { .. } => RetryClass::Transient,
        }
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
        let mut text = format!(
            "{}\n\nDocument: {}\nTenant: {}\nAttempts: {}\nError: {}\n",
            n.title,
            n.document_id,
            n.tenant(),
            n.attempts,
            n.error
        );
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

    /// The webhook body.
    pub fn payload(message: &Rendered<'_>) -> serde_json::Value {
        let n = message.notice;
        let document = match &message.link {
            Some(link) => format!("<{link}|{}>", n.document_id),
            None => n.document_id.to_string(),
        };
        // Section text is limited to 3000 characters.
        let error: String = n.error.chars().take(2500).collect();
        json!({
            "text": format!("{}: document {} (tenant {}): {}", n.title, n.document_id, n.tenant(), error),
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": n.title}},
                {"type": "section", "fields": [
                    {"type": "mrkdwn", "text": format!("*Document*\n{document}")},
                    {"type": "mrkdwn", "text": format!("*Tenant*\n{}", n.tenant())},
                    {"type": "mrkdwn", "text": format!("*Attempts*\n{}", n.attempts)},
                ]},
                {"type": "section", "text": {"type": "mrkdwn", "text": format!("*Error*\n```{error}```")}},
            ],
        })
    }
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

/// Which channels delivered a notice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    pub sent: Vec<&'static str>,
    pub failed: Vec<&'static str>,
}

/// The configured channels. With none, notices are only logged.
#[derive(Debug, Default)]
pub struct Notifier {
    channels: Vec<Box<dyn Channel>>,
    admin_base_url: Option<String>,
    timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum NotifySetupError {
    #[error("could not read the Slack webhook URL from the secret")]
    Secret(#[from] SecretError),
    #[error("could not build the HTTP client for Slack")]
    Http(#[from] reqwest::Error),
}

impl Notifier {
    /// A notifier without channels; add them with [`Notifier::with_channel`].
    pub fn new(admin_base_url: Option<String>, timeout: Duration) -> Self {
        Notifier {
            channels: Vec::new(),
            admin_base_url,
            timeout,
        }
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
        aws: &aws_config::SdkConfig,
    ) -> Result<Self, NotifySetupError> {
        let mut notifier = Notifier::new(settings.admin_base_url.clone(), settings.timeout);
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

    /// Sends the notice on every channel at once. Never fails: a channel that errors or
    /// times out is logged and reported in [`Delivery::failed`].
    pub async fn notify(&self, notice: &AdminNotice) -> Delivery {
        let rendered = Rendered {
            notice,
            link: self.link(notice.document_id),
        };
        tracing::warn!(
            document_id = %notice.document_id,
            tenant = %notice.tenant(),
            attempts = notice.attempts,
            error = %notice.error,
            title = %notice.title,
            "admin notice"
        );
        let rendered = &rendered;
        let results = futures::future::join_all(self.channels.iter().map(|channel| async move {
            let outcome = match tokio::time::timeout(self.timeout, channel.send(rendered)).await {
                Ok(result) => result,
                Err(_) => Err(NotifyError::Timeout {
                    channel: channel.name(),
                    seconds: self.timeout.as_secs(),
                }),
            };
            (channel.name(), outcome)
        }))
        .await;
        let mut delivery = Delivery::default();
        for (name, outcome) in results {
            match outcome {
                Ok(()) => delivery.sent.push(name),
                Err(e) => {
                    tracing::error!(
                        channel = name,
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
    }

    #[test]
    fn the_text_names_document_tenant_attempts_error_and_link() {
        let notice = AdminNotice {
            title: "Document matching failed".into(),
            document_id: Uuid::nil(),
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
            "Tenant: Acme GmbH (00000000-0000-0000-0000-000000000000)",
            "Attempts: 3",
            "Error: LLM rejected the request",
            "Admin page: https://admin.example.com/admin/documents/00000000-0000-0000-0000-000000000000",
        ] {
            assert!(text.contains(part), "{part:?} missing in {text}");
        }
    }
}
