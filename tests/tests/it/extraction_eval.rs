//! `docflow eval extraction` on the labelled corpus in `tests/fixtures/invoices/`: the
//! offline rules extractor must stay above its floor, and the committed PDFs must be
//! exactly what their drawn sources (`src/*.layout`) give.
//!
//! The corpus: invoices and credit notes in German, English (UK, US, India), Dutch,
//! French, Polish, Spanish and Italian, written to look like real ones (letterheads
//! left and right, two-column headers, labels beside or above their values, tables,
//! totals blocks, several VAT rates, multi-page PDFs with the total on the last page).

use std::path::{Path, PathBuf};

use docflow::extract::Extractor;
use docflow_dev::eval::extraction::{Report, evaluate_dir};
use docflow_tests::pdf::layout_pdf;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/invoices")
}

/// Overall accuracy the rules extractor must keep on the corpus.
const FLOOR: f64 = 0.90;

/// Per-field floors for the fields booking and matching depend on.
const FIELD_FLOORS: [(&str, f64); 9] = [
    ("document_type", 0.95),
    ("invoice_number", 0.85),
    ("invoice_date", 0.85),
    ("supplier_name", 0.80),
    ("currency", 0.90),
    ("subtotal", 0.80),
    ("total", 0.85),
    ("supplier_vat_id", 0.80),
    ("invoice_reference", 0.80),
];

#[test]
fn committed_fixture_pdfs_are_generated_from_their_layout_sources() {
    let dir = fixtures();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir.join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "layout"))
        .collect();
    sources.sort();
    assert!(sources.len() >= 5, "the corpus has PDFs: {sources:?}");
    let write = std::env::var_os("DOCFLOW_WRITE_FIXTURES").is_some();
    for source in sources {
        let pdf = layout_pdf(&std::fs::read_to_string(&source).unwrap());
        let target = dir.join(source.file_stem().unwrap()).with_extension("pdf");
        if write {
            std::fs::write(&target, &pdf).unwrap();
        }
        let committed = std::fs::read(&target).unwrap_or_default();
        assert!(
            committed == pdf,
            "{} is not what {} gives; regenerate with DOCFLOW_WRITE_FIXTURES=1 cargo test -p docflow-tests --test it extraction_eval::",
            target.display(),
            source.display()
        );
    }
}

