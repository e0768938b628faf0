//! The workspace's integration tests, as one test binary: every module below is what
//! used to be a binary of its own. One binary links the dependency graph once instead of
//! thirty times (docs/testing.md). The tests never relied on running alone: each uses its
//! own database (`#[sqlx::test]` or a uniquely named one), its own queues, buckets and
//! secrets (`docflow_tests::unique`) and its own stand-in servers, so they run beside each
//! other in one process (`cargo test`) or one process each (`cargo nextest`, `make test`).
//!
//! Two tests stay binaries of their own because they change their process:
//! `tests/tls.rs` sets `SSL_CERT_FILE`, and `tests/bad_input.rs` reads the process's peak
//! resident memory (`VmHWM`), which another test's allocations would raise.

mod infra_contract;
mod matching_support;

mod batch_calls;
mod batch_runtime;
mod batch_runtime_properties;
mod cancel_safe_tx;
mod corrected_invoices;
mod database_roles;
mod document_output;
mod document_output_enqueue;
mod document_output_hostile;
mod extraction_eval;
mod fuzz_properties;
mod iam_calls;
mod ingestion;
mod ingestion_batch;
mod ingestion_einvoice;
mod ingestion_ocr;
mod local_run;
mod matching_candidates;
mod matching_eval;
mod matching_function;
mod matching_pipeline;
mod matching_semantic;
mod metrics;
mod notify;
mod pool_round_trips;
mod release_profile;
mod sandbox;
mod schema;
mod schema_datev_audit;
mod secrets;
mod sweeper;
mod vendored_crc_fast;
