//! The functions' cold-start wiring, locally: each function's `Deps` built from the same
//! settings its `main.rs` reads (`Deps::from_env`), with the local stack filled in — the
//! queue URLs that were resolved, the queues' real visibility timeouts for the sweeper's
//! thresholds, the LLM the secret has a key for — on top of the process environment.
//!
//! `docflow local run`, `docflow sweep` and the demo test build the functions here, so
//! what runs locally is what Lambda would run, down to the settings' validation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use aws_config::SdkConfig;
use docflow::datev::{MaesnClient, MaesnConfig};
use docflow::llm::{LlmClient, LlmSettings};
use docflow::notify::{Notifier, NotifySettings};
use docflow::ocr::Transcriber;
use docflow::secrets::SecretStore;
use docflow::settings::{Env, Settings};
use docflow::sqs::BatchRuntime;
use docflow::telemetry::metrics::{Captured, MetricsSink};
use docflow_dev::local::QueuePair;
use secrecy::ExposeSecret as _;
use sqlx::PgPool;

/// The SDK configuration of the CLI: from the environment, as the functions build it
/// (`docflow::aws::load`), when it has a region and keys; otherwise the SDK's default
/// chains, which the functions do not link: a profile, SSO, web identity, ECS or IMDS
/// credentials on an engineer's machine or a build container.
pub async fn sdk_config() -> SdkConfig {
    match docflow::aws::load() {
        Ok(config) => config,
        Err(_) => {
            aws_config::defaults(aws_config::BehaviorVersion::latest())
                .http_client(docflow::aws::http_client())
                .load()
                .await
        }
    }
}

/// The three work queues with their DLQs.
#[derive(Debug, Clone)]
pub struct Queues {
    pub ingestion: QueuePair,
    pub matching: QueuePair,
    pub document_output: QueuePair,
}

impl Queues {
    /// Resolves `{prefix}docflow-<name>` and its `-dlq` by name (`prefix` is empty
    /// locally, the environment's prefix in AWS, e.g. `prod-`).
    pub async fn resolve(sqs: &aws_sdk_sqs::Client, prefix: &str) -> anyhow::Result<Self> {
        Ok(Queues {
            ingestion: resolve_pair(sqs, &format!("{prefix}docflow-ingestion")).await?,
            matching: resolve_pair(sqs, &format!("{prefix}docflow-matching")).await?,
            document_output: resolve_pair(sqs, &format!("{prefix}docflow-document-output")).await?,
        })
    }

    /// The pair for a function name (`ingestion`, `matching`, `document-output`).
    pub fn by_name(&self, name: &str) -> Option<&QueuePair> {
        match name {
            "ingestion" => Some(&self.ingestion),
            "matching" => Some(&self.matching),
            "document-output" => Some(&self.document_output),
            _ => None,
        }
    }
}

/// A queue and its DLQ, by the queue's name.
pub async fn resolve_pair(sqs: &aws_sdk_sqs::Client, name: &str) -> anyhow::Result<QueuePair> {
    let url = queue_url(sqs, name).await?;
    let dlq_url = queue_url(sqs, &format!("{name}-dlq")).await?;
    Ok(QueuePair {
        arn: docflow_dev::local::queue_arn(sqs, &url).await?,
        dlq_arn: docflow_dev::local::queue_arn(sqs, &dlq_url).await?,
        url,
        dlq_url,
    })
}

/// The URL of the queue `name`; the error says how to create it.
pub async fn queue_url(sqs: &aws_sdk_sqs::Client, name: &str) -> anyhow::Result<String> {
    let out = sqs
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .map_err(|e| match e.as_service_error() {
            Some(s) if s.is_queue_does_not_exist() => anyhow::anyhow!(
                "queue {name} does not exist; run `make up` (or `docflow local up`) first"
            ),
            _ => anyhow::anyhow!(
                "cannot reach SQS to find queue {name}: {}",
                crate::errors::short(&e)
            ),
        })?;
    out.queue_url
        .with_context(|| format!("GetQueueUrl returned no URL for {name}"))
}

