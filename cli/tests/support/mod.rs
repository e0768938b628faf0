//! The fault-injection soak: N documents through the whole local pipeline —
//! `docflow local run`'s runner (the same wiring, event-source mappings and sweeper
//! schedule), real Postgres, moto SQS/S3/Secrets Manager, wiremock stand-ins for the LLM
//! (Anthropic's Messages API), Textract (its JSON API), Maesn and Slack — with seeded
//! faults, then the invariants checked and printed as a table. Most documents are text
//! files; a seeded share are scans (a PNG, or a PDF without a text layer) whose text only
//! the Textract stand-in can give. Used by `tests/soak.rs` (`make soak`, and a small
//! profile in `make test`) and `tests/secrets_never_leak.rs`.
//!
//! What is injected, and where:
//!
//! | fault | where |
//! |---|---|
//! | LLM 429 / 500 / timeout, 401, malformed JSON | the LLM stand-in ([`Llm`]), per call |
//! | Textract 400 `ProvisionedThroughputExceededException` / `ThrottlingException`, 500 `InternalServerError` | the Textract stand-in ([`Ocr`]), per call |
//! | worker crash after the claim | [`Faulty`], the runner's test-only `fault_injection` hook: the invocation is dropped once the claim is in the database, nothing is reported, the batch's visibility expires |
//! | duplicate delivery | [`Faulty`]: a second copy of the message body is sent to the queue |
//! | Maesn 503, Maesn answering after the client's timeout; booked, then a proxy's 503, a 303, or a 200 cut off by a reset | the Maesn stand-in's `Faults` (the cut: the hostile front) |
//! | idle keep-alive connections dropped after 1 s (a load balancer after a Lambda freeze) | [`docflow_tests::hostile::HostileFront`] in front of the Maesn stand-in |
//! | Postgres outage | [`TcpProxy`]: the functions reach Postgres only through it; for a window it closes every connection and refuses new ones |
//!
//! Time is scaled down: queue visibility 5 s, heartbeats 1 s, stale thresholds of a few
//! seconds, matching's claim lease 35 s (invocations time out after 30 s), the sweeper's
//! thresholds to match. The functions' hard-coded SQS backoffs
//! (ingestion 30 s·2ⁿ, matching 300 s / 1800 s) are scaled by
//! [`docflow_tests::time_warp::TimeWarp`], an SDK interceptor on the functions' SQS
//! client: a `ChangeMessageVisibility` of 30 s or more is divided by 120 (at least 1 s);
//! shorter ones (heartbeats, the output worker's configured backoffs) are left as they
//! are. Nothing in the functions changes.

// Two test binaries include this module, each using part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::SqsEvent;
use docflow::ids::DocumentId;
use docflow_cli::maesn::{self, StandIn};
use docflow_cli::run::{self, FaultInjection};
use docflow_cli::wiring::{Local, Options, Queues};
use docflow_dev::local::{BoxFuture, Invocation, Invoke, QueueSpec, RunOptions};
use docflow_tests::llm::{anthropic_error, anthropic_text};
use docflow_tests::logs::Logs;
use docflow_tests::{aws, fresh_bucket, fresh_queue, unique};
use futures::StreamExt as _;
use lambda_runtime::LambdaEvent;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Fault rates (shares of calls, deliveries or requests).
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    pub llm_transient: f64,
    pub llm_permanent: f64,
    pub llm_malformed: f64,
    pub crash: f64,
    pub duplicate: f64,
    pub maesn_unavailable: f64,
    pub maesn_late: f64,
    /// Booked, then answered by a proxy's 503 / a 303 / a 200 cut off by a reset:
    /// each leaves the export in doubt.
    pub maesn_proxy_503: f64,
    pub maesn_see_other: f64,
    pub maesn_cut_body: f64,
    /// Booked, but the task never ends (`IN_PROGRESS` on every poll): the sweeper's
    /// maximum task age (`SWEEP_MAX_TASK_AGE_SECONDS`, scaled) must end it in doubt.
    pub maesn_never_ending: f64,
    /// Documents uploaded as scans (OCR through the Textract stand-in).
    pub scanned: f64,
    /// Textract calls throttled (400 `ProvisionedThroughputExceededException` or
    /// `ThrottlingException`, half each) and failed (500 `InternalServerError`).
    pub ocr_throttled: f64,
    pub ocr_server_error: f64,
}

impl Rates {
    /// The soak's fault rates (docs/soak.md).
    pub const ISSUE: Rates = Rates {
        llm_transient: 0.30,
        llm_permanent: 0.03,
        llm_malformed: 0.05,
        crash: 0.05,
        duplicate: 0.10,
        maesn_unavailable: 0.20,
        maesn_late: 0.02,
        // Hostile infrastructure between docflow and Maesn.
        maesn_proxy_503: 0.02,
        maesn_see_other: 0.02,
        maesn_cut_body: 0.02,
        // A hostile Maesn: a task that never ends.
        maesn_never_ending: 0.02,
        // A share of scans, and Textract's transient errors.
        scanned: 0.15,
        ocr_throttled: 0.20,
        ocr_server_error: 0.05,
    };
}

/// One soak run.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Documents (half invoices, half the purchase orders they bill).
    pub documents: usize,
    pub seed: u64,
    pub rates: Rates,
    /// The Postgres outage window.
    pub outage: Duration,
    /// Give up waiting for the pipeline to drain after this long (the run then fails:
    /// whatever is still open is counted as lost).
    pub max_drain: Duration,
    /// Concurrent batches per function.
    pub concurrency: usize,
    /// Take the way to Slack down for 3 s in every 4 (notices fail with connection
    /// errors and are retried, or told by a later delivery or sweep).
    pub slack_outages: bool,
    /// Count failures whose admin notice is not delivered yet as open work. The sweeper
    /// tells an undelivered output-job notice only after 300 s (not scaled), so a run
    /// with Slack outages cannot wait for them.
    pub wait_for_notices: bool,
}

impl Profile {
    /// `SOAK_DOCUMENTS` (default `default_documents`), `SOAK_SEED` (default: from the
    /// clock; printed; `make test` pins one, `make soak` leaves it to the clock),
    /// `SOAK_MAX_SECONDS` (default 900).
    pub fn from_env(default_documents: usize) -> Profile {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let documents: usize = var("SOAK_DOCUMENTS")
            .map(|v| v.parse().expect("SOAK_DOCUMENTS is a number"))
            .unwrap_or(default_documents);
        let seed = var("SOAK_SEED")
            .map(|v| v.parse().expect("SOAK_SEED is a number"))
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    % 1_000_000_007
            });
        Profile {
            documents: documents.max(2).div_ceil(2) * 2,
            seed,
            rates: Rates::ISSUE,
            outage: Duration::from_secs(5),
            max_drain: Duration::from_secs(
                var("SOAK_MAX_SECONDS")
                    .map(|v| v.parse().expect("SOAK_MAX_SECONDS is a number"))
                    .unwrap_or(900),
            ),
            concurrency: 2,
            slack_outages: false,
            wait_for_notices: true,
        }
    }
}

/// The recognisable secret values every function runs with (the secret-leak run looks for them).
#[derive(Debug, Clone)]
pub struct Secrets {
    pub llm_key: String,
    pub maesn_key: String,
    /// The Maesn API key after the mid-run rotation (the old one is revoked then).
    pub maesn_key_rotated: String,
    pub db_password: String,
    pub slack_token: String,
}

impl Secrets {
    fn new() -> Secrets {
        let tag = &Uuid::new_v4().simple().to_string()[..10];
        Secrets {
            llm_key: format!("sk-ant-SOAKLLM{tag}"),
            maesn_key: format!("maesn-SOAKMAESN{tag}"),
            maesn_key_rotated: format!("maesn-SOAKROTATED{tag}"),
            // The functions' roles' passwords are the local stack's (make up); the
            // ingestion role's stands for them.
            db_password: docflow_dev::local::database::password("docflow_ingestion"),
            slack_token: format!("SOAKSLACK{tag}"),
        }
    }

    /// Each value with its name.
    pub fn all(&self) -> [(&'static str, &str); 5] {
        [
            ("LLM API key", &self.llm_key),
            ("Maesn API key", &self.maesn_key),
            ("rotated Maesn API key", &self.maesn_key_rotated),
            ("database password", &self.db_password),
            ("Slack webhook token", &self.slack_token),
        ]
    }
}

// ---------------------------------------------------------------------------------------
// Postgres proxy

/// A TCP proxy the soak can take down: between the functions and Postgres, and between
/// the functions and Slack.
pub struct TcpProxy {
    pub port: u16,
    down: AtomicBool,
    /// Refuse the next connection even while up (then let connections through again).
    refuse_next: AtomicBool,
    connections: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    pub refused: AtomicU64,
    pub cut: AtomicU64,
    pub accepted: AtomicU64,
}

impl TcpProxy {
    /// Listens on the first free port of 4720–4739 and forwards to `upstream`. It runs
    /// on a thread and runtime of its own, so a busy test runtime (2 worker threads
    /// shared with the functions) never delays the bytes it forwards.
    pub async fn start(upstream: (String, u16)) -> Arc<TcpProxy> {
        let mut bound = None;
        for port in 4720..4740 {
            if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                bound = Some((listener, port));
                break;
            }
        }
        let (listener, port) = bound.expect("a free port in 4720-4739 for a proxy");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let proxy = Arc::new(TcpProxy {
            port,
            down: AtomicBool::new(false),
            refuse_next: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            refused: AtomicU64::new(0),
            cut: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        });
        let me = proxy.clone();
        // The thread (and its runtime) lives as long as the test process.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("soak-tcp-proxy")
                .enable_all()
                .build()
                .expect("the proxy's runtime");
            runtime.block_on(accept_loop(listener, upstream, me));
        });
        proxy
    }
}

async fn accept_loop(listener: std::net::TcpListener, upstream: (String, u16), me: Arc<TcpProxy>) {
    let listener = TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let Ok((mut client, _)) = listener.accept().await else {
            continue;
        };
        if me.down.load(Ordering::SeqCst) || me.refuse_next.swap(false, Ordering::SeqCst) {
            me.refused.fetch_add(1, Ordering::SeqCst);
            drop(client);
            continue;
        }
        me.accepted.fetch_add(1, Ordering::SeqCst);
        let upstream = upstream.clone();
        let task = tokio::spawn(async move {
            if let Ok(mut server) = TcpStream::connect(upstream).await {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
        });
        let mut connections = me.connections.lock().unwrap();
        connections.retain(|t| !t.is_finished());
        connections.push(task);
    }
}

impl TcpProxy {
    /// Refuses the next connection whenever it comes, even while up.
    pub fn refuse_next(&self) {
        self.refuse_next.store(true, Ordering::SeqCst);
    }

