//! An application workload's requests are built per use: what that costs in allocations per
//! request, measured (a short run against a long one, as `engine_alloc.rs` does for the static
//! path, which allocates nothing per request) and held to a ceiling.
//!
//! A counting global allocator sees every allocation in this test binary, so the server here
//! allocates nothing per request, and this file holds a single test.

#[path = "common/per_connection.rs"]
mod per_connection;
#[path = "common/steady_state.rs"]
mod steady_state;

use bench::{BenchConfig, Stop, Workload};
use per_connection::{read_until_stopped, HeadEnds, PerConnection};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use steady_state::{config, measure, short_and_long};
use test_support::alloc::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 12\r\n\r\n<p>fine</p>\n";

/// The same with a session cookie set on every response, as many applications do.
const WITH_COOKIE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: sid=s%3A42; Path=/; HttpOnly\r\nContent-Length: 12\r\n\r\n<p>fine</p>\n";

fn serve(s: TcpStream, stop: &AtomicBool) {
    answer(s, stop, RESPONSE);
}

fn serve_cookie(s: TcpStream, stop: &AtomicBool) {
    answer(s, stop, WITH_COOKIE);
}

fn answer(mut s: TcpStream, stop: &AtomicBool, response: &[u8]) {
    let mut heads = HeadEnds::default();
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        for &b in data {
            if heads.at(b) && s.write_all(response).is_err() {
                return false;
            }
        }
        true
    });
}

/// Templates in the path and a header, a status and content type check, a cookie jar (empty
/// unless the server sets one).
const TEMPLATED: &str = r#"
[[page]]
weight = 1
files = [{ path = "/item?id={{random 1 100000}}&w={{webchild}}", headers = { "X-Seq" = "{{seq}}" },
           expect = { status = 200, content_type = "text/html" } }]
"#;

/// The same with a body check and a regex extraction used by the next file.
const CHECKED: &str = r#"
[[page]]
weight = 1
files = [{ path = "/a?id={{random 1 100000}}", expect = { body_contains = "fine" },
           extract = { word = { regex = "<p>([a-z]+)</p>" } } },
         { path = "/b?w={{word}}" }]
"#;

/// `bench/app.sh`'s page (a data column and a random number in the path, a header from data,
/// a body check) and a value extracted and carried to the next file.
const APPLICATION: &str = r#"
[data.users]
file = "users.csv"

[[page]]
weight = 1
files = [{ path = "/item?id={{users.id}}&r={{random 1 100000}}", headers = { "X-User" = "{{users.name}}" },
           expect = { status = 200, body_contains = "fine" },
           extract = { word = { regex = "<p>([a-z]+)</p>" } } },
         { path = "/next?w={{word}}&id={{users.id}}" }]
"#;

const USERS: &str = "id,name\n1,Ann Lee\n2,Bo\n3,Cy\n";

#[test]
fn allocations_per_templated_request_are_measured_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), USERS).unwrap();
    let server = PerConnection::start(serve);
    let cookie_server = PerConnection::start(serve_cookie);
    // (workload, server, ceiling of allocations per request): a cookie the server sets again
    // as it was is not stored again, and the `Cookie` field is written without collecting; an
    // extracted value is copied into the session's buffer for it, its regex groups found in a
    // room each Webchild made once. Nothing left allocates per request: the ceilings only
    // leave room for the long run's extra seconds of time series (a few allocations a second
    // against thousands of requests).
    // The last: the Webchild's session lent to each of its six connections in turn.
    for (name, text, addr, ceiling, connections) in [
        ("application", APPLICATION, server.addr, 0.05, 1),
        ("templated", TEMPLATED, server.addr, 0.05, 1),
        ("checked", CHECKED, server.addr, 0.05, 1),
        ("cookie set", TEMPLATED, cookie_server.addr, 0.05, 1),
        ("six connections", APPLICATION, cookie_server.addr, 0.05, 6),
    ] {
        let w = Workload::parse_in(text, "app.toml", dir.path()).unwrap();
        assert!(w.plan().is_some());
        let (short, long) = short_and_long(|ms| {
            let cfg = BenchConfig {
                connections_per_child: connections,
                ..config(addr, Stop::Duration(Duration::from_millis(ms)))
            };
            measure(&cfg, &w)
        });
        assert!(long.1 >= short.1 + 1000, "{name}: too few requests to tell");
        let per_request = long.0.saturating_sub(short.0) as f64 / (long.1 - short.1) as f64;
        println!("{name}: {per_request:.3} allocations per request ({short:?} {long:?})");
        assert!(
            per_request <= ceiling,
            "{name}: {per_request:.3} allocations per request"
        );
    }
    server.stop();
    cookie_server.stop();
}
