//! A request an application workload cannot send (a value with a line break or NUL for a
//! header field, a value never extracted) ends its page: a failed page, and an error of its
//! own kind that the summary, the JSON and the thresholds all see. The server never had it:
//! its count stays the client's `requests + unfinished`.

use crate::app_server::{ok_with, AppServer};

use bench::app::plan::SessionOptions;
use bench::stats::ErrorKind;
use bench::thresholds::Threshold;
use bench::workload::Workload;
use bench::{BenchConfig, RunResult, Stop, Target};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// `/crlf` has a value holding CR LF in its body; `/login` gives `X-Token`.
fn server() -> AppServer {
    AppServer::start(|path| match path {
        "/crlf" => ok_with(&[], "tok=\"abc\r\nX-Evil: 1\""),
        "/login" => ok_with(&["X-Token: t1".to_owned()], "ok"),
        _ => ok_with(&[], "ok"),
    })
}

fn run(server: &AppServer, w: &Workload, pages: u64) -> RunResult {
    let config = BenchConfig {
        concurrency: 2,
        threads: 1,
        stop: Stop::Pages(pages),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(Target::http(server.addr))
    };
    bench::run(&config, w, &AtomicBool::new(false)).unwrap()
}

/// The kind named `name`, which a run of these workloads must count.
fn kind(name: &str) -> ErrorKind {
    let kind = ErrorKind::ALL.iter().find(|k| k.name() == name);
    *kind.unwrap_or_else(|| panic!("no error kind {name}"))
}

/// What every such run must agree on: the errors are the unsent requests alone, each page they
/// ended is a failed page, the JSON and a threshold say so, and the server had the rest.
fn agrees(r: &RunResult, server: AppServer, unsent: ErrorKind, n: u64) {
    let got = server.received();
    server.stop();
    let e = &r.stats.errors;
    assert_eq!((e.get(unsent), e.total()), (n, n), "{e:?}");
    let abandoned: u64 = r.stats.pages.iter().map(|p| p.errors).sum();
    assert_eq!(abandoned, n);
    assert_eq!(got.len() as u64, r.stats.requests + r.stats.unfinished);
    let json = serde_json::to_value(bench::report::record(r)).unwrap();
    assert_eq!(json["summary"]["errors"], n, "{}", json["summary"]);
    assert_eq!(json["errors_by_kind"][unsent.name()], n);
    let verdict = "errors<1".parse::<Threshold>().unwrap().judge(r);
    assert!(!verdict.pass, "{verdict:?}");
}

#[test]
fn a_value_that_would_split_a_head_fails_its_page_as_an_error() {
    let server = server();
    let text = r#"
[[page]]
weight = 1
files = [
  { path = "/crlf", extract = { t = { regex = 'tok="([^"]*)"' } } },
  { path = "/echo", headers = { "X-Tok" = "{{t}}" } },
]
"#;
    let w = Workload::parse(text, "w.toml").unwrap();
    let r = run(&server, &w, 8);
    assert_eq!((r.stats.requests, r.stats.pages_done), (8, 0));
    agrees(&r, server, kind("unsafe_value_unsent"), 8);
}

#[test]
fn a_value_never_extracted_fails_its_page_as_an_error() {
    let server = server();
    // Values are forgotten as each page starts: the second page never has its token.
    let text = r#"
[[page]]
weight = 1
files = [ { path = "/login", extract = { tok = { header = "X-Token" } } } ]

[[page]]
weight = 99
files = [ { path = "/account", headers = { "X-Tok" = "{{tok}}" } } ]
"#;
    let mut w = Workload::parse(text, "w.toml").unwrap();
    w.set_session(SessionOptions {
        cookies: true,
        reset_per_page: true,
    });
    let r = run(&server, &w, 20);
    let (login, account) = (&r.stats.pages[0], &r.stats.pages[1]);
    assert_eq!((account.hits, login.errors), (0, 0));
    assert!(account.errors > 0, "99 in 100 pages need the token");
    assert_eq!(r.stats.requests, login.hits);
    agrees(&r, server, kind("missing_value_unsent"), account.errors);
}
