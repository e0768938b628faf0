//! `make bench`: docflow's performance, measured side by side in one run against anchors
//! measured the same way in the same run, printed as a markdown table and written to
//! `bench/results.json` with the machine it ran on. Benchmarks are not tests: nothing
//! here fails on a number (targets are reported as met or not).
//!
//! Every function runs as its release binary, exactly as Lambda runs it: a process
//! whose `lambda_runtime` talks to a Runtime API (the stand-in in [`rapi`]), against the
//! shared Postgres, moto, and local stand-ins for the LLM and Maesn.

mod bulk;
mod httpcount;
mod pgcount;
mod pipeline;
mod proxy;
mod rapi;
mod s3mem;
mod trips;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use docflow_tests::{fresh_queue, unique};

/// Ports of this harness (the Runtime API stand-in, the counting Postgres proxy).
const RUNTIME_API_PORT: u16 = 4741;
const PG_PROXY_PORT: u16 = 4742;
/// The S3 stand-in answering object GETs from memory (`s3mem`).
const S3MEM_PORT: u16 = 4747;
const FUNCTIONS: [&str; 4] = ["ingestion", "matching", "document-output", "sweeper"];
const HELLO: &str = "bench-hello";
/// A host's root certificate bundle (Debian's, then Amazon Linux's), for the cold-start
/// series that reads the roots from one file.
const ROOT_BUNDLE: [&str; 2] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

#[derive(Debug, Clone, serde::Serialize)]
struct Row {
    section: String,
    measure: String,
    value: f64,
    unit: String,
    /// The anchor this value is compared with, measured in the same run.
    anchor: Option<String>,
    anchor_value: Option<f64>,
    ratio: Option<f64>,
    target: Option<String>,
    met: Option<bool>,
}

/// A target's text and whether a ratio meets it.
type Target = (&'static str, fn(f64) -> bool);

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    details: serde_json::Map<String, Value>,
}

impl Report {
    fn plain(&mut self, section: &str, measure: &str, value: f64, unit: &str) {
        self.rows.push(Row {
            section: section.into(),
            measure: measure.into(),
            value,
            unit: unit.into(),
            anchor: None,
            anchor_value: None,
            ratio: None,
            target: None,
            met: None,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn against(
        &mut self,
        section: &str,
        measure: &str,
        value: f64,
        unit: &str,
        anchor: &str,
        anchor_value: f64,
        target: Option<Target>,
    ) {
        let ratio = if anchor_value > 0.0 {
            Some(value / anchor_value)
        } else {
            None
        };
        self.rows.push(Row {
            section: section.into(),
            measure: measure.into(),
            value,
            unit: unit.into(),
            anchor: Some(anchor.into()),
            anchor_value: Some(anchor_value),
            ratio,
            target: target.map(|(t, _)| t.to_owned()),
            met: target.and_then(|(_, ok)| ratio.map(ok)),
        });
    }

    fn limit(
        &mut self,
        section: &str,
        measure: &str,
        value: f64,
        unit: &str,
        target: &str,
        ok: bool,
    ) {
        self.rows.push(Row {
            section: section.into(),
            measure: measure.into(),
            value,
            unit: unit.into(),
            anchor: None,
            anchor_value: None,
            ratio: None,
            target: Some(target.into()),
            met: Some(ok),
        });
    }

    fn markdown(&self) -> String {
        let mut out = String::from(
            "| section | measure | value | anchor (same run) | ratio | target | met |\n|---|---|---:|---|---:|---|---|\n",
        );
        for r in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} {} | {} | {} | {} | {} |\n",
                r.section,
                r.measure,
                fmt(r.value),
                r.unit,
                match (&r.anchor, r.anchor_value) {
                    (Some(a), Some(v)) => format!("{a}: {} {}", fmt(v), r.unit),
                    _ => String::new(),
                },
                r.ratio.map(|x| format!("{x:.2}×")).unwrap_or_default(),
                r.target.clone().unwrap_or_default(),
                match r.met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "",
                },
            ));
        }
        out
    }
}

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Args {
    bins: PathBuf,
    out: PathBuf,
    python: Option<PathBuf>,
    runs: usize,
    /// Only the sections whose name contains this (for working on one).
    only: Option<String>,
    /// Purchase order + invoice pairs through the pipeline section.
    pairs: usize,
}

impl Args {
    fn wants(&self, section: &str) -> bool {
        self.only.as_deref().is_none_or(|o| section.contains(o))
    }
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        bins: PathBuf::from("target/release"),
        out: PathBuf::from("bench/results.json"),
        python: None,
        runs: 7,
        only: None,
        pairs: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bins" => a.bins = value()?.into(),
            "--out" => a.out = value()?.into(),
            "--python" => a.python = Some(value()?.into()),
            "--runs" => a.runs = value()?.parse()?,
            "--only" => a.only = Some(value()?),
            "--pairs" => a.pairs = value()?.parse()?,
            other => anyhow::bail!(
                "unknown argument {other}; usage: docflow-bench [--bins DIR] [--out FILE] [--python VENV_PYTHON] [--runs N] [--only SECTION] [--pairs N]"
            ),
        }
    }
    Ok(a)
}

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    json!({
        "cpu_model": model,
        "cores": cores,
        "kernel": kernel,
        "memory_mb": mem_kb / 1024,
        "arch": std::env::consts::ARCH,
        "load_average_at_start": load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    })
}

/// A function process: its child and every line it printed.
struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    name: String,
}

impl Proc {
    fn spawn(bin: &Path, env: &[(String, String)]) -> anyhow::Result<Self> {
        let mut cmd = Command::new(bin);
        cmd.env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        if let Some(out) = child.stdout.take() {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = tokio::io::BufReader::new(out).lines();
                while let Ok(Some(l)) = reader.next_line().await {
                    lines.lock().unwrap().push(l);
                }
            });
        }
        if let Some(err) = child.stderr.take() {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = tokio::io::BufReader::new(err).lines();
                while let Ok(Some(l)) = reader.next_line().await {
                    lines.lock().unwrap().push(l);
                }
            });
        }
        let name = bin
            .file_name()
            .map_or_else(|| "function".into(), |n| n.to_string_lossy().into_owned());
        Ok(Proc { child, lines, name })
    }

    /// (VmRSS, VmHWM) in MB.
    fn rss(&self) -> (f64, f64) {
        let pid = self.child.id().unwrap_or(0);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| -> f64 {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(f64::NAN)
                / 1024.0
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// The `cold start` log line's phases (µs) and total.
    fn phases(&self) -> Option<(Vec<(String, f64)>, f64)> {
        let lines = self.lines.lock().unwrap();
        let line = lines.iter().find(|l| l.contains("\"cold start\""))?;
        let v: Value = serde_json::from_str(line).ok()?;
        let fields = &v["fields"];
        let phases: Value = serde_json::from_str(fields["phases_us"].as_str()?).ok()?;
        let list = phases
            .as_object()?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(0.0)))
            .collect();
        Some((list, fields["total_us"].as_f64().unwrap_or(0.0)))
    }

    fn tail(&self) -> String {
        let lines = self.lines.lock().unwrap();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// Stops the process. With `BENCH_LOGS=DIR`, everything it printed is kept in
    /// `DIR/<binary>-<pid>.log` (its EMF lines say where each record's time went).
    async fn stop(mut self) {
        let pid = self.child.id().unwrap_or(0);
        let _ = self.child.kill().await;
        if let Some(dir) = std::env::var_os("BENCH_LOGS") {
            let dir = PathBuf::from(dir);
            let text = self.lines.lock().unwrap().join("\n") + "\n";
            let _ = std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(dir.join(format!("{}-{pid}.log", self.name)), text));
        }
    }
}

