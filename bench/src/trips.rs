//! Round trips per record and the Python peer on both of its paths: document output,
//! and ingestion of a one-page text PDF.
//!
//! Counting is done on the wire, for docflow and the peer alike: the functions and the
//! peer's driver are pointed at counting proxies instead of the services —
//! [`httpcount`](crate::httpcount) in front of moto (S3, SQS, Secrets Manager) and in
//! front of the Maesn stand-in (third-party HTTP), [`pgcount`](crate::pgcount) in front
//! of Postgres. A warm batch of 10 runs first (connections, cached secrets: what a warm
//! instance has), then the calls of one batch of 10 are counted and divided by 10.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::{
    OutputJobs, RUNTIME_API_PORT, RealQueue, Report, S3, Stack, host_port, httpcount, ms, pgcount,
    rapi, start_ready,
};

const AWS_PROXY_PORT: u16 = 4744;
const HTTP_PROXY_PORT: u16 = 4745;
const PG_PROXY_PORT: u16 = 4746;
pub const SECTION: &str = "round trips per record";
const PEER_SECTION: &str = "peer (Python + Powertools)";

/// The counting proxies, and the addresses that send a client through them.
pub struct Counters {
    aws: httpcount::Proxy,
    maesn: httpcount::Proxy,
    pg: pgcount::Proxy,
    #[allow(dead_code)] // held: the stand-in serves while the counters live
    stand_in: docflow_cli::rds_proxy::Running,
    pub aws_url: String,
    pub maesn_url: String,
    /// The peer's (the superuser's, through the counting proxy).
    pub database_url: String,
    /// docflow's functions connect through this RDS Proxy stand-in.
    pub stand_in_port: u16,
}

/// One batch's calls, per record.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counts {
    pub records: usize,
    pub sqs: f64,
    pub s3: f64,
    pub secrets_manager: f64,
    pub other_aws: f64,
    pub postgres_statements: f64,
    pub postgres_round_trips: f64,
    pub http: f64,
    /// Every call of the batch by `service operation` (AWS, HTTP) and by statement.
    pub operations: Vec<(String, usize)>,
    pub statements: Vec<(String, usize)>,
}

impl Counts {
    /// Network round trips per record: AWS calls, Postgres round trips, HTTP calls.
    pub fn total(&self) -> f64 {
        self.sqs
            + self.s3
            + self.secrets_manager
            + self.other_aws
            + self.postgres_round_trips
            + self.http
    }

    pub fn text(&self) -> String {
        format!(
            "SQS {}, S3 {}, Secrets Manager {}, Postgres {} round trips ({} statements), third-party HTTP {}{}",
            crate::fmt(self.sqs),
            crate::fmt(self.s3),
            crate::fmt(self.secrets_manager),
            crate::fmt(self.postgres_round_trips),
            crate::fmt(self.postgres_statements),
            crate::fmt(self.http),
            if self.other_aws > 0.0 {
                format!(", other AWS {}", crate::fmt(self.other_aws))
            } else {
                String::new()
            }
        )
    }
}

impl Counters {
    pub async fn start(stack: &Stack) -> anyhow::Result<Self> {
        let endpoint = docflow_tests::endpoint();
        let aws = httpcount::Proxy::start(
            AWS_PROXY_PORT,
            httpcount::authority(&endpoint).context("moto's host:port")?,
        )
        .await?;
        let maesn = httpcount::Proxy::start(
            HTTP_PROXY_PORT,
            httpcount::authority(&stack.maesn_uri).context("the Maesn stand-in's host:port")?,
        )
        .await?;
        let upstream = host_port(&stack.database_url)
            .with_context(|| format!("no host:port in DATABASE_URL {}", stack.database_url))?;
        let pg = pgcount::start(PG_PROXY_PORT, upstream.to_owned()).await?;
        // docflow's functions: TLS to an RDS Proxy stand-in of the counters' own, whose
        // plain upstream leg the counting proxy reads. The Python peer: straight to the
        // counting proxy, as the superuser, without TLS.
        let stand_in = crate::counting_stand_in(pg.port).await?;
        let proxied = stack
            .database_url
            .replacen(upstream, &format!("127.0.0.1:{}", pg.port), 1);
        let database_url = match proxied.contains('?') {
            true => proxied + "&sslmode=disable",
            false => proxied + "?sslmode=disable",
        };
        Ok(Counters {
            aws_url: aws.url_for(&endpoint),
            maesn_url: maesn.url_for(&stack.maesn_uri),
            database_url,
            stand_in_port: stand_in.address.port(),
            aws,
            maesn,
            pg,
            stand_in,
        })
    }

