//! `docflow`: the operator and local-development command line.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use sqlx::migrate::MigrateDatabase as _;

mod eval_extraction;
mod eval_matching;
mod extract;

#[derive(Parser)]
#[command(name = "docflow", about = "docflow operations and local development")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Local development stack (moto on AWS_ENDPOINT_URL, Postgres on DATABASE_URL).
    Local {
        #[command(subcommand)]
        command: LocalCommand,
    },
    /// Transcribe and extract one local file and print the result: try the extractor on
    /// your own documents without queues or a database.
    Extract {
        /// A .pdf (text layer), .txt, .png or .jpg file.
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
}

#[derive(Subcommand)]
enum LocalCommand {
    /// Create the database, run migrations, create every queue with its DLQ and redrive
    /// policy, the documents bucket and the secret. Idempotent.
    Up {
        #[arg(
            long,
            env = "AWS_ENDPOINT_URL",
            default_value = "http://127.0.0.1:4566"
        )]
        endpoint: String,
        #[arg(long, env = "MAX_RECEIVE_COUNT", default_value_t = 3)]
        max_receive_count: u32,
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/docflow".to_owned());
    match cli.command {
        Command::Db {
            command: DbCommand::Migrate,
        } => migrate(&database_url).await,
        Command::Eval {
            command: EvalCommand::Matching(args),
        } => eval_matching::run(&database_url, &args).await,
        Command::Extract {
            file,
            provider,
            json,
            show_text,
        } => extract::run(&file, &provider, json, show_text).await,
        Command::Eval {
            command: EvalCommand::Extraction(args),
        } => eval_extraction::run(args).await,
        Command::Local {
            command:
                LocalCommand::Up {
                    endpoint,
                    max_receive_count,
                },
        } => {
            migrate(&database_url).await?;
            let config = docflow::aws::local(&endpoint).await;
            let secret = serde_json::json!({ "database_url": database_url });
            let stack = docflow::local::provision(&config, max_receive_count, &secret)
                .await
                .with_context(|| format!("failed to provision the local stack on {endpoint}; is `make up` running moto?"))?;
            let mut names: Vec<_> = stack.queues.iter().collect();
            names.sort_by_key(|(name, _)| **name);
            for (name, pair) in names {
                println!("queue {name}: {} (DLQ {})", pair.url, pair.dlq_url);
            }
            println!("bucket {}", docflow::local::DOCUMENTS_BUCKET);
            println!("secret {}", docflow::local::SECRET_ID);
            Ok(())
        }
    }
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
    docflow::db::MIGRATOR
        .run(&pool)
        .await
        .context("failed to apply migrations")?;
    println!("database migrated");
    Ok(())
}