/// The Lambda service's own variables, as it sets them for a function process.
fn lambda_env(function: &str, runtime_api: &str) -> Vec<(String, String)> {
    [
        ("AWS_LAMBDA_RUNTIME_API", runtime_api.to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME", format!("bench-{function}")),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512".into()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "bench".into()),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/bench-{function}"),
        ),
        ("AWS_REGION", "eu-central-1".into()),
        ("AWS_DEFAULT_REGION", "eu-central-1".into()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_ENDPOINT_URL", docflow_tests::endpoint()),
        ("RUST_LOG", "info".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// What the functions' settings point at: the bench's secret, queues, bucket and
/// stand-ins.
struct Stack {
    pool: PgPool,
    sqs: aws_sdk_sqs::Client,
    /// The superuser's: the bench's own seeding and reading.
    database_url: String,
    /// Where the functions' roles connect (`function_url`).
    local: docflow_dev::local::database::LocalDatabase,
    secret_id: String,
    bucket: String,
    s3: aws_sdk_s3::Client,
    /// moto's answers to object GETs, replayed in parallel (`s3mem`): every object the
    /// harness puts is warmed through it.
    s3mem: Arc<s3mem::S3Mem>,
    matching_url: String,
    ingestion_url: String,
    output_url: String,
    llm: MockServer,
    maesn_uri: String,
    credentials_prefix: String,
}

impl Stack {
    /// `function`'s database URL as its secret holds it in AWS: its own role, verify-full,
    /// through the RDS Proxy stand-in of `make up` (`via`: another stand-in's port).
    fn function_url(&self, function: &str, via: Option<u16>) -> String {
        let url = self
            .local
            .function_url(function, None)
            .expect("a function with a database role");
        match via {
            Some(port) => url.replacen(
                &format!("127.0.0.1:{}/", self.local.proxy_port),
                &format!("127.0.0.1:{port}/"),
                1,
            ),
            None => url,
        }
    }

    /// The settings Terraform gives `function`, its database URL as its own secret holds
    /// it (here in DATABASE_URL: one bench secret serves every function).
    fn env(&self, function: &str, runtime_api: &str) -> Vec<(String, String)> {
        let mut env = lambda_env(function, runtime_api);
        let mut set = |k: &str, v: &str| env.push((k.to_owned(), v.to_owned()));
        set("DATABASE_URL", &self.function_url(function, None));
        set("DOCFLOW_SECRET_ID", &self.secret_id);
        set("MAX_RECEIVE_COUNT", "3");
        set("DOCUMENTS_BUCKET", &self.bucket);
        set("QUEUE_VISIBILITY_TIMEOUT_SECONDS", "1800");
        match function {
            "ingestion" => {
                set("LLM_PROVIDER", "anthropic");
                set("LLM_BASE_URL", &self.llm.uri());
                set("LLM_TIMEOUT_SECONDS", "60");
                set("OCR_PROVIDER", "native");
                set("MATCHING_QUEUE_URL", &self.matching_url);
            }
            "matching" => {
                set("LLM_PROVIDER", "anthropic");
                set("LLM_BASE_URL", &self.llm.uri());
                set("LLM_TIMEOUT_SECONDS", "30");
            }
            "document-output" => {
                set("MAESN_BASE_URL", &self.maesn_uri);
                set("DATEV_CREDENTIALS_PREFIX", &self.credentials_prefix);
            }
            "sweeper" => {
                set("INGESTION_QUEUE_URL", &self.ingestion_url);
                set("MATCHING_QUEUE_URL", &self.matching_url);
                set("DOCUMENT_OUTPUT_QUEUE_URL", &self.output_url);
                set("MAESN_BASE_URL", &self.maesn_uri);
                set("DATEV_CREDENTIALS_PREFIX", &self.credentials_prefix);
            }
            _ => {}
        }
        env
    }
}

/// Where the per-record comparisons read objects from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum S3 {
    /// moto itself, one request at a time.
    Moto,
    /// The stand-in replaying moto's answers from memory, in parallel (`s3mem`).
    Memory,
}

impl S3 {
    fn label(self) -> &'static str {
        match self {
            S3::Moto => "S3: moto",
            S3::Memory => "S3: moto's answers from memory, in parallel",
        }
    }

    /// The key of this run in the JSON details.
    fn key(self) -> &'static str {
        match self {
            S3::Moto => "s3_moto",
            S3::Memory => "s3_memory",
        }
    }

    /// The per-record target (docflow ≥ 2× faster than the peer, batches of 10),
    /// judged where S3 serves in parallel as AWS does; against moto, which serves one
    /// request at a time, the ratio is reported without a target (docs/performance.md).
    fn per_record_target(self) -> Option<Target> {
        match self {
            S3::Moto => None,
            S3::Memory => Some(("≥ 2×", |r| r >= 2.0)),
        }
    }

    /// That the object GETs of a timed run went where this choice says: at least
    /// `records` answered from memory, or none.
    fn check_hits(self, hits: usize, records: usize) -> anyhow::Result<()> {
        match self {
            S3::Moto => anyhow::ensure!(
                hits == 0,
                "{hits} GETs reached the S3 stand-in in a run against moto"
            ),
            S3::Memory => anyhow::ensure!(
                hits >= records,
                "only {hits} GETs of {records} records were answered from memory: is AWS_ENDPOINT_URL_S3 read?"
            ),
        }
        Ok(())
    }

    /// `env` with S3 pointed at this choice (`AWS_ENDPOINT_URL_S3`, which the SDK for
    /// Rust and boto3 both read before `AWS_ENDPOINT_URL`).
    fn apply(self, mut env: Vec<(String, String)>, stack: &Stack) -> Vec<(String, String)> {
        env.retain(|(k, _)| k != "AWS_ENDPOINT_URL_S3");
        if self == S3::Memory {
            env.push(("AWS_ENDPOINT_URL_S3".into(), stack.s3mem.url.clone()));
        }
        env
    }
}

/// A function process started and ready for events.
struct Running {
    proc: Proc,
    api: rapi::RuntimeApi,
}

async fn start_ready(
    bin: &Path,
    env: Vec<(String, String)>,
    api: rapi::RuntimeApi,
) -> anyhow::Result<(Running, Duration)> {
    let started = Instant::now();
    let proc = Proc::spawn(bin, &env)?;
    match api.ready(Duration::from_secs(20)).await {
        Ok(at) => Ok((Running { proc, api }, at.duration_since(started))),
        Err(e) => {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let tail = proc.tail();
            proc.stop().await;
            Err(e.context(format!("{} did not start:\n{tail}", bin.display())))
        }
    }
}

impl Running {
    /// Stops the process and frees the stand-in's port.
    async fn stop(self) {
        self.proc.stop().await;
        drop(self.api);
        tokio::task::yield_now().await;
    }

    async fn batch(&self, queue: &RealQueue, bodies: &[String]) -> anyhow::Result<rapi::Answer> {
        let t = Instant::now();
        let event = queue.event(bodies).await?;
        if std::env::var_os("BENCH_VERBOSE").is_some() {
            eprintln!("   event of {} built in {:?}", bodies.len(), t.elapsed());
        }
        let answer = match self
            .api
            .invoke(serde_json::to_string(&event)?, Duration::from_secs(180))
            .await
        {
            Ok(a) => a,
            Err(e) => return Err(e.context(self.proc.tail())),
        };
        anyhow::ensure!(answer.ok, "invocation failed: {}", answer.body);
        let response: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
        let failures = response["batchItemFailures"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(
            failures == 0,
            "{failures} records failed: {}\n{}",
            answer.body,
            self.proc.tail()
        );
        let response: SqsBatchResponse = serde_json::from_str(&answer.body)?;
        queue.esm.complete(&event, &response).await?;
        if std::env::var_os("BENCH_VERBOSE").is_some() {
            eprintln!("   batch of {} answered in {:?}", bodies.len(), answer.wall);
        }
        Ok(answer)
    }
}

/// A real queue in moto: events are built from messages really received, with real
/// receipt handles (the heartbeat's visibility changes need them), and completed the
/// way Lambda does.
struct RealQueue {
    sqs: aws_sdk_sqs::Client,
    url: String,
    esm: docflow_dev::local::EventSourceMapping,
}

impl RealQueue {
    async fn fresh(sqs: &aws_sdk_sqs::Client, prefix: &str) -> anyhow::Result<Self> {
        let pair = fresh_queue(
            sqs,
            prefix,
            docflow_dev::local::QueueSpec {
                visibility_timeout: Duration::from_secs(1800),
                ..Default::default()
            },
        )
        .await;
        Ok(RealQueue {
            sqs: sqs.clone(),
            esm: docflow_dev::local::EventSourceMapping::new(sqs.clone(), &pair.url).await?,
            url: pair.url,
        })
    }

