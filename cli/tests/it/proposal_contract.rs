//! What DATEV receives, per extractor. A document is read by the offline rules
//! extractor, by the LLM (its stand-in answering like Anthropic's Messages API) or by
//! the e-invoice reader; its extraction is stored as ingestion stores it
//! (`to_value(&Extraction)`), the document approved and exported by the document-output
//! function against a Maesn stand-in. The `bookingProposal` part that leaves docflow must
//! carry the document's amount, currency, VAT id, number, dates, order reference and
//! supplier. The expected values are read off the documents by hand (the sample pages in
//! `samples.rs`, the XRechnung's XML), never taken from the extractor.

use docflow::extract::{Extraction, Extractor};
use docflow::ids::DocumentId;
use docflow::llm::{LlmClient, LlmSettings, Provider};
use docflow::ocr::{PageText, Transcription};
use docflow::retry::RetryPolicy;
use docflow_cli::maesn::StandIn;
use docflow_tests::llm::anthropic_text;
use docflow_tests::output::{API_KEY, Options, setup_with};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

/// The values a proposal must carry, read off the document.
struct Expected {
    number: &'static str,
    date: &'static str,
    due: Option<&'static str>,
    currency: &'static str,
    total: f64,
    vat_id: &'static str,
    order: &'static str,
    supplier: &'static str,
    iban: Option<&'static str>,
}

fn assert_carries(proposal: &Value, expected: &Expected) {
    let field = |name: &str| proposal.get(name).cloned().unwrap_or(Value::Null);
    assert_eq!(field("number"), json!(expected.number), "{proposal}");
    assert_eq!(
        field("bookingProposalDate"),
        json!(expected.date),
        "{proposal}"
    );
    assert_eq!(field("dueDate"), json!(expected.due), "{proposal}");
    assert_eq!(field("currency"), json!(expected.currency), "{proposal}");
    assert_eq!(
        field("totalGrossAmount").as_f64(),
        Some(expected.total),
        "the amount as a JSON number: {proposal}"
    );
    assert_eq!(field("vatId"), json!(expected.vat_id), "{proposal}");
    assert_eq!(field("orderId"), json!(expected.order), "{proposal}");
    assert_eq!(
        proposal["contact"]["name"],
        json!(expected.supplier),
        "{proposal}"
    );
    assert_eq!(
        proposal["bankAccount"]["iban"],
        json!(expected.iban),
        "{proposal}"
    );
}

/// The Maesn stand-in (`docflow local maesn`), which refuses what Maesn's documented
/// schema refuses, in front of the test's output environment.
async fn stand_in() -> StandIn {
    StandIn::start(docflow_cli::maesn::Options {
        api_key: API_KEY.to_owned(),
        ..Default::default()
    })
    .await
}

/// Stores `extraction` as the test document's data, approves and exports it through the
/// document-output function to `maesn`, and returns the job's status and error.
async fn export(
    pool: PgPool,
    maesn: &StandIn,
    extraction: &Extraction,
) -> (String, Option<String>) {
    let env = setup_with(
        pool,
        Options {
            maesn_base_url: Some(maesn.uri()),
            ..Options::default()
        },
    )
    .await;
    sqlx::query("UPDATE document SET structured_data = $2 WHERE id = $1")
        .bind(env.tenant.document_id)
        .bind(extraction.to_stored())
        .execute(&env.pool)
        .await
        .unwrap();
    env.approve(env.tenant.document_id).await;
    let export = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await
    .unwrap();

    env.deliver(1).await;

    let job = env.job(export.job.id.0).await;
    (job.status, job.last_error)
}

