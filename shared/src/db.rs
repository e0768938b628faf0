//! The Postgres pool and the embedded migrations.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};

/// What a write guarded by a claim found: the claim (a lease token, an attempt number,
/// the data version read) still `Held`, so the write happened; or `Lost` to another
/// delivery, a newer claim or a re-extraction, and nothing was written.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    Held,
    Lost,
}

impl Held {
    /// `Held` when the guarded statement found its row.
    pub fn when(found: bool) -> Held {
        if found { Held::Held } else { Held::Lost }
    }

    pub fn is_held(self) -> bool {
        self == Held::Held
    }

    pub fn is_lost(self) -> bool {
        self == Held::Lost
    }
}

/// Every migration under `migrations/`, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// Migrations amended after they were applied somewhere, with the checksum (SHA-384 of
/// the file) they had then. The local PostgreSQL with pgvector has no pgcrypto
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

/// The connect options of every connection docflow opens: an `application_name`
/// (`docflow-<function>`), so `pg_stat_activity` tells whose session it is, and nothing
/// in the startup packet's `options`: RDS Proxy refuses any ("Feature not supported: RDS
/// Proxy currently doesn't support command-line options"). The session settings
/// ([`LOCK_TIMEOUT`], [`IDLE_IN_TRANSACTION_TIMEOUT`]) are the function roles' own
/// (`ALTER ROLE … SET`, in the migrations) and checked before consuming by [`Gate`].
/// `tls` (the environment's `DATABASE_TLS`, see
/// [`Settings::database_tls`](crate::settings::Settings::database_tls)), when set,
/// replaces whatever `sslmode` the URL carries: a secret whose URL says `disable`,
/// `prefer` or `require` cannot downgrade an environment that verifies the server's
/// certificate. `None` keeps the URL's own mode (and its `sslrootcert`).
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
    Ok(options.application_name(application_name))
}

/// What a function's session is checked for when its pool opens it: the role's session
/// settings and the schema the function was built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// `lock_timeout`, milliseconds (0: off).
    pub lock_timeout_ms: i64,
    /// `idle_in_transaction_session_timeout`, milliseconds (0: off).
    pub idle_in_transaction_timeout_ms: i64,
    /// The newest migration applied, `None` when none is.
    pub schema_version: Option<i64>,
}

/// Why a function refuses a session, and so consumes nothing: every record of the batch
/// is released and comes back later (on its last receive, to the DLQ).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SessionRefused {
    #[error(
        "the database role's {setting} is {found_ms} ms, not at most {expected_ms} ms (0 is off): \
         the role's session settings come from the migrations (ALTER ROLE … SET); migrate, or \
         connect as a function role"
    )]
    Setting {
        setting: &'static str,
        found_ms: i64,
        expected_ms: i64,
    },
    #[error(
        "the schema is at migration {found:?}, older than {expected} this code was built with: \
         run the migrations (the migrate function) first"
    )]
    SchemaBehind { found: Option<i64>, expected: i64 },
}

