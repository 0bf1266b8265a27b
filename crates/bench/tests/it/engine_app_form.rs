//! A body is a form, its values `+`/percent-encoded, whoever says it is one: its entry's own
//! `Content-Type`, or the command line's `-H` (which applies to every file its entry does not
//! give a field of the same name). A value holding `&` or `=` then stays one value, where sent
//! raw it would add fields of its own. The same through the hosts protocol, whose workers
//! compile the plan again from what the coordinator sends.

use crate::app_server::{ok_with, AppServer};

use bench::workload::{RequestSpec, Workload};
use bench::{BenchConfig, Stop, Target};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const FORM: &str = "application/x-www-form-urlencoded";

/// One POST whose body takes a value holding a space, `&`, `=`, `/` and a non-ASCII letter;
/// `headers`: the entry's own.
fn workload(dir: &std::path::Path, headers: &str) -> Workload {
    std::fs::write(dir.join("s.csv"), "name\n\"a b&c=d/é\"\n").unwrap();
    let text = format!(
        "[data.s]\nfile = \"s.csv\"\n\n[[page]]\nweight = 1\nfiles = [ {{ path = \"/echo\", \
         method = \"POST\", body = \"name={{{{s.name}}}}\"{headers} }} ]\n"
    );
    Workload::parse_in(&text, "w.toml", dir).unwrap()
}

fn cli(headers: &[&str]) -> RequestSpec {
    RequestSpec {
        headers: headers
            .iter()
            .map(|h| RequestSpec::parse_header(h).unwrap())
            .collect(),
        ..RequestSpec::default()
    }
}

/// The body and Content-Type of the one request `w` makes.
fn sent(w: &Workload) -> (String, String) {
    let server = AppServer::start(|_| ok_with(&[], "ok"));
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        stop: Stop::Pages(1),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(Target::http(server.addr))
    };
    let r = bench::run(&config, w, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.stats.requests, 1, "{:?}", r.stats.errors);
    let got = server.received();
    server.stop();
    assert_eq!(got.len(), 1, "{got:?}");
    let ct = got[0].field("content-type").unwrap_or("").to_owned();
    (String::from_utf8(got[0].body.clone()).unwrap(), ct)
}

const ENCODED: &str = "name=a+b%26c%3Dd%2F%C3%A9";

#[test]
fn a_body_is_form_encoded_when_its_own_fields_say_it_is_a_form() {
    let dir = tempfile::tempdir().unwrap();
    let own = format!(", headers = {{ \"Content-Type\" = \"{FORM}\" }}");
    let w = workload(dir.path(), &own).with_defaults(&cli(&[])).unwrap();
    assert_eq!(sent(&w), (ENCODED.to_owned(), FORM.to_owned()));
}

#[test]
fn a_body_is_form_encoded_when_the_command_line_says_it_is_a_form() {
    let dir = tempfile::tempdir().unwrap();
    let header = format!("Content-Type: {FORM}");
    let w = workload(dir.path(), "")
        .with_defaults(&cli(&[&header]))
        .unwrap();
    assert_eq!(sent(&w), (ENCODED.to_owned(), FORM.to_owned()));
    // As a worker gets it: the workload through the hosts protocol's JSON.
    let wire = serde_json::to_string(&w).unwrap();
    let worker: Workload = serde_json::from_str(&wire).unwrap();
    assert_eq!(sent(&worker), (ENCODED.to_owned(), FORM.to_owned()));
}

#[test]
fn an_entrys_own_content_type_wins_over_the_command_lines_form() {
    let dir = tempfile::tempdir().unwrap();
    let own = ", headers = { \"content-type\" = \"text/plain\" }";
    let header = format!("Content-Type: {FORM}");
    let w = workload(dir.path(), own)
        .with_defaults(&cli(&[&header]))
        .unwrap();
    let want = ("name=a b&c=d/é".to_owned(), "text/plain".to_owned());
    assert_eq!(sent(&w), want);
    // And a command line that says nothing of the type leaves the body as it is.
    let w = workload(dir.path(), "")
        .with_defaults(&cli(&["X-A: 1"]))
        .unwrap();
    assert_eq!(sent(&w).0, "name=a b&c=d/é");
}

/// A command line that makes no body a form leaves the plan as the workload compiled it (the
/// same plan, not a copy of it): one that says nothing of the type, and a form type over an
/// entry with a `Content-Type` of its own.
#[test]
fn a_command_line_that_changes_no_body_leaves_the_plan_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let own = ", headers = { \"content-type\" = \"text/plain\" }";
    let form = format!("Content-Type: {FORM}");
    for (own, header) in [("", "X-A: 1"), (own, form.as_str())] {
        let w = workload(dir.path(), own);
        let compiled: *const bench::app::plan::Plan = w.plan().unwrap();
        let w = w.with_defaults(&cli(&[header])).unwrap();
        assert!(std::ptr::eq(compiled, w.plan().unwrap()), "{own} {header}");
    }
    // One that makes a body a form compiles the plan again.
    let w = workload(dir.path(), "");
    let compiled: *const bench::app::plan::Plan = w.plan().unwrap();
    let w = w.with_defaults(&cli(&[&form])).unwrap();
    assert!(!std::ptr::eq(compiled, w.plan().unwrap()));
}
