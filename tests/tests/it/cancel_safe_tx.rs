//! Transactions are cancel-safe (vendor/sqlx-postgres/PATCH.md).
//!
//! A future can be dropped at any await: `within_deadline`, the batch runtime's deadline
//! cut, a `select!`, an aborted task. Dropped while `BEGIN`'s reply is in flight, sqlx
//! 0.8.6 left the pooled session inside a transaction it did not track, and the next
//! borrower's "autocommit" writes ran inside it: invisible to everyone else, holding
//! their locks, lost when the connection closed. These tests hold the reply in a TCP
//! proxy, drop the `begin()` at that moment, and check what the next borrower of the
//! same connection gets. Both fail against the crates.io sqlx-postgres 0.8.6.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A TCP proxy to Postgres that holds the server's reply to one statement: armed with
/// a pattern, it starts holding when the client's bytes carry it, before forwarding
/// them, so that statement runs on the server while its reply (and everything after
/// it) waits in the proxy until released. The pool's own pings before the statement
/// pass untouched.
struct HoldingProxy {
    port: u16,
    armed: std::sync::Mutex<Option<&'static [u8]>>,
    hold: watch::Sender<bool>,
    /// Bytes from the server kept back since the hold began.
    held: watch::Sender<usize>,
}

impl HoldingProxy {
    async fn start(upstream: (String, u16)) -> Arc<HoldingProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let proxy = Arc::new(HoldingProxy {
            port: listener.local_addr().unwrap().port(),
            armed: std::sync::Mutex::new(None),
            hold: watch::channel(false).0,
            held: watch::channel(0).0,
        });
        let me = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream.clone()).await else {
                    continue;
                };
                let (mut client_r, mut client_w) = client.into_split();
                let (mut server_r, mut server_w) = server.into_split();
                let up = me.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match client_r.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let trigger = {
                            let mut armed = up.armed.lock().unwrap();
                            match *armed {
                                Some(p) if buf[..n].windows(p.len()).any(|w| w == p) => {
                                    *armed = None;
                                    true
                                }
                                _ => false,
                            }
                        };
                        if trigger {
                            up.held.send_replace(0);
                            up.hold.send_replace(true);
                        }
                        if server_w.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = server_w.shutdown().await;
                });
                let down = me.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match server_r.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if *down.hold.borrow() {
                            down.held.send_modify(|held| *held += n);
                            let mut hold = down.hold.subscribe();
                            if hold.wait_for(|h| !*h).await.is_err() {
                                break;
                            }
                        }
                        if client_w.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        proxy
    }

    /// Holds the server's bytes from the next client message carrying `pattern` on.
    fn hold_reply_to(&self, pattern: &'static [u8]) {
        *self.armed.lock().unwrap() = Some(pattern);
    }

    fn release(&self) {
        self.hold.send_replace(false);
    }

    /// Waits until the server answered the statement and the answer is held (generous
    /// timeout).
    async fn reply_held(&self) {
        let mut held = self.held.subscribe();
        tokio::time::timeout(Duration::from_secs(30), held.wait_for(|n| *n > 0))
            .await
            .expect("the server's reply reached the proxy within 30 s")
            .expect("proxy alive");
    }
}

async fn backend_pid(pool: &PgPool) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// What another session sees of the probe table.
async fn probe_rows(direct: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM cancel_probe")
        .fetch_one(direct)
        .await
        .unwrap()
}

async fn states_of(direct: &PgPool, application_name: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT coalesce(state, '') FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(application_name)
    .fetch_all(direct)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_begin_cancelled_while_its_reply_is_in_flight_leaves_the_next_borrower_outside_any_transaction(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let direct = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(connect.clone())
        .await
        .unwrap();
    sqlx::query("CREATE TABLE cancel_probe (n int)")
        .execute(&direct)
        .await
        .unwrap();
    let proxy = HoldingProxy::start((connect.get_host().to_owned(), connect.get_port())).await;
    // One connection, so the next borrower is the cancelled begin's connection.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(
            connect
                .clone()
                .port(proxy.port)
                .application_name("cancel-safe-begin"),
        )
        .await
        .unwrap();
    let pid = backend_pid(&pool).await;

    // BEGIN goes out and runs; its reply is held; the future is dropped right then.
    proxy.hold_reply_to(b"BEGIN\0");
    {
        let mut begin = Box::pin(pool.begin());
        tokio::select! {
            result = &mut begin => panic!("begin() finished while its reply was held: {:?}", result.map(|_| ())),
            _ = proxy.reply_held() => {}
        }
    }
    proxy.release();

    // The next borrower's autocommit write is visible to another session at once.
    sqlx::query("INSERT INTO cancel_probe VALUES (1)")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        probe_rows(&direct).await,
        1,
        "the write ran inside the cancelled begin's transaction: invisible, and lost on close"
    );
    assert_eq!(
        backend_pid(&pool).await,
        pid,
        "the same connection was cleaned, not replaced"
    );
    let states = states_of(&direct, "cancel-safe-begin").await;
    assert!(
        states.iter().all(|s| !s.starts_with("idle in transaction")),
        "{states:?}"
    );
    // And a real transaction on it still works.
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("INSERT INTO cancel_probe VALUES (2)")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(probe_rows(&direct).await, 2);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_connection_returned_inside_a_transaction_sqlx_does_not_track_is_closed_not_lent(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let direct = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(connect.clone())
        .await
        .unwrap();
    sqlx::query("CREATE TABLE cancel_probe (n int)")
        .execute(&direct)
        .await
        .unwrap();
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(connect.clone().application_name("untracked-tx"))
        .await
        .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    // A transaction sqlx does not know about (as a cancelled BEGIN left one before).
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await.unwrap();
    drop(conn);

    sqlx::query("INSERT INTO cancel_probe VALUES (1)")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        probe_rows(&direct).await,
        1,
        "the pool lent a connection still inside a transaction"
    );
    assert_ne!(backend_pid(&pool).await, pid, "that connection was closed");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn every_docflow_connection_carries_the_server_side_backstops_and_its_name(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    // As a function connects: its role, through the RDS Proxy stand-in, no startup
    // options; the backstops are the role's own (the migrations' ALTER ROLE … SET).
    let url = SecretString::from(
        docflow_dev::local::database::LocalDatabase::from_env()
            .unwrap()
            .function_url("ingestion", connect.get_database())
            .unwrap(),
    );
    let pool = docflow::db::lazy_pool(&url, 1, "docflow-backstop-test", None).unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let settings: (String, String, String) = sqlx::query_as(
        "SELECT current_setting('idle_in_transaction_session_timeout'), \
                current_setting('lock_timeout'), current_setting('application_name')",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert_eq!(
        settings,
        (
            "15s".to_owned(),
            "20s".to_owned(),
            "docflow-backstop-test".to_owned()
        )
    );
    assert!(docflow::db::IDLE_IN_TRANSACTION_TIMEOUT < docflow::db::LOCK_TIMEOUT);
    conn.close().await.unwrap();
}
