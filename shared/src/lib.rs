//! docflow: the shared crate of the document-processing Lambdas.
//!
//! - [`sqs`]: the SQS batch runtime every function runs on;
//! - [`retry`]: the transient/permanent taxonomy and the retry schedules;
//! - [`settings`], [`secrets`], [`db`], [`aws`], [`telemetry`]: cold-start wiring;
//! - [`ids`]: message bodies parsed into ids;
//! - [`bootstrap`]: the cold-start wiring every `main.rs` calls; [`coldstart`]: its timing;
//! - [`llm`], [`matching`], [`notify`], [`output`], [`datev`]: domain logic and adapters.
//!
//! Only what the functions run lives here. The development tooling (the local stack and
//! event-source mapping, the extraction and matching evaluations) is the `docflow-dev`
//! crate, which the CLI, the tests and the bench use and no function links.

pub mod aws;
pub mod bootstrap;
pub mod coldstart;
pub mod datev;
pub mod db;
pub mod document;
pub mod embeddings;
pub mod extract;
pub mod ids;
pub mod llm;
pub mod matching;
pub mod notify;
pub mod ocr;
pub mod output;
pub mod retry;
pub mod sandbox;
pub mod secrets;
pub mod settings;
pub mod sqs;
pub mod telemetry;

pub use retry::{Classify, Failure, RetryClass};
pub use sqs::{BatchConfig, BatchRuntime, DiscardKind, Message, Outcome};
