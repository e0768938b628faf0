//! AWS SDK configuration, built once per cold start, straight from the environment.
//!
//! In Lambda the region and the role's credentials are environment variables
//! (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), set
//! for the life of the execution environment. The SDK's default chains (region:
//! environment, profile, IMDS; credentials: environment, profile, web identity with its
//! STS client, ECS, IMDS) would find them there first, and building those chains was
//! the largest phase of a cold start (4.6-6.0 ms in `make bench`). So the
//! functions do not link `aws-config` at all (its chains and the STS client
//! were ~0.3 MB of every binary): [`load`] builds the [`SdkConfig`] from the variables
//! and fails, naming the missing one, where they are not set. The SDK clients add their
//! own defaults (standard retries, the 3.1 s connect timeout, the identity cache, the
//! Tokio sleep) as they do under `aws-config`. A machine with a profile or ECS
//! credentials (the CLI on a laptop) uses the CLI's loader, which keeps the chains.
//!
//! Read: `AWS_REGION` (else `AWS_DEFAULT_REGION`), the three credential variables,
//! `AWS_ENDPOINT_URL` (every client at one endpoint: locally, the moto server) and the
//! SDK's service-specific `AWS_ENDPOINT_URL_<SERVICE>` (e.g. `AWS_ENDPOINT_URL_TEXTRACT`,
//! a stand-in where the emulator has none), which wins over the first. Not read:
//! `AWS_USE_FIPS_ENDPOINT`, `AWS_MAX_ATTEMPTS`, `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`,
//! profiles; infra/ sets none of them.

use std::sync::LazyLock;

use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use aws_smithy_http_client::{Connector, ConnectorBuilder};
use aws_smithy_runtime_api::client::behavior_version::BehaviorVersion;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
pub use aws_types::SdkConfig;
use aws_types::region::Region;
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};
use base64::Engine as _;

/// The root certificates the SDK's TLS trusts: the Mozilla set compiled into the binary
/// (`webpki-root-certs`, the certificates of the `webpki-roots` anchors that reqwest
/// uses for the LLM and Maesn calls), PEM-encoded once per process, plus the bundle
/// `SSL_CERT_FILE` names when it is set (a private CA: a corporate proxy, a test's own
/// CA; the variable rustls-native-certs honoured before). One file read at most, never
/// a directory scan (the system store, `/etc/ssl/certs` read file by file, was 2-3 ms of
/// a cold start in `make bench`).
static TLS: LazyLock<TlsContext> = LazyLock::new(|| {
    let compiled = roots_pem();
    if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
        match std::fs::read(&path) {
            Ok(extra)
                if extra
                    .windows(27)
                    .any(|w| w == b"-----BEGIN CERTIFICATE-----") =>
            {
                let mut all = compiled.clone();
                all.push(b'\n');
                all.extend_from_slice(&extra);
                match TlsContext::builder()
                    .with_trust_store(TrustStore::empty().with_pem_certificate(all))
                    .build()
                {
                    Ok(context) => return context,
                    Err(e) => {
                        tracing::warn!(path = ?path, error = %e, "SSL_CERT_FILE is not a PEM bundle the TLS context takes; only the compiled-in roots are trusted")
                    }
                }
            }
            Ok(_) => {
                tracing::warn!(path = ?path, "SSL_CERT_FILE holds no PEM certificate; only the compiled-in roots are trusted")
            }
            Err(e) => {
                tracing::warn!(path = ?path, error = %e, "SSL_CERT_FILE is unreadable; only the compiled-in roots are trusted")
            }
        }
    }
    TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_pem_certificate(compiled))
        .build()
        .expect("a TLS context of PEM certificates")
});

/// The compiled-in root certificates as one PEM bundle (the SDK's trust store takes PEM).
fn roots_pem() -> Vec<u8> {
    let mut pem = String::with_capacity(webpki_root_certs::TLS_SERVER_ROOT_CERTS.len() * 2048);
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        pem.push_str(&base64::engine::general_purpose::STANDARD.encode(cert.as_ref()));
        pem.push_str("\n-----END CERTIFICATE-----\n");
    }
    pem.into_bytes()
}

/// The SDK's HTTPS client: hyper 1 and rustls, on ring, the crypto library reqwest and
/// sqlx use too (the workspace builds the SDK without its AWS-LC default client), with
/// the roots of [`TLS`].
///
/// The root store is built once per connector, and the SDK keeps one connector per
/// timeout settings for every client of one `SdkConfig`: so once per process. The SDK
/// also calls the connector function when each client is constructed, only to check it
/// (it throws that connector away; `validate_base_client_config`), which with the stock
/// builder parsed every root certificate again per client. That call comes without
/// settings and gets a plain connector here: nothing is parsed for it.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_with_connector_fn(|settings, components| {
        let mut builder: ConnectorBuilder = Connector::builder();
        let Some(settings) = settings else {
            return builder.build_http();
        };
        builder.set_connector_settings(Some(settings.clone()));
        if let Some(components) = components {
            builder.set_sleep_impl(components.sleep_impl());
        }
        builder
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::Ring,
            ))
            .tls_context(TLS.clone())
            .build()
    })
}