/// The visibility timeout of a queue, in seconds.
pub async fn visibility_seconds(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<u64> {
    use aws_sdk_sqs::types::QueueAttributeName;
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::VisibilityTimeout)
        .send()
        .await
        .with_context(|| format!("failed to read the visibility timeout of {url}"))?;
    out.attributes
        .and_then(|a| a.get(&QueueAttributeName::VisibilityTimeout).cloned())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("queue {url} has no VisibilityTimeout attribute"))
}

/// Everything the local functions share: the SDK configuration, the secret, the queues,
/// and the variables laid over the process environment.
pub struct Local {
    pub aws: SdkConfig,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub settings: Settings,
    pub secrets: Arc<SecretStore>,
    pub queues: Queues,
    /// The database the functions use instead of the secret's (tests pass their
    /// database's pool): each function still connects as its own role through the RDS
    /// Proxy stand-in of the local stack, to this pool's database; the CLI's own queries
    /// use this pool. `None`: the URLs of the secret and the environment.
    pub pool: Option<PgPool>,
    /// The real visibility timeout of each function's source queue, by function: its
    /// batch runtime's `QUEUE_VISIBILITY_TIMEOUT_SECONDS`, as Terraform sets it in AWS.
    visibility: HashMap<&'static str, Duration>,
    /// Where every in-process function writes its EMF metric lines (instead of stdout):
    /// `local run` prints its summary from them ([`crate::run::metrics_summary`]).
    pub metrics: MetricsSink,
    pub metric_lines: Captured,
    overrides: HashMap<String, String>,
}

/// How [`Local::build`] completes the environment.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Concurrent batches per function: each function's pool is sized for them.
    pub concurrency: u32,
    /// Variables that win over the process environment (tests, flags).
    pub vars: HashMap<String, String>,
}

impl Local {
    /// Reads the settings (`DOCFLOW_SECRET_ID` defaults to the local `docflow/app`),
    /// reads the queues' visibility timeouts, and picks the LLM: `LLM_PROVIDER` when set,
    /// otherwise `anthropic` or `openai` when the secret carries that key, otherwise
    /// the offline `rules` extractor.
    pub async fn build(
        aws: SdkConfig,
        queues: Queues,
        pool: Option<PgPool>,
        options: Options,
    ) -> anyhow::Result<Self> {
        let sqs = aws_sdk_sqs::Client::new(&aws);
        let mut overrides = options.vars.clone();
        // The queues this run polls are the queues the functions send to, whatever the
        // process environment says.
        for (var, pair) in [
            ("INGESTION_QUEUE_URL", &queues.ingestion),
            ("MATCHING_QUEUE_URL", &queues.matching),
            ("DOCUMENT_OUTPUT_QUEUE_URL", &queues.document_output),
        ] {
            overrides
                .entry(var.to_owned())
                .or_insert_with(|| pair.url.clone());
        }
        set_default(
            &mut overrides,
            "DOCFLOW_SECRET_ID",
            docflow_dev::local::SECRET_ID.to_owned(),
        );
        let mut visibility = HashMap::new();
        for (function, var, pair) in [
            (
                "ingestion",
                "INGESTION_QUEUE_VISIBILITY_SECONDS",
                &queues.ingestion,
            ),
            (
                "matching",
                "MATCHING_QUEUE_VISIBILITY_SECONDS",
                &queues.matching,
            ),
            (
                "document-output",
                "DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS",
                &queues.document_output,
            ),
        ] {
            let seconds = visibility_seconds(&sqs, &pair.url).await?;
            set_default(&mut overrides, var, seconds.to_string());
            visibility.insert(function, Duration::from_secs(seconds));
        }
        let per_instance: u32 = from_process("DATABASE_MAX_CONNECTIONS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        set_default(
            &mut overrides,
            "DATABASE_MAX_CONNECTIONS",
            (per_instance * options.concurrency.max(1)).to_string(),
        );

        let lookup = layered(&overrides);
        let settings = Settings::from_env(&Env::new(lookup)).context("invalid settings")?;
        let secrets = Arc::new(SecretStore::new(
            aws_sdk_secretsmanager::Client::new(&aws),
            settings.secret_id.clone(),
            settings.secret_ttl,
        ));
        if !overrides.contains_key("LLM_PROVIDER") && from_process("LLM_PROVIDER").is_none() {
            let provider = if secrets.get_optional("anthropic_api_key").await?.is_some() {
                "anthropic"
            } else if secrets.get_optional("openai_api_key").await?.is_some() {
                "openai"
            } else {
                "rules"
            };
            overrides.insert("LLM_PROVIDER".into(), provider.into());
        }
        let namespace = layered(&overrides)(docflow::telemetry::metrics::NAMESPACE_ENV)
            .unwrap_or_else(|| docflow::telemetry::metrics::DEFAULT_NAMESPACE.to_owned());
        let (metrics, metric_lines) = MetricsSink::capture(namespace);
        Ok(Local {
            metrics,
            metric_lines,
            s3: docflow::aws::s3_client(&aws),
            sqs,
            aws,
            settings,
            secrets,
            queues,
            pool,
            visibility,
            overrides,
        })
    }

