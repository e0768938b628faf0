//! Which tenant a command acts for (`--tenant`): an id, an exact name, or without one
//! the only tenant or the newest demo tenant. Above both `ingest` and `seed`, so neither
//! imports the other for it.

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use crate::seed::latest_demo_tenant;

/// The tenant for `--tenant` (an id or an exact name); without one, the only tenant, or
/// the newest demo tenant (`docflow seed`).
pub async fn resolve_tenant(pool: &PgPool, given: Option<&str>) -> anyhow::Result<Uuid> {
    if let Some(given) = given {
        if let Ok(id) = Uuid::parse_str(given) {
            let exists: Option<Uuid> = sqlx::query_scalar("SELECT id FROM tenant WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await
                .context("cannot reach the database")?;
            return exists.with_context(|| format!("no tenant {id}"));
        }
        let found: Vec<Uuid> =
            sqlx::query_scalar("SELECT id FROM tenant WHERE name = $1 ORDER BY created_at DESC")
                .bind(given)
                .fetch_all(pool)
                .await
                .context("cannot reach the database")?;
        return match found.as_slice() {
            [id] => Ok(*id),
            [] => anyhow::bail!("no tenant named {given:?}"),
            _ => anyhow::bail!(
                "{} tenants are named {given:?}; pass the tenant id",
                found.len()
            ),
        };
    }
    if let Some(id) = latest_demo_tenant(pool).await? {
        return Ok(id);
    }
    let all: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM tenant LIMIT 2")
        .fetch_all(pool)
        .await
        .context("cannot reach the database")?;
    match all.as_slice() {
        [id] => Ok(*id),
        [] => anyhow::bail!("there is no tenant yet; run `docflow seed` or pass --tenant"),
        _ => anyhow::bail!("there are several tenants; pass --tenant <id or name>"),
    }
}
