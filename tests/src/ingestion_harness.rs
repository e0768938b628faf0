//! The ingestion function on real Postgres, S3 and SQS (the local emulator), with the
//! LLM and Textract answered by local servers that speak their wire formats.
//!
//! The function's own clients (`Deps.sqs`, `Deps.s3`, Textract) record every AWS call
//! and refuse any action `ingestion::aws_actions` does not declare; the harness checks
//! the record when it is dropped. Test plumbing (creating buckets and queues, seeding
//! files, polling like Lambda's event source mapping) uses separate clients.

use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::extract::Extractor;
use docflow::llm::{LlmClient, LlmSettings, Provider};
use docflow::ocr::Transcriber;
use docflow::retry::RetryPolicy;
use docflow::settings::Env;
use docflow::sqs::{BatchConfig, BatchRuntime, Heartbeat};
use docflow::telemetry::metrics::{Captured, MetricsSink};
use docflow_dev::local::{EventSourceMapping, QueuePair, QueueSpec};
use ingestion::{Deps, IngestionConfig};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::{MockServer, ResponseTemplate};

use crate::aws_calls::AwsCalls;
use crate::{aws, fresh_bucket, fresh_queue, lambda_event, poll_n, send, visible_bodies};

/// The ingestion queue's own visibility timeout in these tests: far longer than any
/// backoff, so a message that comes back early can only have been hidden by the code.
pub const QUEUE_VISIBILITY: Duration = Duration::from_secs(600);

/// An extraction that passes the quality gate.
pub fn invoice_json() -> Value {
    json!({
        "extraction_successful": true,
        "confidence": "high",
        "missing_fields": [],
        "document_type": "invoice",
        "invoice_number": "RE-2014-0815",
        "invoice_date": "2014-05-07",
        "due_date": "2014-05-21",
        "supplier_name": "Muster Bürobedarf GmbH",
        "supplier_vat_id": "DE123456789",
        "currency": "EUR",
        "subtotal": 100.0,
        "vat_amount": 19.0,
        "total": 119.0,
        "po_reference": "PO-4711",
        "line_items": [{"description": "Druckerpapier A4", "quantity": 10, "unit_price": 10.0, "amount": 100.0}]
    })
}

/// A text PDF of the invoice [`invoice_json`] describes: supplier, number, date and total
/// in its text layer.
pub fn invoice_pdf() -> Vec<u8> {
    crate::pdf::text_pdf(&[&[
        "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
        "Rechnung Nr. RE-2014-0815",
        "Rechnungsdatum: 07.05.2014",
        "Gesamtbetrag: 119,00 €",
    ]])
}

/// The LLM stand-in answers every extraction with [`invoice_json`].
pub async fn llm_answers_with_an_invoice(h: &Harness) {
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/messages"))
        .respond_with(crate::llm::anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;
}

/// Textract's JSON protocol content type.
const TEXTRACT_JSON: &str = "application/x-amz-json-1.1";

/// LINE blocks (with their PAGE blocks) for `(page, text)` lines at `confidence`.
pub fn textract_blocks(lines: &[(u32, &str)], confidence: f64) -> Vec<Value> {
    let mut pages: Vec<u32> = lines.iter().map(|(p, _)| *p).collect();
    pages.dedup();
    let mut blocks: Vec<Value> = pages
        .iter()
        .map(|p| json!({"BlockType": "PAGE", "Id": format!("p{p}"), "Page": p, "Confidence": 99.0}))
        .collect();
    for (i, (page, line)) in lines.iter().enumerate() {
        blocks.push(json!({"BlockType": "LINE", "Id": format!("l{i}"), "Page": page, "Text": line, "Confidence": confidence}));
    }
    blocks
}

/// A `DetectDocumentText` answer: one page with these lines.
pub fn textract_ok(lines: &[&str], confidence: f64) -> ResponseTemplate {
    let lines: Vec<(u32, &str)> = lines.iter().map(|l| (1, *l)).collect();
    ResponseTemplate::new(200)
        .insert_header("content-type", TEXTRACT_JSON)
        .set_body_json(json!({"DocumentMetadata": {"Pages": 1}, "Blocks": textract_blocks(&lines, confidence), "DetectDocumentTextModelVersion": "1.0"}))
}

/// A `StartDocumentTextDetection` answer.
pub fn textract_started(job_id: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", TEXTRACT_JSON)
        .set_body_json(json!({"JobId": job_id}))
}

/// A `GetDocumentTextDetection` answer for a job still running.
pub fn textract_in_progress() -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", TEXTRACT_JSON)
        .set_body_json(
            json!({"JobStatus": "IN_PROGRESS", "DocumentMetadata": {"Pages": 0}, "Blocks": []}),
        )
}

