//! AWS SDK configuration, loaded once per cold start.
//!
//! The standard chain is used everywhere: in AWS the function's role and region, locally
//! `AWS_ENDPOINT_URL` (the moto server), `AWS_REGION` and static `test`/`test` keys.

use aws_config::{BehaviorVersion, SdkConfig};

/// Loads the SDK configuration from the environment.
pub async fn load() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

/// A configuration for the local emulator at `endpoint` (tests and the CLI's local stack).
pub async fn local(endpoint: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("eu-central-1"))
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
