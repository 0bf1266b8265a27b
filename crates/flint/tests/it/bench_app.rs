//! `flint bench` with application workloads against a small application (`app_support`): a
//! session that logs in, carries its cookie, a token and a CSRF value, and whose answers are
//! checked; each check kind failing where it should; values kept apart per Webchild; the
//! accounting exact; bad data refused before the run. Over HTTP/1.x and HTTP/2 (cleartext and
//! TLS).

use crate::app_support;
use crate::common;

use app_support::Front;
use common::{flint, run_bounded};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// HTTP/1.1 keep-alive (the default) and HTTP/2, for the tests that run over both.
const H1_AND_H2: [&[&str]; 2] = [&[], &["--http", "2"]];

/// The application for `mode`: over HTTP/2 by prior knowledge when the mode is `--http 2`.
fn start(mode: &[&str]) -> app_support::App {
    match mode.contains(&"2") {
        true => app_support::start_with(Front::H2c),
        false => app_support::start(),
    }
}

/// A user's whole visit: log in (cookie and token), the protected account page (its CSRF value
/// extracted), a form that needs that value, and a JSON endpoint that needs the token.
const FLOW: &str = r#"
[data.users]
file = "users.csv"

[[page]]
name = "visit"
weight = 1
files = [
  { path = "/login", method = "POST", body = "user={{users.name}}&pass={{users.pass}}",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 303, header_present = ["Location"] },
    extract = { token = { header = "X-Token" }, sid = { cookie = "sid" } } },
  { path = "/account?id={{users.id}}",
    expect = { status = 200, content_type = "text/html", body_contains = "Hello {{users.name}}",
               body_regex = "<h1>Hello [a-z]+</h1>", header_equals = { "X-User" = "{{users.name}}" } },
    extract = { csrf = { regex = 'name="csrf" value="([^"]+)"' } } },
  { path = "/transfer", method = "POST", body = "csrf={{csrf}}&amount={{random 1 9}}",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 200, body_length = 4 } },
  { path = "/api/me?n={{seq}}", headers = { "X-Token" = "{{token}}" },
    expect = { status = 200, content_type = "application/json", json = "/id",
               body_contains = '"user":"{{users.name}}"' } },
]
"#;

/// What a run said: its exit code, stdout, stderr and JSON result.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    json: serde_json::Value,
}

impl Run {
    fn error(&self, kind: &str) -> u64 {
        self.json["errors_by_kind"][kind].as_u64().unwrap_or(0)
    }
    fn summary(&self, key: &str) -> u64 {
        self.json["summary"][key].as_u64().unwrap()
    }
    fn errors(&self) -> u64 {
        self.summary("errors")
    }
}

/// Runs `flint bench` on `workload` (with `users.csv` beside it) against `addr`.
fn bench(addr: &str, workload: &str, csv: &str, args: &[&str]) -> Run {
    bench_url(&format!("http://{addr}"), workload, csv, args)
}

/// Runs `flint bench` on `workload` (with `users.csv` beside it) against `url`.
fn bench_url(url: &str, workload: &str, csv: &str, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), workload).unwrap();
    std::fs::write(dir.path().join("users.csv"), csv).unwrap();
    let json = dir.path().join("out.json");
    let out = run_bounded(
        flint()
            .arg("bench")
            .arg(url)
            .arg("-w")
            .arg(dir.path().join("w.toml"))
            .arg("--json")
            .arg(&json)
            .arg("--no-fail-fast")
            .args(args),
        Duration::from_secs(120),
    );
    let json = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        json,
    }
}

