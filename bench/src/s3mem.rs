//! S3 answered from memory, in parallel: an HTTP/1.1 stand-in in front of moto for the
//! per-record comparisons with the peers.
//!
//! moto serves one request at a time (a Python server: ten concurrent GETs take as long
//! as ten in a row), so a batch whose records each read their file from S3 waits on the
//! emulator, whichever side asks, and the ratio of two such waits swings with moto's
//! speed of the moment. S3 itself serves a client's requests in parallel. This stand-in
//! keeps **moto's own answer** to an object GET (status line, headers — ETag,
//! checksums — and body, byte for byte) and replays it to every later GET of the same
//! object at once, from any connection, concurrently; every other request (PUT, HEAD, a
//! GET it has not seen) is forwarded to moto and its answer copied back. docflow's SDK
//! clients (`AWS_ENDPOINT_URL_S3`) and the peers' boto3 (the same variable) read from
//! it alike.
//!
//! [`S3Mem::warm`] reads an object once through the stand-in (the harness, before the
//! timed batches), so the timed GETs are all answered from memory. The hit and
//! forwarded counts say whether they were.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Default)]
struct State {
    /// Request key (see [`key`]) → moto's whole answer, as it came.
    answers: RwLock<HashMap<String, Arc<Vec<u8>>>>,
    hits: AtomicUsize,
    forwarded: AtomicUsize,
}

pub struct S3Mem {
    pub url: String,
    state: Arc<State>,
    client: aws_sdk_s3::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for S3Mem {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl S3Mem {
    /// Listens on `port` (0: any free port); `upstream` is moto's `host:port`.
    pub async fn start(port: u16, upstream: String) -> anyhow::Result<Self> {
        let listener = crate::rapi::bind(port).await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(State::default());
        let task = {
            let state = state.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let _ = client.set_nodelay(true);
                    let state = state.clone();
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        let _ = serve(client, &upstream, &state).await;
                    });
                }
            })
        };
        let url = format!("http://127.0.0.1:{port}");
        let client = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&docflow::aws::local(&url))
                .force_path_style(true)
                .build(),
        );
        Ok(S3Mem {
            url,
            state,
            client,
            task,
        })
    }

    /// Reads `bucket`/`key` once through the stand-in, so that every later GET of it is
    /// answered from memory.
    pub async fn warm(&self, bucket: &str, key: &str) -> anyhow::Result<()> {
        self.client
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .with_context(|| format!("warm s3://{bucket}/{key} through the S3 stand-in"))?
            .body
            .collect()
            .await
            .context("read the warmed object")?;
        Ok(())
    }

    /// GETs answered from memory, and requests forwarded to moto, since the last call.
    pub fn take(&self) -> (usize, usize) {
        (
            self.state.hits.swap(0, Ordering::Relaxed),
            self.state.forwarded.swap(0, Ordering::Relaxed),
        )
    }
}

/// One GET of `path` (`/bucket/key`) at `authority` (`host:port`) on a connection of its
/// own, by hand: no SDK, so that timing it times the server. moto checks that a request
/// is signed but not the signature. Returns the status and the body's length.
pub async fn raw_get(authority: &str, path: &str) -> anyhow::Result<(String, usize)> {
    let stream = TcpStream::connect(authority).await?;
    stream.set_nodelay(true)?;
    let mut conn = BufReader::new(stream);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: AWS4-HMAC-SHA256 \
         Credential=test/20261127/eu-central-1/s3/aws4_request, SignedHeaders=host, \
         Signature=00\r\nConnection: close\r\n\r\n"
    );
    conn.get_mut().write_all(request.as_bytes()).await?;
    let head = read_head(&mut conn)
        .await?
        .context("the server closed without answering")?;
    let mut body = Vec::new();
    read_body(&mut conn, &head, true, &mut body).await?;
    let status = head.first_line.split(' ').nth(1).unwrap_or("").to_owned();
    Ok((status, body.len()))
}

