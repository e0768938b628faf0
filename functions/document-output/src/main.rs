//! The document-output Lambda: wiring only; everything else is in the library.

use document_output::{Deps, handler};
use lambda_runtime::{Error, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    docflow::telemetry::init();
    let deps = Deps::from_env().await?;
    docflow::coldstart::report();
    run(service_fn(|event| handler(&deps, event))).await
}
