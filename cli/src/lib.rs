//! What the `docflow` commands do, as a library: the binary (`main.rs`) parses arguments
//! and calls in here, and the tests call the same functions.
//!
//! - [`wiring`]: the functions' `Deps`, built locally as their `main.rs` would;
//! - [`samples`], [`maesn`]: the demo's documents and its Maesn stand-in.

pub mod maesn;
pub mod samples;
pub mod wiring;
