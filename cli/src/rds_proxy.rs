//! A local stand-in for RDS Proxy in front of PostgreSQL (`docflow local rds-proxy`,
//! started by `make up`): the functions reach the local database only through it, as in
//! AWS, so what RDS Proxy refuses fails here too.
//!
//! | what the client does | RDS Proxy | the stand-in |
//! |---|---|---|
//! | startup packet with `options` (command-line options) | refuses: `FATAL: Feature not supported: RDS Proxy currently doesn't support command-line options` (SQLSTATE 0A000) | the same, connection closed |
//! | a session setting as a startup parameter (`statement_timeout`, …) | refuses: `Feature not supported: RDS Proxy currently doesn't support the option <name>.` | the same for `statement_timeout`, `ssl_renegotiation_limit`, `lock_timeout`, `idle_in_transaction_session_timeout` |
//! | no TLS, proxy set to require it | refuses the connection | refuses, `FATAL` 28000 |
//! | TLS | terminates it with its own certificate | terminates it with the local CA's server certificate (`make up`) |
//! | a statement that changes session state | pins the session to one database connection | forwards it and counts the condition ([`Pins`]) |
//!
//! Everything else is forwarded byte for byte to the upstream PostgreSQL, where the
//! client authenticates as its own role (SCRAM). The stand-in does not multiplex: each
//! client session has its own upstream session, so a pinned session behaves as any
//! other here. What it adds is the refusal and the count.
//!
//! Pinning conditions for RDS for PostgreSQL, from "Avoiding pinning an RDS Proxy"
//! (Amazon RDS User Guide), as [`pin_reason`] recognises them in a statement's text:
//! `SET` (`SET LOCAL` included: the page exempts it only for MySQL), `set_config`,
//! `PREPARE` / `EXECUTE` /
//! `DEALLOCATE` / `DISCARD`, temporary tables, sequences and views, `DECLARE … CURSOR`,
//! `LISTEN`, `LOAD`, the sequence functions (`nextval`, `setval`, `currval`, `lastval`),
//! session-level advisory lock functions (`pg_advisory_lock`, `pg_try_advisory_lock`, …;
//! the `_xact_` ones do not pin), and any statement longer than 16 KB.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// RDS Proxy's answer to a startup packet with `options`, word for word.
pub const OPTIONS_REFUSED: &str =
    "Feature not supported: RDS Proxy currently doesn't support command-line options.";

const SSL_REQUEST: u32 = 80_877_103;
const GSS_ENC_REQUEST: u32 = 80_877_104;
const CANCEL_REQUEST: u32 = 80_877_102;
const PROTOCOL_3: u32 = 196_608;
/// "Any statement with a text size greater than 16 KB causes the proxy to pin the session."
const LONG_STATEMENT: usize = 16 * 1024;

/// What the stand-in counted since it started.
#[derive(Debug, Default)]
pub struct Counters {
    pub sessions: AtomicU64,
    pub refused_options: AtomicU64,
    pub refused_plaintext: AtomicU64,
    /// Sessions that met at least one pinning condition.
    pub pinned_sessions: AtomicU64,
    pub pins: Mutex<BTreeMap<&'static str, u64>>,
    /// One example statement per condition (its first 200 characters).
    pub examples: Mutex<BTreeMap<&'static str, String>>,
}

/// A snapshot of [`Counters`], as `--stats` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pins {
    pub sessions: u64,
    pub refused_options: u64,
    pub refused_plaintext: u64,
    pub pinned_sessions: u64,
    /// Statements per pinning condition.
    pub conditions: BTreeMap<String, u64>,
    pub examples: BTreeMap<String, String>,
}

impl Counters {
    pub fn snapshot(&self) -> Pins {
        Pins {
            sessions: self.sessions.load(Ordering::Relaxed),
            refused_options: self.refused_options.load(Ordering::Relaxed),
            refused_plaintext: self.refused_plaintext.load(Ordering::Relaxed),
            pinned_sessions: self.pinned_sessions.load(Ordering::Relaxed),
            conditions: self
                .pins
                .lock()
                .expect("pins poisoned")
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            examples: self
                .examples
                .lock()
                .expect("pins poisoned")
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        }
    }

