//! The local database as AWS runs it: a schema owner that migrates, one role per function
//! with a SCRAM password, connections over TLS (`verify-full` against the local CA of
//! `scripts/postgres-up.sh`) through the RDS Proxy stand-in (`docflow local rds-proxy`).
//! The superuser only creates the roles and the database ([`LocalDatabase::bootstrap`]).
//!
//! | variable | default | what |
//! |---|---|---|
//! | `DATABASE_URL` | `postgres://postgres@127.0.0.1:5433/docflow` | the superuser (trust from 127.0.0.1) and the database |
//! | `RDS_PROXY_PORT` | the database's port + 1 | the RDS Proxy stand-in on 127.0.0.1 |
//! | `DB_INSTANCE_PORT` | the database's port + 2 | the DB instance's TLS endpoint on 127.0.0.1 (the owner migrates through it) |
//! | `DOCFLOW_LOCAL_CA` | `.local/tls/ca.pem` | the local CA's certificate |

use std::path::PathBuf;

use anyhow::Context as _;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions as _, Connection as _};

use docflow::db::FUNCTION_ROLES;

/// The role that owns the schema and runs the migrations.
pub const OWNER_ROLE: &str = "docflow_owner";

/// A local role's password (the local stack only; in AWS each is the operator's).
pub fn password(role: &str) -> String {
    format!("{role}-local-password")
}

/// Where the local stack is, from the environment (module docs).
#[derive(Debug, Clone)]
pub struct LocalDatabase {
    /// The superuser's URL (`DATABASE_URL`).
    pub superuser: PgConnectOptions,
    pub proxy_port: u16,
    pub instance_port: u16,
    pub ca: PathBuf,
}

impl LocalDatabase {
    pub fn from_env() -> anyhow::Result<Self> {
        let url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5433/docflow".to_owned());
        let superuser: PgConnectOptions =
            url.parse().context("DATABASE_URL is not a Postgres URL")?;
        let proxy_port = match std::env::var("RDS_PROXY_PORT") {
            Ok(port) if !port.trim().is_empty() => port.trim().parse().context("RDS_PROXY_PORT")?,
            _ => superuser.get_port() + 1,
        };
        let instance_port = match std::env::var("DB_INSTANCE_PORT") {
            Ok(port) if !port.trim().is_empty() => {
                port.trim().parse().context("DB_INSTANCE_PORT")?
            }
            _ => superuser.get_port() + 2,
        };
        let ca = match std::env::var("DOCFLOW_LOCAL_CA") {
            Ok(path) if !path.trim().is_empty() => PathBuf::from(path),
            _ => std::env::current_dir()?.join(".local/tls/ca.pem"),
        };
        Ok(LocalDatabase {
            superuser,
            proxy_port,
            instance_port,
            ca,
        })
    }

    fn database(&self) -> &str {
        self.superuser.get_database().unwrap_or("docflow")
    }

    /// `role`'s URL to `database`: through the RDS Proxy stand-in (`proxy`) or to the DB
    /// instance's endpoint, over TLS with `verify-full` against the local CA.
    pub fn role_url(&self, role: &str, database: &str, proxy: bool) -> String {
        let port = if proxy {
            self.proxy_port
        } else {
            self.instance_port
        };
        format!(
            "postgres://{role}:{password}@127.0.0.1:{port}/{database}?sslmode=verify-full&sslrootcert={ca}",
            password = password(role),
            ca = self.ca.display()
        )
    }

    /// The owner's URL to the stack's database, to the DB instance's endpoint (migrating
    /// through RDS Proxy would pin its session: DDL and sqlx's session-level advisory
    /// lock).
    pub fn owner_url(&self) -> String {
        self.role_url(OWNER_ROLE, self.database(), false)
    }

    /// A function's URL to `database` (default: the stack's), through the proxy.
    pub fn function_url(&self, function: &str, database: Option<&str>) -> anyhow::Result<String> {
        let role = FUNCTION_ROLES
            .iter()
            .find(|r| r.function == function)
            .with_context(|| format!("no database role for the function {function}"))?;
        Ok(self.role_url(role.role, database.unwrap_or(self.database()), true))
    }