/// What identifies an object GET across clients: the path (path-style addressing,
/// `/bucket/key`) and the query without `x-id` (the Rust SDK's operation marker; boto3
/// sends none).
fn key(target: &str) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("x-id="))
        .collect();
    params.sort_unstable();
    format!("{path}?{}", params.join("&"))
}

struct Head {
    bytes: Vec<u8>,
    first_line: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a message head up to its empty line; `None` at a clean end of stream.
async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Head>> {
    let mut bytes = Vec::new();
    loop {
        let n = reader.read_until(b'\n', &mut bytes).await?;
        if n == 0 {
            return match bytes.is_empty() {
                true => Ok(None),
                false => Err(std::io::ErrorKind::UnexpectedEof.into()),
            };
        }
        if bytes == b"\r\n" {
            bytes.clear();
            continue;
        }
        if bytes.ends_with(b"\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut lines = text.split("\r\n");
    let first_line = lines.next().unwrap_or("").to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Ok(Some(Head {
        bytes,
        first_line,
        headers,
    }))
}

/// Appends a message body (by `Content-Length`, or chunked with its trailers) to `out`.
/// `to_eof`: a response with neither, which ends when the server closes.
async fn read_body<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    head: &Head,
    to_eof: bool,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let mut line = Vec::new();
            reader.read_until(b'\n', &mut line).await?;
            out.extend_from_slice(&line);
            let size = String::from_utf8_lossy(&line);
            let size = size.trim().split(';').next().unwrap_or("0");
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {size:?}")))?;
            if size == 0 {
                loop {
                    let mut trailer = Vec::new();
                    if reader.read_until(b'\n', &mut trailer).await? == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    out.extend_from_slice(&trailer);
                    if trailer == b"\r\n" {
                        return Ok(());
                    }
                }
            }
            let start = out.len();
            out.resize(start + size + 2, 0);
            reader.read_exact(&mut out[start..]).await?;
        }
    } else if let Some(n) = head.header("content-length") {
        let n: usize = n
            .parse()
            .map_err(|_| std::io::Error::other(format!("bad Content-Length {n:?}")))?;
        let start = out.len();
        out.resize(start + n, 0);
        reader.read_exact(&mut out[start..]).await?;
        Ok(())
    } else if to_eof {
        reader.read_to_end(out).await.map(|_| ())
    } else {
        Ok(())
    }
}

