//! The ingestion function end to end: Postgres, S3 and SQS on the local emulator, the LLM
//! and Textract answered by local HTTP servers that speak their wire formats. The
//! function's AWS clients refuse any call `ingestion::aws_actions` does not declare
//! (`docflow_tests::aws_calls`). OCR itself is covered in `ingestion_ocr.rs`.

use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::SqsEvent;
use docflow::extract::Extractor;
use docflow::llm::{LlmClient, LlmSettings, Provider};
use docflow::retry::RetryPolicy;
use docflow_tests::ingestion_harness::*;
use docflow_tests::llm::{anthropic_error, anthropic_text};
use docflow_tests::logs::Logs;
use docflow_tests::pdf::text_pdf;
use docflow_tests::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

const VALID_EVENT: &str = include_str!("../../../events/ingestion/valid.json");
const BATCH_EVENT: &str = include_str!("../../../events/ingestion/batch.json");
const POISON_EVENT: &str = include_str!("../../../events/ingestion/poison.json");
const DUPLICATE_EVENT: &str = include_str!("../../../events/ingestion/duplicate.json");

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
        visible_bodies(&h.sqs, &h.matching_queue.url).await,
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
    // A text layer is not stored (a retry reads the file again; docs/ingestion.md).
    assert_eq!(row.transcription_file_path, None);
    assert!(
        !h.object_exists(&format!("ingestions/{id}/transcription-output.json"))
            .await
    );
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
    assert_eq!(visible_bodies(&h.sqs, &h.matching_queue.url).await.len(), 1);
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
        visible_bodies(&h.sqs, &h.ingestion_queue.url)
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
    let answered = Instant::now();

    assert_eq!(response.batch_item_failures.len(), 1, "kept for a retry");
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("not valid JSON"));
    h.assert_reappears_after(Duration::from_secs(30), answered)
        .await;
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
async fn a_record_s_log_lines_name_its_document_and_tenant_once_claimed(pool: PgPool) {
    let logs = Logs::default();
    let _guard = logs.capture_json("info");
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    let tenant_id: Uuid = sqlx::query_scalar("SELECT tenant_id FROM document WHERE id = $1")
        .bind(document_id)
        .fetch_one(&h.pool)
        .await
        .unwrap();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let lines = logs.lines();
    let completed = lines
        .iter()
        .find(|l| l["fields"]["message"] == "ingestion completed")
        .unwrap_or_else(|| panic!("no completion line in {lines:#?}"));
    let record = completed["spans"]
        .as_array()
        .and_then(|spans| spans.iter().find(|s| s["name"] == "sqs_record"))
        .unwrap_or_else(|| panic!("no record span on {completed}"));
    assert_eq!(record["entity_id"], id.to_string(), "{completed}");
    assert_eq!(
        record["document_id"],
        document_id.to_string(),
        "{completed}"
    );
    assert_eq!(
        record["tenant_id"],
        tenant_id.to_string(),
        "one grep on the tenant finds its documents' ingestion: {completed}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_ingestion_s_pages_llm_use_and_quality_gate_failures_reach_its_metrics(pool: PgPool) {
    use docflow::telemetry::metrics::{self as m, dimension};

    let h = harness(pool, Ocr::Native).await;
    let passes = Uuid::new_v4();
    h.seed(passes, "pdf", Some(invoice_pdf())).await;
    let fails = Uuid::new_v4();
    h.seed(
        fails,
        "pdf",
        Some(text_pdf(&[
            &[
                "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
                "Beleg 4711, Seite 1 von 2",
            ],
            &["Beleg 4711, Seite 2 von 2: Positionen und Zahlungsbedingungen"],
        ])),
    )
    .await;
    let mut low = invoice_json();
    low["confidence"] = json!("low");
    low["missing_fields"] = json!(["total"]);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(wiremock::matchers::body_string_contains("Beleg 4711"))
        .respond_with(anthropic_text(&low.to_string()))
        .mount(&h.llm)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;

    h.deliver(passes).await;
    h.deliver(fails).await;

    let emf = h.emf();
    let function = [(dimension::FUNCTION, ingestion::FUNCTION)];
    assert_eq!(emf.sum(m::ingestion::PAGES.name, &function), 3.0);
    let native = [
        (dimension::FUNCTION, ingestion::FUNCTION),
        (dimension::PROVIDER, "native"),
    ];
    assert_eq!(emf.sum(m::ingestion::OCR_PAGES.name, &native), 3.0);
    assert_eq!(
        emf.sum(m::ingestion::QUALITY_GATE_FAILURES.name, &function),
        1.0
    );
    assert_eq!(
        emf.sum(m::ingestion::PREPROCESSING_PASSES.name, &function),
        0.0,
        "a text layer is not preprocessed"
    );
    let anthropic = [
        (dimension::FUNCTION, ingestion::FUNCTION),
        (dimension::PROVIDER, "anthropic"),
    ];
    assert_eq!(emf.sum(m::llm::INPUT_TOKENS.name, &anthropic), 2.0 * 1234.0);
    assert_eq!(emf.values(m::llm::LATENCY.name, &anthropic).len(), 2);
    // Where the records' time went, per stage: both documents up to the extraction;
    // only the one that passed the quality gate completes and is handed to matching.
    let stages = |stage| {
        emf.values(
            m::stages::DURATION.name,
            &[
                (dimension::FUNCTION, ingestion::FUNCTION),
                (dimension::STAGE, stage),
            ],
        )
        .len()
    };
    for (stage, n) in [
        (m::stages::CLAIM, 2),
        (m::stages::FETCH, 2),
        (m::stages::TRANSCRIBE, 2),
        // Text layers: nothing stored (only OCR output is worth an S3 PUT).
        (m::stages::STORE_TRANSCRIPTION, 0),
        (m::stages::EXTRACT, 2),
        (m::stages::COMPLETE, 1),
        (m::stages::HAND_OFF, 1),
    ] {
        assert_eq!(stages(stage), n, "{stage}");
    }
    assert_eq!(
        emf.sum(m::batch::RECORDS_DONE.name, &function)
            + emf.sum(m::batch::RECORDS_RETRIED.name, &function),
        2.0,
        "the passing record is done, the failing one retried"
    );
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
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;

    let (_, response) = h
        .deliver_next_within(Some(Duration::from_millis(8500)))
        .await;
    let answered = Instant::now();

    assert_eq!(response.batch_item_failures.len(), 1);
    let row = h.ingestion(id).await;
    assert_eq!(
        (row.status.as_str(), row.attempt_count),
        ("in-progress", 1),
        "counted as an attempt"
    );
    assert!(row.last_error.unwrap().contains("ran out of time"));
    assert!(!row.leased, "lease released for the retry");
    h.assert_reappears_after(Duration::from_secs(30), answered)
        .await;
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
    // Live elsewhere: kept (not deleted), back when the lease would be stale (in 240 s)
    // plus the margin.
    assert_eq!(fresh_response.batch_item_failures.len(), 1);
    let hidden = *h.calls.visibility_timeouts().last().unwrap();
    assert!((295..=301).contains(&hidden), "hidden for {hidden} s");
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
async fn a_failed_send_to_matching_leaves_the_document_pending_and_retries_the_message(
    pool: PgPool,
) {
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

    // The hand-off's failure fails its record, so that the redelivery sends
    // it again (tests/tests/it/ingestion_batch.rs); the ingestion itself succeeded, and the
    // document stays pending where the sweeper finds it too.
    assert_eq!(response.batch_item_failures.len(), 1);
    assert_eq!(
        h.calls.visibility_timeouts().last().copied(),
        Some(ingestion::HAND_OFF_RETRY.as_secs() as i32)
    );
    assert_eq!(h.ingestion(id).await.status, "completed");
    let (_, _, matching, _) = h.document(document_id).await;
    assert_eq!(matching.as_deref(), Some("pending"));
}

// --- final receive, concurrent deliveries, the lease, transient infrastructure errors -----

/// Installs a trigger that fails matching updates of the ingestion row with SQLSTATE
/// `code`, as Postgres would during a failover; `when` is the trigger's condition.
async fn fail_ingestion_updates(pool: &PgPool, when: &str, code: &str, message: &str) {
    sqlx::query(&format!(
        r#"CREATE FUNCTION fail_ingestion_update() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
               RAISE EXCEPTION '{message}' USING ERRCODE = '{code}';
           END;
           $$"#
    ))
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(&format!(
        "CREATE TRIGGER fail_ingestion_update BEFORE UPDATE ON ingestion FOR EACH ROW \
         WHEN ({when}) EXECUTE FUNCTION fail_ingestion_update()"
    ))
    .execute(pool)
    .await
    .unwrap();
}

async fn stop_failing_ingestion_updates(pool: &PgPool) {
    sqlx::query("DROP TRIGGER fail_ingestion_update ON ingestion")
        .execute(pool)
        .await
        .unwrap();
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_transient_failure_on_the_final_receive_fails_the_ingestion_for_good(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(503, "api_error", "Service unavailable"))
        .mount(&h.llm)
        .await;
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;
    let esm = h.mapping().await;
    let mut event = poll_n(&esm, 1).await;
    // The third receive of a message whose earlier receives counted no attempt (a
    // failed claim, a crash, a throttled invocation): attempt_count is still 0.
    event.records[0]
        .attributes
        .insert("ApproximateReceiveCount".into(), "3".into());

    let (_, response) = h.invoke(&esm, event, None).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "recorded as final in the database, not left to the DLQ alone"
    );
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
    assert!(row.last_error.unwrap().contains("503"));
    let (_, review, _, _) = h.document(document_id).await;
    assert!(review, "the document needs human review");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn two_concurrent_deliveries_of_one_ingestion_do_the_work_once_and_keep_the_other_message(
    pool: PgPool,
) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    // The LLM takes a while, so the first delivery still holds the lease when the
    // second claims.
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            anthropic_text(&invoice_json().to_string()).set_delay(Duration::from_millis(1500)),
        )
        .expect(1)
        .mount(&h.llm)
        .await;
    // The original message and a sweeper re-send (or a redelivery) of the same id.
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;
    let esm = h.mapping().await;
    let event = poll_n(&esm, 2).await;

    let (_, response) = h.invoke(&esm, event, None).await;

    assert_eq!(h.ingestion(id).await.status, "completed");
    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "the delivery that met the live lease is kept, not deleted"
    );
    // Back once the lease would be stale (300 s) plus the margin; by then the work is
    // finished and the claim discards it.
    let hidden = h.calls.visibility_timeouts();
    assert_eq!(hidden.len(), 1, "{hidden:?}");
    assert!((355..=361).contains(&hidden[0]), "hidden for {hidden:?} s");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_heartbeat_renews_the_lease_and_hides_the_message_beyond_the_stale_threshold(
    pool: PgPool,
) {
    let mut h = harness(pool, Ocr::Native).await;
    h.with_heartbeat_every(Duration::from_millis(300));
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            anthropic_text(&invoice_json().to_string()).set_delay(Duration::from_millis(1300)),
        )
        .mount(&h.llm)
        .await;
    let before: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&h.pool)
        .await
        .unwrap();

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let renewed: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT started_at FROM ingestion WHERE id = $1")
            .bind(id)
            .fetch_one(&h.pool)
            .await
            .unwrap();
    assert!(
        renewed - before >= chrono::Duration::milliseconds(800),
        "the lease was renewed while the attempt ran: {:?}",
        renewed - before
    );
    let hidden = h.calls.visibility_timeouts();
    assert!(!hidden.is_empty(), "the heartbeat extended the visibility");
    assert!(
        hidden.iter().all(|&s| s > 300 + 30),
        "every extension reaches beyond the 300 s stale threshold: {hidden:?}"
    );
}