    /// Forgets what was counted so far.
    pub fn reset(&self) {
        self.aws.log.take();
        self.maesn.log.take();
        self.pg.log.take();
        self.pg.log.take_round_trips();
    }

    /// What was counted since the last reset, per record of `records`.
    pub fn take(&self, records: usize) -> Counts {
        let mut calls = self.aws.log.take();
        calls.extend(self.maesn.log.take());
        let statements = self.pg.log.take();
        let round_trips = self.pg.log.take_round_trips();
        let (services, operations) = httpcount::tally(&calls);
        let per = |n: usize| n as f64 / records.max(1) as f64;
        let service = |name: &str| {
            per(services
                .iter()
                .find(|(s, _)| s == name)
                .map_or(0, |(_, n)| *n))
        };
        let known = ["sqs", "s3", "secretsmanager", "http"];
        let other: usize = services
            .iter()
            .filter(|(s, _)| !known.contains(&s.as_str()))
            .map(|(_, n)| n)
            .sum();
        let mut distinct: Vec<(String, usize)> = Vec::new();
        for s in &statements {
            let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
            match distinct.iter_mut().find(|(k, _)| *k == s) {
                Some((_, n)) => *n += 1,
                None => distinct.push((s, 1)),
            }
        }
        Counts {
            records,
            sqs: service("sqs"),
            s3: service("s3"),
            secrets_manager: service("secretsmanager"),
            other_aws: per(other),
            postgres_statements: per(statements.len()),
            postgres_round_trips: per(round_trips),
            http: service("http"),
            operations,
            statements: distinct,
        }
    }
}

/// `env` with `key` set to `value` (replacing it).
pub fn set(env: &mut Vec<(String, String)>, key: &str, value: &str) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_owned(), value.to_owned()));
}

/// The settings that send a function's calls through the counters.
/// A role URL (verify-full: a function's, and its peer's) goes through the counters' RDS
/// Proxy stand-in; any other through the counting proxy itself.
fn counted(mut env: Vec<(String, String)>, counters: &Counters) -> Vec<(String, String)> {
    set(&mut env, "AWS_ENDPOINT_URL", &counters.aws_url);
    let current = env
        .iter()
        .find(|(k, _)| k == "DATABASE_URL")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let database_url = match (
        current.contains("sslmode=verify-full"),
        crate::host_port(&current),
    ) {
        (true, Some(host_port)) => current.replacen(
            host_port,
            &format!("127.0.0.1:{}", counters.stand_in_port),
            1,
        ),
        _ => counters.database_url.clone(),
    };
    set(&mut env, "DATABASE_URL", &database_url);
    if env.iter().any(|(k, _)| k == "MAESN_BASE_URL") {
        set(&mut env, "MAESN_BASE_URL", &counters.maesn_url);
    }
    env
}

/// Ingestion's settings for the peer comparison: the rules extractor (what the peer
/// runs too: no LLM on either side).
fn ingestion_env(stack: &Stack, runtime_api: &str) -> Vec<(String, String)> {
    let mut env = stack.env("ingestion", runtime_api);
    set(&mut env, "LLM_PROVIDER", "rules");
    env
}

