//! The Postgres pool and the embedded migrations.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};

/// Every migration under `migrations/`, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// Migrations amended after they were applied somewhere, with the checksum (SHA-384 of
/// the file) they had then. Issue 16: the local PostgreSQL with pgvector has no pgcrypto
/// and no btree_gin, so the two files that created them no longer do (a later migration
/// replaces the one index that needed btree_gin).
pub const AMENDED: &[(i64, &str)] = &[
    (
        20261121000100,
        "9a6251987621da25995c39a8e489dc37b02ad2e669622777042dddb3ec1c6aa629ee21935541e434c1e477b6cbe58c89",
    ),
    (
        20261123130100,
        "efc2626cdf934f219b19172202e57bfc310e560484583cf13e9be8a5429ad1560410b147e78576264808812cd9c8a336",
    ),
];

/// Applies the pending migrations. A database that applied an [`AMENDED`] migration in
/// its earlier form gets the recorded checksum of the amended file first (only when the
/// recorded one is exactly the earlier form's), so sqlx does not refuse it as modified.
pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    let recorded: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    if recorded {
        for (version, before) in AMENDED {
            let Some(now) = MIGRATOR.iter().find(|m| m.version == *version) else {
                continue;
            };
            sqlx::query(
                "UPDATE _sqlx_migrations SET checksum = $2 \
                  WHERE version = $1 AND encode(checksum, 'hex') = $3",
            )
            .bind(version)
            .bind(now.checksum.as_ref())
            .bind(before)
            .execute(pool)
            .await?;
        }
    }
    MIGRATOR.run(pool).await
}

#[derive(Debug, thiserror::Error)]
pub enum DbSetupError {
    // sqlx's parse error would quote the URL, password included.
    #[error("the database URL is not a valid postgres:// URL")]
    BadUrl,
}

/// Server-side backstop for a transaction nobody ends: Postgres closes a session that
/// sits idle inside a transaction this long (SQLSTATE 25P03), releasing its locks. No
/// docflow transaction waits on anything but Postgres itself (no HTTP call inside one),
/// so a legitimate idle gap is a round trip and some CPU: milliseconds. 15 s is below
/// [`LOCK_TIMEOUT`], so a statement queued behind a leaked session gets its lock when the
/// server ends that session instead of failing first, and far below the shortest
/// function timeout (120 s) and queue visibility (720 s).
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a statement waits for a row or advisory lock before failing with 55P03
/// (transient: the message is retried later). Every docflow transaction is short; a wait
/// this long means a stuck holder, and waiting on would burn the invocation (120 s
/// timeout). Matching's write phase sets the same value for its tenant lock.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(20);

/// The connect options of every connection docflow opens: the backstop timeouts above
/// and an `application_name` (`docflow-<function>`), so `pg_stat_activity` tells whose
/// session it is. `tls` (the environment's `DATABASE_TLS`, see
/// [`Settings::database_tls`](crate::settings::Settings::database_tls)), when set,
/// replaces whatever `sslmode` the URL carries: a secret whose URL says `disable`,
/// `prefer` or `require` cannot downgrade an environment that verifies the server's
/// certificate. `None` keeps the URL's own mode (local runs).
pub fn connect_options(
    url: &SecretString,
    application_name: &str,
    tls: Option<PgSslMode>,
) -> Result<PgConnectOptions, DbSetupError> {
    let mut options: PgConnectOptions = url
        .expose_secret()
        .parse()
        .map_err(|_| DbSetupError::BadUrl)?;
    if let Some(mode) = tls {
        options = options.ssl_mode(mode);
    }
    Ok(options.application_name(application_name).options([
        (
            "idle_in_transaction_session_timeout",
            format!("{}ms", IDLE_IN_TRANSACTION_TIMEOUT.as_millis()),
        ),
        ("lock_timeout", format!("{}ms", LOCK_TIMEOUT.as_millis())),
    ]))
}

