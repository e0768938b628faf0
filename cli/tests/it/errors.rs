//! The operations commands as an operator meets their errors: one clear line on stderr,
//! exit code 1, never a panic.

use std::process::{Command, Output};

fn docflow(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_docflow"));
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

fn assert_one_line_error(output: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, not: {stderr}");
    assert!(lines[0].starts_with("docflow: "), "{stderr}");
    assert!(
        lines[0].contains(expected),
        "expected {expected:?} in: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_malformed_document_id_is_named() {
    let output = docflow(&["status", "not-a-uuid"], &[]);
    assert_one_line_error(&output, "\"not-a-uuid\" is not a document id");
    let output = docflow(&["export", "42", "--by", "ops@example.com"], &[]);
    assert_one_line_error(&output, "\"42\" is not a document id");
}

#[test]
fn an_unreachable_emulator_is_one_line() {
    // Nothing listens on port 9: the SDK's retries end in a connection error.
    let unreachable = [
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ("AWS_REGION", "eu-central-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_MAX_ATTEMPTS", "1"),
    ];
    let output = docflow(&["dlq", "list", "ingestion"], &unreachable);
    assert_one_line_error(&output, "docflow-ingestion");
    let output = docflow(
        &["status", "7d3a1c52-6f0e-4b8e-9a41-2c5d8e9f0a11"],
        &unreachable,
    );
    assert_one_line_error(&output, "docflow-ingestion");
}

#[test]
fn a_missing_file_is_named_before_anything_is_written() {
    let output = docflow(&["ingest", "/nonexistent/invoice.pdf"], &[]);
    assert_one_line_error(&output, "cannot read /nonexistent/invoice.pdf");
}

/// Needs the local stack (`make up`), as every integration test does.
#[test]
fn an_unknown_document_is_named() {
    let id = "00000000-0000-4000-8000-00000000beef";
    let output = docflow(&["status", id], &[]);
    assert_one_line_error(&output, &format!("no document {id}"));
}
