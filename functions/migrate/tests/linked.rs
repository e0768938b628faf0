#[path = "../../../scripts/lambda_build_check.rs"]
mod lambda_build_check;

#[test]
fn linked_at_a_fixed_address_without_relative_relocations() {
    lambda_build_check::assert_fixed_address(env!("CARGO_BIN_EXE_migrate"));
}
