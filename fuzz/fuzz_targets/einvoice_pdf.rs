#![no_main]
//! `docflow_tests::fuzz_targets::einvoice_pdf` under libFuzzer.

libfuzzer_sys::fuzz_target!(init: docflow_fuzz::init(), |data: &[u8]| {
    docflow_tests::fuzz_targets::einvoice_pdf(data);
});
