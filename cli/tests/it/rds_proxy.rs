//! The RDS Proxy stand-in (`docflow local rds-proxy`): it refuses what RDS Proxy refuses,
//! above all the startup `options` every docflow connection used to carry, and counts
//! what would pin a session. An instance of its own, in front of the local PostgreSQL of
//! `make up`, with the local CA's server certificate.

use std::sync::atomic::Ordering;

use docflow_cli::rds_proxy::{self, OPTIONS_REFUSED, Options, Running};
use docflow_dev::local::database::LocalDatabase;
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{ConnectOptions as _, Connection as _};

async fn stand_in() -> (Running, PgConnectOptions) {
    let local = LocalDatabase::from_env().unwrap();
    let tls_dir = local.ca.parent().unwrap().to_owned();
    let running = rds_proxy::start(
        "127.0.0.1:0",
        Options {
            upstream: format!("127.0.0.1:{}", local.superuser.get_port()),
            tls: Some(
                rds_proxy::tls_config(&tls_dir.join("server.crt"), &tls_dir.join("server.key"))
                    .unwrap(),
            ),
            proxy: true,
        },
    )
    .await
    .unwrap();
    let url = local.function_url("ingestion", None).unwrap();
    let options: PgConnectOptions = url.parse().unwrap();
    let options = options.port(running.address.port());
    (running, options)
}

#[tokio::test]
async fn the_stand_in_refuses_the_startup_options_docflow_used_to_send() {
    let (running, options) = stand_in().await;
    // What docflow::db::connect_options sent before the roles carried the settings.
    let before = options.clone().options([
        ("idle_in_transaction_session_timeout", "15000ms"),
        ("lock_timeout", "20000ms"),
    ]);

    let error = before.connect().await.unwrap_err();

    let database = error.as_database_error().expect("a FATAL from the proxy");
    assert_eq!(database.code().as_deref(), Some("0A000"));
    assert_eq!(database.message(), OPTIONS_REFUSED);
    assert_eq!(running.counters.refused_options.load(Ordering::Relaxed), 1);

    // Today's options: none. The role's own settings are in force.
    let today = docflow::db::connect_options(
        &secrecy::SecretString::from(
            docflow_dev::local::database::LocalDatabase::from_env()
                .unwrap()
                .function_url("ingestion", None)
                .unwrap(),
        ),
        "docflow-ingestion",
        Some(PgSslMode::VerifyFull),
    )
    .unwrap()
    .port(running.address.port());
    let mut conn = today.connect().await.expect("through the stand-in");
    let (user, lock, idle): (String, String, String) = sqlx::query_as(
        "SELECT current_user::text, current_setting('lock_timeout'), \
                current_setting('idle_in_transaction_session_timeout')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        (user.as_str(), lock.as_str(), idle.as_str()),
        ("docflow_ingestion", "20s", "15s")
    );
    conn.close().await.unwrap();
}

#[tokio::test]
async fn the_stand_in_refuses_a_connection_without_tls() {
    let (running, options) = stand_in().await;

    let error = options
        .ssl_mode(PgSslMode::Disable)
        .connect()
        .await
        .unwrap_err();

    assert!(error.to_string().contains("requires TLS"), "{error}");
    assert_eq!(
        running.counters.refused_plaintext.load(Ordering::Relaxed),
        1
    );
}

#[tokio::test]
async fn the_stand_in_counts_a_session_that_would_pin_and_not_one_that_would_not() {
    let (running, options) = stand_in().await;
    let mut quiet = options.clone().connect().await.unwrap();
    let mut tx = quiet.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(42)")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(running.counters.pinned_sessions.load(Ordering::Relaxed), 0);

    let mut pinning = options.connect().await.unwrap();
    sqlx::query("SET statement_timeout = '5s'")
        .execute(&mut pinning)
        .await
        .unwrap();
    sqlx::query("SELECT pg_advisory_lock(42), pg_advisory_unlock(42)")
        .execute(&mut pinning)
        .await
        .unwrap();

    let pins = running.counters.snapshot();
    assert_eq!(pins.pinned_sessions, 1);
    assert_eq!(pins.conditions.get("SET / RESET"), Some(&1));
    assert_eq!(pins.conditions.get("session-level advisory lock"), Some(&1));
    quiet.close().await.unwrap();
    pinning.close().await.unwrap();
}
