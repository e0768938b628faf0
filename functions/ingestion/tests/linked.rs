#[path = "../../../scripts/lambda_build_check.rs"]
mod lambda_build_check;

#[test]
fn linked_at_a_fixed_address_without_relative_relocations() {
    lambda_build_check::assert_fixed_address(env!("CARGO_BIN_EXE_ingestion"));
}

/// The Lambda binary is its own parsing sandbox: executed as a child
/// (`docflow::sandbox::init` first in its `main`), it reads a PDF's text layer and
/// answers, and a file that kills it fails with the reason.
#[tokio::test]
async fn the_function_binary_parses_as_its_own_sandbox_child() {
    use docflow::sandbox::{Limits, Mode, set_mode};
    assert!(set_mode(Mode::Child {
        exe: env!("CARGO_BIN_EXE_ingestion").into(),
        limits: Limits::default(),
    }));
    let pdf = include_bytes!("../../../cli/samples/mueller-rechnung-RE-2026-0815.pdf");
    let pages = docflow::ocr::text_layer(bytes::Bytes::from_static(pdf))
        .await
        .expect("read in the child");
    assert!(pages[0].contains("RE-2026-0815"), "{pages:?}");
    assert!(docflow::sandbox::check().await.is_ok());
}
