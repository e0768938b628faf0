//! The CLI's integration tests, as one test binary (one link of the dependency graph
//! instead of eleven; docs/testing.md). Each test builds its own stack (database, queues,
//! bucket, secret, stand-ins) under fresh names, so they run beside each other.
//!
//! The soak (`tests/soak.rs`) and the secret-leak run (`tests/secrets_never_leak.rs`)
//! stay binaries of their own: each installs the process's global tracing subscriber to
//! capture every log line, which only one test per process can do.

mod demo;
mod dlq;
mod errors;
mod eval_extraction;
mod events;
mod export_corrected;
mod export_resolve;
mod extract;
mod hostile_batch;
mod metrics_out;
mod proposal_contract;
mod rds_proxy;
mod samples;
mod wiring;
mod wiring_matching;
