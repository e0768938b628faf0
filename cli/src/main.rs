//! `docflow`: the operator and local-development command line. This file parses the
//! arguments and calls into `docflow_cli` (the library next to it) or a command module;
//! every error ends the process with one line on stderr and exit code 1.
//!
//! One file on purpose: each command is a variant of the argument tree and an arm of
//! `dispatch` (or `local`) at once, and they are read and changed together.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use docflow_cli::wiring::{Local, Queues};
use docflow_cli::{demo, dlq, export, ingest, maesn, run, seed, status, tenants};
use sqlx::migrate::MigrateDatabase as _;
use uuid::Uuid;

mod eval_extraction;
mod eval_matching;
mod extract;

#[derive(Parser)]
#[command(
    name = "docflow",
    about = "docflow operations and local development",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Local development: the stack, the event-source runner, the Maesn stand-in.
    Local {
        #[command(subcommand)]
        command: LocalCommand,
    },
    /// One document's state: ingestion, matching, cluster, output jobs, DATEV audits.
    Status {
        document_id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Dead-letter queues.
    Dlq {
        #[command(subcommand)]
        command: DlqCommand,
    },
    /// Re-export a document to DATEV (the document page's manual re-export), or resolve
    /// an export that is in doubt (`docflow export resolve`).
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Export {
        #[command(subcommand)]
        command: Option<ExportCommand>,
        #[arg(required = true)]
        document_id: Option<String>,
        /// Who asks for it: an identity id or email of the document's organization.
        #[arg(long = "by", required = true)]
        requested_by: Option<String>,
    },
    /// Upload files and enqueue their ingestion, as the app does.
    Ingest {
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Tenant id or name (default: the only tenant, or the newest demo tenant).
        #[arg(long)]
        tenant: Option<String>,
    },
    /// A demo tenant with the sample documents (ingested and enqueued), and the rows the
    /// sample events in events/ name.
    Seed {
        /// Only reset the event fixtures.
        #[arg(long)]
        fixtures_only: bool,
    },
    /// Run the sweeper once: re-send lost messages, give up on work that never ends,
    /// poll open DATEV tasks.
    Sweep {
        #[arg(long)]
        json: bool,
    },
    /// The demo's steps after `local run --until-idle` (used by `make demo`).
    Demo {
        #[command(subcommand)]
        command: DemoCommand,
    },
    /// Transcribe and extract one local file and print the result: try the extractor on
    /// your own documents without queues or a database.
    Extract {
        /// A .pdf (text layer), .txt, .png, .jpg or .xml file. An XML e-invoice (XRechnung,
        /// UBL / CII) and a PDF carrying one (ZUGFeRD / Factur-X) are read from their XML.
        file: std::path::PathBuf,
        /// `rules` works offline; `anthropic` / `openai` read ANTHROPIC_API_KEY /
        /// OPENAI_API_KEY and the LLM_* settings (LLM_MODEL, LLM_BASE_URL, …).
        #[arg(long, default_value = "rules", value_parser = ["rules", "anthropic", "openai"])]
        provider: String,
        /// Print exactly the extraction JSON (the `structured_data` contract).
        #[arg(long)]
        json: bool,
        /// Print the transcribed text (what the extractor reads) before the result.
        #[arg(long)]
        show_text: bool,
    },
    /// Measure extraction (and matching) on your own labelled documents.
    Eval {
        #[command(subcommand)]
        command: EvalCommand,
    },
    /// Database operations.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    // Further command groups (e.g. `eval`) are added here, each with its module.
}

