//! The ingestion function end to end: Postgres, S3 and SQS on the local emulator, the LLM
//! and Textract answered by local HTTP servers that speak their wire formats.

use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::extract::Extractor;
use docflow::llm::{LlmClient, LlmSettings, Provider};
use docflow::local::{EventSourceMapping, QueuePair, QueueSpec};
use docflow::ocr::Transcriber;
use docflow::retry::RetryPolicy;
use docflow::sqs::{BatchConfig, BatchRuntime};
use docflow_tests::llm::{anthropic_error, anthropic_text};
use docflow_tests::pdf::text_pdf;
use docflow_tests::*;
use ingestion::{Deps, IngestionConfig};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const VALID_EVENT: &str = include_str!("../../events/ingestion/valid.json");
const BATCH_EVENT: &str = include_str!("../../events/ingestion/batch.json");
const POISON_EVENT: &str = include_str!("../../events/ingestion/poison.json");
const DUPLICATE_EVENT: &str = include_str!("../../events/ingestion/duplicate.json");

fn invoice_json() -> Value {
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

/// A Textract DetectDocumentText answer with one LINE block per line at `confidence`.
fn textract_ok(lines: &[&str], confidence: f64) -> ResponseTemplate {
    let mut blocks = vec![json!({"BlockType": "PAGE", "Id": "p1", "Page": 1, "Confidence": 99.0})];
    for (i, line) in lines.iter().enumerate() {
        blocks.push(json!({"BlockType": "LINE", "Id": format!("l{i}"), "Page": 1, "Text": line, "Confidence": confidence}));
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", "application/x-amz-json-1.1")
        .set_body_json(json!({"DocumentMetadata": {"Pages": 1}, "Blocks": blocks, "DetectDocumentTextModelVersion": "1.0"}))
}

struct Harness {
    pool: PgPool,
    deps: Deps,
    bucket: String,
    ingestion_queue: QueuePair,
    matching_queue: QueuePair,
    llm: MockServer,
    s3: aws_sdk_s3::Client,
}

enum Ocr {
    Native,
    Textract(String),
}

async fn harness(pool: PgPool, ocr: Ocr) -> Harness {
    let config = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let s3 = docflow::aws::s3_client(&config);
    let bucket = fresh_bucket(&s3).await;
    let ingestion_queue = fresh_queue(&sqs, "ingestion", QueueSpec::default()).await;
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
    let transcriber = match ocr {
        Ocr::Native => Transcriber::Native,
        Ocr::Textract(endpoint) => Transcriber::Textract(aws_sdk_textract::Client::from_conf(
            aws_sdk_textract::config::Builder::from(&config)
                .endpoint_url(endpoint)
                .build(),
        )),
    };
    let deps = Deps {
        pool: pool.clone(),
        s3: s3.clone(),
        sqs: sqs.clone(),
        runtime: BatchRuntime::new(sqs, BatchConfig::default()),
        config: IngestionConfig {
            bucket: bucket.clone(),
            matching_queue_url: matching_queue.url.clone(),
            stale_after: Duration::from_secs(300),
            max_attempts: 3,
            quality_threshold: 0.7,
            max_file_bytes: 1024 * 1024,
        },
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
    }
}

impl Harness {
    /// A tenant, a document whose file is stored at `documents/{id}.{ext}`, and an
    /// in-progress ingestion with the given id.
    async fn seed(&self, ingestion_id: Uuid, ext: &str, file: Option<Vec<u8>>) -> Uuid {
        let tenant: Uuid = sqlx::query_scalar(
            r#"WITH o AS (INSERT INTO organization (name) VALUES ('Org') RETURNING id)
               INSERT INTO tenant (organization_id, name) SELECT id, 'Tenant GmbH' FROM o RETURNING id"#,
        )
        .fetch_one(&self.pool)
        .await
        .unwrap();
        let document_id = Uuid::new_v4();
        let key = format!("documents/{document_id}.{ext}");
        sqlx::query("INSERT INTO document (id, tenant_id, file_path) VALUES ($1, $2, $3)")
            .bind(document_id)
            .bind(tenant)
            .bind(&key)
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
                .key(&key)
                .body(bytes.into())
                .send()
                .await
                .unwrap();
        }
        document_id
    }

    /// Sends the ingestion id to the real queue, lets the local event source mapping
    /// deliver it to the handler, and applies the response as Lambda does.
    async fn deliver(&self, ingestion_id: Uuid) -> (SqsEvent, SqsBatchResponse) {
        let sqs = &self.deps.sqs;
        send(sqs, &self.ingestion_queue.url, &ingestion_id.to_string()).await;
        self.deliver_next().await
    }

    async fn deliver_next(&self) -> (SqsEvent, SqsBatchResponse) {
        self.deliver_next_within(None).await
    }

    /// Delivers the next message as an invocation with `budget` until its deadline.
    async fn deliver_next_within(&self, budget: Option<Duration>) -> (SqsEvent, SqsBatchResponse) {
        let esm = EventSourceMapping::new(self.deps.sqs.clone(), &self.ingestion_queue.url)
            .await
            .unwrap();
        let event = poll_n(&esm, 1).await;
        let response = ingestion::handler(&self.deps, lambda_event(event.clone(), budget))
            .await
            .unwrap();
        esm.complete(&event, &response).await.unwrap();
        (event, response)
    }

    async fn ingestion(&self, id: Uuid) -> IngestionRow {
        sqlx::query_as("SELECT status, attempt_count, last_error, started_at IS NOT NULL AS leased, extraction_model, extraction_input_tokens, transcription_file_path, preprocessed_file_path, transcription_quality_score FROM ingestion WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    async fn document(&self, id: Uuid) -> (Option<Value>, bool, Option<String>, String) {
        sqlx::query_as("SELECT structured_data, needs_human_review, matching_status, type::text FROM document WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    async fn object_exists(&self, key: &str) -> bool {
        self.s3
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .is_ok()
    }
}

#[derive(Debug, sqlx::FromRow)]
struct IngestionRow {
    status: String,
    attempt_count: i32,
    last_error: Option<String>,
    leased: bool,
    extraction_model: Option<String>,
    extraction_input_tokens: Option<i32>,
    transcription_file_path: Option<String>,
    preprocessed_file_path: Option<String>,
    transcription_quality_score: Option<f64>,
}

fn invoice_pdf() -> Vec<u8> {
    text_pdf(&[&[
        "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
        "Rechnung Nr. RE-2014-0815",
        "Rechnungsdatum: 07.05.2014",
        "Gesamtbetrag: 119,00 €",
    ]])
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_text_pdf_is_ingested_end_to_end_and_handed_to_matching(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .expect(1)
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed");
    assert_eq!(row.extraction_model.as_deref(), Some("claude-test-1"));
    assert_eq!(row.extraction_input_tokens, Some(1234));
    assert_eq!(row.transcription_quality_score, Some(1.0));
    let (data, review, matching, kind) = h.document(document_id).await;
    assert_eq!(data.unwrap()["invoice_number"], "RE-2014-0815");
    assert!(!review);
    assert_eq!(matching.as_deref(), Some("pending"));
    assert_eq!(kind, "invoice");
    assert_eq!(
        visible_bodies(&h.deps.sqs, &h.matching_queue.url).await,
        vec![document_id.to_string()]
    );
    // The LLM saw the PDF's text layer, umlauts included.
    let requests = h.llm.received_requests().await.unwrap();
    let prompt: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(
        prompt["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Muster Bürobedarf GmbH")
    );
    let stored = format!("ingestions/{id}/transcription-output.json");
    assert_eq!(
        row.transcription_file_path.as_deref(),
        Some(stored.as_str())
    );
    assert!(h.object_exists(&stored).await);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_plain_text_file_is_ingested_end_to_end(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let text = "Factuur 2014-117\nFactuurdatum: 19 april 2014\nTotaal: € 242,00\n";
    let document_id = h.seed(id, "txt", Some(text.as_bytes().to_vec())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&format!("```json\n{}\n```", invoice_json())))
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    let (data, _, matching, _) = h.document(document_id).await;
    assert!(data.is_some());
    assert_eq!(matching.as_deref(), Some("pending"));
    assert_eq!(
        visible_bodies(&h.deps.sqs, &h.matching_queue.url)
            .await
            .len(),
        1
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_stored_transcription_is_reused_on_retry_so_ocr_runs_once(pool: PgPool) {
    let textract = MockServer::start().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(id, "png", Some(tiny_png(200))).await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "Textract.DetectDocumentText"))
        .respond_with(textract_ok(
            &["Rechnung Nr. RE-1", "Gesamtbetrag 119,00 EUR"],
            98.5,
        ))
        .expect(1)
        .mount(&textract)
        .await;
    // First delivery: the LLM is down for all three in-process attempts.
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(529, "overloaded_error", "Overloaded"))
        .up_to_n_times(3)
        .mount(&h.llm)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    let (_, first) = h.deliver(id).await;
    assert_eq!(
        first.batch_item_failures.len(),
        1,
        "transient failure: retried"
    );
    let after_first = h.ingestion(id).await;
    assert_eq!(
        (after_first.status.as_str(), after_first.attempt_count),
        ("in-progress", 1)
    );
    assert!(!after_first.leased, "the lease is released for the retry");
    let esm = mapping(&h.deps.sqs, &h.ingestion_queue.url).await;
    assert!(
        esm.poll().await.unwrap().is_none(),
        "hidden by the 30 s backoff"
    );
    // Rather than wait out the backoff, a second message with the same id stands in for
    // the redelivery (as a sweeper re-send would).
    let (_, second) = h.deliver(id).await;

    assert!(second.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    assert_eq!(h.llm.received_requests().await.unwrap().len(), 4);
    // `expect(1)` on the Textract mock is verified when it drops.
}

fn tiny_png(gray: u8) -> Vec<u8> {
    let mut img = image::GrayImage::new(16, 16);
    for (x, y, p) in img.enumerate_pixels_mut() {
        p.0[0] = if (x + y) % 4 == 0 { gray / 2 } else { gray };
    }
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn low_quality_triggers_exactly_one_preprocessing_pass(pool: PgPool) {
    let textract = MockServer::start().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(id, "png", Some(tiny_png(180))).await;
    // Both the original and the preprocessed image read poorly.
    Mock::given(method("POST"))
        .and(header("x-amz-target", "Textract.DetectDocumentText"))
        .respond_with(textract_ok(
            &["Rechnunq Nr RE-1", "Gesamtbetraq 119,00"],
            41.0,
        ))
        .expect(2)
        .mount(&textract)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(
        row.status, "completed",
        "the quality gate, not the OCR score, decides"
    );
    let preprocessed = format!("ingestions/{id}/preprocessed.png");
    assert_eq!(
        row.preprocessed_file_path.as_deref(),
        Some(preprocessed.as_str())
    );
    assert!(h.object_exists(&preprocessed).await);
    let second_call = &textract.received_requests().await.unwrap()[1];
    let body: Value = serde_json::from_slice(&second_call.body).unwrap();
    assert!(
        body["Document"]["Bytes"].is_string(),
        "the second call sends the preprocessed image"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_llm_rate_limit_is_retried_in_process_and_then_succeeds(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ))
        .up_to_n_times(1)
        .mount(&h.llm)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.llm.received_requests().await.unwrap().len(), 2);
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("completed", 0));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_llm_401_fails_the_ingestion_at_once(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(
            401,
            "authentication_error",
            "invalid x-api-key",
        ))
        .expect(1)
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "recorded in the DB, message deleted"
    );
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
    assert!(row.last_error.unwrap().contains("401"));
    let (_, review, matching, _) = h.document(document_id).await;
    assert!(review);
    assert_eq!(matching, None);
    assert!(
        visible_bodies(&h.deps.sqs, &h.ingestion_queue.url)
            .await
            .is_empty()
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn invalid_json_from_the_llm_is_transient(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(
            "Sure! Here is the invoice data: invoice number RE-2014-0815.",
        ))
        .expect(3)
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert_eq!(response.batch_item_failures.len(), 1, "kept for a retry");
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("not valid JSON"));
    // Retry{30 s}: the message is hidden although the queue's own timeout was used up.
    let esm = mapping(&h.deps.sqs, &h.ingestion_queue.url).await;
    assert!(esm.poll().await.unwrap().is_none());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_third_failed_attempt_fails_the_ingestion_and_flags_the_document(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    sqlx::query("UPDATE ingestion SET attempt_count = 2 WHERE id = $1")
        .bind(id)
        .execute(&h.pool)
        .await
        .unwrap();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(503, "api_error", "Service unavailable"))
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "final: recorded and deleted"
    );
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 3));
    let (_, review, _, _) = h.document(document_id).await;
    assert!(review);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_low_confidence_extraction_fails_the_quality_gate_and_is_retried(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    let mut low = invoice_json();
    low["confidence"] = json!("low");
    low["missing_fields"] = json!(["total"]);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&low.to_string()))
        .expect(1)
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert_eq!(response.batch_item_failures.len(), 1);
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("quality gate"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_attempt_that_runs_out_of_invocation_time_is_counted_and_backed_off(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    // The LLM answers after 4 s; the invocation has 8.5 s, minus the runtime's 2 s
    // margin and ingestion's 5 s reserve: the attempt must give up at about 1.5 s.
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()).set_delay(Duration::from_secs(4)))
        .mount(&h.llm)
        .await;
    send(&h.deps.sqs, &h.ingestion_queue.url, &id.to_string()).await;

    let (_, response) = h
        .deliver_next_within(Some(Duration::from_millis(8500)))
        .await;

    assert_eq!(response.batch_item_failures.len(), 1);
    let row = h.ingestion(id).await;
    assert_eq!(
        (row.status.as_str(), row.attempt_count),
        ("in-progress", 1),
        "counted as an attempt"
    );
    assert!(row.last_error.unwrap().contains("ran out of time"));
    assert!(!row.leased, "lease released for the retry");
    let esm = mapping(&h.deps.sqs, &h.ingestion_queue.url).await;
    assert!(
        esm.poll().await.unwrap().is_none(),
        "hidden by the 30 s backoff, not the queue's timeout"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_stale_claim_is_reclaimed_and_a_fresh_one_is_not(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let (stale, fresh) = (Uuid::new_v4(), Uuid::new_v4());
    h.seed(stale, "pdf", Some(invoice_pdf())).await;
    h.seed(fresh, "pdf", Some(invoice_pdf())).await;
    sqlx::query("UPDATE ingestion SET started_at = now() - interval '6 minutes' WHERE id = $1")
        .bind(stale)
        .execute(&h.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE ingestion SET started_at = now() - interval '1 minute' WHERE id = $1")
        .bind(fresh)
        .execute(&h.pool)
        .await
        .unwrap();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .expect(1)
        .mount(&h.llm)
        .await;

    let (_, stale_response) = h.deliver(stale).await;
    let (_, fresh_response) = h.deliver(fresh).await;

    assert!(stale_response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(stale).await.status, "completed");
    assert!(
        fresh_response.batch_item_failures.is_empty(),
        "discarded: live elsewhere"
    );
    let row = h.ingestion(fresh).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 0));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn poison_bodies_and_unknown_ids_are_discarded_without_affecting_the_batch(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let event: SqsEvent = serde_json::from_str(BATCH_EVENT).unwrap();
    let ids: Vec<Uuid> = event.records[..3]
        .iter()
        .map(|r| r.body.as_deref().unwrap().parse().unwrap())
        .collect();
    for id in &ids {
        h.seed(*id, "pdf", Some(invoice_pdf())).await;
    }
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .expect(3)
        .mount(&h.llm)
        .await;

    let response = ingestion::handler(&h.deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    for id in ids {
        assert_eq!(h.ingestion(id).await.status, "completed");
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_sample_poison_event_is_discarded(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let event: SqsEvent = serde_json::from_str(POISON_EVENT).unwrap();

    let response = ingestion::handler(&h.deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_duplicate_delivery_of_a_completed_ingestion_is_discarded(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let event: SqsEvent = serde_json::from_str(DUPLICATE_EVENT).unwrap();
    let id: Uuid = event.records[0].body.as_deref().unwrap().parse().unwrap();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    sqlx::query("UPDATE ingestion SET status = 'completed', completed_at = now() WHERE id = $1")
        .bind(id)
        .execute(&h.pool)
        .await
        .unwrap();

    let response = ingestion::handler(&h.deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert!(
        h.llm.received_requests().await.unwrap().is_empty(),
        "no work done twice"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_sample_valid_event_ingests_its_ingestion(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let event: SqsEvent = serde_json::from_str(VALID_EVENT).unwrap();
    let id: Uuid = event.records[0].body.as_deref().unwrap().parse().unwrap();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    let response = ingestion::handler(&h.deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn permanent_input_errors_fail_at_once_without_calling_the_llm(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let missing = Uuid::new_v4();
    h.seed(missing, "pdf", None).await;
    let empty = Uuid::new_v4();
    h.seed(empty, "pdf", Some(Vec::new())).await;
    let unsupported = Uuid::new_v4();
    h.seed(unsupported, "docx", Some(b"PK\x03\x04".to_vec()))
        .await;
    let too_big = Uuid::new_v4();
    h.seed(too_big, "txt", Some(vec![b'x'; 2 * 1024 * 1024]))
        .await;

    for (id, expected) in [
        (missing, "NoSuchKey"),
        (empty, "empty"),
        (unsupported, "unsupported document type"),
        (too_big, "MAX_FILE_BYTES"),
    ] {
        let (_, response) = h.deliver(id).await;
        assert!(response.batch_item_failures.is_empty());
        let row = h.ingestion(id).await;
        assert_eq!(
            (row.status.as_str(), row.attempt_count),
            ("failed", 1),
            "{expected}"
        );
        let error = row.last_error.unwrap();
        assert!(error.contains(expected), "{expected}: {error}");
    }
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_send_to_matching_leaves_the_document_pending_for_the_sweeper(pool: PgPool) {
    let mut h = harness(pool, Ocr::Native).await;
    h.deps.config.matching_queue_url = format!("{}-gone", h.matching_queue.url);
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "the ingestion itself succeeded"
    );
    assert_eq!(h.ingestion(id).await.status, "completed");
    let (_, _, matching, _) = h.document(document_id).await;
    assert_eq!(matching.as_deref(), Some("pending"));
}

// --- the offline rules extractor on text PDFs laid out as real invoices are ---------------

async fn ingest_with_rules(pool: PgPool, pdf: Vec<u8>) -> (IngestionRow, Value) {
    let mut h = harness(pool, Ocr::Native).await;
    h.deps.extractor = Extractor::Rules;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(pdf)).await;
    let (_, response) = h.deliver(id).await;
    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    let (data, _, _, _) = h.document(document_id).await;
    (row, data.unwrap_or(Value::Null))
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_rules_extractor_reads_a_german_invoice_pdf(pool: PgPool) {
    let pdf = text_pdf(&[&[
        "Elektro Schmidt GmbH · Industriestraße 12 · 70565 Stuttgart",
        "",
        "Stadtwerke Musterstadt AG",
        "Einkauf",
        "Am Markt 1",
        "12345 Musterstadt",
        "",
        "Rechnung",
        "Rechnungsnummer:\tR-2024-00731",
        "Rechnungsdatum:\t14.03.2024",
        "Ihre Bestellung:\tBE-55120",
        "Lieferschein-Nr.:\tLS-88412",
        "",
        "Pos.\tBezeichnung\tMenge\tEinzelpreis\tGesamtpreis",
        "1\tKabel NYM-J 3x1,5 (100 m)\t4\t89,90 €\t359,60 €",
        "2\tSchutzschalter B16\t12\t7,45 €\t89,40 €",
        "3\tMontage (Stunden)\t6\t65,00 €\t390,00 €",
        "",
        "Nettobetrag\t\t\t\t839,00 €",
        "zzgl. 19 % MwSt.\t\t\t\t159,41 €",
        "Rechnungsbetrag\t\t\t\t998,41 €",
        "",
        "Zahlbar innerhalb von 14 Tagen ohne Abzug.",
        "Elektro Schmidt GmbH · USt-IdNr. DE811907980 · IBAN DE89 3704 0044 0532 0130 00",
    ]]);

    let (row, data) = ingest_with_rules(pool, pdf).await;

    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.extraction_model.as_deref(), Some("rules"));
    assert_eq!(data["document_type"], "invoice");
    assert_eq!(data["invoice_number"], "R-2024-00731");
    assert_eq!(data["invoice_date"], "2024-03-14");
    assert_eq!(data["due_date"], "2024-03-28");
    assert_eq!(data["supplier_name"], "Elektro Schmidt GmbH");
    assert_eq!(data["supplier_vat_id"], "DE811907980");
    assert_eq!(data["supplier_iban"], "DE89370400440532013000");
    assert_eq!(data["currency"], "EUR");
    assert_eq!(data["subtotal"], 839.0);
    assert_eq!(data["vat_amount"], 159.41);
    assert_eq!(data["total"], 998.41);
    assert_eq!(data["po_reference"], "BE-55120");
    assert_eq!(data["delivery_note_reference"], "LS-88412");
    assert_eq!(data["line_items"].as_array().unwrap().len(), 3);
    assert_eq!(data["line_items"][1]["quantity"], 12.0);
    assert_eq!(data["line_items"][1]["amount"], 89.4);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_rules_extractor_reads_a_dutch_invoice_pdf(pool: PgPool) {
    let pdf = text_pdf(&[&[
        "Bakkerij De Gouden Korenaar B.V.",
        "Molenweg 8",
        "3511 AB Utrecht",
        "",
        "Aan: Hotel Zonnehoek",
        "Strandweg 2, 2586 JK Den Haag",
        "",
        "FACTUUR",
        "Factuurnummer\t2024-0412",
        "Factuurdatum\t19 april 2024",
        "Vervaldatum\t19 mei 2024",
        "",
        "Omschrijving\tAantal\tPrijs\tBedrag",
        "Desembrood\t40\t3,25\t130,00",
        "Croissants (doos à 12)\t15\t9,80\t147,00",
        "",
        "Subtotaal\t\t\t€ 277,00",
        "BTW 9%\t\t\t€ 24,93",
        "Totaal\t\t\t€ 301,93",
        "",
        "Gelieve te betalen op NL91 ABNA 0417 1643 00 o.v.v. factuurnummer.",
        "KvK 30123456 · BTW-nr. NL8012.34.567.B01",
    ]]);

    let (row, data) = ingest_with_rules(pool, pdf).await;

    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(data["document_type"], "invoice");
    assert_eq!(data["invoice_number"], "2024-0412");
    assert_eq!(data["invoice_date"], "2024-04-19");
    assert_eq!(data["due_date"], "2024-05-19");
    assert_eq!(data["supplier_name"], "Bakkerij De Gouden Korenaar B.V.");
    assert_eq!(data["supplier_iban"], "NL91ABNA0417164300");
    assert_eq!(data["supplier_vat_id"], "NL801234567B01");
    assert_eq!(data["currency"], "EUR");
    assert_eq!(data["subtotal"], 277.0);
    assert_eq!(data["vat_amount"], 24.93);
    assert_eq!(data["total"], 301.93);
    assert_eq!(data["line_items"].as_array().unwrap().len(), 2);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_rules_extractor_reads_an_english_invoice_pdf(pool: PgPool) {
    let pdf = text_pdf(&[&[
        "Northwind Office Supplies Ltd",
        "4 Canal Street, Manchester M1 3HE",
        "VAT Reg No: GB 123 4567 89",
        "",
        "INVOICE",
        "Invoice No.\tNW-10457",
        "Invoice Date\t2 May 2024",
        "Payment due\t1 June 2024",
        "PO Number\tPO-77812",
        "",
        "Bill to:",
        "Fenwick Architects LLP",
        "",
        "Description\tQty\tUnit price\tAmount",
        "Ergonomic chair\t3\t£1,249.00\t£3,747.00",
        "Desk lamp\t5\t£45.50\t£227.50",
        "",
        "Subtotal\t\t\t£3,974.50",
        "VAT 20%\t\t\t£794.90",
        "Total due\t\t\t£4,769.40",
    ]]);

    let (row, data) = ingest_with_rules(pool, pdf).await;

    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(data["document_type"], "invoice");
    assert_eq!(data["invoice_number"], "NW-10457");
    assert_eq!(data["invoice_date"], "2024-05-02");
    assert_eq!(data["due_date"], "2024-06-01");
    assert_eq!(data["supplier_name"], "Northwind Office Supplies Ltd");
    assert_eq!(data["supplier_vat_id"], "GB123456789");
    assert_eq!(data["customer_name"], "Fenwick Architects LLP");
    assert_eq!(data["currency"], "GBP");
    assert_eq!(data["subtotal"], 3974.5);
    assert_eq!(data["vat_amount"], 794.9);
    assert_eq!(data["total"], 4769.4);
    assert_eq!(data["po_reference"], "PO-77812");
    assert_eq!(data["line_items"][0]["unit_price"], 1249.0);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_pdf_the_rules_extractor_cannot_read_fails_permanently_without_retries(pool: PgPool) {
    let pdf = text_pdf(&[&[
        "Dear customer,",
        "thank you for your visit last week.",
        "Kind regards",
    ]]);

    let (row, _) = ingest_with_rules(pool, pdf).await;

    assert_eq!(
        (row.status.as_str(), row.attempt_count),
        ("failed", 1),
        "deterministic: no retry"
    );
    assert!(row.last_error.unwrap().contains("quality gate"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_openai_compatible_server_extracts_with_bearer_auth_and_token_counts(pool: PgPool) {
    let mut h = harness(pool, Ocr::Native).await;
    let settings = LlmSettings {
        provider: Some(Provider::OpenAi),
        model: "llama3.1:8b".into(),
        base_url: h.llm.uri(),
        timeout: Duration::from_secs(5),
        max_tokens: 2048,
        retry: RetryPolicy::with_base_delay(Duration::from_millis(5)),
    };
    let client = LlmClient::new(&settings, Some("sk-local".to_owned().into()))
        .unwrap()
        .unwrap();
    h.deps.extractor = Extractor::Llm(client);
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    // The chat completions shape of OpenAI, Ollama, vLLM and llama.cpp's server.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-local"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "llama3.1:8b",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": invoice_json().to_string()}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 250, "total_tokens": 1150}
        })))
        .expect(1)
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed");
    assert_eq!(row.extraction_model.as_deref(), Some("llama3.1:8b"));
    assert_eq!(row.extraction_input_tokens, Some(900));
    let request: Value =
        serde_json::from_slice(&h.llm.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(request["messages"][0]["role"], "system");
    assert!(
        request["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("RE-2014-0815")
    );
    let (data, _, _, _) = h.document(document_id).await;
    assert_eq!(data.unwrap()["total"], 119.0);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_rules_extractor_reads_a_two_page_invoice_with_thousands_separators(pool: PgPool) {
    let pdf = text_pdf(&[
        &[
            "Maschinenbau Krüger AG",
            "Werkstraße 40 · 33602 Bielefeld",
            "",
            "An",
            "Bäckerei Sonnenschein KG",
            "Lindenweg 3",
            "32052 Herford",
            "",
            "RECHNUNG",
            "Rechnungs-Nr.\tDatum\tKunden-Nr.",
            "2024/7713\t2024-09-30\tK-1020",
            "",
            "Pos.\tArtikel\tMenge\tEinzelpreis EUR\tBetrag EUR",
            "1\tTeigknetmaschine TK-80\t1\t12.450,00\t12.450,00",
            "2\tWartungsvertrag 12 Monate\t1\t1.980,00\t1.980,00",
            "Übertrag\t\t\t\t14.430,00",
        ],
        &[
            "Maschinenbau Krüger AG · Rechnung 2024/7713 · Seite 2",
            "",
            "Summe netto\t\t\t\t14.430,00",
            "Umsatzsteuer 19 %\t\t\t\t2.741,70",
            "Gesamtbetrag\t\t\t\t17.171,70",
            "",
            "Zahlungsziel: 30 Tage netto.",
            "USt-IdNr.: DE 277 109 861 · Bankverbindung: IBAN DE44 5001 0517 5407 3249 31",
        ],
    ]);

    let (row, data) = ingest_with_rules(pool, pdf).await;

    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(data["invoice_number"], "2024/7713");
    assert_eq!(data["invoice_date"], "2024-09-30");
    assert_eq!(data["due_date"], "2024-10-30");
    assert_eq!(data["supplier_name"], "Maschinenbau Krüger AG");
    assert_eq!(data["customer_name"], "Bäckerei Sonnenschein KG");
    assert_eq!(data["supplier_vat_id"], "DE277109861");
    assert_eq!(data["supplier_iban"], "DE44500105175407324931");
    assert_eq!(data["subtotal"], 14430.0);
    assert_eq!(data["vat_amount"], 2741.7);
    assert_eq!(data["total"], 17171.7);
    assert_eq!(data["currency"], "EUR");
    assert_eq!(data["line_items"][0]["unit_price"], 12450.0);
}
