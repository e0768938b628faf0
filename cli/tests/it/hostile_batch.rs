//! A hostile file in a batch of ten, as Lambda would deliver it: `docflow local run` (the
//! ingestion function's wiring, its own process) under a real memory limit (`prlimit
//! --as`), nine good sample documents beside one file of the hostile corpus
//! (`docflow_tests::hostile_files`). Expected: nine completed, the hostile one failed
//! permanently with its reason (or, for the oversized PNG, scaled down and read), and the
//! process alive until the queue is idle. The same batch with the parsing sandbox
//! bypassed (`DOCFLOW_SANDBOX=in-process`) kills the process: the corpus has teeth.

use std::process::{Command, Output};

use docflow::telemetry::metrics::{batch, dimension};
use docflow_cli::ingest::{Target, ingest};
use docflow_cli::samples::SAMPLES;
use docflow_dev::local::{QueueSpec, ensure_queue_with_dlq};
use docflow_tests::hostile_files::{self, Hostile};
use docflow_tests::ingestion_harness::{textract_ok, textract_stand_in};
use docflow_tests::*;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::Mock;
use wiremock::matchers::{header, method};

/// The function's memory, as Lambda would set it, and the process's address space held to
/// it (`prlimit --as`): stricter than Lambda, which counts resident memory, not mappings.
const FUNCTION_MEMORY_MB: u64 = 1024;
const ADDRESS_SPACE_LIMIT: u64 = FUNCTION_MEMORY_MB * 1024 * 1024;

struct Batch {
    run: Output,
    /// The functions' EMF lines (`--metrics-out`).
    metrics: std::path::PathBuf,
    /// (ingestion id, file name) of the good ones.
    good: Vec<(Uuid, String)>,
    hostile: Uuid,
}

/// The database URL of `pool`'s database (a `#[sqlx::test]` one), for the child process.
async fn database_url(pool: &PgPool) -> String {
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .unwrap();
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL (make test sets it)");
    let cut = base.rfind('/').expect("a database URL ends in /<name>");
    format!("{}/{name}", &base[..cut])
}

async fn run_batch(pool: &PgPool, (name, ext, build): Hostile, sandbox: bool) -> Batch {
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let s3 = docflow::aws::s3_client(&aws);
    let prefix = format!("{}-", unique("hostile"));
    let mut ingestion_url = String::new();
    for function in ["ingestion", "matching", "document-output"] {
        let pair = ensure_queue_with_dlq(
            &sqs,
            &format!("{prefix}docflow-{function}"),
            QueueSpec::default(),
        )
        .await
        .unwrap();
        if function == "ingestion" {
            ingestion_url = pair.url;
        }
    }
    let bucket = fresh_bucket(&s3).await;
    let tenant = docflow_cli::seed::create_demo_tenant(pool)
        .await
        .unwrap()
        .tenant_id;
    let target = Target {
        pool,
        s3: &s3,
        bucket: &bucket,
        sqs: &sqs,
        ingestion_queue_url: &ingestion_url,
    };
    // Nine sample PDFs the rules extractor reads, the hostile file among them.
    let samples: Vec<_> = SAMPLES
        .iter()
        .filter(|s| s.expected.is_some() && s.file_name.ends_with(".pdf"))
        .cycle()
        .take(9)
        .collect();
    let mut good = Vec::new();
    let mut hostile = None;
    for (i, sample) in samples.iter().enumerate() {
        if i == 4 {
            let file = format!("{name}.{ext}");
            hostile = Some(
                ingest(&target, tenant, &file, build())
                    .await
                    .unwrap()
                    .ingestion_id,
            );
        }
        let done = ingest(&target, tenant, sample.file_name, sample.bytes.to_vec())
            .await
            .unwrap();
        good.push((done.ingestion_id, sample.file_name.to_owned()));
    }

    // Textract for the image, answering with an invoice's lines.
    let textract = textract_stand_in().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "Textract.DetectDocumentText"))
        .respond_with(textract_ok(
            &[
                "Müller Haustechnik GmbH",
                "Rechnung",
                "Rechnungsnummer: RE-2026-0999",
                "Rechnungsdatum: 12.03.2026",
                "Gesamtbetrag: 119,00 EUR",
            ],
            0.97,
        ))
        .mount(&textract)
        .await;

    let metrics = std::env::temp_dir().join(format!("{prefix}metrics.jsonl"));
    let mut command = Command::new("prlimit");
    command
        .arg(format!("--as={ADDRESS_SPACE_LIMIT}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_docflow"))
        .args([
            "local",
            "run",
            "--until-idle",
            "--no-sweeper",
            "--functions",
            "ingestion",
            // One poller gathering for 2 s: the ten records arrive in one batch.
            "--concurrency",
            "1",
            "--batching-window",
            "2",
            "--max-time",
            "240",
            "--metrics-out",
        ])
        .arg(&metrics)
        .env("DOCFLOW_QUEUE_PREFIX", &prefix)
        .env("DATABASE_URL", database_url(pool).await)
        .env("DOCUMENTS_BUCKET", &bucket)
        .env("LLM_PROVIDER", "rules")
        // Textract for the image only: a PDF page without text fails as a scan would.
        .env(
            "OCR_PROVIDER",
            if ext == "png" { "textract" } else { "native" },
        )
        .env("AWS_ENDPOINT_URL_TEXTRACT", textract.uri())
        .env(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            FUNCTION_MEMORY_MB.to_string(),
        )
        .env("RUST_LOG", "warn");
    if !sandbox {
        command.env("DOCFLOW_SANDBOX", "in-process");
    }
    let run = command.output().expect("run prlimit docflow local run");
    Batch {
        run,
        metrics,
        good,
        hostile: hostile.expect("the hostile file was ingested"),
    }
}

