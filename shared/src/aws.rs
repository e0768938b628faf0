//! AWS SDK configuration, loaded once per cold start.
//!
//! In Lambda the region and the role's credentials are environment variables
//! (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), and
//! the SDK's default chains would find them there first. Building those chains (region:
//! environment, profile, IMDS; credentials: environment, profile, web identity, ECS,
//! IMDS) is what made `aws_config` the largest phase of a cold start (4.6-6.0 ms in
//! `make bench`, issue 14), so when the environment has them they are given directly,
//! and the chains are only built when it has not (a laptop with a profile, a container
//! with ECS credentials). Locally `AWS_ENDPOINT_URL` points every client at the moto
//! server, with static `test`/`test` keys.

use std::sync::LazyLock;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig};
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use aws_smithy_http_client::{Connector, ConnectorBuilder};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use base64::Engine as _;

/// The root certificates the SDK's TLS trusts: the Mozilla set compiled into the binary
/// (`webpki-root-certs`, the certificates of the `webpki-roots` anchors that reqwest
/// uses for the LLM and Maesn calls), PEM-encoded once per process, plus the bundle
/// `SSL_CERT_FILE` names when it is set (a private CA: a corporate proxy, a test's own
/// CA; the variable rustls-native-certs honoured before). One file read at most, never
/// a directory scan (the system store, `/etc/ssl/certs` read file by file, was 2-3 ms of
/// a cold start in `make bench`, issue 27).
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

/// What [`load`] takes from the environment instead of building the default chains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromEnvironment {
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION` (the order of the SDK's own region chain).
    pub region: Option<String>,
    /// Whether the environment holds static credentials (an access key id and a secret
    /// key): the first provider of the default chain would answer with them.
    pub credentials: bool,
}

impl FromEnvironment {
    /// Reads the variables through `var` (the process environment in [`load`]).
    pub fn read(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        FromEnvironment {
            region: set("AWS_REGION").or_else(|| set("AWS_DEFAULT_REGION")),
            credentials: set("AWS_ACCESS_KEY_ID").is_some()
                && (set("AWS_SECRET_ACCESS_KEY").is_some() || set("AWS_SECRET_KEY").is_some()),
        }
    }

    fn apply(&self, mut loader: ConfigLoader) -> ConfigLoader {
        if let Some(region) = &self.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if self.credentials {
            // Reads the variables on every call, as the chain's first provider does; the
            // SDK's identity cache sits in front of it either way.
            loader = loader.credentials_provider(EnvironmentVariableCredentialsProvider::new());
        }
        loader
    }
}

/// Loads the SDK configuration from the environment (see the module docs).
pub async fn load() -> SdkConfig {
    let env = FromEnvironment::read(|name| std::env::var(name).ok());
    env.apply(defaults()).load().await
}

fn defaults() -> ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest()).http_client(http_client())
}

/// A configuration for the local emulator at `endpoint` (tests and the CLI's local stack).
pub async fn local(endpoint: &str) -> SdkConfig {
    defaults()
        .endpoint_url(endpoint)
        .region(Region::new("eu-central-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test",
            "test",
            None,
            None,
            "docflow-local",
        ))
        .load()
        .await
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
    fn lambda_environment_gives_region_and_credentials_directly() {
        let lambda = [
            ("AWS_REGION", "eu-central-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ];
        assert_eq!(
            FromEnvironment::read(env(&lambda)),
            FromEnvironment {
                region: Some("eu-central-1".into()),
                credentials: true
            }
        );
    }

    #[test]
    fn without_the_variables_the_default_chains_are_kept() {
        assert_eq!(
            FromEnvironment::read(env(&[("AWS_DEFAULT_REGION", "us-east-1")])),
            FromEnvironment {
                region: Some("us-east-1".into()),
                credentials: false
            }
        );
        // A key id without its secret (or blank values) is not static credentials: the
        // chain decides, as it would have.
        assert_eq!(
            FromEnvironment::read(env(&[
                ("AWS_REGION", " "),
                ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
                ("AWS_SECRET_ACCESS_KEY", "")
            ])),
            FromEnvironment {
                region: None,
                credentials: false
            }
        );
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
        let config = load().await;
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
    }
}
