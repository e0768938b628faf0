//! The fuzz targets: one function per kind of outside input docflow reads, each feeding
//! arbitrary bytes to the real code and asserting what must hold for *any* input (above
//! all: no panic escapes). Two drivers call them: the property tests of
//! `tests/tests/it/fuzz_properties.rs` (proptest, a short run inside `cargo test`) and the
//! coverage-guided `fuzz/` crate (`cargo fuzz`, the long run; see docs/reliability.md).
//!
//! A target panics only when docflow would: a panic here is a bug to fix, with the input
//! kept as a regression test. The parsing targets (PDF, image, e-invoice) parse as
//! ingestion does: in the parsing sandbox's child when the process has set one up (the
//! property tests do), and a child that dies on an input is a finding too.

use std::collections::HashSet;
use std::sync::LazyLock;

use aws_lambda_events::event::sqs::SqsEvent;
use bytes::Bytes;
use docflow::datev::{self, TaskState};
use docflow::extract::{DocumentType, Extraction};
use docflow::ids::{DocumentId, IngestionId, OutputJobId};
use docflow::llm::{self, Provider};
use docflow::matching::decide::{self, LlmAnswer};
use docflow::ocr::OcrError;
use docflow::sqs::{BatchConfig, BatchRuntime, Outcome};
use docflow::{Classify, matching};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::Value;

/// One runtime for every target that needs async code (the batch runtime, the PDF text
/// layer on the blocking pool): built once, not per input.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
});

/// An SQS client that is never called: the targets' outcomes never change visibility.
/// Built without the environment, so a target needs no AWS set-up.
fn idle_sqs() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new("eu-central-1"))
            .endpoint_url("http://127.0.0.1:9")
            .build(),
    )
}

/// Every document type, for targets that try each.
pub const DOCUMENT_TYPES: [DocumentType; 5] = [
    DocumentType::Invoice,
    DocumentType::PurchaseOrder,
    DocumentType::DeliveryNote,
    DocumentType::CreditNote,
    DocumentType::Other,
];

/// What Lambda hands a function: the event JSON, parsed as `lambda_runtime` does, then the
/// batch runtime with a `process` that parses each body as the functions do (an id →
/// `Done`, anything else → `Discard`, as a poison message). For any event that parses:
/// `run` fails only when a record has no `messageId`, and otherwise reports nothing (every
/// record ended `Done` or `Discard`), never an empty or unknown identifier.
pub fn sqs_event(data: &[u8]) {
    let Ok(event) = serde_json::from_slice::<SqsEvent>(data) else {
        return;
    };
    let ids: HashSet<String> = event
        .records
        .iter()
        .filter_map(|r| r.message_id.clone())
        .collect();
    let missing_id = event
        .records
        .iter()
        .any(|r| r.message_id.as_deref().is_none_or(str::is_empty));
    let runtime = BatchRuntime::new(idle_sqs(), BatchConfig::default());
    let result = RUNTIME.block_on(runtime.run(
        LambdaEvent::new(event, Context::default()),
        |message| async move {
            match (
                IngestionId::parse(&message.body),
                DocumentId::parse(&message.body),
                OutputJobId::parse(&message.body),
            ) {
                (Ok(_), Ok(_), Ok(_)) => Outcome::Done,
                (Err(e), Err(_), Err(_)) => Outcome::discard(e.to_string()),
                _ => panic!("the id types disagree on {:?}", message.body),
            }
        },
    ));
    match result {
        Err(_) => assert!(missing_id, "run failed although every record has an id"),
        Ok(response) => {
            assert!(!missing_id, "a record without messageId was not refused");
            for failure in &response.batch_item_failures {
                assert!(!failure.item_identifier.is_empty(), "empty itemIdentifier");
                assert!(
                    ids.contains(&failure.item_identifier),
                    "unknown itemIdentifier"
                );
            }
            assert!(
                response.batch_item_failures.is_empty(),
                "Done/Discard records were reported as failed"
            );
        }
    }
}

/// A message body of any queue (ingestion id, document id, output job id). A body that
/// parses prints back as the canonical UUID, which parses to the same id; one that does
/// not is a poison message whose error carries at most 100 characters of it.
pub fn message_body(data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    match IngestionId::parse(&body) {
        Ok(id) => {
            let printed = id.to_string();
            assert_eq!(printed.len(), 36);
            assert_eq!(IngestionId::parse(&printed).unwrap(), id);
            assert_eq!(DocumentId::parse(&body).unwrap().0, id.0);
            assert_eq!(OutputJobId::parse(&body).unwrap().0, id.0);
        }
        Err(e) => {
            assert!(e.body.chars().count() <= 100);
            assert!(!e.to_string().is_empty());
            assert!(DocumentId::parse(&body).is_err());
            assert!(OutputJobId::parse(&body).is_err());
        }
    }
}

