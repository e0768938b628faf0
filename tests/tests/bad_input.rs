//! Bad input, end to end: the rows of docs/reliability.md's table that no other test file
//! proves. Real Postgres, S3 and SQS on the local emulator, wiremock for the LLM, Textract
//! and Slack, each function driven through its Lambda handler.

mod matching_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use aws_lambda_events::event::sqs::SqsEvent;
use docflow::matching::DocumentType;
use docflow_tests::ingestion_harness::*;
use docflow_tests::lambda_event;
use docflow_tests::pdf::text_pdf;
use matching_support::*;
use sqlx::PgPool;
use uuid::Uuid;

const MATCHING_VALID: &str = include_str!("../../events/matching/valid.json");
const INGESTION_VALID: &str = include_str!("../../events/ingestion/valid.json");
const OUTPUT_VALID: &str = include_str!("../../events/document-output/valid.json");

/// The sample event of a queue with its body replaced (`None`: no body at all), sent now,
/// received for the `receive`-th time.
fn event_with_body(sample: &str, body: Option<&str>, receive: u32) -> SqsEvent {
    let mut event: SqsEvent = serde_json::from_str(sample).expect("sample event");
    let record = &mut event.records[0];
    record.body = body.map(str::to_owned);
    record.attributes.insert(
        "SentTimestamp".into(),
        chrono::Utc::now().timestamp_millis().to_string(),
    );
    record
        .attributes
        .insert("ApproximateReceiveCount".into(), receive.to_string());
    event
}

/// Log lines written while the guard lives (JSON, as in Lambda).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let logs = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || logs.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

// --- unknown enum values in the database ---------------------------------------------------

/// A document type the application added to the `document_type` enum after this version
/// of docflow was built.
async fn add_unknown_document_type(pool: &PgPool) {
    sqlx::query("ALTER TYPE document_type ADD VALUE IF NOT EXISTS 'receipt'")
        .execute(pool)
        .await
        .unwrap();
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_of_a_type_docflow_does_not_know_fails_matching_visibly_and_once(pool: PgPool) {
    add_unknown_document_type(&pool).await;
    let slack = slack_server().await;
    let deps = deps(&pool, None, slack_notifier(&slack)).await;
    let t = tenant(&pool, "Acme AG").await;
    let receipt = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-1", "PO-1", "LS-1", "2024-03-05", 119.0),
    )
    .await;
    sqlx::query("UPDATE document SET type = 'receipt' WHERE id = $1")
        .bind(receipt)
        .execute(&pool)
        .await
        .unwrap();

    let event = event_with_body(MATCHING_VALID, Some(&receipt.to_string()), 1);
    let response = matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();

    assert!(
        response.batch_item_failures.is_empty(),
        "decided at once: the type will not become known by retrying"
    );
    let s = state(&pool, receipt).await;
    assert_eq!(s.matching_status.as_deref(), Some("failed"));
    assert!(s.failed && s.notified, "{s:?}");
    let error = s.matching_error.unwrap();
    assert!(error.contains("receipt"), "{error}");
    let notices = slack_bodies(&slack).await;
    assert_eq!(notices.len(), 1, "admins told once");
    assert!(
        notices[0].to_string().contains("receipt"),
        "{:?}",
        notices[0]
    );

    // A duplicate delivery of the message neither reruns nor tells anyone again.
    let mut duplicate = event;
    duplicate.records[0]
        .attributes
        .insert("ApproximateReceiveCount".into(), "2".into());
    let again = matching::handler(&deps, lambda_event(duplicate, None))
        .await
        .unwrap();
    assert!(again.batch_item_failures.is_empty());
    assert_eq!(state(&pool, receipt).await.matching_attempts, 1);
    assert_eq!(slack_bodies(&slack).await.len(), 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn documents_of_an_unknown_type_are_never_candidates_and_do_not_stop_other_matches(
    pool: PgPool,
) {
    add_unknown_document_type(&pool).await;
    let slack = slack_server().await;
    let deps = deps(&pool, None, slack_notifier(&slack)).await;
    let t = tenant(&pool, "Acme AG").await;
    let po = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let stranger = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    sqlx::query("UPDATE document SET type = 'receipt' WHERE id = $1")
        .bind(stranger)
        .execute(&pool)
        .await
        .unwrap();
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-9", "PO-2024-0042", "LS-9", "2024-03-05", 1190.0),
    )
    .await;

    let response = matching::handler(
        &deps,
        lambda_event(
            event_with_body(MATCHING_VALID, Some(&inv.to_string()), 1),
            None,
        ),
    )
    .await
    .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        state(&pool, inv).await.matching_status.as_deref(),
        Some("succeeded")
    );
    assert_eq!(pairs(&pool).await, vec![pair(inv, po)]);
    assert!(slack_bodies(&slack).await.is_empty());
}

