//! Property tests over every input docflow reads from outside: the short, always-on run
//! of the fuzz targets in `docflow_tests::fuzz_targets` (the long, coverage-guided run is
//! the `fuzz/` crate: docs/reliability.md). Each property feeds both raw bytes and inputs
//! shaped like the real thing (events, ids, LLM envelopes, invoices, PDFs, Maesn answers)
//! so that the generated cases get past the first parser. Zero panics is the property;
//! each target asserts its own invariants on top.
//!
//! Inputs that once broke a target are kept in `fuzz/regressions/<target>/` and replayed
//! by [`every_kept_regression_input_passes_its_target`].

use std::io::Cursor;

use docflow_tests::fuzz_targets as targets;
use docflow_tests::pdf::text_pdf;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Value, json};

/// Untrusted bytes parsed in the sandbox's children, as ingestion parses them.
fn sandboxed() {
    docflow_tests::sandbox::enable();
}

/// A target run on an input that kills the parsing child says so: a finding, although
/// production would fail only that file.
#[test]
fn a_parsing_child_that_dies_is_a_finding_of_the_target() {
    sandboxed();
    let died = std::panic::catch_unwind(|| {
        targets::rules_pdf(&docflow_tests::hostile_files::cmap_nesting());
    })
    .expect_err("the target noticed the child's death");
    let message = died.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("the parsing child died on this input: stack overflow"),
        "{message}"
    );
}

/// `cases` per property, or `PROPTEST_CASES` when set (a longer run without cargo fuzz:
/// `PROPTEST_CASES=20000 cargo test --release -p docflow-tests --test it fuzz_properties::`).
fn config(cases: u32) -> Config {
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cases),
        // Failures are reported with the shrunk input; nothing is written to the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

fn uuid_text() -> impl Strategy<Value = String> {
    any::<u128>().prop_map(|n| uuid::Uuid::from_u128(n).to_string())
}

/// Bodies as they arrive: ids in every spelling `Uuid::parse_str` knows, with whitespace,
/// and what poison looks like (JSON, numbers, empty, unicode, almost-ids).
fn body() -> impl Strategy<Value = String> {
    prop_oneof![
        uuid_text(),
        uuid_text().prop_map(|u| format!(" \n{u}\t")),
        uuid_text().prop_map(|u| format!("{{{u}}}")),
        uuid_text().prop_map(|u| format!("urn:uuid:{u}")),
        uuid_text().prop_map(|u| u.replace('-', "")),
        uuid_text().prop_map(|u| u.to_uppercase()),
        uuid_text().prop_map(|u| format!("{{\"document_id\": \"{u}\"}}")),
        uuid_text().prop_map(|u| u[..35].to_owned()),
        uuid_text().prop_map(|u| format!("{u}x")),
        Just(String::new()),
        Just("null".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        ".{0,120}",
        "\\PC{0,200}",
    ]
}

/// A record as Lambda sends it, with each field sometimes missing or odd.
fn record() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            4 => uuid_text().prop_map(Value::from),
            1 => Just(Value::from("")),
            1 => Just(Value::Null),
        ],
        prop::option::of(body()),
        prop_oneof![
            Just("arn:aws:sqs:eu-central-1:123456789012:docflow-ingestion"),
            Just("arn:aws:sqs:eu-central-1:123456789012:docflow-ingestion.fifo"),
            Just("not-an-arn"),
        ],
        prop::option::of(prop_oneof!["[0-9]{1,3}", ".{0,6}"]),
        prop::option::of("[a-c]"),
    )
        .prop_map(|(id, body, arn, receives, group)| {
            let mut attributes = serde_json::Map::new();
            attributes.insert("SentTimestamp".into(), json!("1763769600000"));
            if let Some(n) = receives {
                attributes.insert("ApproximateReceiveCount".into(), json!(n));
            }
            if let Some(g) = group {
                attributes.insert("MessageGroupId".into(), json!(g));
            }
            let mut r = json!({
                "receiptHandle": "AQEB",
                "attributes": attributes,
                "messageAttributes": {},
                "md5OfBody": "0",
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": "eu-central-1",
            });
            if !id.is_null() {
                r["messageId"] = id;
            }
            if let Some(b) = body {
                r["body"] = json!(b);
            }
            r
        })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_sqs_event_gets_a_valid_response_or_a_whole_batch_retry(
        records in prop::collection::vec(record(), 0..12),
    ) {
        let event = json!({ "Records": records });
        targets::sqs_event(event.to_string().as_bytes());
    }

    #[test]
    fn arbitrary_bytes_as_an_sqs_event_never_panic(data in bytes(512)) {
        targets::sqs_event(&data);
    }

    #[test]
    fn any_message_body_is_an_id_or_a_poison_message(body in body()) {
        targets::message_body(body.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_as_a_message_body_never_panic(data in bytes(256)) {
        targets::message_body(&data);
    }
}

// --- LLM answers ---------------------------------------------------------------------------

const CONTRACT_KEYS: &[&str] = &[
    "extraction_successful",
    "confidence",
    "missing_fields",
    "document_type",
    "invoice_number",
    "invoice_date",
    "due_date",
    "supplier_name",
    "currency",
    "subtotal",
    "vat_amount",
    "total",
    "po_reference",
    "delivery_note_reference",
    "invoice_reference",
    "line_items",
    "field_confidence",
    "matches",
    "candidate",
    "reasoning",
    "description",
    "quantity",
    "amount",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        prop_oneof![
            Just("high"),
            Just("medium"),
            Just("low"),
            Just("certain"),
            Just("invoice"),
            Just("credit_note"),
            Just("receipt"),
            Just("EUR"),
            Just("eur"),
            Just("2024-02-30"),
            Just("2024-05-02"),
            Just("0"),
            Just("1"),
        ]
        .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ]
}

