//! `docflow eval extraction` as a user runs it: the binary on a directory of labelled
//! documents, stdout, the exit code, and an LLM provider on the wire (a wiremock server
//! answering like Anthropic's Messages API).

use std::path::PathBuf;
use std::process::Command;

use docflow_tests::llm::anthropic_text;
use docflow_tests::pdf::text_pdf;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer};

fn docflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docflow"))
}

/// A directory with a labelled PDF, a labelled text file and an unlabelled file.
fn corpus(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("docflow-eval-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pdf = text_pdf(&[&[
        "Hofmann Druck GmbH · Ringstraße 5 · 04109 Leipzig",
        "Rechnung Nr. 2024-118",
        "Datum: 07.05.2024",
        "Nettobetrag\t\t100,00 EUR",
        "MwSt. 19 %\t\t19,00 EUR",
        "Gesamtbetrag\t\t119,00 EUR",
    ]]);
    std::fs::write(dir.join("hofmann.pdf"), pdf).unwrap();
    std::fs::write(
        dir.join("hofmann.json"),
        json!({"invoice_number": "2024-118", "invoice_date": "2024-05-07", "total": 119.0,
               "subtotal": 100.0, "currency": "EUR"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("globex.txt"),
        "INVOICE\nGlobex Inc.\nInvoice No. A-77\nInvoice Date: 2024-05-02\nTotal due: $1,250.00\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("globex.json"),
        json!({"invoice_number": "A-77", "total": 1250.0, "currency": "EUR"}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "not labelled, not scored").unwrap();
    dir
}

#[test]
fn the_table_shows_per_field_accuracy_and_the_misses_of_each_document() {
    let dir = corpus("table");

    let output = docflow()
        .args(["eval", "extraction"])
        .arg(&dir)
        .output()
        .unwrap();

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("provider rules, 2 documents"), "{stdout}");
    assert!(stdout.contains("currency"), "{stdout}");
    assert!(stdout.contains("1/2"), "{stdout}");
    assert!(stdout.contains("globex.txt"), "{stdout}");
    assert!(
        stdout.contains("currency: expected \"EUR\", got \"USD\""),
        "{stdout}"
    );
    assert!(!stdout.contains("notes.txt"), "{stdout}");
    assert!(stdout.contains("tokens: none"), "{stdout}");
    assert!(stdout.contains("ms per document"), "{stdout}");
}

#[test]
fn json_output_is_the_whole_report() {
    let dir = corpus("json");

    let output = docflow()
        .args(["eval", "extraction", "--json"])
        .arg(&dir)
        .output()
        .unwrap();

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(report["provider"], "rules");
    assert_eq!(report["documents"].as_array().unwrap().len(), 2);
    assert_eq!(report["scored"], 8);
    assert_eq!(report["correct"], 7);
    let currency = report["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "currency")
        .unwrap();
    assert_eq!(
        (currency["correct"].as_u64(), currency["scored"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn a_floor_below_the_accuracy_fails_the_command() {
    let dir = corpus("floor");

    let output = docflow()
        .args(["eval", "extraction", "--min-accuracy", "95"])
        .arg(&dir)
        .output()
        .unwrap();

    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("below --min-accuracy 95"), "{stderr}");
}

#[test]
fn a_directory_without_labels_gets_an_error_that_says_what_is_expected() {
    let dir = std::env::temp_dir().join(format!("docflow-eval-cli-{}-empty", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let output = docflow()
        .args(["eval", "extraction"])
        .arg(&dir)
        .output()
        .unwrap();

    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no labelled documents"), "{stderr}");
}

#[tokio::test]
async fn an_anthropic_model_reports_its_tokens_and_their_cost() {
    let server = MockServer::start().await;
    let answer = json!({
        "extraction_successful": true, "confidence": "high", "missing_fields": [],
        "document_type": "invoice", "invoice_number": "2024-118", "invoice_date": "2024-05-07",
        "currency": "EUR", "subtotal": 100.0, "vat_amount": 19.0, "total": 119.0
    });
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .respond_with(anthropic_text(&answer.to_string()))
        .expect(2)
        .mount(&server)
        .await;
    let dir = corpus("anthropic");
    let uri = server.uri();

    let output = tokio::task::spawn_blocking(move || {
        docflow()
            .args(["eval", "extraction", "--provider", "anthropic", "--json"])
            .args(["--price-input", "3", "--price-output", "15"])
            .arg(&dir)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("LLM_BASE_URL", uri)
            .env("LLM_RETRY_BASE_MS", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["provider"], "anthropic");
    assert_eq!(report["input_tokens"], 2 * 1234);
    assert_eq!(report["output_tokens"], 2 * 321);
    let cost = report["cost_usd"].as_f64().unwrap();
    assert!((cost - (2.0 * 1234.0 * 3.0 + 2.0 * 321.0 * 15.0) / 1e6).abs() < 1e-12);
    assert_eq!(report["documents"][0]["model"], "claude-test-1");
    // The same answer for both documents: all five right for the PDF, only the currency
    // for the text file.
    assert_eq!(report["correct"], 6);
}
