//! `docflow eval matching`: the labelled evaluation set of matching
//! (`docflow_dev::eval::matching`) through the real matching function, on a fresh database
//! and a fresh queue of the local emulator, with score-only decisions (no LLM). Prints
//! edge and cluster precision/recall.
//!
//! `--embeddings`: the set extended with the cases only a semantic search finds
//! (renamed suppliers, delivery notes citing nothing), evaluated twice, each in its own
//! database: without embeddings, then with them. The embeddings server is the one the
//! `EMBEDDING_*` settings name (any OpenAI-compatible server; key from
//! `EMBEDDING_API_KEY` or `OPENAI_API_KEY`), else a local stand-in answering like the
//! API with hashed bag-of-words vectors (`docflow::embeddings::hashed_bag_of_words`).

use std::str::FromStr as _;
use std::time::Duration;

use anyhow::Context as _;
use docflow::embeddings::{EmbeddingClient, EmbeddingSettings, stand_in_answer};
use docflow::llm::{LlmClient, LlmSettings, Provider};
use docflow::matching::MatchingConfig;
use docflow::notify::Notifier;
use docflow::retry::{ReceivePolicy, RetryPolicy};
use docflow::settings::process_env;
use docflow::sqs::{BatchConfig, BatchRuntime};
use docflow_dev::eval::matching::{EvalOptions, Mix, evaluate, stand_in_llm_response};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions as _, Connection as _};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Seed of the generated set: the same seed gives the same documents and order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// At least this many documents (the last purchase may add a few).
    #[arg(long, default_value_t = 3000)]
    pub documents: usize,
    /// Concurrent local event-source mappings, each running batches of 10 concurrently.
    #[arg(long, default_value_t = 4)]
    pub pollers: usize,
    /// Spread the purchases over this many tenants (1 to 3); 1 is a customer's bulk
    /// import, every write phase in one tenant.
    #[arg(long, default_value_t = 3)]
    pub tenants: usize,
    /// Stop when no document finished for this long. A record given back to the queue
    /// (a duplicate meeting a live claim comes back after the claim lease, 160 s) needs
    /// more than the default.
    #[arg(long, default_value_t = 60)]
    pub stall_seconds: u64,
    /// Also print this many wrong and this many missed edges, with both documents.
    #[arg(long, default_value_t = 0)]
    pub show_errors: usize,
    /// Keep the evaluation database (its name is printed) instead of dropping it.
    #[arg(long)]
    pub keep_database: bool,
    /// Add the semantic-only cases and compare matching without and with embeddings.
    #[arg(long)]
    pub embeddings: bool,
    /// Only the first set's scenarios (simple … lone), the documents a seed has always
    /// given; without it the set adds framework orders, messy reference shapes,
    /// look-alike suppliers, sparse fields, re-extraction and injected instructions.
    #[arg(long)]
    pub classic: bool,
    /// Score-only decisions; without it the ambiguous band goes to a local LLM stand-in
    /// that obeys instructions written in the documents
    /// (`docflow_dev::eval::matching::stand_in_llm_decision`).
    #[arg(long)]
    pub no_llm: bool,
    #[arg(
        long,
        env = "AWS_ENDPOINT_URL",
        default_value = "http://127.0.0.1:4566"
    )]
    pub endpoint: String,
}

pub async fn run(database_url: &str, args: &Args) -> anyhow::Result<()> {
    if !args.embeddings {
        return run_once(database_url, args, None).await.map(|_| ());
    }
    // Kept alive until both runs are done.
    let (client, _stand_in) = embeddings_client().await?;
    println!(
        "== without embeddings (the set with the semantic-only cases, {} documents asked)",
        args.documents
    );
    let without = run_once(database_url, args, None).await?;
    println!(
        "== with embeddings ({}, {} dimensions)",
        client.model(),
        client.dimensions()
    );
    let with = run_once(database_url, args, Some(client)).await?;
    println!(
        "== embeddings: edge precision {:.3} → {:.3}, edge recall {:.3} → {:.3}, \
         cluster precision {:.3} → {:.3}, cluster recall {:.3} → {:.3}",
        without.edges.precision(),
        with.edges.precision(),
        without.edges.recall(),
        with.edges.recall(),
        without.clusters.precision(),
        with.clusters.precision(),
        without.clusters.recall(),
        with.clusters.recall(),
    );
    Ok(())
}

/// The configured embeddings server, or the local stand-in (returned to keep it alive).
async fn embeddings_client() -> anyhow::Result<(EmbeddingClient, Option<wiremock::MockServer>)> {
    let env = process_env();
    let settings = EmbeddingSettings::from_env(&env).context("invalid EMBEDDING_* settings")?;
    if settings.enabled {
        let key = std::env::var("EMBEDDING_API_KEY")
            .or_else(|_| std::env::var("OPENAI_API_KEY"))
            .ok()
            .map(secrecy::SecretString::from);
        let client = EmbeddingClient::new(&settings, key)?.context("embeddings not enabled")?;
        return Ok((client, None));
    }
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/embeddings"))
        .respond_with(|request: &wiremock::Request| {
            match serde_json::from_slice::<serde_json::Value>(&request.body) {
                Ok(body) => {
                    wiremock::ResponseTemplate::new(200).set_body_json(stand_in_answer(&body, 256))
                }
                Err(_) => wiremock::ResponseTemplate::new(400),
            }
        })
        .mount(&server)
        .await;
    let settings = EmbeddingSettings {
        enabled: true,
        model: "stand-in-hashed-bag-of-words".to_owned(),
        base_url: server.uri(),
        dimensions: 256,
        ..settings
    };
    let client = EmbeddingClient::new(&settings, None)?.context("embeddings not enabled")?;
    Ok((client, Some(server)))
}

