//! The Postgres pool and the embedded migrations.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// Every migration under `migrations/`, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

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
