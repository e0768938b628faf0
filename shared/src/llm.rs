//! The LLM client: Anthropic's Messages API and any OpenAI-compatible chat completions
//! endpoint (OpenAI, Ollama, vLLM, llama.cpp server), over reqwest.
//!
//! Every failure is classified per the design's table: 429, 5xx and transport errors are
//! transient; 400 "context window exceeded" and 401/403 are permanent; a response that is
//! not JSON or does not validate is transient (LLMs are non-deterministic, the next
//! answer may be fine). [`LlmClient::complete_json`] retries transient failures in
//! process ([`RetryPolicy`]: 3 attempts, 2 s / 4 s with jitter) and returns the last
//! error otherwise — never a silent empty result.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::retry::{
    Classify, RetryClass, RetryPolicy, classify_http_status, is_context_window_exceeded,
};
use crate::secrets::SecretStore;
use crate::settings::{Env, SettingsError};
use crate::telemetry::metrics;

/// Which API the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Anthropic,
    /// Any server implementing `POST /v1/chat/completions`.
    OpenAi,
}

impl std::str::FromStr for Provider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Provider::Anthropic),
            "openai" | "openai-compatible" | "ollama" | "vllm" | "llamacpp" => Ok(Provider::OpenAi),
            other => Err(format!(
                "unknown LLM provider {other:?}; use anthropic or openai"
            )),
        }
    }
}

/// Which LLM (if any) a function uses, from `LLM_PROVIDER` (`anthropic`, `openai`,
/// `rules` or `none`; default `rules`), `LLM_MODEL`, `LLM_BASE_URL`,
/// `LLM_TIMEOUT_SECONDS` (default 120), `LLM_MAX_TOKENS` (default 4096) and
/// `LLM_RETRY_BASE_MS` (default 2000).
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// `None` for `rules`/`none`: no model is called.
    pub provider: Option<Provider>,
    pub model: String,
    pub base_url: String,
    pub timeout: Duration,
    pub max_tokens: u32,
    pub retry: RetryPolicy,
}

impl LlmSettings {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        let raw = env.or("LLM_PROVIDER", "rules");
        let provider = match raw.to_ascii_lowercase().as_str() {
            "rules" | "none" => None,
            other => Some(
                other
                    .parse::<Provider>()
                    .map_err(|reason| SettingsError::Invalid {
                        var: "LLM_PROVIDER",
                        reason,
                    })?,
            ),
        };
        let (default_model, default_url) = match provider {
            Some(Provider::Anthropic) => ("claude-sonnet-4-5", "https://api.anthropic.com"),
            Some(Provider::OpenAi) => ("gpt-4o-mini", "https://api.openai.com"),
            None => ("", ""),
        };
        Ok(LlmSettings {
            provider,
            model: env.or("LLM_MODEL", default_model),
            base_url: env
                .or("LLM_BASE_URL", default_url)
                .trim_end_matches('/')
                .to_owned(),
            timeout: env.seconds_or("LLM_TIMEOUT_SECONDS", 120)?,
            max_tokens: env.parse_or("LLM_MAX_TOKENS", 4096)?,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(
                env.parse_or("LLM_RETRY_BASE_MS", 2000)?,
            )),
        })
    }

    /// The secret key holding this provider's API key.
    pub fn api_key_name(&self) -> Option<&'static str> {
        match self.provider? {
            Provider::Anthropic => Some("anthropic_api_key"),
            Provider::OpenAi => Some("openai_api_key"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM request failed to reach {url}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "LLM rejected the request as too large for the model's context window (HTTP {status}): {body}"
    )]
    ContextWindow { status: u16, body: String },
    #[error("LLM answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("LLM response envelope could not be read: {0}")]
    Envelope(String),
    #[error("LLM answer is not valid JSON: {reason}; answer starts with {preview:?}")]
    NotJson { reason: String, preview: String },
    #[error("LLM answer failed schema validation: {0}")]
    Schema(String),
    #[error("could not read the LLM API key from the secret")]
    Key(#[source] crate::secrets::SecretError),
}