/// A `GetDocumentTextDetection` answer for a finished job: one page of results, with
/// `next_token` when more follow.
pub fn textract_succeeded(
    pages: u32,
    lines: &[(u32, &str)],
    confidence: f64,
    next_token: Option<&str>,
) -> ResponseTemplate {
    let mut body = json!({
        "JobStatus": "SUCCEEDED",
        "DocumentMetadata": {"Pages": pages},
        "Blocks": textract_blocks(lines, confidence),
        "DetectDocumentTextModelVersion": "1.0"
    });
    if let Some(token) = next_token {
        body["NextToken"] = json!(token);
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", TEXTRACT_JSON)
        .set_body_json(body)
}

/// A Textract error answer, as the service sends them.
pub fn textract_error(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", TEXTRACT_JSON)
        .insert_header("x-amzn-errortype", kind)
        .set_body_json(json!({"__type": kind, "Message": message}))
}

/// What Textract refuses of a document before reading it, as Textract answers it, or
/// `None`. The object is the one a `DetectDocumentText` request body names
/// (`Document.S3Object`), read from the local emulator as Textract reads it from S3.
/// AWS's documented limits (docs.aws.amazon.com/textract/latest/dg/limits-document.html):
/// "The maximum document image (JPEG/PNG) size is 10 MB" for synchronous operations
/// (`DocumentTooLargeException`), and "Amazon Textract supports images with a resolution
/// less than or equal to 10000 pixels on all sides" (`BadDocumentException`: "Amazon
/// Textract isn't able to read the document. For more information on the document
/// limits in Amazon Textract, see limits"). Every Textract stand-in asks this first.
pub fn textract_refusal(request_body: &[u8]) -> Option<ResponseTemplate> {
    let body: Value = serde_json::from_slice(request_body).ok()?;
    let object = &body["Document"]["S3Object"];
    let (bucket, key) = (object["Bucket"].as_str()?, object["Name"].as_str()?);
    let bytes = get_object_blocking(bucket, key)?;
    if bytes.len() > docflow::ocr::TEXTRACT_SYNC_MAX_BYTES {
        return Some(textract_error(
            400,
            "DocumentTooLargeException",
            "Document size exceeds the maximum allowed size",
        ));
    }
    let side = image::ImageReader::new(std::io::Cursor::new(&bytes))
        .with_guessed_format()
        .ok()
        .and_then(|reader| reader.into_dimensions().ok())
        .map(|(width, height)| width.max(height));
    if side.is_some_and(|side| side > docflow::ocr::TEXTRACT_MAX_SIDE) {
        return Some(textract_error(
            400,
            "BadDocumentException",
            "Amazon Textract isn't able to read the document: an image over 10000 pixels on a side",
        ));
    }
    None
}

/// Matches a Textract request whose document Textract would refuse ([`textract_refusal`]).
pub struct OverTextractLimits;

impl wiremock::Match for OverTextractLimits {
    fn matches(&self, request: &wiremock::Request) -> bool {
        textract_refusal(&request.body).is_some()
    }
}

/// Answers with Textract's refusal ([`textract_refusal`]).
pub struct TextractRefusal;

impl wiremock::Respond for TextractRefusal {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        textract_refusal(&request.body).unwrap_or_else(|| {
            textract_error(
                500,
                "InternalServerError",
                "the document changed under the stand-in",
            )
        })
    }
}