/// One client connection: each request answered from memory or forwarded to moto over a
/// connection of its own (opened at the first forward, reopened when moto closed it).
async fn serve(client: TcpStream, upstream: &str, state: &State) -> std::io::Result<()> {
    let (read, mut write) = client.into_split();
    let mut reader = BufReader::new(read);
    let mut moto: Option<(
        BufReader<tokio::net::tcp::OwnedReadHalf>,
        tokio::net::tcp::OwnedWriteHalf,
    )> = None;
    while let Some(head) = read_head(&mut reader).await? {
        let mut parts = head.first_line.split(' ');
        let method = parts.next().unwrap_or("").to_owned();
        let target = parts.next().unwrap_or("").to_owned();
        let mut request = head.bytes.clone();
        read_body(&mut reader, &head, false, &mut request).await?;
        let cache_key = (method == "GET").then(|| key(&target));
        let cached = cache_key
            .as_ref()
            .and_then(|k| state.answers.read().unwrap().get(k).cloned());
        if let Some(answer) = cached {
            state.hits.fetch_add(1, Ordering::Relaxed);
            write.write_all(&answer).await?;
            continue;
        }
        state.forwarded.fetch_add(1, Ordering::Relaxed);
        if moto.is_none() {
            let server = TcpStream::connect(upstream).await?;
            server.set_nodelay(true)?;
            let (r, w) = server.into_split();
            moto = Some((BufReader::new(r), w));
        }
        let (moto_read, moto_write) = moto.as_mut().expect("connected above");
        moto_write.write_all(&request).await?;
        let answer_head = read_head(moto_read)
            .await?
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        let status = answer_head
            .first_line
            .split(' ')
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let no_body = method == "HEAD" || matches!(status.as_str(), "204" | "304");
        let closes = answer_head
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let mut answer = answer_head.bytes.clone();
        if !no_body {
            read_body(moto_read, &answer_head, true, &mut answer).await?;
        }
        if closes
            || (answer_head.header("content-length").is_none()
                && answer_head.header("transfer-encoding").is_none()
                && !no_body)
        {
            moto = None;
        }
        if let (Some(k), "200") = (cache_key, status.as_str()) {
            state
                .answers
                .write()
                .unwrap()
                .insert(k, Arc::new(answer.clone()));
        }
        write.write_all(&answer).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_is_keyed_by_path_and_query_without_the_sdk_marker() {
        assert_eq!(
            key("/b/documents/a.pdf?x-id=GetObject"),
            "/b/documents/a.pdf?"
        );
        assert_eq!(key("/b/documents/a.pdf"), "/b/documents/a.pdf?");
        assert_eq!(key("/b/k?versionId=2&x-id=GetObject"), "/b/k?versionId=2");
        assert_ne!(key("/b/k?versionId=2"), key("/b/k?versionId=3"));
    }

    /// An upstream that answers every request with its sequence number, counting them.
    async fn upstream() -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let (r, mut w) = socket.into_split();
                    let mut reader = BufReader::new(r);
                    while let Ok(Some(head)) = read_head(&mut reader).await {
                        let mut body = Vec::new();
                        read_body(&mut reader, &head, false, &mut body)
                            .await
                            .unwrap();
                        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                        let text = format!("answer {n} to {}", head.first_line);
                        let status = if head.first_line.contains("/missing") {
                            "404 Not Found"
                        } else {
                            "200 OK"
                        };
                        let answer = format!(
                            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nETag: \"e{n}\"\r\n\r\n{text}",
                            text.len()
                        );
                        w.write_all(answer.as_bytes()).await.unwrap();
                    }
                });
            }
        });
        (addr, seen)
    }

    async fn exchange(conn: &mut BufReader<TcpStream>, request: &str) -> String {
        conn.get_mut().write_all(request.as_bytes()).await.unwrap();
        let head = read_head(conn).await.unwrap().unwrap();
        let mut body = Vec::new();
        read_body(conn, &head, false, &mut body).await.unwrap();
        String::from_utf8(body).unwrap()
    }

    #[tokio::test]
    async fn replays_moto_s_answer_to_other_connections_and_forwards_the_rest() {
        let (addr, seen) = upstream().await;
        let mem = S3Mem::start(0, addr).await.unwrap();
        let port: u16 = mem.url.rsplit(':').next().unwrap().parse().unwrap();
        let connect =
            || async { BufReader::new(TcpStream::connect(("127.0.0.1", port)).await.unwrap()) };
        let mut first = connect().await;
        let get = "GET /b/k?x-id=GetObject HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(
            exchange(&mut first, get).await,
            "answer 1 to GET /b/k?x-id=GetObject HTTP/1.1"
        );
        // Another client, boto3's form of the same GET: moto's first answer, not a new one.
        let mut second = connect().await;
        let boto = "GET /b/k HTTP/1.1\r\nHost: y\r\n\r\n";
        assert_eq!(
            exchange(&mut second, boto).await,
            "answer 1 to GET /b/k?x-id=GetObject HTTP/1.1"
        );
        // A PUT (with its body) and a GET of a missing object go to moto, every time.
        let put = "PUT /b/k HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(
            exchange(&mut second, put).await,
            "answer 2 to PUT /b/k HTTP/1.1"
        );
        let missing = "GET /b/missing HTTP/1.1\r\n\r\n";
        assert_eq!(
            exchange(&mut second, missing).await,
            "answer 3 to GET /b/missing HTTP/1.1"
        );
        assert_eq!(
            exchange(&mut first, missing).await,
            "answer 4 to GET /b/missing HTTP/1.1"
        );
        assert_eq!(seen.load(Ordering::SeqCst), 4);
        assert_eq!(mem.take(), (1, 4));
    }
}
