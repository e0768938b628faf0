use lambda_runtime::{Error, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    docflow::telemetry::init();
    let deps = ingestion::Deps::from_env().await?;
    docflow::coldstart::report();
    run(service_fn(|event| ingestion::handler(&deps, event))).await
}