/// Makes a Textract stand-in refuse what Textract refuses, before any of its other
/// answers (wiremock priority 1).
pub async fn mount_textract_limits(textract: &MockServer) {
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(OverTextractLimits)
        .respond_with(TextractRefusal)
        .with_priority(1)
        .mount(textract)
        .await;
}

/// A Textract stand-in (a local server the test gives its answers) that refuses what
/// Textract refuses first ([`mount_textract_limits`]). Every ingestion test with
/// Textract starts its stand-in here.
pub async fn textract_stand_in() -> MockServer {
    let textract = MockServer::start().await;
    mount_textract_limits(&textract).await;
    textract
}

/// An object of the local emulator's S3, read over plain HTTP (path style, which moto
/// serves without a signature) on the caller's thread: wiremock's responders are
/// synchronous. `None` when it cannot be read.
fn get_object_blocking(bucket: &str, key: &str) -> Option<Vec<u8>> {
    use std::io::{Read as _, Write as _};
    let endpoint = crate::endpoint();
    let authority = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&authority).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    write!(
        stream,
        "GET /{bucket}/{key} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let split = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&response[..split]);
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return None;
    }
    let body = response[split + 4..].to_vec();
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if chunked {
        return dechunk(&body);
    }
    Some(body)
}

fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

pub struct Harness {
    pub pool: PgPool,
    pub deps: Deps,
    pub bucket: String,
    pub ingestion_queue: QueuePair,
    pub matching_queue: QueuePair,
    pub llm: MockServer,
    /// Plumbing clients (not the function's).
    pub s3: aws_sdk_s3::Client,
    pub sqs: aws_sdk_sqs::Client,
    /// Every AWS call the function made.
    pub calls: AwsCalls,
    pub aws: SdkConfig,
    /// The EMF lines the function's runtime wrote, one per batch.
    pub metrics: Captured,
    sink: MetricsSink,
}

pub enum Ocr {
    Native,
    /// Textract on this endpoint (a local server).
    Textract(String),
}

pub async fn harness(pool: PgPool, ocr: Ocr) -> Harness {
    // Files are parsed in child processes, as the function parses them.
    crate::sandbox::enable();
    let config = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let s3 = docflow::aws::s3_client(&config);
    let bucket = fresh_bucket(&s3).await;
    let ingestion_queue = fresh_queue(
        &sqs,
        "ingestion",
        QueueSpec {
            visibility_timeout: QUEUE_VISIBILITY,
            ..QueueSpec::default()
        },
    )
    .await;
    let matching_queue = fresh_queue(&sqs, "matching", QueueSpec::default()).await;
    let llm = MockServer::start().await;
    let settings = LlmSettings {
        provider: Some(Provider::Anthropic),
        model: "claude-test-1".into(),
        base_url: llm.uri(),
        timeout: Duration::from_secs(5),
        max_tokens: 2048,
        retry: RetryPolicy::with_base_delay(Duration::from_millis(5)),
    };
    let client = LlmClient::new(&settings, Some("sk-ant-test".to_owned().into()))
        .unwrap()
        .unwrap();
    let provider = match ocr {
        Ocr::Native => "native",
        Ocr::Textract(_) => "textract",
    };
    let env = Env::new(|var: &str| (var == "OCR_PROVIDER").then(|| provider.to_owned()));
    let calls = AwsCalls::new("ingestion", &ingestion::aws_actions(&env));
    let transcriber = match ocr {
        Ocr::Native => Transcriber::Native,
        Ocr::Textract(endpoint) => Transcriber::Textract(calls.textract(&config, &endpoint)),
    };
    let ingestion_config = IngestionConfig {
        bucket: bucket.clone(),
        matching_queue_url: matching_queue.url.clone(),
        stale_after: Duration::from_secs(300),
        max_attempts: 3,
        quality_threshold: 0.7,
        max_file_bytes: 1024 * 1024,
    };
    let (sink, metrics) = MetricsSink::capture("docflow/test");
    let runtime = runtime(
        &calls,
        &config,
        &ingestion_config,
        Heartbeat::default(),
        Some(QUEUE_VISIBILITY),
    )
    .with_metrics(sink.clone());
    let function_pool = crate::function_pool(&pool, "ingestion");
    let runtime = runtime.with_database_gate(function_pool.clone());
    // A warm instance: its session checked, a connection open (TLS, SCRAM), so a test's
    // deadline budget is the work's alone. A refused session (a test's point) is checked
    // again at the first batch.
    let _ = runtime.check_database().await;
    let deps = Deps {
        pool: function_pool,
        s3: calls.s3(&config),
        sqs: calls.sqs(&config),
        runtime,
        config: ingestion_config,
        transcriber,
        extractor: Extractor::Llm(client),
    };
    Harness {
        pool,
        deps,
        bucket,
        ingestion_queue,
        matching_queue,
        llm,
        s3,
        sqs,
        calls,
        aws: config,
        metrics,
        sink,
    }
}