async fn rules_report() -> Report {
    evaluate_dir(&fixtures(), "rules", &Extractor::Rules, None)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_rules_extractor_stays_above_its_floor_on_the_labelled_corpus() {
    let report = rules_report().await;
    println!("{}", report.render());

    assert!(
        report.documents.len() >= 30,
        "the corpus has at least 30 documents"
    );
    assert!(
        report.documents.iter().all(|d| d.error.is_none()),
        "every fixture transcribes and extracts"
    );
    for (field, floor) in FIELD_FLOORS {
        let accuracy = report.field(field).map_or(0.0, |f| f.accuracy());
        assert!(
            accuracy >= floor,
            "{field}: {:.1} % is below its floor of {:.0} %",
            100.0 * accuracy,
            100.0 * floor
        );
    }
    assert!(
        report.accuracy() >= FLOOR,
        "overall {:.1} % is below the floor of {:.0} %",
        100.0 * report.accuracy(),
        100.0 * FLOOR
    );
}

#[tokio::test]
async fn the_corpus_labels_are_consistent() {
    let report = rules_report().await;

    for doc in &report.documents {
        let expected = |name: &str| {
            doc.fields
                .iter()
                .find(|f| f.field == name)
                .and_then(|f| f.expected.as_f64())
        };
        let fields: Vec<&str> = doc.fields.iter().map(|f| f.field.as_str()).collect();
        for core in [
            "document_type",
            "invoice_number",
            "invoice_date",
            "supplier_name",
            "total",
        ] {
            assert!(fields.contains(&core), "{} labels {core}", doc.file);
        }
        if let (Some(s), Some(v), Some(t)) = (
            expected("subtotal"),
            expected("vat_amount"),
            expected("total"),
        ) {
            // Charges outside net + VAT: shipping, a Spanish IRPF withholding.
            let extra = match doc.file.as_str() {
                "us_bill_ship_to.txt" => 85.0,
                "es_factura_autonomo.txt" => -121.80,
                _ => 0.0,
            };
            assert!(
                (s + v + extra - t).abs() < 0.005,
                "{}: net + VAT != gross in its label",
                doc.file
            );
        }
    }
}

mod llm_providers {
    //! The eval with an LLM provider: wiremock servers that answer like Anthropic's
    //! Messages API and an OpenAI-compatible chat completions server.

    use std::time::Duration;

    use docflow::extract::Extractor;
    use docflow::llm::{LlmClient, LlmSettings, Provider};
    use docflow::retry::RetryPolicy;
    use docflow_dev::eval::extraction::{Pricing, evaluate_dir};
    use docflow_tests::llm::{anthropic_error, anthropic_text};
    use serde_json::{Value, json};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    /// Two labelled documents in a fresh directory.
    fn corpus() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "docflow-eval-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("a.txt"),
            "Gutschrift GS-7\nzu Rechnung Nr. RE-1\nACME GmbH\nGesamt -119,00 EUR\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("a.json"),
            json!({"invoice_number": "GS-7", "invoice_reference": "RE-1", "total": 119.0, "currency": "EUR"}).to_string(),
        )
        .unwrap();
        std::fs::write(dir.join("b.txt"), "Invoice INV-2\nTotal 50.00 GBP\n").unwrap();
        std::fs::write(
            dir.join("b.json"),
            json!({"invoice_number": "INV-2", "total": 50.0, "currency": "GBP"}).to_string(),
        )
        .unwrap();
        dir
    }

    fn answer() -> String {
        json!({
            "extraction_successful": true, "confidence": "high", "missing_fields": [],
            "document_type": "credit_note", "invoice_number": "GS-7",
            "invoice_reference": "RE-1", "currency": "EUR", "total": -119.0,
            "field_confidence": {"invoice_number": "high", "total": "high", "invoice_reference": "medium"}
        })
        .to_string()
    }

    fn client(provider: Provider, server: &MockServer, model: &str) -> Extractor {
        let settings = LlmSettings {
            provider: Some(provider),
            model: model.into(),
            base_url: server.uri(),
            timeout: Duration::from_secs(5),
            max_tokens: 1024,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(1)),
        };
        Extractor::Llm(
            LlmClient::new(&settings, Some("test-key".to_owned().into()))
                .unwrap()
                .unwrap(),
        )
    }

    #[tokio::test]
    async fn an_anthropic_model_is_scored_with_its_tokens_and_cost() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(anthropic_text(&answer()))
            .expect(2)
            .mount(&server)
            .await;
        let extractor = client(Provider::Anthropic, &server, "claude-test-1");
        let pricing = Pricing {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        };

        let report = evaluate_dir(&corpus(), "anthropic", &extractor, Some(pricing))
            .await
            .unwrap();

        // The same answer for both: right for a.txt, wrong number and currency for b.txt.
        assert_eq!(report.field("invoice_number").map(|f| f.correct), Some(1));
        assert_eq!(
            report
                .field("invoice_reference")
                .map(|f| (f.correct, f.scored)),
            Some((1, 1))
        );
        assert_eq!((report.correct, report.scored), (4, 7));
        assert_eq!(report.input_tokens, Some(2 * 1234));
        assert_eq!(report.output_tokens, Some(2 * 321));
        let expected = (2.0 * 1234.0 * 3.0 + 2.0 * 321.0 * 15.0) / 1e6;
        assert!((report.cost_usd.unwrap() - expected).abs() < 1e-12);
        assert_eq!(report.documents[0].model.as_deref(), Some("claude-test-1"));
        let table = report.render();
        assert!(table.contains("2468 in, 642 out"), "{table}");
        let request: Value =
            serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
        let system = request["system"].as_str().unwrap();
        assert!(system.contains("\"invoice_reference\""), "{system}");
        assert!(system.contains("\"field_confidence\""), "{system}");
    }

    #[tokio::test]
    async fn an_openai_compatible_model_is_priced_from_its_list_price() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": answer()}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}
            })))
            .mount(&server)
            .await;
        let extractor = client(Provider::OpenAi, &server, "gpt-4o-mini");

        let report = evaluate_dir(&corpus(), "openai", &extractor, None)
            .await
            .unwrap();

        assert_eq!(report.input_tokens, Some(2000));
        assert_eq!(report.output_tokens, Some(400));
        let expected = (2000.0 * 0.15 + 400.0 * 0.60) / 1e6;
        assert!((report.cost_usd.unwrap() - expected).abs() < 1e-12);
    }

    #[tokio::test]
    async fn a_provider_that_fails_is_reported_per_document_and_the_run_goes_on() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(anthropic_error(
                401,
                "authentication_error",
                "invalid x-api-key",
            ))
            .mount(&server)
            .await;
        let extractor = client(Provider::Anthropic, &server, "claude-test-1");

        let report = evaluate_dir(&corpus(), "anthropic", &extractor, None)
            .await
            .unwrap();

        assert_eq!(report.documents.len(), 2);
        assert_eq!(report.correct, 0);
        assert_eq!(report.scored, 7);
        for doc in &report.documents {
            let error = doc.error.as_deref().unwrap();
            assert!(error.contains("401"), "{error}");
            assert!(!doc.passes_quality_gate);
        }
        assert!(report.render().contains("invalid x-api-key"));
    }
}

// --- e-invoices ------------------------------------------------------------------------------