/// A beat that finds the lease taken over stops the attempt at once: no more paid for
/// the LLM (or Textract) on work that is no longer this attempt's to write. The attempt
/// is not counted and the live holder's lease is kept.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_attempt_whose_lease_was_taken_over_stops_at_the_next_beat(pool: PgPool) {
    use docflow_tests::gate::Gate;
    let mut h = harness(pool, Ocr::Native).await;
    h.with_heartbeat_every(Duration::from_millis(200));
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    let llm = Gate::new(&invoice_json().to_string());
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(llm.clone())
        .mount(&h.llm)
        .await;
    let take_over = async {
        // The attempt waits on the LLM; meanwhile another delivery took the lease over
        // (after it went stale).
        llm.arrived().await;
        sqlx::query(
            "UPDATE ingestion SET claim_token = gen_random_uuid(), started_at = now() WHERE id = $1",
        )
        .bind(id)
        .execute(&h.pool)
        .await
        .unwrap();
    };

    // Without the stop, the attempt would wait for the LLM's answer, which the gate
    // holds for as long as the test lets it.
    let delivered = tokio::time::timeout(
        Duration::from_secs(30),
        Box::pin(async { tokio::join!(Box::pin(h.deliver(id)), take_over).0 }),
    )
    .await;
    llm.open();

    let (_, response) = delivered.expect("the attempt stopped while the LLM still held its answer");
    assert_eq!(
        h.llm.received_requests().await.unwrap().len(),
        1,
        "no further LLM attempt paid for after the lease was lost"
    );
    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "kept for the live holder's lease, not deleted"
    );
    let row = h.ingestion(id).await;
    assert_eq!(
        (row.status.as_str(), row.attempt_count, row.extraction_model),
        ("in-progress", 0, None),
        "not counted, nothing written"
    );
}

