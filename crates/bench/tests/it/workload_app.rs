//! Application workloads: `[data.NAME]` sets, templated files, `expect`, `extract` and `auth`
//! read and checked before the run; every mistake is one line naming its file and line. A
//! workload run again (compare's rounds) draws its data from the first row again.

use crate::per_connection;

use bench::stats::ErrorKind;
use bench::workload::{Workload, WorkloadError};
use bench::{BenchConfig, Stop, Target};
use per_connection::{read_until_stopped, HeadEnds, PerConnection};
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const USERS: &str = "id,name,pass\n1,Ann Lee,a1\n2,Bo,b2\n";

const APP: &str = r#"
[data.users]
file = "users.csv"
pick = "unique"

[[page]]
name = "login"
weight = 1
files = [
  { path = "/login", method = "POST", body = "user={{users.name}}&pass={{users.pass}}",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 303 }, extract = { token = { header = "X-Token" } } },
  { path = "/account?id={{users.id}}", headers = { "Authorization" = "Bearer {{token}}" },
    expect = { status = 200, body_contains = "{{users.name}}", content_type = "text/html" } },
  { path = "/queries?queries={{random 1 500}}", expect = { json = "/0/randomNumber" } },
]

[[page]]
weight = 2
files = ["/static.css", { path = "/me", auth = "{{users.name}}:{{users.pass}}" }]
"#;

/// Writes `files` (name, bytes) into a new directory and loads `workload.toml` from it.
fn load(files: &[(&str, &[u8])]) -> Result<Workload, WorkloadError> {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    Workload::load(&dir.path().join("workload.toml"))
}

fn error(files: &[(&str, &[u8])]) -> String {
    load(files)
        .expect_err("the workload should be refused")
        .to_string()
}

/// The workload with `from` replaced by `to`.
fn edited(from: &str, to: &str) -> Vec<u8> {
    assert!(APP.contains(from), "{from}");
    APP.replacen(from, to, 1).into_bytes()
}

#[test]
fn an_application_workload_is_compiled_per_file() {
    let w = load(&[
        ("workload.toml", APP.as_bytes()),
        ("users.csv", USERS.as_bytes()),
    ])
    .unwrap();
    let plan = w.plan().expect("an application plan");
    assert_eq!(plan.data.len(), 1);
    assert_eq!(plan.data[0].len(), 2);
    assert_eq!(plan.values, ["token"]);
    assert_eq!(w.urls.len(), 5, "application entries are never merged");
    assert_eq!(plan.files.len(), w.urls.len());
    assert_eq!(plan.page_data, [vec![0], vec![0]]);
    let login = plan.files[w.pages[0].files[0]].as_ref().unwrap();
    assert!(login.body.is_some() && login.expect.is_some());
    assert_eq!(login.extract.len(), 1);
    assert!(
        !login.needs_body,
        "a status check and a header need no body"
    );
    let account = plan.files[w.pages[0].files[1]].as_ref().unwrap();
    assert!(account.needs_body, "body_contains");
    assert_eq!(account.headers.len(), 1);
    assert!(plan.files[w.pages[1].files[0]].is_some());
    assert_eq!(w.spec(w.pages[0].files[0]).method(), "POST");
}

#[test]
fn a_workload_without_application_features_has_no_plan() {
    let text =
        "[[page]]\nweight = 1\nfiles = [\"/a\", { path = \"/b\", headers = { X = \"1\" } }]\n";
    let w = load(&[("workload.toml", text.as_bytes())]).unwrap();
    assert!(w.plan().is_none());
    assert_eq!(w.spec(1).headers, [("X".into(), "1".into())]);
}

#[test]
fn bad_data_rows_name_the_data_file_and_line() {
    let e = error(&[
        ("workload.toml", APP.as_bytes()),
        ("users.csv", b"id,name,pass\n1,Ann,a\n2,Bo\n"),
    ]);
    assert!(
        e.ends_with("users.csv:3: 2 fields where the first line names 3 columns"),
        "{e}"
    );
    let e = error(&[
        ("workload.toml", APP.as_bytes()),
        ("users.csv", b"id,name,pass\n1,Ann,a\n2,B\xffo,b\n"),
    ]);
    assert!(e.ends_with("users.csv:3: not UTF-8"), "{e}");
    let e = error(&[("workload.toml", APP.as_bytes())]);
    assert!(e.contains("users.csv") && e.lines().count() == 1, "{e}");
}