/// An LLM HTTP response body (first byte: which provider), read as the client reads it,
/// then its text parsed as both answers docflow asks for: an extraction (ingestion) and a
/// matching decision. Every failure is one of the LLM error kinds and transient; a
/// matching answer that validates only names candidates that exist.
pub fn llm_response(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let provider = if selector % 2 == 0 {
        Provider::Anthropic
    } else {
        Provider::OpenAi
    };
    let body = String::from_utf8_lossy(rest);
    let text = match llm::read_envelope(provider, "fallback-model", &body) {
        Ok(completion) => {
            assert!(!completion.model.is_empty() || body.contains("\"model\""));
            completion.text
        }
        Err(e) => {
            assert!(e.is_transient(), "an unreadable envelope is transient: {e}");
            // The body itself, as if the envelope had carried it.
            body.into_owned()
        }
    };
    llm_answer_text(&text, usize::from(selector % 12));
}

/// The text of a model's answer, parsed as ingestion and matching parse it.
pub fn llm_answer_text(text: &str, candidates: usize) {
    match llm::parse_json_answer::<Extraction>(text) {
        Ok(extraction) => extraction_invariants(&extraction, false),
        Err(e) => assert!(e.is_transient(), "an unusable answer is transient: {e}"),
    }
    match llm::parse_json_answer::<LlmAnswer>(text) {
        Ok(answer) => {
            if decide::validate(&answer, candidates).is_ok() {
                for m in &answer.matches {
                    // `decide` indexes the candidates with `candidate - 1`.
                    assert!(m.candidate >= 1 && m.candidate <= candidates);
                }
            }
        }
        Err(e) => assert!(e.is_transient(), "an unusable answer is transient: {e}"),
    }
}

/// What holds for any extraction ingestion stores: the gate and review flags can be
/// computed, it serializes (ingestion's `complete` expects that) and reads back, and
/// matching can normalise what was stored. `from_rules`: the rules extractor's own
/// output must also pass the schema checks an LLM answer is held to.
pub fn extraction_invariants(extraction: &Extraction, from_rules: bool) {
    let valid = extraction.validate();
    if from_rules {
        assert!(
            valid.is_ok(),
            "the rules extractor produced an invalid extraction: {valid:?}"
        );
    }
    let passes = extraction.passes_quality_gate();
    assert!(!passes || extraction.extraction_successful);
    let _ = extraction.needs_human_review();
    let stored = extraction.to_stored();
    if valid.is_ok() {
        let back = Extraction::from_stored(&stored).expect("a stored extraction reads back");
        assert_eq!(back.invoice_number, extraction.invoice_number);
        assert_eq!(back.total, extraction.total);
    }
    structured_data_value(&stored);
}

/// `document.structured_data` as matching reads it (any JSON: written by an older
/// version or by hand): it reads as an extraction or is refused with a reason, and
/// normalising what reads never panics.
pub fn structured_data(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        structured_data_value(&value);
    }
}

fn structured_data_value(value: &Value) {
    match Extraction::from_stored(value) {
        Ok(extraction) => {
            for doc_type in DOCUMENT_TYPES {
                let normalized = matching::normalize::normalize(&extraction, doc_type);
                let _ = format!("{normalized:?}");
            }
        }
        Err(unreadable) => assert!(!unreadable.reason.is_empty()),
    }
}

/// Transcribed text through the `rules` extractor: it never fails, and what it produces
/// passes the contract's schema checks.
pub fn rules_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let extraction = docflow::extract::rules::extract(&text);
    extraction_invariants(&extraction, true);
}

/// Arbitrary bytes as an uploaded PDF: the text layer is read as ingestion reads it (a
/// parser panic is caught and becomes a permanent `BadPdf`; a password-protected file is
/// `Encrypted`), and the text goes through the rules extractor.
pub fn rules_pdf(data: &[u8]) {
    let bytes = Bytes::copy_from_slice(data);
    match RUNTIME.block_on(docflow::ocr::text_layer(bytes)) {
        Ok(pages) => {
            let text = pages.join("\n\u{c}\n");
            extraction_invariants(&docflow::extract::rules::extract(&text), true);
        }
        Err(e) => {
            child_survived(&e);
            assert!(
                matches!(e, OcrError::BadPdf(_) | OcrError::Encrypted),
                "{e:?}"
            );
            assert!(!e.is_transient());
        }
    }
}