/// The rules extractor is CPU work like OCR, preprocessing and the e-invoice reader: it
/// waits for the blocking pool's CPUs and memory budget instead of running beside jobs
/// that hold all of it (ten records' extractions at once took every core).
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_rules_extractor_waits_for_the_cpu_budget_like_the_other_cpu_work(pool: PgPool) {
    use docflow::ids::IngestionId;
    use std::sync::{Arc, Condvar, Mutex};
    let mut h = harness(pool, Ocr::Native).await;
    h.deps.extractor = docflow::extract::Extractor::Rules;
    let id = Uuid::new_v4();
    let text = "Muster GmbH\nRechnung Nr. RE-2014-0815\nRechnungsdatum: 07.05.2014\n\
                Gesamtbetrag: 119,00 EUR\n";
    h.seed(id, "txt", Some(text.as_bytes().to_vec())).await;
    // Every CPU of the pool held by a job that waits for the test.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    /// Lets the jobs end when dropped, on every path: a failed assertion must not leave
    /// the runtime waiting for blocking jobs that wait for the test.
    struct Release(Arc<(Mutex<bool>, Condvar)>);
    impl Drop for Release {
        fn drop(&mut self) {
            let (lock, cvar) = &*self.0;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cvar.notify_all();
        }
    }
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let release = Release(gate.clone());
    let (started, mut running) = tokio::sync::mpsc::unbounded_channel();
    let jobs: Vec<_> = (0..cpus)
        .map(|_| {
            let (gate, started) = (gate.clone(), started.clone());
            tokio::spawn(docflow::ocr::on_cpu(1, move || {
                started.send(()).unwrap();
                let (lock, cvar) = &*gate;
                let _open = cvar
                    .wait_while(lock.lock().unwrap(), |open| !*open)
                    .unwrap();
            }))
        })
        .collect();
    for _ in 0..cpus {
        running.recv().await.unwrap();
    }
    let claimed = ingestion::claim(&h.pool, IngestionId(id), Duration::from_secs(300))
        .await
        .unwrap()
        .expect("claimed");

    let mut run = Box::pin(ingestion::run_claimed(&h.deps, &claimed));
    // It cannot finish while the pool is full (without the budget it finished at once).
    let early = tokio::time::timeout(Duration::from_millis(500), &mut run).await;
    assert!(early.is_err(), "the extraction ran beside a full CPU pool");
    drop(release);
    run.await.unwrap();
    for job in jobs {
        job.await.unwrap().unwrap();
    }

    let row = h.ingestion(id).await;
    assert_eq!(
        (row.status.as_str(), row.extraction_model.as_deref()),
        ("completed", Some("rules"))
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_record_with_less_than_the_failure_reserve_left_is_not_claimed(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;

    // 6 s to the deadline, minus the runtime's 2 s margin: less than the 5 s reserve.
    let (_, response) = h.deliver_next_within(Some(Duration::from_secs(6))).await;

    assert_eq!(response.batch_item_failures.len(), 1);
    let row = h.ingestion(id).await;
    assert_eq!(row.attempt_count, 0, "no attempt burned for no work");
    assert!(!row.leased, "not even claimed");
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_database_failover_during_completion_is_retried_not_failed(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;
    // The writer became a reader (Aurora/RDS failover) just as the result is written.
    fail_ingestion_updates(
        &h.pool,
        "NEW.status = 'completed'",
        "25006",
        "cannot execute UPDATE in a read-only transaction",
    )
    .await;

    let (_, response) = h.deliver(id).await;

    assert_eq!(response.batch_item_failures.len(), 1, "kept for a retry");
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("read-only"));
    assert_eq!(h.calls.visibility_timeouts(), vec![30]);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_transient_s3_error_is_retried_with_backoff(pool: PgPool) {
    let mut h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    // S3 answering as it does under load: 503 SlowDown for the document, and (as usual)
    // NoSuchKey for the transcription that was never stored.
    let s3 = wiremock::MockServer::start().await;
    let bucket = h.bucket.clone();
    Mock::given(method("GET"))
        .and(wiremock::matchers::path_regex(format!(
            "^/{bucket}/ingestions/"
        )))
        .respond_with(s3_error(
            404,
            "NoSuchKey",
            "The specified key does not exist.",
        ))
        .mount(&s3)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/{bucket}/documents/{document_id}.pdf")))
        .respond_with(s3_error(
            503,
            "SlowDown",
            "Please reduce your request rate.",
        ))
        .mount(&s3)
        .await;
    let config = h
        .aws
        .to_builder()
        .endpoint_url(s3.uri())
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .build();
    h.deps.s3 = h.calls.s3(&config);

    let (_, response) = h.deliver(id).await;

    assert_eq!(response.batch_item_failures.len(), 1, "kept for a retry");
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("SlowDown"));
    assert_eq!(h.calls.visibility_timeouts(), vec![30]);
}

fn s3_error(status: u16, code: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/xml")
        .set_body_string(format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>h</HostId></Error>"#
        ))
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn metadata_lost_after_the_transcription_was_stored_is_recorded_by_the_retry(pool: PgPool) {
    // Only OCR output is stored (a text layer is read again instead): a scanned image,
    // read once by Textract (`expect(1)`, checked when the server drops).
    let textract = textract_stand_in().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "Textract.DetectDocumentText"))
        .respond_with(textract_ok(
            &[
                "Muster Bürobedarf GmbH",
                "Rechnung Nr. RE-2014-0815",
                "Gesamtbetrag: 119,00 EUR",
            ],
            98.5,
        ))
        .expect(1)
        .mount(&textract)
        .await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let scan = docflow_tests::scan::png(&docflow_tests::scan::faint_scan(64, 64));
    let document_id = h.seed(id, "png", Some(scan)).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;
    // The transcription reaches S3, then recording its metadata fails.
    fail_ingestion_updates(
        &h.pool,
        "NEW.transcription_file_path IS NOT NULL AND OLD.transcription_file_path IS NULL",
        "40001",
        "could not serialize access",
    )
    .await;
    let (_, first) = h.deliver(id).await;
    assert_eq!(first.batch_item_failures.len(), 1);
    let stored = format!("ingestions/{id}/transcription-output.json");
    assert!(h.object_exists(&stored).await);
    assert_eq!(h.ingestion(id).await.transcription_file_path, None);
    stop_failing_ingestion_updates(&h.pool).await;
    // The first attempt read the document's file and nothing else: no attempt had been
    // claimed before, so no transcription could be stored (no GET that can only 404).
    let reads = |calls: &[docflow_tests::aws_calls::Call]| -> Vec<String> {
        calls
            .iter()
            .filter(|c| c.action == "s3:GetObject")
            .filter_map(|c| c.target.clone())
            .collect()
    };
    assert_eq!(
        reads(&h.calls.calls()),
        vec![format!("documents/{document_id}.png")]
    );
    let before_retry = h.calls.calls().len();

    // The retry reuses the stored transcription (a second message stands in for the
    // redelivery after the backoff).
    let (_, second) = h.deliver(id).await;
    assert_eq!(
        reads(&h.calls.calls()[before_retry..]),
        vec![stored.clone()],
        "the retry looks for the stored transcription, and needs no file"
    );

    assert!(second.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed");
    assert_eq!(
        row.transcription_file_path.as_deref(),
        Some(stored.as_str())
    );
    assert!(
        row.transcription_quality_score.is_some_and(|q| q > 0.9),
        "{:?}",
        row.transcription_quality_score
    );
    assert_eq!(row.transcription_page_count, Some(1));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_whose_file_path_is_not_its_own_key_fails_permanently(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = Uuid::new_v4();
    // Another document's file: readable, and the wrong one.
    let elsewhere = format!("documents/{}.pdf", Uuid::new_v4());
    h.seed_at(id, document_id, &elsewhere, Some(invoice_pdf()))
        .await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
    let error = row.last_error.unwrap();
    assert!(
        error.contains(&format!("expected documents/{document_id}.<ext>")),
        "{error}"
    );
    assert!(h.llm.received_requests().await.unwrap().is_empty());
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

/// Review finding: the LLM API key was read from the secret once, at cold start
/// (`LlmClient::from_secret`), and kept for the instance's life. After the key is
/// rotated (old key revoked), every warm instance gets HTTP 401, which is classified
/// permanent: each ingestion it touches is failed for good and its message deleted.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_rotated_llm_key_is_read_again_instead_of_failing_ingestions_for_good(pool: PgPool) {
    let mut h = harness(pool, Ocr::Native).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&h.aws);
    let secret_id = unique("docflow-test/rotation");
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(json!({ "anthropic_api_key": "sk-ant-old" }).to_string())
        .send()
        .await
        .unwrap();
    // The secret is cached for 1 s only (DESIGN: "fetched once per cold start and
    // cached with a TTL").
    let store =
        docflow::secrets::SecretStore::new(secrets.clone(), &secret_id, Duration::from_secs(1));
    let settings = LlmSettings {
        provider: Some(Provider::Anthropic),
        model: "claude-test-1".into(),
        base_url: h.llm.uri(),
        timeout: Duration::from_secs(5),
        max_tokens: 2048,
        retry: RetryPolicy::with_base_delay(Duration::from_millis(5)),
    };
    let client = LlmClient::from_secret(&settings, &store)
        .await
        .unwrap()
        .unwrap();
    h.deps.extractor = Extractor::Llm(client);
    // Warm instance; then the key is rotated and the old one revoked.
    secrets
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string(json!({ "anthropic_api_key": "sk-ant-new" }).to_string())
        .send()
        .await
        .unwrap();
    // Past the TTL, without waiting for it.
    assert!(store.age_cache_for_test(Duration::from_secs(2)).await);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-new"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .with_priority(1)
        .mount(&h.llm)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(
            401,
            "authentication_error",
            "invalid x-api-key",
        ))
        .with_priority(2)
        .mount(&h.llm)
        .await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;

    let (_, response) = h.deliver(id).await;

    let row = h.ingestion(id).await;
    assert_ne!(
        row.status,
        "failed",
        "failed for good by a key rotation (deleted: {}): {:?}",
        response.batch_item_failures.is_empty(),
        row.last_error
    );
}