    /// The environment the functions read: the overrides, then the process environment.
    pub fn env(&self) -> Env<impl Fn(&str) -> Option<String> + '_> {
        Env::new(layered(&self.overrides))
    }

    /// A variable as the functions see it.
    pub fn var(&self, name: &str) -> Option<String> {
        layered(&self.overrides)(name).filter(|v| !v.trim().is_empty())
    }

    /// The LLM in use (`rules` when none).
    pub fn llm_provider(&self) -> String {
        self.var("LLM_PROVIDER").unwrap_or_else(|| "rules".into())
    }

    /// A function's pool of `max_connections` (lazy and checked, as in
    /// `Common::from_env`). Its connections are named
    /// `docflow-<function>` in `pg_stat_activity`. With `DATABASE_URL` (the local stack's
    /// or a test's database): the function's own role, through the RDS Proxy stand-in of
    /// the local stack, to that database. Without: the secret's `database_url_<function>`
    /// (the function's role, as its own secret holds it in AWS; `docflow local up` writes
    /// one per function), else the secret's `database_url`.
    async fn pool(&self, function: &str, max_connections: u32) -> anyhow::Result<PgPool> {
        if let Some(pool) = &self.pool {
            let url = docflow_dev::local::database::LocalDatabase::from_env()?
                .function_url(function, pool.connect_options().get_database())?;
            return Ok(docflow::db::lazy_pool(
                &url.into(),
                max_connections,
                &format!("docflow-{function}"),
                None,
            )?);
        }
        let url = match &self.settings.database_url {
            // The local stack's database (or a test's): the function's role through the
            // RDS Proxy stand-in, to that database.
            Some(url) => {
                let database = url
                    .expose_secret()
                    .parse::<sqlx::postgres::PgConnectOptions>()
                    .context("DATABASE_URL is not a Postgres URL")?
                    .get_database()
                    .map(str::to_owned);
                docflow_dev::local::database::LocalDatabase::from_env()?
                    .function_url(function, database.as_deref())?
                    .into()
            }
            None => match self.secrets.get(&format!("database_url_{function}")).await {
                Ok(url) => url,
                Err(_) => self.secret_database_url().await?,
            },
        };
        Ok(docflow::db::lazy_pool(
            &url,
            max_connections,
            &format!("docflow-{function}"),
            self.settings.database_tls,
        )?)
    }

    async fn secret_database_url(&self) -> anyhow::Result<secrecy::SecretString> {
        self.secrets
            .get("database_url")
            .await
            .context("no DATABASE_URL and no database_url in the secret")
    }

    /// A pool for the CLI's own queries (the operator's: `DATABASE_URL`, else the
    /// secret's `database_url`), without a function's session check.
    pub async fn database(&self) -> anyhow::Result<PgPool> {
        if let Some(pool) = &self.pool {
            return Ok(pool.clone());
        }
        let url = match &self.settings.database_url {
            Some(url) => url.clone(),
            None => self.secret_database_url().await?,
        };
        Ok(docflow::db::lazy_pool(
            &url,
            4,
            "docflow-cli",
            self.settings.database_tls,
        )?)
    }

    /// The settings as `function` sees them in AWS: its own source queue's visibility.
    pub fn settings_of(&self, function: &str) -> Settings {
        let mut settings = self.settings.clone();
        settings.batch.queue_visibility = self.visibility.get(function).copied();
        settings
    }

    async fn common(&self, function: &str) -> anyhow::Result<(PgPool, BatchRuntime)> {
        let pool = self
            .pool(function, self.settings.database_max_connections)
            .await?;
        Ok((
            pool.clone(),
            BatchRuntime::new(self.sqs.clone(), self.settings_of(function).batch)
                .with_metrics(self.metrics.clone())
                .with_database_gate(pool),
        ))
    }

    async fn llm(&self) -> anyhow::Result<Option<LlmClient>> {
        LlmClient::from_secret(&LlmSettings::from_env(&self.env())?, &self.secrets)
            .await
            .context("failed to build the LLM client")
    }

    /// As `ingestion::Deps::from_env`, through its `Deps::build`. With
    /// `OCR_PROVIDER=textract`, `AWS_ENDPOINT_URL_TEXTRACT` (the AWS SDK's own name for
    /// it) sends the Textract calls to that endpoint instead of the local AWS one: the
    /// local emulator has no Textract, so a local run reads scans through a stand-in
    /// (the soak's) or a real Textract endpoint.
    pub async fn ingestion(&self) -> anyhow::Result<ingestion::Deps> {
        let mut deps = ingestion::Deps::build(
            &self.env(),
            &self.settings_of("ingestion"),
            &self.aws,
            self.pool("ingestion", self.settings.database_max_connections)
                .await?,
            self.sqs.clone(),
            self.s3.clone(),
            &self.secrets,
        )
        .await?;
        deps.runtime = deps.runtime.clone().with_metrics(self.metrics.clone());
        if let (Transcriber::Textract(_), Some(endpoint)) =
            (&deps.transcriber, self.var("AWS_ENDPOINT_URL_TEXTRACT"))
        {
            deps.transcriber = Transcriber::Textract(aws_sdk_textract::Client::from_conf(
                aws_sdk_textract::config::Builder::from(&self.aws)
                    .endpoint_url(endpoint)
                    .build(),
            ));
        }
        Ok(deps)
    }

    /// As `matching::Deps::from_env`.
    pub async fn matching(&self) -> anyhow::Result<matching::Deps> {
        let (pool, runtime) = self.common("matching").await?;
        Ok(matching::Deps {
            pool,
            runtime,
            llm: self.llm().await?,
            embeddings: docflow::embeddings::EmbeddingClient::from_secret(
                &docflow::embeddings::EmbeddingSettings::from_env(&self.env())?,
                &self.secrets,
            )
            .await
            .context("failed to build the embeddings client")?,
            notifier: self.notifier().await?,
            receive_policy: self.settings.receive_policy,
            config: docflow::matching::MatchingConfig::from_env(&self.env())
                .context("invalid MATCH_* settings")?,
        })
    }

    /// As `document_output::Deps::from_env`.
    pub async fn document_output(&self) -> anyhow::Result<document_output::Deps> {
        let env = self.env();
        let (pool, runtime) = self.common("document-output").await?;
        let maesn_config = MaesnConfig::from_env(&env)?;
        let runtime = BatchRuntime::new(
            self.sqs.clone(),
            document_output::batch_config(*runtime.config()),
        )
        .with_metrics(self.metrics.clone())
        .with_database_gate(pool.clone());
        Ok(document_output::Deps {
            pool,
            runtime,
            s3: self.s3.clone(),
            maesn: self.maesn()?,
            settings: docflow::output::worker::WorkerSettings::from_env(
                &env,
                &self.settings.documents_bucket,
                &self.settings.batch.heartbeat,
                &maesn_config,
            )?,
            notifier: self.notifier().await?,
            receive_policy: self.settings.receive_policy,
        })
    }

    /// Where tenants' DATEV account keys are (`DATEV_CREDENTIALS_PREFIX` + tenant id).
    pub fn datev_credentials_prefix(&self) -> anyhow::Result<String> {
        Ok(MaesnConfig::from_env(&self.env())?.credentials_prefix)
    }

    /// Stores a demo tenant's DATEV account key (`seed::ensure_datev_account`).
    pub async fn store_datev_account(&self, tenant_id: uuid::Uuid) -> anyhow::Result<()> {
        crate::seed::ensure_datev_account(
            &aws_sdk_secretsmanager::Client::new(&self.aws),
            &self.datev_credentials_prefix()?,
            tenant_id,
        )
        .await
    }

    /// As `sweeper::Deps::from_env`: the queues it re-sends to, its thresholds (derived
    /// from the local queues' real visibility timeouts), Maesn, the notifier.
    pub async fn sweeper(&self) -> anyhow::Result<sweeper::Deps> {
        let env = self.env();
        Ok(sweeper::Deps {
            pool: self
                .pool("sweeper", self.settings.database_max_connections)
                .await?,
            sqs: self.sqs.clone(),
            queues: sweeper::Queues::from_env(&env)?,
            maesn: Some(self.maesn()?),
            notifier: self.notifier().await?,
            config: sweeper::SweepConfig::from_env(&env)?,
        })
    }

    /// The Maesn client (`MAESN_BASE_URL`, `MAESN_TIMEOUT_SECONDS`).
    pub fn maesn(&self) -> anyhow::Result<MaesnClient> {
        MaesnClient::new(&MaesnConfig::from_env(&self.env())?, self.secrets.clone())
            .context("failed to build the Maesn client")
    }

    /// The admin notification channels (`NOTIFY_*`, the secret's `slack_webhook_url`).
    pub async fn notifier(&self) -> anyhow::Result<Notifier> {
        Notifier::from_settings(
            &NotifySettings::from_env(&self.env())?,
            &self.secrets,
            &self.aws,
        )
        .await
        .context("failed to set up the admin notification channels")
    }

    /// The `output::Dispatcher` the app uses: job ids to the document-output queue.
    pub fn dispatcher(&self) -> docflow::output::Dispatcher {
        docflow::output::Dispatcher::new(self.sqs.clone(), &self.queues.document_output.url)
    }

    /// One line about where the functions run against.
    pub fn describe(&self) -> String {
        format!(
            "secret {}, bucket {}, LLM {}, Maesn {}",
            self.settings.secret_id,
            self.settings.documents_bucket,
            self.llm_provider(),
            self.var("MAESN_BASE_URL")
                .unwrap_or_else(|| "https://api.maesn.dev".into())
        )
    }
}

fn from_process(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// Sets `var` unless the caller or the process environment already did.
fn set_default(overrides: &mut HashMap<String, String>, var: &str, value: String) {
    if !overrides.contains_key(var) && from_process(var).is_none() {
        overrides.insert(var.to_owned(), value);
    }
}

fn layered(overrides: &HashMap<String, String>) -> impl Fn(&str) -> Option<String> + '_ {
    move |var: &str| {
        overrides
            .get(var)
            .cloned()
            .or_else(|| std::env::var(var).ok())
    }
}
