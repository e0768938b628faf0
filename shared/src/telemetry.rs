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

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;

/// The JSON subscriber docflow logs with, writing to `writer` (stdout in Lambda).
pub fn subscriber<W>(filter: Targets, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        // Every enclosing span too (`spans`): a line inside a nested span (the matching
        // pipeline's) still carries the batch's trace id and the record's ids.
        .with_span_list(true)
        .with_target(false)
        .with_ansi(false)
        .with_writer(writer)
        .finish()
        .with(filter)
}

/// The filter of a `RUST_LOG` value: comma-separated `level` and `target=level`
/// directives (`info`, `info,docflow=debug`, `warn,docflow::sqs=info`), the form infra/
/// documents for `log_level`. Unset or empty: `info`.
///
/// This is tracing-subscriber's `Targets`, not its `EnvFilter`: the span and field
/// directives of the latter (`[span{field=value}]=level`) cost every function the
/// regex DFA builder they are matched with (size the ingestion zip's 5 MB cannot spare), and
/// infra/ never set one. Such a value is refused, and so is anything else `Targets` does
/// not parse: the error names the value, and [`init`] logs it and falls back to `info`.
pub fn filter(rust_log: Option<&str>) -> Result<Targets, String> {
    match rust_log.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(Targets::new().with_default(LevelFilter::INFO)),
        Some(value) => value.parse::<Targets>().map_err(|e| {
            format!("RUST_LOG={value:?} is not a list of level and target=level directives: {e}")
        }),
    }
}

/// Installs the JSON subscriber; the level comes from `RUST_LOG` (default `info`).
/// Safe to call more than once (later calls are no-ops). A `RUST_LOG` [`filter`] refuses
/// falls back to `info`, and the first line logged says so.
pub fn init() {
    crate::coldstart::start();
    let rust_log = std::env::var("RUST_LOG").ok();
    let (targets, refused) = match filter(rust_log.as_deref()) {
        Ok(targets) => (targets, None),
        Err(reason) => (filter(None).expect("the default filter"), Some(reason)),
    };
    let installed =
        tracing::subscriber::set_global_default(subscriber(targets, std::io::stdout)).is_ok();
    if let (true, Some(reason)) = (installed, refused) {
        tracing::warn!(reason = %reason, "RUST_LOG ignored; logging at info");
    }
    crate::coldstart::mark("tracing");
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::filter;

    #[test]
    fn unset_or_empty_rust_log_logs_info_and_above() {
        for value in [None, Some(""), Some("  ")] {
            let targets = filter(value).unwrap();
            assert!(
                targets.would_enable("docflow::sqs", &Level::INFO),
                "{value:?}"
            );
            assert!(
                !targets.would_enable("docflow::sqs", &Level::DEBUG),
                "{value:?}"
            );
        }
    }

    #[test]
    fn a_target_directive_raises_one_module_only() {
        let targets = filter(Some("info,docflow=debug")).unwrap();
        assert!(targets.would_enable("docflow::extract::rules", &Level::DEBUG));
        assert!(!targets.would_enable("aws_smithy_runtime::client", &Level::DEBUG));
        assert!(targets.would_enable("aws_smithy_runtime::client", &Level::INFO));

        let quiet = filter(Some("warn,docflow::sqs=info")).unwrap();
        assert!(quiet.would_enable("docflow::sqs::runtime", &Level::INFO));
        assert!(!quiet.would_enable("docflow::datev", &Level::INFO));
        assert!(quiet.would_enable("docflow::datev", &Level::WARN));
    }

    #[test]
    fn span_and_field_directives_are_refused_with_the_value_named() {
        let err = filter(Some("info,[batch{request_id=1}]=debug")).unwrap_err();
        assert!(err.contains("[batch{request_id=1}]=debug"), "{err}");
        assert!(filter(Some("info,docflow=loud")).is_err());
    }
}
