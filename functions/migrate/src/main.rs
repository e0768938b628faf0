//! The migrate Lambda: wiring only; everything else is in the library.

use lambda_runtime::{Error, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    docflow::telemetry::init();
    let deps = migrate::Deps::from_env().await?;
    run(service_fn(|event| migrate::handler(&deps, event))).await
}
