use lambda_runtime::{Error, run, service_fn};

fn main() -> Result<(), Error> {
    // First: in a child of the parsing sandbox this parses one file and exits.
    docflow::sandbox::init();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            docflow::telemetry::init();
            let deps = ingestion::Deps::from_env().await?;
            docflow::coldstart::report();
            run(service_fn(|event| ingestion::handler(&deps, event))).await
        })
}