async fn status(pool: &PgPool, id: Uuid) -> (String, Option<String>) {
    sqlx::query_as("SELECT status, last_error FROM ingestion WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Runs the batch of `name` and checks the outcome the module describes.
async fn fails_alone(pool: PgPool, name: &str) {
    let hostile = hostile_files::corpus()
        .into_iter()
        .find(|h| h.0 == name)
        .expect("in the corpus");
    let batch = run_batch(&pool, hostile, true).await;
    let stderr = String::from_utf8_lossy(&batch.run.stderr);
    assert!(
        batch.run.status.success(),
        "{name}: the process ended with {}: {stderr}",
        batch.run.status
    );
    // One batch of ten: what Lambda would have handed one invocation.
    let metrics = std::fs::read_to_string(&batch.metrics).expect("the metrics file");
    let lines: Vec<&str> = metrics.lines().collect();
    let metrics = docflow_tests::emf::Metrics::of(&lines);
    let function = [(dimension::FUNCTION, "ingestion")];
    assert_eq!(
        metrics.values(batch::BATCH_DURATION.name, &function).len(),
        1,
        "{name}: one batch: {:?}",
        metrics.values(batch::RECORDS_RECEIVED.name, &function)
    );
    assert_eq!(metrics.sum(batch::RECORDS_RECEIVED.name, &function), 10.0);
    for (id, file) in &batch.good {
        let (status, error) = status(&pool, *id).await;
        assert_eq!(status, "completed", "{name}: {file}: {error:?}");
    }
    let (status, error) = status(&pool, batch.hostile).await;
    if name == "png-11000" {
        // Over Textract's 10,000 px a side: scaled down first, then read.
        assert_eq!(status, "completed", "{name}: {error:?}");
        return;
    }
    assert_eq!(status, "failed", "{name}: {error:?}");
    let error = error.unwrap_or_default();
    eprintln!("{name}: {error}");
    let expected = match name {
        "cmap-nesting" => "the file could not be read safely: stack overflow while reading page 1",
        "nested-arrays" => "no page has a text layer",
        "self-referencing-form" => "form XObjects nested deeper than 12",
        "75k-dos" => "more than 262144 characters on one page",
        _ => "inflate beyond 64 MiB",
    };
    assert!(error.contains(expected), "{name}: {error}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_cmap_nested_past_any_stack_fails_alone(pool: PgPool) {
    fails_alone(pool, "cmap-nesting").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn arrays_nested_100000_deep_fail_alone(pool: PgPool) {
    fails_alone(pool, "nested-arrays").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_form_that_draws_itself_fails_alone(pool: PgPool) {
    fails_alone(pool, "self-referencing-form").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_form_drawn_75000_times_fails_alone(pool: PgPool) {
    fails_alone(pool, "75k-dos").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn an_xref_stream_bomb_fails_alone(pool: PgPool) {
    fails_alone(pool, "xref-stream-bomb").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_flate_bomb_fails_alone(pool: PgPool) {
    fails_alone(pool, "flate-bomb").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn an_lzw_bomb_fails_alone(pool: PgPool) {
    fails_alone(pool, "lzw-bomb").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn an_11000_px_png_is_scaled_down_and_read_beside_the_rest(pool: PgPool) {
    fails_alone(pool, "png-11000").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn without_the_sandbox_the_cmap_file_kills_the_whole_batch(pool: PgPool) {
    let hostile = hostile_files::corpus()
        .into_iter()
        .find(|h| h.0 == "cmap-nesting")
        .unwrap();
    let batch = run_batch(&pool, hostile, false).await;
    let stderr = String::from_utf8_lossy(&batch.run.stderr);
    use std::os::unix::process::ExitStatusExt as _;
    assert!(
        batch.run.status.signal().is_some(),
        "the process survived in-process parsing: {}: {stderr}",
        batch.run.status
    );
    assert!(stderr.contains("has overflowed its stack"), "{stderr}");
    // The hostile record was never finished: Lambda would retry the whole batch.
    let (status, _) = status(&pool, batch.hostile).await;
    assert_eq!(status, "in-progress");
}