#[derive(Subcommand)]
enum ExportCommand {
    /// Record what a person found in DATEV for an export docflow could not settle (in
    /// doubt: failed, not retryable): `--absent` makes it retryable so the document can be
    /// exported again, `--present` marks it succeeded. A later decision supersedes an
    /// earlier one; every decision (who, when, why) is kept (`docflow status` shows
    /// them). `--absent` is refused until the audit is older than
    /// EXPORT_RESOLVE_WINDOW_SECONDS (default 3600): Maesn's task may still land.
    Resolve {
        /// The DATEV export audit (`docflow status <document-id>` lists them).
        audit_id: String,
        /// DATEV does not have the booking proposal: allow a re-export.
        #[arg(long, conflicts_with = "present", required_unless_present = "present")]
        absent: bool,
        /// DATEV has the booking proposal: the export succeeded.
        #[arg(long)]
        present: bool,
        /// Who decided: an identity id or email of the document's organization.
        #[arg(long = "by")]
        by: String,
        /// Why: what was checked in DATEV.
        #[arg(long)]
        note: String,
        /// Record `--absent` inside the resolve window; the reason (why the export
        /// cannot land in DATEV any more) is kept with the decision.
        #[arg(long, value_name = "REASON", conflicts_with = "present")]
        force: Option<String>,
    },
    /// Record that a document may be booked although the other invoice of its
    /// corrected-invoice pair (a corrected invoice and the invoice it replaces) already
    /// has a DATEV export: both belong in DATEV. Document output refuses the second of
    /// such a pair until a person decided so; export it again afterwards.
    AllowBoth {
        /// The document to book beside the other invoice.
        document_id: String,
        /// Who decided: an identity id or email of the document's organization.
        #[arg(long = "by")]
        by: String,
        /// Why both belong in DATEV.
        #[arg(long)]
        note: String,
    },
}

#[derive(Args, Clone)]
struct Endpoint {
    /// The local AWS emulator.
    #[arg(
        long,
        env = "AWS_ENDPOINT_URL",
        default_value = "http://127.0.0.1:4566"
    )]
    endpoint: String,
}

