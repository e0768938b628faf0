//! The embeddings client: any OpenAI-compatible `POST /v1/embeddings` (OpenAI, Ollama,
//! vLLM, llama.cpp server, LiteLLM), over reqwest. Matching embeds each document's
//! searchable text with it and searches the nearest documents (docs/matching.md,
//! "Semantic candidates").
//!
//! Optional: without `EMBEDDING_PROVIDER` (or with `none`) there is no client and
//! matching works on references, names and dates alone.
//!
//! Failures are classified like the LLM's: 429, 5xx and transport errors are transient;
//! 401/403 and a 400 saying the input is too long are permanent; an answer that is not
//! the documented envelope is transient. A vector of another length than
//! `EMBEDDING_DIMENSIONS` is permanent: the server and the settings disagree, and asking
//! again will not change that. [`EmbeddingClient::embed`] retries transient failures in
//! process ([`RetryPolicy`]: 3 attempts, 2 s / 4 s with jitter).

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use crate::llm::truncate;
use crate::retry::{
    Classify, RetryClass, RetryPolicy, classify_http_status, is_context_window_exceeded,
};
use crate::secrets::SecretStore;
use crate::settings::{Env, SettingsError};

/// The dimensions matching has an HNSW index for (migration
/// `20261123140200_add_document_embedding.sql`, one partial index each). pgvector's HNSW
/// indexes `vector` up to 2,000 dimensions; a larger model is asked for one of these
/// through the request's `dimensions` (OpenAI's `text-embedding-3-*` support it).
pub const INDEXED_DIMENSIONS: &[u32] = &[256, 384, 512, 768, 1024, 1536];

/// At most this many characters of a text are sent to be embedded: the
/// rest is cut. OpenAI's `text-embedding-3-*` take 8,191 tokens, and a token is at least
/// one character, so the cut text always fits them; a server with a smaller model may
/// still answer "too long" (matching then searches without embeddings for that document,
/// docs/matching.md "Semantic candidates").
pub const MAX_INPUT_CHARS: usize = 8_000;

