//! Ingestion's transcription as seed 003's provider does it: the PDF text layer first,
//! OCR only for pages without text, images always OCR, multi-page scans through
//! Textract's asynchronous API (resumed by a retry), one preprocessing pass for a poor
//! scan. Textract is a local server speaking its JSON protocol (`x-amz-target`), errors
//! and job states included; S3, SQS and Postgres are real.

use std::time::{Duration, Instant};

use docflow::telemetry::metrics::{self, dimension};
use docflow_tests::ingestion_harness::*;
use docflow_tests::llm::anthropic_error;
use docflow_tests::scan::{self, digital, faint_scan, scanned};
use docflow_tests::send;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request};

const DETECT: &str = "Textract.DetectDocumentText";
const START: &str = "Textract.StartDocumentTextDetection";
const GET: &str = "Textract.GetDocumentTextDetection";

fn textract_call(target: &'static str) -> wiremock::MockBuilder {
    Mock::given(method("POST")).and(header("x-amz-target", target))
}

/// The JSON bodies of the requests made to Textract with `target`.
async fn bodies(textract: &MockServer, target: &str) -> Vec<Value> {
    textract
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r: &&Request| {
            r.headers
                .get("x-amz-target")
                .is_some_and(|t| t.to_str().unwrap_or_default() == target)
        })
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// The document text the LLM was given (its first request).
async fn prompt(h: &Harness) -> String {
    let requests = h.llm.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    body["messages"][0]["content"].as_str().unwrap().to_owned()
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

/// The gray range of the first JPEG page image in a PDF (from its SOI marker on; the
/// decoder stops at the image's end).
fn first_page_image_range(pdf: &[u8]) -> (u8, u8) {
    let soi = pdf
        .windows(3)
        .position(|w| w == [0xff, 0xd8, 0xff])
        .expect("a JPEG image in the PDF");
    let image = image::load_from_memory_with_format(&pdf[soi..], image::ImageFormat::Jpeg)
        .expect("the page image decodes")
        .to_luma8();
    image
        .pixels()
        .fold((255u8, 0u8), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])))
}

// --- images -------------------------------------------------------------------------

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_stored_transcription_is_reused_on_retry_so_ocr_runs_once(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "png", Some(tiny_png(200))).await;
    textract_call(DETECT)
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
    llm_answers_with_an_invoice(&h).await;

    let (_, first) = h.deliver(id).await;
    let answered = Instant::now();
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
    // The real redelivery, after the 30 s backoff (the queue alone would hide it 600 s).
    h.assert_reappears_after(Duration::from_secs(30), answered)
        .await;
    let (_, second) = h.deliver_next().await;

    assert!(second.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    assert_eq!(h.llm.received_requests().await.unwrap().len(), 4);
    // Textract read the image from S3 (no bytes through the function), once: `expect(1)`
    // is verified when the mock server drops.
    let detect = bodies(&textract, DETECT).await;
    assert_eq!(
        detect[0]["Document"]["S3Object"],
        json!({"Bucket": h.bucket, "Name": format!("documents/{document_id}.png")})
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn low_quality_triggers_exactly_one_preprocessing_pass(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let original = tiny_png(180);
    h.seed(id, "png", Some(original.clone())).await;
    // Both the original and the preprocessed image read poorly.
    textract_call(DETECT)
        .respond_with(textract_ok(
            &["Rechnunq Nr RE-1", "Gesamtbetraq 119,00"],
            41.0,
        ))
        .expect(2)
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

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
    let detect = bodies(&textract, DETECT).await;
    assert_eq!(
        detect[1]["Document"]["S3Object"]["Name"], preprocessed,
        "the second reading is of the preprocessed image"
    );
    let stored = h
        .object(&preprocessed)
        .await
        .expect("preprocessed image stored");
    assert_ne!(stored, original, "preprocessing changed the image");
    let gray = image::load_from_memory(&stored).unwrap().to_luma8();
    let (lo, hi) = gray
        .pixels()
        .fold((255u8, 0u8), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])));
    assert!(
        lo <= 10 && hi >= 245,
        "contrast stretched from 90..180 to {lo}..{hi}"
    );
    let emf = h.emf();
    let function = [(dimension::FUNCTION, ingestion::FUNCTION)];
    assert_eq!(
        emf.sum(metrics::ingestion::PREPROCESSING_PASSES.name, &function),
        1.0
    );
    let textract = [
        (dimension::FUNCTION, ingestion::FUNCTION),
        (dimension::PROVIDER, "textract"),
    ];
    assert_eq!(
        emf.sum(metrics::ingestion::OCR_PAGES.name, &textract),
        1.0,
        "the page is counted once, under the provider that read it"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_preprocessed_image_textract_refuses_keeps_the_first_reading(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "png", Some(tiny_png(180))).await;
    let original = format!("documents/{document_id}.png");
    // The original reads poorly; the preprocessed image is refused (its size, say).
    textract_call(DETECT)
        .and(body_partial_json(
            json!({"Document": {"S3Object": {"Name": original}}}),
        ))
        .respond_with(textract_ok(
            &["Rechnunq Nr RE-1", "Gesamtbetraq 119,00"],
            41.0,
        ))
        .expect(1)
        .mount(&textract)
        .await;
    textract_call(DETECT)
        .and(body_partial_json(json!({"Document": {"S3Object": {
            "Name": format!("ingestions/{id}/preprocessed.png")
        }}})))
        .respond_with(textract_error(
            400,
            "DocumentTooLargeException",
            "Document size exceeds the maximum allowed size",
        ))
        .expect(1)
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "read once already: not failed");
    assert_eq!(
        row.preprocessed_file_path, None,
        "the first reading was kept"
    );
    assert!(
        prompt(&h).await.contains("Rechnunq Nr RE-1"),
        "the LLM got the first reading"
    );
}

