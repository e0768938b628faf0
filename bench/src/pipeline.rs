//! Pipeline throughput: documents per minute through `docflow local
//! run` (the release build of the CLI, the functions in its process as `make demo` runs
//! them), with zero-latency stand-ins, and where the time goes per function and stage.
//!
//! - **The documents**: `pairs` purchase orders and as many invoices naming them, text
//!   PDFs (one supplier per pair), for a new demo tenant with an active DATEV
//!   integration, ingested as the app would (`docflow_cli::ingest`: S3, rows, message).
//! - **The stand-ins**: extraction and matching decisions by the offline `rules`
//!   extractor (`LLM_PROVIDER=rules`, what a zero-latency LLM would leave: docflow's own
//!   work), the Maesn stand-in of `make demo` (`docflow local maesn`, release build),
//!   moto for S3/SQS/Secrets Manager, the shared Postgres.
//! - **The runs**: ingestion and matching until idle; then every matched invoice is
//!   approved (`docflow demo approve`'s code) and document output runs until idle. The
//!   sweeper is off: it is a schedule that finds lost work, not a stage of the path.
//! - **The figures** come from the EMF lines the functions wrote (`--metrics-out`):
//!   each batch's end time and `BatchDuration` give the window in which a function was
//!   busy; throughput is documents over the two phases' busy windows (process start and
//!   the runner's idle detection are reported, not counted). `RecordDuration` and
//!   `StageDuration[stage=…]` say where a record's time went.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::process::Command;

use super::Report;

const SECTION: &str = "pipeline throughput";
/// The Maesn stand-in's port for this section.
const MAESN_PORT: u16 = 4743;

/// What one function did in one run, read from its EMF lines.
#[derive(Debug, Default)]
struct FunctionTimes {
    batches: usize,
    records: f64,
    /// Earliest batch start and latest batch end (ms since the epoch).
    window: Option<(f64, f64)>,
    record_ms: f64,
    /// Per stage: total ms and observations.
    stages: BTreeMap<String, (f64, usize)>,
}

impl FunctionTimes {
    fn window_ms(&self) -> f64 {
        self.window.map_or(0.0, |(start, end)| end - start)
    }
}

/// Per function, from the EMF lines of one run (read as CloudWatch would, with
/// `docflow_tests::emf`), plus each document's timestamp for the busy windows.
fn read_emf(text: &str) -> BTreeMap<String, FunctionTimes> {
    use docflow::telemetry::metrics::{batch, dimension, stages};
    let mut out: BTreeMap<String, FunctionTimes> = BTreeMap::new();
    for line in text.lines() {
        let Some(data) = docflow_tests::emf::extract(line) else {
            continue;
        };
        let timestamp = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|root| root["_aws"]["Timestamp"].as_f64());
        for datum in data {
            let Some(function) = datum.dimensions.get(dimension::FUNCTION) else {
                continue;
            };
            let times = out.entry(function.clone()).or_default();
            let sum: f64 = datum.values.iter().sum();
            let name = datum.name.as_str();
            match datum.dimensions.get(dimension::STAGE) {
                Some(stage) if name == stages::DURATION.name => {
                    let entry = times.stages.entry(stage.clone()).or_default();
                    entry.0 += sum;
                    entry.1 += datum.values.len();
                }
                Some(_) => {}
                None if name == batch::BATCH_DURATION.name => {
                    for batch_ms in &datum.values {
                        times.batches += 1;
                        let Some(end) = timestamp else { continue };
                        let start = end - batch_ms;
                        times.window = Some(match times.window {
                            Some((s, e)) => (s.min(start), e.max(end)),
                            None => (start, end),
                        });
                    }
                }
                None if name == batch::RECORDS_RECEIVED.name => times.records += sum,
                None if name == batch::RECORD_DURATION.name => times.record_ms += sum,
                None => {}
            }
        }
    }
    out
}