mod einvoices {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use docflow::extract::Extractor;
    use docflow_dev::eval::extraction::{EInvoices, evaluate_dir, evaluate_dir_with};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("docflow-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// The public corpora: `DOCFLOW_CORPORA` (the Makefile sets it, so a clone anywhere
    /// finds them), else `../shared/corpora` beside this checkout.
    fn corpora() -> PathBuf {
        std::env::var_os("DOCFLOW_CORPORA")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("../shared/corpora"))
    }

    /// `scripts/label_einvoices.py OUT SOURCE`: the corpus labelled from its own XML.
    fn label(source: &Path) -> PathBuf {
        let out = scratch("einvoice-labels");
        let run = Command::new("python3")
            .arg(repo().join("scripts/label_einvoices.py"))
            .arg(&out)
            .arg(source)
            .output()
            .expect("python3 runs the labelling script");
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        out
    }

    #[tokio::test]
    async fn xml_and_hybrid_e_invoices_are_scored_with_their_provider() {
        let dir = label(&repo().join("tests/fixtures/einvoice"));
        let report = evaluate_dir(&dir, "rules", &Extractor::Rules, None)
            .await
            .unwrap();
        let provider = |file: &str| {
            report
                .documents
                .iter()
                .find(|d| d.file == file)
                .and_then(|d| d.model.clone())
        };
        assert_eq!(
            provider("xrechnung-01.01a-INVOICE_ubl.xml").as_deref(),
            Some("einvoice")
        );
        assert_eq!(
            provider("zugferd-EN16931_Einfach.pdf").as_deref(),
            Some("einvoice")
        );
        assert_eq!(
            provider("zugferd-invalid-BR-49-MustangBeispiel20221026.pdf").as_deref(),
            Some("rules"),
            "an invalid XML falls back to the page"
        );
        assert!(report.render().contains("[einvoice]"));
        for file in [
            "xrechnung-01.01a-INVOICE_ubl.xml",
            "zugferd-EN16931_Einfach.pdf",
        ] {
            let doc = report.documents.iter().find(|d| d.file == file).unwrap();
            assert!(
                doc.misses().next().is_none(),
                "{file}: {:?}",
                doc.misses().collect::<Vec<_>>()
            );
        }

        let page_only =
            evaluate_dir_with(&dir, "rules", &Extractor::Rules, None, EInvoices::PageOnly)
                .await
                .unwrap();
        let hybrid = page_only
            .documents
            .iter()
            .find(|d| d.file == "zugferd-EN16931_Einfach.pdf")
            .unwrap();
        assert_eq!(hybrid.model.as_deref(), Some("rules"), "the page only");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The bar: ≥ 99 % of the contract's fields on the XRechnung test suite (UBL
    /// and CII), labelled from the suite's own XML by an independent reader.
    #[tokio::test]
    async fn the_xrechnung_test_suite_is_read_at_least_99_percent_right() {
        let suite = corpora().join("xrechnung-testsuite/src/test/business-cases");
        let dir = label(&suite);
        let report = evaluate_dir(&dir, "rules", &Extractor::Rules, None)
            .await
            .unwrap();
        assert_eq!(report.documents.len(), 72);
        assert!(
            report
                .documents
                .iter()
                .all(|d| d.model.as_deref() == Some("einvoice"))
        );
        assert!(
            report.accuracy() >= 0.99,
            "{:.2} %\n{}",
            100.0 * report.accuracy(),
            report.render()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The Mustang project's hybrids (ZUGFeRD 2 / Factur-X / XRechnung in a PDF), labelled
    /// from their embedded XML: every one whose XML is valid is read from it, ≥ 99 %
    /// right; the two whose XML breaks a rule fall back to the page (docs/extraction.md).
    #[tokio::test]
    async fn the_valid_mustang_hybrids_are_read_at_least_99_percent_right() {
        let samples = corpora().join("mustang-samples");
        let dir = label(&samples);
        // The samples named for a broken PDF or a broken XMP are the hostile path's.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("corrupt") || name.starts_with("invalid") {
                std::fs::remove_file(path).unwrap();
            }
        }
        let report = evaluate_dir(&dir, "rules", &Extractor::Rules, None)
            .await
            .unwrap();
        let read: Vec<_> = report
            .documents
            .iter()
            .filter(|d| d.model.as_deref() == Some("einvoice"))
            .collect();
        assert_eq!(read.len(), 8, "{}", report.render());
        let fields: usize = read.iter().map(|d| d.fields.len()).sum();
        let right: usize = read
            .iter()
            .map(|d| d.fields.iter().filter(|f| f.correct).count())
            .sum();
        assert!(
            right as f64 >= 0.99 * fields as f64,
            "{right}/{fields}\n{}",
            report.render()
        );
        let fell_back: Vec<&str> = report
            .documents
            .iter()
            .filter(|d| d.model.as_deref() != Some("einvoice"))
            .map(|d| d.file.as_str())
            .collect();
        assert_eq!(
            fell_back,
            [
                "MustangBeispiel20221026.pdf",
                "ZTESTZUGFERD_1_INVDSS_012015738820PDF-1.pdf"
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
