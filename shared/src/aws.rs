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

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig};
use aws_smithy_http_client::tls;
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// The SDK's HTTPS client: hyper 1 and rustls, on ring, the crypto library reqwest and
/// sqlx use too (the workspace builds the SDK without its AWS-LC default client). Root
/// certificates are the system's, read on the first TLS connection.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
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
