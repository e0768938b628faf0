//! The Postgres pool and the embedded migrations.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

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

/// Builds the pool without connecting: the first query connects, so a cold start never
/// fails because the database is briefly unreachable, and a Lambda instance opens at
/// most `max_connections` connections.
pub fn lazy_pool(url: &SecretString, max_connections: u32) -> Result<PgPool, DbSetupError> {
    let options: PgConnectOptions = url
        .expose_secret()
        .parse()
        .map_err(|_| DbSetupError::BadUrl)?;
    Ok(PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .idle_timeout(Duration::from_secs(60))
        .connect_lazy_with(options))
}
