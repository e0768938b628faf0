//! `docflow extract` as a user runs it: the binary, a file on disk, stdout.

use std::process::Command;

use docflow_tests::pdf::text_pdf;

fn docflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docflow"))
}

fn write_temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("docflow-cli-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn uuid_like() -> String {
    format!("{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], "")
}

#[test]
fn json_output_is_exactly_the_extraction_contract() {
    let pdf = text_pdf(&[&[
        "Hofmann Druck GmbH · Ringstraße 5 · 04109 Leipzig",
        "Rechnung Nr. 2024-118",
        "Datum: 07.05.2024",
        "Nettobetrag\t\t100,00 EUR",
        "MwSt. 19 %\t\t19,00 EUR",
        "Gesamtbetrag\t\t119,00 EUR",
    ]]);
    let file = write_temp("rechnung.pdf", &pdf);

    let output = docflow()
        .args(["extract", "--json"])
        .arg(&file)
        .output()
        .unwrap();

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    let extraction: docflow::extract::Extraction = serde_json::from_value(json.clone()).unwrap();
    assert!(extraction.validate().is_ok());
    assert_eq!(json["invoice_number"], "2024-118");
    assert_eq!(json["invoice_date"], "2024-05-07");
    assert_eq!(json["total"], 119.0);
    assert_eq!(json["currency"], "EUR");
    for key in [
        "extraction_successful",
        "confidence",
        "missing_fields",
        "line_items",
        "po_reference",
    ] {
        assert!(json.get(key).is_some(), "{key} is part of the contract");
    }
}

#[test]
fn the_summary_names_the_fields_and_the_provider() {
    let file = write_temp(
        "invoice.txt",
        b"INVOICE\nInvoice No. A-77\nInvoice Date: 2024-05-02\nTotal due: $1,250.00\n",
    );

    let output = docflow().arg("extract").arg(&file).output().unwrap();

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("extracted by rules"), "{stdout}");
    assert!(stdout.contains("A-77"), "{stdout}");
    assert!(stdout.contains("1250.00"), "{stdout}");
}

#[test]
fn an_unsupported_file_gets_an_error_that_says_what_is_accepted() {
    let file = write_temp("letter.docx", b"PK\x03\x04");

    let output = docflow().arg("extract").arg(&file).output().unwrap();

    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("use .pdf, .txt, .png, .jpg or .xml"),
        "{stderr}"
    );
}

#[test]
fn an_llm_provider_without_its_key_is_refused_before_any_call() {
    let file = write_temp("invoice.txt", b"Invoice No. A-1\nTotal: 10.00 EUR\n");

    let output = docflow()
        .args(["extract", "--provider", "anthropic"])
        .arg(&file)
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();

    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("ANTHROPIC_API_KEY"));
}

fn einvoice_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/einvoice")
        .join(name)
}

#[test]
fn an_xrechnung_xml_and_a_zugferd_pdf_are_read_from_their_xml() {
    for (file, number, syntax) in [
        ("xrechnung-01.01a-INVOICE_ubl.xml", "123456XX", "UBL 2.1"),
        (
            "zugferd-EN16931_Einfach.pdf",
            "471102",
            "UN/CEFACT CII D16B",
        ),
    ] {
        let output = docflow()
            .args(["extract", "--json"])
            .arg(einvoice_fixture(file))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(json["invoice_number"], number, "{file}");
        assert_eq!(json["einvoice"]["provider"], "einvoice", "{file}");
        assert_eq!(json["einvoice"]["syntax"], syntax, "{file}");
    }

    let summary = docflow()
        .arg("extract")
        .arg(einvoice_fixture("zugferd-EN16931_Einfach.pdf"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&summary.stdout);
    assert!(stdout.contains("extracted by einvoice"), "{stdout}");
    assert!(
        stdout.contains("e-invoice: UN/CEFACT CII D16B | EN 16931"),
        "{stdout}"
    );
}

#[test]
fn a_hostile_or_invalid_xml_gets_a_clear_error_and_an_invalid_hybrid_falls_back() {
    let xxe = write_temp(
        "xxe.xml",
        br#"<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY x SYSTEM "file:///etc/passwd">]><Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">&x;</Invoice>"#,
    );
    let output = docflow().arg("extract").arg(&xxe).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("DTD"), "{stderr}");
    assert!(
        !stderr.contains("root:x:0"),
        "nothing was fetched: {stderr}"
    );

    let output = docflow()
        .arg("extract")
        .arg(einvoice_fixture(
            "zugferd-invalid-BR-49-MustangBeispiel20221026.pdf",
        ))
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("BR-49") && stderr.contains("reading the page"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("extracted by rules"), "{stdout}");
    assert!(stdout.contains("fell back to the page"), "{stdout}");
}
