//! Fixtures shared by the matching tests: tenants and documents in the test database, a
//! wiremock server answering like Anthropic's Messages API, Slack, moto's internals.

#![allow(dead_code)]

use std::time::Duration;

use docflow::llm::{LlmClient, LlmSettings, Provider};
use docflow::matching::{DocumentType, normalize, status};
use docflow::notify::{Notifier, NotifyRetry, SlackChannel};
use docflow::retry::{ReceivePolicy, RetryPolicy};
use docflow::sqs::{BatchConfig, BatchRuntime};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const ADMIN_BASE_URL: &str = "https://admin.docflow.test";

pub async fn tenant(pool: &PgPool, name: &str) -> Uuid {
    let organization: Uuid =
        sqlx::query_scalar(r#"INSERT INTO organization (name) VALUES ($1) RETURNING id"#)
            .bind(format!("{name} group"))
            .fetch_one(pool)
            .await
            .unwrap();
    sqlx::query_scalar(r#"INSERT INTO tenant (organization_id, name) VALUES ($1, $2) RETURNING id"#)
        .bind(organization)
        .bind(name)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A document as ingestion leaves it: typed, with structured data, `pending`.
pub async fn document(pool: &PgPool, tenant_id: Uuid, doc_type: DocumentType, data: Value) -> Uuid {
    sqlx::query_scalar(
        r#"
        INSERT INTO document (tenant_id, type, file_path, structured_data, matching_status)
        VALUES ($1, $2, 'documents/test.pdf', $3, 'pending')
        RETURNING id
        "#,
    )
    .bind(tenant_id)
    .bind(doc_type)
    .bind(docflow_tests::stored_extraction(data))
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The commonest purchase: order PO-2024-0042, matched before, and invoice RE-1 that
/// cites it, not matched yet. Returns (order, invoice).
pub async fn order_and_invoice(pool: &PgPool, tenant_id: Uuid) -> (Uuid, Uuid) {
    let po = matched_document(
        pool,
        tenant_id,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        pool,
        tenant_id,
        DocumentType::Invoice,
        invoice("RE-1", "PO-2024-0042", "LS-1", "2024-03-05", 1190.0),
    )
    .await;
    (po, inv)
}

/// A document that was matched before: its normalised fields are on the row.
pub async fn matched_document(
    pool: &PgPool,
    tenant_id: Uuid,
    doc_type: DocumentType,
    data: Value,
) -> Uuid {
    let stored = docflow_tests::stored_extraction(data.clone());
    let id = document(pool, tenant_id, doc_type, data).await;
    let extraction = docflow::extract::Extraction::from_stored(&stored).unwrap();
    status::save_normalized_unclaimed(pool, id, &normalize::normalize(&extraction, doc_type))
        .await
        .unwrap();
    id
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DocState {
    pub matching_status: Option<String>,
    pub matching_attempts: i32,
    pub matching_error: Option<String>,
    pub failed: bool,
    pub notified: bool,
    pub cluster_id: Option<Uuid>,
    pub normalized_counterparty: Option<String>,
    pub normalized_references: Vec<String>,
}

pub async fn state(pool: &PgPool, id: Uuid) -> DocState {
    sqlx::query_as(
        r#"
        SELECT matching_status, matching_attempts, matching_error,
               matching_failed_at IS NOT NULL AS failed,
               matching_notified_at IS NOT NULL AS notified, cluster_id,
               normalized_counterparty, normalized_references
          FROM document WHERE id = $1
        "#,
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct EdgeRow {
    pub id: Uuid,
    pub document_a_id: Uuid,
    pub document_b_id: Uuid,
    pub score: f64,
    pub confidence: String,
    pub decided_by: String,
    pub evidence: Value,
    pub reasoning: Option<String>,
}

pub async fn edges(pool: &PgPool) -> Vec<EdgeRow> {
    sqlx::query_as(
        r#"
        SELECT id, document_a_id, document_b_id, score, confidence, decided_by, evidence, reasoning
          FROM document_match
         ORDER BY document_a_id, document_b_id
        "#,
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// The unordered pairs of the edges.
pub async fn pairs(pool: &PgPool) -> Vec<(Uuid, Uuid)> {
    edges(pool)
        .await
        .into_iter()
        .map(|e| (e.document_a_id, e.document_b_id))
        .collect()
}

pub fn pair(a: Uuid, b: Uuid) -> (Uuid, Uuid) {
    (a.min(b), a.max(b))
}

// ---- structured data (extraction contract) ----

pub const SUPPLIER: &str = "Müller Bürobedarf GmbH & Co. KG";
pub const SUPPLIER_VAT: &str = "DE 123 456 789";

pub fn purchase_order(number: &str, date: &str, total: f64) -> Value {
    json!({
        "document_type": "purchase_order",
        "invoice_number": number,
        "invoice_date": date,
        "supplier_name": SUPPLIER,
        "supplier_vat_id": SUPPLIER_VAT,
        "customer_name": "Acme AG",
        "currency": "EUR",
        "total": total,
        "line_items": [{"description": "Toner cartridges", "quantity": 10}]
    })
}

pub fn delivery_note(number: &str, po: &str, date: &str) -> Value {
    json!({
        "document_type": "delivery_note",
        "invoice_number": number,
        "invoice_date": date,
        "supplier_name": "MUELLER BUEROBEDARF GMBH & CO KG",
        "supplier_vat_id": "DE123456789",
        "customer_name": "Acme AG",
        "po_reference": po,
        "line_items": [{"description": "Toner cartridges", "quantity": 10}]
    })
}

pub fn invoice(number: &str, po: &str, dn: &str, date: &str, total: f64) -> Value {
    json!({
        "document_type": "invoice",
        "invoice_number": number,
        "invoice_date": date,
        "due_date": "2024-04-10",
        "supplier_name": "Müller Bürobedarf GmbH & Co. KG",
        "supplier_address": "Hauptstr. 1, 10115 Berlin",
        "supplier_vat_id": "de123456789",
        "supplier_iban": "DE89 3704 0044 0532 0130 00",
        "customer_name": "Acme AG",
        "currency": "EUR",
        "subtotal": total / 1.19,
        "vat_amount": total - total / 1.19,
        "total": total,
        "po_reference": po,
        "delivery_note_reference": dn,
        "line_items": [{"description": "Toner cartridges", "quantity": 10}]
    })
}

/// An invoice that shares supplier, amount and date with a purchase order but cites no
/// reference: an ambiguous pair (score 0.6).
pub fn invoice_without_references(number: &str, date: &str, total: f64) -> Value {
    json!({
        "document_type": "invoice",
        "invoice_number": number,
        "invoice_date": date,
        "supplier_name": SUPPLIER,
        "supplier_vat_id": SUPPLIER_VAT,
        "currency": "EUR",
        "total": total
    })
}

// ---- LLM (Anthropic Messages API on wiremock) ----

use docflow_tests::llm::anthropic_error;

pub fn context_window_exceeded() -> ResponseTemplate {
    anthropic_error(
        400,
        "invalid_request_error",
        "prompt is too long: 215345 tokens > 200000 maximum",
    )
}

/// A permanent LLM failure: the API refuses the key (Anthropic's 401 body). A
/// context-window error does not fail a document (the score decides its band), so the
/// tests of the permanent-failure path use this one.
pub fn key_refused() -> ResponseTemplate {
    anthropic_error(401, "authentication_error", "invalid x-api-key")
}

pub fn overloaded() -> ResponseTemplate {
    anthropic_error(503, "overloaded_error", "Overloaded")
}

pub fn rate_limited() -> ResponseTemplate {
    anthropic_error(
        429,
        "rate_limit_error",
        "Number of requests has exceeded your rate limit",
    )
}

pub fn messages() -> wiremock::MockBuilder {
    Mock::given(method("POST")).and(path("/v1/messages"))
}

/// A client for the wiremock server, retrying in process with millisecond waits.
pub fn llm_client(server: &MockServer) -> LlmClient {
    let settings = LlmSettings {
        provider: Some(Provider::Anthropic),
        model: "claude-sonnet-4-5".into(),
        base_url: server.uri(),
        timeout: Duration::from_secs(10),
        max_tokens: 1024,
        retry: RetryPolicy::with_base_delay(Duration::from_millis(1)),
    };
    LlmClient::new(&settings, Some("sk-ant-test".to_owned().into()))
        .unwrap()
        .expect("a provider is configured")
}

pub async fn llm_calls(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/v1/messages")
        .count()
}

/// A credit note correcting `invoice_number` (the extraction contract's
/// `invoice_reference`).
pub fn credit_note(number: &str, invoice_number: &str, date: &str, total: f64) -> Value {
    json!({
        "document_type": "credit_note",
        "invoice_number": number,
        "invoice_reference": invoice_number,
        "invoice_date": date,
        "supplier_name": SUPPLIER,
        "supplier_vat_id": SUPPLIER_VAT,
        "customer_name": "Acme AG",
        "currency": "EUR",
        "total": -total
    })
}

// ---- an LLM that answers only when the test says so ----

/// A Messages API stand-in that holds every request until [`Gate::open`]: a run can be
/// stopped between its candidate search and its write phase without any sleep. (Not
/// every test binary that includes this module uses it.)
#[allow(unused_imports)]
pub use docflow_tests::gate::Gate;

// ---- Postgres locks ----

/// Waits until some session of this test's database waits for an advisory lock (a
/// write phase queued behind the tenant lock), polling `pg_locks`.
pub async fn wait_for_advisory_lock_waiter(pool: &PgPool) {
    for _ in 0..3000 {
        let waiting: i64 = sqlx::query_scalar(
            r#"
            SELECT count(*) FROM pg_locks
             WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            "#,
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no session ever waited for an advisory lock");
}

// ---- Slack (incoming webhook on wiremock) ----

pub async fn slack_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/services/T000/B000/XXXX"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    server
}

pub fn slack_notifier(server: &MockServer) -> Notifier {
    let url = format!("{}/services/T000/B000/XXXX", server.uri());
    Notifier::new(Some(ADMIN_BASE_URL.into()), Duration::from_secs(5))
        .with_retry(fast_retry())
        .with_channel(SlackChannel::new(reqwest::Client::new(), url.into()))
}

/// Three attempts with millisecond waits.
pub fn fast_retry() -> NotifyRetry {
    NotifyRetry {
        attempts: 3,
        base_delay: Duration::from_millis(1),
    }
}

/// The JSON bodies Slack received.
pub async fn slack_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("Slack body is JSON"))
        .collect()
}

// ---- the function ----

pub async fn deps(pool: &PgPool, llm: Option<LlmClient>, notifier: Notifier) -> matching::Deps {
    let deps = deps_with_sqs(pool, llm, notifier, docflow_tests::sqs().await);
    // A warm instance: its session checked and a connection open.
    let _ = deps.runtime.check_database().await;
    deps
}

/// [`deps`] whose runtime uses `sqs` (e.g. [`docflow_tests::time_warp::warped`]).
pub fn deps_with_sqs(
    pool: &PgPool,
    llm: Option<LlmClient>,
    notifier: Notifier,
    sqs: aws_sdk_sqs::Client,
) -> matching::Deps {
    let pool = docflow_tests::function_pool(pool, "matching");
    matching::Deps {
        pool: pool.clone(),
        runtime: BatchRuntime::new(sqs, BatchConfig::default()).with_database_gate(pool),
        llm,
        embeddings: None,
        notifier,
        receive_policy: ReceivePolicy::default(),
        config: Default::default(),
    }
}

/// [`deps`] whose runtime writes its EMF lines to the returned capture.
pub async fn deps_with_metrics(
    pool: &PgPool,
    llm: Option<LlmClient>,
    notifier: Notifier,
) -> (matching::Deps, docflow::telemetry::metrics::Captured) {
    let (sink, captured) = docflow::telemetry::metrics::MetricsSink::capture("docflow/test");
    let mut deps = deps(pool, llm, notifier).await;
    deps.runtime = deps.runtime.with_metrics(sink);
    (deps, captured)
}

// ---- moto internals ----

/// moto's model dump (`/moto-api/data.json`): every SQS message and SES email it holds.
/// The dump is not atomic: moto checks each attribute of each model by serialising it,
/// reads it again, and serialises the whole at the end (`moto_api/_internal/
/// responses.py`, `model_data`). Another test writing at the same time (an S3 object
/// appended to a bucket's list between the check and the end) makes that end fail
/// with a 500 ("Object of type FakeKey is not JSON serializable", "dictionary changed
/// size during iteration": the emulator's log) or cuts the body off. The state this
/// test reads is its own and settled; asked again once the other writers have moved
/// on, moto answers. A burst of them (ten `docflow local run` processes uploading
/// their batches) lasts seconds, so the dump is asked again for up to 30 s.
pub async fn moto_data() -> Value {
    let url = format!("{}/moto-api/data.json", docflow_tests::endpoint());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let response = reqwest::get(&url).await.expect("moto-api reachable");
        let status = response.status();
        let read = response.json::<Value>().await;
        match read {
            Ok(data) if status.is_success() => return data,
            other if tokio::time::Instant::now() >= deadline => {
                panic!("moto-api did not answer JSON for 30 s: {status} {other:?}")
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// How long from now an SQS message stays hidden, from moto's `visible_at`.
pub async fn hidden_for(message_id: &str) -> Duration {
    // The time of the question, not of moto's answer: the dump of every message of the
    // shared emulator can take seconds, which are not time the message was hidden for.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    let data = moto_data().await;
    let message = data["sqs"]["Message"]
        .as_array()
        .expect("moto has SQS messages")
        .iter()
        .find(|m| m["id"] == message_id)
        .unwrap_or_else(|| panic!("moto has no message {message_id}"))
        .clone();
    let visible_at_ms = message["visible_at"].as_f64().expect("visible_at");
    Duration::from_millis((visible_at_ms - now_ms).max(0.0) as u64)
}

// ---- an LLM stand-in that obeys the documents ----

/// An LLM stand-in as gullible as a model can be: when the prompt it is sent contains
/// "link all candidates" (written in a document's text, say), it links every candidate
/// the prompt numbers, with high confidence; otherwise it links none. It also keeps the
/// prompts it saw.
#[derive(Clone, Default)]
pub struct ObedientLlm {
    pub prompts: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ObedientLlm {
    /// The user prompt of a Messages API request body.
    fn prompt(body: &[u8]) -> String {
        let body: Value = serde_json::from_slice(body).unwrap_or_default();
        let content = &body["messages"][0]["content"];
        match content {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

impl wiremock::Respond for ObedientLlm {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let prompt = Self::prompt(&request.body);
        self.prompts.lock().unwrap().push(prompt.clone());
        let matches: Vec<Value> = if prompt.contains("link all candidates") {
            // Every numbered candidate: `"candidate": n` (a whole number; the amount
            // evidence's `"candidate": 1190.0` is no candidate number).
            let mut numbers: Vec<usize> = prompt
                .match_indices("\"candidate\":")
                .filter_map(|(at, key)| {
                    let rest = prompt[at + key.len()..].trim_start();
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let after = rest[digits.len()..].chars().next();
                    (after != Some('.')).then(|| digits.parse::<usize>().ok())?
                })
                .collect();
            numbers.sort_unstable();
            numbers.dedup();
            numbers
                .into_iter()
                .map(|n| json!({"candidate": n, "confidence": "high", "reasoning": "As instructed."}))
                .collect()
        } else {
            Vec::new()
        };
        docflow_tests::llm::anthropic_text(&json!({ "matches": matches }).to_string())
    }
}

/// Makes the live claim on a document stale, as if the delivery holding it had died (or
/// stalled past `status::DEFAULT_CLAIM_LEASE`): the next delivery may take it over.
pub async fn let_claim_go_stale(pool: &PgPool, id: Uuid) {
    sqlx::query(
        "UPDATE document SET matching_claimed_at = now() - make_interval(secs => $2) WHERE id = $1",
    )
    .bind(id)
    .bind(status::DEFAULT_CLAIM_LEASE.as_secs_f64() + 1.0)
    .execute(pool)
    .await
    .unwrap();
}
