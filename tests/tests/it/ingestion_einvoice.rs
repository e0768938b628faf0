//! Structured e-invoices through the ingestion function: an XRechnung XML
//! upload and a ZUGFeRD / Factur-X PDF are read from their XML before any transcription
//! or LLM; an XML upload that cannot be read fails permanently, one breaking a rule about
//! its money or parties is kept and sent to a person, one breaking only routing rules is
//! used with its warnings; a hybrid whose XML
//! is unusable falls back to the page path with the reason stored; a hybrid whose page
//! disagrees with its XML keeps the XML and is flagged and counted. Real Postgres, S3 and
//! SQS (the local emulator); the LLM is a local server that must not be called unless a
//! test says so. The fixtures and their licences: `tests/fixtures/einvoice/`.

use docflow::telemetry::metrics::{self as m, dimension};
use docflow_tests::ingestion_harness::*;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/einvoice")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const XRECHNUNG_UBL: &str = "xrechnung-01.01a-INVOICE_ubl.xml";
const ZUGFERD: &str = "zugferd-EN16931_Einfach.pdf";
const ZUGFERD_INVALID: &str = "zugferd-invalid-BR-49-MustangBeispiel20221026.pdf";
const ZUGFERD_DISAGREES: &str = "zugferd-page-disagrees-validXRechnung.pdf";

fn function() -> [(&'static str, &'static str); 1] {
    [(dimension::FUNCTION, ingestion::FUNCTION)]
}

