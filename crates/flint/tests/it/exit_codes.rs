//! Exit codes, one test or more each, and the one line bad input gets before anything starts:
//! 0 completed, 1 the run failed, 2 bad usage or input, 3 a threshold crossed (130, interrupted,
//! is tested with Ctrl-C in cli.rs).

use crate::common;

use common::{counting_responder, flint, run_bounded};
use std::process::{Command, Output};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `flint bench URL/x ARGS` against a local responder, bounded.
fn bench_against_responder(args: &[&str]) -> Output {
    let (addr, _) = counting_responder();
    run_bounded(
        flint()
            .args(["bench", &format!("http://{addr}/x"), "-c", "2", "-q"])
            .args(args),
        LIMIT,
    )
}

/// Bad input: exit 2, one line on stderr naming what is wrong, nothing on stdout (no run).
fn refused(cmd: &mut Command, says: &str) {
    let out = run_bounded(cmd, LIMIT);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(says), "expected `{says}` in: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "a run started: {}",
        text(&out.stdout)
    );
}

fn bench(args: &[&str]) -> Command {
    let mut cmd = flint();
    // Port 9 (discard) is never reached: every case here is refused before a connect.
    cmd.args(["bench", "http://127.0.0.1:9/x"]).args(args);
    cmd
}

#[test]
fn a_completed_run_exits_0_and_its_thresholds_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = bench_against_responder(&[
        "-n",
        "50",
        "--report",
        "none",
        "--threshold",
        "error_rate<1%",
        "--threshold",
        "p99 < 10s",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("Thresholds: 2 of 2 held"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let t = doc["thresholds"]
        .as_array()
        .expect("thresholds in the JSON");
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["expression"], "error_rate<1%");
    assert_eq!(t[0]["value"], 0.0);
    assert_eq!(t[1]["metric"], "p99(response)");
    assert!(t.iter().all(|v| v["pass"] == true), "{t:?}");
}

#[test]
fn a_crossed_threshold_exits_3_and_says_which() {
    let out = bench_against_responder(&[
        "-n",
        "50",
        "--report",
        "none",
        "--threshold",
        "rps>1000000000",
        "--threshold",
        "errors==0",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(stdout.contains("Thresholds: 1 of 2 held"), "{stdout}");
    let failed = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("FAIL"))
        .expect("a FAIL line");
    assert!(failed.contains("rps>1000000000"), "{failed}");
}

#[test]
fn a_run_where_no_response_succeeded_exits_1() {
    // A port bound, never listening, for the test's life: every connect is refused.
    let refused = common::refused_addr();
    let port = refused.addr.port();
    let out = run_bounded(
        flint().args([
            "bench",
            &format!("http://127.0.0.1:{port}/x"),
            "-c",
            "2",
            "-d",
            "300ms",
            "-q",
            "--report",
            "summary",
        ]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not one response succeeded (connect_refused"),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("Errors:"),
        "the run is still reported"
    );
}

#[test]
fn bad_options_exit_2_before_anything_starts() {
    refused(&mut bench(&["-c", "0"]), "must be at least 1");
    refused(&mut bench(&["-n", "0"]), "must be at least 1");
    refused(&mut bench(&["-d", "0s"]), "must be longer than 0");
    refused(&mut bench(&["--rate=0"]), "is not a rate");
    refused(&mut bench(&["--rate", "NaN"]), "is not a rate");
    refused(
        &mut bench(&["--think", "1s", "--rate", "10"]),
        "cannot be used with",
    );
    refused(
        &mut bench(&["--threshold", "p99<50parsecs"]),
        "threshold `p99<50parsecs`: unknown unit `parsecs`",
    );
    refused(
        &mut bench(&["--json", "-", "--log", "-"]),
        "--json and --log all write to stdout",
    );
    refused(flint().args(["bench"]), "give the server's URL");
}

#[test]
fn a_profile_pid_of_no_process_is_refused_before_the_run() {
    // Above the kernel's pid_max (4194304 at most), so no process has it.
    refused(
        &mut bench(&["-d", "30s", "--profile", "99999999"]),
        "--profile 99999999: no process has that pid",
    );
}

#[test]
fn a_missing_workload_is_one_line_saying_it_once() {
    let out = run_bounded(&mut bench(&["-w", "/nonexistent/site.toml"]), LIMIT);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/site.toml"), "{stderr}");
    let cause = std::io::Error::from(std::io::ErrorKind::NotFound).to_string();
    let said = stderr.matches("No such file or directory").count();
    assert_eq!(said, 1, "the cause ({cause}) said {said} times: {stderr}");
}

#[test]
fn webchildren_beyond_the_descriptor_limit_are_refused_with_the_fix() {
    // A shell lowers both limits (so flint cannot raise the soft one past them), then runs flint.
    let exe = env!("CARGO_BIN_EXE_flint");
    let script = format!("ulimit -n 200 && exec '{exe}' bench http://127.0.0.1:9/x -c 1000 -d 1s");
    refused(
        Command::new("sh").args(["-c", &script]),
        "-c 1000 needs about 1064 open files, and this process may open 200",
    );
}

#[test]
fn threads_far_beyond_the_cores_are_lowered_with_a_note() {
    let out = bench_against_responder(&["-t", "100000", "-n", "20", "--report", "summary"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("note: -t 100000: using"), "{stderr}");
    let load = text(&out.stdout)
        .lines()
        .find(|l| l.starts_with("Load:"))
        .map(str::to_owned)
        .expect("a Load line");
    // -c 2: at most two threads, whatever the cores.
    assert!(
        load.contains("on 1 thread") || load.contains("on 2 threads"),
        "{load}"
    );
}

#[test]
fn every_command_exits_2_on_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    // A result with a field of the wrong type: refused, naming the file and the field.
    let mistyped = dir.path().join("mistyped.json");
    std::fs::write(
        &mistyped,
        r#"{"kind": "bench", "summary": {"requests": "many"}}"#,
    )
    .unwrap();
    let mistyped = mistyped.to_str().unwrap();
    let report_out = dir.path().join("r.html");
    for args in [
        vec!["serve", missing, "--listen", "127.0.0.1:0"],
        vec!["report", missing],
        vec!["report", mistyped, "-o", report_out.to_str().unwrap()],
        vec![
            "fileset",
            dir.path().to_str().unwrap(),
            "--filelist",
            missing,
        ],
        vec!["run", "--target", "ftp://127.0.0.1/", "-d", "1s"],
    ] {
        let out = run_bounded(flint().args(&args), LIMIT);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("flint: error: "), "{args:?}: {stderr}");
    }
    let out = run_bounded(
        flint().args(["report", mistyped, "-o", report_out.to_str().unwrap()]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("mistyped.json: summary.requests: invalid type"),
        "{stderr}"
    );
    assert!(!report_out.exists(), "no page for a refused input");
}

#[test]
fn a_lab_experiment_left_without_servers_says_why_before_starting() {
    // sizes does not measure h2o: the note says so, and nothing is started (h2o need not be
    // installed for this).
    let out = run_bounded(
        flint().args(["lab", "sizes", "--servers", "h2o", "--no-profile"]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("note: --servers h2o: sizes does not measure h2o"),
        "{stderr}"
    );
    assert!(
        stderr.contains("flint: error: lab sizes: none of --servers h2o is measured"),
        "{stderr}"
    );
    assert!(!stderr.contains("measurements of"), "it started: {stderr}");
}

#[test]
fn a_lab_test_type_that_does_not_exist_is_a_usage_error_naming_the_known_ones() {
    let out = run_bounded(
        flint().args(["lab", "dynamic", "--tests", "json,nope", "--no-profile"]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "unknown test type `nope` (known: plaintext, json, db, queries, fortunes, updates)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("measurements of"), "it started: {stderr}");
}

#[test]
fn a_lab_database_that_is_not_known_is_a_usage_error_naming_the_known_ones() {
    let out = run_bounded(
        flint().args(["lab", "dynamic", "--db", "mysql", "--no-profile"]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown database `mysql` (known: sqlite, postgres)"),
        "{stderr}"
    );
    assert!(!stderr.contains("measurements of"), "it started: {stderr}");
}

#[test]
fn a_lab_deployment_that_is_not_known_is_a_usage_error_naming_the_known_ones() {
    let out = run_bounded(
        flint().args([
            "lab",
            "dynamic",
            "--deployments",
            "php-fpm,mod_php",
            "--no-profile",
        ]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "unknown deployment `mod_php` (known: static, cgi, fastcgi, proxy, php-fpm, php-cgi, \
             mod-php)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("measurements of"), "it started: {stderr}");
}

#[test]
fn a_timeout_of_0_and_streams_or_an_h2_window_out_of_place_exit_2() {
    refused(&mut bench(&["--timeout", "0s"]), "must be longer than 0");
    refused(
        &mut bench(&["--connect-timeout", "0ms"]),
        "must be longer than 0",
    );
    for n in ["0", "1001", "99999999999", "99999999999999999999999"] {
        refused(
            &mut bench(&["--http", "2", "--streams", n]),
            "must be 1 to 1000",
        );
    }
    refused(
        &mut bench(&["--http", "2", "--streams", "x"]),
        "is not a whole number",
    );
    // Refused as --streams without --http 2 is, not silently ignored.
    refused(
        &mut bench(&["--h2-window", "64k", "-n", "1"]),
        "--h2-window is HTTP/2's flow-control window: it needs --http 2",
    );
    refused(
        &mut bench(&["--streams", "4", "-n", "1"]),
        "--streams needs --http 2 or 3",
    );
}

/// A plain workload's page of two files, one of them always missing: every page ends failed,
/// but its first file's responses succeed, and a plain workload's failed page is an error
/// counted (`status_4xx`), not a failed run: exit 0. Only an application's pages, none of
/// them done, fail the run (bench_app.rs).
#[test]
fn a_plain_page_with_a_missing_file_completes_with_its_errors_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("here.html"), "hello").unwrap();
    let page = dir.path().join("page.toml");
    std::fs::write(
        &page,
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [\"/here.html\", \"/missing.html\"]\n",
    )
    .unwrap();
    let server = common::start_server(&root, 1);
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://127.0.0.1:{}", server.port())])
            .arg("-w")
            .arg(&page)
            .args(["-c", "1", "-n", "4"]),
        LIMIT,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("status_4xx 4"), "{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains("the run failed"), "{stderr}");
}