/// JSON shaped like what an LLM may answer: the contract's keys, any value types.
fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((prop::sample::select(CONTRACT_KEYS), inner), 0..10).prop_map(
                |pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            ),
        ]
    })
}

/// An answer's text: bare JSON, fenced, inside prose, cut short.
fn answer_text() -> impl Strategy<Value = String> {
    (json_value(), 0..5u8, any::<prop::sample::Index>()).prop_map(|(v, shape, cut)| {
        let json = v.to_string();
        match shape {
            0 => json,
            1 => format!("```json\n{json}\n```"),
            2 => format!("Here is the result: {json} Hope this helps}}"),
            3 => {
                let chars = json.chars().count();
                json.chars().take(cut.index(chars + 1)).collect()
            }
            _ => format!("{{{json}"),
        }
    })
}

/// A provider's HTTP body around an answer (first byte picks the provider, as the
/// target reads it).
fn llm_body() -> impl Strategy<Value = Vec<u8>> {
    (answer_text(), any::<u8>(), json_value(), any::<bool>()).prop_map(
        |(text, selector, usage, with_model)| {
            let mut envelope = if selector % 2 == 0 {
                json!({"content": [{"type": "text", "text": text}], "usage": usage})
            } else {
                json!({"choices": [{"message": {"content": text}}], "usage": usage})
            };
            if with_model {
                envelope["model"] = json!("m");
            }
            let mut out = vec![selector];
            out.extend(envelope.to_string().into_bytes());
            out
        },
    )
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_llm_http_body_is_a_completion_or_a_transient_error(body in llm_body()) {
        targets::llm_response(&body);
    }

    #[test]
    fn arbitrary_bytes_as_an_llm_http_body_never_panic(data in bytes(512)) {
        targets::llm_response(&data);
    }

    #[test]
    fn any_answer_text_is_parsed_or_refused_as_transient(
        text in answer_text(),
        candidates in 0..12usize,
    ) {
        targets::llm_answer_text(&text, candidates);
    }

    #[test]
    fn any_stored_structured_data_reads_as_an_extraction_or_is_refused_with_a_reason(value in json_value()) {
        targets::structured_data(value.to_string().as_bytes());
    }
}

// --- the rules extractor: text and PDFs ------------------------------------------------

/// Lines of the kind invoices have: labels, numbers in German and English notation,
/// dates, currencies, parties, columns; mixed with noise.
fn invoice_line() -> impl Strategy<Value = String> {
    let label = prop::sample::select(vec![
        "Rechnung",
        "Rechnung Nr.",
        "Rechnungsdatum:",
        "Gutschrift",
        "Invoice",
        "Invoice No:",
        "Date:",
        "Due date:",
        "Factuur",
        "Factuurnummer",
        "Lieferschein",
        "Bestellung",
        "Purchase Order",
        "PO:",
        "Total",
        "Gesamtbetrag:",
        "Netto",
        "MwSt 19 %",
        "VAT 20%",
        "Subtotal",
        "IBAN:",
        "USt-IdNr.:",
        "zahlbar innerhalb 30 Tagen",
        "Pos.\tBeschreibung\tMenge\tPreis\tBetrag",
        "Verkäufer:",
        "Bill to:",
        "GmbH",
        "Ltd",
        "B.V.",
    ]);
    let value = prop_oneof![
        "[0-9]{1,3}(\\.[0-9]{3}){0,3},[0-9]{2}",
        "-?[0-9]{1,3}(,[0-9]{3}){0,3}\\.[0-9]{2}",
        "[0-3][0-9]\\.[01][0-9]\\.(19|20)[0-9]{2}",
        "(19|20)[0-9]{2}-[01][0-9]-[0-3][0-9]",
        "[01][0-9]/[0-3][0-9]/20[0-9]{2}",
        "(RE|INV|PO|LS|DN)-[0-9]{2,6}",
        "(EUR|€|USD|\\$|GBP|£|CHF|PLN)",
        "DE[0-9]{2} ?[0-9]{4} ?[0-9]{4} ?[0-9]{4} ?[0-9]{4} ?[0-9]{2}",
        "DE[0-9]{9}",
        "[A-Z][a-zäöü]{2,10}( [A-Z][a-z]{2,8}){0,2}",
        "\\PC{0,12}",
    ];
    (label, prop::collection::vec(value, 0..4), 0..3usize).prop_map(|(label, values, gap)| {
        let sep = ["  ", " ", "\t", "      "][gap];
        std::iter::once(label.to_owned())
            .chain(values)
            .collect::<Vec<_>>()
            .join(sep)
    })
}