/// Purchase order `i` and the invoice naming it, as the lines of their pages.
pub(crate) fn pair(i: usize) -> (Vec<String>, Vec<String>) {
    let supplier = format!("Lieferant {i:04} Haustechnik GmbH");
    let po = format!("BE-2026-{i:04}");
    let net = 100.0 + i as f64 * 3.0;
    let vat = (net * 0.19 * 100.0).round() / 100.0;
    let money = |x: f64| {
        format!(
            "{},{:02} €",
            x.trunc() as i64,
            ((x.fract() * 100.0).round()) as i64
        )
    };
    let day = 1 + i % 27;
    let address = [
        supplier.clone(),
        "Industriestraße 12".to_owned(),
        "80331 München".to_owned(),
    ];
    let table = |total: &str| {
        [
            "Pos\tBezeichnung\tMenge\tEinzelpreis\tGesamt".to_owned(),
            format!(
                "1\tWartung Anlage {i}\t1 Stk\t{}\t{}",
                money(net),
                money(net)
            ),
            String::new(),
            format!("\t\t\tSumme netto\t{}", money(net)),
            format!("\t\t\tzzgl. 19 % MwSt.\t{}", money(vat)),
            format!("\t\t\t{total}\t{}", money(net + vat)),
        ]
    };
    let mut order = vec![
        "Demo Bau GmbH · Friedrichstraße 100 · 10117 Berlin".to_owned(),
        String::new(),
    ];
    order.extend(address.clone());
    order.extend([
        String::new(),
        "BESTELLUNG".to_owned(),
        String::new(),
        format!("Bestellnummer:\t{po}"),
        format!("Bestelldatum:\t{day:02}.10.2026"),
        String::new(),
    ]);
    order.extend(table("Gesamtbetrag"));
    let mut invoice = address.to_vec();
    invoice.extend([
        String::new(),
        "Demo Bau GmbH".to_owned(),
        "Friedrichstraße 100".to_owned(),
        "10117 Berlin".to_owned(),
        String::new(),
        "RECHNUNG".to_owned(),
        String::new(),
        format!("Rechnungsnummer:\tRE-2026-{i:04}"),
        format!("Rechnungsdatum:\t{day:02}.11.2026"),
        format!("Ihre Bestellung:\t{po}"),
        String::new(),
    ]);
    invoice.extend(table("Rechnungsbetrag"));
    invoice.extend([
        String::new(),
        format!("{supplier} | USt-IdNr.: DE {:09}", 100_000_000 + i),
    ]);
    (order, invoice)
}

pub(crate) fn pdf(lines: &[String]) -> Vec<u8> {
    let page: Vec<&str> = lines.iter().map(String::as_str).collect();
    docflow_tests::pdf::text_pdf(&[&page])
}

