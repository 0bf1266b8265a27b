//! System calls per request by tier, held against a known program: a CGI script whose system
//! calls strace counts apart, run alone. The application tier of flint serve's CGI deployment
//! (flint serve's cgroup less its own threads, traced with perf) must count per request what
//! strace counts for one run of the program. Needs root, as the lab's cgroups and perf do.

use crate::common;

use common::run_lab;
use lab_experiments::{Deployment, Experiment, LabOptions, ResultRow, Status};
use lab_peers::PeerKind;
use lab_profile::Method;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use test_support::flint_bin;

/// CGI requests in each run: the untraced one and the traced one.
const PAGES: u64 = 30;

/// How far the tier's count per request may be from strace's count of the program alone: the
/// tier also holds the spawned child's few calls before its exec (posix_spawn's signal resets,
/// its descriptors), which a program started by strace does not make.
const TOLERANCE: f64 = 0.05;

/// The known program as a CGI script: 2,000 one-byte reads and writes by `dd`, then the
/// plaintext answer; run otherwise (`init`, `fastcgi`), it is the real application.
fn known_program(dir: &Path, real: &Path) -> std::path::PathBuf {
    let app = dir.join("flint-app");
    let script = format!(
        "#!/bin/sh\n\
         if [ -n \"$GATEWAY_INTERFACE\" ]; then\n\
         /bin/dd if=/dev/zero of=/dev/null bs=1 count=2000 2>/dev/null\n\
         printf 'Content-Type: text/plain\\r\\n\\r\\nHello, World!'\n\
         exit 0\n\
         fi\n\
         exec {} \"$@\"\n",
        real.display()
    );
    std::fs::write(&app, script).unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    app
}

/// The program's system calls run alone as a CGI program, counted by `strace -f -c`.
fn strace_alone(program: &Path, dir: &Path) -> u64 {
    let out = dir.join("strace.txt");
    let status = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .arg(program)
        .env_clear()
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("REQUEST_METHOD", "GET")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("strace (apt-get install -y strace)");
    assert!(status.success(), "strace {}: {status}", program.display());
    let rows = lab_profile::parse_strace_summary(&std::fs::read_to_string(&out).unwrap())
        .expect("strace's summary");
    rows.iter().map(|r| r.calls).sum()
}

fn tier<'a>(r: &'a ResultRow, name: &str) -> &'a results::TierCpu {
    (r.tiers.iter().flatten())
        .find(|t| t.tier == name)
        .unwrap_or_else(|| panic!("no {name} tier in {:?}", r.tiers))
}

#[test]
fn the_cgi_tier_counts_per_request_what_strace_counts_of_the_program_alone() {
    let real = flint_bin().with_file_name("flint-app");
    assert!(real.is_file(), "{}: cargo build -p lab-app", real.display());
    let dir = tempfile::tempdir().unwrap();
    let app = known_program(dir.path(), &real);
    let alone = strace_alone(&app, dir.path());
    assert!(alone > 4000, "2,000 reads and writes and more: {alone}");

    let mut opts = LabOptions::new(Some(flint_bin()));
    opts.app_bin = Some(app);
    opts.pages = Some(PAGES);
    opts.warmup = Duration::ZERO;
    opts.servers = vec![PeerKind::Flint];
    opts.deployments = vec![Deployment::Cgi];
    opts.tests = vec!["plaintext".into()];
    opts.profile = true;
    opts.method = Some(Method::Perf);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert_eq!(report.servers[0].status, Status::Ok, "{progress}");
    let row = (report.results.iter())
        .find(|r| r.deployment.as_deref() == Some("cgi"))
        .unwrap_or_else(|| panic!("no cgi row: {text}\n{progress}"));
    assert!(row.unavailable.is_none(), "{:?}", row.unavailable);
    assert_eq!(row.traced_requests, Some(PAGES), "{text}\n{progress}");
    assert_eq!(row.profile_method.as_deref(), Some("perf"));

    let app_tier = tier(row, "app").syscalls_per_request;
    let app_tier = app_tier.unwrap_or_else(|| panic!("no app syscalls: {text}\n{progress}"));
    let off = (app_tier - alone as f64).abs() / alone as f64;
    assert!(
        off <= TOLERANCE,
        "app tier {app_tier:.1} calls/request, strace alone {alone}: {:.1}% off\n{text}",
        off * 100.0
    );
    // flint serve's own side of a CGI request: accepting, spawning, relaying, reaping.
    let web = tier(row, "web").syscalls_per_request.expect("web syscalls");
    assert!(web > 5.0 && web < alone as f64, "web {web}\n{text}");
    let sum = row.syscalls_per_request.expect("the row's syscalls");
    assert!(
        (sum - web - app_tier).abs() < 1e-6,
        "{sum} = {web} + {app_tier}"
    );
    // The truss table by tier, with the program's own calls in the app column: dd's reads, but
    // for the few perf's recording may have lost (its `(unattributed)` row).
    assert!(text.contains("system calls per request by tier"), "{text}");
    // A recording starved on a loaded machine loses events into `(unattributed)`, dd's reads
    // among them: those count here, as nothing else makes thousands of calls in this tier.
    let calls = |name: &str| {
        (tier(row, "app").syscalls.iter().flatten())
            .find(|s| s.name == name)
            .map_or(0, |s| s.calls)
    };
    let (read, lost) = (calls("read"), calls("(unattributed)"));
    let expected = 2000 * PAGES;
    assert!(
        read + lost >= expected - expected / 20,
        "dd's reads: {read}, unattributed {lost}\n{text}"
    );
}