/// The database role each function connects as (created by the migrations, which give
/// each only the grants its function uses), with a table it reads and one it writes:
/// what [`check_role`] tries.
pub const FUNCTION_ROLES: [FunctionRole; 4] = [
    FunctionRole {
        function: "ingestion",
        role: "docflow_ingestion",
        reads: "document",
        writes: "ingestion",
    },
    FunctionRole {
        function: "matching",
        role: "docflow_matching",
        reads: "document",
        writes: "document_match",
    },
    FunctionRole {
        function: "document-output",
        role: "docflow_document_output",
        reads: "document",
        writes: "document_output_job",
    },
    FunctionRole {
        function: "sweeper",
        role: "docflow_sweeper",
        reads: "document",
        writes: "document_output_job",
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionRole {
    pub function: &'static str,
    pub role: &'static str,
    pub reads: &'static str,
    pub writes: &'static str,
}

/// What [`check_role`] found, as the migrate function and `docflow local up` report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RoleCheck {
    pub role: String,
    pub read: bool,
    pub write: bool,
    /// Why the session, the read or the write failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Connects as a function's role (`pool`: that role's, e.g. through RDS Proxy) and tries
/// what the function will do first: a checked session ([`Session::check`]), a read, and
/// a write rolled back (an `UPDATE` that matches no row still needs the privilege).
pub async fn check_role(pool: &PgPool, role: &FunctionRole) -> RoleCheck {
    let mut check = RoleCheck {
        role: role.role.to_owned(),
        read: false,
        write: false,
        error: None,
    };
    let result: Result<(), String> = async {
        let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
        let user: String = sqlx::query_scalar("SELECT current_user::text")
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| e.to_string())?;
        if user != role.role {
            return Err(format!("connected as {user}, not {}", role.role));
        }
        sqlx::query(&format!("SELECT 1 FROM {} LIMIT 1", role.reads))
            .execute(&mut *conn)
            .await
            .map_err(|e| format!("read {}: {e}", role.reads))?;
        check.read = true;
        let mut tx = sqlx::Connection::begin(&mut *conn)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query(&format!("UPDATE {} SET id = id WHERE false", role.writes))
            .execute(&mut *tx)
            .await
            .map_err(|e| format!("write {}: {e}", role.writes))?;
        tx.rollback().await.map_err(|e| e.to_string())?;
        check.write = true;
        Ok(())
    }
    .await;
    check.error = result.err();
    check
}

/// The newest migration compiled into this binary.
pub fn expected_schema_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

impl Session {
    /// Reads the session's effective settings and the schema version, in one round trip.
    pub async fn read(conn: &mut sqlx::PgConnection) -> Result<Session, sqlx::Error> {
        let (lock, idle, schema): (i64, i64, Option<i64>) = sqlx::query_as(
            "SELECT (SELECT setting::bigint FROM pg_settings WHERE name = 'lock_timeout'), \
                    (SELECT setting::bigint FROM pg_settings \
                      WHERE name = 'idle_in_transaction_session_timeout'), \
                    (SELECT max(version) FROM _sqlx_migrations WHERE success)",
        )
        .fetch_one(conn)
        .await?;
        Ok(Session {
            lock_timeout_ms: lock,
            idle_in_transaction_timeout_ms: idle,
            schema_version: schema,
        })
    }

    /// Whether a function may consume with this session: both timeouts on and no longer
    /// than docflow's, and the schema at least as new as the code.
    pub fn check(&self) -> Result<(), SessionRefused> {
        for (setting, found_ms, expected) in [
            ("lock_timeout", self.lock_timeout_ms, LOCK_TIMEOUT),
            (
                "idle_in_transaction_session_timeout",
                self.idle_in_transaction_timeout_ms,
                IDLE_IN_TRANSACTION_TIMEOUT,
            ),
        ] {
            let expected_ms = expected.as_millis() as i64;
            if found_ms <= 0 || found_ms > expected_ms {
                return Err(SessionRefused::Setting {
                    setting,
                    found_ms,
                    expected_ms,
                });
            }
        }
        let expected = expected_schema_version();
        if self.schema_version.is_none_or(|found| found < expected) {
            return Err(SessionRefused::SchemaBehind {
                found: self.schema_version,
                expected,
            });
        }
        Ok(())
    }
}

/// The check a function makes before it consumes: its session's settings and the schema
/// ([`Session::check`]), read on the function's own pool. Once passed it is not made again
/// in this process (the role's settings and the schema only move forward); while it fails
/// it is made again at every batch, so a fixed database is noticed without a redeploy.
#[derive(Debug)]
pub struct Gate {
    pool: PgPool,
    passed: std::sync::atomic::AtomicBool,
}

impl Gate {
    pub fn new(pool: PgPool) -> Self {
        Gate {
            pool,
            passed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `Err` only for a session the function must not consume with; a database it cannot
    /// reach is left to the work itself (its claim fails and says so).
    pub async fn check(&self) -> Result<(), SessionRefused> {
        use std::sync::atomic::Ordering;
        if self.passed.load(Ordering::Acquire) {
            return Ok(());
        }
        let session = match self.pool.acquire().await {
            Ok(mut conn) => Session::read(&mut conn).await,
            Err(e) => Err(e),
        };
        let session = match session {
            Ok(session) => session,
            // 42P01: no _sqlx_migrations, the schema was never migrated.
            Err(e)
                if e.as_database_error()
                    .and_then(|d| d.code())
                    .is_some_and(|code| code == "42P01") =>
            {
                Session {
                    lock_timeout_ms: -1,
                    idle_in_transaction_timeout_ms: -1,
                    schema_version: None,
                }
            }
            Err(e) => {
                tracing::warn!(error.message = %e, "could not read the database session's settings; going on");
                return Ok(());
            }
        };
        match session.check() {
            Ok(()) => {
                self.passed.store(true, Ordering::Release);
                tracing::info!(
                    lock_timeout_ms = session.lock_timeout_ms,
                    idle_in_transaction_session_timeout_ms = session.idle_in_transaction_timeout_ms,
                    schema_version = session.schema_version,
                    "database session checked"
                );
                Ok(())
            }
            Err(refused) => {
                tracing::error!(
                    lock_timeout_ms = session.lock_timeout_ms,
                    idle_in_transaction_session_timeout_ms = session.idle_in_transaction_timeout_ms,
                    schema_version = session.schema_version,
                    expected_schema_version = expected_schema_version(),
                    reason = %refused,
                    "database session refused; consuming nothing until it is fixed"
                );
                Err(refused)
            }
        }
    }
}

/// A pooled connection idle for at least this long is pinged before it is handed out
/// (and replaced when the ping fails: the server or a proxy closed it while the Lambda
/// instance was frozen). A connection handed back moments ago is used as it is: sqlx's
/// default pings before *every* acquire, one extra round trip per statement, which was
/// a third of document output's Postgres round trips in `make bench`.
pub const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// A pool built without connecting: the first query connects, so a cold start never
/// fails because the database is briefly unreachable, and a Lambda instance opens at most
/// `max_connections` connections. Every connection carries [`connect_options`], `tls`
/// included. Connections idle for [`PING_AFTER_IDLE`] are pinged before use. A function
/// checks its session before it consumes ([`Gate`]).
pub fn lazy_pool(
    url: &SecretString,
    max_connections: u32,
    application_name: &str,
    tls: Option<PgSslMode>,
) -> Result<PgPool, DbSetupError> {
    Ok(
        pool_options(max_connections).connect_lazy_with(connect_options(
            url,
            application_name,
            tls,
        )?),
    )
}

fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
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

    fn session(lock: i64, idle: i64, schema: Option<i64>) -> Session {
        Session {
            lock_timeout_ms: lock,
            idle_in_transaction_timeout_ms: idle,
            schema_version: schema,
        }
    }

    #[test]
    fn a_session_without_the_roles_settings_or_behind_the_schema_is_refused() {
        let now = Some(expected_schema_version());
        assert_eq!(session(20_000, 15_000, now).check(), Ok(()));
        // Stricter values are fine.
        assert_eq!(session(5_000, 1_000, now).check(), Ok(()));
        for (lock, idle) in [(0, 15_000), (20_000, 0), (60_000, 15_000), (20_000, 30_000)] {
            assert!(
                matches!(
                    session(lock, idle, now).check(),
                    Err(SessionRefused::Setting { .. })
                ),
                "{lock} {idle}"
            );
        }
        assert_eq!(
            session(20_000, 15_000, Some(expected_schema_version() - 1)).check(),
            Err(SessionRefused::SchemaBehind {
                found: Some(expected_schema_version() - 1),
                expected: expected_schema_version()
            })
        );
        assert!(matches!(
            session(20_000, 15_000, None).check(),
            Err(SessionRefused::SchemaBehind { found: None, .. })
        ));
        // A newer schema (migrated before this code was deployed) is fine.
        assert_eq!(
            session(20_000, 15_000, Some(expected_schema_version() + 1)).check(),
            Ok(())
        );
    }

    #[test]
    fn no_connection_carries_startup_options() {
        let options = connect_options(
            &url("postgres://u:p@db.example:5432/docflow"),
            "docflow-test",
            Some(PgSslMode::VerifyFull),
        )
        .unwrap();
        assert_eq!(options.get_options(), None);
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
        // Unchecked: the superuser has no function role's settings; the ping is the same.
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
