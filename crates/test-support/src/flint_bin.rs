//! The `flint` executable, for tests of library crates that start it as a process (the lab's
//! flint peer): such a test has no `CARGO_BIN_EXE_flint`, which cargo sets only for the tests of
//! the crate that owns the binary.

use std::path::{Path, PathBuf};

/// FLINT_BIN, or the one cargo built next to the running test (`target/<profile>/flint`;
/// `cargo test --workspace` builds it before running any test). Panics, saying how to build it,
/// when there is none.
pub fn flint_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("FLINT_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-HASH -> target/<profile>/flint
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|p| p.join("flint"))
        .expect("target dir");
    assert!(
        bin.is_file(),
        "{} not found: build it first (cargo build -p flint, or cargo test --workspace) \
         or set FLINT_BIN",
        bin.display()
    );
    bin
}