impl Classify for LlmError {
    fn retry_class(&self) -> RetryClass {
        match self {
            LlmError::Transport { source, .. } => source.retry_class(),
            LlmError::ContextWindow { .. } => RetryClass::Permanent,
            LlmError::Status { status, .. } => classify_http_status(*status),
            LlmError::Envelope(_) | LlmError::NotJson { .. } | LlmError::Schema(_) => {
                RetryClass::Transient
            }
            LlmError::Key(e) => e.retry_class(),
        }
    }
}

/// One model answer and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub input_tokens: i32,
    pub output_tokens: i32,
    pub model: String,
}

/// A client for one provider and model. Cheap to clone; build once per cold start.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    provider: Provider,
    base_url: String,
    model: String,
    max_tokens: u32,
    key: Key,
    retry: RetryPolicy,
}

/// Where the API key comes from.
#[derive(Debug, Clone)]
enum Key {
    /// Given once (the CLI, tests), or none (a local server without authentication).
    Fixed(Option<SecretString>),
    /// Read from the secret on each call (cached by the store's TTL), so a rotated key
    /// is picked up; a refused key makes the store fetch the secret again once.
    Secret {
        store: SecretStore,
        name: &'static str,
        required: bool,
    },
}

impl LlmClient {
    /// `None` when the settings name no provider (`rules`/`none`).
    pub fn new(
        settings: &LlmSettings,
        api_key: Option<SecretString>,
    ) -> Result<Option<Self>, reqwest::Error> {
        let Some(provider) = settings.provider else {
            return Ok(None);
        };
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(Some(LlmClient {
            http,
            provider,
            base_url: settings.base_url.clone(),
            model: settings.model.clone(),
            max_tokens: settings.max_tokens,
            key: Key::Fixed(api_key),
            retry: settings.retry,
        }))
    }

    /// The client the settings name, with its API key from the secret (`None` for
    /// `rules`/`none`). Anthropic cannot work without a key, so a missing one fails the
    /// cold start (messages stay queued) rather than failing every document with a 401;
    /// OpenAI-compatible servers (Ollama, vLLM, llama.cpp) may not need one.
    pub async fn from_secret(
        settings: &LlmSettings,
        secrets: &SecretStore,
    ) -> anyhow::Result<Option<Self>> {
        let client = LlmClient::new(settings, None)?;
        let (Some(mut client), Some(name)) = (client, settings.api_key_name()) else {
            return Ok(None);
        };
        let required = settings.provider == Some(Provider::Anthropic);
        // Read now, so a missing key fails the cold start; then on every call.
        if required {
            secrets.get(name).await?;
        } else {
            secrets.get_optional(name).await?;
        }
        client.key = Key::Secret {
            store: secrets.clone(),
            name,
            required,
        };
        Ok(Some(client))
    }

    /// The API key to send now.
    async fn api_key(&self) -> Result<Option<SecretString>, LlmError> {
        match &self.key {
            Key::Fixed(key) => Ok(key.clone()),
            Key::Secret {
                store,
                name,
                required: true,
            } => store.get(name).await.map(Some).map_err(LlmError::Key),
            Key::Secret { store, name, .. } => {
                store.get_optional(name).await.map_err(LlmError::Key)
            }
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// One call, no retry — except that a key the provider refuses (401/403) is read
    /// from the secret again, and the call repeated once if the key there changed (it
    /// was rotated since it was cached). A key still refused is a permanent error.
    ///
    /// Boxed: it erases the future's type, which keeps the futures of callers that nest
    /// it deeply (matching's decision inside the batch runtime) within the compiler's
    /// layout depth.
    pub fn complete<'a>(
        &'a self,
        system: &'a str,
        user: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_refreshing(system, user))
    }

    async fn complete_refreshing(&self, system: &str, user: &str) -> Result<Completion, LlmError> {
        let key = self.api_key().await?;
        match self.complete_with(system, user, key.as_ref()).await {
            Err(
                refused @ LlmError::Status {
                    status: 401 | 403, ..
                },
            ) if self.refresh_key().await => {
                let fresh = self.api_key().await?;
                if !crate::secrets::key_changed(key.as_ref(), fresh.as_ref()) {
                    tracing::error!("the LLM refuses the API key in the secret");
                    return Err(refused);
                }
                tracing::warn!(
                    "the LLM refused its API key; retrying once with the key now in the secret"
                );
                self.complete_with(system, user, fresh.as_ref()).await
            }
            other => other,
        }
    }

