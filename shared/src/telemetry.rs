//! JSON logs and metrics for CloudWatch.
//!
//! - Logs: one JSON object per event, with the current span's fields (`span`) and every
//!   enclosing span's (`spans`). Every line of a batch carries the invocation's
//!   `xray_trace_id` and `request_id` (the batch span and each record's span have them),
//!   and a record's lines carry `message_id`, `receive_count`, `entity_id`, and
//!   `document_id` / `tenant_id` once the function knows them: one grep on a document id
//!   follows it through every function.
//! - Metrics: [`metrics`], CloudWatch Embedded Metric Format lines written by the batch
//!   runtime once per batch, each a line of its own on stdout.

pub mod metrics;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The JSON subscriber docflow logs with, writing to `writer` (stdout in Lambda).
pub fn subscriber<W>(filter: EnvFilter, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        // Every enclosing span too (`spans`): a line inside a nested span (the matching
        // pipeline's) still carries the batch's trace id and the record's ids.
        .with_span_list(true)
        .with_target(false)
        .with_ansi(false)
        .with_writer(writer)
        .finish()
}

/// Installs the JSON subscriber; the level comes from `RUST_LOG` (default `info`).
/// Safe to call more than once (later calls are no-ops).
pub fn init() {
    crate::coldstart::start();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing::subscriber::set_global_default(subscriber(filter, std::io::stdout));
    crate::coldstart::mark("tracing");
}