/// The same within the secret's TTL: the cached key is refused (401), the store fetches
/// the secret again and the call is repeated once with the rotated key.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refused_llm_key_is_fetched_again_and_the_rotated_one_used(pool: PgPool) {
    let mut h = harness(pool, Ocr::Native).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&h.aws);
    let secret_id = unique("docflow-test/rotation");
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(json!({ "anthropic_api_key": "sk-ant-old" }).to_string())
        .send()
        .await
        .unwrap();
    // The secret is cached for 1 s only (DESIGN: "fetched once per cold start and
    // cached with a TTL").
    let store =
        docflow::secrets::SecretStore::new(secrets.clone(), &secret_id, Duration::from_secs(300))
            .with_refresh_min_age(Duration::ZERO);
    let settings = LlmSettings {
        provider: Some(Provider::Anthropic),
        model: "claude-test-1".into(),
        base_url: h.llm.uri(),
        timeout: Duration::from_secs(5),
        max_tokens: 2048,
        retry: RetryPolicy::with_base_delay(Duration::from_millis(5)),
    };
    let client = LlmClient::from_secret(&settings, &store)
        .await
        .unwrap()
        .unwrap();
    h.deps.extractor = Extractor::Llm(client);
    // Warm instance; then the key is rotated and the old one revoked.
    secrets
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string(json!({ "anthropic_api_key": "sk-ant-new" }).to_string())
        .send()
        .await
        .unwrap();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-new"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .with_priority(1)
        .mount(&h.llm)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(
            401,
            "authentication_error",
            "invalid x-api-key",
        ))
        .with_priority(2)
        .mount(&h.llm)
        .await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;

    let (_, response) = h.deliver(id).await;

    let row = h.ingestion(id).await;
    assert_ne!(
        row.status,
        "failed",
        "failed for good by a key rotation (deleted: {}): {:?}",
        response.batch_item_failures.is_empty(),
        row.last_error
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_claim_says_whether_an_earlier_attempt_could_have_stored_a_transcription(pool: PgPool) {
    use docflow::ids::IngestionId;
    let h = harness(pool, Ocr::Native).await;
    let stale = Duration::from_secs(300);
    let claim = |id: Uuid| {
        let pool = h.pool.clone();
        async move {
            ingestion::claim(&pool, IngestionId(id), stale)
                .await
                .unwrap()
                .expect("claimable")
        }
    };
    let set = |id: Uuid, assignment: &'static str| {
        let pool = h.pool.clone();
        async move {
            sqlx::query(&format!("UPDATE ingestion SET {assignment} WHERE id = $1"))
                .bind(id)
                .execute(&pool)
                .await
                .unwrap();
        }
    };

    // Never claimed: nothing can be stored; the claim also carries the file's key.
    let fresh = Uuid::new_v4();
    let document_id = h.seed(fresh, "pdf", None).await;
    let first = claim(fresh).await;
    assert!(!first.tried_before);
    assert_eq!(first.file_path, format!("documents/{document_id}.pdf"));

    // A worker that died: its lease is still set, and stale.
    let crashed = Uuid::new_v4();
    h.seed(crashed, "pdf", None).await;
    set(crashed, "started_at = now() - interval '1 hour'").await;
    assert!(claim(crashed).await.tried_before);

    // A counted failure released the lease (count_failed_attempt clears started_at).
    let failed = Uuid::new_v4();
    h.seed(failed, "pdf", None).await;
    set(failed, "started_at = NULL, attempt_count = 1").await;
    assert!(claim(failed).await.tried_before);
}

