//! A Lambda Runtime API stand-in (the part of the Lambda service a function process
//! talks to): `GET /2018-06-01/runtime/invocation/next` hands out one event at a time,
//! `POST …/invocation/{id}/response|error` and `POST …/init/error` take the answers.
//! It notes when the process first asks for an event: the end of its cold start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot};

/// What the function answered for one invocation.
#[derive(Debug)]
pub struct Answer {
    pub ok: bool,
    pub body: String,
    /// From the event being handed out to the answer arriving.
    pub wall: Duration,
}

struct Pending {
    delivered: Option<Instant>,
    reply: oneshot::Sender<Answer>,
}

#[derive(Default)]
struct State {
    first_next: Mutex<Option<Instant>>,
    init_error: Mutex<Option<String>>,
    seen: Notify,
    pending: Mutex<HashMap<String, Pending>>,
}

pub struct RuntimeApi {
    pub addr: String,
    state: Arc<State>,
    events: mpsc::UnboundedSender<(String, String)>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RuntimeApi {
    pub async fn start(port: u16) -> anyhow::Result<Self> {
        let listener = bind(port)
            .await
            .with_context(|| format!("bind the Runtime API stand-in on port {port}"))?;
        let state = Arc::new(State::default());
        let (tx, rx) = mpsc::unbounded_channel::<(String, String)>();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let task = {
            let state = state.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    // Without it, the body written after the head waits for the client's
                    // delayed ACK of the head (Nagle): ~40 ms added to every invocation's
                    // wall, which the stand-in itself caused (strace showed the event's
                    // body arriving 44 ms after its head). Lambda's Runtime API adds none.
                    let _ = stream.set_nodelay(true);
                    let state = state.clone();
                    let rx = rx.clone();
                    tokio::spawn(async move {
                        let _ = serve(stream, state, rx).await;
                    });
                }
            })
        };
        Ok(RuntimeApi {
            addr: format!("127.0.0.1:{port}"),
            state,
            events: tx,
            task,
        })
    }

    /// Waits until the process asks for its first event (or reports an init error).
    pub async fn ready(&self, timeout: Duration) -> anyhow::Result<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.state.seen.notified();
            if let Some(at) = *self.state.first_next.lock().unwrap() {
                return Ok(at);
            }
            if let Some(e) = self.state.init_error.lock().unwrap().clone() {
                anyhow::bail!("init error: {e}");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                anyhow::bail!("the function did not ask for an event within {timeout:?}");
            }
            let _ = tokio::time::timeout(left, seen).await;
        }
    }

    /// Hands `event` to the function and waits for its answer.
    pub async fn invoke(&self, event: String, timeout: Duration) -> anyhow::Result<Answer> {
        let id = uuid::Uuid::new_v4().to_string();
        let (reply, answer) = oneshot::channel();
        self.state.pending.lock().unwrap().insert(
            id.clone(),
            Pending {
                delivered: None,
                reply,
            },
        );
        self.events
            .send((id, event))
            .ok()
            .context("stand-in stopped")?;
        tokio::time::timeout(timeout, answer)
            .await
            .context("the function did not answer in time")?
            .context("the function's connection closed")
    }
}

/// Binds `port`, waiting for the previous stand-in on it (aborted, not yet dropped).
pub async fn bind(port: u16) -> std::io::Result<TcpListener> {
    let mut tries = 0;
    loop {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 50 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

async fn serve(
    stream: TcpStream,
    state: Arc<State>,
    events: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<(String, String)>>>,
) -> anyhow::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            read.read_line(&mut header).await?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        read.read_exact(&mut body).await?;
        let body = String::from_utf8_lossy(&body).into_owned();

        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method.as_str(), segments.as_slice()) {
            ("GET", ["2018-06-01", "runtime", "invocation", "next"]) => {
                {
                    let mut first = state.first_next.lock().unwrap();
                    if first.is_none() {
                        *first = Some(Instant::now());
                    }
                }
                state.seen.notify_waiters();
                let Some((id, event)) = events.lock().await.recv().await else {
                    return Ok(());
                };
                if let Some(p) = state.pending.lock().unwrap().get_mut(&id) {
                    p.delivered = Some(Instant::now());
                }
                let deadline = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis()
                    + 300_000;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                     lambda-runtime-aws-request-id: {id}\r\n\
                     lambda-runtime-deadline-ms: {deadline}\r\n\
                     lambda-runtime-invoked-function-arn: arn:aws:lambda:eu-central-1:123456789012:function:bench\r\n\
                     lambda-runtime-trace-id: Root=1-00000000-000000000000000000000000;Sampled=0\r\n\
                     content-length: {}\r\n\r\n",
                    event.len()
                );
                // One write: the head and the event leave in the same segment(s).
                let mut response = head.into_bytes();
                response.extend_from_slice(event.as_bytes());
                write.write_all(&response).await?;
            }
            ("POST", ["2018-06-01", "runtime", "invocation", id, kind]) => {
                if let Some(p) = state.pending.lock().unwrap().remove(*id) {
                    let _ = p.reply.send(Answer {
                        ok: *kind == "response",
                        body,
                        wall: p.delivered.map(|d| d.elapsed()).unwrap_or_default(),
                    });
                }
                accepted(&mut write).await?;
            }
            ("POST", ["2018-06-01", "runtime", "init", "error"]) => {
                *state.init_error.lock().unwrap() = Some(body);
                state.seen.notify_waiters();
                accepted(&mut write).await?;
            }
            _ => {
                write
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await?;
            }
        }
    }
}

async fn accepted(write: &mut tokio::net::tcp::OwnedWriteHalf) -> std::io::Result<()> {
    write
        .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n{\"status\":\"OK\"}\n")
        .await
}
