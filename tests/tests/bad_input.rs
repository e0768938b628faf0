//! Bad input, end to end: the rows of docs/reliability.md's table that no other test file
//! proves. Real Postgres, S3 and SQS on the local emulator, wiremock for the LLM, Textract
//! and Slack, each function driven through its Lambda handler.

#[path = "it/matching_support/mod.rs"]
mod matching_support;

use aws_lambda_events::event::sqs::SqsEvent;
use docflow::matching::DocumentType;
use docflow_tests::ingestion_harness::*;
use docflow_tests::lambda_event;
use docflow_tests::llm::anthropic_text;
use docflow_tests::logs::Logs;
use docflow_tests::pdf::text_pdf;
use matching_support::*;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::Mock;
use wiremock::matchers::{method, path};

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

// --- stored data that is not an extraction ---------------------------------------------

/// Data that does not read as an `Extraction`: an amount written as text with a decimal
/// comma, as a hand-made import might store it.
fn unreadable_data() -> serde_json::Value {
    serde_json::json!({
        "schema_version": 2, "extraction_successful": true, "confidence": "high",
        "document_type": "invoice", "invoice_number": "RE-1", "total": "119,00"
    })
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_whose_data_is_not_an_extraction_fails_matching_visibly_and_once(pool: PgPool) {
    let slack = slack_server().await;
    let deps = deps(&pool, None, slack_notifier(&slack)).await;
    let t = tenant(&pool, "Acme AG").await;
    let broken = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-1", "PO-1", "LS-1", "2024-03-05", 119.0),
    )
    .await;
    sqlx::query("UPDATE document SET structured_data = $2 WHERE id = $1")
        .bind(broken)
        .bind(unreadable_data())
        .execute(&pool)
        .await
        .unwrap();

    let event = event_with_body(MATCHING_VALID, Some(&broken.to_string()), 1);
    let response = matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();

    assert!(
        response.batch_item_failures.is_empty(),
        "decided at once: the same data will not read by retrying"
    );
    let s = state(&pool, broken).await;
    assert_eq!(s.matching_status.as_deref(), Some("failed"));
    assert!(s.failed && s.notified, "{s:?}");
    let error = s.matching_error.unwrap();
    assert!(
        error.contains("not an extraction") && error.contains("invalid type"),
        "the reason is recorded: {error}"
    );
    let notices = slack_bodies(&slack).await;
    assert_eq!(notices.len(), 1, "admins told once");
    assert!(
        notices[0].to_string().contains(&broken.to_string()),
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
    assert_eq!(state(&pool, broken).await.matching_attempts, 1);
    assert_eq!(slack_bodies(&slack).await.len(), 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_candidate_whose_data_is_not_an_extraction_is_left_out_and_the_match_goes_on(
    pool: PgPool,
) {
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
    let broken = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    sqlx::query("UPDATE document SET structured_data = $2 WHERE id = $1")
        .bind(broken)
        .bind(unreadable_data())
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
    let logs = Logs::default();
    let _guard = logs.capture_json("info");

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
    let text = logs.text();
    assert!(
        text.contains("cannot be read") && text.contains(&broken.to_string()),
        "the candidate left out is named: {text}"
    );
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
    let _guard = logs.capture_json("info");
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

// --- files that are not what they claim, or cannot be read -------------------------------

const DETECT: &str = "Textract.DetectDocumentText";
const START: &str = "Textract.StartDocumentTextDetection";

fn textract_call(target: &'static str) -> wiremock::MockBuilder {
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::header("x-amz-target", target))
}

fn tiny_png() -> Vec<u8> {
    let img = image::GrayImage::from_fn(16, 16, |x, y| image::Luma([(x * 8 + y) as u8]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A PNG whose header declares `width` x `height` pixels of `color` (PNG color type) at
/// `depth` bits, followed by a few bytes of data: a decompression bomb's promise without
/// its payload. What a decoder would allocate for is the header's size.
fn png_declaring(width: u32, height: u32, color: u8, depth: u8) -> Vec<u8> {
    use docflow_tests::pdf::png_chunk as chunk;
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([depth, color, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    // A deflate stream of zeros: tiny, inflating to as much as asked.
    chunk(
        &mut out,
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    chunk(&mut out, b"IEND", &[]);
    out
}

/// A line of this process's `/proc/self/status` in MiB (Linux): `VmRSS` (resident now)
/// or `VmHWM` (the peak since the process started, or since [`reset_peak`]).
fn status_mib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Starts a new peak (`VmHWM` := `VmRSS`, Linux's `clear_refs` 5), so that the peak read
/// afterwards is the work under test's, not the harness's set-up or an earlier test's,
/// and returns the resident memory it starts from.
fn reset_peak() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset this process's peak RSS");
    status_mib("VmRSS:")
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn decompression_bomb_images_are_refused_before_decoding_and_fail_permanently(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    // Textract reads each poorly, so ingestion preprocesses (decodes) it.
    textract_call(DETECT)
        .respond_with(textract_ok(&["Rechnunq"], 30.0))
        .mount(&textract)
        .await;
    let bombs = [
        // 100,000 x 100,000 gray: 10 GB decoded, past the side limit.
        ("side", png_declaring(100_000, 100_000, 0, 8)),
        // 11,000 x 11,000 RGBA at 16 bits: within the side limit, ~970 MB decoded.
        ("memory", png_declaring(11_000, 11_000, 6, 16)),
    ];
    let before = reset_peak();
    for (what, bomb) in bombs {
        assert!(bomb.len() < 100, "{what}: the file itself is tiny");
        let id = Uuid::new_v4();
        h.seed(id, "png", Some(bomb)).await;

        let (_, response) = h.deliver(id).await;

        assert!(response.batch_item_failures.is_empty(), "{what}");
        let row = h.ingestion(id).await;
        assert_eq!(
            (row.status.as_str(), row.attempt_count),
            ("failed", 1),
            "{what}: permanent"
        );
        let error = row.last_error.unwrap();
        assert!(error.contains("too large"), "{what}: {error}");
        assert!(
            !h.object_exists(&format!("ingestions/{id}/preprocessed.png"))
                .await
        );
    }
    let peak = status_mib("VmHWM:");
    assert!(
        peak < before + 200,
        "decoding was refused before allocating: peak {peak} MiB, from {before} MiB"
    );
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

/// One batch, as Lambda delivers it: a PDF whose content stream is a flate bomb
/// (128 MiB of zeros in 0.85 MB), a 6000 x 6000 RGB scan that reads poorly (so it is
/// decoded and enhanced: 108 MB decoded, enhanced at 16 Mpx), and two ordinary invoices.
/// The bomb fails alone, permanently, saying why; the big scan is preprocessed within
/// the memory budget; the invoices are read. Nothing takes the batch down.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn hostile_images_and_pdfs_in_a_batch_cost_only_their_own_records(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    textract_call(DETECT)
        .respond_with(textract_ok(&["Rechnunq"], 30.0))
        .mount(&textract)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;
    let bomb_pdf = docflow_tests::pdf::flate_bomb_pdf(128 << 20);
    assert!(bomb_pdf.len() < 1_000_000, "{} bytes", bomb_pdf.len());
    let big_scan = docflow_tests::pdf::black_png(6_000, 6_000, true);
    let invoice = text_pdf(&[&[
        "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
        "Rechnung Nr. RE-2014-0815",
        "Gesamtbetrag: 119,00 €",
    ]]);
    let (bomb, scan, first, second) = (
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
    );
    h.seed(bomb, "pdf", Some(bomb_pdf)).await;
    h.seed(scan, "png", Some(big_scan)).await;
    h.seed(first, "pdf", Some(invoice.clone())).await;
    h.seed(second, "pdf", Some(invoice)).await;
    for id in [first, bomb, scan, second] {
        docflow_tests::send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;
    }

    let esm = h.mapping().await;
    let event = docflow_tests::poll_n(&esm, 4).await;
    let (_, response) = h.invoke(&esm, event, None).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "nothing left to retry: {:?}",
        response.batch_item_failures
    );
    let row = h.ingestion(bomb).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
    let error = row.last_error.unwrap();
    assert!(
        error.contains("too large") && error.contains("inflate"),
        "{error}"
    );
    let row = h.ingestion(scan).await;
    assert_ne!(row.status, "failed", "{:?}", row.last_error);
    assert!(
        h.object_exists(&format!("ingestions/{scan}/preprocessed.png"))
            .await
            || h.object_exists(&format!("ingestions/{scan}/preprocessed.jpg"))
                .await,
        "the big scan was enhanced within the budget"
    );
    for id in [first, second] {
        assert_eq!(h.ingestion(id).await.status, "completed");
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_file_whose_content_is_not_its_type_fails_permanently_without_the_llm(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    // Textract refuses what it cannot read, as it answers for a format it does not know:
    // the "PNG" that is a PDF (read synchronously), the "PDF" that is a PNG (unreadable
    // for the text-layer parser, so the whole document goes to the asynchronous job).
    for target in [DETECT, START] {
        textract_call(target)
            .respond_with(textract_error(
                400,
                "UnsupportedDocumentException",
                "Request has unsupported document format",
            ))
            .mount(&textract)
            .await;
    }
    let png_named_pdf = Uuid::new_v4();
    h.seed(png_named_pdf, "pdf", Some(tiny_png())).await;
    let pdf_named_png = Uuid::new_v4();
    h.seed(
        pdf_named_png,
        "png",
        Some(text_pdf(&[&["Rechnung Nr. RE-1"]])),
    )
    .await;

    for (id, expected) in [
        (png_named_pdf, "UnsupportedDocument"),
        (pdf_named_png, "UnsupportedDocument"),
    ] {
        let (_, response) = h.deliver(id).await;
        let row = h.ingestion(id).await;
        assert!(response.batch_item_failures.is_empty(), "{row:?}");
        assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
        let error = row.last_error.unwrap();
        assert!(error.contains(expected), "{error}");
    }
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_png_named_pdf_without_ocr_fails_permanently_as_an_unreadable_pdf(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(tiny_png())).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
    let error = row.last_error.unwrap();
    assert!(error.contains("PDF could not be read"), "{error}");
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

/// `pdf` encrypted with a user password (RC4, 128-bit), as a protected PDF arrives.
fn encrypted(pdf: &[u8], user_password: &str) -> Vec<u8> {
    use pdf_extract::encryption::{EncryptionState, EncryptionVersion, Permissions};
    let mut doc = pdf_extract::Document::load_mem(pdf).unwrap();
    doc.trailer.set(
        "ID",
        pdf_extract::Object::Array(vec![
            pdf_extract::Object::string_literal(b"0123456789abcdef".to_vec()),
            pdf_extract::Object::string_literal(b"0123456789abcdef".to_vec()),
        ]),
    );
    let state = EncryptionState::try_from(EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password,
        key_length: 128,
        permissions: Permissions::all(),
    })
    .unwrap();
    doc.encrypt(&state).unwrap();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_password_protected_pdf_fails_permanently_saying_so_and_one_without_a_password_is_read(
    pool: PgPool,
) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&invoice_json().to_string()))
        .mount(&h.llm)
        .await;
    let invoice = text_pdf(&[&[
        "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
        "Rechnung Nr. RE-2014-0815",
        "Rechnungsdatum: 07.05.2014",
        "Gesamtbetrag: 119,00 €",
    ]]);
    let protected = Uuid::new_v4();
    h.seed(protected, "pdf", Some(encrypted(&invoice, "secret")))
        .await;
    let open = Uuid::new_v4();
    h.seed(open, "pdf", Some(encrypted(&invoice, ""))).await;

    let (_, response) = h.deliver(protected).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(protected).await;
    assert_eq!(
        (row.status.as_str(), row.attempt_count),
        ("failed", 1),
        "no retry can open it"
    );
    let error = row.last_error.unwrap();
    assert!(error.contains("encrypted with a password"), "{error}");
    assert!(
        textract.received_requests().await.unwrap().is_empty(),
        "no OCR paid for a file no one can open"
    );
    assert!(h.llm.received_requests().await.unwrap().is_empty());

    // Encrypted without a user password (only "owner" restrictions): opens and is read.
    let (_, response) = h.deliver(open).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(open).await.status, "completed");
    let requests = h.llm.received_requests().await.unwrap();
    assert!(
        String::from_utf8_lossy(&requests[0].body).contains("RE-2014-0815"),
        "the text layer was decrypted and read"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_pdf_without_a_text_layer_and_no_ocr_engine_fails_permanently_saying_why(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let scan = Uuid::new_v4();
    h.seed(
        scan,
        "pdf",
        Some(docflow_tests::scan::pdf(&[docflow_tests::scan::scanned(
            docflow_tests::scan::faint_scan(200, 280),
        )])),
    )
    .await;
    let blank = Uuid::new_v4();
    h.seed(blank, "pdf", Some(text_pdf(&[&[]]))).await;

    for id in [scan, blank] {
        let (_, response) = h.deliver(id).await;
        assert!(response.batch_item_failures.is_empty());
        let row = h.ingestion(id).await;
        assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
        let error = row.last_error.unwrap();
        assert!(
            error.contains("no page has a text layer") && error.contains("OCR_PROVIDER=textract"),
            "{error}"
        );
    }
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

// --- Maesn answers that are not what its API documents --------------------------------------

/// A 200 from Maesn whose body is not the documented answer (no `taskId`, not the
/// envelope, not JSON): Maesn may have booked it, so the job fails as in doubt after one
/// POST, blocks a blind re-export and tells the admins — never a retry that could book
/// twice, never `dispatched` without a task.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_malformed_maesn_answer_fails_the_export_in_doubt_after_one_post(pool: PgPool) {
    for body in [
        r#"{"meta": {}, "data": {}}"#,
        r#"{"taskId": "t-1"}"#,
        "<html>Bad gateway</html>",
    ] {
        let env = docflow_tests::output::setup(pool.clone()).await;
        Mock::given(method("POST"))
            .and(path("/accounting/bookingProposals/async"))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_string(body))
            .mount(&env.maesn)
            .await;
        env.approve(env.tenant.document_id).await;
        let job_id = docflow::output::request_manual_export(
            &env.pool,
            &env.dispatcher,
            docflow::ids::DocumentId(env.tenant.document_id),
            env.tenant.approver_id,
        )
        .await
        .unwrap()
        .job
        .id
        .0;

        let (_, response, _) = env.deliver(1).await;

        assert!(response.batch_item_failures.is_empty(), "{body}: Done");
        assert_eq!(
            env.maesn_requests("POST", "/accounting/bookingProposals/async")
                .await
                .len(),
            1,
            "{body}: one POST"
        );
        let job = env.job(job_id).await;
        assert_eq!(job.status, "failed", "{body}");
        let error = job.last_error.unwrap();
        assert!(
            error.contains("in doubt") && error.contains("not what its API documents"),
            "{body}: {error}"
        );
        let notices = env.notices().await;
        assert_eq!(notices.len(), 1, "{body}");
    }
}