/// What [`load`] takes from the environment.
#[derive(Clone, PartialEq, Eq)]
pub struct FromEnvironment {
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION` (the order of the SDK's own region chain).
    pub region: Option<String>,
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (or the older `AWS_SECRET_KEY`),
    /// with `AWS_SESSION_TOKEN` when set: a role's temporary keys in Lambda.
    pub credentials: Option<(String, String, Option<String>)>,
    /// `AWS_ENDPOINT_URL`: every client at one endpoint (the local emulator).
    pub endpoint_url: Option<String>,
}

impl std::fmt::Debug for FromEnvironment {
    // Never the keys, not even in a test's failure message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FromEnvironment")
            .field("region", &self.region)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|(id, _, token)| {
                    (id.as_str(), "<secret>", token.as_ref().map(|_| "<token>"))
                }),
            )
            .field("endpoint_url", &self.endpoint_url)
            .finish()
    }
}

/// Why [`load`] cannot build a configuration.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "AWS_REGION (or AWS_DEFAULT_REGION) is not set: Lambda sets it; elsewhere set it, or use the CLI, which also reads profiles"
    )]
    NoRegion,
    #[error(
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set: Lambda sets them from the function's role; elsewhere set them, or use the CLI, which also reads profiles and ECS/IMDS credentials"
    )]
    NoCredentials,
}

impl FromEnvironment {
    /// Reads the variables through `var` (the process environment in [`load`]); blank
    /// values count as unset.
    pub fn read(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let credentials = set("AWS_ACCESS_KEY_ID").and_then(|id| {
            let secret = set("AWS_SECRET_ACCESS_KEY").or_else(|| set("AWS_SECRET_KEY"))?;
            Some((id, secret, set("AWS_SESSION_TOKEN")))
        });
        FromEnvironment {
            region: set("AWS_REGION").or_else(|| set("AWS_DEFAULT_REGION")),
            credentials,
            endpoint_url: set("AWS_ENDPOINT_URL"),
        }
    }

    /// Whether [`FromEnvironment::config`] can build a configuration from these.
    pub fn is_complete(&self) -> bool {
        self.region.is_some() && self.credentials.is_some()
    }

    /// The SDK configuration of these variables, with docflow's HTTPS client.
    pub fn config(&self) -> Result<SdkConfig, LoadError> {
        let region = self.region.clone().ok_or(LoadError::NoRegion)?;
        let (id, secret, token) = self.credentials.clone().ok_or(LoadError::NoCredentials)?;
        let credentials = Credentials::new(id, secret, token, None, "Environment");
        let mut builder = base()
            .region(Region::new(region))
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .service_config(ServiceEndpoints);
        builder.set_endpoint_url(self.endpoint_url.clone());
        Ok(builder.build())
    }
}

/// The service-specific endpoint variables, which each SDK client asks for when it is
/// built (`AWS_ENDPOINT_URL_<SERVICE>`, the service id upper-cased with spaces as
/// underscores, as aws-config names them). The only key the clients ask for is the
/// endpoint; without such a variable the configuration's endpoint applies.
#[derive(Debug)]
struct ServiceEndpoints;

impl LoadServiceConfig for ServiceEndpoints {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        service_variable(key, |name| std::env::var(name).ok())
    }
}

fn service_variable(
    key: ServiceConfigKey<'_>,
    var: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let name = format!(
        "{}_{}",
        key.env(),
        key.service_id().to_uppercase().replace(' ', "_")
    );
    var(&name).filter(|v| !v.trim().is_empty())
}

/// Loads the SDK configuration from the process environment (see the module docs).
pub fn load() -> Result<SdkConfig, LoadError> {
    FromEnvironment::read(|name| std::env::var(name).ok()).config()
}

fn base() -> aws_types::sdk_config::Builder {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(http_client())
}

/// A configuration for the local emulator at `endpoint` (tests and the CLI's local stack).
pub fn local(endpoint: &str) -> SdkConfig {
    base()
        .endpoint_url(endpoint)
        .region(Region::new("eu-central-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "test",
            "test",
            None,
            None,
            "docflow-local",
        )))
        .build()
}

/// An S3 client; path-style addressing when a custom endpoint is set, since
/// `<bucket>.127.0.0.1` does not resolve.
pub fn s3_client(config: &SdkConfig) -> aws_sdk_s3::Client {
    let builder =
        aws_sdk_s3::config::Builder::from(config).force_path_style(config.endpoint_url().is_some());
    aws_sdk_s3::Client::from_conf(builder.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::config::ProvideCredentials as _;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn lambda_environment_gives_region_credentials_and_endpoint() {
        let lambda = [
            ("AWS_REGION", "eu-central-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ];
        let read = FromEnvironment::read(env(&lambda));
        assert_eq!(
            read,
            FromEnvironment {
                region: Some("eu-central-1".into()),
                credentials: Some(("ASIAEXAMPLE".into(), "secret".into(), Some("token".into()))),
                endpoint_url: None,
            }
        );
        assert!(read.is_complete());
        // The keys never reach a log line through Debug.
        let debug = format!("{read:?}");
        assert!(
            !debug.contains("secret\"") && !debug.contains("token\""),
            "{debug}"
        );
        let local = FromEnvironment::read(env(&[
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_KEY", "test"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
        ]));
        assert_eq!(local.region.as_deref(), Some("eu-west-1"));
        assert_eq!(
            local.credentials,
            Some(("test".into(), "test".into(), None))
        );
        assert_eq!(local.endpoint_url.as_deref(), Some("http://127.0.0.1:4566"));
    }

    #[test]
    fn a_service_s_own_endpoint_variable_is_found_by_the_sdk_s_name_for_it() {
        let key = |service| {
            ServiceConfigKey::builder()
                .service_id(service)
                .env("AWS_ENDPOINT_URL")
                .profile("endpoint_url")
                .build()
                .unwrap()
        };
        let vars = env(&[
            ("AWS_ENDPOINT_URL_TEXTRACT", "http://127.0.0.1:9000"),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://127.0.0.1:9001"),
            ("AWS_ENDPOINT_URL_S3", " "),
        ]);
        assert_eq!(
            service_variable(key("Textract"), &vars).as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(
            service_variable(key("Secrets Manager"), &vars).as_deref(),
            Some("http://127.0.0.1:9001")
        );
        assert_eq!(service_variable(key("S3"), &vars), None, "blank is unset");
        assert_eq!(service_variable(key("SQS"), &vars), None);
    }

    #[test]
    fn without_region_or_keys_loading_fails_and_says_which() {
        let no_keys = FromEnvironment::read(env(&[("AWS_DEFAULT_REGION", "us-east-1")]));
        assert!(!no_keys.is_complete());
        assert!(matches!(no_keys.config(), Err(LoadError::NoCredentials)));
        // A key id without its secret, or blank values, are not credentials.
        let blank = FromEnvironment::read(env(&[
            ("AWS_REGION", " "),
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", ""),
        ]));
        assert_eq!(blank.region, None);
        assert_eq!(blank.credentials, None);
        assert!(matches!(blank.config(), Err(LoadError::NoRegion)));
        let message = LoadError::NoCredentials.to_string();
        assert!(message.contains("AWS_ACCESS_KEY_ID"), "{message}");
    }

    #[test]
    fn the_trust_store_holds_every_compiled_in_root_certificate_intact() {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject as _;
        let parsed: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&roots_pem())
            .collect::<Result<_, _>>()
            .expect("the SDK parses this PEM at the first connection; it must be valid");
        assert!(parsed.len() > 100, "{} roots", parsed.len());
        assert_eq!(parsed, webpki_root_certs::TLS_SERVER_ROOT_CERTS.to_vec());
        // Every one is a root rustls accepts as a trust anchor, as the SDK adds them.
        let mut store = rustls::RootCertStore::empty();
        let (valid, invalid) = store.add_parsable_certificates(parsed);
        assert_eq!(
            (valid, invalid),
            (webpki_root_certs::TLS_SERVER_ROOT_CERTS.len(), 0)
        );
    }

    #[tokio::test]
    async fn the_loaded_configuration_carries_the_environment_s_region_and_keys() {
        // The process environment of `cargo test` (.cargo/config.toml, the Makefile):
        // the local stack's region and static keys.
        let config = load().expect("the local stack's variables");
        assert_eq!(
            config.region().map(|r| r.as_ref().to_owned()),
            std::env::var("AWS_REGION").ok()
        );
        let credentials = config
            .credentials_provider()
            .expect("a credentials provider")
            .provide_credentials()
            .await
            .expect("credentials from the environment");
        assert_eq!(
            Some(credentials.access_key_id().to_owned()),
            std::env::var("AWS_ACCESS_KEY_ID").ok()
        );
        assert!(config.http_client().is_some());
        assert_eq!(
            config.endpoint_url().map(str::to_owned),
            std::env::var("AWS_ENDPOINT_URL").ok()
        );
    }

    #[tokio::test]
    async fn a_client_of_the_environment_s_configuration_reaches_the_endpoint_and_signs() {
        // Without aws-config the client's own defaults must fill in what the loader
        // did: the sleep for retries and timeouts, the identity cache, the retry
        // policy. A request against a local listener proves the client is usable and
        // signs with the environment's keys.
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 16384];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client closed before a whole request");
                head.extend_from_slice(&buf[..n]);
            }
            let body = r#"{"QueueUrls":[]}"#;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
            String::from_utf8_lossy(&head).into_owned()
        });
        let config = FromEnvironment::read(env(&[
            ("AWS_REGION", "eu-central-1"),
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "session-token"),
            ("AWS_ENDPOINT_URL", &format!("http://127.0.0.1:{port}")),
        ]))
        .config()
        .unwrap();
        let sqs = aws_sdk_sqs::Client::new(&config);
        sqs.list_queues()
            .send()
            .await
            .expect("a signed request answered");
        let head = server.await.unwrap().to_ascii_lowercase();
        assert!(
            head.contains("credential=asiaexample/") && head.contains("/eu-central-1/sqs/"),
            "{head}"
        );
        assert!(
            head.contains("x-amz-security-token: session-token"),
            "{head}"
        );
    }
}
