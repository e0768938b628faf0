//! What the `docflow` commands do, as a library: the binary (`main.rs`) parses arguments
//! and calls in here, and the tests call the same functions.
//!
//! - [`wiring`]: the functions' `Deps`, built locally as their `main.rs` would;
//! - [`run`]: `local run`, the local event-source mappings and the sweeper's schedule;
//! - [`status`], [`dlq`], [`ingest`], [`seed`], [`export`]: the operations commands
//!   ([`tenants`]: which tenant they act for);
//! - [`samples`], [`maesn`], [`demo`]: the demo's documents, its Maesn stand-in, and its
//!   approval and summary steps;
//! - [`rds_proxy`]: the local stand-in for RDS Proxy in front of PostgreSQL.

pub mod demo;
pub mod dlq;
pub mod errors;
pub mod export;
pub mod ingest;
pub mod maesn;
pub mod rds_proxy;
pub mod run;
pub mod samples;
pub mod seed;
pub mod status;
pub mod tenants;
pub mod wiring;