fn invoice_text() -> impl Strategy<Value = String> {
    prop::collection::vec(invoice_line(), 0..40).prop_map(|lines| lines.join("\n"))
}

/// A real text PDF, then damaged: cut short, bytes overwritten, junk inserted.
fn damaged_pdf() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(invoice_line(), 1..12),
        0..4u8,
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(lines, damage, edits, at)| {
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            let mut pdf = text_pdf(&[&refs]);
            match damage {
                0 => {}
                1 => pdf.truncate(at.index(pdf.len())),
                2 => {
                    for (i, b) in edits {
                        let i = i.index(pdf.len());
                        pdf[i] = b;
                    }
                }
                _ => {
                    for (i, b) in edits {
                        let i = i.index(pdf.len());
                        pdf.insert(i, b);
                    }
                }
            }
            pdf
        })
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn the_rules_extractor_reads_any_invoice_like_text(text in invoice_text()) {
        targets::rules_text(text.as_bytes());
    }

    #[test]
    fn the_rules_extractor_reads_any_text(text in "\\PC{0,600}") {
        targets::rules_text(text.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_as_text_never_panic_the_rules_extractor(data in bytes(1024)) {
        targets::rules_text(&data);
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn any_damaged_pdf_is_read_or_refused_as_a_bad_pdf(pdf in damaged_pdf()) {
        sandboxed();
        targets::rules_pdf(&pdf);
    }

    #[test]
    fn arbitrary_bytes_as_a_pdf_are_refused_as_a_bad_pdf(data in bytes(1024)) {
        let mut pdf = b"%PDF-1.4\n".to_vec();
        pdf.extend(data);
        sandboxed();
        targets::rules_pdf(&pdf);
    }
}

// --- e-invoices ------------------------------------------------------------------------------

fn einvoice_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/einvoice")
            .join(name),
    )
    .unwrap()
}

/// A real e-invoice, damaged: truncated, bytes changed, or a hostile fragment (a DTD with
/// an external entity, an entity reference, deep nesting) spliced in.
fn damaged(file: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let fragments = prop::sample::select(vec![
        "<!DOCTYPE Invoice [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>".to_owned(),
        "&x;".to_owned(),
        "<a>".repeat(200),
        "</cbc:ID>".to_owned(),
        "<cbc:ID>SECOND</cbc:ID>".to_owned(),
        "\u{feff}".to_owned(),
    ]);
    (
        0..4u8,
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
        any::<prop::sample::Index>(),
        fragments,
    )
        .prop_map(move |(damage, edits, at, fragment)| {
            let mut bytes = einvoice_fixture(file);
            match damage {
                0 => {}
                1 => bytes.truncate(at.index(bytes.len())),
                2 => {
                    for (i, b) in &edits {
                        let i = i.index(bytes.len());
                        bytes[i] = *b;
                    }
                }
                _ => {
                    let i = at.index(bytes.len());
                    bytes.splice(i..i, fragment.into_bytes());
                }
            }
            bytes
        })
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn any_damaged_xml_e_invoice_is_read_or_refused_without_a_panic(
        xml in damaged("xrechnung-01.01a-INVOICE_ubl.xml")
    ) {
        sandboxed();
        targets::einvoice_xml(&xml);
    }

    #[test]
    fn arbitrary_bytes_as_an_xml_upload_are_refused_without_a_panic(data in bytes(1024)) {
        sandboxed();
        targets::einvoice_xml(&data);
    }

    #[test]
    fn any_damaged_hybrid_pdf_is_read_or_refused_without_a_panic(
        pdf in damaged("zugferd-EN16931_Einfach.pdf")
    ) {
        sandboxed();
        targets::einvoice_pdf(&pdf);
    }

    #[test]
    fn arbitrary_bytes_as_a_hybrid_pdf_are_refused_without_a_panic(data in bytes(1024)) {
        sandboxed();
        targets::einvoice_pdf(&data);
    }
}