/// [`export`], which must be dispatched; the `bookingProposal` the stand-in accepted.
async fn exported(pool: PgPool, extraction: &Extraction) -> Value {
    let maesn = stand_in().await;
    let (status, error) = export(pool, &maesn, extraction).await;
    assert_eq!(status, "dispatched", "{error:?}");
    let exports = maesn.exports();
    assert_eq!(exports.len(), 1, "{exports:?}");
    exports[0].proposal.clone()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_pdf_read_by_the_rules_extractor_reaches_datev_with_its_numbers(pool: PgPool) {
    let sample = docflow_cli::samples::by_name("mueller-rechnung-RE-2026-0815.pdf").unwrap();
    let pages = docflow::ocr::text_layer(sample.bytes.to_vec().into())
        .await
        .unwrap();
    let text = Transcription::from_pages(
        "native",
        pages.into_iter().map(PageText::from_text_layer).collect(),
    )
    .text;
    let run = Extractor::Rules.extract(&text).await.unwrap();

    let proposal = exported(pool, &run.extraction).await;

    // MUELLER_INVOICE in samples.rs: "Rechnungsdatum: 12.11.2026", "Zahlbar innerhalb
    // von 14 Tagen", "Rechnungsbetrag 1.378,02 €", "USt-IdNr.: DE 123 456 789".
    assert_carries(
        &proposal,
        &Expected {
            number: "RE-2026-0815",
            date: "2026-11-12T00:00:00Z",
            due: Some("2026-11-26T00:00:00Z"),
            currency: "EUR",
            total: 1378.02,
            vat_id: "DE123456789",
            order: "BE-2026-0142",
            supplier: "Müller Haustechnik GmbH",
            iban: Some("DE89370400440532013000"),
        },
    );
    assert_eq!(
        proposal["lineItems"][0],
        json!({ "description": "Umwälzpumpe Wilo Yonos 25/6", "totalNetAmount": 778.0 })
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_xrechnung_read_from_its_xml_reaches_datev_with_its_numbers(pool: PgPool) {
    let sample = docflow_cli::samples::by_name("meier-xrechnung-RE-2026-1207.xml").unwrap();
    let extraction = docflow::extract::einvoice::read(sample.bytes).unwrap();

    let proposal = exported(pool, &extraction).await;

    // cli/samples/meier-xrechnung-RE-2026-1207.xml: cbc:ID, cbc:IssueDate (no due
    // date), DocumentCurrencyCode, PayableAmount 336.9 (BT-112 is 336.9 too), the
    // seller's VAT CompanyID "DE 123456789", OrderReference BE-2026-0190, the payee
    // account DE79000000001234567890.
    assert_carries(
        &proposal,
        &Expected {
            number: "RE-2026-1207",
            date: "2026-11-20T00:00:00Z",
            due: None,
            currency: "EUR",
            total: 336.9,
            vat_id: "DE123456789",
            order: "BE-2026-0190",
            supplier: "Meier Sanitär GmbH",
            iban: Some("DE79000000001234567890"),
        },
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_read_by_the_llm_reaches_datev_with_its_numbers(pool: PgPool) {
    // The model's answer, as Anthropic's Messages API returns it: the extraction
    // contract's JSON for the Northwind invoice's text.
    let llm = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(
            &json!({
                "extraction_successful": true,
                "confidence": "high",
                "missing_fields": [],
                "document_type": "invoice",
                "invoice_number": "INV-1043",
                "invoice_date": "2026-11-18",
                "due_date": "2026-12-18",
                "supplier_name": "Northwind Traders Ltd",
                "supplier_vat_id": "GB 123 4567 89",
                "supplier_iban": "GB33BUKB20201555555555",
                "currency": "GBP",
                "subtotal": 1000.0,
                "vat_amount": 200.0,
                "total": 1200.0,
                "po_reference": "PO-88812",
                "line_items": [{"description": "Pallet racking", "quantity": 4, "unit_price": 250.0, "amount": 1000.0}]
            })
            .to_string(),
        ))
        .mount(&llm)
        .await;
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
    let run = Extractor::Llm(client)
        .extract("INVOICE INV-1043 … Northwind Traders Ltd … Total GBP 1,200.00")
        .await
        .unwrap();

    let proposal = exported(pool, &run.extraction).await;

    assert_carries(
        &proposal,
        &Expected {
            number: "INV-1043",
            date: "2026-11-18T00:00:00Z",
            due: Some("2026-12-18T00:00:00Z"),
            currency: "GBP",
            total: 1200.0,
            vat_id: "GB123456789",
            order: "PO-88812",
            supplier: "Northwind Traders Ltd",
            iban: Some("GB33BUKB20201555555555"),
        },
    );
}

/// A booking without its amount never passes unseen: the stand-in refuses it as Maesn's
/// validation would (400, `validationErrors`), and the job fails visibly, naming why.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_proposal_without_its_amount_is_refused_and_the_failure_is_visible(pool: PgPool) {
    let mut extraction = docflow_tests::output::invoice_extraction();
    extraction.total = None;
    let maesn = stand_in().await;

    let (status, error) = export(pool, &maesn, &extraction).await;

    assert_eq!(status, "failed");
    let error = error.unwrap_or_default();
    assert!(error.contains("totalGrossAmount is required"), "{error}");
    assert!(maesn.exports().is_empty(), "nothing booked");
    assert_eq!(
        maesn
            .attempts()
            .iter()
            .filter(|a| a.outcome == "refused-invalid")
            .count(),
        1
    );
}