    fn pin(&self, reason: &'static str, statement: &str) {
        *self
            .pins
            .lock()
            .expect("pins poisoned")
            .entry(reason)
            .or_default() += 1;
        self.examples
            .lock()
            .expect("pins poisoned")
            .entry(reason)
            .or_insert_with(|| statement.chars().take(200).collect());
    }
}

/// How the stand-in runs.
#[derive(Clone)]
pub struct Options {
    /// The PostgreSQL behind it.
    pub upstream: String,
    /// The server certificate and key it presents; `None`: no TLS (clients are refused).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `false`: a DB instance's endpoint, not a proxy's: TLS in front of PostgreSQL and
    /// nothing else (no refusal, no count). The local PostgreSQL build has no TLS of its
    /// own; this is the endpoint the schema owner migrates through, as it would reach an
    /// RDS instance directly.
    pub proxy: bool,
}

/// The TLS configuration from a PEM certificate chain and key (the local CA's server
/// certificate of `make up`).
pub fn tls_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("no PEM certificate in {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("no PEM private key in {}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])
    .context("TLS versions")?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .context("the certificate does not fit the key")?;
    Ok(Arc::new(config))
}

/// A running stand-in: its address and its counters.
pub struct Running {
    pub address: SocketAddr,
    pub counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `listen` and serves until the returned [`Running`] is dropped.
pub async fn start(listen: &str, options: Options) -> anyhow::Result<Running> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let address = listener.local_addr()?;
    let counters = Arc::new(Counters::default());
    let task = tokio::spawn(serve(listener, options, counters.clone()));
    Ok(Running {
        address,
        counters,
        task,
    })
}

async fn serve(listener: TcpListener, options: Options, counters: Arc<Counters>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let (options, counters) = (options.clone(), counters.clone());
        tokio::spawn(async move {
            if let Err(e) = session(client, &options, &counters).await {
                tracing::debug!(error = %e, "rds-proxy session ended");
            }
        });
    }
}

async fn read_startup<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Vec<u8>> {
    let len = stream.read_u32().await? as usize;
    if !(8..=10_000).contains(&len) {
        return Err(std::io::Error::other("bad startup packet length"));
    }
    let mut packet = vec![0; len];
    packet[..4].copy_from_slice(&(len as u32).to_be_bytes());
    stream.read_exact(&mut packet[4..]).await?;
    Ok(packet)
}

fn code(packet: &[u8]) -> u32 {
    u32::from_be_bytes([packet[4], packet[5], packet[6], packet[7]])
}

/// The startup packet's parameters.
fn parameters(packet: &[u8]) -> Vec<(String, String)> {
    let mut fields = packet[8..]
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut out = Vec::new();
    while let (Some(k), Some(v)) = (fields.next(), fields.next()) {
        if k.is_empty() {
            break;
        }
        out.push((k, v));
    }
    out
}

