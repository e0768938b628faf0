//! docflow-dev: the development tooling around the functions, for the CLI, the tests and
//! the bench. No function crate links it; the production crate is `docflow`.
//!
//! - [`local`]: the local stack (queues, bucket, secret, database roles) and the local
//!   event-source mapping and runner: Lambda's SQS semantics on the local emulator;
//! - [`eval`]: the labelled evaluations of extraction (`docflow eval extraction`) and
//!   matching (`docflow eval matching`).

pub mod eval;
pub mod local;
