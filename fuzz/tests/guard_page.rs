//! The guard page really faults: a read one byte past a guarded input kills the process with
//! SIGSEGV. Run in a child process (this test binary again), since the fault cannot be caught.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use flint_fuzz::guard::{guard_address, with_guarded};

const PROBE: &str = "FLINT_FUZZ_GUARD_PROBE";

#[test]
fn guarded_input_is_a_copy_that_ends_at_the_guard_page() {
    let end = guard_address();
    with_guarded(b"GET / HTTP/1.1\r\n", |buf| {
        assert_eq!(buf, b"GET / HTTP/1.1\r\n");
        assert_eq!(buf.as_ptr_range().end, end);
    });
    with_guarded(b"", |buf| assert!(buf.is_empty()));
}

#[test]
fn reading_past_a_guarded_input_faults() {
    if std::env::var_os(PROBE).is_some() {
        with_guarded(b"abc", |buf| {
            // SAFETY: deliberately unsound: this reads the byte after the slice, which the guard
            // page must turn into a SIGSEGV (only in the child process the test below starts).
            let past = unsafe { std::ptr::read_volatile(buf.as_ptr().add(buf.len())) };
            println!("read {past} past the end without a fault");
        });
        return;
    }
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "reading_past_a_guarded_input_faults",
            "--nocapture",
        ])
        .env(PROBE, "1")
        .output()
        .expect("running the probe");
    assert_eq!(
        status.status.signal(),
        Some(rustix::process::Signal::SEGV.as_raw()),
        "the read past the end did not fault: {status:?}"
    );
}
