//! The parsing sandbox in tests: untrusted files parsed in child processes of
//! `sandbox-child` (this package's binary, built next to the test binaries), as the
//! functions parse them in children of their own binary (`docflow::sandbox`).

use std::path::PathBuf;

use docflow::sandbox::{Limits, Mode};

/// `sandbox-child`, next to the running test binary (`target/<profile>/deps/<test>` →
/// `target/<profile>/sandbox-child`).
pub fn child_exe() -> PathBuf {
    let me = std::env::current_exe().expect("this test binary's path");
    let profile_dir = me
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test binary lives in target/<profile>/deps");
    let exe = profile_dir.join("sandbox-child");
    assert!(
        exe.is_file(),
        "{} is missing: build it with `cargo build -p docflow-tests --bin sandbox-child` \
         (cargo builds it with this package's tests)",
        exe.display()
    );
    exe
}

/// Parses in children of `sandbox-child` with the default limits, as a function does.
/// The mode is the process's: the first call in a process wins.
pub fn enable() {
    enable_with(Limits::default());
}

/// [`enable`] with `limits`; `false` when this process had chosen its mode already.
pub fn enable_with(limits: Limits) -> bool {
    docflow::sandbox::set_mode(Mode::Child {
        exe: child_exe(),
        limits,
    })
}
