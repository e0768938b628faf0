//! The sweeper Lambda: wiring only; everything else is in the library.

use lambda_runtime::{Error, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    docflow::telemetry::init();
    let deps = sweeper::Deps::from_env().await?;
    docflow::coldstart::report();
    run(service_fn(|event| sweeper::handler(&deps, event))).await
}
