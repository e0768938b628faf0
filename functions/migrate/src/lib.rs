//! The migrate function: the schema's first day and every release, run inside the VPC by
//! an operator (`aws lambda invoke`, infra/README.md) after the apply that deploys new
//! code and before the consumers are switched on. Never on a queue or a schedule.
//!
//! 1. Connects as the schema owner (its own secret's `database_url`, to the DB
//!    instance's endpoint: DDL and sqlx's session-level migration lock would pin an RDS
//!    Proxy session) over `verify-full`: a URL without `sslrootcert` is verified against
//!    the RDS CA bundle compiled in (`rds-ca/`).
//! 2. Applies the pending migrations (they create the function roles, their grants and
//!    session settings). Two invocations at once run one after the other: the migrator
//!    holds an advisory lock.
//! 3. For each function: reads its secret's `database_url` (the function's role, through
//!    RDS Proxy), sets that role's password and LOGIN from it, and connects as the role
//!    the way the function does (the session check included) for a read and a rolled-back
//!    write ([`docflow::db::check_role`]).
//!
//! | failure | the invocation |
//! |---|---|
//! | a secret unreadable, a key missing, a URL not postgres:// | fails before touching the database |
//! | the owner cannot connect, a migration fails | fails; sqlx applies each migration in its own transaction, the next run resumes |
//! | a function's URL names another role than the function's | fails, nothing set for that role |
//! | a role cannot connect, read or write (proxy secret differs, grants missing) | fails after trying every role, the report names each |
//!
//! The answer is the [`Report`], as JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Context as _;
use docflow::db::{FUNCTION_ROLES, FunctionRole, RoleCheck};
use docflow::secrets::SecretStore;
use lambda_runtime::LambdaEvent;
use secrecy::{ExposeSecret as _, SecretString};
use sqlx::PgPool;
use sqlx::postgres::{PgPoolOptions, PgSslMode};

/// The root certificates of Amazon RDS (`rds-ca/README.md`).
pub const RDS_CA_BUNDLE: &[u8] = include_bytes!("../rds-ca/global-bundle.pem");

/// The environment variable naming each function's secret: a JSON object
/// `{"ingestion": "<secret id>", "matching": …, "document-output": …, "sweeper": …}`.
pub const FUNCTION_SECRET_IDS_ENV: &str = "DOCFLOW_FUNCTION_CREDENTIAL_ARNS";

/// The AWS calls this function makes (its IAM role must allow them): its own secret and
/// the four functions' (`tests/tests/it/iam_calls.rs` compares them with Terraform's).
pub fn aws_actions() -> Vec<&'static str> {
    vec!["secretsmanager:GetSecretValue"]
}

/// What the invocation did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// The newest migration applied now.
    pub schema_version: i64,
    /// The migrations this invocation applied (none on a second run).
    pub applied: Vec<i64>,
    pub roles: Vec<RoleCheck>,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("the owner's database_url is not a valid postgres:// URL")]
    OwnerUrl,
    #[error("cannot connect as the schema owner: {0}")]
    Connect(#[source] sqlx::Error),
    #[error("the migrations failed: {0}")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    #[error("reading the applied migrations: {0}")]
    Read(#[source] sqlx::Error),
    #[error("the {function} secret's database_url {problem}")]
    FunctionUrl {
        function: &'static str,
        problem: String,
    },
    #[error("setting the password of {role}: {source}")]
    SetPassword {
        role: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("roles that cannot work: {}", failed(.0))]
    Roles(Report),
}

fn failed(report: &Report) -> String {
    report
        .roles
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.role)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the invocation reads: its own secret and each function's.
pub struct Deps {
    pub own: SecretStore,
    pub functions: BTreeMap<&'static str, SecretStore>,
    pub tls: Option<PgSslMode>,
}

impl Deps {
    pub async fn from_env() -> anyhow::Result<Self> {
        let env = docflow::settings::Env::new(|name| std::env::var(name).ok());
        let secret_id = env.required("DOCFLOW_SECRET_ID")?;
        let tls = match std::env::var(docflow::settings::DATABASE_TLS_ENV) {
            Ok(raw) if !raw.trim().is_empty() => Some(
                docflow::settings::parse_database_tls(&raw)
                    .with_context(|| format!("DATABASE_TLS={raw} is not a TLS mode"))?,
            ),
            _ => None,
        };
        let ids: BTreeMap<String, String> = serde_json::from_str(
            &std::env::var(FUNCTION_SECRET_IDS_ENV)
                .with_context(|| format!("{FUNCTION_SECRET_IDS_ENV} is not set"))?,
        )
        .with_context(|| format!("{FUNCTION_SECRET_IDS_ENV} is not a JSON object of strings"))?;
        let aws = docflow::aws::load()?;
        let client = aws_sdk_secretsmanager::Client::new(&aws);
        // Read afresh at every invocation: an operator invokes again right after fixing
        // a secret (or rotating a password), and a warm instance must not set the
        // value it cached before.
        let ttl = Duration::ZERO;
        let mut functions = BTreeMap::new();
        for role in FUNCTION_ROLES {
            let id = ids
                .get(role.function)
                .with_context(|| format!("{FUNCTION_SECRET_IDS_ENV} has no {}", role.function))?;
            functions.insert(role.function, SecretStore::new(client.clone(), id, ttl));
        }
        Ok(Deps {
            own: SecretStore::new(client, secret_id, ttl),
            functions,
            tls,
        })
    }
}

/// The Lambda handler: the payload is ignored (`{}`).
pub async fn handler(
    deps: &Deps,
    _event: LambdaEvent<serde_json::Value>,
) -> Result<Report, lambda_runtime::Error> {
    let owner = deps.own.get("database_url").await?;
    let mut roles = Vec::new();
    for role in FUNCTION_ROLES {
        let url = deps.functions[role.function].get("database_url").await?;
        roles.push((role, url));
    }
    let report = run(&owner, &roles, deps.tls).await.inspect_err(|e| {
        tracing::error!(error.message = %e, error.cause_chain = ?e, "migrate failed");
    })?;
    tracing::info!(
        schema_version = report.schema_version,
        applied = ?report.applied,
        "migrated; every function role reads and writes"
    );
    Ok(report)
}

/// Migrates as the owner, then sets and tries each role (module docs).
pub async fn run(
    owner_url: &SecretString,
    roles: &[(FunctionRole, SecretString)],
    tls: Option<PgSslMode>,
) -> Result<Report, MigrateError> {
    // Each URL is checked before anything is changed.
    let mut logins = Vec::new();
    for (role, url) in roles {
        logins.push((role, login(role, url)?, url));
    }
    let mut options = docflow::db::connect_options(owner_url, "docflow-migrate", tls)
        .map_err(|_| MigrateError::OwnerUrl)?;
    if !owner_url.expose_secret().contains("sslrootcert=") {
        options = options.ssl_root_cert_from_pem(RDS_CA_BUNDLE.to_vec());
    }
    let owner = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options)
        .await
        .map_err(MigrateError::Connect)?;
    let before = applied(&owner).await?;
    docflow::db::migrate(&owner)
        .await
        .map_err(MigrateError::Migrate)?;
    let after = applied(&owner).await?;
    for (role, password, _) in &logins {
        let statement: String = sqlx::query_scalar(
            "SELECT format('ALTER ROLE %I WITH LOGIN PASSWORD %L', $1::text, $2::text)",
        )
        .bind(role.role)
        .bind(password.expose_secret())
        .fetch_one(&owner)
        .await
        .map_err(|source| MigrateError::SetPassword {
            role: role.role,
            source,
        })?;
        sqlx::raw_sql(&statement)
            .execute(&owner)
            .await
            .map_err(|source| MigrateError::SetPassword {
                role: role.role,
                source,
            })?;
    }
    owner.close().await;
    let mut checks = Vec::new();
    for (role, _, url) in &logins {
        let check = match docflow::db::lazy_pool(url, 1, "docflow-migrate-check", tls) {
            Ok(pool) => {
                let check = docflow::db::check_role(&pool, role).await;
                pool.close().await;
                check
            }
            Err(e) => RoleCheck {
                role: role.role.to_owned(),
                read: false,
                write: false,
                error: Some(e.to_string()),
            },
        };
        checks.push(check);
    }
    let report = Report {
        schema_version: after.iter().copied().max().unwrap_or(0),
        applied: after.difference(&before).copied().collect(),
        roles: checks,
    };
    if report.roles.iter().any(|r| r.error.is_some()) {
        return Err(MigrateError::Roles(report));
    }
    Ok(report)
}