/// A local Anthropic-compatible server answering with
/// `docflow_dev::eval::matching::stand_in_llm_response`, and a client for it.
async fn llm_stand_in() -> anyhow::Result<(LlmClient, wiremock::MockServer)> {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/messages"))
        .respond_with(|request: &wiremock::Request| {
            match serde_json::from_slice::<serde_json::Value>(&request.body) {
                Ok(body) => {
                    wiremock::ResponseTemplate::new(200).set_body_json(stand_in_llm_response(&body))
                }
                Err(_) => wiremock::ResponseTemplate::new(400),
            }
        })
        .mount(&server)
        .await;
    let settings = LlmSettings {
        provider: Some(Provider::Anthropic),
        model: "eval-stand-in-obedient".into(),
        base_url: server.uri(),
        timeout: Duration::from_secs(10),
        max_tokens: 1024,
        retry: RetryPolicy::with_base_delay(Duration::from_millis(10)),
    };
    let client = LlmClient::new(&settings, Some("stand-in".to_owned().into()))?
        .context("the LLM stand-in has a provider")?;
    Ok((client, server))
}

async fn run_once(
    database_url: &str,
    args: &Args,
    embeddings: Option<EmbeddingClient>,
) -> anyhow::Result<docflow_dev::eval::matching::Report> {
    let admin =
        PgConnectOptions::from_str(database_url).context("DATABASE_URL is not a Postgres URL")?;
    let name = format!(
        "docflow_eval_{}_{}",
        args.seed,
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let mut conn = admin
        .connect()
        .await
        .context("cannot reach Postgres at DATABASE_URL")?;
    sqlx::query(&format!(r#"CREATE DATABASE "{name}""#))
        .execute(&mut conn)
        .await
        .with_context(|| format!("failed to create the evaluation database {name}"))?;
    let result = evaluate_in(&admin.clone().database(&name), args, embeddings).await;
    if args.keep_database {
        println!("database kept: {name}");
    } else if let Err(e) = sqlx::query(&format!(r#"DROP DATABASE "{name}" WITH (FORCE)"#))
        .execute(&mut conn)
        .await
    {
        eprintln!("could not drop the evaluation database {name}: {e}");
    }
    conn.close().await.ok();
    result
}

async fn evaluate_in(
    options: &PgConnectOptions,
    args: &Args,
    embeddings: Option<EmbeddingClient>,
) -> anyhow::Result<docflow_dev::eval::matching::Report> {
    let pool = PgPoolOptions::new()
        .max_connections(10 * args.pollers.max(1) as u32 + 2)
        .connect_with(options.clone())
        .await
        .context("failed to connect to the evaluation database")?;
    docflow::db::MIGRATOR
        .run(&pool)
        .await
        .context("failed to migrate the evaluation database")?;
    let config = MatchingConfig::from_env(&process_env()).context("invalid MATCH_* settings")?;
    let sqs = aws_sdk_sqs::Client::new(&docflow::aws::local(&args.endpoint));
    // Kept alive until the run is done.
    let (llm, _llm_stand_in) = if args.no_llm {
        (None, None)
    } else {
        let (client, server) = llm_stand_in().await?;
        (Some(client), Some(server))
    };
    let deps = matching::Deps {
        pool: pool.clone(),
        runtime: BatchRuntime::new(sqs.clone(), BatchConfig::default()),
        llm,
        embeddings,
        notifier: Notifier::default(),
        receive_policy: ReceivePolicy::default(),
        config,
    };
    let options = EvalOptions {
        seed: args.seed,
        documents: args.documents,
        pollers: args.pollers,
        stall: Duration::from_secs(args.stall_seconds),
        semantic_cases: args.embeddings,
        mix: if args.classic {
            Mix::Classic
        } else {
            Mix::Full
        },
        tenants: args.tenants,
    };
    let outcome = evaluate(&pool, &sqs, options, |event| {
        matching::handler(&deps, event)
    })
    .await
    .with_context(|| {
        format!(
            "the evaluation failed; is the local stack up (`make up`, moto on {})?",
            args.endpoint
        )
    })?;
    println!(
        "matching eval: seed {}, {} mix, {} pollers, {}, {:.1} s, {} batches",
        args.seed,
        if args.classic { "classic" } else { "full" },
        args.pollers,
        if args.no_llm {
            "score-only (no LLM)"
        } else {
            "LLM stand-in obeying document text"
        },
        outcome.elapsed.as_secs_f64(),
        outcome.run.batches
    );
    let documents = outcome.set.documents.len();
    println!(
        "queue run: {documents} documents, {} tenant(s), {:.1} s, {:.0} documents/minute",
        outcome.set.tenants.len(),
        outcome.run_time.as_secs_f64(),
        documents as f64 * 60.0 / outcome.run_time.as_secs_f64().max(f64::EPSILON)
    );
    println!("{}", outcome.report);
    use docflow_dev::eval::matching::describe;
    for (label, pairs) in [
        ("wrong", &outcome.report.wrong),
        ("missed", &outcome.report.missed),
    ] {
        for (a, b) in pairs.iter().take(args.show_errors) {
            println!(
                "{label}:\n  {}\n  {}",
                describe(&outcome.set, *a),
                describe(&outcome.set, *b)
            );
        }
    }
    if outcome.run.unfinished > 0 || outcome.run.failed > 0 {
        println!(
            "not finished: {}, failed: {}",
            outcome.run.unfinished, outcome.run.failed
        );
        for line in &outcome.run.not_done {
            println!("  {line}");
        }
    }
    Ok(outcome.report)
}
