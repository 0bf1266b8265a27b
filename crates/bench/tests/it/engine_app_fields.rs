//! Every header field of a response the client accepted is seen by the checks, the
//! extractions and the cookie jar, the last of 128 as the first; a head past what the client
//! reads (more fields, or more bytes) is an error that says so, not a malformed one.

use crate::app_server::{ok_with, AppServer};

use bench::stats::ErrorKind;
use bench::workload::Workload;
use bench::{BenchConfig, Stop, Target};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wire::response::MAX_RESPONSE_HEADERS;

/// `/many` answers a status line, 3 fields of its own and `n` `Set-Cookie` fields (`c0=0` up
/// to `c{n-1}`), with Content-Length the last; `/echo` answers `ok`.
fn server(n: usize) -> AppServer {
    AppServer::start(move |path| {
        let mut fields = vec![
            "Server: t".to_owned(),
            "Date: today".to_owned(),
            "X-A: 1".to_owned(),
        ];
        if path.starts_with("/many") {
            fields.extend((0..n).map(|i| format!("Set-Cookie: c{i}={i}; Path=/")));
        }
        ok_with(&fields, "ok")
    })
}

fn config(server: &AppServer) -> BenchConfig {
    BenchConfig {
        concurrency: 1,
        threads: 1,
        stop: Stop::Pages(1),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(Target::http(server.addr))
    }
}

#[test]
fn the_last_field_of_a_full_head_is_extracted_and_kept_in_the_jar() {
    // The most fields a head may have: 3, the cookies, and Content-Length.
    let n = MAX_RESPONSE_HEADERS - 4;
    let last = n - 1;
    let server = server(n);
    let text = format!(
        "[[page]]\nweight = 1\nfiles = [\n  {{ path = \"/many\", extract = {{ v = {{ cookie = \
         \"c{last}\" }} }}, expect = {{ header_present = [\"Content-Length\"] }} }},\n  \
         \"/echo?v={{{{v}}}}\",\n]\n"
    );
    let w = Workload::parse(&text, "w.toml").unwrap();
    let r = bench::run(&config(&server), &w, &AtomicBool::new(false)).unwrap();
    let got = server.received();
    server.stop();
    assert_eq!(
        (r.stats.requests, r.stats.errors.total()),
        (2, 0),
        "{:?} {:?}",
        r.stats.errors,
        r.stats.check_failures
    );
    assert_eq!(got[1].path, format!("/echo?v={last}"));
    // The jar keeps the newest 50, the last set among them.
    let cookie = got[1].field("cookie").unwrap_or("");
    let mut kept: Vec<usize> = (cookie.split("; "))
        .map(|c| c.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, (n - 50..n).collect::<Vec<_>>(), "{cookie}");
}

#[test]
fn a_head_of_more_fields_than_the_client_reads_is_too_large_not_malformed() {
    let server = server(MAX_RESPONSE_HEADERS + 10);
    let w = Workload::parse("[[page]]\nweight = 1\nfiles = [\"/many\"]\n", "w.toml").unwrap();
    let r = bench::run(&config(&server), &w, &AtomicBool::new(false)).unwrap();
    server.stop();
    let e = &r.stats.errors;
    assert_eq!(e.total(), 1, "{e:?}");
    assert_eq!(e.get(ErrorKind::MalformedHeaders), 0, "{e:?}");
    let kind = ErrorKind::ALL.iter().find(|k| e.get(**k) == 1).unwrap();
    assert_eq!(kind.name(), "head_too_large");
}
