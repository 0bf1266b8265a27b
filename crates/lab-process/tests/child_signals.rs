//! A child of [`Group::spawn`] starts with default signal dispositions even when flint ignores
//! SIGINT (as under a shell's `&`): its group's SIGINT then ends it, no SIGKILL needed.
//!
//! This binary holds this one test: it ignores SIGINT process-wide, which no other test of the
//! crate should run under.

use lab_process::{Group, StopPolicy};
use nix::sys::signal::{signal, SigHandler, Signal};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

/// A signal mask line (`SigIgn`, `SigBlk`) of /proc/PID/status, as bits.
fn status_mask(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|l| l.strip_prefix(':')))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    u64::from_str_radix(line.trim(), 16).expect("a hex mask")
}

/// Signals 1 to 31, as bits of a /proc mask.
const STANDARD: u64 = (1 << 31) - 1;

fn bit(signal: Signal) -> u64 {
    1 << (signal as i32 - 1)
}

#[test]
fn a_child_gets_default_sigint_when_flint_ignores_it() {
    // SAFETY: SIG_IGN installs no handler code; this binary's one test is the only code that
    // depends on SIGINT's disposition here.
    unsafe { signal(Signal::SIGINT, SigHandler::SigIgn) }.expect("ignore SIGINT");
    let own = std::process::id();
    assert_ne!(
        status_mask(own, "SigIgn") & bit(Signal::SIGINT),
        0,
        "the premise: we ignore it"
    );

    let mut group = Group::spawn(
        Command::new("sleep").arg("60"),
        None,
        StopPolicy::interrupt(Duration::from_secs(30)),
    )
    .expect("spawn sleep");
    // spawn returns once the child has exec'd, so /proc shows sleep's dispositions.
    // The standard signals (1 to 31) only: the real-time ones are left as inherited (glibc keeps
    // 32 and 33 for itself, and whatever started this test may ignore them).
    let ignored = status_mask(group.pid(), "SigIgn") & STANDARD;
    assert_eq!(ignored, 0, "the child ignores signals (mask {ignored:#x})");
    let blocked = status_mask(group.pid(), "SigBlk");
    assert_eq!(blocked, 0, "the child blocks signals (mask {blocked:#x})");

    let stopped = group.stop();
    assert!(
        !stopped.killed,
        "SIGINT did not end the child: SIGKILL had to"
    );
    let status = stopped.status.expect("the child was reaped");
    assert_eq!(
        status.signal(),
        Some(Signal::SIGINT as i32),
        "ended by {status:?}"
    );
}