/// A PNG of `width` x `height` gray pixels with a faint pattern (a few KB when long and
/// thin).
fn png_of(width: u32, height: u32) -> Vec<u8> {
    let mut img = image::GrayImage::new(width, height);
    for (x, y, p) in img.enumerate_pixels_mut() {
        p.0[0] = if (x / 7 + y) % 5 == 0 { 90 } else { 180 };
    }
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// Textract refuses an image over 10,000 px on a side (its stand-in too, as AWS
/// documents it): such an image is scaled down before its first reading, so the one
/// `DetectDocumentText` paid for reads the preprocessed image and nothing is refused.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_image_over_textracts_side_limit_is_scaled_down_before_its_first_reading(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(id, "png", Some(png_of(10_240, 48))).await;
    textract_call(DETECT)
        .respond_with(textract_ok(
            &["Rechnung Nr RE-1", "Gesamtbetrag 119,00"],
            97.0,
        ))
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    let preprocessed = format!("ingestions/{id}/preprocessed.png");
    let detect = bodies(&textract, DETECT).await;
    let read: Vec<&Value> = detect
        .iter()
        .map(|body| &body["Document"]["S3Object"]["Name"])
        .collect();
    assert_eq!(
        read,
        [&json!(preprocessed)],
        "one reading, of the scaled image, and none of the original Textract refuses"
    );
    let stored = h
        .object(&preprocessed)
        .await
        .expect("the scaled image stored");
    let (width, height) = image::load_from_memory(&stored)
        .unwrap()
        .to_luma8()
        .dimensions();
    assert!(width <= 10_000 && height <= 10_000, "{width} x {height}");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_image_without_an_ocr_engine_fails_permanently_saying_what_is_missing(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    h.seed(id, "jpg", Some(tiny_png(200))).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("failed", 1));
    let error = row.last_error.unwrap();
    assert!(error.contains("OCR_PROVIDER=textract"), "{error}");
}

