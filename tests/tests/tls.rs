//! The SDK's HTTPS client (`docflow::aws::http_client`: hyper 1 + rustls on ring, the
//! system's root certificates) over real TLS. moto is plain HTTP, so nothing else in
//! the suite makes a TLS handshake with the SDK; in AWS every call does. A local
//! rustls server plays Secrets Manager with a certificate from a CA of the test's own,
//! which the client trusts through `SSL_CERT_FILE` (how rustls-native-certs reads the
//! system's roots).

use std::sync::{Arc, Mutex};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    Ca {
        cert: params.self_signed(&key).unwrap(),
        key,
    }
}

/// An HTTPS server on 127.0.0.1 whose certificate (for `localhost`) `ca` signed. It
/// answers every request like Secrets Manager's `GetSecretValue` and keeps the request
/// heads it read.
async fn server(ca: &Ca) -> (u16, Arc<Mutex<Vec<String>>>) {
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                // A refused handshake ends here: the client saw the certificate.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    let n = tls.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&request[..head_end]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while request.len() < head_end + length {
                    let n = tls.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                seen.lock().unwrap().push(head);
                let body = r#"{"ARN":"arn:aws:secretsmanager:eu-central-1:123456789012:secret:docflow/tls-AbCdEf","Name":"docflow/tls","SecretString":"{\"database_url\":\"postgres://over-tls\"}","VersionId":"v1"}"#;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (port, heads)
}

async fn get_secret(port: u16) -> Result<Option<String>, String> {
    let config = docflow::aws::load().expect("the test environment's region and keys");
    let client = aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(&config)
            .endpoint_url(format!("https://localhost:{port}"))
            .retry_config(aws_sdk_secretsmanager::config::retry::RetryConfig::disabled())
            .build(),
    );
    client
        .get_secret_value()
        .secret_id("docflow/tls")
        .send()
        .await
        .map(|out| out.secret_string().map(str::to_owned))
        .map_err(|e| {
            format!(
                "{:?}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(e)
            )
        })
}

#[tokio::test]
async fn the_sdk_client_verifies_the_server_and_signs_its_requests_over_tls() {
    let trusted = ca("docflow test CA");
    let stranger = ca("somebody else's CA");
    let bundle = std::env::temp_dir().join(format!("{}.pem", docflow_tests::unique("tls-roots")));
    std::fs::write(&bundle, trusted.cert.pem()).unwrap();
    // SAFETY: the only test of this binary, before any client exists (the roots are
    // read once per process, when the first SDK client is built); nothing else reads
    // the environment concurrently.
    unsafe { std::env::set_var("SSL_CERT_FILE", &bundle) };

    let (port, heads) = server(&trusted).await;
    let secret = get_secret(port).await.expect("a TLS round trip");
    assert_eq!(
        secret.as_deref(),
        Some(r#"{"database_url":"postgres://over-tls"}"#)
    );
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0].contains("x-amz-target: secretsmanager.getsecretvalue"),
        "{}",
        heads[0]
    );
    assert!(
        heads[0].contains("authorization: aws4-hmac-sha256 credential="),
        "SigV4 over TLS: {}",
        heads[0]
    );

    // A certificate no trusted root signed: the handshake is refused, nothing is sent.
    let (port, heads) = server(&stranger).await;
    let error = get_secret(port).await.expect_err("an untrusted server");
    assert!(
        error.contains("UnknownIssuer") || error.contains("invalid peer certificate"),
        "{error}"
    );
    assert!(heads.lock().unwrap().is_empty());
    let _ = std::fs::remove_file(&bundle);
}