/// The runtime exactly as `Deps::from_env` builds it, knowing the test queue's
/// visibility, on the recording SQS client.
fn runtime(
    calls: &AwsCalls,
    aws: &SdkConfig,
    config: &IngestionConfig,
    heartbeat: Heartbeat,
    queue_visibility: Option<Duration>,
) -> BatchRuntime {
    let base = BatchConfig {
        heartbeat,
        queue_visibility,
        ..BatchConfig::default()
    };
    BatchRuntime::new(
        calls.sqs(aws),
        ingestion::batch_config(base, config).expect("valid batch config"),
    )
}

impl Drop for Harness {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.calls.assert_declared();
        }
    }
}

/// An ingestion row as the tests read it.
#[derive(Debug, sqlx::FromRow)]
pub struct IngestionRow {
    pub status: String,
    pub attempt_count: i32,
    pub last_error: Option<String>,
    pub leased: bool,
    pub extraction_model: Option<String>,
    pub extraction_input_tokens: Option<i32>,
    pub transcription_file_path: Option<String>,
    pub preprocessed_file_path: Option<String>,
    pub transcription_quality_score: Option<f64>,
    pub transcription_page_count: Option<i32>,
}

impl Harness {
    /// Beats every `every` (lease renewal, then visibility), with the queue's own
    /// visibility unknown to the runtime: each beat then sets exactly the heartbeat's
    /// own extension, which is what the test observes.
    pub fn with_heartbeat_every(&mut self, every: Duration) {
        self.deps.runtime = runtime(
            &self.calls,
            &self.aws,
            &self.deps.config,
            Heartbeat {
                every,
                ..Heartbeat::default()
            },
            None,
        )
        .with_database_gate(self.deps.pool.clone())
        .with_metrics(self.sink.clone());
    }

    /// The metrics of every batch so far, read as CloudWatch reads the EMF lines.
    pub fn emf(&self) -> crate::emf::Metrics {
        crate::emf::Metrics::of(&self.metrics.lines())
    }

    /// A tenant, a document whose file is stored at `documents/{id}.{ext}`, and an
    /// in-progress ingestion with the given id.
    pub async fn seed(&self, ingestion_id: Uuid, ext: &str, file: Option<Vec<u8>>) -> Uuid {
        let document_id = Uuid::new_v4();
        self.seed_at(
            ingestion_id,
            document_id,
            &format!("documents/{document_id}.{ext}"),
            file,
        )
        .await;
        document_id
    }

