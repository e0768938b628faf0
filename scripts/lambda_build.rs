//! The build script of every Lambda binary (functions/*, bench/hello): link it as a
//! fixed-address (non-PIE) executable.
//!
//! A position-independent executable carries a relative relocation for every pointer in
//! its static data (ingestion: 40,721, `.rela.dyn` ~1 MB), and the dynamic loader
//! applies them all at every cold start, writing to, and so copying, each page of
//! `.data.rel.ro`. Linked non-PIE, the linker resolves them once: ingestion's cold start
//! 5.67 → 4.25 ms (docs/performance.md, "How it measures"); its zip only
//! 52 KB smaller, the relocation table compressing well. The code stays compiled
//! position-independent, so only the link changes: for these binaries alone, never
//! their tests, the libraries, build scripts or proc macros (a `-no-pie` given to every
//! link, or `-C relocation-model=static`, breaks the crates that also build a shared
//! object, e.g. crc-fast under the S3 SDK).
//!
//! The cost: the executable's own code and data sit at a fixed address; the C library,
//! the stack, the heap and every mapping stay randomised. scripts/lambda_build_check.rs
//! checks the result, and scripts/package.sh checks every zip it builds.
fn main() {
    println!("cargo::rustc-link-arg-bins=-no-pie");
}
