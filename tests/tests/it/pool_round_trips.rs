//! A statement run on docflow's pool costs one round trip to Postgres, not two
//! (vendor/sqlx-postgres/PATCH.md, "ping on release").
//!
//! sqlx pings every connection handed back to its pool. For a statement run on `&PgPool`
//! that was a second round trip after every statement: half of document output's and
//! ingestion's Postgres round trips in `make bench --only trips`. The patched ping takes
//! the server's last answer as its own when nothing is in flight or queued and that
//! answer is fresh; what the release ping is for (flushing a dropped transaction's
//! ROLLBACK, checking a connection that sat idle) still makes its round trip.
//!
//! The proxy below counts the server's `ReadyForQuery` messages: every exchange the
//! client waits for ends with exactly one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use secrecy::SecretString;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP proxy to Postgres counting the `ReadyForQuery` ('Z') messages the server sends.
/// The client must not ask for TLS (`sslmode=disable`), so the server's side of the
/// stream is typed messages from its first byte.
struct CountingProxy {
    port: u16,
    ready_for_query: AtomicUsize,
}

impl CountingProxy {
    async fn start(upstream: (String, u16)) -> Arc<CountingProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let proxy = Arc::new(CountingProxy {
            port: listener.local_addr().unwrap().port(),
            ready_for_query: AtomicUsize::new(0),
        });
        let me = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream.clone()).await else {
                    continue;
                };
                let (mut client_r, mut client_w) = client.into_split();
                let (mut server_r, mut server_w) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_r, &mut server_w).await;
                    let _ = server_w.shutdown().await;
                });
                let counter = me.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    // Bytes of the message being read still to skip, and a partial header.
                    let mut skip = 0usize;
                    let mut header: Vec<u8> = Vec::with_capacity(5);
                    loop {
                        let n = match server_r.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let mut i = 0;
                        while i < n {
                            if skip > 0 {
                                let take = skip.min(n - i);
                                skip -= take;
                                i += take;
                                continue;
                            }
                            header.push(buf[i]);
                            i += 1;
                            if header.len() == 5 {
                                if header[0] == b'Z' {
                                    counter.ready_for_query.fetch_add(1, Ordering::SeqCst);
                                }
                                let len = u32::from_be_bytes(header[1..5].try_into().unwrap());
                                skip = (len as usize).saturating_sub(4);
                                header.clear();
                            }
                        }
                        if client_w.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = client_w.shutdown().await;
                });
            }
        });
        proxy
    }

    fn count(&self) -> usize {
        self.ready_for_query.load(Ordering::SeqCst)
    }
}

/// docflow's own pool (`db::lazy_pool`, as every function builds it) of one connection,
/// as a function's role, through the counting proxy (in plain text: the proxy reads the
/// protocol).
fn pool_through(proxy: &CountingProxy, connect: &PgConnectOptions) -> PgPool {
    let role = "docflow_ingestion";
    let url = format!(
        "postgres://{role}:{}@127.0.0.1:{}/{}?sslmode=disable",
        docflow_dev::local::database::password(role),
        proxy.port,
        connect.get_database().unwrap_or("postgres"),
    );
    docflow::db::lazy_pool(&SecretString::from(url), 1, "docflow-round-trips", None).unwrap()
}

/// The pool hands connections back on a task of its own; wait until it has.
async fn settled(pool: &PgPool) {
    for _ in 0..200 {
        if pool.num_idle() == pool.size() as usize {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the pool never got its connection back");
}

/// The counting proxy and docflow's pool through it, connected, the statement of
/// [`one_statement`] prepared, the connection back in the pool: a warm instance.
async fn warm(connect: &PgConnectOptions) -> (Arc<CountingProxy>, PgPool) {
    let proxy = CountingProxy::start((connect.get_host().to_owned(), connect.get_port())).await;
    let pool = pool_through(&proxy, connect);
    one_statement(&pool, 0).await;
    settled(&pool).await;
    (proxy, pool)
}

async fn one_statement(pool: &PgPool, n: i32) {
    let got: i32 = sqlx::query_scalar("SELECT $1::int4 + 1")
        .bind(n)
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(got, n + 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_statement_on_the_pool_costs_one_round_trip_not_two(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (proxy, pool) = warm(&connect).await;

    let before = proxy.count();
    for n in 1..=20 {
        one_statement(&pool, n).await;
    }
    settled(&pool).await;
    assert_eq!(
        proxy.count() - before,
        20,
        "20 statements on the pool, each with its own release ping, would be 40 exchanges"
    );
}

/// The timeline: a connection handed back is pinged for free only while the server's
/// last answer is under 250 ms old (`PING_FRESH`). docflow pings a connection idle for
/// 1 s (`db::PING_AFTER_IDLE`) before lending it, and that ping must reach the server,
/// or a connection closed while the instance was frozen would be lent.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_connection_idle_past_the_threshold_is_pinged_on_the_wire(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (proxy, pool) = warm(&connect).await;

    tokio::time::sleep(docflow::db::PING_AFTER_IDLE + Duration::from_millis(50)).await;
    let before = proxy.count();
    one_statement(&pool, 1).await;
    settled(&pool).await;
    assert_eq!(
        proxy.count() - before,
        2,
        "after {:?} idle: the ping before lending, then the statement",
        docflow::db::PING_AFTER_IDLE
    );
}

/// A transaction dropped without commit queues its ROLLBACK; handing the connection
/// back must send it and wait for it (a round trip), so the next borrower is outside
/// any transaction and the dropped write is gone.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_dropped_transactions_rollback_is_flushed_when_the_connection_is_handed_back(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let direct = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(connect.clone())
        .await
        .unwrap();
    sqlx::query("CREATE TABLE round_trip_probe (n int)")
        .execute(&direct)
        .await
        .unwrap();
    sqlx::query("GRANT SELECT, INSERT ON round_trip_probe TO docflow_ingestion")
        .execute(&direct)
        .await
        .unwrap();
    let proxy = CountingProxy::start((connect.get_host().to_owned(), connect.get_port())).await;
    let pool = pool_through(&proxy, &connect);
    // The insert is prepared once, committed (a warm instance).
    sqlx::query("INSERT INTO round_trip_probe VALUES (0)")
        .execute(&pool)
        .await
        .unwrap();
    settled(&pool).await;

    let before = proxy.count();
    {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO round_trip_probe VALUES (0)")
            .execute(&mut *tx)
            .await
            .unwrap();
        // Dropped here, uncommitted.
    }
    settled(&pool).await;
    assert_eq!(
        proxy.count() - before,
        4,
        "BEGIN, the insert, then on release the queued ROLLBACK and the ping's own Sync"
    );
    // The next borrower's autocommit write is visible to another session at once, and
    // the dropped one is not.
    sqlx::query("INSERT INTO round_trip_probe VALUES (2)")
        .execute(&pool)
        .await
        .unwrap();
    let rows: Vec<i32> = sqlx::query_scalar("SELECT n FROM round_trip_probe ORDER BY n")
        .fetch_all(&direct)
        .await
        .unwrap();
    assert_eq!(
        rows,
        vec![0, 2],
        "the dropped transaction's write must be gone and the next one committed"
    );
}
