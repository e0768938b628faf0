//! A hostile front for a Maesn stand-in: a TCP proxy that behaves like the load
//! balancers and proxies between docflow and Maesn at their worst. It forwards
//! HTTP/1.1 unchanged, except:
//!
//! - **Idle connections dropped** (`idle_reset_after`): a keep-alive connection that
//!   was idle longer than this is gone at the "load balancer" without telling the
//!   client (no FIN — a frozen Lambda would not have seen one either); the next request
//!   written into it is answered with a TCP reset after the client wrote it. Nothing
//!   reaches the stand-in.
//! - **A body cut off by a reset**: a response carrying the header [`CUT_BODY`] (set by
//!   the stand-in, which has booked the request) is forwarded with its headers and half
//!   its body, then the connection is reset.
//!
//! Responses are read by `Content-Length` (what wiremock sends); requests are piped as
//! they come. One request at a time per connection, as reqwest sends them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The response header by which a stand-in asks the front to cut the body off.
pub const CUT_BODY: &str = "x-standin-fault";
/// Its value.
pub const CUT_BODY_VALUE: &str = "cut-body";

/// What the front did, for tests and the soak's table.
#[derive(Debug, Default)]
pub struct FrontStats {
    /// Client connections accepted.
    pub connections: AtomicU64,
    /// Requests written into an idle connection and answered with a reset.
    pub idle_resets: AtomicU64,
    /// Of those, booking proposals (POST): each one an export in doubt for nothing.
    pub idle_resets_post: AtomicU64,
    /// Responses cut off by a reset after half their body.
    pub cut_bodies: AtomicU64,
}

/// A running front. Dropping it stops accepting; connections in flight end with it.
pub struct HostileFront {
    url: String,
    stats: Arc<FrontStats>,
    task: JoinHandle<()>,
}

impl Drop for HostileFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HostileFront {
    /// Starts on a random local port in front of `upstream` (`http://host:port`).
    pub async fn start(upstream: &str, idle_reset_after: Option<Duration>) -> Self {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the front");
        let url = format!("http://{}", listener.local_addr().expect("front address"));
        let stats = Arc::new(FrontStats::default());
        let counting = stats.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                counting.connections.fetch_add(1, Ordering::Relaxed);
                let upstream = upstream.clone();
                let stats = counting.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        serve(client, server, idle_reset_after, &stats).await;
                    }
                });
            }
        });
        HostileFront { url, stats, task }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn stats(&self) -> &FrontStats {
        &self.stats
    }

    pub fn idle_resets(&self) -> u64 {
        self.stats.idle_resets.load(Ordering::Relaxed)
    }

    pub fn idle_resets_post(&self) -> u64 {
        self.stats.idle_resets_post.load(Ordering::Relaxed)
    }

    pub fn cut_bodies(&self) -> u64 {
        self.stats.cut_bodies.load(Ordering::Relaxed)
    }

    pub fn connections(&self) -> u64 {
        self.stats.connections.load(Ordering::Relaxed)
    }
}

/// Ends the client connection with a TCP reset (linger 0), as a load balancer that no
/// longer knows the connection does.
fn reset(client: TcpStream) {
    let _ = client.set_zero_linger();
    drop(client);
}

async fn serve(
    mut client: TcpStream,
    mut server: TcpStream,
    idle_reset_after: Option<Duration>,
    stats: &FrontStats,
) {
    let mut from_client = vec![0u8; 64 * 1024];
    let mut from_server = vec![0u8; 64 * 1024];
    let mut response: Vec<u8> = Vec::new();
    // When the last response was delivered whole (the connection idle since).
    let mut idle_since: Option<Instant> = None;
    loop {
        tokio::select! {
            read = client.read(&mut from_client) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                if let (Some(since), Some(limit)) = (idle_since, idle_reset_after)
                    && since.elapsed() > limit
                {
                    stats.idle_resets.fetch_add(1, Ordering::Relaxed);
                    if from_client[..n].starts_with(b"POST") {
                        stats.idle_resets_post.fetch_add(1, Ordering::Relaxed);
                    }
                    reset(client);
                    return;
                }
                idle_since = None;
                if server.write_all(&from_client[..n]).await.is_err() {
                    return;
                }
            }
            read = server.read(&mut from_server) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                response.extend_from_slice(&from_server[..n]);
                let Some((head_len, body_len, cut)) = complete(&response) else { continue };
                if cut {
                    let half = head_len + body_len / 2;
                    let _ = client.write_all(&response[..half]).await;
                    let _ = client.flush().await;
                    stats.cut_bodies.fetch_add(1, Ordering::Relaxed);
                    reset(client);
                    return;
                }
                let whole = head_len + body_len;
                if client.write_all(&response[..whole]).await.is_err() {
                    return;
                }
                response.drain(..whole);
                idle_since = Some(Instant::now());
            }
        }
    }
}

/// When `response` holds a whole response: the length of its head, of its body, and
/// whether it asks to be cut off.
fn complete(response: &[u8]) -> Option<(usize, usize, bool)> {
    let head_end = response.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&response[..head_end]).to_ascii_lowercase();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            l.strip_prefix(&format!("{name}:"))
                .map(|v| v.trim().to_owned())
        })
    };
    let body_len: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let cut = header(CUT_BODY).as_deref() == Some(CUT_BODY_VALUE);
    (response.len() >= head_end + body_len).then_some((head_end, body_len, cut))
}