/// A backend `ErrorResponse` of severity FATAL.
fn fatal(sqlstate: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (field, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', sqlstate),
        (b'M', message),
    ] {
        body.push(field);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = vec![b'E'];
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

async fn session(
    mut client: TcpStream,
    options: &Options,
    counters: &Counters,
) -> anyhow::Result<()> {
    let mut first = read_startup(&mut client).await?;
    if code(&first) == GSS_ENC_REQUEST {
        client.write_all(b"N").await?;
        first = read_startup(&mut client).await?;
    }
    match code(&first) {
        SSL_REQUEST => {
            let Some(tls) = &options.tls else {
                client.write_all(b"N").await?;
                read_startup(&mut client).await?;
                return refuse_plaintext(client, counters).await;
            };
            client.write_all(b"S").await?;
            let mut tls = tokio_rustls::TlsAcceptor::from(tls.clone())
                .accept(client)
                .await
                .context("TLS handshake")?;
            let startup = read_startup(&mut tls).await?;
            forward(tls, startup, options, counters).await
        }
        CANCEL_REQUEST => {
            // A cancel names a backend by its key: pass it on as it is.
            let mut upstream = TcpStream::connect(&options.upstream).await?;
            upstream.write_all(&first).await?;
            Ok(())
        }
        _ => refuse_plaintext(client, counters).await,
    }
}

async fn refuse_plaintext(mut client: TcpStream, counters: &Counters) -> anyhow::Result<()> {
    counters.refused_plaintext.fetch_add(1, Ordering::Relaxed);
    client
        .write_all(&fatal("28000", "This RDS Proxy requires TLS connections"))
        .await?;
    Ok(())
}

async fn forward<C>(
    mut client: C,
    startup: Vec<u8>,
    options: &Options,
    counters: &Counters,
) -> anyhow::Result<()>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    if code(&startup) != PROTOCOL_3 {
        client
            .write_all(&fatal("08P01", "unsupported frontend protocol"))
            .await?;
        return Ok(());
    }
    let parameters = parameters(&startup);
    let refusal = parameters
        .iter()
        .filter(|_| options.proxy)
        .find_map(|(k, _)| match k.as_str() {
            "options" => Some(OPTIONS_REFUSED.to_owned()),
            // Reported refused by name (module docs).
            "statement_timeout"
            | "ssl_renegotiation_limit"
            | "lock_timeout"
            | "idle_in_transaction_session_timeout" => Some(format!(
                "Feature not supported: RDS Proxy currently doesn't support the option {k}."
            )),
            _ => None,
        });
    if let Some(message) = refusal {
        counters.refused_options.fetch_add(1, Ordering::Relaxed);
        client.write_all(&fatal("0A000", &message)).await?;
        client.shutdown().await.ok();
        return Ok(());
    }
    counters.sessions.fetch_add(1, Ordering::Relaxed);
    let mut upstream = TcpStream::connect(&options.upstream)
        .await
        .with_context(|| format!("cannot reach the database at {}", options.upstream))?;
    upstream.set_nodelay(true).ok();
    upstream.write_all(&startup).await?;
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let to_client = async {
        tokio::io::copy(&mut upstream_read, &mut client_write)
            .await
            .ok();
        client_write.shutdown().await.ok();
    };
    let to_upstream = async {
        let mut pinned = false;
        let result: std::io::Result<()> = async {
            loop {
                let kind = match client_read.read_u8().await {
                    Ok(kind) => kind,
                    Err(_) => return Ok(()),
                };
                let len = client_read.read_u32().await? as usize;
                if len < 4 {
                    return Err(std::io::Error::other("bad message length"));
                }
                let mut message = Vec::with_capacity(len + 1);
                message.push(kind);
                message.extend_from_slice(&(len as u32).to_be_bytes());
                message.resize(len + 1, 0);
                client_read.read_exact(&mut message[5..]).await?;
                if let Some(sql) = statement(kind, &message[5..]).filter(|_| options.proxy)
                    && let Some(reason) = pin_reason(&sql)
                {
                    counters.pin(reason, &sql);
                    if !pinned {
                        pinned = true;
                        counters.pinned_sessions.fetch_add(1, Ordering::Relaxed);
                    }
                }
                upstream_write.write_all(&message).await?;
            }
        }
        .await;
        upstream_write.shutdown().await.ok();
        result
    };
    let (_, result) = tokio::join!(to_client, to_upstream);
    result?;
    Ok(())
}

/// The SQL text of a simple query (`Q`) or of a Parse (`P`).
fn statement(kind: u8, body: &[u8]) -> Option<String> {
    let text = match kind {
        b'Q' => body.split(|b| *b == 0).next()?,
        b'P' => {
            let mut fields = body.splitn(3, |b| *b == 0);
            let _name = fields.next()?;
            fields.next()?
        }
        _ => return None,
    };
    Some(String::from_utf8_lossy(text).into_owned())
}

/// The pinning condition a statement meets, if any (module docs).
pub fn pin_reason(sql: &str) -> Option<&'static str> {
    if sql.len() > LONG_STATEMENT {
        return Some("statement over 16 KB");
    }
    let lower = sql.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ';' || c == '(')
        .filter(|w| !w.is_empty())
        .take(4)
        .collect();
    match words.as_slice() {
        // The PostgreSQL list names `SET` without exception (`SET LOCAL` is exempt only
        // in the MySQL section).
        ["set", "local", ..] => return Some("SET LOCAL"),
        ["set", ..] | ["reset", ..] => return Some("SET / RESET"),
        ["prepare", ..] | ["execute", ..] | ["deallocate", ..] => {
            return Some("PREPARE / EXECUTE / DEALLOCATE");
        }
        ["discard", ..] => return Some("DISCARD"),
        ["create", "temp" | "temporary", ..] => return Some("temporary table, sequence or view"),
        ["create", "or", "replace", "temp" | "temporary"] => {
            return Some("temporary table, sequence or view");
        }
        ["declare", ..] => return Some("DECLARE cursor"),
        ["listen", ..] => return Some("LISTEN"),
        ["load", ..] => return Some("LOAD"),
        _ => {}
    }
    if lower.contains("set_config(") || lower.contains("set_config (") {
        return Some("set_config");
    }
    for function in ["nextval(", "setval(", "currval(", "lastval("] {
        if lower.contains(function) {
            return Some("sequence function (nextval, setval, currval, lastval)");
        }
    }
    for function in [
        "pg_advisory_lock(",
        "pg_advisory_lock_shared(",
        "pg_try_advisory_lock(",
        "pg_try_advisory_lock_shared(",
        "pg_advisory_unlock(",
        "pg_advisory_unlock_shared(",
        "pg_advisory_unlock_all(",
    ] {
        if lower.contains(function) {
            return Some("session-level advisory lock");
        }
    }
    None
}