/// Runs `docflow local run --until-idle` for `functions`; returns its wall time (ms) and
/// the EMF lines it wrote.
async fn local_run(
    docflow: &Path,
    env: &[(String, String)],
    functions: &str,
    out: &Path,
) -> anyhow::Result<(f64, String)> {
    let started = Instant::now();
    let output = Command::new(docflow)
        .args([
            "local",
            "run",
            "--until-idle",
            "--no-sweeper",
            "--max-time",
            "900",
            "--functions",
            functions,
            "--metrics-out",
        ])
        .arg(out)
        .envs(env.iter().cloned())
        .output()
        .await
        .with_context(|| format!("start {}", docflow.display()))?;
    let wall = super::ms(started.elapsed());
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(
        output.status.success(),
        "docflow local run --functions {functions} failed: {}",
        stderr
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let text = std::fs::read_to_string(out).with_context(|| format!("read {}", out.display()))?;
    Ok((wall, text))
}

fn stage_line(times: &FunctionTimes) -> String {
    let records = times.records.max(1.0);
    let mut stages: Vec<(&String, &(f64, usize))> = times.stages.iter().collect();
    stages.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
    let parts: Vec<String> = stages
        .iter()
        .map(|(name, (total, _))| {
            format!(
                "{name} {:.2} ({:.0} %)",
                total / records,
                100.0 * total / times.record_ms.max(f64::EPSILON)
            )
        })
        .collect();
    parts.join(", ")
}

pub async fn pipeline(report: &mut Report, bins: &Path, pairs: usize) -> anyhow::Result<()> {
    let docflow = bins.join("docflow");
    anyhow::ensure!(
        docflow.exists(),
        "{} is missing (cargo build --release -p docflow-cli)",
        docflow.display()
    );
    let endpoint = docflow_tests::endpoint();
    let aws = docflow::aws::local(&endpoint);
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let queues = docflow_cli::wiring::Queues::resolve(&sqs, "").await?;
    // Work other runs left on the local stack's queues would be measured as ours.
    for pair in [&queues.ingestion, &queues.matching, &queues.document_output] {
        sqs.purge_queue()
            .queue_url(&pair.url)
            .send()
            .await
            .with_context(|| format!("purge {}", pair.url))?;
    }
    let local = docflow_cli::wiring::Local::build(
        aws.clone(),
        queues,
        None,
        docflow_cli::wiring::Options::default(),
    )
    .await?;
    docflow_cli::seed::ensure_maesn_key(
        &aws_sdk_secretsmanager::Client::new(&aws),
        &local.settings.secret_id,
    )
    .await?;
    let pool = local.database().await?;

    let maesn_log = std::env::temp_dir().join("docflow-bench-maesn.log");
    let mut maesn = Command::new(&docflow)
        .args([
            "local",
            "maesn",
            "--listen",
            &format!("127.0.0.1:{MAESN_PORT}"),
        ])
        .stdout(std::fs::File::create(&maesn_log)?)
        .stderr(std::fs::File::create(&maesn_log)?)
        .kill_on_drop(true)
        .spawn()
        .context("start the Maesn stand-in")?;
    let maesn_url = format!("http://127.0.0.1:{MAESN_PORT}");
    let mut up = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", MAESN_PORT))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    anyhow::ensure!(
        up,
        "the Maesn stand-in did not start ({})",
        maesn_log.display()
    );

    let seeded = docflow_cli::seed::create_demo_tenant(&pool).await?;
    let tenant = seeded.tenant_id;
    local.store_datev_account(tenant).await?;
    let target = docflow_cli::ingest::Target {
        pool: &pool,
        s3: &local.s3,
        bucket: &local.settings.documents_bucket,
        sqs: &local.sqs,
        ingestion_queue_url: &local.queues.ingestion.url,
    };
    eprintln!("   seeding {} documents", 2 * pairs);
    for i in 0..pairs {
        let (order, invoice) = pair(i);
        for (name, lines) in [
            (format!("bestellung-{i:04}.pdf"), order),
            (format!("rechnung-{i:04}.pdf"), invoice),
        ] {
            let ingested = docflow_cli::ingest::ingest(&target, tenant, &name, pdf(&lines)).await?;
            anyhow::ensure!(
                ingested.send_error.is_none(),
                "{name} was not enqueued: {:?}",
                ingested.send_error
            );
        }
    }

    let mut env: Vec<(String, String)> = std::env::vars().collect();
    for (k, v) in [
        ("LLM_PROVIDER", "rules"),
        ("MAESN_BASE_URL", maesn_url.as_str()),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("RUST_LOG", "warn"),
    ] {
        env.retain(|(key, _)| key != k);
        env.push((k.to_owned(), v.to_owned()));
    }
    let dir = std::env::temp_dir();
    eprintln!("   docflow local run: ingestion, matching");
    let (wall_in, emf_in) = local_run(
        &docflow,
        &env,
        "ingestion,matching",
        &dir.join("docflow-bench-pipeline-1.jsonl"),
    )
    .await?;
    let approvals =
        docflow_cli::demo::approve_matched_invoices(&pool, &local.dispatcher(), tenant).await?;
    let approved = approvals.iter().filter(|a| a.job_id.is_some()).count();
    eprintln!("   approved {approved} invoices; docflow local run: document-output");
    let (wall_out, emf_out) = local_run(
        &docflow,
        &env,
        "document-output",
        &dir.join("docflow-bench-pipeline-2.jsonl"),
    )
    .await?;
    maesn.kill().await.ok();

    // What the runs achieved, from the database.
    let (ingested, matched, clustered): (i64, i64, i64) = sqlx::query_as(
        r#"SELECT count(*) FILTER (WHERE i.status = 'completed'),
                  count(*) FILTER (WHERE d.matching_status = 'succeeded'),
                  count(*) FILTER (WHERE d.cluster_id IS NOT NULL)
             FROM document d JOIN ingestion i ON i.document_id = d.id
            WHERE d.tenant_id = $1"#,
    )
    .bind(tenant)
    .fetch_one(&pool)
    .await?;
    let dispatched: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM document_output_job WHERE tenant_id = $1 AND status = 'dispatched'",
    )
    .bind(tenant)
    .fetch_one(&pool)
    .await?;
    let documents = 2 * pairs;

    let phase_in = read_emf(&emf_in);
    let phase_out = read_emf(&emf_out);
    let window = |times: &BTreeMap<String, FunctionTimes>| {
        let all: Vec<(f64, f64)> = times.values().filter_map(|t| t.window).collect();
        let start = all.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
        let end = all.iter().map(|w| w.1).fold(f64::NEG_INFINITY, f64::max);
        if all.is_empty() { 0.0 } else { end - start }
    };
    let busy_in = window(&phase_in);
    let busy_out = window(&phase_out);
    let busy = busy_in + busy_out;

    report.plain(
        SECTION,
        &format!(
            "documents: {documents} ({pairs} purchase orders + {pairs} invoices, text PDFs); ingested {ingested}, matched {matched} ({clustered} in clusters), invoices approved {approved}, exports dispatched {dispatched}"
        ),
        documents as f64,
        "documents",
    );
    report.plain(
        SECTION,
        "documents/minute through ingestion → matching → document output (busy windows)",
        documents as f64 / (busy / 60_000.0).max(f64::EPSILON),
        "docs/min",
    );
    report.plain(
        SECTION,
        "ingestion + matching: busy window (first batch start → last batch end)",
        busy_in,
        "ms",
    );
    report.plain(
        SECTION,
        &format!("document output: busy window ({dispatched} exports)"),
        busy_out,
        "ms",
    );
    report.plain(
        SECTION,
        "the two `docflow local run` processes, wall (start, work, idle detection)",
        wall_in + wall_out,
        "ms",
    );
    let mut details = serde_json::Map::new();
    for (function, times) in phase_in.iter().chain(phase_out.iter()) {
        let per_record = times.record_ms / times.records.max(1.0);
        report.plain(
            SECTION,
            &format!(
                "{function}: {} records in {} batches, busy {:.0} ms; per record (mean ms, share of record time) — {}",
                times.records,
                times.batches,
                times.window_ms(),
                stage_line(times)
            ),
            per_record,
            "ms per record",
        );
        details.insert(
            function.clone(),
            json!({
                "records": times.records,
                "batches": times.batches,
                "busy_window_ms": times.window_ms(),
                "record_ms_total": times.record_ms,
                "stages_ms_total": times.stages.iter().map(|(k, (total, n))| (k.clone(), json!({"total_ms": total, "observations": n}))).collect::<serde_json::Map<_, _>>(),
            }),
        );
    }
    report
        .details
        .insert("pipeline".into(), Value::Object(details));
    anyhow::ensure!(
        ingested as usize == documents && dispatched as usize == pairs,
        "the pipeline did not finish every document: ingested {ingested}/{documents}, \
         dispatched {dispatched}/{pairs} (figures above are of what ran)"
    );
    Ok(())
}