#[test]
fn a_template_naming_a_missing_column_or_value_names_the_workload_line() {
    let csv = ("users.csv", USERS.as_bytes());
    let cases: [(&str, &str, &str); 8] = [
        (
            "{ token = { header",
            "{ \"to.ken\" = { header",
            "letters, digits",
        ),
        (
            "{ token = { header",
            "{ seq = { header",
            "a template function",
        ),
        ("{{users.id}}", "{{users.email}}", "has no column \"email\""),
        ("{{users.id}}", "{{people.id}}", "no data set \"people\""),
        (
            "Bearer {{token}}",
            "Bearer {{tokn}}",
            "unknown value \"tokn\"",
        ),
        ("{{random 1 500}}", "{{random 500 1}}", "above its high"),
        (
            "body_contains = \"{{users.name}}\"",
            "body_contains = \"{{users.nam}}\"",
            "no column",
        ),
        (
            "{ header = \"X-Token\" }",
            "{ headr = \"X-Token\" }",
            "unknown variant",
        ),
    ];
    for (from, to, needle) in cases {
        let text = edited(from, to);
        let e = load(&[("workload.toml", &text), csv]).unwrap_err();
        let WorkloadError::Syntax { line, .. } = &e else {
            panic!("{to}: {e}");
        };
        let want = APP.lines().position(|l| l.contains(from)).unwrap() + 1;
        let msg = e.to_string();
        assert!(msg.contains(needle), "{to}: {msg}");
        assert!(
            msg.starts_with(&format!("{}", Path::new("workload.toml").display()))
                || msg.contains("workload.toml:"),
            "{msg}"
        );
        // The entry's line (where its table starts) or the field's own.
        assert!(
            *line <= want && *line + 2 >= want,
            "{to}: line {line}, want about {want}: {msg}"
        );
    }
}

#[test]
fn bad_data_tables_and_auth_are_refused() {
    let csv = ("users.csv", USERS.as_bytes());
    let e = error(&[
        (
            "workload.toml",
            &edited("pick = \"unique\"", "pick = \"once\""),
        ),
        csv,
    ]);
    assert!(
        e.contains("workload.toml:4:") && e.contains("unknown variant"),
        "{e}"
    );
    let e = error(&[
        (
            "workload.toml",
            &edited(
                "auth = \"{{users.name}}:{{users.pass}}\"",
                "auth = \"nobody\"",
            ),
        ),
        csv,
    ]);
    assert!(e.contains("auth: `user:password`"), "{e}");
    let e = error(&[
        (
            "workload.toml",
            &edited("expect = { status = 303 }", "expect = { status = 42 }"),
        ),
        csv,
    ]);
    assert!(e.contains("not an HTTP status"), "{e}");
}

fn answer_ok(mut s: TcpStream, stop: &AtomicBool) {
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let mut heads = HeadEnds::default();
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        for &b in data {
            if heads.at(b) && s.write_all(OK).is_err() {
                return false;
            }
        }
        true
    });
}

#[test]
fn a_unique_data_set_gives_its_rows_again_in_each_run_of_the_workload() {
    let server = PerConnection::start(answer_ok);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), USERS).unwrap();
    let text = r#"
[data.users]
file = "users.csv"
pick = "unique"

[[page]]
weight = 1
files = ["/u?id={{users.id}}"]
"#;
    let w = Workload::parse_in(text, "w.toml", dir.path()).unwrap();
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        stop: Stop::Pages(2),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(Target::http(server.addr))
    };
    // Two rounds of one workload: both fetch the two users, neither runs out.
    for round in 1..=2 {
        let r = bench::run(&config, &w, &AtomicBool::new(false)).unwrap();
        let exhausted = r.stats.errors.get(ErrorKind::DataExhausted);
        assert_eq!((r.stats.requests, exhausted), (2, 0), "round {round}");
    }
    server.stop();
}