// --- Maesn answers -----------------------------------------------------------------------

fn maesn_answer() -> impl Strategy<Value = Vec<u8>> {
    let status = prop_oneof![
        4 => Just(200u16),
        1 => Just(202u16),
        1 => prop::sample::select(vec![301u16, 400, 401, 404, 405, 408, 409, 429, 500, 502, 503, 504]),
        1 => 100..600u16,
    ];
    let task_status = prop::option::of(prop::sample::select(vec![
        "SUCCESS",
        "PARTIAL_SUCCESS",
        "FINISHED",
        "FAILED",
        "CANCELLED_SUCCESSFULLY",
        "OPEN",
        "IN_PROGRESS",
        "CANCEL_FAILED",
        "PAUSED",
        "",
    ]));
    let body = prop_oneof![
        (prop::option::of(prop_oneof![uuid_text(), Just("  ".to_owned()), Just(String::new())]))
            .prop_map(|id| json!({"meta": {}, "data": {"taskId": id}}).to_string()),
        (task_status, prop::collection::vec(prop::option::of(".{0,30}"), 0..4)).prop_map(
            |(status, messages)| json!({
                "meta": {},
                "data": {
                    "status": status,
                    "information": messages.into_iter().map(|m| json!({"message": m})).collect::<Vec<_>>(),
                }
            })
            .to_string()
        ),
        json_value().prop_map(|v| json!({"data": v}).to_string()),
        json_value().prop_map(|v| v.to_string()),
        "\\PC{0,80}",
        prop_oneof![Just("120"), Just("Wed, 21 Oct 2015 07:28:00 GMT"), Just("Fri, 31 Dec 9999 23:59:59 GMT")]
            .prop_map(str::to_owned),
    ];
    (status, body).prop_map(|(status, body)| {
        // The target reads the status as 100 + (two bytes mod 500).
        let mut out = (status - 100).to_be_bytes().to_vec();
        out.extend(body.into_bytes());
        out
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_maesn_answer_is_read_or_classified(answer in maesn_answer()) {
        targets::maesn_response(&answer);
    }

    #[test]
    fn arbitrary_bytes_as_a_maesn_answer_never_panic(data in bytes(256)) {
        targets::maesn_response(&data);
    }
}

// --- images --------------------------------------------------------------------------------

fn small_image(format: image::ImageFormat, side: u32, seed: u8) -> Vec<u8> {
    let img = image::GrayImage::from_fn(side, side, |x, y| {
        image::Luma([seed.wrapping_add((x * 7 + y * 13) as u8)])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).expect("encode");
    out.into_inner()
}

fn damaged_image() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        1..24u32,
        any::<u8>(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
    )
        .prop_map(|(png, side, seed, edits)| {
            let format = if png {
                image::ImageFormat::Png
            } else {
                image::ImageFormat::Jpeg
            };
            let mut bytes = small_image(format, side, seed);
            for (i, b) in edits {
                let i = i.index(bytes.len());
                bytes[i] = b;
            }
            bytes
        })
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn any_damaged_image_is_preprocessed_or_refused_as_bad_input(data in damaged_image()) {
        sandboxed();
        targets::image(&data);
    }
}

// --- kept inputs -----------------------------------------------------------------------------

/// Every input a fuzzer or a property test once broke a target with stays a test:
/// `fuzz/regressions/<target>/<file>` is replayed through `<target>`. The directory is
/// part of the repository, so finding nothing to replay is a failure, not a pass.
#[test]
fn every_kept_regression_input_passes_its_target() {
    sandboxed();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let dirs = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", root.display()));
    let mut replayed: Vec<(String, usize)> = Vec::new();
    for dir in dirs {
        let dir = dir.unwrap().path();
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let target: fn(&[u8]) = match name.as_str() {
            "sqs_event" => targets::sqs_event,
            "message_body" => targets::message_body,
            "llm_response" => targets::llm_response,
            "structured_data" => targets::structured_data,
            "rules_text" => targets::rules_text,
            "rules_pdf" => targets::rules_pdf,
            "einvoice_xml" => targets::einvoice_xml,
            "einvoice_pdf" => targets::einvoice_pdf,
            "maesn_response" => targets::maesn_response,
            "image" => targets::image,
            other => panic!("fuzz/regressions/{other:?} names no target"),
        };
        let mut count = 0;
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            eprintln!("replaying {}", path.display());
            target(&data);
            count += 1;
        }
        replayed.push((name, count));
    }
    eprintln!("kept inputs replayed per target: {replayed:?}");
    assert!(
        !replayed.is_empty(),
        "no target has kept inputs under {}",
        root.display()
    );
    for (target, count) in &replayed {
        assert!(*count > 0, "fuzz/regressions/{target}/ replayed no input");
    }
}