    async fn connect_as_superuser(&self) -> anyhow::Result<sqlx::PgConnection> {
        self.superuser
            .clone()
            .connect()
            .await
            .context("connect to the database as the superuser")
    }

    /// As the superuser, once per cluster and idempotently: the owner role (LOGIN,
    /// CREATEROLE, its password), the function roles (created by the owner, so it may set
    /// their session settings in the migrations; LOGIN with their passwords), the
    /// database owned by the owner, and pgvector in it (not a trusted extension). A
    /// database left from before the owner existed (tables owned by someone else) is
    /// dropped and created again: it is the local stack's, its data is the demo's.
    pub async fn bootstrap(&self) -> anyhow::Result<()> {
        let admin_options = self.superuser.clone().database("postgres");
        let mut admin = admin_options
            .connect()
            .await
            .context("cannot connect to PostgreSQL as the superuser of DATABASE_URL")?;
        let owner = OWNER_ROLE;
        sqlx::raw_sql(&format!(
            "DO $$ BEGIN \
               IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{owner}') THEN \
                 CREATE ROLE {owner}; \
               END IF; \
             END $$; \
             ALTER ROLE {owner} WITH LOGIN CREATEROLE PASSWORD '{password}';",
            password = password(owner)
        ))
        .execute(&mut admin)
        .await
        .context("create the owner role")?;
        for role in FUNCTION_ROLES {
            let name = role.role;
            sqlx::raw_sql(&format!(
                "SET ROLE {owner}; \
                 DO $$ BEGIN \
                   IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{name}') THEN \
                     CREATE ROLE {name}; \
                   END IF; \
                 END $$; \
                 RESET ROLE; \
                 GRANT {name} TO {owner} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE; \
                 ALTER ROLE {name} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '{password}';",
                password = password(name)
            ))
            .execute(&mut admin)
            .await
            .with_context(|| format!("create the role {name}"))?;
        }
        let database = self.database().to_owned();
        let foreign: Option<bool> = sqlx::query_scalar(
            "SELECT pg_get_userbyid(datdba) <> $2 FROM pg_database WHERE datname = $1",
        )
        .bind(&database)
        .bind(owner)
        .fetch_optional(&mut admin)
        .await?;
        let mut recreate = foreign == Some(true);
        if foreign == Some(false) {
            // Owned by the owner: but are its tables too?
            let mut db = self.connect_as_superuser().await?;
            let others: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                  WHERE n.nspname = 'public' AND c.relkind = 'r' \
                    AND pg_get_userbyid(c.relowner) <> $1",
            )
            .bind(owner)
            .fetch_one(&mut db)
            .await?;
            db.close().await.ok();
            recreate = others > 0;
        }
        if recreate {
            println!(
                "database {database}: created before the owner role; dropping and creating it again"
            );
            sqlx::query(&format!("DROP DATABASE {database} WITH (FORCE)"))
                .execute(&mut admin)
                .await
                .context("drop the old database")?;
        }
        if foreign.is_none() || recreate {
            sqlx::query(&format!("CREATE DATABASE {database} OWNER {owner}"))
                .execute(&mut admin)
                .await
                .context("create the database")?;
        }
        admin.close().await.ok();
        let mut db = self.connect_as_superuser().await?;
        let pgvector: Option<String> =
            sqlx::query_scalar("SELECT name FROM pg_available_extensions WHERE name = 'vector'")
                .fetch_optional(&mut db)
                .await?;
        if pgvector.is_none() {
            anyhow::bail!(
                "the PostgreSQL at DATABASE_URL has no pgvector (extension \"vector\" is not available): \
                 unset DATABASE_URL to use the local database of `make up`, or install pgvector there"
            );
        }
        sqlx::query("CREATE EXTENSION IF NOT EXISTS vector")
            .execute(&mut db)
            .await
            .context("create the vector extension")?;
        db.close().await.ok();
        Ok(())
    }
}