/// `text` cut to [`MAX_INPUT_CHARS`] characters (at a character boundary).
pub fn bounded_input(text: &str) -> &str {
    match text.char_indices().nth(MAX_INPUT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `EMBEDDING_PROVIDER` (`none` by default, or `openai` / `openai-compatible` / `ollama`
/// / `vllm`), `EMBEDDING_MODEL` (default `text-embedding-3-small`), `EMBEDDING_BASE_URL`
/// (default `https://api.openai.com`), `EMBEDDING_DIMENSIONS` (default 1536, one of
/// [`INDEXED_DIMENSIONS`]), `EMBEDDING_SEND_DIMENSIONS` (default `true`: the request
/// carries `dimensions`; `false` for servers that reject it, whose model must then
/// produce that many), `EMBEDDING_TIMEOUT_SECONDS` (30), `EMBEDDING_RETRY_BASE_MS`
/// (2000). The key: the secret's `embeddings_api_key`, else its `openai_api_key`, else
/// none (a local server).
#[derive(Debug, Clone)]
pub struct EmbeddingSettings {
    /// `false`: no embeddings.
    pub enabled: bool,
    pub model: String,
    pub base_url: String,
    pub dimensions: u32,
    pub send_dimensions: bool,
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl EmbeddingSettings {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, SettingsError> {
        let enabled = match env
            .or("EMBEDDING_PROVIDER", "none")
            .to_ascii_lowercase()
            .as_str()
        {
            "none" | "" => false,
            "openai" | "openai-compatible" | "ollama" | "vllm" | "llamacpp" => true,
            other => {
                return Err(SettingsError::Invalid {
                    var: "EMBEDDING_PROVIDER",
                    reason: format!(
                        "unknown embeddings provider {other:?}; use openai (any OpenAI-compatible server) or none"
                    ),
                });
            }
        };
        let dimensions: u32 = env.parse_or("EMBEDDING_DIMENSIONS", 1536)?;
        if !INDEXED_DIMENSIONS.contains(&dimensions) {
            return Err(SettingsError::Invalid {
                var: "EMBEDDING_DIMENSIONS",
                reason: format!("must be one with an index: {INDEXED_DIMENSIONS:?}"),
            });
        }
        Ok(EmbeddingSettings {
            enabled,
            model: env.or("EMBEDDING_MODEL", "text-embedding-3-small"),
            base_url: env
                .or("EMBEDDING_BASE_URL", "https://api.openai.com")
                .trim_end_matches('/')
                .to_owned(),
            dimensions,
            send_dimensions: env.parse_or("EMBEDDING_SEND_DIMENSIONS", true)?,
            timeout: env.seconds_or("EMBEDDING_TIMEOUT_SECONDS", 30)?,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(
                env.parse_or("EMBEDDING_RETRY_BASE_MS", 2000)?,
            )),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    #[error("embeddings request failed to reach {url}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "embeddings server rejected the input as too long for the model (HTTP {status}): {body}"
    )]
    TooLong { status: u16, body: String },
    #[error("embeddings server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("embeddings response could not be read: {0}")]
    Envelope(String),
    #[error(
        "embeddings model {model} answered {got} dimensions, EMBEDDING_DIMENSIONS is {expected}"
    )]
    Dimensions {
        model: String,
        got: usize,
        expected: u32,
    },
    #[error("could not read the embeddings API key from the secret")]
    Key(#[source] crate::secrets::SecretError),
}

impl Classify for EmbeddingError {
    fn retry_class(&self) -> RetryClass {
        match self {
            EmbeddingError::Transport { source, .. } => source.retry_class(),
            EmbeddingError::TooLong { .. } | EmbeddingError::Dimensions { .. } => {
                RetryClass::Permanent
            }
            EmbeddingError::Status { status, .. } => classify_http_status(*status),
            EmbeddingError::Envelope(_) => RetryClass::Transient,
            EmbeddingError::Key(e) => e.retry_class(),
        }
    }
}

/// A client for one server, model and dimension. Cheap to clone; build once per cold
/// start.
#[derive(Debug, Clone)]
pub struct EmbeddingClient {
    http: reqwest::Client,
    base_url: String,
    model: String,
    dimensions: u32,
    send_dimensions: bool,
    key: Key,
    retry: RetryPolicy,
}

/// Where the API key comes from.
#[derive(Debug, Clone)]
enum Key {
    /// Given once (the CLI, tests), or none (a local server without authentication).
    Fixed(Option<SecretString>),
    /// Read from the secret on each call (`embeddings_api_key`, else `openai_api_key`;
    /// cached by the store's TTL), so a rotated key is picked up; a refused key makes the
    /// store fetch the secret again once.
    Secret(SecretStore),
}

impl EmbeddingClient {
    /// `None` when the settings enable no embeddings.
    pub fn new(
        settings: &EmbeddingSettings,
        api_key: Option<SecretString>,
    ) -> Result<Option<Self>, reqwest::Error> {
        if !settings.enabled {
            return Ok(None);
        }
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(Some(EmbeddingClient {
            http,
            base_url: settings.base_url.clone(),
            model: settings.model.clone(),
            dimensions: settings.dimensions,
            send_dimensions: settings.send_dimensions,
            key: Key::Fixed(api_key),
            retry: settings.retry,
        }))
    }

    /// The client the settings name, its key from the secret (`embeddings_api_key`, else
    /// `openai_api_key`, else none).
    pub async fn from_secret(
        settings: &EmbeddingSettings,
        secrets: &SecretStore,
    ) -> anyhow::Result<Option<Self>> {
        if !settings.enabled {
            return Ok(None);
        }
        let client = EmbeddingClient::new(settings, None)?.map(|client| EmbeddingClient {
            key: Key::Secret(secrets.clone()),
            ..client
        });
        if let Some(client) = &client {
            // Read once at the cold start too: a secret that cannot be read fails the
            // start, not the first document.
            client.api_key().await?;
        }
        Ok(client)
    }

    async fn api_key(&self) -> Result<Option<SecretString>, EmbeddingError> {
        match &self.key {
            Key::Fixed(key) => Ok(key.clone()),
            Key::Secret(store) => {
                let read = |name| store.get_optional(name);
                match read("embeddings_api_key")
                    .await
                    .map_err(EmbeddingError::Key)?
                {
                    Some(key) => Ok(Some(key)),
                    None => read("openai_api_key").await.map_err(EmbeddingError::Key),
                }
            }
        }
    }

    /// Forgets the cached secret (when the key comes from one and was not just fetched).
    async fn refresh_key(&self) -> bool {
        match &self.key {
            Key::Secret(store) => store.refresh().await,
            Key::Fixed(_) => false,
        }
    }

    /// The model name stored beside each embedding: a document embedded by another model
    /// (or at another dimension) is embedded again on its next match.
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dimensions(&self) -> u32 {
        self.dimensions
    }

    /// One request, no retry; repeated once with the key now in the secret when the
    /// server refuses the key (401/403) and the secret holds another one (rotated).
    pub async fn embed_once(&self, text: &str) -> Result<Vec<f32>, EmbeddingError> {
        let key = self.api_key().await?;
        match self.request(text, key.as_ref()).await {
            Err(
                refused @ EmbeddingError::Status {
                    status: 401 | 403, ..
                },
            ) if self.refresh_key().await => {
                let fresh = self.api_key().await?;
                if !crate::secrets::key_changed(key.as_ref(), fresh.as_ref()) {
                    tracing::error!("the embeddings server refuses the API key in the secret");
                    return Err(refused);
                }
                tracing::warn!(
                    "the embeddings server refused its API key; retrying once with the key now in the secret"
                );
                self.request(text, fresh.as_ref()).await
            }
            other => other,
        }
    }

    async fn request(
        &self,
        text: &str,
        api_key: Option<&SecretString>,
    ) -> Result<Vec<f32>, EmbeddingError> {
        let url = format!("{}/v1/embeddings", self.base_url);
        let mut body = json!({
            "model": self.model,
            "input": [bounded_input(text)],
            "encoding_format": "float",
        });
        if self.send_dimensions {
            body["dimensions"] = json!(self.dimensions);
        }
        let mut request = self.http.post(&url).json(&body);
        if let Some(key) = api_key {
            request = request.bearer_auth(key.expose_secret());
        }
        let transport = |source| EmbeddingError::Transport {
            url: url.clone(),
            source,
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(transport)?;
        if !(200..300).contains(&status) {
            let body = truncate(&text, 500);
            return Err(
                if status == 400 && (is_context_window_exceeded(&text) || is_too_long(&text)) {
                    EmbeddingError::TooLong { status, body }
                } else {
                    EmbeddingError::Status { status, body }
                },
            );
        }
        let envelope: Value = serde_json::from_str(&text)
            .map_err(|e| EmbeddingError::Envelope(format!("not JSON: {e}")))?;
        let vector: Vec<f32> = envelope["data"][0]["embedding"]
            .as_array()
            .ok_or_else(|| EmbeddingError::Envelope("no data[0].embedding array".into()))?
            .iter()
            .map(|x| {
                x.as_f64()
                    .map(|x| x as f32)
                    .ok_or_else(|| EmbeddingError::Envelope("a non-number in the embedding".into()))
            })
            .collect::<Result<_, _>>()?;
        if vector.len() != self.dimensions as usize {
            return Err(EmbeddingError::Dimensions {
                model: self.model.clone(),
                got: vector.len(),
                expected: self.dimensions,
            });
        }
        if vector.iter().any(|x| !x.is_finite()) || vector.iter().all(|x| *x == 0.0) {
            // A zero vector has no cosine distance to anything.
            return Err(EmbeddingError::Envelope(
                "the embedding is all zeros or not finite".into(),
            ));
        }
        Ok(vector)
    }

    /// The embedding of `text`, retrying transient failures in process.
    pub async fn embed(&self, text: &str) -> Result<Vec<f32>, EmbeddingError> {
        self.retry.run(|_attempt| self.embed_once(text)).await
    }
}

/// pgvector's text form of a vector: `[0.1,0.2,…]` (bound as text, cast with `::vector`).
pub fn to_pgvector_text(vector: &[f32]) -> String {
    let mut out = String::with_capacity(vector.len() * 12 + 2);
    out.push('[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&x.to_string());
    }
    out.push(']');
    out
}

/// A deterministic stand-in embedding (feature hashing of the lower-case words of three
/// or more letters, signed, L2-normalised; numbers and dates carry no meaning in a bag
/// of words): texts sharing words are near, as with a real model, without a model.
/// The local stand-in server (`docflow local embeddings`, the tests' wiremock responder)
/// answers with it; never used against a real server.
pub fn hashed_bag_of_words(text: &str, dimensions: usize) -> Vec<f32> {
    let mut v = vec![0f32; dimensions.max(1)];
    for word in text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
    {
        // FNV-1a: stable across runs and platforms.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.to_lowercase().bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let slot = (h % v.len() as u64) as usize;
        v[slot] += if (h >> 63) == 0 { 1.0 } else { -1.0 };
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v[0] = 1.0;
    }
    v
}

/// The body an OpenAI-compatible server answers to an embeddings `request` (`input` a
/// string or a list of strings), with [`hashed_bag_of_words`] vectors of the requested
/// `dimensions` (else `default_dimensions`).
pub fn stand_in_answer(request: &Value, default_dimensions: usize) -> Value {
    let dimensions = request["dimensions"]
        .as_u64()
        .map(|d| d as usize)
        .unwrap_or(default_dimensions);
    let inputs: Vec<String> = match &request["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    };
    let tokens: usize = inputs.iter().map(|i| i.split_whitespace().count()).sum();
    json!({
        "object": "list",
        "data": inputs.iter().enumerate().map(|(index, text)| json!({
            "object": "embedding",
            "index": index,
            "embedding": hashed_bag_of_words(text, dimensions),
        })).collect::<Vec<_>>(),
        "model": request["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })
}

fn is_too_long(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    [
        "too long",
        "too many tokens",
        "input length",
        "maximum input",
    ]
    .iter()
    .any(|needle| body.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        crate::settings::fixed_env(vars)
    }

    #[test]
    fn without_a_provider_there_are_no_embeddings() {
        let settings = EmbeddingSettings::from_env(&env(&[])).unwrap();
        assert!(!settings.enabled);
        assert!(EmbeddingClient::new(&settings, None).unwrap().is_none());
    }

    #[test]
    fn a_dimension_without_an_index_and_an_unknown_provider_are_rejected_by_name() {
        let err = EmbeddingSettings::from_env(&env(&[
            ("EMBEDDING_PROVIDER", "openai"),
            ("EMBEDDING_DIMENSIONS", "3072"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("EMBEDDING_DIMENSIONS"), "{err}");
        let err =
            EmbeddingSettings::from_env(&env(&[("EMBEDDING_PROVIDER", "word2vec")])).unwrap_err();
        assert!(err.to_string().contains("EMBEDDING_PROVIDER"), "{err}");
    }

    #[test]
    fn errors_are_classified_like_the_llms() {
        let status = |status| EmbeddingError::Status {
            status,
            body: String::new(),
        };
        assert!(status(429).is_transient());
        assert!(status(503).is_transient());
        assert!(!status(401).is_transient());
        assert!(
            !EmbeddingError::TooLong {
                status: 400,
                body: String::new()
            }
            .is_transient()
        );
        assert!(
            !EmbeddingError::Dimensions {
                model: "m".into(),
                got: 768,
                expected: 256
            }
            .is_transient()
        );
        assert!(EmbeddingError::Envelope("x".into()).is_transient());
    }

    #[test]
    fn the_stand_in_vectors_are_unit_length_and_near_for_shared_words() {
        let a = hashed_bag_of_words("Toner cartridge black Copy paper A4", 256);
        let b = hashed_bag_of_words("toner cartridge black copy paper a4 LS-1", 256);
        let c = hashed_bag_of_words("Euro pallet Stretch film roll", 256);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f32>();
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert!(dot(&a, &b) > 0.8, "{}", dot(&a, &b));
        assert!(dot(&a, &c) < 0.5, "{}", dot(&a, &c));
        assert_eq!(
            a,
            hashed_bag_of_words("Toner cartridge black Copy paper A4", 256)
        );
    }

    #[test]
    fn the_input_is_cut_to_its_budget_at_a_character_boundary() {
        let long = "ü".repeat(MAX_INPUT_CHARS + 10);
        assert_eq!(bounded_input(&long).chars().count(), MAX_INPUT_CHARS);
        assert_eq!(bounded_input("short"), "short");
    }

    #[test]
    fn vectors_are_written_in_pgvectors_text_form() {
        assert_eq!(to_pgvector_text(&[0.5, -1.0, 0.25]), "[0.5,-1,0.25]");
    }
}