/// A pooled connection idle for at least this long is pinged before it is handed out
/// (and replaced when the ping fails: the server or a proxy closed it while the Lambda
/// instance was frozen). A connection handed back moments ago is used as it is: sqlx's
/// default pings before *every* acquire, one extra round trip per statement, which was
/// a third of document output's Postgres round trips in `make bench` (issue 27).
pub const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// Builds the pool without connecting: the first query connects, so a cold start never
/// fails because the database is briefly unreachable, and a Lambda instance opens at
/// most `max_connections` connections. Every connection carries [`connect_options`],
/// `tls` included. Connections idle for [`PING_AFTER_IDLE`] are checked before use.
pub fn lazy_pool(
    url: &SecretString,
    max_connections: u32,
    application_name: &str,
    tls: Option<PgSslMode>,
) -> Result<PgPool, DbSetupError> {
    Ok(PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .idle_timeout(Duration::from_secs(60))
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_AFTER_IDLE {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_lazy_with(connect_options(url, application_name, tls)?))
}

/// The `application_name` of a function's connections: `docflow-<name>`, with the Lambda
/// function's name when running in Lambda (`AWS_LAMBDA_FUNCTION_NAME`, e.g.
/// `prod-docflow-ingestion`), else `docflow-<fallback>`.
pub fn application_name(fallback: &str) -> String {
    match std::env::var("AWS_LAMBDA_FUNCTION_NAME") {
        Ok(name) if !name.is_empty() => name,
        _ => format!("docflow-{fallback}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> SecretString {
        SecretString::from(text.to_owned())
    }

    #[test]
    fn the_environments_tls_mode_overrides_a_weaker_sslmode_in_the_url() {
        for weaker in ["disable", "allow", "prefer", "require", "verify-ca"] {
            let options = connect_options(
                &url(&format!(
                    "postgres://u:p@db.example:5432/docflow?sslmode={weaker}"
                )),
                "docflow-test",
                Some(PgSslMode::VerifyFull),
            )
            .unwrap();
            assert!(
                matches!(options.get_ssl_mode(), PgSslMode::VerifyFull),
                "sslmode={weaker}: {:?}",
                options.get_ssl_mode()
            );
        }
        let options = connect_options(
            &url("postgres://u:p@db.example:5432/docflow"),
            "docflow-test",
            Some(PgSslMode::Require),
        )
        .unwrap();
        assert!(matches!(options.get_ssl_mode(), PgSslMode::Require));
    }

    #[test]
    fn without_a_tls_mode_the_urls_sslmode_stands() {
        let options = connect_options(
            &url("postgres://u:p@localhost:5433/docflow?sslmode=disable"),
            "docflow-test",
            None,
        )
        .unwrap();
        assert!(matches!(options.get_ssl_mode(), PgSslMode::Disable));
        let options = connect_options(
            &url("postgres://u:p@localhost:5433/docflow?sslmode=verify-full"),
            "docflow-test",
            None,
        )
        .unwrap();
        assert!(matches!(options.get_ssl_mode(), PgSslMode::VerifyFull));
    }

    /// A connection the server closed while it sat idle (a frozen Lambda instance) is
    /// not handed out: the ping after [`PING_AFTER_IDLE`] finds it dead and the pool
    /// opens another. Needs the local Postgres (`make up`).
    #[tokio::test]
    async fn a_connection_closed_while_idle_is_replaced_not_handed_out() {
        let database_url = std::env::var("DATABASE_URL").expect("DATABASE_URL (make up)");
        let pool = lazy_pool(&url(&database_url), 1, "docflow-test-ping", None).unwrap();
        let first: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&pool)
            .await
            .unwrap();
        // Back-to-back use keeps the same connection (no ping needed to trust it).
        let again: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(first, again);
        let admin = sqlx::PgPool::connect(&database_url).await.unwrap();
        let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(first)
            .fetch_one(&admin)
            .await
            .unwrap();
        assert!(killed);
        tokio::time::sleep(PING_AFTER_IDLE + Duration::from_millis(200)).await;
        let replaced: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&pool)
            .await
            .expect("the dead connection is replaced, not handed out");
        assert_ne!(first, replaced);
    }

    #[tokio::test]
    async fn the_pool_carries_the_tls_mode() {
        let pool = lazy_pool(
            &url("postgres://u:p@db.example:5432/docflow?sslmode=disable"),
            1,
            "docflow-test",
            Some(PgSslMode::VerifyFull),
        )
        .unwrap();
        assert!(matches!(
            pool.connect_options().get_ssl_mode(),
            PgSslMode::VerifyFull
        ));
    }
}