    async fn event(&self, bodies: &[String]) -> anyhow::Result<SqsEvent> {
        for body in bodies {
            docflow_tests::send(&self.sqs, &self.url, body).await;
        }
        let mut event = SqsEvent::default();
        for _ in 0..20 {
            if event.records.len() >= bodies.len() {
                break;
            }
            if let Some(batch) = self.esm.poll().await? {
                event.records.extend(batch.records);
            }
        }
        anyhow::ensure!(
            event.records.len() == bodies.len(),
            "received {} of {} messages",
            event.records.len(),
            bodies.len()
        );
        Ok(event)
    }
}

fn file_size(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64)
}

/// Zips `bin` as `bootstrap` (what cargo-lambda's `--output-format zip` produces).
fn zip_size(bin: &Path, dir: &Path) -> anyhow::Result<f64> {
    let staging = dir.join(bin.file_name().context("binary name")?);
    std::fs::create_dir_all(&staging)?;
    std::fs::copy(bin, staging.join("bootstrap"))?;
    let zip = staging.join("bootstrap.zip");
    let _ = std::fs::remove_file(&zip);
    let status = std::process::Command::new("zip")
        .arg("-q9j")
        .arg(&zip)
        .arg(staging.join("bootstrap"))
        .status()
        .context("run zip")?;
    anyhow::ensure!(status.success(), "zip failed");
    Ok(file_size(&zip))
}

// ---------------------------------------------------------------- cold start

async fn cold_starts(report: &mut Report, stack: &Stack, args: &Args) -> anyhow::Result<()> {
    let section = "cold start";
    let zip_dir = std::env::temp_dir().join(unique("docflow-bench-zip"));
    let mut ready: std::collections::HashMap<&str, Vec<f64>> = Default::default();
    let mut phases: std::collections::HashMap<&str, Vec<Vec<(String, f64)>>> = Default::default();
    let mut rss: std::collections::HashMap<&str, Vec<f64>> = Default::default();
    // The second series: root certificates from one bundle file (SSL_CERT_FILE) instead
    // of this host's store, whose directory of hashed links is read file by file.
    let mut bundled: std::collections::HashMap<&str, Vec<f64>> = Default::default();
    let bundle = ROOT_BUNDLE.iter().map(Path::new).find(|p| p.is_file());
    let all: Vec<&str> = std::iter::once(HELLO).chain(FUNCTIONS).collect();
    // Interleaved, so drift in the machine's load touches every binary alike.
    for _ in 0..args.runs {
        for name in &all {
            let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
            let env = if *name == HELLO {
                lambda_env(name, &api.addr)
            } else {
                stack.env(name, &api.addr)
            };
            let (running, took) = start_ready(&args.bins.join(name), env, api).await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            rss.entry(name).or_default().push(running.proc.rss().0);
            ready.entry(name).or_default().push(ms(took));
            if let Some((p, _)) = running.proc.phases() {
                phases.entry(name).or_default().push(p);
            }
            running.stop().await;
            if let (Some(bundle), false) = (bundle, *name == HELLO) {
                let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
                let mut env = stack.env(name, &api.addr);
                env.push(("SSL_CERT_FILE".into(), bundle.display().to_string()));
                let (running, took) = start_ready(&args.bins.join(name), env, api).await?;
                let secret = running
                    .proc
                    .phases()
                    .and_then(|(p, _)| {
                        p.iter()
                            .find(|(k, _)| k == "secret_fetch")
                            .map(|(_, v)| v / 1000.0)
                    })
                    .unwrap_or(0.0);
                bundled.entry(name).or_default().push(ms(took) - secret);
                running.stop().await;
            }
        }
    }
    let hello_ready = median(ready[HELLO].clone());
    let hello_rss = median(rss[HELLO].clone());
    let hello_bin = args.bins.join(HELLO);
    let hello_size = file_size(&hello_bin) / 1e6;
    let hello_zip = zip_size(&hello_bin, &zip_dir)? / 1e6;
    report.plain(
        section,
        "hello world: exec → first /next",
        hello_ready,
        "ms",
    );
    let mut detail = serde_json::Map::new();
    for name in FUNCTIONS {
        let total = median(ready[name].clone());
        // Median of each phase across runs.
        let runs = phases.get(name).cloned().unwrap_or_default();
        let mut names: Vec<String> = runs
            .first()
            .map(|r| r.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        names.dedup();
        let mut breakdown = serde_json::Map::new();
        let mut in_main = 0.0;
        for phase in &names {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|(k, _)| k == phase).map(|(_, v)| v / 1000.0))
                .collect();
            let m = median(values);
            in_main += m;
            breakdown.insert(phase.clone(), json!(m));
        }
        let secret = breakdown
            .get("secret_fetch")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        breakdown.insert(
            "exec_to_main_and_runtime".into(),
            json!((total - in_main).max(0.0)),
        );
        let without_secret = total - secret;
        report.against(
            section,
            &format!("{name}: exec → first /next, secret fetch excluded"),
            without_secret,
            "ms",
            "hello world",
            hello_ready,
            Some(("≤ 2×", |r| r <= 2.0)),
        );
        if let (Some(bundle), Some(runs)) = (bundle, bundled.get(name)) {
            report.against(
                section,
                &format!(
                    "{name}: the same, root certificates from one bundle file (SSL_CERT_FILE={})",
                    bundle.display()
                ),
                median(runs.clone()),
                "ms",
                "hello world",
                hello_ready,
                Some(("≤ 2×", |r| r <= 2.0)),
            );
        }
        report.plain(
            section,
            &format!("{name}: secret fetch (moto)"),
            secret,
            "ms",
        );
        let breakdown_text = breakdown
            .iter()
            .map(|(k, v)| format!("{k} {}", fmt(v.as_f64().unwrap_or(0.0))))
            .collect::<Vec<_>>()
            .join(", ");
        report.plain(
            section,
            &format!("{name}: breakdown (ms) — {breakdown_text}"),
            in_main,
            "ms in main",
        );
        let bin = args.bins.join(name);
        let size = file_size(&bin) / 1e6;
        let zip = zip_size(&bin, &zip_dir)? / 1e6;
        report.against(
            section,
            &format!("{name}: binary size"),
            size,
            "MB",
            "hello world",
            hello_size,
            None,
        );
        report.limit(
            section,
            &format!("{name}: zip size"),
            zip,
            "MB",
            "≤ 5 MB",
            zip <= 5.0,
        );
        let idle = median(rss[name].clone());
        report.against(
            section,
            &format!("{name}: idle RSS at ready"),
            idle,
            "MB",
            "hello world",
            hello_rss,
            None,
        );
        detail.insert(
            name.into(),
            json!({
                "ready_ms_runs": ready[name],
                "ready_ms_median": total,
                "one_bundle_ready_without_secret_ms_runs": bundled.get(name),
                "phases_ms_median": breakdown,
                "binary_mb": size,
                "zip_mb": zip,
                "idle_rss_mb": idle,
            }),
        );
    }
    detail.insert(
        HELLO.into(),
        json!({
            "ready_ms_runs": ready[HELLO],
            "ready_ms_median": hello_ready,
            "binary_mb": hello_size,
            "zip_mb": hello_zip,
            "idle_rss_mb": hello_rss,
        }),
    );
    report
        .details
        .insert("cold_start".into(), Value::Object(detail));
    let _ = std::fs::remove_dir_all(&zip_dir);
    Ok(())
}