/// Any LLM call answers 500, so a test that expects none also fails loudly if one is made.
async fn refuse_the_llm(h: &Harness) {
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&h.llm)
        .await;
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_xrechnung_xml_upload_is_read_exactly_without_transcription_or_llm(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    refuse_the_llm(&h).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "xml", Some(fixture(XRECHNUNG_UBL))).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.extraction_model.as_deref(), Some("einvoice"));
    assert_eq!(row.extraction_input_tokens, None);
    assert_eq!(row.transcription_file_path, None, "nothing was transcribed");
    assert_eq!(
        row.transcription_page_count, None,
        "nothing was transcribed"
    );
    let (data, review, matching, kind) = h.document(document_id).await;
    let data = data.unwrap();
    assert_eq!(data["invoice_number"], "123456XX");
    assert_eq!(data["invoice_date"], "2016-04-04");
    assert_eq!(data["total"], 336.9);
    assert_eq!(data["subtotal"], 314.86);
    assert_eq!(data["supplier_iban"], "DE79000000001234567890");
    assert_eq!(data["confidence"], "high");
    assert_eq!(data["einvoice"]["provider"], "einvoice");
    assert_eq!(data["einvoice"]["syntax"], "UBL 2.1");
    assert_eq!(data["einvoice"]["profile"], "XRechnung 3.0");
    assert_eq!(data["einvoice"]["type_code"], "380");
    assert_eq!(data["einvoice"]["buyer_reference"], "04011000-12345-03");
    assert!(data["einvoice"]["findings"].is_array());
    assert!(!review);
    assert_eq!(kind, "invoice");
    assert_eq!(matching.as_deref(), Some("pending"));
    assert_eq!(
        docflow_tests::visible_bodies(&h.sqs, &h.matching_queue.url).await,
        vec![document_id.to_string()]
    );
    assert!(h.llm.received_requests().await.unwrap().is_empty());
    let xml = [
        (dimension::FUNCTION, ingestion::FUNCTION),
        (dimension::KIND, "xml"),
    ];
    assert_eq!(h.emf().sum(m::ingestion::EINVOICES_READ.name, &xml), 1.0);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_xml_upload_that_cannot_be_read_fails_permanently_saying_why(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    refuse_the_llm(&h).await;
    let xxe = r#"<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY x SYSTEM "file:///etc/passwd">]><Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">&x;</Invoice>"#;
    let order = r#"<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"/>"#;
    let mut cases = Vec::new();
    for (body, expected) in [
        (xxe, "DTD"),
        (order, "not an EN 16931 invoice"),
        ("not xml", "unreadable"),
    ] {
        let id = Uuid::new_v4();
        h.seed(id, "xml", Some(body.as_bytes().to_vec())).await;
        cases.push((id, expected));
    }

    for (id, expected) in cases {
        let (_, response) = h.deliver(id).await;
        assert!(response.batch_item_failures.is_empty(), "{expected}");
        let row = h.ingestion(id).await;
        assert_eq!(
            (row.status.as_str(), row.attempt_count),
            ("failed", 1),
            "permanent at once: {expected}"
        );
        let error = row.last_error.unwrap();
        assert!(error.contains("XML upload"), "{error}");
        assert!(error.contains(expected), "{expected}: {error}");
    }
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

/// KoSIT 01.01a with `from` replaced by `to`.
fn xrechnung_with(from: &str, to: &str) -> Vec<u8> {
    let xml = String::from_utf8(fixture(XRECHNUNG_UBL)).unwrap();
    assert!(xml.contains(from), "{from}");
    xml.replace(from, to).into_bytes()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_xml_upload_breaking_a_rule_about_its_money_is_kept_and_sent_to_a_person(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    refuse_the_llm(&h).await;
    let id = Uuid::new_v4();
    // BR-CO-16: BT-115 1336.9 where BT-112 − BT-113 + BT-114 is 336.9.
    let xml = xrechnung_with(
        r#"<cbc:PayableAmount currencyID="EUR">336.9"#,
        r#"<cbc:PayableAmount currencyID="EUR">1336.9"#,
    );
    let document_id = h.seed(id, "xml", Some(xml)).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    let (data, review, matching, kind) = h.document(document_id).await;
    assert!(review, "a person looks at it");
    let data = data.unwrap();
    assert_eq!(data["invoice_number"], "123456XX", "what was read is kept");
    assert_eq!(data["total"], 336.9);
    let listed = data["einvoice"]["review"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|f| f.as_str().unwrap().starts_with("BR-CO-16")),
        "{listed:?}"
    );
    assert_eq!(kind, "invoice");
    assert_eq!(
        matching.as_deref(),
        Some("pending"),
        "matched like any invoice"
    );
    assert!(h.llm.received_requests().await.unwrap().is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_xml_upload_breaking_only_routing_rules_is_used_with_its_warnings(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    refuse_the_llm(&h).await;
    let id = Uuid::new_v4();
    // BR-DE-15: an XRechnung without its Leitweg-ID (BT-10).
    let xml = xrechnung_with(
        "<cbc:BuyerReference>04011000-12345-03</cbc:BuyerReference>",
        "",
    );
    let document_id = h.seed(id, "xml", Some(xml)).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
    let (data, review, _, _) = h.document(document_id).await;
    assert!(!review, "routing is no reason for a person to look");
    let data = data.unwrap();
    assert_eq!(data["total"], 336.9);
    let warnings = data["einvoice"]["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|f| f.as_str().unwrap().starts_with("BR-DE-15")),
        "{warnings:?}"
    );
    assert_eq!(data["einvoice"]["review"], Value::Array(vec![]));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_zugferd_pdf_is_read_from_its_embedded_xml_not_its_page(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    refuse_the_llm(&h).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(fixture(ZUGFERD))).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.extraction_model.as_deref(), Some("einvoice"));
    assert_eq!(row.transcription_file_path, None);
    let data = h.document(document_id).await.0.unwrap();
    assert_eq!(data["invoice_number"], "471102");
    assert_eq!(data["total"], 529.87);
    assert_eq!(data["supplier_name"], "Lieferant GmbH");
    assert_eq!(data["einvoice"]["attachment"], "factur-x.xml");
    assert_eq!(data["einvoice"]["syntax"], "UN/CEFACT CII D16B");
    assert_eq!(data["einvoice"]["disagreements"], Value::Array(vec![]));
    assert!(h.llm.received_requests().await.unwrap().is_empty());
    let emf = h.emf();
    let pdf = [
        (dimension::FUNCTION, ingestion::FUNCTION),
        (dimension::KIND, "pdf"),
    ];
    assert_eq!(emf.sum(m::ingestion::EINVOICES_READ.name, &pdf), 1.0);
    assert_eq!(
        emf.sum(m::ingestion::EINVOICE_DISAGREEMENTS.name, &function()),
        0.0
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_hybrid_with_invalid_xml_falls_back_to_the_page_with_the_reason_stored(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(docflow_tests::llm::anthropic_text(
            &invoice_json().to_string(),
        ))
        .expect(1)
        .mount(&h.llm)
        .await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(fixture(ZUGFERD_INVALID))).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.extraction_model.as_deref(), Some("claude-test-1"));
    // A text layer is not stored (a retry reads the file again); its metadata records the reading.
    assert_eq!(row.transcription_page_count, Some(1), "the page was read");
    let data = h.document(document_id).await.0.unwrap();
    let source = &data["einvoice"];
    assert_eq!(source["provider"], "claude-test-1");
    let reason = source["fallback_reason"].as_str().unwrap();
    assert!(reason.contains("BR-49"), "{reason}");
    assert!(
        source["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().contains("BR-49"))
    );
    assert_eq!(
        h.emf()
            .sum(m::ingestion::EINVOICE_FALLBACKS.name, &function()),
        1.0
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_hybrid_whose_page_disagrees_keeps_the_xml_flags_it_and_counts_it(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    refuse_the_llm(&h).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(fixture(ZUGFERD_DISAGREES))).await;

    let (_, response) = h.deliver(id).await;

    assert!(response.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.extraction_model.as_deref(), Some("einvoice"));
    let (data, review, _, _) = h.document(document_id).await;
    let data = data.unwrap();
    assert!(review, "a page/XML disagreement goes to a person");
    assert_eq!(
        data["invoice_number"], "RE-20190610/507",
        "the XML is the invoice"
    );
    let flagged = data["einvoice"]["disagreements"].as_array().unwrap();
    assert!(
        flagged
            .iter()
            .any(|d| d.as_str().unwrap().contains("RE-20200620/508")),
        "{flagged:?}"
    );
    assert!(h.llm.received_requests().await.unwrap().is_empty());
    assert_eq!(
        h.emf()
            .sum(m::ingestion::EINVOICE_DISAGREEMENTS.name, &function()),
        1.0
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_llm_answer_cannot_claim_to_be_an_e_invoice(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let mut answer = invoice_json();
    answer["einvoice"] = serde_json::json!({"provider": "einvoice", "findings": []});
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(docflow_tests::llm::anthropic_text(&answer.to_string()))
        .expect(1)
        .mount(&h.llm)
        .await;
    let id = Uuid::new_v4();
    let pdf = docflow_tests::pdf::text_pdf(&[&[
        "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
        "Rechnung Nr. RE-2014-0815",
        "Gesamtbetrag: 119,00 €",
    ]]);
    let document_id = h.seed(id, "pdf", Some(pdf)).await;

    h.deliver(id).await;

    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed", "{:?}", row.last_error);
    assert_eq!(row.extraction_model.as_deref(), Some("claude-test-1"));
    let data = h.document(document_id).await.0.unwrap();
    assert_eq!(data.get("einvoice"), None, "{data}");
}
