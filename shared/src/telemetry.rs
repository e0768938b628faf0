//! JSON logs for CloudWatch: one object per event, with the current span's fields
//! (`message_id`, `receive_count`, `entity_id`) so each line can be traced to its record.

use tracing_subscriber::EnvFilter;

/// Installs the JSON subscriber; the level comes from `RUST_LOG` (default `info`).
/// Safe to call more than once (later calls are no-ops).
pub fn init() {
    crate::coldstart::start();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .with_ansi(false)
        .try_init();
    crate::coldstart::mark("tracing");
}
