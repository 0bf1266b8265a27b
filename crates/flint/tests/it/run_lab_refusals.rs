//! `flint run`, `flint lab` and `flint compare` refuse what they would fail on only at the end
//! before anything starts (exit 2, one line, nothing measured): a result file that cannot be
//! written, `run --http 3` without `--tls`; and read every duration by one rule (a bare number
//! is seconds), so that a duration that is taken is seen by the refusal that comes after it.

use crate::common::{flint, run_bounded};
use std::process::Output;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Exit 2, `says` on stderr, and no sign of a start.
fn refused(out: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(says), "expected `{says}` in: {stderr}");
    for started in [
        "measurements of",
        "served by flint serve",
        "round 1",
        "has no unit",
    ] {
        assert!(!stderr.contains(started), "`{started}`: {stderr}");
    }
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_lab_result_that_cannot_be_written_is_refused_before_the_experiment() {
    for (flag, path) in [
        ("--json", "/nonexistent/dir/x.json"),
        ("--html", "/proc/x.html"),
    ] {
        // A bare `-d 1` and `--warmup 1` are taken (seconds): the refusal is the file's.
        let out = run_bounded(
            flint().args([
                "lab",
                "sizes",
                "--servers",
                "flint",
                "--no-profile",
                "-d",
                "1",
                "--warmup",
                "1",
                flag,
                path,
            ]),
            LIMIT,
        );
        refused(&out, &format!("{flag} {path}: cannot write there"));
    }
}

#[test]
fn a_compare_result_that_cannot_be_written_is_refused_before_the_first_round() {
    let out = run_bounded(
        flint().args([
            "compare",
            "--target",
            "a=http://127.0.0.1:9/",
            "--target",
            "b=http://127.0.0.1:9/",
            "-d",
            "1",
            "--warmup",
            "1",
            "--serve-timeout",
            "5",
            "--json",
            "/nonexistent/dir/cmp.json",
        ]),
        LIMIT,
    );
    refused(&out, "--json /nonexistent/dir/cmp.json: cannot write there");
}

#[test]
fn run_with_http3_and_no_tls_is_refused_naming_tls_before_the_server_starts() {
    let out = run_bounded(flint().args(["run", "--http", "3", "-d", "1"]), LIMIT);
    refused(&out, "--http 3 needs --tls");
}

#[test]
fn every_duration_of_run_and_bench_takes_a_bare_number_as_seconds() {
    let bare = [
        "-d",
        "1",
        "--warmup",
        "1",
        "--timeout",
        "2",
        "--connect-timeout",
        "2",
    ];
    let out = run_bounded(
        flint()
            .arg("run")
            .args(bare)
            .args(["--json", "/nonexistent/dir/run.json"]),
        LIMIT,
    );
    refused(&out, "--json /nonexistent/dir/run.json: cannot write there");
    let out = run_bounded(
        flint()
            .args(["bench", "http://127.0.0.1:9/"])
            .args(bare)
            .args(["--think", "1", "--json", "/nonexistent/dir/b.json"]),
        LIMIT,
    );
    refused(&out, "--json /nonexistent/dir/b.json: cannot write there");
}

#[test]
fn a_bare_round_trip_is_refused_with_milliseconds_as_the_hint() {
    let out = run_bounded(flint().args(["lab", "syscalls", "--rtt", "0,10"]), LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("write e.g. `10ms`"), "{stderr}");
}

#[test]
fn a_timeout_of_zero_is_refused_bare_or_with_its_unit() {
    // hey reads `-t 0` as no timeout at all; flint has no such thing, so 0 is a mistake.
    for zero in ["0", "0s"] {
        for flag in ["--timeout", "--connect-timeout"] {
            let out = run_bounded(
                flint().args(["bench", "http://127.0.0.1:9/", "-d", "1", flag, zero]),
                LIMIT,
            );
            refused(&out, "must be longer than 0");
            assert!(String::from_utf8_lossy(&out.stderr).contains(flag));
        }
        let out = run_bounded(
            flint().args([
                "compare",
                "--target",
                "a=http://127.0.0.1:9/",
                "--target",
                "b=http://127.0.0.1:9/",
                "--serve-timeout",
                zero,
            ]),
            LIMIT,
        );
        refused(&out, "must be longer than 0");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--serve-timeout"));
    }
}

#[test]
fn a_flag_of_another_experiment_is_refused_naming_the_experiments_it_belongs_to() {
    for (experiment, flag, value, belongs) in [
        ("sizes", "--rtt", "10ms", "lab syscalls or lab all"),
        ("sizes", "--modes", "h2", "lab syscalls or lab all"),
        ("dynamic", "--rtt", "0", "lab syscalls or lab all"),
        ("syscalls", "--tests", "db", "lab dynamic or lab all"),
        ("tls", "--db", "postgres", "lab dynamic or lab all"),
        ("digest", "--db", "sqlite", "lab dynamic or lab all"),
        ("sizes", "--deployments", "cgi", "lab dynamic or lab all"),
    ] {
        let out = run_bounded(
            flint().args([
                "lab",
                experiment,
                "--servers",
                "flint",
                "--no-profile",
                flag,
                value,
            ]),
            LIMIT,
        );
        refused(
            &out,
            &format!("lab {experiment} does not take {flag}: it is for {belongs}"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    // In its own experiment, and in `all`, the flag is taken: the refusal that comes is the
    // result file's.
    for (experiment, flag, value) in [
        ("syscalls", "--rtt", "10ms"),
        ("syscalls", "--modes", "h2"),
        ("dynamic", "--tests", "db"),
        ("dynamic", "--db", "postgres"),
        ("dynamic", "--deployments", "cgi"),
        ("all", "--rtt", "10ms"),
        ("all", "--db", "postgres"),
    ] {
        let out = run_bounded(
            flint().args([
                "lab",
                experiment,
                "--servers",
                "flint",
                flag,
                value,
                "--json",
                "/nonexistent/dir/lab.json",
            ]),
            LIMIT,
        );
        refused(&out, "--json /nonexistent/dir/lab.json: cannot write there");
    }
}