/// Serves until stopped, writing the counters to `stats` (JSON) every second.
pub async fn run_forever(
    listen: &str,
    options: Options,
    stats: Option<&Path>,
) -> anyhow::Result<()> {
    let running = start(listen, options).await?;
    println!("rds-proxy stand-in on {}", running.address);
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        if let Some(path) = stats {
            let json = serde_json::to_vec_pretty(&running.counters.snapshot())?;
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, json)?;
            std::fs::rename(&tmp, path)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_state_changes_pin_and_transaction_level_advisory_locks_do_not() {
        for (sql, pins) in [
            ("SET lock_timeout = '1s'", true),
            ("set search_path to x", true),
            ("RESET ALL", true),
            ("SET LOCAL lock_timeout = '20s'", true),
            ("SELECT set_config('hnsw.ef_search', '40', true)", true),
            ("SELECT set_config('a.b', 'c', false)", true),
            ("PREPARE q AS SELECT 1", true),
            ("DISCARD ALL", true),
            ("CREATE TEMP TABLE t (x int)", true),
            ("DECLARE c CURSOR WITH HOLD FOR SELECT 1", true),
            ("LISTEN jobs", true),
            ("SELECT nextval('s')", true),
            ("SELECT pg_advisory_lock(1)", true),
            ("SELECT pg_try_advisory_lock(1)", true),
            ("SELECT pg_advisory_xact_lock(1)", false),
            ("SELECT pg_try_advisory_xact_lock(1)", false),
            (
                "UPDATE ingestion SET status = 'completed' WHERE id = $1",
                false,
            ),
            ("SELECT 1", false),
        ] {
            assert_eq!(pin_reason(sql).is_some(), pins, "{sql}");
        }
        assert!(pin_reason(&format!("SELECT '{}'", "x".repeat(LONG_STATEMENT))).is_some());
    }

    #[test]
    fn the_startup_parameters_are_read_in_order() {
        let mut packet = vec![0, 0, 0, 0];
        packet.extend_from_slice(&PROTOCOL_3.to_be_bytes());
        for field in [
            "user",
            "docflow_ingestion",
            "options",
            "-c lock_timeout=1s",
            "",
        ] {
            packet.extend_from_slice(field.as_bytes());
            packet.push(0);
        }
        assert_eq!(
            parameters(&packet),
            vec![
                ("user".to_owned(), "docflow_ingestion".to_owned()),
                ("options".to_owned(), "-c lock_timeout=1s".to_owned())
            ]
        );
    }
}