// ---------------------------------------------------------------- ingestion

/// `n` in-progress ingestions of documents whose file (`ext`) is `file`.
async fn seed_ingestions(
    stack: &Stack,
    n: usize,
    ext: &str,
    file: &[u8],
) -> anyhow::Result<Vec<String>> {
    let tenant: Uuid = sqlx::query_scalar(
        r#"WITH o AS (INSERT INTO organization (name) VALUES ('Bench Org') RETURNING id)
           INSERT INTO tenant (organization_id, name) SELECT id, 'Bench GmbH' FROM o RETURNING id"#,
    )
    .fetch_one(&stack.pool)
    .await?;
    let mut ids = Vec::new();
    for _ in 0..n {
        let document_id = Uuid::new_v4();
        let ingestion_id = Uuid::new_v4();
        let key = format!("documents/{document_id}.{ext}");
        sqlx::query("INSERT INTO document (id, tenant_id, file_path) VALUES ($1, $2, $3)")
            .bind(document_id)
            .bind(tenant)
            .bind(&key)
            .execute(&stack.pool)
            .await?;
        sqlx::query("INSERT INTO ingestion (id, document_id) VALUES ($1, $2)")
            .bind(ingestion_id)
            .bind(document_id)
            .execute(&stack.pool)
            .await?;
        stack
            .s3
            .put_object()
            .bucket(&stack.bucket)
            .key(&key)
            .body(file.to_vec().into())
            .send()
            .await?;
        stack.s3mem.warm(&stack.bucket, &key).await?;
        ids.push(ingestion_id.to_string());
    }
    Ok(ids)
}

const INVOICE_TEXT: &str = "Muster Bürobedarf GmbH\nRechnung RE-2014-0815\nDatum 07.05.2014\nDruckerpapier A4 10 x 10,00 EUR\nNetto 100,00 EUR\nUSt 19 % 19,00 EUR\nGesamt 119,00 EUR\nBestellung PO-4711\n";

async fn concurrency(
    report: &mut Report,
    stack: &Stack,
    args: &Args,
    llm_delay: Duration,
) -> anyhow::Result<()> {
    let section = "in-batch concurrency";
    let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
    let env = stack.env("ingestion", &api.addr);
    let (fun, _) = start_ready(&args.bins.join("ingestion"), env, api).await?;
    let queue = &RealQueue::fresh(&stack.sqs, "bench-ingestion").await?;
    // Warm: the first invocation opens the pool's connections and the HTTP clients'.
    let warm = seed_ingestions(stack, 10, "txt", INVOICE_TEXT.as_bytes()).await?;
    fun.batch(queue, &warm).await?;
    let mut single = Vec::new();
    let mut batch = Vec::new();
    for _ in 0..3 {
        let one = seed_ingestions(stack, 1, "txt", INVOICE_TEXT.as_bytes()).await?;
        single.push(ms(fun.batch(queue, &one).await?.wall));
        let ten = seed_ingestions(stack, 10, "txt", INVOICE_TEXT.as_bytes()).await?;
        batch.push(ms(fun.batch(queue, &ten).await?.wall));
    }
    fun.stop().await;
    let single_ms = median(single.clone());
    let batch_ms = median(batch.clone());
    report.plain(
        section,
        &format!(
            "ingestion: LLM stand-in answering after {} ms",
            llm_delay.as_millis()
        ),
        llm_delay.as_secs_f64() * 1000.0,
        "ms",
    );
    report.against(
        section,
        "ingestion: batch of 10, wall",
        batch_ms,
        "ms",
        "batch of 1",
        single_ms,
        Some(("≤ 1.3×", |r| r <= 1.3)),
    );
    report.details.insert(
        "concurrency".into(),
        json!({ "single_ms_runs": single, "batch10_ms_runs": batch, "llm_delay_ms": llm_delay.as_millis() as u64 }),
    );
    Ok(())
}

/// A PDF of about `bytes` bytes of text pages.
fn big_pdf(bytes: usize) -> Vec<u8> {
    let line = "Pos 0001 Druckerpapier A4 80g 500 Blatt weiss   10 x 10,00 EUR   100,00 EUR";
    let page: Vec<&str> = std::iter::repeat_n(line, 54).collect();
    let one = docflow_tests::pdf::text_pdf(&[&page]).len();
    let pages = (bytes / one.max(1)).max(1);
    let all: Vec<&[&str]> = std::iter::repeat_n(page.as_slice(), pages).collect();
    docflow_tests::pdf::text_pdf(&all)
}

/// What the parsing sandbox's child costs per document (`docflow::sandbox`), with the
/// release ingestion binary as the child, as Lambda runs it: a child that only echoes the
/// document (spawn, exec, the limits, the document copied in, an answer copied out)
/// against the same child reading the document's text layer (all of that plus the
/// parsing). Median of `--runs` each, per document.
async fn sandbox_cost(report: &mut Report, args: &Args) -> anyhow::Result<()> {
    use docflow::sandbox::{Job, Limits, run_named};
    let section = "parsing sandbox";
    let exe = args.bins.join("ingestion");
    let limits = Limits::default();
    let mut documents: Vec<(String, Vec<u8>)> = docflow_cli::samples::SAMPLES
        .iter()
        .filter(|s| s.file_name.ends_with(".pdf") && s.expected.is_some())
        .map(|s| (s.file_name.to_owned(), s.bytes.to_vec()))
        .collect();
    documents.push(("a 1 MB text PDF".to_owned(), big_pdf(1_000_000)));
    // Real invoices nobody here wrote: the Mustang project's ZUGFeRD / Factur-X PDFs
    // (../shared/corpora, or DOCFLOW_CORPORA), the sizes invoices really come in.
    let corpora = std::env::var("DOCFLOW_CORPORA").unwrap_or_else(|_| "../shared/corpora".into());
    let mut real: Vec<(String, Vec<u8>)> =
        std::fs::read_dir(Path::new(&corpora).join("mustang-samples"))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "pdf"))
                    .filter_map(|p| {
                        let bytes = std::fs::read(&p).ok()?;
                        let name = p.file_name()?.to_string_lossy().into_owned();
                        Some((name, bytes))
                    })
                    // Invoices: not the empty, broken or oversized test files.
                    .filter(|(name, bytes)| {
                        (10_000..1_000_000).contains(&bytes.len())
                            && !name.contains("Empty")
                            && !name.contains("corrupt")
                            && !name.contains("invalid")
                    })
                    .collect()
            })
            .unwrap_or_default();
    real.sort();
    let time = |job: Job, bytes: Vec<u8>| {
        let exe = exe.clone();
        let limits = limits.clone();
        let runs = args.runs.max(3);
        async move {
            let needs = match job {
                Job::TextLayer => docflow::ocr::text_layer_job_bytes(bytes.len()),
                _ => bytes.len() as u64,
            };
            let bytes = bytes::Bytes::from(bytes);
            let mut times = Vec::new();
            for _ in 0..runs {
                let started = Instant::now();
                run_named(&exe, &limits, job.name(), needs, bytes.clone())
                    .await
                    .with_context(|| format!("{} in a child of {}", job.name(), exe.display()))?;
                times.push(ms(started.elapsed()));
            }
            anyhow::Ok(median(times))
        }
    };
    let (mut echoes, mut reads) = (Vec::new(), Vec::new());
    let (mut real_echoes, mut real_reads) = (Vec::new(), Vec::new());
    for (name, bytes) in &real {
        real_echoes.push(time(Job::Echo, bytes.clone()).await?);
        real_reads.push(time(Job::TextLayer, bytes.clone()).await?);
        eprintln!(
            "   {name} ({} KB): child {:.2} ms, read {:.2} ms",
            bytes.len() / 1000,
            real_echoes.last().unwrap(),
            real_reads.last().unwrap()
        );
    }
    for (name, bytes) in documents {
        let size = bytes.len();
        let echo = time(Job::Echo, bytes.clone()).await?;
        let read = time(Job::TextLayer, bytes).await?;
        report.against(
            section,
            &format!("child without parsing: {name} ({} KB)", size / 1000),
            echo,
            "ms",
            "the child reading its text layer",
            read,
            None,
        );
        echoes.push(echo);
        reads.push(read);
    }
    report.against(
        section,
        "child without parsing, median over the demo's PDFs and the 1 MB PDF",
        median(echoes),
        "ms",
        "the child reading the text layer, median",
        median(reads),
        Some(("<= 0.5 of the sandboxed read", |r| r <= 0.5)),
    );
    if real.is_empty() {
        anyhow::bail!("no real invoice PDFs under {corpora}/mustang-samples (DOCFLOW_CORPORA)");
    }
    report.against(
        section,
        &format!(
            "child without parsing, median over {} real invoice PDFs (Mustang samples, {}–{} KB)",
            real.len(),
            real.iter().map(|(_, b)| b.len()).min().unwrap_or(0) / 1000,
            real.iter().map(|(_, b)| b.len()).max().unwrap_or(0) / 1000
        ),
        median(real_echoes),
        "ms",
        "the child reading the text layer, median",
        median(real_reads),
        Some(("<= 0.5 of the sandboxed read", |r| r <= 0.5)),
    );
    Ok(())
}