#[derive(Subcommand)]
enum LocalCommand {
    /// Create the database, run migrations, create every queue with its DLQ and redrive
    /// policy, the documents bucket and the secret. Idempotent.
    Up {
        #[command(flatten)]
        endpoint: Endpoint,
        #[arg(long, env = "MAX_RECEIVE_COUNT", default_value_t = 3)]
        max_receive_count: u32,
    },
    /// Lambda's event source mappings, locally: poll the queues, invoke the functions
    /// with real SqsEvent batches, apply their partial batch responses as Lambda does,
    /// and run the sweeper on its schedule. Progress on stderr.
    Run(RunArgs),
    /// Serve the Maesn stand-in (the DATEV API as `make demo` sees it) until stopped.
    Maesn {
        #[arg(long, default_value = "127.0.0.1:4599")]
        listen: String,
        /// Booking proposal numbers answered 429 the first time (comma-separated).
        #[arg(long, value_delimiter = ',')]
        rate_limit_once: Vec<String>,
        /// Keep what it was sent in this file, so a restart still knows earlier tasks.
        #[arg(long)]
        state: Option<std::path::PathBuf>,
    },
    /// Serve the RDS Proxy stand-in in front of the local PostgreSQL until stopped: TLS
    /// with the local CA's server certificate, startup `options` refused as RDS Proxy
    /// refuses them, pinning conditions counted (docs/local-development.md).
    RdsProxy {
        #[arg(long, default_value = "127.0.0.1:5434")]
        listen: String,
        /// The PostgreSQL behind it.
        #[arg(long, default_value = "127.0.0.1:5433")]
        upstream: String,
        /// The server certificate (PEM chain) and its key.
        #[arg(long)]
        cert: std::path::PathBuf,
        #[arg(long)]
        key: std::path::PathBuf,
        /// Where to write the counters (JSON), every second.
        #[arg(long)]
        stats: Option<std::path::PathBuf>,
        /// Stand in for a DB instance's endpoint instead: TLS only, nothing refused or
        /// counted (the local PostgreSQL build has no TLS of its own).
        #[arg(long)]
        instance: bool,
    },
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    endpoint: Endpoint,
    /// Stop when every queue is empty, nothing is in flight and the sweeper finds nothing.
    #[arg(long)]
    until_idle: bool,
    /// Give up after this many seconds (with --until-idle: fail if not idle by then).
    #[arg(long, value_name = "SECONDS")]
    max_time: Option<u64>,
    /// Functions to run (default: all three).
    #[arg(long, value_delimiter = ',', value_parser = run::FUNCTIONS)]
    functions: Vec<String>,
    /// Records per batch (BatchSize; above 10 only with a batching window).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i32).range(1..=10000))]
    batch_size: i32,
    /// MaximumBatchingWindowInSeconds.
    #[arg(long, default_value_t = 0, value_name = "SECONDS")]
    batching_window: u64,
    /// Concurrent batches per function (ScalingConfig.MaximumConcurrency).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    concurrency: u32,
    /// Function timeout for every function (default: as deployed, 300 s ingestion, 120 s others).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<u64>,
    /// Invoke through cargo lambda watch's invoke endpoint instead of in process.
    #[arg(long, value_name = "URL")]
    via: Option<String>,
    /// Seconds between scheduled sweeps (AWS: 300).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    sweep_every: u64,
    /// Do not run the sweeper.
    #[arg(long)]
    no_sweeper: bool,
    /// Also write the functions' EMF lines (one JSON document per line, as CloudWatch
    /// would receive them) to this file (`make bench` reads it). In-process runs only:
    /// with --via each function writes them to its own stdout.
    #[arg(long, value_name = "FILE")]
    metrics_out: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum DlqCommand {
    /// Show what a DLQ holds (nothing is removed).
    List {
        /// ingestion, matching, document-output, a queue name or URL.
        queue: String,
        #[arg(long, default_value_t = 100)]
        max: usize,
        #[arg(long)]
        json: bool,
    },
    /// Move messages from a DLQ back to its source queue (body and attributes kept).
    Redrive {
        queue: String,
        /// Only count and list what would move.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, default_value_t = 1000)]
        max: usize,
    },
}

#[derive(Subcommand)]
enum DemoCommand {
    /// Final approval of every invoice matching clustered, as the app does it; the
    /// export jobs go to the document-output queue.
    Approve {
        #[arg(long)]
        tenant: Option<String>,
    },
    /// The table: per document its type, supplier, total, cluster, export; the DLQs.
    Summary {
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        json: bool,
        /// Fail when a document is not finished.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Subcommand)]
enum EvalCommand {
    /// Run the labelled matching set through the matching function; print edge and
    /// cluster precision/recall.
    Matching(eval_matching::Args),
    /// Extract every file in DIR that has a `<name>.json` of expected fields beside it,
    /// and print per-field accuracy, per-document misses, tokens, cost and time: the way
    /// to choose a provider on your own documents.
    Extraction(eval_extraction::Args),
}

#[derive(Subcommand)]
enum DbCommand {
    /// Create the database if missing and apply every pending migration.
    Migrate,
}

fn main() -> ExitCode {
    // First: in a child of the parsing sandbox (`docflow local run` parses documents as
    // the ingestion function does) this parses one file and exits.
    docflow::sandbox::init();
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string().replace('\n', " ");
        eprintln!("docflow: internal error (a bug, please report it): {text}");
    }));
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("docflow: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("docflow: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5433/docflow".to_owned())
}

/// Logs of the functions (and ours) on stderr, as text; `RUST_LOG` sets the level.
fn init_logs(default: &str, progress: Option<indicatif::MultiProgress>) {
    use tracing_subscriber::EnvFilter;
    // The SDK's own warnings (e.g. every credential source it tried) would bury the one
    // line an error gets; RUST_LOG brings them back.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "{default},aws_config=error,aws_smithy_runtime=error,aws_smithy_runtime_api=error"
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .compact();
    let _ = match progress {
        Some(multi) => builder
            .with_writer(move || SuspendWriter(multi.clone()))
            .try_init(),
        None => builder.with_writer(std::io::stderr).try_init(),
    };
}

/// Writes log lines above the progress bars instead of through them.
struct SuspendWriter(indicatif::MultiProgress);

impl std::io::Write for SuspendWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .suspend(|| std::io::Write::write_all(&mut std::io::stderr(), buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::Write::flush(&mut std::io::stderr())
    }
}

/// The queue name prefix of the environment (`DOCFLOW_QUEUE_PREFIX`, empty locally).
fn queue_prefix() -> String {
    std::env::var("DOCFLOW_QUEUE_PREFIX").unwrap_or_default()
}

async fn local_env(aws: aws_config::SdkConfig, concurrency: u32) -> anyhow::Result<Local> {
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let queues = Queues::resolve(&sqs, &queue_prefix()).await?;
    Local::build(
        aws,
        queues,
        None,
        docflow_cli::wiring::Options {
            concurrency,
            ..Default::default()
        },
    )
    .await
}

fn parse_id(given: &str, what: &str) -> anyhow::Result<Uuid> {
    Uuid::parse_str(given.trim())
        .map_err(|_| anyhow::anyhow!("{given:?} is not a {what} id (a UUID)"))
}

async fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Db {
            command: DbCommand::Migrate,
        } => migrate(&database_url()).await,
        Command::Eval {
            command: EvalCommand::Matching(args),
        } => {
            // The matching function's warnings (a record given back, a lost deadlock).
            init_logs("warn", None);
            eval_matching::run(&database_url(), &args).await
        }
        Command::Extract {
            file,
            provider,
            json,
            show_text,
        } => extract::run(&file, &provider, json, show_text).await,
        Command::Eval {
            command: EvalCommand::Extraction(args),
        } => eval_extraction::run(args).await,
        Command::Local { command } => local(command).await,
        Command::Status { document_id, json } => {
            init_logs("warn", None);
            let id = parse_id(&document_id, "document")?;
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let pool = local.database().await?;
            let status = status::load(&pool, id)
                .await?
                .with_context(|| format!("no document {id}"))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                print!("{status}");
            }
            Ok(())
        }
        Command::Dlq { command } => {
            init_logs("warn", None);
            let sqs = aws_sdk_sqs::Client::new(&docflow_cli::wiring::sdk_config().await);
            match command {
                DlqCommand::List { queue, max, json } => {
                    let (_, dlq_url) = dlq::urls(&sqs, &queue, &queue_prefix()).await?;
                    let messages = dlq::list(&sqs, &dlq_url, max).await?;
                    if json {
                        println!("{}", serde_json::to_string_pretty(&messages)?);
                        return Ok(());
                    }
                    println!("{dlq_url}: {} message(s)", messages.len());
                    for m in messages {
                        println!(
                            "  {}  receives {}  sent {}  body {}",
                            m.message_id,
                            m.receive_count.map_or("?".into(), |c| c.to_string()),
                            m.sent_at.map_or("?".into(), |t| t.to_rfc3339()),
                            m.body
                        );
                    }
                    Ok(())
                }
                DlqCommand::Redrive {
                    queue,
                    dry_run,
                    max,
                } => {
                    let (source_url, dlq_url) = dlq::urls(&sqs, &queue, &queue_prefix()).await?;
                    let report = dlq::redrive(&sqs, &dlq_url, &source_url, max, dry_run).await?;
                    let verb = if dry_run { "would move" } else { "moved" };
                    println!(
                        "{verb} {} message(s) from {dlq_url} to {source_url}",
                        report.moved.len()
                    );
                    for m in &report.moved {
                        println!("  {}  body {}", m.message_id, m.body);
                    }
                    for (id, why) in &report.duplicated {
                        println!(
                            "  {id}: sent, but not deleted from the DLQ ({why}); it is in both queues"
                        );
                    }
                    if !report.failed.is_empty() {
                        anyhow::bail!(
                            "{} message(s) could not be sent and stay in the DLQ; first: {} ({})",
                            report.failed.len(),
                            report.failed[0].0,
                            report.failed[0].1
                        );
                    }
                    Ok(())
                }
            }
        }
        Command::Export {
            command:
                Some(ExportCommand::Resolve {
                    audit_id,
                    absent,
                    present: _,
                    by,
                    note,
                    force,
                }),
            ..
        } => {
            init_logs("warn", None);
            let id = parse_id(&audit_id, "DATEV export audit")?;
            let window =
                export::absent_window(std::env::var(export::ABSENT_WINDOW_VAR).ok().as_deref())?;
            let decision = if absent {
                export::Decision::Absent
            } else {
                export::Decision::Present
            };
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let pool = local.database().await?;
            let decide = export::Decide {
                decision,
                by: &by,
                note: &note,
                force: force.as_deref(),
            };
            let resolved = export::resolve(&pool, id, &decide, window).await?;
            println!("{resolved}");
            Ok(())
        }
        Command::Export {
            command:
                Some(ExportCommand::AllowBoth {
                    document_id,
                    by,
                    note,
                }),
            ..
        } => {
            init_logs("warn", None);
            let id = parse_id(&document_id, "document")?;
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let pool = local.database().await?;
            println!("{}", export::allow_both(&pool, id, &by, &note).await?);
            Ok(())
        }
        Command::Export {
            command: None,
            document_id,
            requested_by,
        } => {
            init_logs("warn", None);
            let (Some(document_id), Some(requested_by)) = (document_id, requested_by) else {
                anyhow::bail!("usage: docflow export <document-id> --by <identity>");
            };
            let id = parse_id(&document_id, "document")?;
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let pool = local.database().await?;
            println!(
                "{}",
                export::request(&pool, &local.dispatcher(), id, &requested_by).await?
            );
            Ok(())
        }
        Command::Ingest { files, tenant } => {
            init_logs("warn", None);
            let mut contents = Vec::new();
            for file in files {
                let bytes = std::fs::read(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| file.display().to_string());
                contents.push((name, bytes));
            }
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let pool = local.database().await?;
            let tenant = tenants::resolve_tenant(&pool, tenant.as_deref()).await?;
            let target = ingest::Target {
                pool: &pool,
                s3: &local.s3,
                bucket: &local.settings.documents_bucket,
                sqs: &local.sqs,
                ingestion_queue_url: &local.queues.ingestion.url,
            };
            let mut unsent = 0;
            for (name, bytes) in contents {
                let done = ingest::ingest(&target, tenant, &name, bytes).await?;
                println!(
                    "{}: document {} ingestion {}{}",
                    done.file_name,
                    done.document_id,
                    done.ingestion_id,
                    done.send_error
                        .as_deref()
                        .map(|e| format!(" — {e}"))
                        .unwrap_or_default()
                );
                unsent += usize::from(done.send_error.is_some());
            }
            if unsent > 0 {
                anyhow::bail!(
                    "{unsent} ingestion message(s) not sent; the sweeper will re-send them"
                );
            }
            Ok(())
        }
        Command::Seed { fixtures_only } => {
            init_logs("warn", None);
            let aws = docflow_cli::wiring::sdk_config().await;
            let local = local_env(aws.clone(), 1).await?;
            let pool = local.database().await?;
            let target = ingest::Target {
                pool: &pool,
                s3: &local.s3,
                bucket: &local.settings.documents_bucket,
                sqs: &local.sqs,
                ingestion_queue_url: &local.queues.ingestion.url,
            };
            let fixtures = seed::reset_fixtures(&target).await?;
            local.store_datev_account(fixtures.tenant_id).await?;
            println!(
                "event fixtures reset: tenant {}, ingestions {}, matching document {}, output job {}",
                fixtures.tenant_id,
                fixtures.ingestions.len(),
                fixtures.matching_document,
                fixtures.output_job
            );
            if seed::ensure_maesn_key(
                &aws_sdk_secretsmanager::Client::new(&aws),
                &local.settings.secret_id,
            )
            .await?
            {
                println!(
                    "secret {}: added maesn_api_key for the local Maesn stand-in",
                    local.settings.secret_id
                );
            }
            if fixtures_only {
                return Ok(());
            }
            let seeded = seed::seed_demo(&target).await?;
            local.store_datev_account(seeded.tenant_id).await?;
            println!(
                "demo tenant {} (Demo Bau GmbH), approver {}:",
                seeded.tenant_id, seeded.approver_id
            );
            for d in &seeded.documents {
                println!(
                    "  {:<40} document {}  ingestion {}{}",
                    d.file_name,
                    d.document_id,
                    d.ingestion_id,
                    if d.send_error.is_some() {
                        "  (not sent; the sweeper will re-send it)"
                    } else {
                        ""
                    }
                );
            }
            Ok(())
        }
        Command::Sweep { json } => {
            init_logs("warn", None);
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let deps = local.sweeper().await?;
            let report = sweeper::sweep(&deps, None).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", run::report_line(&serde_json::to_value(&report)?));
            }
            if !report.errors.is_empty() {
                anyhow::bail!(
                    "{} sweep step(s) failed: {}",
                    report.errors.len(),
                    report.errors.join("; ")
                );
            }
            Ok(())
        }
        Command::Demo { command } => {
            init_logs("warn", None);
            let local = local_env(docflow_cli::wiring::sdk_config().await, 1).await?;
            let pool = local.database().await?;
            match command {
                DemoCommand::Approve { tenant } => {
                    let tenant = tenants::resolve_tenant(&pool, tenant.as_deref()).await?;
                    let approvals =
                        demo::approve_matched_invoices(&pool, &local.dispatcher(), tenant).await?;
                    if approvals.is_empty() {
                        println!("no matched invoice waits for approval");
                    }
                    for a in approvals {
                        println!(
                            "{:<40} {}",
                            a.file_name.as_deref().unwrap_or("—"),
                            a.outcome
                        );
                    }
                    Ok(())
                }
                DemoCommand::Summary {
                    tenant,
                    json,
                    check,
                } => {
                    let tenant = tenants::resolve_tenant(&pool, tenant.as_deref()).await?;
                    // What DATEV received, where Maesn is the local stand-in.
                    let booked = match std::env::var("MAESN_BASE_URL") {
                        Ok(url) => docflow_cli::maesn::exports_at(&url).await.ok(),
                        Err(_) => None,
                    };
                    let summary =
                        demo::summary(&pool, &local.sqs, &local.queues, tenant, booked.as_deref())
                            .await?;
                    if json {
                        println!("{}", serde_json::to_string_pretty(&summary)?);
                    } else {
                        print!("{summary}");
                    }
                    if check {
                        summary.check()?;
                    }
                    Ok(())
                }
            }
        }
    }
}

