//! The matching Lambda's entry point: wiring only; the handler lives in `lib.rs`.

use lambda_runtime::{run, service_fn};
use matching::{Deps, handler};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    docflow::telemetry::init();
    let deps = Deps::from_env().await?;
    docflow::coldstart::report();
    run(service_fn(|event| handler(&deps, event))).await
}