/// Timeline: the attempt completes the ingestion under its own claim (t=0), a heartbeat
/// fires before the attempt has returned (t=0+). The beat finds the row no longer
/// `in-progress`; it must not read that as a lost lease, or it cancels a finished
/// attempt and the record is reported failed (seen once in a loaded fresh-clone run).
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_beat_after_the_attempt_finished_its_own_ingestion_keeps_the_attempt(pool: PgPool) {
    use docflow::ids::IngestionId;
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    let stale = Duration::from_secs(300);
    let a = ingestion::claim(&h.pool, IngestionId(id), stale)
        .await
        .unwrap()
        .expect("A claims the new ingestion");
    sqlx::query("UPDATE ingestion SET status = 'completed', completed_at = now() WHERE id = $1")
        .bind(id)
        .execute(&h.pool)
        .await
        .unwrap();

    assert!(
        ingestion::renew_lease(&h.pool, &a).await,
        "the beat cancels an attempt that finished its own ingestion"
    );

    // Taken over by another claim instead (its token): the lease is lost.
    sqlx::query("UPDATE ingestion SET claim_token = gen_random_uuid() WHERE id = $1")
        .bind(id)
        .execute(&h.pool)
        .await
        .unwrap();
    assert!(!ingestion::renew_lease(&h.pool, &a).await);
}