async fn local(command: LocalCommand) -> anyhow::Result<()> {
    match command {
        LocalCommand::Up {
            endpoint,
            max_receive_count,
        } => {
            let database_url = database_url();
            // As AWS runs it: the superuser creates the roles and the database, the owner
            // migrates, each function's role is tried through the RDS Proxy stand-in.
            let local_db = docflow_dev::local::database::LocalDatabase::from_env()?;
            local_db.bootstrap().await?;
            migrate(&local_db.owner_url()).await?;
            let mut failed = Vec::new();
            for role in docflow::db::FUNCTION_ROLES {
                let url = local_db.function_url(role.function, None)?;
                let pool = docflow::db::lazy_pool(
                    &url.clone().into(),
                    1,
                    &format!("docflow-{}", role.function),
                    None,
                )?;
                let check = docflow::db::check_role(&pool, &role).await;
                pool.close().await;
                match &check.error {
                    None => println!(
                        "role {}: read and write through the RDS Proxy stand-in",
                        role.role
                    ),
                    Some(e) => failed.push(format!("{}: {e}", role.role)),
                }
            }
            if !failed.is_empty() {
                anyhow::bail!(
                    "function roles that cannot work (is the RDS Proxy stand-in up? `make up` starts it): {}",
                    failed.join("; ")
                );
            }
            let config = docflow::aws::local(&endpoint.endpoint);
            let mut secret = serde_json::Map::new();
            secret.insert("database_url".into(), database_url.clone().into());
            for role in docflow::db::FUNCTION_ROLES {
                secret.insert(
                    format!("database_url_{}", role.function),
                    local_db.function_url(role.function, None)?.into(),
                );
            }
            secret.insert(
                docflow::datev::API_KEY_SECRET.into(),
                maesn::DEMO_API_KEY.into(),
            );
            let secret = serde_json::Value::Object(secret);
            let stack = docflow_dev::local::provision(&config, max_receive_count, &secret)
                .await
                .with_context(|| {
                    format!(
                        "failed to provision the local stack on {}; is `make up` running moto?",
                        endpoint.endpoint
                    )
                })?;
            let mut names: Vec<_> = stack.queues.iter().collect();
            names.sort_by_key(|(name, _)| **name);
            for (name, pair) in names {
                println!("queue {name}: {} (DLQ {})", pair.url, pair.dlq_url);
            }
            println!("bucket {}", docflow_dev::local::DOCUMENTS_BUCKET);
            println!("secret {}", docflow_dev::local::SECRET_ID);
            Ok(())
        }
        LocalCommand::RdsProxy {
            listen,
            upstream,
            cert,
            key,
            stats,
            instance,
        } => {
            init_logs("info", None);
            let options = docflow_cli::rds_proxy::Options {
                upstream,
                tls: Some(docflow_cli::rds_proxy::tls_config(&cert, &key)?),
                proxy: !instance,
            };
            docflow_cli::rds_proxy::run_forever(&listen, options, stats.as_deref()).await
        }
        LocalCommand::Maesn {
            listen,
            rate_limit_once,
            state,
        } => {
            init_logs("info", None);
            let stand_in = maesn::StandIn::start_on(
                &listen,
                maesn::Options {
                    rate_limit_once: rate_limit_once.into_iter().collect(),
                    state_file: state,
                    ..maesn::Options::default()
                },
            )
            .await?;
            eprintln!(
                "Maesn stand-in on {} (X-API-KEY {}); Ctrl-C stops it",
                stand_in.uri(),
                maesn::DEMO_API_KEY
            );
            tokio::signal::ctrl_c()
                .await
                .context("cannot wait for Ctrl-C")?;
            Ok(())
        }
        LocalCommand::Run(args) => local_run(args).await,
    }
}

