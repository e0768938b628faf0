//! `docflow`: the operator and local-development command line.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use sqlx::migrate::MigrateDatabase as _;

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