/// A fresh, empty queue for one timed run's hand-offs to matching. moto's SendMessage and
/// SendMessageBatch take longer the more messages the queue holds (10 entries: 22 ms
/// into an empty queue, ~400 ms into one of 1,000, on this machine): on a queue shared by
/// every run, whichever side ran later would pay for the messages of the runs before it.
async fn handoff_queue(stack: &Stack) -> String {
    docflow_tests::fresh_queue(
        &stack.sqs,
        "bench-handoff",
        docflow_dev::local::QueueSpec::default(),
    )
    .await
    .url
}

/// `n` ingestions of one-page text PDF invoices (the pipeline section's), each its own.
async fn pdf_ingestions(stack: &Stack, n: usize, offset: usize) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::new();
    for i in 0..n {
        let (_, invoice) = crate::pipeline::pair(offset + i);
        let pdf = crate::pipeline::pdf(&invoice);
        ids.extend(crate::seed_ingestions(stack, 1, "pdf", &pdf).await?);
    }
    Ok(ids)
}

/// The peer's environment, as `function`'s peer: its database URL is the function's
/// (its role, verify-full TLS, through the RDS Proxy stand-in), so both sides pay the
/// same hop for each statement.
pub fn peer_env(
    stack: &Stack,
    function: &str,
    counters: Option<&Counters>,
) -> Vec<(String, String)> {
    let database_url = stack.function_url(function, None);
    let mut env: Vec<(String, String)> = [
        ("DATABASE_URL", database_url.as_str()),
        ("MAESN_BASE_URL", stack.maesn_uri.as_str()),
        (
            "DATEV_CREDENTIALS_PREFIX",
            stack.credentials_prefix.as_str(),
        ),
        ("DOCUMENTS_BUCKET", stack.bucket.as_str()),
        ("MATCHING_QUEUE_URL", stack.matching_url.as_str()),
        ("DOCFLOW_SECRET_ID", stack.secret_id.as_str()),
        ("POWERTOOLS_SERVICE_NAME", "bench-peer"),
        ("AWS_REGION", "eu-central-1"),
        ("AWS_DEFAULT_REGION", "eu-central-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    env.push(("AWS_ENDPOINT_URL".into(), docflow_tests::endpoint()));
    if let Some(c) = counters {
        env = counted(env, c);
    }
    env
}

/// Runs the peer's driver on `events` (the first warms up). With `counters`, the calls of
/// the measured events alone are counted (the driver pauses after the warm-up).
pub async fn run_peer(
    python: &Path,
    module: &str,
    events: &[Value],
    env: Vec<(String, String)>,
    counters: Option<&Counters>,
) -> anyhow::Result<(Value, Option<Counts>)> {
    let file = std::env::temp_dir()
        .join(docflow_tests::unique("bench-peer-events"))
        .with_extension("json");
    std::fs::write(&file, serde_json::to_string(events)?)?;
    let mut cmd = Command::new(python);
    cmd.arg("bench/peer/driver.py")
        .arg(&file)
        .arg(module)
        .envs(env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::piped())
        .kill_on_drop(true);
    if counters.is_some() {
        cmd.env("BENCH_PAUSE_AFTER_WARM", "1");
    }
    let mut child = cmd.spawn().context("run the Python peer")?;
    let mut stderr_lines = Vec::new();
    let records: usize = events
        .iter()
        .skip(1)
        .map(|e| e["Records"].as_array().map_or(0, Vec::len))
        .sum();
    if let Some(counters) = counters {
        let stderr = child.stderr.take().context("peer stderr")?;
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        loop {
            match tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await {
                Ok(Ok(Some(l))) if l.trim() == "warm" => break,
                Ok(Ok(Some(l))) => stderr_lines.push(l),
                _ => {
                    let _ = child.kill().await;
                    anyhow::bail!(
                        "the peer did not finish its warm-up:\n{}",
                        stderr_lines.join("\n")
                    );
                }
            }
        }
        counters.reset();
        let mut stdin = child.stdin.take().context("peer stdin")?;
        stdin.write_all(b"go\n").await?;
        drop(stdin);
        // Keep draining stderr so the peer never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    }
    let out = child.wait_with_output().await?;
    let _ = std::fs::remove_file(&file);
    let counts = counters.map(|c| c.take(records));
    let text = String::from_utf8_lossy(&out.stdout);
    let result: Value = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .with_context(|| {
            format!(
                "peer printed no result:\n{text}\n{}{}",
                stderr_lines.join("\n"),
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    Ok((result, counts))
}

async fn events(queue: &RealQueue, batches: Vec<Vec<String>>) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for bodies in batches {
        out.push(serde_json::to_value(queue.event(&bodies).await?)?);
    }
    Ok(out)
}

/// docflow's calls per record on `function`'s path, for one batch of 10 after a warm one.
async fn docflow_counts<F, Fut>(
    stack: &Stack,
    bins: &Path,
    function: &str,
    env: impl Fn(&Stack, &str) -> Vec<(String, String)>,
    queue: &RealQueue,
    counters: &Counters,
    batch: F,
) -> anyhow::Result<Counts>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Vec<String>>>,
{
    let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
    let env = counted(env(stack, &api.addr), counters);
    let (fun, _) = start_ready(&bins.join(function), env, api).await?;
    let warm = batch(0).await?;
    fun.batch(queue, &warm).await?;
    let measured = batch(1).await?;
    // Building the event receives the messages: the event source mapping's calls, not
    // the function's. Count from the invocation on.
    let event = queue.event(&measured).await?;
    counters.reset();
    let answer = fun
        .api
        .invoke(serde_json::to_string(&event)?, Duration::from_secs(180))
        .await;
    let counts = counters.take(measured.len());
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            let tail = fun.proc.tail();
            fun.stop().await;
            return Err(e.context(tail));
        }
    };
    let tail = fun.proc.tail();
    fun.stop().await;
    anyhow::ensure!(answer.ok, "invocation failed: {}\n{tail}", answer.body);
    let response: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let failures = response["batchItemFailures"].as_array().map_or(0, Vec::len);
    anyhow::ensure!(
        failures == 0,
        "{failures} records failed: {}\n{tail}",
        answer.body
    );
    let response: aws_lambda_events::event::sqs::SqsBatchResponse =
        serde_json::from_str(&answer.body)?;
    queue.esm.complete(&event, &response).await?;
    Ok(counts)
}

fn report_counts(report: &mut Report, path: &str, ours: &Counts, peer: &Counts) {
    report.against(
        SECTION,
        &format!("{path}: docflow — {} (peer: {})", ours.text(), peer.text()),
        ours.total(),
        "calls",
        "peer",
        peer.total(),
        Some(("≤ 1×", |r| r <= 1.0)),
    );
}

/// Round trips per record on both peer paths, docflow and the peer counted alike, and the
/// time per record of ingestion against its peer.
pub async fn section(
    report: &mut Report,
    stack: &Stack,
    bins: &Path,
    python: &Path,
    jobs: &OutputJobs,
) -> anyhow::Result<()> {
    let counters = Counters::start(stack).await?;
    let mut details = serde_json::Map::new();

    // Document output.
    let queue = RealQueue::fresh(&stack.sqs, "bench-trips-output").await?;
    eprintln!("   document-output: docflow's calls");
    let ours = docflow_counts(
        stack,
        bins,
        "document-output",
        |s, api| s.env("document-output", api),
        &queue,
        &counters,
        |_| jobs.jobs(10),
    )
    .await?;
    eprintln!("   document-output: the peer's calls");
    let peer_events = events(&queue, vec![jobs.jobs(10).await?, jobs.jobs(10).await?]).await?;
    let (_, peer) = run_peer(
        python,
        "handler",
        &peer_events,
        peer_env(stack, "document-output", Some(&counters)),
        Some(&counters),
    )
    .await?;
    let peer = peer.unwrap_or_default();
    report_counts(report, "document-output", &ours, &peer);
    details.insert(
        "document-output".into(),
        json!({ "docflow": ours, "peer": peer }),
    );

    // Ingestion of one-page text PDFs.
    let queue = RealQueue::fresh(&stack.sqs, "bench-trips-ingestion").await?;
    eprintln!("   ingestion: docflow's calls");
    let ours = docflow_counts(
        stack,
        bins,
        "ingestion",
        ingestion_env,
        &queue,
        &counters,
        |k| pdf_ingestions(stack, 10, 1000 + 10 * k),
    )
    .await?;
    eprintln!("   ingestion: the peer's calls");
    let peer_events = events(
        &queue,
        vec![
            pdf_ingestions(stack, 10, 2000).await?,
            pdf_ingestions(stack, 10, 2010).await?,
        ],
    )
    .await?;
    let (_, peer) = run_peer(
        python,
        "handler_ingestion",
        &peer_events,
        peer_env(stack, "ingestion", Some(&counters)),
        Some(&counters),
    )
    .await?;
    let peer = peer.unwrap_or_default();
    report_counts(report, "ingestion (one-page text PDF)", &ours, &peer);
    details.insert("ingestion".into(), json!({ "docflow": ours, "peer": peer }));
    drop(counters);

    // Ingestion: time per record in batches of 10, no proxies; S3 from moto, then from
    // memory.
    let mut timing = serde_json::Map::new();
    for (n, s3) in [S3::Moto, S3::Memory].into_iter().enumerate() {
        let base = 2000 * n;
        eprintln!("   ingestion: timing docflow ({})", s3.label());
        let batches = 5;
        let api = rapi::RuntimeApi::start(RUNTIME_API_PORT).await?;
        let mut env = ingestion_env(stack, &api.addr);
        set(&mut env, "MATCHING_QUEUE_URL", &handoff_queue(stack).await);
        let (fun, _) = start_ready(&bins.join("ingestion"), s3.apply(env, stack), api).await?;
        fun.batch(&queue, &pdf_ingestions(stack, 10, base + 3000).await?)
            .await?;
        let mut walls = Vec::new();
        let mut hits = 0;
        for k in 0..batches {
            let ids = pdf_ingestions(stack, 10, base + 3100 + 10 * k).await?;
            stack.s3mem.take();
            walls.push(ms(fun.batch(&queue, &ids).await?.wall));
            hits += stack.s3mem.take().0;
        }
        let hwm = fun.proc.rss().1;
        fun.stop().await;
        s3.check_hits(hits, batches * 10)?;
        let ours_ms = walls.iter().sum::<f64>() / (batches * 10) as f64;
        eprintln!("   ingestion: timing the peer ({})", s3.label());
        let mut batches_of_ids = vec![pdf_ingestions(stack, 10, base + 4000).await?];
        for k in 0..batches {
            batches_of_ids.push(pdf_ingestions(stack, 10, base + 4100 + 10 * k).await?);
        }
        let peer_events = events(&queue, batches_of_ids).await?;
        let mut env = peer_env(stack, "ingestion", None);
        set(&mut env, "MATCHING_QUEUE_URL", &handoff_queue(stack).await);
        stack.s3mem.take();
        let (result, _) = run_peer(
            python,
            "handler_ingestion",
            &peer_events,
            s3.apply(env, stack),
            None,
        )
        .await?;
        s3.check_hits(stack.s3mem.take().0, batches * 10)?;
        crate::report_peer(
            report,
            PEER_SECTION,
            "per record in batches of 10 (ingestion, one-page text PDF, rules extraction",
            ("peer ÷ docflow, peak RSS (ingestion)", None),
            s3,
            &result,
            (ours_ms, hwm),
        );
        timing.insert(
            s3.key().into(),
            json!({ "docflow_batch_walls_ms": walls, "docflow_per_record_ms": ours_ms, "docflow_peak_rss_mb": hwm, "peer": result }),
        );
    }
    details.insert("ingestion_timing".into(), Value::Object(timing));
    report
        .details
        .insert("round_trips".into(), Value::Object(details));
    Ok(())
}