async fn local_run(args: RunArgs) -> anyhow::Result<()> {
    let functions = if args.functions.is_empty() {
        run::FUNCTIONS.iter().map(|f| (*f).to_owned()).collect()
    } else {
        args.functions.clone()
    };
    let progress = run::Progress::new(&functions, !args.no_sweeper);
    init_logs("warn", Some(progress.multi().clone()));
    if args.batch_size > 10 && args.batching_window == 0 {
        anyhow::bail!("--batch-size above 10 needs --batching-window (as in Lambda)");
    }
    let aws = docflow::aws::local(&args.endpoint.endpoint);
    let local = local_env(aws, args.concurrency).await?;
    eprintln!("local run: {}", local.describe());
    let options = run::Options {
        functions,
        batch_size: args.batch_size,
        batching_window: Duration::from_secs(args.batching_window),
        concurrency: args.concurrency as usize,
        timeout: args.timeout.map(Duration::from_secs),
        via: args.via.clone(),
        sweeper: !args.no_sweeper,
        run: docflow_dev::local::RunOptions {
            until_idle: args.until_idle,
            max_duration: args.max_time.map(Duration::from_secs),
            schedule_every: Duration::from_secs(args.sweep_every.max(1)),
            ..docflow_dev::local::RunOptions::default()
        },
        fault_injection: None,
    };
    let runner = run::build(&local, &options)
        .await?
        .with_observer(progress.clone());
    let report = runner
        .run(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    progress.finish();
    for line in run::report_lines(&report) {
        eprintln!("{line}");
    }
    if options.via.is_some() {
        eprintln!(
            "metrics: each function writes its EMF lines to its own stdout (cargo lambda watch)"
        );
    } else {
        eprintln!("metrics (the EMF lines CloudWatch would receive, summed over the run):");
        let lines = local.metric_lines.lines();
        for line in run::metrics_summary(&lines) {
            eprintln!("{line}");
        }
        if let Some(path) = &args.metrics_out {
            let mut text = lines.join("\n");
            text.push('\n');
            std::fs::write(path, text)
                .with_context(|| format!("cannot write the metrics to {}", path.display()))?;
        }
    }
    if args.until_idle && !report.idle {
        let busy: Vec<String> = report
            .queues
            .iter()
            .filter(|q| q.in_queue > 0)
            .map(|q| format!("{} ({} in the queue)", q.name, q.in_queue))
            .collect();
        anyhow::bail!(
            "not idle after {} s: {}",
            report.elapsed_ms / 1000,
            match (busy.is_empty(), &report.last_sweep_error) {
                (false, _) => busy.join(", "),
                (true, Some(error)) => format!("the sweeper fails: {error}"),
                (true, None) => "the sweeper still finds work".to_owned(),
            }
        );
    }
    Ok(())
}

async fn migrate(database_url: &str) -> anyhow::Result<()> {
    if !sqlx::Postgres::database_exists(database_url)
        .await
        .context("cannot reach Postgres at DATABASE_URL")?
    {
        sqlx::Postgres::create_database(database_url)
            .await
            .context("failed to create the database")?;
    }
    let pool = sqlx::PgPool::connect(database_url)
        .await
        .context("failed to connect to DATABASE_URL")?;
    // One clear line instead of a failed migration halfway through.
    let pgvector: Option<String> =
        sqlx::query_scalar("SELECT name FROM pg_available_extensions WHERE name = 'vector'")
            .fetch_optional(&pool)
            .await
            .context("failed to list the extensions of the server at DATABASE_URL")?;
    if pgvector.is_none() {
        anyhow::bail!(
            "the PostgreSQL at DATABASE_URL has no pgvector (extension \"vector\" is not available): \
             unset DATABASE_URL to use the local database of `make up`, or install pgvector there"
        );
    }
    docflow::db::migrate(&pool)
        .await
        .context("failed to apply migrations")?;
    println!("database migrated");
    Ok(())
}