async fn memory(report: &mut Report, stack: &Stack, args: &Args) -> anyhow::Result<()> {
    let section = "memory under load";
    let pdf = big_pdf(5_000_000);
    let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
    let env = stack.env("ingestion", &api.addr);
    let (fun, _) = start_ready(&args.bins.join("ingestion"), env, api).await?;
    let queue = &RealQueue::fresh(&stack.sqs, "bench-ingestion").await?;
    let before = fun.proc.rss();
    let ids = seed_ingestions(stack, 10, "pdf", &pdf).await?;
    let answer = fun.batch(queue, &ids).await;
    let after = fun.proc.rss();
    let tail = fun.proc.tail();
    fun.stop().await;
    let _ = tail;
    let finished = answer.is_ok();
    let wall = answer.map(|a| ms(a.wall)).unwrap_or(f64::NAN);
    report.plain(
        section,
        "ingestion: 10 × PDF, each",
        pdf.len() as f64 / 1e6,
        "MB",
    );
    report.limit(
        section,
        if finished {
            "ingestion: peak RSS (VmHWM) over the batch"
        } else {
            "ingestion: peak RSS (VmHWM) until the harness gave up waiting (batch unfinished after 180 s)"
        },
        after.1,
        "MB",
        "≤ 128 MB",
        after.1 <= 128.0,
    );
    report.plain(section, "ingestion: the batch's wall time", wall, "ms");
    report.details.insert(
        "memory".into(),
        json!({ "pdf_bytes": pdf.len(), "rss_before_mb": before.0, "hwm_after_mb": after.1, "wall_ms": wall, "finished": finished }),
    );
    hostile_memory(report, stack, args).await
}

/// The worst files: batches of ten, each run in a fresh ingestion process of
/// 1024 MB (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, so a memory budget of 512 MiB), its peak
/// RSS read from the process. Scans are read by a Textract stand-in that reads them
/// poorly, so each is decoded and enhanced.
async fn hostile_memory(report: &mut Report, stack: &Stack, args: &Args) -> anyhow::Result<()> {
    let section = "memory under load";
    let textract = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(docflow_tests::ingestion_harness::textract_ok(
            &["Rechnunq"],
            20.0,
        ))
        .mount(&textract)
        .await;
    let invoice = docflow_tests::pdf::text_pdf(&[&[
        "Muster Bürobedarf GmbH, Hauptstraße 1, 10115 Berlin",
        "Rechnung Nr. RE-2014-0815",
        "Gesamtbetrag: 119,00 €",
    ]]);
    let bomb = docflow_tests::pdf::flate_bomb_pdf(1 << 30);
    let huge_scan = docflow_tests::pdf::black_png(9_000, 9_000, true);
    /// A case: its name, and the files of its batch as (extension, bytes, how many).
    type Case<'a> = (&'a str, Vec<(&'a str, &'a [u8], usize)>);
    let cases: [Case; 3] = [
        (
            "10 × flate-bomb PDF (1 GiB of content each)",
            vec![("pdf", &bomb, 10)],
        ),
        (
            "10 × 9000 × 9000 RGB PNG read poorly (decoded and enhanced)",
            vec![("png", &huge_scan, 10)],
        ),
        (
            "1 flate bomb + 1 9000² PNG + 8 invoices",
            vec![
                ("pdf", &bomb, 1),
                ("png", &huge_scan, 1),
                ("pdf", &invoice, 8),
            ],
        ),
    ];
    let mut details = Vec::new();
    for (name, files) in cases {
        let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
        let mut env = stack.env("ingestion", &api.addr);
        env.retain(|(k, _)| k != "OCR_PROVIDER" && k != "AWS_LAMBDA_FUNCTION_MEMORY_SIZE");
        env.push(("OCR_PROVIDER".into(), "textract".into()));
        env.push(("AWS_ENDPOINT_URL_TEXTRACT".into(), textract.uri()));
        env.push(("AWS_LAMBDA_FUNCTION_MEMORY_SIZE".into(), "1024".into()));
        let (fun, _) = start_ready(&args.bins.join("ingestion"), env, api).await?;
        let queue = &RealQueue::fresh(&stack.sqs, "bench-hostile").await?;
        let mut ids = Vec::new();
        for (ext, bytes, n) in files {
            ids.extend(seed_ingestions(stack, n, ext, bytes).await?);
        }
        let answer = fun.batch(queue, &ids).await;
        let (_, hwm) = fun.proc.rss();
        fun.stop().await;
        let uuids: Vec<Uuid> = ids.iter().filter_map(|id| id.parse().ok()).collect();
        let outcomes: Vec<(String, Option<String>)> =
            sqlx::query_as("SELECT status, last_error FROM ingestion WHERE id = ANY($1)")
                .bind(&uuids)
                .fetch_all(&stack.pool)
                .await?;
        let too_large = outcomes
            .iter()
            .filter(|(_, e)| {
                e.as_deref()
                    .is_some_and(|e| e.contains("the file is too large to process"))
            })
            .count();
        let completed = outcomes.iter().filter(|(s, _)| s == "completed").count();
        report.limit(
            section,
            &format!("ingestion, {name}: peak RSS (VmHWM)"),
            hwm,
            "MB",
            "≤ 1024 MB, the function's memory",
            answer.is_ok() && hwm <= 1024.0,
        );
        report.plain(
            section,
            "  … records completed / failed as too large",
            completed as f64 * 1000.0 + too_large as f64,
            "completed×1000 + too large",
        );
        details.push(json!({
            "case": name,
            "hwm_mb": hwm,
            "finished": answer.is_ok(),
            "error": answer.err().map(|e| format!("{e:#}")),
            "completed": completed,
            "too_large": too_large,
            "records": ids.len(),
        }));
    }
    report
        .details
        .insert("memory_hostile".into(), json!(details));
    Ok(())
}

