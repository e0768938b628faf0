//! The anchor of `make bench`'s cold-start ratios: lambda_runtime's hello world (echoes
//! its event), built with the workspace's release profile and the same lambda_runtime
//! features as the functions. Never deployed.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(event.payload)
    }))
    .await
}
