//! The requests users type: method, header fields and body per URL, checked on the wire by a
//! server that echoes what it received; HEAD framing; counts per status code.

use crate::common;

use bench::{RequestSpec, Stop, Workload};
use common::{config, Behaviour, TestServer};
use std::sync::atomic::AtomicBool;

fn spec(method: &str, headers: &[&str], body: Option<&str>) -> RequestSpec {
    RequestSpec {
        method: Some(method.into()),
        headers: headers
            .iter()
            .map(|h| RequestSpec::parse_header(h).unwrap())
            .collect(),
        body: body.map(|b| b.as_bytes().to_vec()),
    }
}

#[test]
fn method_headers_and_body_go_out_as_given_and_replace_host_and_user_agent() {
    let srv = TestServer::start(Behaviour::Echo);
    let w = Workload::from_paths(&["/echo".into()])
        .unwrap()
        .with_defaults(&spec(
            "POST",
            &["X-A: 1", "Host: example.test", "user-agent: custom/2"],
            Some("hello"),
        ))
        .unwrap();
    let r = bench::run(
        &config(srv.addr, 1, Stop::Pages(3)),
        &w,
        &AtomicBool::new(false),
    )
    .unwrap();
    let sent = "POST /echo HTTP/1.1\r\nX-A: 1\r\nHost: example.test\r\nuser-agent: custom/2\r\n\
                Content-Length: 5\r\n\r\nhello";
    assert_eq!(srv.seen.last_request(), sent);
    assert_eq!(r.stats.requests, 3);
    assert_eq!(r.stats.errors.total(), 0);
    // The echo's body is the request: three times its length, on one connection.
    assert_eq!(r.stats.bytes_body, 3 * sent.len() as u64);
    assert_eq!(r.stats.connects, 1);
    let json = bench::report::json(&r);
    assert_eq!(json["urls"][0]["method"], "POST");
}

#[test]
fn a_files_own_method_wins_and_plain_files_keep_flints_host() {
    let toml = r#"
        [[page]]
        weight = 1
        files = [{ path = "/e", method = "PUT", headers = ["X-B: 2"], body = "x" }]
    "#;
    let w = Workload::parse(toml, "t.toml")
        .unwrap()
        .with_defaults(&spec("POST", &["X-A: 1"], None))
        .unwrap();
    let srv = TestServer::start(Behaviour::Echo);
    bench::run(
        &config(srv.addr, 1, Stop::Pages(1)),
        &w,
        &AtomicBool::new(false),
    )
    .unwrap();
    let host = srv.addr.to_string();
    assert_eq!(
        srv.seen.last_request(),
        format!(
            "PUT /e HTTP/1.1\r\nHost: {host}\r\nUser-Agent: flint\r\nX-A: 1\r\nX-B: 2\r\n\
             Content-Length: 1\r\n\r\nx"
        )
    );
}

#[test]
fn head_responses_end_at_their_head_whatever_their_content_length() {
    // The echo answers a HEAD with the Content-Length a GET's body would have, and no body:
    // read as a body, it would stall each response until the timeout.
    let srv = TestServer::start(Behaviour::Echo);
    let w = Workload::from_paths(&["/h".into()])
        .unwrap()
        .with_defaults(&spec("HEAD", &[], None))
        .unwrap();
    let r = bench::run(
        &config(srv.addr, 1, Stop::Pages(5)),
        &w,
        &AtomicBool::new(false),
    )
    .unwrap();
    // Mis-framed, each would end in a response timeout (an error) instead.
    assert_eq!(r.stats.requests, 5);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.bytes_body, 0);
    assert_eq!(r.stats.connects, 1, "the connection stays in step");
}

#[test]
fn responses_are_counted_per_status_code() {
    let srv = TestServer::start(Behaviour::Status(404));
    let w = Workload::from_paths(&["/missing".into()]).unwrap();
    let r = bench::run(
        &config(srv.addr, 2, Stop::Pages(4)),
        &w,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(r.stats.statuses.get(404), 4);
    assert_eq!(r.stats.statuses.seen().collect::<Vec<_>>(), [(404, 4)]);
    let json = bench::report::json(&r);
    assert_eq!(
        json["summary"]["status_counts"],
        serde_json::json!({"404": 4})
    );
    assert!(bench::report::summary(&r).contains("Statuses:  404 4\n"));
}

#[test]
fn bad_methods_and_headers_are_refused_before_the_run() {
    let w = Workload::from_paths(&["/a".into()]).unwrap();
    let err = w
        .clone()
        .with_defaults(&RequestSpec {
            method: Some("GE T".into()),
            ..RequestSpec::default()
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("method"), "{err}");
    let toml = "[[page]]\nweight = 1\nfiles = [\n  { path = \"/a\", headers = [\"Content-Length: 3\"] },\n]\n";
    let err = Workload::parse(toml, "t.toml").unwrap_err().to_string();
    assert!(err.starts_with("t.toml:4: header Content-Length"), "{err}");
    let toml = "[[page]]\nweight = 1\nfiles = [{ path = \"/a\", methd = \"GET\" }]\n";
    let err = Workload::parse(toml, "t.toml").unwrap_err().to_string();
    assert!(err.contains("methd"), "{err}");
}

#[test]
fn file_entries_with_requests_survive_the_toml_round_trip() {
    let toml = r#"
        [[page]]
        name = "api"
        weight = 2
        files = ["/a", { path = "/a", method = "POST", body = "{}" }, { path = "/b", headers = ["X: y"] }]
    "#;
    let w = Workload::parse(toml, "t.toml").unwrap();
    assert_eq!(
        w.urls,
        ["/a", "/a", "/b"],
        "a path requested two ways is two URLs"
    );
    assert_eq!(w.spec(1).method(), "POST");
    assert_eq!(w.spec(2).headers, [("X".into(), "y".into())]);
    let again = Workload::parse(&w.to_toml(), "again.toml").unwrap();
    assert_eq!(again, w);
}