/// What an outside test's workloads were refused with: each refusal is one line naming the
/// file and line (the workload's, or the data file's for its own rows), in words of the
/// workload, never serde's.
#[test]
fn each_refusal_is_one_line_naming_the_file_and_line() {
    const PAGE: &str = "[[page]]\nweight = 1\nfiles = [\"/a?{{u.id}}\"]\n";
    let entry = |e: &str| format!("[[page]]\nweight = 1\nfiles = [{{ path = \"/api\", {e} }}]\n");
    let cases: Vec<(Vec<u8>, &[u8], &str)> = vec![
        (
            b"[[page]]\nweight = 1\n# caf\xe9\nfiles = [\"/a\"]\n".to_vec(),
            b"",
            "workload.toml:3: not UTF-8",
        ),
        (
            format!("[data.my-users]\nfile = \"users.csv\"\n{PAGE}").into_bytes(),
            USERS.as_bytes(),
            "workload.toml:1: data set name \"my-users\"",
        ),
        (
            format!("[data.u]\nfile = \"\"\n{PAGE}").into_bytes(),
            USERS.as_bytes(),
            "workload.toml:1: [data.u]: file is empty",
        ),
        (
            format!("[data.u]\nfile = \"nobody.csv\"\n{PAGE}").into_bytes(),
            USERS.as_bytes(),
            "workload.toml:1: [data.u]: file \"nobody.csv\": ",
        ),
        (
            format!("[data]\nfile = \"users.csv\"\n{PAGE}").into_bytes(),
            USERS.as_bytes(),
            "workload.toml:2: invalid type: string \"users.csv\", expected a data set's table ([data] holds data sets by name",
        ),
        (
            entry("expect = { status = \"200\" }").into_bytes(),
            b"",
            "workload.toml:3: invalid type: string \"200\", expected a status code",
        ),
        (
            entry("expect = { body_length = -1 }").into_bytes(),
            b"",
            "workload.toml:3: invalid value: integer `-1`, expected a number of bytes",
        ),
        (
            entry("extract = { t = { header = \"X\", cookie = \"s\" } }").into_bytes(),
            b"",
            "workload.toml:3: an extraction takes one source; found ",
        ),
        (
            entry("expect = { body_regex = \"id: ([0-9]+\" }").into_bytes(),
            b"",
            "workload.toml:3: expect.body_regex: \"id: ([0-9]+\" is not a regular expression",
        ),
        (
            entry("expect = { json_equals = { \"/0/name\" = \"{{nope}}\" } }").into_bytes(),
            b"",
            "workload.toml:3: expect.json_equals.\"/0/name\": {{nope}}: unknown value \"nope\"",
        ),
        (
            b"[[page]]\nweight = 1\nfiles = [{ path = \"/a b{{seq}}\" }]\n".to_vec(),
            b"",
            "workload.toml:3: URL path contains whitespace or a control character: \"/a b{{seq}}\"",
        ),
        (
            format!("[data.u]\nfile = \"users.csv\"\n{PAGE}").into_bytes(),
            b"id,name,name\n1,a,b\n",
            "users.csv:1: column name \"name\" given twice",
        ),
        (
            format!("[data.u]\nfile = \".\"\n{PAGE}").into_bytes(),
            USERS.as_bytes(),
            "workload.toml:1: [data.u]: file \".\": ",
        ),
        (
            format!("[data.u]\nfile = \"users.csv\"\n{PAGE}").into_bytes(),
            b"\nid,name\n",
            "users.csv:2: no rows after the column names",
        ),
    ];
    for (text, csv, want) in cases {
        let e = error(&[("workload.toml", &text), ("users.csv", csv)]);
        let shown = String::from_utf8_lossy(&text);
        assert!(e.contains(want), "{shown}\n{e}\nwanted: {want}");
        assert_eq!(e.lines().count(), 1, "{shown}\n{e}");
        let file = e.split(':').next().unwrap_or_default();
        assert!(file.ends_with(".toml") || file.ends_with(".csv"), "{e}");
    }
}

/// A `unique` set run out during the warm-up stops the Webchild for the run: that is counted
/// as the measured run counts it (`data_exhausted`), not a run of no errors and no response.
#[test]
fn a_unique_data_set_run_out_in_the_warmup_is_counted() {
    let server = PerConnection::start(answer_ok);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), USERS).unwrap();
    let text = "[data.users]\nfile = \"users.csv\"\npick = \"unique\"\n\
                [[page]]\nweight = 1\nfiles = [\"/u?id={{users.id}}\"]\n";
    let w = Workload::parse_in(text, "w.toml", dir.path()).unwrap();
    // Two rows: the third page of the warm-up finds none left. The warm-up is far longer than
    // any machine takes for three requests, so the set runs out in it whatever the load; the
    // run ends there, once its one Webchild has stopped.
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        warmup: Duration::from_secs(600),
        stop: Stop::Duration(Duration::from_secs(1)),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(Target::http(server.addr))
    };
    let r = bench::run(&config, &w, &AtomicBool::new(false)).unwrap();
    let exhausted = r.stats.errors.get(ErrorKind::DataExhausted);
    assert_eq!(exhausted, 1, "{:?}", r.stats.errors);
    assert_eq!(r.stats.errors.total(), 1, "{:?}", r.stats.errors);
    assert_eq!(
        r.stats.requests, 0,
        "the set ran out before the measured window"
    );
    server.stop();
}