/// A paused worker cannot write over the one that took over. Timeline (defaults): the
/// lease goes stale 300 s after its last renewal; the heartbeat renews it every
/// `HEARTBEAT_SECONDS` (< 300 s) and hides the message until 360 s after its last beat.
/// Worker A claims at t=0 and is paused (a frozen sandbox, a database it cannot reach)
/// before its next beat. At t=300 the lease is stale; at t=360 the message is visible
/// again and worker B claims it. A wakes at t=420, while B works: none of A's writes may
/// touch B's lease or the result.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_worker_paused_past_the_stale_threshold_cannot_touch_the_lease_of_the_worker_that_took_over(
    pool: PgPool,
) {
    use docflow::ids::IngestionId;
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .expect(1)
        .mount(&h.llm)
        .await;
    let stale = Duration::from_secs(300);
    let started_at = || async {
        sqlx::query_scalar::<_, chrono::DateTime<chrono::Utc>>(
            "SELECT started_at FROM ingestion WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&h.pool)
        .await
        .unwrap()
    };
    let set = |assignment: &'static str| {
        let pool = h.pool.clone();
        async move {
            sqlx::query(&format!("UPDATE ingestion SET {assignment} WHERE id = $1"))
                .bind(id)
                .execute(&pool)
                .await
                .unwrap();
        }
    };

    // Arrange: A claims, then is paused past the stale threshold; B claims the stale
    // lease and has held it for a minute when A wakes.
    let a = ingestion::claim(&h.pool, IngestionId(id), stale)
        .await
        .unwrap()
        .expect("A claims the new ingestion");
    set("started_at = now() - interval '6 minutes'").await;
    let b = ingestion::claim(&h.pool, IngestionId(id), stale)
        .await
        .unwrap()
        .expect("B claims the stale lease");
    assert_ne!(a.token, b.token);
    set("started_at = now() - interval '1 minute'").await;
    let b_lease = started_at().await;

    // Act and assert: A's heartbeat does not renew B's lease.
    assert!(
        !ingestion::renew_lease(&h.pool, &a).await,
        "A learns the lease is gone"
    );
    assert_eq!(started_at().await, b_lease, "B's lease was renewed by A");

    // A's attempt fails transiently: not counted, and B's lease is not released (a
    // third delivery would claim it and pay for OCR and the LLM again).
    let counted = ingestion::count_failed_attempt(&h.pool, &a, false, 3, "A timed out")
        .await
        .unwrap();
    assert_eq!(counted, None, "A counted a failure on B's claim");
    assert!(
        ingestion::claim(&h.pool, IngestionId(id), stale)
            .await
            .unwrap()
            .is_none(),
        "A released B's lease: a third delivery claimed it"
    );
    // Nor does A's final receive fail the ingestion under the live worker.
    let failed = ingestion::count_failed_attempt(&h.pool, &a, true, 3, "A's final receive")
        .await
        .unwrap();
    assert_eq!(failed, None, "A failed the ingestion B is working on");
    // A's own pipeline stops at its first write: no completion, no LLM paid.
    let a_run = ingestion::run_claimed(&h.deps, &a).await;
    assert!(a_run.is_err(), "A's attempt went on under B's claim");
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 0));
    assert_eq!(row.last_error, None);
    assert_eq!(started_at().await, b_lease);

    // B finishes the work, once.
    ingestion::run_claimed(&h.deps, &b).await.unwrap();
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("completed", 0));
    assert_eq!(row.extraction_model.as_deref(), Some("claude-test-1"));
}