// ---------------------------------------------------------------- document output

struct OutputJobs {
    env: docflow_tests::output::OutputEnv,
    s3mem: Arc<s3mem::S3Mem>,
}

impl OutputJobs {
    async fn jobs(&self, n: usize) -> anyhow::Result<Vec<String>> {
        let mut ids = Vec::new();
        for _ in 0..n {
            let doc = self.env.another_approved_document().await;
            self.s3mem
                .warm(&self.env.bucket, &format!("documents/{doc}.pdf"))
                .await?;
            ids.push(self.env.insert_job(doc, "pending").await.to_string());
        }
        Ok(ids)
    }
}

/// Loopback round trip of one prepared statement over one connection (pgbench, a C
/// client, so the floor is not the harness's own speed).
fn pg_round_trip_ms(database_url: &str) -> anyhow::Result<f64> {
    let script = std::env::temp_dir()
        .join(unique("bench-rtt"))
        .with_extension("sql");
    std::fs::write(&script, "SELECT 1;\n")?;
    let out = std::process::Command::new("pgbench")
        .args(["-n", "-M", "prepared", "-c", "1", "-t", "5000", "-f"])
        .arg(&script)
        .arg(database_url)
        .output()
        .context("run pgbench")?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("latency average = "))
        .and_then(|v| v.trim_end_matches(" ms").trim().parse().ok())
        .with_context(|| {
            format!(
                "pgbench said: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The `host:port` of a `postgres://user@host:port/db` URL (the counting proxy's
/// upstream: the database `make up` started, whichever port it is on).
fn host_port(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    rest.split(['/', '?']).next().filter(|h| h.contains(':'))
}

fn with_database_url(mut env: Vec<(String, String)>, url: &str) -> Vec<(String, String)> {
    env.retain(|(k, _)| k != "DATABASE_URL");
    env.push(("DATABASE_URL".into(), url.to_owned()));
    env
}

/// An RDS Proxy stand-in (TLS with the local CA's certificate) in front of a counting
/// proxy on `upstream_port`.
async fn counting_stand_in(upstream_port: u16) -> anyhow::Result<docflow_cli::rds_proxy::Running> {
    let local = docflow_dev::local::database::LocalDatabase::from_env()?;
    let dir = local
        .ca
        .parent()
        .context("DOCFLOW_LOCAL_CA has no directory")?
        .to_owned();
    docflow_cli::rds_proxy::start(
        "127.0.0.1:0",
        docflow_cli::rds_proxy::Options {
            upstream: format!("127.0.0.1:{upstream_port}"),
            tls: Some(docflow_cli::rds_proxy::tls_config(
                &dir.join("server.crt"),
                &dir.join("server.key"),
            )?),
            proxy: true,
        },
    )
    .await
}

/// The counters of the `make up` RDS Proxy stand-in (`.local/rds-proxy-<port>.json`).
fn stand_in_pins(port: u16) -> Option<docflow_cli::rds_proxy::Pins> {
    let text = std::fs::read_to_string(format!(".local/rds-proxy-{port}.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// What would have pinned RDS Proxy sessions during the run: the difference of the
/// stand-in's counters (written every second) between `before` and now.
fn pinning(report: &mut Report, port: u16, before: Option<docflow_cli::rds_proxy::Pins>) {
    let section = "RDS Proxy pinning (stand-in)";
    std::thread::sleep(Duration::from_millis(1500));
    let (Some(before), Some(after)) = (before, stand_in_pins(port)) else {
        eprintln!(
            "   {section}: no counters in .local/rds-proxy-{port}.json (make up starts the stand-in)"
        );
        return;
    };
    report.plain(
        section,
        "sessions through the stand-in",
        (after.sessions - before.sessions) as f64,
        "sessions",
    );
    report.plain(
        section,
        "sessions that would pin",
        (after.pinned_sessions - before.pinned_sessions) as f64,
        "sessions",
    );
    report.plain(
        section,
        "connections refused (startup options)",
        (after.refused_options - before.refused_options) as f64,
        "connections",
    );
    for (condition, n) in &after.conditions {
        let was = before.conditions.get(condition).copied().unwrap_or(0);
        if *n > was {
            report.plain(
                section,
                &format!("statements: {condition}"),
                (n - was) as f64,
                "statements",
            );
            if let Some(example) = after.examples.get(condition) {
                report
                    .details
                    .insert(format!("pinning example: {condition}"), json!(example));
            }
        }
    }
}

async fn per_message(
    report: &mut Report,
    stack: &Stack,
    args: &Args,
    jobs: &OutputJobs,
    queue: &RealQueue,
) -> anyhow::Result<Value> {
    let section = "per-message overhead";
    let bin = args.bins.join("document-output");

    // Statements per message: through the counting proxy.
    let upstream = host_port(&stack.database_url)
        .ok_or_else(|| anyhow::anyhow!("no host:port in DATABASE_URL {}", stack.database_url))?;
    let proxy = pgcount::start(PG_PROXY_PORT, upstream.to_owned()).await?;
    // The function's TLS ends at an RDS Proxy stand-in of the bench's own, whose plain
    // upstream leg the counting proxy reads.
    let stand_in = counting_stand_in(proxy.port).await?;
    let proxied = stack.function_url("document-output", Some(stand_in.address.port()));
    let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
    let env = with_database_url(stack.env("document-output", &api.addr), &proxied);
    let (fun, _) = start_ready(&bin, env, api).await?;
    eprintln!("   counting statements");
    fun.batch(queue, &jobs.jobs(10).await?).await?;
    let setup = proxy.log.take();
    fun.batch(queue, &jobs.jobs(10).await?).await?;
    let statements = proxy.log.take();
    fun.stop().await;
    drop(proxy);
    let per_msg = statements.len() as f64 / 10.0;
    let mut distinct: Vec<(String, usize)> = Vec::new();
    for s in &statements {
        let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
        match distinct.iter_mut().find(|(k, _)| *k == s) {
            Some((_, n)) => *n += 1,
            None => distinct.push((s, 1)),
        }
    }

    // Time per message: the release binary, warm, zero-latency stand-ins; S3 from moto,
    // then from memory.
    let rtt = pg_round_trip_ms(&stack.database_url)?;
    let floor = per_msg * rtt;
    let mut timed = serde_json::Map::new();
    for s3 in [S3::Moto, S3::Memory] {
        let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
        let env = stack.env("document-output", &api.addr);
        let (fun, _) = start_ready(&bin, s3.apply(env, stack), api).await?;
        fun.batch(queue, &jobs.jobs(10).await?).await?;
        eprintln!("   timing ({})", s3.label());
        stack.s3mem.take();
        let mut singles = Vec::new();
        for _ in 0..10 {
            singles.push(ms(fun.batch(queue, &jobs.jobs(1).await?).await?.wall));
        }
        let mut batch_total = 0.0;
        let batches = 5;
        for _ in 0..batches {
            batch_total += ms(fun.batch(queue, &jobs.jobs(10).await?).await?.wall);
        }
        let hwm = fun.proc.rss().1;
        fun.stop().await;
        let (hits, _) = stack.s3mem.take();
        s3.check_hits(hits, 10 + batches * 10)?;
        let single = median(singles.clone());
        let per_msg_in_batch = batch_total / (batches as f64 * 10.0);
        let suffix = match s3 {
            S3::Moto => String::new(),
            S3::Memory => format!(" ({})", s3.label()),
        };
        report.against(
            section,
            &format!("document-output: one message alone (batch of 1), wall{suffix}"),
            single,
            "ms",
            "its statements × round trip",
            floor,
            Some(("≤ 1.5×", |r| r <= 1.5)),
        );
        report.plain(
            section,
            &format!("document-output: per message in batches of 10{suffix}"),
            per_msg_in_batch,
            "ms",
        );
        report.plain(
            section,
            &format!("document-output: messages/s in batches of 10 (one instance){suffix}"),
            1000.0 / per_msg_in_batch,
            "msg/s",
        );
        timed.insert(
            s3.key().into(),
            json!({ "per_message_ms": per_msg_in_batch, "single_ms": single, "single_ms_runs": singles, "peak_rss_mb": hwm, "s3_gets_from_memory": hits }),
        );
    }

    report.plain(
        section,
        "document-output: Postgres statements per message",
        per_msg,
        "statements",
    );
    report.plain(
        section,
        "loopback Postgres round trip (pgbench, prepared, 1 connection)",
        rtt,
        "ms",
    );
    report.details.insert(
        "per_message".into(),
        json!({
            "function": "document-output",
            "statements_per_message": per_msg,
            "statements_in_one_batch_of_10": distinct.iter().map(|(s, n)| json!({"sql": s, "count": n})).collect::<Vec<_>>(),
            "connection_setup_and_first_batch_statements": setup.len(),
            "pg_round_trip_ms": rtt,
            "timed": timed.clone(),
        }),
    );
    Ok(Value::Object(timed))
}

// ---------------------------------------------------------------- S3

/// What the S3 stand-in changes: ten GETs of ten 5 KB objects one after the other, then
/// all at once, against moto and against the stand-in. The GETs are written by hand
/// (`s3mem::raw_get`, a connection each, as moto closes every connection anyway), not
/// through the harness's debug build of the SDK, so the walls are the servers' own.
async fn s3_probe(report: &mut Report, stack: &Stack) -> anyhow::Result<()> {
    let section = "S3: moto and the stand-in";
    let body = vec![7u8; 5_000];
    let mut paths = Vec::new();
    for i in 0..10 {
        let key = format!("bench-probe/{}-{i}", Uuid::new_v4());
        stack
            .s3
            .put_object()
            .bucket(&stack.bucket)
            .key(&key)
            .body(body.clone().into())
            .send()
            .await?;
        stack.s3mem.warm(&stack.bucket, &key).await?;
        paths.push(format!("/{}/{key}", stack.bucket));
    }
    let moto = httpcount::authority(&docflow_tests::endpoint()).context("moto's host:port")?;
    let memory = httpcount::authority(&stack.s3mem.url).context("the stand-in's host:port")?;
    let mut details = serde_json::Map::new();
    for (s3, authority) in [(S3::Moto, moto), (S3::Memory, memory)] {
        let get = |path: String| {
            let authority = authority.clone();
            async move {
                let (status, len) = s3mem::raw_get(&authority, &path).await?;
                anyhow::ensure!(
                    status == "200" && len == 5_000,
                    "GET {path} from {authority}: {status}, {len} bytes"
                );
                Ok(())
            }
        };
        let (mut sequential, mut concurrent) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            let t = Instant::now();
            for path in &paths {
                get(path.clone()).await?;
            }
            sequential.push(ms(t.elapsed()));
            let t = Instant::now();
            futures::future::try_join_all(paths.iter().cloned().map(get)).await?;
            concurrent.push(ms(t.elapsed()));
        }
        let (seq, conc) = (median(sequential.clone()), median(concurrent.clone()));
        report.plain(
            section,
            &format!("10 GETs of 5 KB one after the other, wall ({})", s3.label()),
            seq,
            "ms",
        );
        report.against(
            section,
            &format!("10 GETs of 5 KB at once, wall ({})", s3.label()),
            conc,
            "ms",
            "one after the other",
            seq,
            None,
        );
        details.insert(
            s3.key().into(),
            json!({ "sequential_ms": sequential, "concurrent_ms": concurrent }),
        );
    }
    report
        .details
        .insert("s3_probe".into(), Value::Object(details));
    Ok(())
}

// ---------------------------------------------------------------- peer

async fn peer(
    report: &mut Report,
    stack: &Stack,
    jobs: &OutputJobs,
    python: &Path,
    docflow: &Value,
    queue: &RealQueue,
) -> anyhow::Result<()> {
    let section = "peer (Python + Powertools)";
    let mut details = serde_json::Map::new();
    for s3 in [S3::Moto, S3::Memory] {
        let mut batches = Vec::new();
        for _ in 0..6 {
            batches.push(jobs.jobs(10).await?);
        }
        let mut events = Vec::new();
        for bodies in batches {
            events.push(serde_json::to_value(queue.event(&bodies).await?)?);
        }
        let env = trips::peer_env(stack, "document-output", None);
        stack.s3mem.take();
        let (result, _) =
            trips::run_peer(python, "handler", &events, s3.apply(env, stack), None).await?;
        let (hits, _) = stack.s3mem.take();
        s3.check_hits(hits, 60)?;
        let ours = &docflow[s3.key()];
        report_peer(
            report,
            section,
            "per message in batches of 10 (document-output",
            ("peer ÷ docflow, peak RSS", Some(("≥ 3×", |r| r >= 3.0))),
            s3,
            &result,
            (
                ours["per_message_ms"].as_f64().unwrap_or(f64::NAN),
                ours["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
            ),
        );
        details.insert(s3.key().into(), result);
    }
    report.details.insert("peer".into(), Value::Object(details));
    Ok(())
}

/// The peer's figures against docflow's, for one path and one S3: time per record in
/// batches of 10 (`what`: the measure's words before the S3 label; the ≥ 2× target
/// where S3 serves in parallel) and, from the run against moto, peak RSS (`rss`: the
/// measure and its target). `ours`: docflow's time per record and peak RSS.
fn report_peer(
    report: &mut Report,
    section: &str,
    what: &str,
    rss: (&str, Option<Target>),
    s3: S3,
    peer: &Value,
    ours: (f64, f64),
) {
    report.against(
        section,
        &format!("peer ÷ docflow, {what}, {})", s3.label()),
        peer["per_message_ms"].as_f64().unwrap_or(f64::NAN),
        "ms",
        "docflow",
        ours.0,
        s3.per_record_target(),
    );
    if s3 == S3::Moto {
        report.against(
            section,
            rss.0,
            peer["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
            "MB",
            "docflow",
            ours.1,
            rss.1,
        );
    }
}

// ---------------------------------------------------------------- main

/// The bench's world is a database of its own, made afresh each run by `docflow local
/// up` (the owner, pgvector, the migrations, the function roles' grants): what a run
/// leaves (its tenants' open DATEV tasks, 5,000 bulk documents) never reaches the next
/// run's sweeper, nor the demo's database.
const BENCH_DATABASE: &str = "docflow_bench";

/// `url` naming `database` instead of its own.
fn with_database(url: &str, database: &str) -> anyhow::Result<String> {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base
        .rsplit_once('/')
        .filter(|(server, _)| server.contains("://"))
        .with_context(|| format!("no database in DATABASE_URL {url}"))?;
    Ok(match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    })
}

fn main() -> anyhow::Result<()> {
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5433/docflow".into());
    let url = with_database(&base, BENCH_DATABASE)?;
    // SAFETY: no other thread exists yet. Every part of the bench (and every process it
    // starts) reads DATABASE_URL: from here on it names the bench's own database.
    unsafe { std::env::set_var("DATABASE_URL", &url) };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(&base, url))
}

/// Drops the bench's database (as the superuser of `base`) and makes it again with the
/// CLI's `docflow local up`.
async fn fresh_database(base: &str, bins: &Path) -> anyhow::Result<()> {
    let admin: sqlx::postgres::PgConnectOptions = base.parse().context("DATABASE_URL")?;
    let mut admin: sqlx::PgConnection = sqlx::Connection::connect_with(&admin.database("postgres"))
        .await
        .context("connect to Postgres as the superuser (make up)")?;
    sqlx::query(&format!(
        "DROP DATABASE IF EXISTS {BENCH_DATABASE} WITH (FORCE)"
    ))
    .execute(&mut admin)
    .await
    .context("drop the bench's database")?;
    let status = tokio::process::Command::new(bins.join("docflow"))
        .args(["local", "up"])
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .context("run docflow local up for the bench's database")?;
    anyhow::ensure!(
        status.success(),
        "docflow local up failed for the bench's database"
    );
    Ok(())
}

async fn run(base: &str, database_url: String) -> anyhow::Result<()> {
    let args = args()?;
    let machine = machine();
    eprintln!("== a fresh database of the bench's own: {BENCH_DATABASE}");
    fresh_database(base, &args.bins).await?;
    let pool = PgPool::connect(&database_url)
        .await
        .context("connect to Postgres (make up)")?;
    let aws = docflow_tests::aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let s3 = docflow::aws::s3_client(&aws);
    let secrets = aws_sdk_secretsmanager::Client::new(&aws);

    // Document output's world (tenant, DATEV secret, bucket) doubles as everyone's.
    let output = docflow_tests::output::setup(pool.clone()).await;
    let maesn = docflow_cli::maesn::StandIn::start(docflow_cli::maesn::Options {
        api_key: docflow_tests::output::API_KEY.to_owned(),
        ..Default::default()
    })
    .await;
    let llm = MockServer::start().await;
    let llm_delay = Duration::from_millis(200);
    let extraction = docflow_tests::ingestion_harness::invoice_json().to_string();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(docflow_tests::llm::anthropic_text(&extraction).set_delay(llm_delay))
        .mount(&llm)
        .await;
    let secret_id = unique("docflow-bench/app");
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(
            json!({
                "database_url": database_url,
                "anthropic_api_key": "sk-ant-bench",
                "maesn_api_key": docflow_tests::output::API_KEY,
            })
            .to_string(),
        )
        .send()
        .await
        .context("create the bench secret in moto (make up)")?;
    let queue = |prefix: &'static str| {
        let sqs = sqs.clone();
        async move { fresh_queue(&sqs, prefix, docflow_dev::local::QueueSpec::default()).await }
    };
    let s3mem = Arc::new(
        s3mem::S3Mem::start(
            S3MEM_PORT,
            httpcount::authority(&docflow_tests::endpoint()).context("moto's host:port")?,
        )
        .await?,
    );
    let stack = Stack {
        pool: pool.clone(),
        sqs: sqs.clone(),
        database_url: database_url.clone(),
        local: docflow_dev::local::database::LocalDatabase::from_env()?,
        secret_id,
        bucket: output.bucket.clone(),
        s3,
        s3mem: s3mem.clone(),
        matching_url: queue("bench-matching").await.url,
        ingestion_url: queue("bench-ingestion").await.url,
        output_url: output.queue.url.clone(),
        llm,
        maesn_uri: maesn.uri(),
        credentials_prefix: output.credentials_prefix.clone(),
    };
    let output_queue = RealQueue::fresh(&sqs, "bench-output").await?;
    let jobs = OutputJobs { env: output, s3mem };

    let mut report = Report::default();
    let mut failures = Vec::new();
    let pins_before = stand_in_pins(stack.local.proxy_port);
    eprintln!("== cold starts ({} runs each)", args.runs);
    if !args.wants("cold") {
    } else if let Err(e) = cold_starts(&mut report, &stack, &args).await {
        failures.push(format!("cold start: {e:#}"));
    }
    eprintln!("== in-batch concurrency");
    if !args.wants("concurrency") {
    } else if let Err(e) = concurrency(&mut report, &stack, &args, llm_delay).await {
        failures.push(format!("concurrency: {e:#}"));
    }
    eprintln!("== S3: moto and the stand-in");
    if (args.wants("message") || args.wants("peer") || args.wants("s3"))
        && let Err(e) = s3_probe(&mut report, &stack).await
    {
        failures.push(format!("S3 probe: {e:#}"));
    }
    eprintln!("== per-message overhead");
    let ours = if args.wants("message") || args.wants("peer") {
        match per_message(&mut report, &stack, &args, &jobs, &output_queue).await {
            Ok(v) => Some(v),
            Err(e) => {
                failures.push(format!("per-message: {e:#}"));
                None
            }
        }
    } else {
        None
    };
    match (&args.python, &ours) {
        (Some(python), Some(ours)) => {
            eprintln!("== peer");
            if let Err(e) = peer(&mut report, &stack, &jobs, python, ours, &output_queue).await {
                failures.push(format!("peer: {e:#}"));
            }
        }
        _ => {
            failures.push("peer: not run (no --python, or docflow's own figure is missing)".into())
        }
    }
    match &args.python {
        Some(python) if args.wants("trips") || args.wants("peer") => {
            eprintln!("== round trips per record, and the ingestion peer");
            if let Err(e) = trips::section(&mut report, &stack, &args.bins, python, &jobs).await {
                failures.push(format!("round trips / ingestion peer: {e:#}"));
            }
        }
        Some(_) => {}
        None => failures.push("round trips / ingestion peer: not run (no --python)".into()),
    }
    eprintln!("== memory under load");
    if !args.wants("memory") {
    } else if let Err(e) = memory(&mut report, &stack, &args).await {
        failures.push(format!("memory: {e:#}"));
    }

    eprintln!("== parsing sandbox");
    if !args.wants("sandbox") {
    } else if let Err(e) = sandbox_cost(&mut report, &args).await {
        failures.push(format!("parsing sandbox: {e:#}"));
    }

    eprintln!("== pipeline throughput ({} documents)", 2 * args.pairs);
    if !args.wants("pipeline") {
    } else if let Err(e) = pipeline::pipeline(&mut report, &args.bins, args.pairs).await {
        failures.push(format!("pipeline: {e:#}"));
    }

    eprintln!(
        "== bulk import ({} documents of one tenant)",
        bulk::DOCUMENTS
    );
    if !args.wants("bulk") {
    } else if let Err(e) = bulk::bulk_import(&mut report, &args.bins).await {
        failures.push(format!("bulk import: {e:#}"));
    }
    eprintln!("== RDS Proxy pinning (what the stand-in counted during the run)");
    pinning(&mut report, stack.local.proxy_port, pins_before);

    let table = report.markdown();
    println!("{table}");
    for f in &failures {
        println!("- NOT MEASURED: {f}");
    }
    let results = json!({
        "generated_at": chrono::Utc::now().to_rfc3339(),
        "machine": &machine,
        "build": {
            "profile": "release (workspace [profile.release]: lto = true, codegen-units = 1, strip = true, opt-level = \"z\", regex/JSON/text decoding/Tokio/TLS/hashing crates at \"s\", PDF/image crates at 3)",
            "how": "cargo build --release (host x86_64), each binary zipped as bootstrap",
        },
        "rows": report.rows,
        "details": report.details,
        "not_measured": failures,
    });
    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&args.out, serde_json::to_string_pretty(&results)? + "\n")?;
    // The same table for docs/performance.md.
    let mut md = format!(
        "Machine: {} ({} cores, {} MB), kernel {}, load average at start {}.\n\n{table}",
        machine["cpu_model"].as_str().unwrap_or("?"),
        machine["cores"],
        machine["memory_mb"],
        machine["kernel"].as_str().unwrap_or("?"),
        machine["load_average_at_start"].as_str().unwrap_or("?"),
    );
    for f in &failures {
        md.push_str(&format!("\n- NOT MEASURED: {f}"));
    }
    std::fs::write(args.out.with_extension("md"), md)?;
    eprintln!("== wrote {}", args.out.display());
    Ok(())
}