/// The password of `url`, which must connect as `role`'s own database role.
fn login(role: &FunctionRole, url: &SecretString) -> Result<SecretString, MigrateError> {
    let problem = |problem: &str| MigrateError::FunctionUrl {
        function: role.function,
        problem: problem.to_owned(),
    };
    let parsed = url::Url::parse(url.expose_secret()).map_err(|_| problem("is not a valid URL"))?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(problem("is not a postgres:// URL"));
    }
    let user = percent_encoding::percent_decode_str(parsed.username())
        .decode_utf8()
        .map_err(|_| problem("has a user name that is not UTF-8"))?;
    if user != role.role {
        return Err(MigrateError::FunctionUrl {
            function: role.function,
            problem: format!(
                "connects as {user:?}, not as the function's role {}",
                role.role
            ),
        });
    }
    let password = parsed
        .password()
        .ok_or_else(|| problem("has no password"))?;
    let password = percent_encoding::percent_decode_str(password)
        .decode_utf8()
        .map_err(|_| problem("has a password that is not UTF-8"))?;
    Ok(SecretString::from(password.into_owned()))
}

/// The migrations recorded as applied (none before the first run).
async fn applied(pool: &PgPool) -> Result<BTreeSet<i64>, MigrateError> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await
        .map_err(MigrateError::Read)?;
    if !exists {
        return Ok(BTreeSet::new());
    }
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await
            .map_err(MigrateError::Read)?;
    Ok(versions.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role() -> FunctionRole {
        FUNCTION_ROLES[0]
    }

    #[test]
    fn a_function_url_must_connect_as_the_functions_role() {
        let ok = login(
            &role(),
            &SecretString::from(
                "postgres://docflow_ingestion:p%40ss@proxy:5432/docflow".to_owned(),
            ),
        )
        .unwrap();
        assert_eq!(ok.expose_secret(), "p@ss");
        for (url, expected) in [
            (
                "postgres://postgres:x@proxy/docflow",
                "not as the function's role",
            ),
            (
                "postgres://docflow_ingestion@proxy/docflow",
                "has no password",
            ),
            (
                "mysql://docflow_ingestion:x@proxy/docflow",
                "not a postgres",
            ),
            ("not a url", "not a valid URL"),
        ] {
            let e = login(&role(), &SecretString::from(url.to_owned())).unwrap_err();
            assert!(e.to_string().contains(expected), "{url}: {e}");
        }
    }

    #[test]
    fn the_rds_bundle_is_compiled_in() {
        let text = std::str::from_utf8(RDS_CA_BUNDLE).unwrap();
        assert_eq!(text.matches("-----BEGIN CERTIFICATE-----").count(), 87);
    }
}