    /// Forgets the cached secret (when the key comes from one and was not just fetched).
    async fn refresh_key(&self) -> bool {
        match &self.key {
            Key::Secret { store, .. } => store.refresh().await,
            Key::Fixed(_) => false,
        }
    }

    /// One HTTP call with `api_key`. Counted in the current batch's metrics per
    /// provider: tokens and latency of an answer, or a failed call.
    async fn complete_with(
        &self,
        system: &str,
        user: &str,
        api_key: Option<&SecretString>,
    ) -> Result<Completion, LlmError> {
        let provider = match self.provider {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        };
        let started = std::time::Instant::now();
        let result = self.call(system, user, api_key).await;
        let by = |metric, value: f64| {
            metrics::record_by(metrics::dimension::PROVIDER, provider, metric, value)
        };
        match &result {
            Ok(completion) => {
                by(metrics::llm::INPUT_TOKENS, completion.input_tokens as f64);
                by(metrics::llm::OUTPUT_TOKENS, completion.output_tokens as f64);
                by(
                    metrics::llm::LATENCY,
                    started.elapsed().as_secs_f64() * 1000.0,
                );
            }
            Err(_) => by(metrics::llm::CALLS_FAILED, 1.0),
        }
        result
    }

    async fn call(
        &self,
        system: &str,
        user: &str,
        api_key: Option<&SecretString>,
    ) -> Result<Completion, LlmError> {
        let (url, body) = match self.provider {
            Provider::Anthropic => (
                format!("{}/v1/messages", self.base_url),
                json!({
                    "model": self.model,
                    "max_tokens": self.max_tokens,
                    "temperature": 0,
                    "system": system,
                    "messages": [{"role": "user", "content": user}],
                }),
            ),
            Provider::OpenAi => (
                format!("{}/v1/chat/completions", self.base_url),
                json!({
                    "model": self.model,
                    "max_tokens": self.max_tokens,
                    "temperature": 0,
                    "messages": [
                        {"role": "system", "content": system},
                        {"role": "user", "content": user},
                    ],
                }),
            ),
        };
        let mut request = self.http.post(&url).json(&body);
        request = match (self.provider, api_key) {
            (Provider::Anthropic, Some(key)) => request
                .header("x-api-key", key.expose_secret())
                .header("anthropic-version", "2023-06-01"),
            (Provider::Anthropic, None) => request.header("anthropic-version", "2023-06-01"),
            (Provider::OpenAi, Some(key)) => request.bearer_auth(key.expose_secret()),
            (Provider::OpenAi, None) => request,
        };
        let transport = |source| LlmError::Transport {
            url: url.clone(),
            source,
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(transport)?;
        if !(200..300).contains(&status) {
            let body = truncate(&text, 500);
            return Err(if status == 400 && is_context_window_exceeded(&text) {
                LlmError::ContextWindow { status, body }
            } else {
                LlmError::Status { status, body }
            });
        }
        read_envelope(self.provider, &self.model, &text)
    }

    /// Asks for a JSON answer, parses it into `T` and validates it, retrying transient
    /// failures (including unparseable or invalid answers) in process. Returns the value
    /// and the completion of the successful attempt; token counts of failed attempts are
    /// not included.
    pub async fn complete_json<T, V>(
        &self,
        system: &str,
        user: &str,
        validate: V,
    ) -> Result<(T, Completion), LlmError>
    where
        T: DeserializeOwned,
        V: Fn(&T) -> Result<(), String>,
    {
        self.retry
            .run(|_attempt| async {
                let completion = self.complete(system, user).await?;
                let value: T = parse_json_answer(&completion.text)?;
                validate(&value).map_err(LlmError::Schema)?;
                Ok((value, completion))
            })
            .await
    }
}

/// Reads a successful (2xx) response body of `provider`'s API into a [`Completion`]:
/// Anthropic's `content` text blocks, or OpenAI's `choices[0].message.content`;
/// `fallback_model` when the answer names no model. Anything else is
/// [`LlmError::Envelope`] (transient). Never panics, whatever the body (the fuzz targets
/// hold it to that).
pub fn read_envelope(
    provider: Provider,
    fallback_model: &str,
    body: &str,
) -> Result<Completion, LlmError> {
    let envelope: Value =
        serde_json::from_str(body).map_err(|e| LlmError::Envelope(format!("not JSON: {e}")))?;
    let model = envelope["model"]
        .as_str()
        .unwrap_or(fallback_model)
        .to_owned();
    let tokens = |v: &Value| v.as_i64().unwrap_or(0) as i32;
    match provider {
        Provider::Anthropic => {
            let text: String = envelope["content"]
                .as_array()
                .ok_or_else(|| LlmError::Envelope("no content array".into()))?
                .iter()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect();
            Ok(Completion {
                text,
                input_tokens: tokens(&envelope["usage"]["input_tokens"]),
                output_tokens: tokens(&envelope["usage"]["output_tokens"]),
                model,
            })
        }
        Provider::OpenAi => {
            let text = envelope["choices"][0]["message"]["content"]
                .as_str()
                .ok_or_else(|| LlmError::Envelope("no choices[0].message.content".into()))?
                .to_owned();
            Ok(Completion {
                text,
                input_tokens: tokens(&envelope["usage"]["prompt_tokens"]),
                output_tokens: tokens(&envelope["usage"]["completion_tokens"]),
                model,
            })
        }
    }
}

/// Parses a model's JSON answer, tolerating a Markdown code fence or prose around the
/// object. Missing or mistyped fields are schema failures.
pub fn parse_json_answer<T: DeserializeOwned>(text: &str) -> Result<T, LlmError> {
    let trimmed = text.trim();
    let candidate = match (trimmed.find('{'), trimmed.rfind('}')) {
        (Some(start), Some(end)) if end > start => &trimmed[start..=end],
        _ => trimmed,
    };
    let value: Value = serde_json::from_str(candidate).map_err(|e| LlmError::NotJson {
        reason: e.to_string(),
        preview: truncate(trimmed, 200),
    })?;
    serde_json::from_value(value).map_err(|e| LlmError::Schema(e.to_string()))
}

/// `text` cut to `max` characters, with an ellipsis when cut (error texts, previews).
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        text.chars().take(max).chain("…".chars()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Answer {
        matches: Vec<Value>,
    }

    #[test]
    fn a_fenced_json_answer_is_parsed() {
        let answer: Answer = parse_json_answer("```json\n{\"matches\": []}\n```").unwrap();
        assert!(answer.matches.is_empty());
    }

    #[test]
    fn prose_is_not_json_and_is_transient() {
        let err = parse_json_answer::<Answer>("I could not decide.").unwrap_err();
        assert!(matches!(err, LlmError::NotJson { .. }));
        assert!(err.is_transient());
    }

    #[test]
    fn a_missing_field_is_a_transient_schema_failure() {
        let err = parse_json_answer::<Answer>(r#"{"wrong": "field"}"#).unwrap_err();
        assert!(matches!(err, LlmError::Schema(_)));
        assert!(err.is_transient());
    }

    #[test]
    fn context_window_and_auth_errors_are_permanent_and_rate_limits_transient() {
        let cw = LlmError::ContextWindow {
            status: 400,
            body: String::new(),
        };
        assert!(!cw.is_transient());
        assert!(
            !LlmError::Status {
                status: 401,
                body: String::new()
            }
            .is_transient()
        );
        assert!(
            !LlmError::Status {
                status: 403,
                body: String::new()
            }
            .is_transient()
        );
        assert!(
            LlmError::Status {
                status: 429,
                body: String::new()
            }
            .is_transient()
        );
        assert!(
            LlmError::Status {
                status: 529,
                body: String::new()
            }
            .is_transient()
        );
    }

    #[test]
    fn provider_names_are_parsed_and_rules_means_no_client() {
        let env = Env::new(|var| (var == "LLM_PROVIDER").then(|| "rules".to_owned()));
        assert!(LlmSettings::from_env(&env).unwrap().provider.is_none());
        let env = Env::new(|var| (var == "LLM_PROVIDER").then(|| "ollama".to_owned()));
        assert_eq!(
            LlmSettings::from_env(&env).unwrap().provider,
            Some(Provider::OpenAi)
        );
        let env = Env::new(|var| (var == "LLM_PROVIDER").then(|| "gemini".to_owned()));
        assert!(
            LlmSettings::from_env(&env)
                .unwrap_err()
                .to_string()
                .contains("LLM_PROVIDER")
        );
    }
}
