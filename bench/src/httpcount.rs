//! A counting hook on the HTTP wire: a TCP proxy in front of an HTTP/1.1 server (moto, a
//! stand-in) that reads each request's head, logs what it is, and forwards the bytes
//! unchanged (the body by its `Content-Length` or its chunks; answers are copied back
//! as they come). docflow's SDK clients and the Python peer's boto3 and urllib3 go
//! through the same proxy, so both sides are counted the same way, from the wire.
//!
//! An AWS request is named by the service of its SigV4 credential scope
//! (`Credential=<key>/<date>/<region>/<service>/aws4_request`) and its operation
//! (`X-Amz-Target` of the JSON protocols: SQS, Secrets Manager; S3 by method); anything
//! unsigned is `http`.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One request: its service (`sqs`, `s3`, `secretsmanager`, …, or `http`) and operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub service: String,
    pub operation: String,
}

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Call>>>);

impl Log {
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

pub type Proxy = crate::proxy::Proxy<Log>;

impl Proxy {
    /// Listens on `port` and forwards every connection to `upstream` (`host:port`).
    pub async fn start(port: u16, upstream: String) -> anyhow::Result<Self> {
        crate::proxy::Proxy::listen(port, upstream, Log::default(), pipe).await
    }

    /// `url` (`http://host:port…`) with its authority replaced by this proxy's.
    pub fn url_for(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
        let path = rest.find('/').map_or("", |i| &rest[i..]);
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }
}

/// The `host:port` of an `http://host:port/…` URL.
pub fn authority(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/')
        .next()
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
}

fn name(method: &str, headers: &[(String, String)]) -> Call {
    let header = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.as_str())
    };
    let service = header("authorization")
        .and_then(|auth| auth.split("Credential=").nth(1))
        .and_then(|scope| scope.split(['/', ',']).nth(3))
        .map(str::to_owned);
    match service {
        Some(service) => {
            let operation = header("x-amz-target")
                .and_then(|t| t.rsplit('.').next())
                .map_or_else(|| method.to_owned(), str::to_owned);
            Call { service, operation }
        }
        None => Call {
            service: "http".into(),
            operation: method.to_owned(),
        },
    }
}

async fn pipe(client: TcpStream, server: TcpStream, log: Log) -> std::io::Result<()> {
    let (client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let down =
        tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
    let mut reader = BufReader::new(client_read);
    let result = async {
        loop {
            let mut head = Vec::new();
            loop {
                let n = reader.read_until(b'\n', &mut head).await?;
                if n == 0 {
                    return Ok(());
                }
                if head == b"\r\n" {
                    // Stray line ending between requests.
                    head.clear();
                    continue;
                }
                if head.ends_with(b"\r\n\r\n") {
                    break;
                }
            }
            server_write.write_all(&head).await?;
            let text = String::from_utf8_lossy(&head);
            let mut lines = text.split("\r\n");
            let method = lines
                .next()
                .and_then(|l| l.split(' ').next())
                .unwrap_or("")
                .to_owned();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .collect();
            log.0.lock().unwrap().push(name(&method, &headers));
            let value = |n: &str| {
                headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(n))
                    .map(|(_, v)| v.to_ascii_lowercase())
            };
            if value("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
                loop {
                    let mut line = Vec::new();
                    reader.read_until(b'\n', &mut line).await?;
                    server_write.write_all(&line).await?;
                    let size = String::from_utf8_lossy(&line);
                    let size = size.trim().split(';').next().unwrap_or("0");
                    let size = u64::from_str_radix(size, 16).unwrap_or(0);
                    if size == 0 {
                        // Trailers, up to the empty line.
                        loop {
                            let mut trailer = Vec::new();
                            if reader.read_until(b'\n', &mut trailer).await? == 0 {
                                return Ok(());
                            }
                            server_write.write_all(&trailer).await?;
                            if trailer == b"\r\n" {
                                break;
                            }
                        }
                        break;
                    }
                    // The chunk and its CRLF.
                    let mut chunk = (&mut reader).take(size + 2);
                    tokio::io::copy(&mut chunk, &mut server_write).await?;
                }
            } else if let Some(n) = value("content-length").and_then(|v| v.parse::<u64>().ok()) {
                let mut body = (&mut reader).take(n);
                tokio::io::copy(&mut body, &mut server_write).await?;
            }
        }
    }
    .await;
    // The answer to the last request may still be on its way: let it finish.
    let _ = server_write.shutdown().await;
    let _ = down.await;
    result
}

/// Counts by key, in the order first seen.
pub type Tally = Vec<(String, usize)>;

/// Counts by service, and by `service operation`.
pub fn tally(calls: &[Call]) -> (Tally, Tally) {
    let mut services: Vec<(String, usize)> = Vec::new();
    let mut operations: Vec<(String, usize)> = Vec::new();
    for c in calls {
        bump(&mut services, &c.service);
        bump(&mut operations, &format!("{} {}", c.service, c.operation));
    }
    (services, operations)
}

fn bump(list: &mut Vec<(String, usize)>, key: &str) {
    match list.iter_mut().find(|(k, _)| k == key) {
        Some((_, n)) => *n += 1,
        None => list.push((key.to_owned(), 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_named_by_their_signing_scope_and_target() {
        let h = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        let sqs = name(
            "POST",
            &h(&[
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=test/20261127/eu-central-1/sqs/aws4_request, SignedHeaders=host, Signature=x",
                ),
                ("X-Amz-Target", "AmazonSQS.SendMessageBatch"),
            ]),
        );
        assert_eq!(
            sqs,
            Call {
                service: "sqs".into(),
                operation: "SendMessageBatch".into()
            }
        );
        let s3 = name(
            "GET",
            &h(&[(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=test/20261127/eu-central-1/s3/aws4_request,SignedHeaders=host,Signature=x",
            )]),
        );
        assert_eq!((s3.service.as_str(), s3.operation.as_str()), ("s3", "GET"));
        let plain = name("POST", &h(&[("Host", "127.0.0.1")]));
        assert_eq!(plain.service, "http");
    }
}
