//! Cold-start wiring shared by every function's `main.rs`: settings, the SDK
//! configuration, the secret, the lazy pool and the batch runtime, built once and
//! borrowed by the handler for the life of the Lambda instance.

use crate::aws::SdkConfig;
use anyhow::Context as _;
use sqlx::PgPool;

use crate::secrets::SecretStore;
use crate::settings::Settings;
use crate::sqs::BatchRuntime;

/// What every function needs; function-specific clients are built next to it.
#[derive(Debug)]
pub struct Common {
    pub settings: Settings,
    pub aws: SdkConfig,
    pub sqs: aws_sdk_sqs::Client,
    pub secrets: SecretStore,
    pub pool: PgPool,
    pub runtime: BatchRuntime,
}

impl Common {
    /// Reads settings, loads the SDK configuration, fetches the secret and builds the
    /// pool (without connecting). Fails with the name of whatever is missing; Lambda
    /// reports an init error and retries the cold start.
    pub async fn from_env() -> anyhow::Result<Self> {
        let settings = Settings::from_process_env().context("invalid settings")?;
        crate::coldstart::mark("settings");
        let aws = crate::aws::load()?;
        crate::coldstart::mark("aws_config");
        let sqs = aws_sdk_sqs::Client::new(&aws);
        let secrets = SecretStore::new(
            aws_sdk_secretsmanager::Client::new(&aws),
            settings.secret_id.clone(),
            settings.secret_ttl,
        );
        crate::coldstart::mark("sdk_clients");
        let database_url = match &settings.database_url {
            Some(url) => url.clone(),
            None => secrets
                .get("database_url")
                .await
                .context("no DATABASE_URL and no database_url in the secret")?,
        };
        // The fetch, when there is one, is timed as `secret_fetch` by the store.
        crate::coldstart::mark("database_url");
        let pool = crate::db::lazy_pool(
            &database_url,
            settings.database_max_connections,
            &crate::db::application_name("function"),
            settings.database_tls,
        )?;
        let runtime =
            BatchRuntime::new(sqs.clone(), settings.batch).with_database_gate(pool.clone());
        crate::coldstart::mark("pool");
        Ok(Common {
            settings,
            aws,
            sqs,
            secrets,
            pool,
            runtime,
        })
    }
}