/// The server received exactly what flint says it sent.
fn assert_exact(app: &app_support::App, run: &Run) {
    let sent = run.summary("requests") + run.summary("unfinished");
    assert_eq!(
        app.received.load(Ordering::Relaxed),
        sent,
        "server count = requests + unfinished\n{}{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn a_visit_passes_every_check_over_keep_alive_http10_pipelining_and_shared_connections() {
    // Several connections a Webchild share its session: the login's cookie and token reach
    // the files another connection sends, each after the response it needs.
    let modes: [&[&str]; 6] = [
        &["--http", "1.1"],
        &["--http", "1.0"],
        &["--pipeline"],
        &["--pipeline", "2"],
        &["--connections-per-client", "6"],
        &["--http", "1.0", "--connections-per-client", "4"],
    ];
    for mode in modes {
        let app = app_support::start();
        let r = bench(
            &app.addr,
            FLOW,
            app_support::USERS_CSV,
            &[&["-c", "4", "-n", "20"], mode].concat(),
        );
        assert_eq!(r.code, Some(0), "{mode:?}\n{}{}", r.stdout, r.stderr);
        assert_eq!(r.errors(), 0, "{mode:?}\n{}", r.stdout);
        assert_eq!(r.summary("requests"), 80, "4 files a page, 20 pages");
        assert_eq!(r.summary("pages"), 20);
        assert_exact(&app, &r);
    }
}

#[test]
fn values_and_cookies_never_leak_between_webchildren() {
    // Many Webchildren on two threads, each logging in as a different user page after page:
    // a token or a cookie of another Webchild's user would fail /api/me (409) or the account
    // page's name.
    for mode in H1_AND_H2 {
        let app = start(mode);
        let r = bench(
            &app.addr,
            FLOW,
            app_support::USERS_CSV,
            &[&["-c", "8", "-t", "2", "-n", "64"], mode].concat(),
        );
        assert_eq!(r.errors(), 0, "{mode:?}\n{}", r.stdout);
        assert_eq!(r.summary("requests"), 256, "{mode:?}");
        assert_exact(&app, &r);
    }
}

#[test]
fn a_timed_run_ends_with_every_request_accounted_for() {
    for mode in [
        &[][..],
        &["--pipeline"],
        &["--http", "2"],
        &["--connections-per-client", "6"],
    ] {
        timed_run_accounted_for(mode);
    }
}

/// Cut at the end with requests in flight: each sent in full is unfinished, and the server has
/// it (it counts a request once its body is read, which may be just after flint's end).
fn timed_run_accounted_for(mode: &[&str]) {
    let app = start(mode);
    let r = bench(
        &app.addr,
        FLOW,
        app_support::USERS_CSV,
        &[&["-c", "8", "-t", "2", "-d", "1s"], mode].concat(),
    );
    assert_eq!(r.errors(), 0, "{mode:?}\n{}", r.stdout);
    let sent = r.summary("requests") + r.summary("unfinished");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while app.received.load(Ordering::Relaxed) < sent && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(r.summary("requests") > 0);
    assert_exact(&app, &r);
}

#[test]
fn without_cookies_the_protected_page_fails_its_check_and_the_rest_is_not_sent() {
    for (mode, status_line) in [
        (H1_AND_H2[0], "HTTP/1.1 200 OK"),
        (H1_AND_H2[1], "HTTP/2 200"),
    ] {
        without_cookies(mode, status_line);
    }
}

fn without_cookies(mode: &[&str], status_line: &str) {
    let app = start(mode);
    let r = bench(
        &app.addr,
        FLOW,
        app_support::USERS_CSV,
        &[&["-c", "2", "-n", "6", "--no-cookies"], mode].concat(),
    );
    // The account page answers 200 with the login form: not a success. The page ends there.
    assert_eq!(r.error("check_header"), 6, "{}", r.stdout);
    assert_eq!(r.errors(), 6);
    assert_eq!(r.summary("requests"), 12, "login and account only");
    assert!(r.stdout.contains("Failed:    check_header"), "{}", r.stdout);
    assert!(
        r.stdout.contains(&format!("| {status_line}")),
        "the response's head: {}",
        r.stdout
    );
    let first = &r.json["check_failures"][0];
    assert_eq!(first["kind"], "check_header", "{}", r.json);
    assert_eq!(first["url"], "/account?id={{users.id}}");
    assert!(first["head"].as_str().unwrap().starts_with(status_line));
    let kept = r.json["check_failures"].as_array().unwrap().len();
    assert_eq!(kept, 5, "the first five");
    assert_exact(&app, &r);
}

/// One page of `files` (TOML entries) run `pages` times by one Webchild (with `mode`).
fn one_page(app: &app_support::App, files: &str, pages: &str, mode: &[&str]) -> Run {
    let workload = format!("[[page]]\nweight = 1\nfiles = [{files}]\n");
    let args = [&["-c", "1", "-n", pages], mode].concat();
    bench(&app.addr, &workload, "id\n1\n", &args)
}

#[test]
fn each_check_fails_as_its_own_kind() {
    let cases = [
        (
            r#"{ path = "/nope", expect = { status = 200 } }"#,
            "check_status",
        ),
        (
            r#"{ path = "/flaky", expect = { header_present = ["X-Nope"] } }"#,
            "check_header",
        ),
        (
            r#"{ path = "/flaky", expect = { content_type = "application/json" } }"#,
            "check_content_type",
        ),
        (
            r#"{ path = "/flaky", expect = { body_regex = "^<div>" } }"#,
            "check_body",
        ),
        (
            r#"{ path = "/account", expect = { json = "/id" } }"#,
            "check_json",
        ),
        (
            r#"{ path = "/flaky", expect = { body_length = { max = 3 } } }"#,
            "check_length",
        ),
        (
            r#"{ path = "/big", expect = { body_contains = "y" } }"#,
            "body_too_large",
        ),
        (
            r#"{ path = "/flaky", extract = { v = { regex = "absent" } } }"#,
            "extract_missing",
        ),
    ];
    for ((file, kind), mode) in cases.iter().flat_map(|c| H1_AND_H2.map(|m| (c, m))) {
        let app = start(mode);
        let r = one_page(&app, file, "3", mode);
        assert_eq!(
            r.error(kind),
            3,
            "{file} {mode:?}\n{}{}",
            r.stdout,
            r.stderr
        );
        assert_eq!(
            r.errors(),
            3,
            "{file}: counted once per response\n{}",
            r.stdout
        );
        assert_eq!(r.summary("requests"), 3, "{file}");
        assert!(
            r.stdout.contains(&format!("Failed:    {kind}")),
            "{}",
            r.stdout
        );
        assert_exact(&app, &r);
        // The status a check list accepts is no error of its class; 4xx without one is.
        assert_eq!(r.error("status_4xx"), 0, "{file}");
    }
}

#[test]
fn a_page_that_sometimes_answers_an_error_body_fails_only_those() {
    let app = app_support::start();
    let r = one_page(
        &app,
        r#"{ path = "/flaky", expect = { status = 200, body_contains = "fine" } }"#,
        "9",
        &[],
    );
    assert_eq!(r.error("check_body"), 3, "every third answer\n{}", r.stdout);
    assert_eq!(r.summary("requests"), 9);
    assert_exact(&app, &r);
    // A threshold may name the kind.
    let workload = "[[page]]\nweight = 1\nfiles = [{ path = \"/flaky\", expect = { body_contains = \"fine\" } }]\n";
    for (threshold, code) in [("errors(check_body)<1", 3), ("errors(check_json)<1", 0)] {
        let r = bench(
            &app.addr,
            workload,
            "id\n1\n",
            &["-c", "1", "-n", "3", "--threshold", threshold],
        );
        assert_eq!(r.code, Some(code), "{threshold}: {}{}", r.stdout, r.stderr);
    }
}

#[test]
fn a_request_needing_a_value_never_extracted_is_not_sent() {
    for mode in H1_AND_H2 {
        never_extracted_not_sent(mode);
    }
}

fn never_extracted_not_sent(mode: &[&str]) {
    let app = start(mode);
    // The first file needs a value the second extracts: with a new session every page it is
    // never there when asked for.
    let workload = r#"
[[page]]
weight = 1
files = ["/api/me?t={{t}}", { path = "/flaky", extract = { t = { regex = "fine" } } }]
"#;
    let r = bench(
        &app.addr,
        workload,
        "id\n1\n",
        &[&["-c", "1", "-n", "4", "--reset-session"], mode].concat(),
    );
    assert_eq!(
        r.summary("requests"),
        0,
        "{mode:?}\n{}{}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("Not sent:  4 requests"), "{}", r.stdout);
    assert!(
        r.stdout.contains("--reset-session forgets them"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("see extract_missing"), "{}", r.stdout);
    assert_eq!(r.summary("missing_value_unsent"), 4);
    // Errors, each ending its page: the run failed.
    assert_eq!((r.errors(), r.error("missing_value_unsent")), (4, 4));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(app.received.load(Ordering::Relaxed), 0);
    // For a duration: page after page not sent, each after a back-off, never a crash or a spin.
    let r = bench(
        &app.addr,
        workload,
        "id\n1\n",
        &[&["-c", "2", "-d", "1s", "--reset-session"], mode].concat(),
    );
    assert!(matches!(r.code, Some(0 | 1)), "{:?}: {}", r.code, r.stderr);
    assert!(r.stdout.contains("Not sent:"), "{}", r.stdout);
    assert_eq!(app.received.load(Ordering::Relaxed), 0);
}

#[test]
fn a_login_that_fails_forgets_its_value_and_the_next_use_is_not_sent() {
    let app = app_support::start();
    // The login answers a token once, then fails: the token it gave is not sent again.
    let workload = r#"
[[page]]
name = "login"
weight = 1
files = [{ path = "/login-once", expect = { status = 200 }, extract = { t = { header = "X-Token" } } }]

[[page]]
name = "use"
weight = 1
files = ["/echo?t={{t}}"]
"#;
    let r = bench(
        &app.addr,
        workload,
        "id\n1\n",
        &["-c", "1", "-n", "40", "--seed", "7"],
    );
    let paths = app.paths.lock().unwrap().clone();
    let logins: Vec<usize> = (paths.iter().enumerate())
        .filter(|(_, p)| *p == "/login-once")
        .map(|(i, _)| i)
        .collect();
    assert!(logins.len() >= 2, "{paths:?}");
    let used = |range: &[String]| range.iter().filter(|p| *p == "/echo").count() as u64;
    assert!(
        used(&paths) > 0,
        "the token is used while it holds: {paths:?}"
    );
    assert_eq!(
        used(&paths[logins[1]..]),
        0,
        "nothing sent after the failed login: {paths:?}"
    );
    // Of the 40 pages, every use page not sent (before the first login, after the second) is
    // counted.
    let unsent = r.summary("missing_value_unsent");
    assert!(unsent > 0, "{}", r.stdout);
    assert_eq!(
        unsent + used(&paths),
        40 - logins.len() as u64,
        "{}",
        r.stdout
    );
    assert_eq!(r.error("check_status"), logins.len() as u64 - 1);
    assert_exact(&app, &r);
}

#[test]
fn a_value_with_a_line_break_goes_in_a_body_but_not_in_a_header() {
    for mode in H1_AND_H2 {
        line_break(mode);
    }
}

fn line_break(mode: &[&str]) {
    let app = start(mode);
    let workload = r#"
[[page]]
weight = 1
files = [
  { path = "/crlf", extract = { v = { json = "/v" } } },
  { path = "/echo", method = "POST", body = "v={{v}}", expect = { status = 200 } },
  { path = "/echo", headers = { "X-V" = "{{v}}" } },
]
"#;
    let args = [&["-c", "1", "-n", "2"], mode].concat();
    let r = bench(&app.addr, workload, "id\n1\n", &args);
    assert_eq!(
        r.summary("requests"),
        4,
        "{mode:?}\n{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(r.summary("unsafe_value_unsent"), 2, "{}", r.stdout);
    assert_eq!(r.summary("missing_value_unsent"), 0);
    assert!(
        r.stdout.contains(
            "Not sent:  2 requests (unsafe_value_unsent: a header field's value had a line break"
        ),
        "{}",
        r.stdout
    );
    // Each is an error that ended its page: of the 4 responses, all good, not one page was
    // done, and the run failed rather than passing `errors<1`.
    assert_eq!((r.errors(), r.error("unsafe_value_unsent")), (2, 2));
    assert!(
        r.stdout
            .contains("Errors:    2 in all: unsafe_value_unsent 2"),
        "{}",
        r.stdout
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("not one page completed (unsafe_value_unsent 2)"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("never extracted"), "{}", r.stdout);
    assert_exact(&app, &r);
}

#[test]
fn a_unique_data_set_that_runs_out_stops_its_webchildren() {
    let unique = FLOW.replace(
        "file = \"users.csv\"",
        "file = \"users.csv\"\npick = \"unique\"",
    );
    for mode in H1_AND_H2 {
        let app = start(mode);
        let r = bench(
            &app.addr,
            &unique,
            app_support::USERS_CSV,
            &[&["-c", "2", "-n", "10"], mode].concat(),
        );
        // Four users: four visits, then each Webchild stops at its next page.
        assert_eq!(r.summary("pages"), 4, "{mode:?}\n{}", r.stdout);
        assert_eq!(r.error("data_exhausted"), 2, "{}", r.stdout);
        assert_eq!(r.summary("requests"), 16);
        assert_exact(&app, &r);
    }
}

#[test]
fn bad_data_and_templates_exit_2_with_their_line_before_the_run() {
    let app = app_support::start();
    let cases = [
        (
            FLOW.to_owned(),
            "id,name,pass\n1,ann,pa\n2,bo\n",
            "users.csv:3: 2 fields",
        ),
        (
            FLOW.replace("{{users.id}}", "{{users.email}}"),
            app_support::USERS_CSV,
            "w.toml:13: path: {{users.email}}: data set \"users\" has no column \"email\"",
        ),
        (
            FLOW.replace("{{csrf}}", "{{crsf}}"),
            app_support::USERS_CSV,
            "unknown value \"crsf\"",
        ),
    ];
    for (workload, csv, needle) in cases {
        let r = bench(&app.addr, &workload, csv, &["-n", "1"]);
        assert_eq!(r.code, Some(2), "{needle}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "one line: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
    // Bytes that are not UTF-8 on line 3.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), FLOW).unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        b"id,name,pass\n1,ann,pa\n2,b\xffo,pb\n",
    )
    .unwrap();
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}", app.addr), "-n", "1", "-w"])
            .arg(dir.path().join("w.toml")),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("users.csv:3: not UTF-8"), "{stderr}");
    assert_eq!(app.received.load(Ordering::Relaxed), 0, "nothing was sent");
}

#[test]
fn debug_shows_the_expanded_request_and_unsupported_modes_are_refused() {
    let app = app_support::start();
    let r = bench(
        &app.addr,
        FLOW,
        app_support::USERS_CSV,
        &["-c", "1", "-n", "1", "--debug"],
    );
    assert!(r.stderr.contains("POST /login HTTP/1.1"), "{}", r.stderr);
    assert!(r.stderr.contains("user=ann&pass=pa"), "{}", r.stderr);
    assert!(
        r.stderr.contains("Cookie: sid=s1"),
        "the login's cookie sent after it: {}",
        r.stderr
    );
    assert!(r.stderr.contains("X-Token: tok-ann"), "{}", r.stderr);
    assert_exact(&app, &r);
    // Pipelining's deferred redirects are not supported.
    let mode = ["-n", "1", "--pipeline", "--redirect", "3"];
    let r = bench(&app.addr, FLOW, app_support::USERS_CSV, &mode);
    assert_eq!(r.code, Some(2), "{mode:?}: {}", r.stderr);
    assert!(
        r.stderr
            .contains("not supported with an application workload"),
        "{}",
        r.stderr
    );
    assert_eq!(
        app.received.load(Ordering::Relaxed),
        4,
        "the refused runs sent nothing"
    );
    // Lanes (one-file pages, N in flight) are not supported yet either.
    let one = "[[page]]\nweight = 1\nfiles = [\"/flaky?{{seq}}\"]\n";
    for lanes in [&["--pipeline", "4"][..], &["--http", "2", "--streams", "4"]] {
        let r = bench(&app.addr, one, "id\n1\n", &[&["-n", "1"], lanes].concat());
        assert_eq!(r.code, Some(2), "{lanes:?}: {}", r.stderr);
        assert!(r.stderr.contains("lanes"), "{}", r.stderr);
    }
    assert_eq!(app.received.load(Ordering::Relaxed), 4);
}

#[test]
fn pipelining_sends_a_batch_up_to_the_file_whose_values_the_next_need() {
    let app = app_support::start();
    let r = bench(
        &app.addr,
        FLOW,
        app_support::USERS_CSV,
        &["-c", "1", "-n", "2", "--pipeline", "--debug"],
    );
    assert_eq!(r.errors(), 0, "{}{}", r.stdout, r.stderr);
    // The login extracts, and so does the account page: each is a batch of its own; the form
    // and the JSON endpoint after them go in one write (--debug prints each write's requests).
    let together = (1..=9).any(|d| r.stderr.contains(&format!("&amount={d}GET /api/me")));
    assert!(together, "{}", r.stderr);
    assert!(
        !r.stderr.contains("pass=paGET"),
        "the account waits for the login: {}",
        r.stderr
    );
    assert_eq!(r.summary("requests"), 8);
    assert_exact(&app, &r);
}

#[test]
fn a_visit_passes_every_check_over_http2_cleartext_and_tls() {
    let ca = test_support::certs::TestCa::new("flint app test CA");
    let tls = Front::H2Tls(ca.leaf().server_config());
    let cacert = ca.pem.to_str().unwrap();
    for front in [Front::H2c, tls] {
        let app = app_support::start_with(front.clone());
        let port = app.addr.rsplit(':').next().unwrap();
        let (url, extra): (String, &[&str]) = match front {
            Front::H2Tls(_) => (format!("https://localhost:{port}"), &["--cacert", cacert]),
            _ => (format!("http://{}", app.addr), &[]),
        };
        let args = [&["-c", "4", "-n", "20", "--http", "2"], extra].concat();
        let r = bench_url(&url, FLOW, app_support::USERS_CSV, &args);
        assert_eq!(r.code, Some(0), "{url}\n{}{}", r.stdout, r.stderr);
        assert_eq!(r.errors(), 0, "{url}\n{}", r.stdout);
        assert_eq!(r.summary("requests"), 80, "4 files a page, 20 pages");
        assert_eq!(r.summary("pages"), 20);
        assert_exact(&app, &r);
    }
}

#[test]
fn http2_opens_a_file_once_the_values_it_needs_are_in_and_the_others_together() {
    let app = start(&["--http", "2"]);
    // A new session every page: a file sent before the response it needs would go without the
    // cookie (the account page's check fails) or without its value (not sent).
    let r = bench(
        &app.addr,
        FLOW,
        app_support::USERS_CSV,
        &[
            "-c",
            "1",
            "-n",
            "3",
            "--http",
            "2",
            "--reset-session",
            "--debug",
        ],
    );
    assert_eq!(r.errors(), 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.summary("missing_value_unsent"), 0, "{}", r.stdout);
    assert_eq!(r.summary("requests"), 12);
    assert_exact(&app, &r);
    // --debug prints each request as its stream opens and each response's head as it is read.
    let at =
        |needle: &str| (r.stderr.find(needle)).unwrap_or_else(|| panic!("{needle}: {}", r.stderr));
    let response_after = |from: usize| from + r.stderr[from..].find(": response]").unwrap();
    let (login, account) = (at(":path: /login"), at(":path: /account?id=1"));
    assert!(
        response_after(login) < account,
        "the account waits for the login's response"
    );
    assert!(
        response_after(account) < at(":path: /transfer"),
        "the form waits for the CSRF value"
    );
    let (transfer, api) = (at(":path: /transfer"), at(":path: /api/me"));
    assert!(
        api < response_after(transfer),
        "the form and the JSON endpoint go together: {}",
        r.stderr
    );
    // The request as expanded: the form's body, the jar's cookie, the token.
    assert!(r.stderr.contains("user=ann&pass=pa"), "{}", r.stderr);
    assert!(r.stderr.contains("cookie: sid=s1"), "{}", r.stderr);
    assert!(r.stderr.contains("x-token: tok-ann"), "{}", r.stderr);
}

/// A login answered by a redirect (303 to the account page, its session cookie set on the 303)
/// and a form that needs the account page's CSRF value.
const REDIRECTED: &str = r#"
[data.users]
file = "users.csv"

[[page]]
weight = 1
files = [
  { path = "/login", method = "POST", body = "user={{users.name}}&pass={{users.pass}}",
    headers = { "Content-Type" = "application/x-www-form-urlencoded", "Content-Language" = "en" },
    expect = { status = 200, body_contains = "Hello {{users.name}}" },
    extract = { csrf = { regex = 'name="csrf" value="([^"]+)"' } } },
  { path = "/transfer", method = "POST", body = "csrf={{csrf}}&amount=1",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 200, body_length = 4 } },
]
"#;

#[test]
fn a_followed_redirect_keeps_the_session_and_the_checks_hold_the_final_response() {
    for mode in H1_AND_H2 {
        // A new session every page: the account page knows the user only by the cookie the
        // 303 set, and its CSRF value is extracted from it (the 303's response is not judged:
        // its status and empty body would fail the checks).
        let app = start(mode);
        let args = ["-c", "2", "-n", "8", "--redirect", "2", "--reset-session"];
        let r = bench(
            &app.addr,
            REDIRECTED,
            app_support::USERS_CSV,
            &[&args[..], mode].concat(),
        );
        assert_eq!(r.errors(), 0, "{mode:?}\n{}{}", r.stdout, r.stderr);
        assert_eq!(r.summary("pages"), 8, "{mode:?}");
        assert_eq!(r.summary("requests"), 24, "the login, its target, the form");
        assert_exact(&app, &r);
        let paths = app.paths.lock().unwrap().clone();
        let account = paths.iter().filter(|p| *p == "/account").count();
        assert_eq!(account, 8, "{mode:?}: {paths:?}");
        // Without the cookie, the redirect's target answers the login form: the final
        // response fails its check, and the form is not sent.
        let app = start(mode);
        let r = bench(
            &app.addr,
            REDIRECTED,
            app_support::USERS_CSV,
            &[&args[..], &["--no-cookies"], mode].concat(),
        );
        assert_eq!(r.error("check_body"), 8, "{mode:?}\n{}", r.stdout);
        assert_eq!(r.errors(), 8);
        assert_eq!(r.summary("requests"), 16, "{mode:?}");
        assert_exact(&app, &r);
    }
}

/// Post/Redirect/Get where every order placed has a page of its own: far more distinct
/// redirect targets on one thread than any cache of them would hold, each followed.
const ORDERS: &str = r#"
[[page]]
weight = 1
files = [
  { path = "/orders", method = "POST", body = "item=1",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 200, body_contains = "order" } },
]
"#;

#[test]
fn a_redirect_to_a_new_target_every_time_is_always_followed() {
    for mode in H1_AND_H2 {
        let app = start(mode);
        let args = ["-c", "1", "-t", "1", "-n", "1100", "--redirect", "1"];
        let r = bench(&app.addr, ORDERS, "", &[&args[..], mode].concat());
        assert_eq!(r.errors(), 0, "{mode:?}\n{}{}", r.stdout, r.stderr);
        assert_eq!(r.summary("pages"), 1100, "{mode:?}");
        assert_eq!(
            r.summary("requests"),
            2200,
            "{mode:?}: each order and its page"
        );
        assert_exact(&app, &r);
        let paths = app.paths.lock().unwrap().clone();
        assert!(paths.iter().any(|p| p == "/orders/1100"), "{mode:?}");
    }
}

/// A relative Location (`done`) from a path with a template in it.
const EDIT: &str = r#"
[data.users]
file = "users.csv"

[[page]]
weight = 1
files = [
  { path = "/users/{{users.id}}/edit", expect = { status = 200, body_contains = "saved" } },
]
"#;

#[test]
fn a_relative_location_resolves_against_the_path_sent() {
    for mode in H1_AND_H2 {
        let app = start(mode);
        let args = ["-c", "1", "-n", "4", "--redirect", "1"];
        let r = bench(
            &app.addr,
            EDIT,
            app_support::USERS_CSV,
            &[&args[..], mode].concat(),
        );
        assert_eq!(r.errors(), 0, "{mode:?}\n{}{}", r.stdout, r.stderr);
        let paths = app.paths.lock().unwrap().clone();
        let done = paths.iter().filter(|p| p.ends_with("/done"));
        let users = [
            "/users/1/done",
            "/users/2/done",
            "/users/3/done",
            "/users/4/done",
        ];
        assert!(done.clone().count() == 4, "{mode:?}: {paths:?}");
        assert!(
            done.into_iter().all(|p| users.contains(&p.as_str())),
            "{mode:?}: {paths:?}"
        );
    }
}

#[test]
fn a_redirect_that_becomes_a_get_leaves_out_the_fields_of_the_body() {
    for mode in H1_AND_H2 {
        let app = start(mode);
        let args = ["-c", "1", "-n", "1", "--redirect", "2", "--debug"];
        let r = bench(
            &app.addr,
            REDIRECTED,
            app_support::USERS_CSV,
            &[&args[..], mode].concat(),
        );
        assert_eq!(r.errors(), 0, "{mode:?}\n{}{}", r.stdout, r.stderr);
        let text = r.stderr.to_ascii_lowercase();
        // The login's POST carries them, the GET of its 303's target does not.
        let get = text
            .find("get /account")
            .or_else(|| text.find(":path: /account"));
        let get = &text[get.expect("the redirect's request shown")..];
        // Up to the end of the request's head (its response follows).
        let end = get.replace("\r\n", "\n").find("\n\n");
        let get = get.replace("\r\n", "\n");
        let get = &get[..end.unwrap_or(get.len())];
        assert!(text.contains("content-language: en"), "{mode:?}: {text}");
        assert!(!get.contains("content-language"), "{mode:?}: {get}");
        assert!(!get.contains("content-type"), "{mode:?}: {get}");
    }
}
