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
use docflow::extract::eval::{Report, evaluate_dir};
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
            "{} is not what {} gives; regenerate with DOCFLOW_WRITE_FIXTURES=1 cargo test -p docflow-tests --test extraction_eval",
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
            let extra = if doc.file.starts_with("us_bill_ship_to") {
                85.0
            } else {
                0.0
            };
            assert!(
                (s + v + extra - t).abs() < 0.005,
                "{}: net + VAT != gross in its label",
                doc.file
            );
        }
    }
}