// --- PDFs: the text layer first -----------------------------------------------------

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_text_pdf_is_read_from_its_text_layer_without_ocr(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(id, "pdf", Some(invoice_pdf())).await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    assert!(
        textract.received_requests().await.unwrap().is_empty(),
        "no OCR paid for a document that has its text"
    );
    assert!(prompt(&h).await.contains("Muster Bürobedarf GmbH"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_single_page_scan_is_read_synchronously_from_s3(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let document_id = h
        .seed(id, "pdf", Some(scan::pdf(&[scanned(faint_scan(60, 80))])))
        .await;
    textract_call(DETECT)
        .respond_with(textract_ok(
            &["Rechnung Nr. RE-7", "Summe 119,00 EUR"],
            97.0,
        ))
        .expect(1)
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    assert_eq!(
        bodies(&textract, DETECT).await[0]["Document"]["S3Object"]["Name"],
        format!("documents/{document_id}.pdf")
    );
    assert!(prompt(&h).await.contains("Rechnung Nr. RE-7"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_multi_page_scan_is_read_by_an_asynchronous_textract_job(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let document_id = h
        .seed(
            id,
            "pdf",
            Some(scan::pdf(&[
                scanned(faint_scan(60, 80)),
                scanned(faint_scan(60, 80)),
            ])),
        )
        .await;
    textract_call(START)
        .respond_with(textract_started("job-1"))
        .expect(1)
        .mount(&textract)
        .await;
    // Still running at the first poll; then two pages of results.
    textract_call(GET)
        .and(body_partial_json(
            json!({"JobId": "job-1", "NextToken": "page-2"}),
        ))
        .respond_with(textract_succeeded(
            2,
            &[(2, "Gesamtbetrag 119,00 EUR")],
            96.0,
            None,
        ))
        .with_priority(1)
        .mount(&textract)
        .await;
    textract_call(GET)
        .respond_with(textract_in_progress())
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&textract)
        .await;
    textract_call(GET)
        .and(body_partial_json(json!({"JobId": "job-1"})))
        .respond_with(textract_succeeded(
            2,
            &[(1, "Muster GmbH"), (1, "Rechnung Nr. RE-2014-0815")],
            98.0,
            Some("page-2"),
        ))
        .with_priority(3)
        .mount(&textract)
        .await;
    textract_call(DETECT)
        .respond_with(textract_error(
            400,
            "UnsupportedDocumentException",
            "Request has unsupported document format",
        ))
        .expect(0)
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.transcription_page_count, Some(2));
    let start = &bodies(&textract, START).await[0];
    assert_eq!(
        start["DocumentLocation"]["S3Object"],
        json!({"Bucket": h.bucket, "Name": format!("documents/{document_id}.pdf")})
    );
    assert!(start["ClientRequestToken"].is_string());
    let text = prompt(&h).await;
    assert!(text.contains("Rechnung Nr. RE-2014-0815"), "{text}");
    assert!(text.contains("Gesamtbetrag 119,00 EUR"), "{text}");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn only_the_pages_without_a_text_layer_take_their_text_from_ocr(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(
        id,
        "pdf",
        Some(scan::pdf(&[
            digital(&["Rechnung Nr. RE-2014-0815 vom 07.05.2014", "Muster GmbH"]),
            scanned(faint_scan(60, 80)),
        ])),
    )
    .await;
    textract_call(START)
        .respond_with(textract_started("job-mixed"))
        .expect(1)
        .mount(&textract)
        .await;
    // Textract reads every page; page 1 has a better text layer of its own.
    textract_call(GET)
        .respond_with(textract_succeeded(
            2,
            &[
                (1, "Rechnunq Nr RE-2Ol4-O8l5"),
                (2, "Lieferschein LS-88412 Menge 10"),
            ],
            90.0,
            None,
        ))
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    let text = prompt(&h).await;
    assert!(text.contains("Rechnung Nr. RE-2014-0815"), "{text}");
    assert!(text.contains("Lieferschein LS-88412"), "{text}");
    assert!(
        !text.contains("RE-2Ol4"),
        "page 1 kept its text layer: {text}"
    );
    // Page 1 from its text layer (1.0), page 2 from OCR (0.9).
    let quality = row.transcription_quality_score.unwrap();
    assert!((quality - 0.95).abs() < 1e-9, "{quality}");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_scan_still_running_when_time_runs_out_is_resumed_by_the_next_attempt(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let document_id = h
        .seed(
            id,
            "pdf",
            Some(scan::pdf(&[
                scanned(faint_scan(60, 80)),
                scanned(faint_scan(60, 80)),
            ])),
        )
        .await;
    textract_call(START)
        .respond_with(textract_started("job-slow"))
        .mount(&textract)
        .await;
    textract_call(GET)
        .respond_with(textract_in_progress())
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;

    // 8 s to the deadline: 2 s margin and the 5 s failure reserve leave 1 s of polling.
    let (_, first) = h.deliver_next_within(Some(Duration::from_secs(8))).await;

    assert_eq!(first.batch_item_failures.len(), 1);
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("ran out of time"));
    let jobs: Value = sqlx::query_scalar("SELECT ocr_jobs FROM ingestion WHERE id = $1")
        .bind(id)
        .fetch_one(&h.pool)
        .await
        .unwrap();
    assert_eq!(
        jobs,
        json!({format!("documents/{document_id}.pdf"): "job-slow"})
    );
    assert_eq!(bodies(&textract, START).await.len(), 1);

    // The job finishes; the retry polls it instead of starting (and paying for) another.
    textract.reset().await;
    textract_call(START)
        .respond_with(textract_started("job-second"))
        .expect(0)
        .mount(&textract)
        .await;
    textract_call(GET)
        .and(body_partial_json(json!({"JobId": "job-slow"})))
        .respond_with(textract_succeeded(
            2,
            &[(1, "Rechnung Nr. RE-2014-0815"), (2, "Summe 119,00 EUR")],
            97.0,
            None,
        ))
        .expect(1)
        .mount(&textract)
        .await;
    let (_, second) = h.deliver(id).await;

    assert!(second.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_textract_job_is_forgotten_and_the_next_attempt_starts_a_new_one(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(
        id,
        "pdf",
        Some(scan::pdf(&[
            scanned(faint_scan(60, 80)),
            scanned(faint_scan(60, 80)),
        ])),
    )
    .await;
    textract_call(START)
        .respond_with(textract_started("job-a"))
        .up_to_n_times(1)
        .mount(&textract)
        .await;
    textract_call(START)
        .respond_with(textract_started("job-b"))
        .mount(&textract)
        .await;
    textract_call(GET)
        .and(body_partial_json(json!({"JobId": "job-a"})))
        .respond_with(
            wiremock::ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.1")
                .set_body_json(json!({"JobStatus": "FAILED", "StatusMessage": "Internal failure"})),
        )
        .mount(&textract)
        .await;
    textract_call(GET)
        .and(body_partial_json(json!({"JobId": "job-b"})))
        .respond_with(textract_succeeded(
            2,
            &[(1, "Rechnung Nr. RE-2014-0815"), (2, "Summe 119,00 EUR")],
            97.0,
            None,
        ))
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, first) = h.deliver(id).await;

    assert_eq!(first.batch_item_failures.len(), 1, "transient: retried");
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert!(row.last_error.unwrap().contains("Internal failure"));
    let jobs: Value = sqlx::query_scalar("SELECT ocr_jobs FROM ingestion WHERE id = $1")
        .bind(id)
        .fetch_one(&h.pool)
        .await
        .unwrap();
    assert_eq!(jobs, json!({}), "the failed job is forgotten");

    let (_, second) = h.deliver(id).await;

    assert!(second.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    let starts = bodies(&textract, START).await;
    assert_eq!(starts.len(), 2);
    assert_ne!(
        starts[0]["ClientRequestToken"], starts[1]["ClientRequestToken"],
        "a new token, or Textract would return the failed job again"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_poor_multi_page_scan_is_preprocessed_once_and_read_again(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let original = scan::pdf(&[scanned(faint_scan(60, 80)), scanned(faint_scan(60, 80))]);
    let document_id = h.seed(id, "pdf", Some(original.clone())).await;
    let preprocessed = format!("ingestions/{id}/preprocessed.pdf");
    textract_call(START)
        .and(body_partial_json(json!({"DocumentLocation": {"S3Object": {"Name": format!("documents/{document_id}.pdf")}}})))
        .respond_with(textract_started("job-original"))
        .expect(1)
        .mount(&textract)
        .await;
    textract_call(START)
        .and(body_partial_json(
            json!({"DocumentLocation": {"S3Object": {"Name": preprocessed}}}),
        ))
        .respond_with(textract_started("job-preprocessed"))
        .expect(1)
        .mount(&textract)
        .await;
    textract_call(GET)
        .and(body_partial_json(json!({"JobId": "job-original"})))
        .respond_with(textract_succeeded(
            2,
            &[(1, "Rechnunq Nr RE-2Ol4"), (2, "Summe ll9,OO")],
            35.0,
            None,
        ))
        .mount(&textract)
        .await;
    textract_call(GET)
        .and(body_partial_json(json!({"JobId": "job-preprocessed"})))
        .respond_with(textract_succeeded(
            2,
            &[(1, "Rechnung Nr. RE-2014-0815"), (2, "Summe 119,00 EUR")],
            94.0,
            None,
        ))
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(
        row.preprocessed_file_path.as_deref(),
        Some(preprocessed.as_str())
    );
    assert_eq!(row.transcription_quality_score, Some(0.94));
    let stored = h
        .object(&preprocessed)
        .await
        .expect("preprocessed PDF stored");
    assert!(stored.starts_with(b"%PDF"));
    let (lo, hi) = first_page_image_range(&stored);
    assert!(
        lo <= 10 && hi >= 245,
        "the page images were enhanced: stretched to {lo}..{hi}"
    );
    let (lo, hi) = first_page_image_range(&original);
    assert!(lo >= 150 && hi <= 230, "the original is faint: {lo}..{hi}");
    assert!(prompt(&h).await.contains("Rechnung Nr. RE-2014-0815"));
}

/// Timeline: A claims at t=0 and is paused past the 300 s stale threshold; B claims the
/// stale lease. A wakes and goes on: Textract reads the image for it, but A stores
/// nothing — its transcription would overwrite the one B stores, or reads on a retry.
/// B's attempt stores its own and completes.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_worker_that_lost_its_lease_stores_no_file_under_the_new_holders_claim(pool: PgPool) {
    use docflow::ids::IngestionId;
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    h.seed(id, "png", Some(tiny_png(200))).await;
    textract_call(DETECT)
        .respond_with(textract_ok(
            &["Rechnung Nr. RE-1", "Gesamtbetrag 119,00 EUR"],
            98.5,
        ))
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;
    let stale = Duration::from_secs(300);
    let a = ingestion::claim(&h.pool, IngestionId(id), stale)
        .await
        .unwrap()
        .expect("A claims the new ingestion");
    sqlx::query("UPDATE ingestion SET started_at = now() - interval '6 minutes' WHERE id = $1")
        .bind(id)
        .execute(&h.pool)
        .await
        .unwrap();
    let b = ingestion::claim(&h.pool, IngestionId(id), stale)
        .await
        .unwrap()
        .expect("B claims the stale lease");
    let key = format!("ingestions/{id}/transcription-output.json");

    let a_run = ingestion::run_claimed(&h.deps, &a).await;

    let error = a_run
        .expect_err("A's attempt went on under B's claim")
        .to_string();
    assert!(error.contains("lease is no longer ours"), "{error}");
    assert!(
        !h.object_exists(&key).await,
        "A stored its transcription under B's claim"
    );
    ingestion::run_claimed(&h.deps, &b).await.unwrap();
    assert_eq!(h.ingestion(id).await.status, "completed");
    assert!(h.object_exists(&key).await, "B's transcription is stored");
}

/// A PDF whose structure no parser here can read: its text layer is unreadable, so
/// Textract reads the whole document (poorly). Preprocessing then meets the same parse
/// error. The reading Textract gave stands: before, that error failed the document
/// permanently after the OCR was paid for.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_pdf_preprocessing_cannot_read_keeps_its_first_reading(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let broken = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
                   2 0 obj << /Kids [ 3 0 R\xff\xfe garbage without an end\n%%EOF\n"
        .to_vec();
    h.seed(id, "pdf", Some(broken)).await;
    textract_call(START)
        .respond_with(textract_started("job-broken"))
        .expect(1)
        .mount(&textract)
        .await;
    textract_call(GET)
        .respond_with(textract_succeeded(
            1,
            &[(1, "Rechnunq Nr RE-2Ol4"), (1, "Summe ll9,OO")],
            35.0,
            None,
        ))
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.preprocessed_file_path, None, "no preprocessed file");
    assert_eq!(row.transcription_quality_score, Some(0.35));
    assert!(prompt(&h).await.contains("Rechnunq Nr RE-2Ol4"));
}

/// The same for an image: Textract read a truncated PNG (poorly) that the decoder then
/// refuses. The reading stands.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_image_preprocessing_cannot_decode_keeps_its_first_reading(pool: PgPool) {
    let textract = textract_stand_in().await;
    let h = harness(pool, Ocr::Textract(textract.uri())).await;
    let id = Uuid::new_v4();
    let png = tiny_png(200);
    let truncated = png[..png.len() - 20].to_vec();
    h.seed(id, "png", Some(truncated)).await;
    textract_call(DETECT)
        .respond_with(textract_ok(&["Rechnunq Nr RE-2Ol4", "Summe ll9,OO"], 35.0))
        .expect(1)
        .mount(&textract)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.preprocessed_file_path, None);
    assert!(prompt(&h).await.contains("Rechnunq Nr RE-2Ol4"));
}