// --- message bodies that are not ids ----------------------------------------------------------

/// An empty body, a missing body, 1 MiB of text and JSON that carries an id are poison for
/// every function: deleted (not retried, not sent to the DLQ), nothing in the database
/// touched, and the log names the body cut to 100 characters.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn empty_missing_huge_and_json_bodies_are_discarded_by_every_function(pool: PgPool) {
    let h = harness(pool.clone(), Ocr::Native).await;
    let slack = slack_server().await;
    let matching_deps = deps(&pool, None, slack_notifier(&slack)).await;
    let output = docflow_tests::output::setup(pool.clone()).await;
    // Real work each function could be tricked into touching.
    let ingestion_id = Uuid::new_v4();
    h.seed(ingestion_id, "pdf", Some(text_pdf(&[&["Rechnung"]])))
        .await;
    let t = tenant(&pool, "Acme AG").await;
    let document_id = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-1", "PO-1", "LS-1", "2024-03-05", 119.0),
    )
    .await;

    let huge = "x".repeat(1024 * 1024);
    let bodies: Vec<(&str, Option<String>)> = vec![
        ("empty", Some(String::new())),
        ("whitespace", Some(" \n\t ".into())),
        ("missing", None),
        ("1 MiB", Some(huge.clone())),
        (
            "JSON with an id",
            Some(format!(r#"{{"ingestion_id": "{ingestion_id}"}}"#)),
        ),
        (
            "JSON with an id",
            Some(format!(r#"{{"document_id": "{document_id}"}}"#)),
        ),
        ("JSON number", Some("42".into())),
    ];
    let logs = Logs::default();
    let _guard = logs.capture();
    for (what, body) in &bodies {
        let body = body.as_deref();
        let ingestion = ingestion::handler(
            &h.deps,
            lambda_event(event_with_body(INGESTION_VALID, body, 1), None),
        )
        .await
        .unwrap();
        let matching = matching::handler(
            &matching_deps,
            lambda_event(event_with_body(MATCHING_VALID, body, 1), None),
        )
        .await
        .unwrap();
        let output = output.invoke(event_with_body(OUTPUT_VALID, body, 1)).await;
        for (function, response) in [
            ("ingestion", ingestion),
            ("matching", matching),
            ("document-output", output),
        ] {
            assert!(
                response.batch_item_failures.is_empty(),
                "{function} keeps a {what} body"
            );
        }
    }

    let row = h.ingestion(ingestion_id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 0));
    let s = state(&pool, document_id).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.matching_attempts),
        (Some("pending"), 0)
    );
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM document_output_job")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0);
    assert!(h.llm.received_requests().await.unwrap().is_empty());
    assert!(slack_bodies(&slack).await.is_empty());

    let text = logs.text();
    let discarded = text
        .lines()
        .filter(|l| l.contains("record discarded"))
        .count();
    assert_eq!(discarded, 3 * bodies.len(), "each one logged as discarded");
    assert!(
        !text.contains(&"x".repeat(101)),
        "the 1 MiB body is cut in the log"
    );
    assert!(
        text.lines().all(|l| l.len() < 4096),
        "no log line carries the body"
    );
}