    /// Closes every connection and refuses new ones (`true`), or lets them through again.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
        if down {
            let mut connections = self.connections.lock().unwrap();
            for task in connections.drain(..) {
                if !task.is_finished() {
                    self.cut.fetch_add(1, Ordering::SeqCst);
                }
                task.abort();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Documents and the LLM stand-in

const WORDS: [&str; 16] = [
    "Alpen",
    "Birke",
    "Cedar",
    "Delta",
    "Eiche",
    "Fjord",
    "Granit",
    "Hafen",
    "Iris",
    "Jade",
    "Kiesel",
    "Lotus",
    "Mistral",
    "Nordlicht",
    "Opal",
    "Polar",
];

fn supplier(i: usize) -> String {
    format!(
        "{} {} {} Handel GmbH",
        WORDS[i % 16],
        WORDS[(i / 16) % 16],
        WORDS[(i / 256) % 16]
    )
}

fn amounts(i: usize) -> (f64, f64, f64) {
    let subtotal = 100.0 + (i as f64) * 7.0;
    let vat = (subtotal * 0.19 * 100.0).round() / 100.0;
    (subtotal, vat, subtotal + vat)
}

fn invoice_number(i: usize) -> String {
    format!("SOAK-INV-{i:06}")
}

fn po_number(i: usize) -> String {
    format!("SOAK-PO-{i:06}")
}

/// Every fourth invoice names no order: matching has only supplier, amounts and dates
/// to go on, the score lands in the ambiguous band and the LLM decides.
fn names_its_order(i: usize) -> bool {
    !i.is_multiple_of(4)
}

fn invoice_text(i: usize) -> String {
    let (subtotal, vat, total) = amounts(i);
    let order = if names_its_order(i) {
        format!("Ihre Bestellung: {}\n", po_number(i))
    } else {
        String::new()
    };
    format!(
        "RECHNUNG\n{}\nUSt-IdNr. DE{}\nRechnungsnummer: {}\nRechnungsdatum: 2026-03-{:02}\n\
         {order}Beratung und Lieferung Posten {i}: {subtotal:.2} EUR\n\
         MwSt 19 %: {vat:.2} EUR\nGesamtbetrag: {total:.2} EUR\n",
        supplier(i),
        100_000_000 + i,
        invoice_number(i),
        1 + i % 28,
    )
}

fn po_text(i: usize) -> String {
    let (subtotal, vat, total) = amounts(i);
    format!(
        "BESTELLUNG {}\nLieferant: {}\nBestelldatum: 2026-02-{:02}\n\
         Posten {i}: {subtotal:.2} EUR\nMwSt: {vat:.2} EUR\nSumme: {total:.2} EUR\n",
        po_number(i),
        supplier(i),
        1 + i % 28
    )
}

/// What a careful LLM extracts from document `i`'s text.
fn extraction(invoice: bool, i: usize) -> Value {
    let (subtotal, vat, total) = amounts(i);
    let line = json!([{"description": format!("Posten {i}"), "quantity": 1, "unit_price": subtotal, "amount": subtotal}]);
    if invoice {
        json!({
            "extraction_successful": true, "confidence": "high", "missing_fields": [],
            "document_type": "invoice", "invoice_number": invoice_number(i),
            "invoice_date": format!("2026-03-{:02}", 1 + i % 28),
            "supplier_name": supplier(i), "supplier_vat_id": format!("DE{}", 100_000_000 + i),
            "currency": "EUR", "subtotal": subtotal, "vat_amount": vat, "total": total,
            "po_reference": if names_its_order(i) { Some(po_number(i)) } else { None },
            "line_items": line
        })
    } else {
        json!({
            "extraction_successful": true, "confidence": "high", "missing_fields": [],
            "document_type": "purchase_order", "invoice_number": po_number(i),
            "invoice_date": format!("2026-02-{:02}", 1 + i % 28),
            "supplier_name": supplier(i), "currency": "EUR",
            "subtotal": subtotal, "vat_amount": vat, "total": total, "line_items": line
        })
    }
}

/// The document number the prompt is about: `(is_invoice, i)`.
fn document_in(prompt: &str) -> Option<(bool, usize)> {
    for (prefix, invoice) in [
        ("Rechnungsnummer: SOAK-INV-", true),
        ("BESTELLUNG SOAK-PO-", false),
    ] {
        if let Some(at) = prompt.find(prefix) {
            let digits: String = prompt[at + prefix.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            return digits.parse().ok().map(|i| (invoice, i));
        }
    }
    None
}

/// Counters of the LLM stand-in.
#[derive(Debug, Default)]
pub struct LlmCounts {
    pub calls: AtomicU64,
    pub rate_limited: AtomicU64,
    pub server_errors: AtomicU64,
    pub timeouts: AtomicU64,
    pub permanent: AtomicU64,
    pub malformed: AtomicU64,
    pub answered: AtomicU64,
    pub wrong_key: AtomicU64,
    /// Answered matching prompts (the rest were extraction prompts).
    pub matching: AtomicU64,
}

/// A careful matcher: the candidates that carry the source's pair number belong to it.
fn matching_answer(prompt: &str) -> Value {
    let (source, candidates) = prompt
        .split_once("\n\nCandidates:\n")
        .unwrap_or((prompt, "[]"));
    let pair = |text: &str| {
        text.find("SOAK-")
            .and_then(|at| text[at..].find('-').map(|d| at + d + 1))
            .and_then(|rest| text[rest..].find('-').map(|d| rest + d + 1))
            .map(|digits| text[digits..].chars().take(6).collect::<String>())
    };
    let Some(number) = pair(source) else {
        return json!({"matches": []});
    };
    let candidates: Vec<Value> = serde_json::from_str(candidates).unwrap_or_default();
    let matches: Vec<Value> = candidates
        .iter()
        .filter(|c| c["document"].to_string().contains(&format!("-{number}")))
        .map(|c| json!({"candidate": c["candidate"], "confidence": "high", "reasoning": "same order number"}))
        .collect();
    json!({ "matches": matches })
}

/// Anthropic's Messages API with seeded faults. Extraction prompts are answered with the
/// document's data; matching prompts with "no candidate belongs".
struct Llm {
    rng: Mutex<StdRng>,
    rates: Rates,
    counts: Arc<LlmCounts>,
    key: String,
    late_by: Duration,
}

impl Respond for Llm {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let c = &self.counts;
        c.calls.fetch_add(1, Ordering::SeqCst);
        let key = request
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok());
        if key != Some(self.key.as_str()) {
            c.wrong_key.fetch_add(1, Ordering::SeqCst);
            return anthropic_error(401, "authentication_error", "invalid x-api-key");
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let system = body["system"].as_str().unwrap_or_default();
        let user = body["messages"][0]["content"].as_str().unwrap_or_default();
        let (draw, pick): (f64, u32) = {
            let mut rng = self.rng.lock().unwrap();
            (rng.random(), rng.random_range(0..3))
        };
        let r = self.rates;
        if draw < r.llm_transient {
            return match pick {
                0 => {
                    c.rate_limited.fetch_add(1, Ordering::SeqCst);
                    anthropic_error(429, "rate_limit_error", "rate limited")
                }
                1 => {
                    c.server_errors.fetch_add(1, Ordering::SeqCst);
                    anthropic_error(500, "api_error", "internal server error")
                }
                _ => {
                    c.timeouts.fetch_add(1, Ordering::SeqCst);
                    anthropic_text("{}").set_delay(self.late_by)
                }
            };
        }
        if draw < r.llm_transient + r.llm_permanent {
            c.permanent.fetch_add(1, Ordering::SeqCst);
            return anthropic_error(
                400,
                "invalid_request_error",
                "prompt is too long: 231042 tokens > 200000 maximum",
            );
        }
        if draw < r.llm_transient + r.llm_permanent + r.llm_malformed {
            c.malformed.fetch_add(1, Ordering::SeqCst);
            return anthropic_text("Sure! Here is the data you asked for: {\"invoice_number\": ");
        }
        c.answered.fetch_add(1, Ordering::SeqCst);
        if system.starts_with("You match") {
            c.matching.fetch_add(1, Ordering::SeqCst);
            return anthropic_text(&matching_answer(user).to_string());
        }
        match document_in(user) {
            Some((invoice, i)) => anthropic_text(&extraction(invoice, i).to_string()),
            None => anthropic_text(
                &json!({"extraction_successful": false, "confidence": "low", "missing_fields": ["everything"]})
                    .to_string(),
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Scans and the Textract stand-in

/// How a document is uploaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upload {
    Text,
    /// A PNG image of the page.
    Png,
    /// A PDF whose one page is an image, without a text layer.
    ScannedPdf,
}

impl Upload {
    fn extension(self) -> &'static str {
        match self {
            Upload::Text => "txt",
            Upload::Png => "png",
            Upload::ScannedPdf => "pdf",
        }
    }

    /// The file's bytes: the text itself, or a (blank, faint) scan whose text only the
    /// Textract stand-in knows.
    fn bytes(self, text: String) -> Vec<u8> {
        use docflow_tests::scan;
        match self {
            Upload::Text => text.into_bytes(),
            Upload::Png => scan::png(&scan::faint_scan(120, 170)),
            Upload::ScannedPdf => scan::pdf(&[scan::scanned(scan::faint_scan(120, 170))]),
        }
    }
}

/// What the Textract stand-in knows a hostile scan by: it reads it poorly.
const HOSTILE_SCAN: &str = "\u{1}hostile scan";

/// The `n`-th hostile file: (what it is, its name, its bytes), alternately a PDF whose
/// content stream is a flate bomb (256 MiB of zeros in 1.7 MB) and a complete PNG of
/// 11,000 x 11,000 RGB pixels (363 MB decoded, in 2.3 MB) that reads poorly.
fn hostile_file(n: usize) -> (&'static str, &'static str, Vec<u8>) {
    if n.is_multiple_of(2) {
        (
            "flate-bomb PDF",
            "bomb.pdf",
            docflow_tests::pdf::flate_bomb_pdf(256 << 20),
        )
    } else {
        (
            "11000 x 11000 RGB PNG",
            "huge-scan.png",
            docflow_tests::pdf::black_png(11_000, 11_000, true),
        )
    }
}

/// The confidence the Textract stand-in gives every line (a clean scan: no second,
/// preprocessed reading); an ingestion's quality score of `OCR_CONFIDENCE / 100` shows
/// its text came from the stand-in.
const OCR_CONFIDENCE: f64 = 97.5;

/// Counters of the Textract stand-in.
#[derive(Debug, Default)]
pub struct OcrCounts {
    pub calls: AtomicU64,
    pub throughput_exceeded: AtomicU64,
    pub throttled: AtomicU64,
    pub server_errors: AtomicU64,
    pub answered: AtomicU64,
    /// Third faults in a row for one object: the AWS SDK's three attempts used up, a
    /// transient error reaches the ingestion worker (which backs off through the queue).
    pub reached_worker: AtomicU64,
    /// Calls naming an S3 object the soak did not upload as a scan.
    pub unknown_object: AtomicU64,
    /// Calls of another operation than `DetectDocumentText` (single pages only here).
    pub other_operation: AtomicU64,
    /// Calls naming a document Textract refuses for its size (over 10,000 px a side or
    /// 10 MB), refused as Textract does: docflow must scale such an image down first.
    pub over_limits: AtomicU64,
}

/// Textract's JSON API (`DetectDocumentText`) with seeded faults. Like Textract it reads
/// the document from the S3 object the request names; being a stand-in, it knows each
/// scan's text from the soak, which registers it by key once the upload is recorded.
///
/// Faults come in bursts, as throttling does: a drawn fault repeats for 1–4 calls about
/// the same object, so some outlast the SDK's own three attempts and reach the worker.
struct Ocr {
    rng: Mutex<StdRng>,
    rates: Rates,
    counts: Arc<OcrCounts>,
    scans: Arc<Mutex<HashMap<String, String>>>,
    /// Per object: the fault being repeated, calls it still repeats for, faults in a row.
    bursts: Mutex<HashMap<String, Burst>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Burst {
    fault: u8,
    left: u32,
    in_a_row: u32,
}

/// Textract's answer for fault `kind` (0, 1: throttled; 2: internal error), counted.
fn ocr_fault(counts: &OcrCounts, kind: u8) -> ResponseTemplate {
    use docflow_tests::ingestion_harness::textract_error;
    match kind {
        0 => {
            counts.throughput_exceeded.fetch_add(1, Ordering::SeqCst);
            textract_error(
                400,
                "ProvisionedThroughputExceededException",
                "The number of requests exceeded your throughput limit.",
            )
        }
        1 => {
            counts.throttled.fetch_add(1, Ordering::SeqCst);
            textract_error(400, "ThrottlingException", "Rate exceeded")
        }
        _ => {
            counts.server_errors.fetch_add(1, Ordering::SeqCst);
            textract_error(
                500,
                "InternalServerError",
                "Amazon Textract experienced a service issue. Try your call again.",
            )
        }
    }
}

impl Ocr {
    /// The scan's text; waits a little for a registration racing the first delivery
    /// (the seeder registers the key right after `ingest` returns, which is after the
    /// message was sent). Blocking is fine: wiremock answers on its own thread.
    fn text_of(&self, key: &str) -> Option<String> {
        let started = Instant::now();
        loop {
            if let Some(text) = self.scans.lock().unwrap().get(key) {
                return Some(text.clone());
            }
            if started.elapsed() > Duration::from_secs(5) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Respond for Ocr {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        use docflow_tests::ingestion_harness::{textract_error, textract_ok};
        let c = &*self.counts;
        c.calls.fetch_add(1, Ordering::SeqCst);
        let operation = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if operation != "Textract.DetectDocumentText" {
            c.other_operation.fetch_add(1, Ordering::SeqCst);
            return textract_error(
                400,
                "InvalidParameterException",
                &format!("the soak's Textract stand-in does not answer {operation:?}"),
            );
        }
        // What Textract refuses before reading it, refused first, whatever else is
        // drawn (docflow_tests::ingestion_harness::textract_refusal).
        if let Some(refusal) = docflow_tests::ingestion_harness::textract_refusal(&request.body) {
            c.over_limits.fetch_add(1, Ordering::SeqCst);
            return refusal;
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let key = body["Document"]["S3Object"]["Name"]
            .as_str()
            .unwrap_or_default();
        let fault = {
            let mut bursts = self.bursts.lock().unwrap();
            let burst = bursts.entry(key.to_owned()).or_default();
            if burst.left == 0 {
                let mut rng = self.rng.lock().unwrap();
                let draw: f64 = rng.random();
                let r = self.rates;
                let kind = if draw < r.ocr_throttled / 2.0 {
                    Some(0)
                } else if draw < r.ocr_throttled {
                    Some(1)
                } else if draw < r.ocr_throttled + r.ocr_server_error {
                    Some(2)
                } else {
                    None
                };
                if let Some(kind) = kind {
                    burst.fault = kind;
                    burst.left = rng.random_range(1..=4);
                }
            }
            if burst.left > 0 {
                burst.left -= 1;
                burst.in_a_row += 1;
                if burst.in_a_row.is_multiple_of(3) {
                    c.reached_worker.fetch_add(1, Ordering::SeqCst);
                }
                Some(burst.fault)
            } else {
                burst.in_a_row = 0;
                None
            }
        };
        if let Some(kind) = fault {
            return ocr_fault(c, kind);
        }
        match self.text_of(key) {
            // A poor first reading, so ingestion decodes the image to enhance it.
            Some(text) if text == HOSTILE_SCAN => textract_ok(&["Rechnunq"], 20.0),
            Some(text) => {
                c.answered.fetch_add(1, Ordering::SeqCst);
                let lines: Vec<&str> = text.lines().collect();
                textract_ok(&lines, OCR_CONFIDENCE)
            }
            None => {
                c.unknown_object.fetch_add(1, Ordering::SeqCst);
                textract_error(
                    400,
                    "InvalidS3ObjectException",
                    "Unable to get object metadata from S3. Check object key, region and/or access permissions.",
                )
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Crashes and duplicate deliveries

/// Deliveries the functions saw, per function and message body.
#[derive(Debug, Default)]
pub struct Deliveries {
    pub per_body: Mutex<HashMap<(String, String), u32>>,
    pub crashes: AtomicU64,
    pub crashes_after_claim: AtomicU64,
    pub duplicates_sent: AtomicU64,
}

impl Deliveries {
    fn of(&self, function: &str, body: &str) -> u32 {
        self.per_body
            .lock()
            .unwrap()
            .get(&(function.to_owned(), body.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

/// A function's invoker with injected worker crashes and duplicate deliveries.
struct Faulty {
    function: String,
    inner: Arc<dyn Invoke>,
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    /// The soak's own connection (not through the proxy): it watches for the claim.
    pool: PgPool,
    rng: Arc<Mutex<StdRng>>,
    rates: Rates,
    deliveries: Arc<Deliveries>,
}

/// The claim's footprint on the row a message names; changes when a worker claims it.
fn claim_query(function: &str) -> &'static str {
    match function {
        "ingestion" => {
            "SELECT concat_ws('|', status, started_at::text, attempt_count::text) FROM ingestion WHERE id = $1"
        }
        "matching" => {
            "SELECT concat_ws('|', matching_status, matching_attempts::text) FROM document WHERE id = $1"
        }
        _ => {
            "SELECT concat_ws('|', status::text, claim_token::text) FROM document_output_job WHERE id = $1"
        }
    }
}

async fn footprint(pool: &PgPool, function: &str, body: &str) -> Option<String> {
    let id = Uuid::parse_str(body).ok()?;
    sqlx::query_scalar::<_, Option<String>>(claim_query(function))
        .bind(id)
        .fetch_optional(pool)
        .await
        .ok()
        .flatten()
        .flatten()
}

impl Invoke for Faulty {
    fn invoke(&self, event: LambdaEvent<SqsEvent>) -> BoxFuture<'_, Invocation> {
        Box::pin(async move {
            let bodies: Vec<String> = event
                .payload
                .records
                .iter()
                .filter_map(|r| r.body.clone())
                .collect();
            {
                let mut per_body = self.deliveries.per_body.lock().unwrap();
                for body in &bodies {
                    *per_body
                        .entry((self.function.clone(), body.clone()))
                        .or_default() += 1;
                }
            }
            let (duplicates, crash_on) = {
                let mut rng = self.rng.lock().unwrap();
                let duplicates: Vec<String> = bodies
                    .iter()
                    .filter(|_| rng.random_bool(self.rates.duplicate))
                    .cloned()
                    .collect();
                let crash_on = bodies
                    .iter()
                    .find(|_| rng.random_bool(self.rates.crash))
                    .cloned();
                (duplicates, crash_on)
            };
            for body in duplicates {
                // SQS delivers at least once: the same body comes again, independently.
                if self
                    .sqs
                    .send_message()
                    .queue_url(&self.queue_url)
                    .message_body(body)
                    .send()
                    .await
                    .is_ok()
                {
                    self.deliveries
                        .duplicates_sent
                        .fetch_add(1, Ordering::SeqCst);
                }
            }
            let Some(body) = crash_on else {
                return self.inner.invoke(event).await;
            };
            let before = footprint(&self.pool, &self.function, &body).await;
            let inner = self.inner.clone();
            let run = tokio::spawn(async move { inner.invoke(event).await });
            let started = Instant::now();
            let mut claimed = false;
            while !run.is_finished() && started.elapsed() < Duration::from_secs(60) {
                if footprint(&self.pool, &self.function, &body).await != before {
                    claimed = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // The worker dies: whatever it was doing stops, its answer never arrives.
            run.abort();
            self.deliveries.crashes.fetch_add(1, Ordering::SeqCst);
            if claimed {
                self.deliveries
                    .crashes_after_claim
                    .fetch_add(1, Ordering::SeqCst);
            }
            Invocation::Failed("soak: the worker crashed (simulated) and reported nothing".into())
        })
    }
}

// ---------------------------------------------------------------------------------------
// The run

/// Everything a finished run leaves for the checks.
pub struct Soak {
    pub profile: Profile,
    pub secrets: Secrets,
    pub pool: PgPool,
    pub database: String,
    pub local: Local,
    pub maesn: Arc<StandIn>,
    /// The hostile front the functions reach the stand-in through.
    pub maesn_front: docflow_tests::hostile::HostileFront,
    pub slack: MockServer,
    pub llm: Arc<LlmCounts>,
    pub ocr: Arc<OcrCounts>,
    pub deliveries: Arc<Deliveries>,
    pub proxy: Arc<TcpProxy>,
    pub slack_proxy: Arc<TcpProxy>,
    pub outage_at: Option<Duration>,
    /// When the Maesn API key was rotated (from the start of the run).
    pub maesn_rotated_at: Option<Duration>,
    pub idle_in_tx: IdleInTx,
    pub drained: bool,
    pub drain_time: Duration,
    pub report: docflow_dev::local::RunReport,
    pub documents: Vec<Seeded>,
    /// Hostile files put in among the documents: (ingestion id, what it is).
    pub hostile: Vec<(Uuid, &'static str)>,
    pub approvals: Vec<Uuid>,
}

/// One seeded document.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub document_id: Uuid,
    pub ingestion_id: Uuid,
    pub invoice: bool,
    pub index: usize,
    pub upload: Upload,
}

/// What the `pg_stat_activity` sampler saw.
#[derive(Debug, Clone, Default)]
pub struct IdleInTx {
    pub samples: u64,
    /// The longest `idle in transaction` seen, in seconds, and its query.
    pub longest: f64,
    pub longest_query: String,
    /// Samples with a session idle in transaction for more than 1 s.
    pub over_one_second: u64,
}

async fn create_database() -> (String, PgPool, PgConnectOptions) {
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/docflow".into());
    let admin_options: PgConnectOptions = admin_url.parse().expect("DATABASE_URL");
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(admin_options.clone())
        .await
        .expect("connect to Postgres (make up)");
    let name = format!("soak_{}", &Uuid::new_v4().simple().to_string()[..12]);
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await
        .expect("create the soak database");
    admin.close().await;
    let options = admin_options.database(&name);
    let pool = PgPoolOptions::new()
        .max_connections(10)
        .connect_with(options.clone())
        .await
        .expect("connect to the soak database");
    sqlx::migrate!("../migrations")
        .run(&pool)
        .await
        .expect("migrate the soak database");
    (name, pool, options)
}

/// Drops the run's database (after a passing run; a failing one is kept to look at).
pub async fn drop_database(soak: Soak) {
    let Soak { pool, database, .. } = soak;
    pool.close().await;
    if std::env::var("SOAK_KEEP_DATABASE").is_ok_and(|v| v == "1") {
        eprintln!("soak: database {database} kept (SOAK_KEEP_DATABASE=1)");
        return;
    }
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/docflow".into());
    if let Ok(admin) = PgPool::connect(&admin_url).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
            .execute(&admin)
            .await;
    }
}

/// Creates the organization, tenant, approver and DATEV integration.
async fn tenant(pool: &PgPool) -> (Uuid, Uuid) {
    let org: Uuid =
        sqlx::query_scalar("INSERT INTO organization (name) VALUES ('docflow soak') RETURNING id")
            .fetch_one(pool)
            .await
            .unwrap();
    let tenant: Uuid = sqlx::query_scalar(
        "INSERT INTO tenant (organization_id, name, vat_id) VALUES ($1, 'Soak Bau GmbH', 'DE987654321') RETURNING id",
    )
    .bind(org)
    .fetch_one(pool)
    .await
    .unwrap();
    let approver: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email, name, is_admin) VALUES ($1, 'approver@soak.local', 'Anna Approver', true) RETURNING id",
    )
    .bind(org)
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO tenant_datev_integration (tenant_id, status, account_key, company_id) VALUES ($1, 'active', 'soak-account-key', $2)",
    )
    .bind(tenant)
    .bind(format!("soak-company-{}", &org.simple().to_string()[..8]))
    .execute(pool)
    .await
    .unwrap();
    (tenant, approver)
}

/// Approves (as the app does on the final approval) every invoice matching finished
/// with, and enqueues its export. Returns the documents approved.
async fn approve_ready(
    pool: &PgPool,
    dispatcher: &docflow::output::Dispatcher,
    approver: Uuid,
) -> Vec<Uuid> {
    let ready: Vec<(Uuid, Uuid)> = sqlx::query_as(
        r#"SELECT d.id, d.tenant_id FROM document d
            WHERE d.type = 'invoice' AND d.matching_status = 'succeeded'
              AND NOT EXISTS (SELECT 1 FROM ap_approval a WHERE a.document_id = d.id)"#,
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    let mut approved = Vec::new();
    for (document_id, tenant_id) in ready {
        let Ok(mut tx) = pool.begin().await else {
            continue;
        };
        if sqlx::query(
            r#"INSERT INTO ap_approval (tenant_id, document_id, step, approver_id, status, decided_at)
               VALUES ($1, $2, 1, $3, 'approved', now())"#,
        )
        .bind(tenant_id)
        .bind(document_id)
        .bind(approver)
        .execute(&mut *tx)
        .await
        .is_err()
        {
            continue;
        }
        let Ok(job) =
            docflow::output::on_final_approval(&mut tx, DocumentId(document_id), Some(approver))
                .await
        else {
            continue;
        };
        if tx.commit().await.is_err() {
            continue;
        }
        approved.push(document_id);
        // A failed send leaves the job failed and visible (Dispatcher's contract).
        let _ = dispatcher.dispatch(pool, &job).await;
    }
    approved
}

/// The runner's timeout of one invocation (a Lambda function's timeout).
const INVOCATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The soak's `SWEEP_MAX_TASK_AGE_SECONDS`.
const MAX_TASK_AGE_SECONDS: u64 = 60;

/// Work not finished yet: open rows, invoices waiting for approval, untold failures.
async fn open_work(pool: &PgPool, notices: bool) -> i64 {
    let untold: i64 = if notices {
        sqlx::query_scalar(
            r#"SELECT (SELECT count(*) FROM document_output_job
                        WHERE status = 'failed' AND admins_told_at IS NULL)
                    + (SELECT count(*) FROM document
                        WHERE matching_status = 'failed' AND matching_notified_at IS NULL)
                    + (SELECT count(*) FROM ap_datev_export_audit
                        WHERE notice_due AND admins_told_at IS NULL)"#,
        )
        .fetch_one(pool)
        .await
        .unwrap_or(i64::MAX / 4)
    } else {
        0
    };
    untold
        + sqlx::query_scalar::<_, i64>(
        r#"SELECT (SELECT count(*) FROM ingestion WHERE status = 'in-progress')
                + (SELECT count(*) FROM document WHERE matching_status IN ('pending', 'in-progress'))
                + (SELECT count(*) FROM document_output_job WHERE status IN ('pending', 'running'))
                + (SELECT count(*) FROM ap_datev_export_audit
                    WHERE status IN ('requested', 'submitted', 'in_progress'))
                + (SELECT count(*) FROM document d
                    WHERE d.type = 'invoice' AND d.matching_status = 'succeeded'
                      AND NOT EXISTS (SELECT 1 FROM ap_approval a WHERE a.document_id = d.id))"#,
    )
        .fetch_one(pool)
        .await
        .unwrap_or(i64::MAX / 4)
}

/// Runs the soak: sets everything up, seeds, runs until drained (or `max_drain`).
pub async fn run(profile: Profile) -> Soak {
    let secrets = Secrets::new();
    let (database, pool, db_options) = create_database().await;
    // The functions reach the database as in AWS: as their own roles, over verify-full
    // TLS, through the RDS Proxy stand-in of `make up`; between them and it, the soak's
    // own TCP proxy, which the outage takes down.
    let local = docflow_dev::local::database::LocalDatabase::from_env().expect("the local stack");
    let _ = db_options;
    let proxy = TcpProxy::start(("127.0.0.1".to_owned(), local.proxy_port)).await;
    let function_db_urls: Vec<(String, String)> = docflow::db::FUNCTION_ROLES
        .iter()
        .map(|role| {
            let url = local
                .function_url(role.function, Some(&database))
                .expect("a function role");
            let url = url.replacen(
                &format!("127.0.0.1:{}/", local.proxy_port),
                &format!("127.0.0.1:{}/", proxy.port),
                1,
            );
            (format!("database_url_{}", role.function), url)
        })
        .collect();

    // Stand-ins.
    let llm_server = MockServer::start().await;
    let llm_counts = Arc::new(LlmCounts::default());
    let llm_timeout = Duration::from_secs(1);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Llm {
            rng: Mutex::new(StdRng::seed_from_u64(profile.seed ^ 0x11)),
            rates: profile.rates,
            counts: llm_counts.clone(),
            key: secrets.llm_key.clone(),
            late_by: llm_timeout + Duration::from_millis(500),
        })
        .mount(&llm_server)
        .await;
    let ocr_server = MockServer::start().await;
    let ocr_counts = Arc::new(OcrCounts::default());
    let scans = Arc::new(Mutex::new(HashMap::new()));
    Mock::given(method("POST"))
        .respond_with(Ocr {
            rng: Mutex::new(StdRng::seed_from_u64(profile.seed ^ 0x44)),
            rates: profile.rates,
            counts: ocr_counts.clone(),
            scans: scans.clone(),
            bursts: Mutex::new(HashMap::new()),
        })
        .mount(&ocr_server)
        .await;
    let maesn_timeout = Duration::from_secs(2);
    let maesn = StandIn::start(maesn::Options {
        api_key: secrets.maesn_key.clone(),
        faults: Some(maesn::Faults {
            seed: profile.seed ^ 0x22,
            unavailable: profile.rates.maesn_unavailable,
            answer_late: profile.rates.maesn_late,
            late_by: maesn_timeout + Duration::from_secs(1),
            proxy_503: profile.rates.maesn_proxy_503,
            see_other: profile.rates.maesn_see_other,
            cut_body: profile.rates.maesn_cut_body,
            // "A 401 at 25 s" of a 30 s timeout, at the soak's 2 s.
            revoked_key_answer_after: maesn_timeout.mul_f64(25.0 / 30.0),
            never_ending: profile.rates.maesn_never_ending,
        }),
        ..maesn::Options::default()
    })
    .await;
    let maesn = Arc::new(maesn);
    // Between docflow and the stand-in: a load balancer that drops keep-alive
    // connections idle for more than 1 s and cuts the bodies the stand-in marks.
    let maesn_front =
        docflow_tests::hostile::HostileFront::start(&maesn.uri(), Some(Duration::from_secs(1)))
            .await;
    let slack = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&slack)
        .await;
    let slack_address = slack.address();
    let slack_proxy = TcpProxy::start((slack_address.ip().to_string(), slack_address.port())).await;

    // Queues, bucket, secret.
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let spec = QueueSpec {
        visibility_timeout: Duration::from_secs(5),
        max_receive_count: 3,
        fifo: false,
    };
    let queues = Queues {
        ingestion: fresh_queue(&sqs, "soak-ingestion", spec).await,
        matching: fresh_queue(&sqs, "soak-matching", spec).await,
        document_output: fresh_queue(&sqs, "soak-output", spec).await,
    };
    let bucket = fresh_bucket(&docflow::aws::s3_client(&aws)).await;
    let secret_id = unique("docflow-soak/app");
    let secret_value = |maesn_key: &str| {
        let mut value = json!({
            "anthropic_api_key": secrets.llm_key,
            "maesn_api_key": maesn_key,
            "slack_webhook_url": format!(
                "http://127.0.0.1:{}/services/T000/B000/{}",
                slack_proxy.port, secrets.slack_token
            ),
        });
        for (key, url) in &function_db_urls {
            value[key] = json!(url);
        }
        value.to_string()
    };
    let rotated_secret = secret_value(&secrets.maesn_key_rotated);
    let rotated_key = secrets.maesn_key_rotated.clone();
    aws_sdk_secretsmanager::Client::new(&aws)
        .create_secret()
        .name(&secret_id)
        .secret_string(secret_value(&secrets.maesn_key))
        .send()
        .await
        .expect("create secret");
    let vars: HashMap<String, String> = [
        ("DOCFLOW_SECRET_ID", secret_id.clone()),
        // The functions read the database URL (with its password) from the secret.
        ("DATABASE_URL", String::new()),
        ("DOCUMENTS_BUCKET", bucket.clone()),
        ("MAX_RECEIVE_COUNT", "3".into()),
        ("LLM_PROVIDER", "anthropic".into()),
        ("LLM_BASE_URL", llm_server.uri()),
        ("LLM_TIMEOUT_SECONDS", llm_timeout.as_secs().to_string()),
        ("LLM_RETRY_BASE_MS", "20".into()),
        ("OCR_PROVIDER", "textract".into()),
        ("AWS_ENDPOINT_URL_TEXTRACT", ocr_server.uri()),
        ("MAESN_BASE_URL", maesn_front.url().to_owned()),
        ("MAESN_TIMEOUT_SECONDS", maesn_timeout.as_secs().to_string()),
        ("MAESN_CONNECT_TIMEOUT_SECONDS", "1".into()),
        ("HTTP_RETRY_BASE_MS", "50".into()),
        ("OUTPUT_BACKOFF_BASE_SECONDS", "1".into()),
        ("OUTPUT_BACKOFF_MAX_SECONDS", "4".into()),
        ("OUTPUT_RECORD_RESERVE_SECONDS", "3".into()),
        ("HEARTBEAT_SECONDS", "1".into()),
        ("HEARTBEAT_EXTEND_SECONDS", "6".into()),
        ("STALE_INGESTION_SECONDS", "4".into()),
        ("STALE_RUNNING_SECONDS", "12".into()),
        // Matching's claim lease outlasts an invocation, as production's 150 s outlasts
        // the function's 120 s timeout: here the runner's 30 s (`run::Options`). A claim
        // left by a crash or by the Postgres outage goes stale after this long.
        (
            "MATCHING_CLAIM_LEASE_SECONDS",
            (INVOCATION_TIMEOUT.as_secs() + 5).to_string(),
        ),
        ("DEADLINE_MARGIN_MS", "500".into()),
        ("NOTIFY_RETRY_BASE_MS", "50".into()),
        ("NOTIFY_TIMEOUT_SECONDS", "2".into()),
        // Supplier, VAT id, amounts and lines alone score high: with a near-certain
        // threshold the invoices that name no order go to the LLM, so matching meets
        // its faults too.
        ("MATCH_THRESHOLD", "0.95".into()),
        // The sweeper's thresholds as its defaults derive them (visibility + the longest
        // backoff + a margin), at the time warp's scale.
        ("SWEEP_INGESTION_AFTER_SECONDS", "12".into()),
        ("SWEEP_MATCHING_AFTER_SECONDS", "25".into()),
        ("SWEEP_OUTPUT_PENDING_AFTER_SECONDS", "12".into()),
        ("SWEEP_OUTPUT_RUNNING_AFTER_SECONDS", "15".into()),
        ("SWEEP_UNDELIVERED_AFTER_SECONDS", "120".into()),
        ("SWEEP_TIME_RESERVE_MS", "1000".into()),
        // 48 h at the time warp's scale would outlast the run: a task that never ends is
        // given up after a minute (tasks of the stand-in end on their second poll).
        (
            "SWEEP_MAX_TASK_AGE_SECONDS",
            MAX_TASK_AGE_SECONDS.to_string(),
        ),
        (
            "DATEV_CREDENTIALS_PREFIX",
            unique("docflow-soak/datev/") + "/",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    // Files parsed in children of the docflow binary, as `docflow local run` parses them.
    docflow::sandbox::set_mode(docflow::sandbox::Mode::Child {
        exe: env!("CARGO_BIN_EXE_docflow").into(),
        limits: docflow::sandbox::Limits::default(),
    });
    let mut local = Local::build(
        aws.clone(),
        queues,
        None,
        Options {
            concurrency: profile.concurrency as u32,
            vars,
        },
    )
    .await
    .expect("local wiring");
    local.sqs = docflow_tests::time_warp::warped(&aws);

    // The tenant and its documents, as the app puts them in.
    let (tenant_id, approver) = tenant(&pool).await;
    local
        .store_datev_account(tenant_id)
        .await
        .expect("DATEV account key");
    // The runner, with crashes and duplicates injected around each function.
    let deliveries = Arc::new(Deliveries::default());
    let fault_rng = Arc::new(Mutex::new(StdRng::seed_from_u64(profile.seed ^ 0x33)));
    let injection = {
        let (sqs, pool, queues) = (sqs.clone(), pool.clone(), local.queues.clone());
        let (deliveries, rates) = (deliveries.clone(), profile.rates);
        FaultInjection(Arc::new(move |name: &str, inner: Arc<dyn Invoke>| {
            Arc::new(Faulty {
                function: name.to_owned(),
                inner,
                sqs: sqs.clone(),
                queue_url: queues.by_name(name).expect("queue").url.clone(),
                pool: pool.clone(),
                rng: fault_rng.clone(),
                rates,
                deliveries: deliveries.clone(),
            }) as Arc<dyn Invoke>
        }))
    };
    let options = run::Options {
        concurrency: profile.concurrency,
        timeout: Some(INVOCATION_TIMEOUT),
        sweeper: true,
        run: RunOptions {
            until_idle: false,
            max_duration: Some(profile.max_drain),
            schedule_every: Duration::from_secs(2),
            // Depths only feed the report here; moto is shared, ask it less.
            check_every: Duration::from_secs(2),
            min_idle_sweep_gap: Duration::from_secs(1),
        },
        fault_injection: Some(injection),
        ..run::Options::default()
    };
    let runner = run::build(&local, &options).await.expect("runner");

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    // The documents arrive as the pipeline runs, as fast as it takes them: a chunk is
    // put in only while the ingestion queue holds fewer than `BACKLOG` messages (the
    // sweeper's scaled thresholds assume short queues, as its real ones assume queues
    // that drain within their 40 minutes).
    let seeded = Arc::new(AtomicBool::new(false));
    let seed_task = {
        let stop = stop.clone();
        let (pool, sqs, s3, seeded) = (pool.clone(), sqs.clone(), local.s3.clone(), seeded.clone());
        let bucket = local.settings.documents_bucket.clone();
        let url = local.queues.ingestion.url.clone();
        let total = profile.documents;
        // Which documents are scans, drawn up front so the seed alone decides.
        let uploads: Vec<Upload> = {
            let mut rng = StdRng::seed_from_u64(profile.seed ^ 0x55);
            (0..total)
                .map(|_| {
                    if rng.random_bool(profile.rates.scanned) {
                        if rng.random_bool(0.5) {
                            Upload::Png
                        } else {
                            Upload::ScannedPdf
                        }
                    } else {
                        Upload::Text
                    }
                })
                .collect()
        };
        let scans = scans.clone();
        tokio::spawn(async move {
            const BACKLOG: u64 = 60;
            let target = docflow_cli::ingest::Target {
                pool: &pool,
                s3: &s3,
                bucket: &bucket,
                sqs: &sqs,
                ingestion_queue_url: &url,
            };
            let mut documents = Vec::with_capacity(total);
            let mut hostile = Vec::new();
            let mut next = 0;
            'chunks: while next < total {
                while docflow_dev::local::depth(&sqs, &url)
                    .await
                    .unwrap_or(u64::MAX)
                    > BACKLOG
                {
                    if stop.load(Ordering::SeqCst) {
                        break 'chunks;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                let chunk = (next..(next + 20).min(total)).collect::<Vec<_>>();
                next += chunk.len();
                let more: Vec<Seeded> = futures::stream::iter(chunk)
                    .map(|n| {
                        let target = target.clone();
                        let (upload, scans) = (uploads[n], scans.clone());
                        async move {
                            let (index, invoice) = (n / 2, n.is_multiple_of(2));
                            let (number, text) = if invoice {
                                (invoice_number(index), invoice_text(index))
                            } else {
                                (po_number(index), po_text(index))
                            };
                            let name = format!("{number}.{}", upload.extension());
                            let ingested = docflow_cli::ingest::ingest(
                                &target,
                                tenant_id,
                                &name,
                                upload.bytes(text.clone()),
                            )
                            .await
                            .expect("ingest");
                            if upload != Upload::Text {
                                scans.lock().unwrap().insert(
                                    format!(
                                        "documents/{}.{}",
                                        ingested.document_id,
                                        upload.extension()
                                    ),
                                    text,
                                );
                            }
                            Seeded {
                                document_id: ingested.document_id,
                                ingestion_id: ingested.ingestion_id,
                                invoice,
                                index,
                                upload,
                            }
                        }
                    })
                    .buffer_unordered(8)
                    .collect()
                    .await;
                documents.extend(more);
                // Every fifth chunk, a hostile file among them: it must fail
                // alone, saying why, and cost no other record of its batch.
                if (next / 20) % 5 == 1 {
                    let (kind, name, bytes) = hostile_file(hostile.len());
                    let ingested = docflow_cli::ingest::ingest(&target, tenant_id, name, bytes)
                        .await
                        .expect("ingest a hostile file");
                    if name.ends_with(".png") {
                        scans.lock().unwrap().insert(
                            format!("documents/{}.png", ingested.document_id),
                            HOSTILE_SCAN.to_owned(),
                        );
                    }
                    hostile.push((ingested.ingestion_id, kind));
                }
            }
            eprintln!(
                "soak: {} documents in after {:.1} s",
                documents.len(),
                started.elapsed().as_secs_f64()
            );
            seeded.store(true, Ordering::SeqCst);
            (documents, hostile)
        })
    };
    // The app: approvals as matching finishes.
    let approvals = Arc::new(Mutex::new(Vec::new()));
    let approver_task = {
        let (pool, stop, approvals) = (pool.clone(), stop.clone(), approvals.clone());
        let dispatcher =
            docflow::output::Dispatcher::new(sqs.clone(), &local.queues.document_output.url);
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let approved = approve_ready(&pool, &dispatcher, approver).await;
                approvals.lock().unwrap().extend(approved);
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    // pg_stat_activity: the functions' sessions idle in a transaction. Only theirs
    // (`docflow::db::lazy_pool` names them `docflow-<function>`): the harness's own
    // pool (seeding, approvals, this sampler) is not what the invariant is about.
    let idle = Arc::new(Mutex::new(IdleInTx::default()));
    let sampler_task = {
        let (pool, stop, idle, database) =
            (pool.clone(), stop.clone(), idle.clone(), database.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let rows: Vec<(f64, String)> = sqlx::query_as(
                    r#"SELECT extract(epoch FROM now() - state_change)::float8, left(query, 200)
                         FROM pg_stat_activity
                        WHERE datname = $1 AND state = 'idle in transaction'
                          AND application_name LIKE 'docflow-%'"#,
                )
                .bind(&database)
                .fetch_all(&pool)
                .await
                .unwrap_or_default();
                {
                    let mut seen = idle.lock().unwrap();
                    seen.samples += 1;
                    if rows.iter().any(|(s, _)| *s > 1.0) {
                        seen.over_one_second += 1;
                    }
                    for (seconds, query) in rows {
                        if seconds > seen.longest {
                            seen.longest = seconds;
                            seen.longest_query = query;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    // One Postgres outage, once a quarter of the ingestions are done.
    let outage_at = Arc::new(Mutex::new(None));
    let outage_task = {
        let (pool, proxy, outage_at) = (pool.clone(), proxy.clone(), outage_at.clone());
        let (quarter, window) = ((profile.documents / 4) as i64, profile.outage);
        tokio::spawn(async move {
            let waited = Instant::now();
            loop {
                let done: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM ingestion WHERE status <> 'in-progress'",
                )
                .fetch_one(&pool)
                .await
                .unwrap_or(0);
                if done >= quarter || waited.elapsed() > Duration::from_secs(60) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            *outage_at.lock().unwrap() = Some(started.elapsed());
            eprintln!(
                "soak: Postgres outage for {} s from +{:.1} s",
                window.as_secs(),
                started.elapsed().as_secs_f64()
            );
            proxy.set_down(true);
            tokio::time::sleep(window).await;
            proxy.set_down(false);
        })
    };
    // One rotation of the Maesn API key, once an eighth of the documents reached Maesn:
    // the secret gets the new key and the stand-in revokes the old one, answering it 401
    // late in the caller's budget (warm functions still hold the old key in their cache).
    let rotated_at = Arc::new(Mutex::new(None));
    let rotation_task = {
        let (maesn, rotated_at) = (maesn.clone(), rotated_at.clone());
        let eighth = (profile.documents / 8).max(1);
        let secrets_client = aws_sdk_secretsmanager::Client::new(&aws);
        let (secret_id, value) = (secret_id.clone(), rotated_secret.clone());
        tokio::spawn(async move {
            let waited = Instant::now();
            while maesn.attempts().len() < eighth && waited.elapsed() < Duration::from_secs(120) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            secrets_client
                .put_secret_value()
                .secret_id(&secret_id)
                .secret_string(value)
                .send()
                .await
                .expect("rotate the Maesn API key in the secret");
            maesn.rotate_api_key(&rotated_key);
            *rotated_at.lock().unwrap() = Some(started.elapsed());
            eprintln!(
                "soak: Maesn API key rotated at +{:.1} s",
                started.elapsed().as_secs_f64()
            );
        })
    };
    let slack_task = profile.slack_outages.then(|| {
        let proxy = slack_proxy.clone();
        // The first notice meets a refusal whenever it is sent, so a run with any notice
        // at all takes the refused path (the windows below alone miss it when the only
        // notices fall into the second in four that is up).
        proxy.refuse_next();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                proxy.set_down(true);
                tokio::time::sleep(Duration::from_secs(3)).await;
                proxy.set_down(false);
            }
        })
    });
    // Drained: nothing open in the database and every queue empty, twice in a row.
    let drained_at = Arc::new(Mutex::new(None));
    let drained_signal = Arc::new(tokio::sync::Notify::new());
    let drain_task = {
        let signal = drained_signal.clone();
        let seeded = seeded.clone();
        let (pool, sqs, queues, drained_at) = (
            pool.clone(),
            sqs.clone(),
            local.queues.clone(),
            drained_at.clone(),
        );
        let outage_task_done = outage_at.clone();
        let notices = profile.wait_for_notices;
        tokio::spawn(async move {
            let mut quiet = 0;
            let mut last_print = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let open = open_work(&pool, notices).await;
                let show = last_print.elapsed() > Duration::from_secs(10);
                // The queues are asked (moto is shared) only when they matter.
                let mut depth = 0;
                if open == 0 || show {
                    for pair in [&queues.ingestion, &queues.matching, &queues.document_output] {
                        depth += docflow_dev::local::depth(&sqs, &pair.url)
                            .await
                            .unwrap_or(u64::MAX / 4);
                    }
                }
                if show {
                    eprintln!(
                        "soak: +{:.0} s · open work {open} · messages in queues {depth}",
                        started.elapsed().as_secs_f64()
                    );
                    last_print = Instant::now();
                }
                let outage_over = outage_task_done.lock().unwrap().is_some();
                if open == 0 && depth == 0 && outage_over && seeded.load(Ordering::SeqCst) {
                    quiet += 1;
                    if quiet >= 2 {
                        *drained_at.lock().unwrap() = Some(started.elapsed());
                        signal.notify_one();
                        return;
                    }
                } else {
                    quiet = 0;
                }
            }
        })
    };
    let report = runner
        .run(async move { drained_signal.notified().await })
        .await
        .expect("run");
    stop.store(true, Ordering::SeqCst);
    drain_task.abort();
    outage_task.abort();
    rotation_task.abort();
    let (documents, hostile) = seed_task.await.expect("the seeding task");
    if let Some(task) = slack_task {
        task.abort();
    }
    slack_proxy.set_down(false);
    proxy.set_down(false);
    let _ = approver_task.await;
    let _ = sampler_task.await;
    let drained = drained_at.lock().unwrap().is_some();
    let drain_time = drained_at.lock().unwrap().unwrap_or(started.elapsed());
    let idle_in_tx = idle.lock().unwrap().clone();
    let outage_at = *outage_at.lock().unwrap();
    let maesn_rotated_at = *rotated_at.lock().unwrap();
    let approvals = approvals.lock().unwrap().clone();
    Soak {
        profile,
        secrets,
        pool,
        database,
        local,
        maesn,
        maesn_front,
        slack,
        llm: llm_counts,
        ocr: ocr_counts,
        deliveries,
        proxy,
        slack_proxy,
        outage_at,
        maesn_rotated_at,
        idle_in_tx,
        drained,
        drain_time,
        report,
        documents,
        hostile,
        approvals,
    }
}

// ---------------------------------------------------------------------------------------
// The checks

/// One line of the result table.
#[derive(Debug, Clone)]
pub struct Line {
    pub what: String,
    pub value: String,
    /// `None`: a count for information; `Some(ok)`: an invariant.
    pub ok: Option<bool>,
}

/// The checked result of a run.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub lines: Vec<Line>,
    /// Details of every broken invariant (document ids and rows).
    pub problems: Vec<String>,
}

impl Verdict {
    fn info(&mut self, what: &str, value: impl ToString) {
        self.lines.push(Line {
            what: what.into(),
            value: value.to_string(),
            ok: None,
        });
    }

    fn check(&mut self, what: &str, value: impl ToString, ok: bool) {
        self.lines.push(Line {
            what: what.into(),
            value: value.to_string(),
            ok: Some(ok),
        });
    }

    pub fn passed(&self) -> bool {
        self.lines.iter().all(|l| l.ok != Some(false))
    }

    pub fn table(&self) -> String {
        let width = self.lines.iter().map(|l| l.what.len()).max().unwrap_or(0);
        let mut out = String::new();
        for l in &self.lines {
            let mark = match l.ok {
                None => "",
                Some(true) => "ok",
                Some(false) => "BROKEN",
            };
            let _ = writeln!(out, "  {mark:<6}  {:<width$}  {}", l.what, l.value);
        }
        for p in self.problems.iter().take(40) {
            let _ = writeln!(out, "  ! {p}");
        }
        if self.problems.len() > 40 {
            let _ = writeln!(out, "  ! … and {} more", self.problems.len() - 40);
        }
        out
    }
}

fn s<'a>(row: &'a Value, key: &str) -> Option<&'a str> {
    row.get(key).and_then(Value::as_str)
}

fn has_text(row: &Value, key: &str) -> bool {
    s(row, key).is_some_and(|t| !t.trim().is_empty())
}

async fn rows(pool: &PgPool, table: &str) -> Vec<Value> {
    sqlx::query_scalar::<_, Value>(&format!("SELECT to_jsonb(t) FROM {table} t"))
        .fetch_all(pool)
        .await
        .expect("read rows")
}

fn by<'a>(rows: &'a [Value], key: &str) -> HashMap<String, Vec<&'a Value>> {
    let mut map: HashMap<String, Vec<&Value>> = HashMap::new();
    for row in rows {
        if let Some(k) = s(row, key) {
            map.entry(k.to_owned()).or_default().push(row);
        }
    }
    map
}

/// Checks every invariant of the soak (docs/soak.md) and builds the table.
pub async fn verify(soak: &Soak) -> Verdict {
    let mut v = Verdict::default();
    let pool = &soak.pool;
    let p = &soak.profile;
    let ingestions = rows(pool, "ingestion").await;
    let documents = rows(pool, "document").await;
    let jobs = rows(pool, "document_output_job").await;
    let audits = rows(pool, "ap_datev_export_audit").await;
    let ingestion_of: HashMap<String, &Value> = ingestions
        .iter()
        .filter_map(|r| s(r, "id").map(|id| (id.to_owned(), r)))
        .collect();
    let document_of: HashMap<String, &Value> = documents
        .iter()
        .filter_map(|r| s(r, "id").map(|id| (id.to_owned(), r)))
        .collect();
    let jobs_of = by(&jobs, "document_id");
    let audits_of = by(&audits, "document_id");
    let approved: HashSet<String> = soak.approvals.iter().map(Uuid::to_string).collect();

    // DLQ contents.
    let mut dlq_bodies: HashMap<&str, HashSet<String>> = HashMap::new();
    let mut dlq_total = 0;
    for (name, pair) in [
        ("ingestion", &soak.local.queues.ingestion),
        ("matching", &soak.local.queues.matching),
        ("document-output", &soak.local.queues.document_output),
    ] {
        let messages = docflow_cli::dlq::list(&soak.local.sqs, &pair.dlq_url, 100_000)
            .await
            .expect("list DLQ");
        dlq_total += messages.len();
        dlq_bodies.insert(name, messages.into_iter().map(|m| m.body).collect());
    }

    v.info("seed", p.seed);
    v.info("documents (invoices + purchase orders)", p.documents);
    v.info(
        "drained",
        if soak.drained {
            format!("yes, in {:.1} s", soak.drain_time.as_secs_f64())
        } else {
            format!("NO: gave up after {:.0} s", soak.drain_time.as_secs_f64())
        },
    );
    v.info(
        "throughput (documents/minute)",
        format!(
            "{:.0}",
            p.documents as f64 / soak.drain_time.as_secs_f64().max(0.001) * 60.0
        ),
    );

    // Injected faults.
    let l = &soak.llm;
    let n = |a: &AtomicU64| a.load(Ordering::SeqCst);
    v.info("LLM calls", n(&l.calls));
    v.info(
        "  transient: 429 / 500 / timeout",
        format!(
            "{} / {} / {}",
            n(&l.rate_limited),
            n(&l.server_errors),
            n(&l.timeouts)
        ),
    );
    v.info("  permanent (400 context window)", n(&l.permanent));
    v.info("  malformed JSON", n(&l.malformed));
    v.info("  answered matching prompts", n(&l.matching));
    v.check(
        "  with a wrong API key",
        n(&l.wrong_key),
        n(&l.wrong_key) == 0,
    );
    // Hostile files: each failed alone, permanently, as too large; no ordinary document
    // failed that way (one hostile file costs one record, not its batch).
    let ingestions = rows(&soak.pool, "ingestion").await;
    let too_large = |row: &Value| {
        s(row, "last_error").is_some_and(|e| e.contains("the file is too large to process"))
    };
    let mut hostile_wrong = Vec::new();
    for (id, kind) in &soak.hostile {
        let row = ingestions
            .iter()
            .find(|r| s(r, "id") == Some(id.to_string().as_str()));
        match row {
            Some(row) if s(row, "status") == Some("failed") && too_large(row) => {}
            other => hostile_wrong.push(format!(
                "hostile {kind} {id}: {:?} / {:?}",
                other.and_then(|r| s(r, "status")),
                other.and_then(|r| s(r, "last_error"))
            )),
        }
    }
    let hostile_ids: Vec<String> = soak.hostile.iter().map(|(id, _)| id.to_string()).collect();
    for row in &ingestions {
        if too_large(row)
            && !hostile_ids
                .iter()
                .any(|id| Some(id.as_str()) == s(row, "id"))
        {
            hostile_wrong.push(format!("an ordinary document failed as too large: {row}"));
        }
    }
    let kinds = |k: &str| {
        soak.hostile
            .iter()
            .filter(|(_, kind)| kind.contains(k))
            .count()
    };
    v.check(
        &format!(
            "hostile files (flate-bomb PDFs {} / 11000² PNGs {}) not failed alone as too large",
            kinds("PDF"),
            kinds("PNG")
        ),
        hostile_wrong.len(),
        hostile_wrong.is_empty() && !soak.hostile.is_empty(),
    );
    v.problems.extend(hostile_wrong);
    let scans = |u: Upload| soak.documents.iter().filter(|d| d.upload == u).count();
    v.info(
        "scanned documents: PNG / PDF without a text layer",
        format!("{} / {}", scans(Upload::Png), scans(Upload::ScannedPdf)),
    );
    let o = &soak.ocr;
    v.info("Textract calls", n(&o.calls));
    v.info(
        "  400 ProvisionedThroughputExceeded / 400 Throttling / 500",
        format!(
            "{} / {} / {}",
            n(&o.throughput_exceeded),
            n(&o.throttled),
            n(&o.server_errors)
        ),
    );
    v.info(
        "  third fault in a row for one scan (past the SDK's retries, to the worker)",
        n(&o.reached_worker),
    );
    v.info("  answered with the scan's text", n(&o.answered));
    v.check(
        "  naming an object not uploaded as a scan, or another API",
        n(&o.unknown_object) + n(&o.other_operation),
        n(&o.unknown_object) + n(&o.other_operation) == 0,
    );
    v.check(
        "  naming a document over Textract's limits (refused)",
        n(&o.over_limits),
        n(&o.over_limits) == 0,
    );
    let d = &soak.deliveries;
    let delivered: u32 = d.per_body.lock().unwrap().values().sum();
    v.info("deliveries to the functions", delivered);
    v.info(
        "worker crashes (after the claim)",
        format!("{} ({})", n(&d.crashes), n(&d.crashes_after_claim)),
    );
    v.info("duplicate deliveries injected", n(&d.duplicates_sent));
    let attempts = soak.maesn.attempts();
    let count = |o: &str| attempts.iter().filter(|a| a.outcome == o).count();
    v.info("Maesn booking requests", attempts.len());
    v.info(
        "  503 / answered after the timeout / task never ends",
        format!(
            "{} / {} / {}",
            count("unavailable"),
            count("booked-late"),
            count("booked-never-ends")
        ),
    );
    v.info(
        "  booked, then a proxy's 503 / a 303 / a 200 cut off by a reset",
        format!(
            "{} / {} / {} ({} bodies cut)",
            count("booked-proxy-503"),
            count("booked-see-other"),
            count("booked-cut-off"),
            soak.maesn_front.cut_bodies()
        ),
    );
    v.info(
        "  connections to Maesn / idle ones dropped after 1 s that got a request",
        format!(
            "{} / {}",
            soak.maesn_front.connections(),
            soak.maesn_front.idle_resets()
        ),
    );
    v.info(
        "  late 401s for the rotated-away key (rotated at)",
        format!(
            "{} ({})",
            count("refused-rotated"),
            soak.maesn_rotated_at
                .map_or("not rotated".to_owned(), |at| format!(
                    "+{:.0} s",
                    at.as_secs_f64()
                ))
        ),
    );
    v.check(
        "booking proposals written into a dropped idle connection",
        soak.maesn_front.idle_resets_post(),
        soak.maesn_front.idle_resets_post() == 0,
    );
    v.info(
        "Postgres outage",
        match soak.outage_at {
            Some(at) => format!(
                "{} s from +{:.0} s: {} connections cut, {} refused",
                p.outage.as_secs(),
                at.as_secs_f64(),
                n(&soak.proxy.cut),
                n(&soak.proxy.refused)
            ),
            None => "did not happen".into(),
        },
    );
    for q in &soak.report.queues {
        v.info(
            &format!("runner {}", q.name),
            format!(
                "received {} · done {} · retried {} · whole-batch failures {}",
                q.received, q.done, q.retried, q.whole_batch_failures
            ),
        );
    }
    if p.slack_outages {
        v.info(
            "Slack connections refused (outages)",
            n(&soak.slack_proxy.refused),
        );
    }
    v.info(
        "sweeps (failed)",
        format!("{} ({})", soak.report.sweeps, soak.report.sweep_errors),
    );

    // Lost: every document terminal, or failed visibly (in a DLQ with a visible row).
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut lost = Vec::new();
    let mut invisible = Vec::new();
    let mut in_dlq_visible = 0;
    for doc in &soak.documents {
        let did = doc.document_id.to_string();
        let iid = doc.ingestion_id.to_string();
        let ing = ingestion_of.get(&iid).copied();
        let row = document_of.get(&did).copied();
        let (Some(ing), Some(row)) = (ing, row) else {
            lost.push(format!("{did}: no rows"));
            continue;
        };
        let mut open = Vec::new();
        match s(ing, "status") {
            Some("completed") => *counts.entry("ingestion completed").or_default() += 1,
            Some("failed") => {
                *counts.entry("ingestion failed").or_default() += 1;
                if !has_text(ing, "last_error") || row["needs_human_review"] != json!(true) {
                    invisible.push(format!(
                        "{did}: ingestion failed without error or review flag"
                    ));
                }
            }
            other => open.push(format!("ingestion {other:?}")),
        }
        if s(ing, "status") == Some("completed") {
            match s(row, "matching_status") {
                Some("succeeded") => *counts.entry("matching succeeded").or_default() += 1,
                Some("failed") => {
                    *counts.entry("matching failed").or_default() += 1;
                    if !has_text(row, "matching_error") {
                        invisible.push(format!("{did}: matching failed without an error"));
                    }
                }
                other => open.push(format!("matching {other:?}")),
            }
        }
        for job in jobs_of.get(&did).into_iter().flatten() {
            match s(job, "status") {
                Some("dispatched") => {}
                Some("failed") => {
                    if !has_text(job, "last_error") {
                        invisible.push(format!("{did}: output job failed without last_error"));
                    }
                }
                other => open.push(format!("output job {other:?}")),
            }
        }
        for audit in audits_of.get(&did).into_iter().flatten() {
            if !matches!(s(audit, "status"), Some("succeeded" | "failed")) {
                open.push(format!("audit {:?}", s(audit, "status")));
            }
        }
        if open.is_empty() {
            continue;
        }
        // Not finished: acceptable only as a visible failure whose message is in a DLQ.
        let job_ids: Vec<String> = jobs_of
            .get(&did)
            .into_iter()
            .flatten()
            .filter_map(|j| s(j, "id").map(str::to_owned))
            .collect();
        let in_dlq = dlq_bodies["ingestion"].contains(&iid)
            || dlq_bodies["matching"].contains(&did)
            || job_ids
                .iter()
                .any(|j| dlq_bodies["document-output"].contains(j));
        let visible = has_text(ing, "last_error")
            || has_text(row, "matching_error")
            || jobs_of
                .get(&did)
                .into_iter()
                .flatten()
                .any(|j| has_text(j, "last_error"));
        if in_dlq && visible {
            in_dlq_visible += 1;
        } else {
            lost.push(format!("{did} ({}): {}", doc_name(doc), open.join(", ")));
        }
    }
    for (what, c) in &counts {
        v.info(what, c);
    }
    v.info("DLQ messages (all queues)", dlq_total);
    v.info("unfinished, in a DLQ, visible", in_dlq_visible);
    v.check("LOST", lost.len(), lost.is_empty());
    v.problems.extend(lost.iter().map(|l| format!("lost: {l}")));
    v.check(
        "failures without a visible error",
        invisible.len(),
        invisible.is_empty(),
    );
    v.problems.extend(invisible);

    // Every scan that was ingested was read by OCR (its quality is the stand-in's
    // confidence; a text file's is 1), and every text file without it.
    let mut misread = Vec::new();
    let mut scans_completed = 0;
    for doc in &soak.documents {
        let ing = ingestion_of[&doc.ingestion_id.to_string()];
        if s(ing, "status") != Some("completed") {
            continue;
        }
        let quality = ing["transcription_quality_score"].as_f64();
        let by_ocr = quality.is_some_and(|q| (q - OCR_CONFIDENCE / 100.0).abs() < 1e-6);
        if doc.upload != Upload::Text {
            scans_completed += 1;
        }
        if by_ocr != (doc.upload != Upload::Text) {
            misread.push(format!(
                "{} ({}, {:?}): transcription quality {quality:?}",
                doc.document_id,
                doc_name(doc),
                doc.upload
            ));
        }
    }
    v.check(
        &format!("ingested scans ({scans_completed}) not read by OCR, or text files that were"),
        misread.len(),
        misread.is_empty(),
    );
    v.problems.extend(misread);

    // Exports: bookings per approved document.
    let mut booked: HashMap<String, usize> = HashMap::new();
    let mut outcomes: HashMap<String, Vec<&str>> = HashMap::new();
    for a in &attempts {
        let Some(doc) = &a.document_id else { continue };
        outcomes.entry(doc.clone()).or_default().push(&a.outcome);
        if a.outcome.starts_with("booked") {
            *booked.entry(doc.clone()).or_default() += 1;
        }
    }
    v.info("approved invoices", approved.len());
    let dispatched = jobs
        .iter()
        .filter(|j| s(j, "status") == Some("dispatched"))
        .count();
    let failed_jobs = jobs
        .iter()
        .filter(|j| s(j, "status") == Some("failed"))
        .count();
    v.info(
        "output jobs dispatched / failed",
        format!("{dispatched} / {failed_jobs}"),
    );
    let duplicates: Vec<String> = booked
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(doc, c)| format!("{doc} booked {c} times: {:?}", outcomes[doc]))
        .collect();
    v.check(
        "DUPLICATES (documents booked more than once)",
        duplicates.len(),
        duplicates.is_empty(),
    );
    v.problems.extend(duplicates);
    let unapproved: Vec<&String> = booked.keys().filter(|d| !approved.contains(*d)).collect();
    v.check(
        "bookings of unapproved documents",
        unapproved.len(),
        unapproved.is_empty(),
    );
    let mut clean = 0;
    let mut not_exactly_once = Vec::new();
    for doc in &approved {
        let seen = outcomes.get(doc).cloned().unwrap_or_default();
        if !seen.is_empty() && seen.iter().all(|o| *o == "booked") {
            clean += 1;
            let dispatched = jobs_of
                .get(doc)
                .into_iter()
                .flatten()
                .any(|j| s(j, "status") == Some("dispatched"));
            let crashed_in_doubt = jobs_of.get(doc).into_iter().flatten().any(|j| {
                s(j, "status") == Some("failed")
                    && s(j, "last_error").is_some_and(|e| e.contains("doubt"))
            });
            if booked.get(doc).copied().unwrap_or(0) != 1 || !(dispatched || crashed_in_doubt) {
                not_exactly_once.push(format!(
                    "{doc}: Maesn calls {seen:?}, jobs {:?}",
                    jobs_of.get(doc)
                ));
            }
        }
    }
    v.check(
        &format!("approvals whose Maesn calls all succeeded ({clean}) booked exactly once"),
        not_exactly_once.len(),
        not_exactly_once.is_empty(),
    );
    v.problems.extend(not_exactly_once);
    // In doubt: Maesn booked but the answer came too late, from a proxy, as a 303 or
    // cut off — visible as such. An answer cut off after its task id arrived whole is
    // the one exception: the task id is salvaged, and then it must be exactly the task
    // the stand-in booked for that document, followed like any other.
    let booked_tasks: HashSet<(String, String)> = soak
        .maesn
        .exports()
        .into_iter()
        .filter_map(|e| Some((e.document_id?, e.task_id)))
        .collect();
    let mut in_doubt = 0;
    let mut salvaged = 0;
    let mut doubt_hidden = Vec::new();
    for (doc, seen) in &outcomes {
        if !seen.iter().any(|o| {
            matches!(
                *o,
                "booked-late" | "booked-proxy-503" | "booked-see-other" | "booked-cut-off"
            )
        }) {
            continue;
        }
        in_doubt += 1;
        let job_says = jobs_of.get(doc).into_iter().flatten().any(|j| {
            s(j, "status") == Some("failed")
                && s(j, "last_error").is_some_and(|e| e.contains("doubt"))
        });
        let audit_says = audits_of
            .get(doc)
            .into_iter()
            .flatten()
            .any(|a| s(a, "status") == Some("failed") && a["retryable"] == json!(false));
        let followed = seen.contains(&"booked-cut-off")
            && jobs_of
                .get(doc)
                .into_iter()
                .flatten()
                .any(|j| s(j, "status") == Some("dispatched"))
            && audits_of.get(doc).into_iter().flatten().any(|a| {
                s(a, "error").is_some_and(|e| e.contains("salvaged"))
                    && s(a, "task_id")
                        .is_some_and(|t| booked_tasks.contains(&(doc.clone(), t.to_owned())))
            });
        if followed {
            salvaged += 1;
            continue;
        }
        if !(job_says && audit_says) {
            doubt_hidden.push(format!(
                "{doc}: booked, answered in doubt ({seen:?}); jobs {:?} audits {:?}",
                jobs_of.get(doc),
                audits_of.get(doc)
            ));
        }
    }
    v.info(
        "of them cut off after the task id, which was salvaged and is the one booked",
        salvaged,
    );
    v.check(
        &format!(
            "exports in doubt ({in_doubt}) not visible as such, nor followed by the task booked"
        ),
        doubt_hidden.len(),
        doubt_hidden.is_empty(),
    );
    v.problems.extend(doubt_hidden);
    // A task that never ends: booked once, dispatched, and after the maximum task age its
    // audit ends failed, not retryable, "check DATEV" (resolvable), with a notice due.
    let mut never_ending = 0;
    let mut never_ended = Vec::new();
    for (doc, seen) in &outcomes {
        if !seen.contains(&"booked-never-ends") {
            continue;
        }
        never_ending += 1;
        let given_up = audits_of.get(doc).into_iter().flatten().any(|a| {
            s(a, "status") == Some("failed")
                && a["retryable"] == json!(false)
                && a["notice_due"] == json!(true)
                && s(a, "error")
                    .is_some_and(|e| e.contains("did not end") && e.contains("check DATEV"))
        });
        let dispatched = jobs_of
            .get(doc)
            .into_iter()
            .flatten()
            .any(|j| s(j, "status") == Some("dispatched"));
        if !(given_up && dispatched) {
            never_ended.push(format!(
                "{doc}: task never ends; jobs {:?} audits {:?}",
                jobs_of.get(doc),
                audits_of.get(doc)
            ));
        }
    }
    v.check(
        &format!(
            "tasks that never end ({never_ending}) not given up in doubt after {MAX_TASK_AGE_SECONDS} s"
        ),
        never_ended.len(),
        never_ended.is_empty(),
    );
    v.problems.extend(never_ended);

    // Admin notifications: exactly one per permanent failure.
    let notices: Vec<String> = soak
        .slack
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    v.info("admin notifications", notices.len());
    // Per document and kind: matching (failed, or abandoned by the sweeper), ingestion
    // (abandoned by the sweeper), export (a failed job, a DATEV task the poll failed).
    let max_resends = 3;
    let mut wrong_notices = Vec::new();
    let mut superseded = 0;
    for doc in &soak.documents {
        let did = doc.document_id.to_string();
        let ing = ingestion_of[&doc.ingestion_id.to_string()];
        let row = document_of[&did];
        let mine: Vec<&String> = notices.iter().filter(|b| b.contains(&did)).collect();
        let kind = |k: &str| {
            mine.iter()
                .filter(|b| b.to_ascii_lowercase().contains(k))
                .count()
        };
        let (matching, ingestion) = (kind("matching"), kind("ingestion abandoned"));
        let export = mine.len() - matching - ingestion;
        let expected_export = jobs_of
            .get(&did)
            .into_iter()
            .flatten()
            .filter(|j| s(j, "status") == Some("failed"))
            .count()
            + audits_of
                .get(&did)
                .into_iter()
                .flatten()
                .filter(|a| a["notice_due"] == json!(true))
                .count();
        let expected_ingestion = usize::from(
            s(ing, "status") == Some("failed")
                && ing["sweep_count"].as_i64().unwrap_or(0) >= max_resends,
        );
        let matching_ok = match s(row, "matching_status") {
            Some("failed") => matching == 1,
            // A run that failed and told the admins, then a later or concurrent delivery
            // (matching has no lease) that matched it: the notice was true when sent.
            Some("succeeded") if matching == 1 => {
                superseded += 1;
                row["matching_attempts"].as_i64().unwrap_or(0) >= 2
            }
            _ => matching == 0,
        };
        if !matching_ok || export != expected_export || ingestion != expected_ingestion {
            wrong_notices.push(format!(
                "{did} ({}): notices matching {matching}, export {export} (expected \
                 {expected_export}), ingestion {ingestion} (expected {expected_ingestion}); \
                 matching {:?} after {} attempts",
                doc_name(doc),
                s(row, "matching_status"),
                row["matching_attempts"]
            ));
        }
    }
    v.check(
        "permanent failures not notified exactly once",
        wrong_notices.len(),
        wrong_notices.is_empty(),
    );
    v.info(
        "  matching failures notified, then matched by a later delivery",
        superseded,
    );
    v.problems.extend(wrong_notices);

    // Attempt counters never exceed the deliveries observed.
    let mut counters = Vec::new();
    for doc in &soak.documents {
        let did = doc.document_id.to_string();
        let iid = doc.ingestion_id.to_string();
        let ing = ingestion_of[&iid];
        let row = document_of[&did];
        let ing_attempts = ing["attempt_count"].as_i64().unwrap_or(0);
        let ing_deliveries = i64::from(d.of("ingestion", &iid));
        if ing_attempts > ing_deliveries
            || (ing_deliveries == 0 && s(ing, "status") == Some("completed"))
        {
            counters.push(format!(
                "ingestion {iid}: attempt_count {ing_attempts}, deliveries {ing_deliveries}"
            ));
        }
        let m_attempts = row["matching_attempts"].as_i64().unwrap_or(0);
        let m_deliveries = i64::from(d.of("matching", &did));
        if m_attempts > m_deliveries
            || (m_deliveries == 0 && s(row, "matching_status") == Some("succeeded"))
        {
            counters.push(format!(
                "matching {did}: matching_attempts {m_attempts}, deliveries {m_deliveries}"
            ));
        }
    }
    v.check(
        "attempt counters above the deliveries observed",
        counters.len(),
        counters.is_empty(),
    );
    v.problems.extend(counters);

    // No transaction held open (idle) across a call.
    let idle = &soak.idle_in_tx;
    v.check(
        &format!(
            "samples with a session idle in transaction > 1 s (of {}; longest {:.2} s)",
            idle.samples, idle.longest
        ),
        idle.over_one_second,
        idle.over_one_second == 0,
    );
    if idle.over_one_second > 0 {
        v.problems
            .push(format!("idle in transaction: {}", idle.longest_query));
    }
    v.check("drained before the time limit", soak.drained, soak.drained);
    v
}

fn doc_name(doc: &Seeded) -> String {
    if doc.invoice {
        invoice_number(doc.index)
    } else {
        po_number(doc.index)
    }
}

// ---------------------------------------------------------------------------------------
// Secrets never leak

/// Everything the process logs, as docflow's JSON lines at `debug` (the HTTP stack's
/// request dumps are there), from every thread from now on: a global subscriber, one per
/// test binary, because the runner's functions log from the runtime's worker threads.
pub fn capture_logs() -> Logs {
    let logs = Logs::default();
    logs.capture_json_globally("debug");
    logs
}

/// Adds what the ingestion worker logged of Textract's errors (the faults that outlasted
/// the SDK's retries) to the verdict.
pub fn ocr_errors_logged(logs: &Logs, v: &mut Verdict) {
    let logs = logs.text();
    v.info(
        "log lines with a Textract error (the worker's transient failures)",
        logs.matches("Textract DetectDocumentText failed").count(),
    );
}

/// Looks for every secret value in the captured logs, every row the functions wrote
/// (errors included), every admin notification and every DLQ body; adds the result to
/// the verdict. Returns how many log lines were searched.
pub async fn check_secrets(soak: &Soak, logs: &Logs, v: &mut Verdict) -> usize {
    let logs = logs.text();
    let mut places: Vec<(String, String)> = vec![("logs".into(), logs.clone())];
    for table in [
        "ingestion",
        "document",
        "document_output_job",
        "ap_datev_export_audit",
    ] {
        let text: Vec<String> = rows(&soak.pool, table)
            .await
            .iter()
            .map(Value::to_string)
            .collect();
        places.push((format!("table {table}"), text.join("\n")));
    }
    let notices: Vec<String> = soak
        .slack
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    places.push(("admin notifications".into(), notices.join("\n")));
    for pair in [
        &soak.local.queues.ingestion,
        &soak.local.queues.matching,
        &soak.local.queues.document_output,
    ] {
        let bodies: Vec<String> = docflow_cli::dlq::list(&soak.local.sqs, &pair.dlq_url, 100_000)
            .await
            .expect("list DLQ")
            .into_iter()
            .map(|m| m.body)
            .collect();
        places.push(("DLQ bodies".into(), bodies.join("\n")));
    }
    let mut leaks = Vec::new();
    for (name, value) in soak.secrets.all() {
        for (place, text) in &places {
            if text.contains(value) {
                leaks.push(format!("the {name} appears in {place}"));
            }
        }
    }
    let lines = logs.lines().count();
    v.info("log lines captured", lines);
    let errors = logs.matches("\"level\":\"ERROR\"").count();
    v.info("  of them errors", errors);
    v.check(
        "secret values found in logs, rows, notices, DLQs",
        leaks.len(),
        leaks.is_empty(),
    );
    v.problems.extend(leaks);
    lines
}
