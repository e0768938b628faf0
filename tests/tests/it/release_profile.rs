//! The workspace's release profile, as `make package` (cargo-lambda) builds with it.
//!
//! cargo-lambda 1.9.2 adds `-C panic=abort` to `cargo lambda build --release` unless the
//! profile names a panic strategy itself. docflow's isolation of a bad record relies on
//! unwinding: the batch runtime catches a panicking record (`sqs/runtime.rs`), the PDF text
//! layer a panicking pdf-extract (`ocr.rs`), the e-invoice reader a panicking parser
//! (`extract/einvoice.rs`). Built with abort, one malformed PDF would abort the process
//! and fail every record of its batch, again on every redelivery, until all of them sit
//! in the DLQ. `cargo test` never builds with cargo-lambda, so the profile line is
//! what this holds in place.

/// The `key = value` lines of `[profile.release]` in the workspace manifest.
fn release_profile() -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml"))
        .expect("the workspace's Cargo.toml");
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[profile.release]")
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("").trim();
            let (key, value) = line.split_once('=')?;
            Some((
                key.trim().to_owned(),
                value.trim().trim_matches('"').to_owned(),
            ))
        })
        .collect()
}

#[test]
fn the_release_profile_names_unwinding_so_that_cargo_lambda_keeps_it() {
    let profile = release_profile();
    assert!(
        profile.iter().any(|(k, _)| k == "lto"),
        "[profile.release] not found or not parsed: {profile:?}"
    );
    let panic = profile
        .iter()
        .find(|(key, _)| key == "panic")
        .map(|(_, value)| value.as_str());
    assert_eq!(
        panic,
        Some("unwind"),
        "[profile.release] must say panic = \"unwind\": without it `cargo lambda build \
         --release` builds with panic=abort and a panicking record aborts its whole batch"
    );
}