    /// Like [`Harness::seed`], with the document's `file_path` (and the stored file) at
    /// `key`.
    pub async fn seed_at(
        &self,
        ingestion_id: Uuid,
        document_id: Uuid,
        key: &str,
        file: Option<Vec<u8>>,
    ) {
        let tenant: Uuid = sqlx::query_scalar(
            r#"WITH o AS (INSERT INTO organization (name) VALUES ('Org') RETURNING id)
               INSERT INTO tenant (organization_id, name) SELECT id, 'Tenant GmbH' FROM o RETURNING id"#,
        )
        .fetch_one(&self.pool)
        .await
        .unwrap();
        sqlx::query("INSERT INTO document (id, tenant_id, file_path) VALUES ($1, $2, $3)")
            .bind(document_id)
            .bind(tenant)
            .bind(key)
            .execute(&self.pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO ingestion (id, document_id) VALUES ($1, $2)")
            .bind(ingestion_id)
            .bind(document_id)
            .execute(&self.pool)
            .await
            .unwrap();
        if let Some(bytes) = file {
            self.s3
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .body(bytes.into())
                .send()
                .await
                .unwrap();
        }
    }

    /// Sends the ingestion id to the real queue, lets the local event source mapping
    /// deliver it to the handler, and applies the response as Lambda does.
    pub async fn deliver(&self, ingestion_id: Uuid) -> (SqsEvent, SqsBatchResponse) {
        send(
            &self.sqs,
            &self.ingestion_queue.url,
            &ingestion_id.to_string(),
        )
        .await;
        self.deliver_next().await
    }

    pub async fn deliver_next(&self) -> (SqsEvent, SqsBatchResponse) {
        self.deliver_next_within(None).await
    }

    pub async fn mapping(&self) -> EventSourceMapping {
        EventSourceMapping::new(self.sqs.clone(), &self.ingestion_queue.url)
            .await
            .unwrap()
    }

    /// Delivers the next message as an invocation with `budget` until its deadline.
    pub async fn deliver_next_within(
        &self,
        budget: Option<Duration>,
    ) -> (SqsEvent, SqsBatchResponse) {
        let esm = self.mapping().await;
        let event = poll_n(&esm, 1).await;
        self.invoke(&esm, event, budget).await
    }

    /// Invokes the handler with `event` and applies the response.
    pub async fn invoke(
        &self,
        esm: &EventSourceMapping,
        event: SqsEvent,
        budget: Option<Duration>,
    ) -> (SqsEvent, SqsBatchResponse) {
        let response = ingestion::handler(&self.deps, lambda_event(event.clone(), budget))
            .await
            .unwrap();
        esm.complete(&event, &response).await.unwrap();
        (event, response)
    }

    /// Asserts that the ingestion message was hidden for exactly `backoff` by the
    /// function (the queue's own 600 s would hide it far longer): the last visibility
    /// change asked for it, the message is still hidden shortly before it ends, and is
    /// back shortly after. `since` is when the response was applied.
    pub async fn assert_reappears_after(&self, backoff: Duration, since: Instant) {
        assert_eq!(
            self.calls.visibility_timeouts().last().copied(),
            Some(backoff.as_secs() as i32),
            "the function asked for the backoff"
        );
        let before = backoff.saturating_sub(Duration::from_secs(3));
        tokio::time::sleep(before.saturating_sub(since.elapsed())).await;
        assert!(
            visible_bodies(&self.sqs, &self.ingestion_queue.url)
                .await
                .is_empty(),
            "hidden until the backoff ends"
        );
        let deadline = since + backoff + Duration::from_secs(6);
        while Instant::now() < deadline {
            if !visible_bodies(&self.sqs, &self.ingestion_queue.url)
                .await
                .is_empty()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("the message did not come back after its {backoff:?} backoff");
    }

    pub async fn ingestion(&self, id: Uuid) -> IngestionRow {
        sqlx::query_as("SELECT status, attempt_count, last_error, started_at IS NOT NULL AS leased, extraction_model, extraction_input_tokens, transcription_file_path, preprocessed_file_path, transcription_quality_score, transcription_page_count FROM ingestion WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    pub async fn document(&self, id: Uuid) -> (Option<Value>, bool, Option<String>, String) {
        sqlx::query_as("SELECT structured_data, needs_human_review, matching_status, type::text FROM document WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    pub async fn object(&self, key: &str) -> Option<Vec<u8>> {
        let object = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .ok()?;
        Some(object.body.collect().await.unwrap().to_vec())
    }

    pub async fn object_exists(&self, key: &str) -> bool {
        self.object(key).await.is_some()
    }
}