/// A parsing child that died on an input (`docflow::sandbox`) fails only that file in
/// production, but it is a finding all the same: a crash the parsers' own limits missed.
fn child_survived(e: &OcrError) {
    if let OcrError::Unsafe { reason } = e {
        panic!("the parsing child died on this input: {reason}");
    }
}

/// Arbitrary bytes as an XML upload read by the e-invoice reader: an answer for every
/// input (never a panic, never an entity expanded); what it reads is a valid,
/// high-confidence extraction from the `einvoice` provider, stored and read back.
pub fn einvoice_xml(data: &[u8]) {
    einvoice_read(data);
}

/// Arbitrary bytes as a PDF searched for an embedded e-invoice, as ingestion does
/// before any transcription (bounded inflation, bounded object walk).
pub fn einvoice_pdf(data: &[u8]) {
    if data.starts_with(b"%PDF") {
        einvoice_read(data);
    } else {
        let mut pdf = b"%PDF-1.7\n".to_vec();
        pdf.extend_from_slice(data);
        einvoice_read(&pdf);
    }
}

fn einvoice_read(data: &[u8]) {
    use docflow::extract::einvoice;
    // As ingestion reads it: in the parsing sandbox when this process has one.
    let read = RUNTIME
        .block_on(einvoice::read_untrusted(Bytes::copy_from_slice(data)))
        .unwrap_or_else(|e| {
            child_survived(&e);
            panic!("the e-invoice reader did not run: {e:?}")
        });
    match read {
        Ok(extraction) => {
            assert!(extraction.passes_quality_gate());
            let source = extraction
                .einvoice
                .as_ref()
                .expect("the source is recorded");
            assert_eq!(source.provider, "einvoice");
            assert!(source.syntax.is_some());
            extraction_invariants(&extraction, true);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// A Maesn HTTP answer (two bytes of status, then the body) read as the connector reads
/// it, for both calls, and a `Retry-After` value. Errors are classified without panicking;
/// a task id is never blank; a non-2xx status is always a status error.
pub fn maesn_response(data: &[u8]) {
    let (status, body) = match data {
        [a, b, rest @ ..] => (100 + u16::from_be_bytes([*a, *b]) % 500, rest),
        _ => return,
    };
    let body = String::from_utf8_lossy(body);
    let retry_after = datev::parse_retry_after(&body);
    let success = (200..300).contains(&status);
    match datev::read_created_task(status, &body, retry_after) {
        Ok(task_id) => {
            assert!(success);
            assert!(!task_id.trim().is_empty());
        }
        Err(e) => check_datev_error(&e, status),
    }
    match datev::read_task_state(status, &body, retry_after) {
        Ok(
            TaskState::Succeeded { information }
            | TaskState::PartiallySucceeded { information }
            | TaskState::Failed { information },
        ) => {
            assert!(success);
            let _ = datev::is_duplicate_rejection(&information);
        }
        Ok(TaskState::InProgress) => assert!(success),
        Err(e) => check_datev_error(&e, status),
    }
}

fn check_datev_error(e: &datev::DatevError, status: u16) {
    let _ = (
        e.retry_class(),
        e.may_have_been_accepted(),
        e.is_passing_refusal(),
    );
    let _ = e.to_string();
    match e {
        datev::DatevError::Status {
            status: s, body, ..
        } => {
            assert_eq!(*s, status);
            assert!(!(200..300).contains(s));
            assert!(body.chars().count() <= 500);
        }
        datev::DatevError::UnexpectedBody { .. } => assert!((200..300).contains(&status)),
        other => panic!("reading an answer cannot fail with {other:?}"),
    }
}

/// Arbitrary bytes as an uploaded image given to the one preprocessing pass: decoding is
/// bounded (a declared size beyond the limits is refused before any pixel buffer is
/// allocated), and every failure is a permanent bad-input error.
pub fn image(data: &[u8]) {
    let bytes = Bytes::copy_from_slice(data);
    match RUNTIME.block_on(docflow::ocr::preprocess_image(bytes)) {
        Ok(Some(image)) => {
            let magic: &[u8] = match image.extension() {
                "png" => b"\x89PNG",
                _ => b"\xff\xd8\xff",
            };
            assert!(image.bytes.starts_with(magic));
        }
        // Too large for Textract even as JPEG: the caller keeps its first reading.
        Ok(None) => {}
        Err(e) => {
            child_survived(&e);
            assert!(
                matches!(e, OcrError::BadImage(_) | OcrError::TooLarge { .. }),
                "{e:?}"
            );
            assert!(!e.is_transient());
        }
    }
}
