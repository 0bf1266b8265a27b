//! An application workload over HTTP/2 builds each request as its stream opens and keeps each
//! stream's response for its checks: what that costs in allocations per request, measured (a
//! short run against a long one, as `engine_alloc_app.rs` does over HTTP/1.1) and held to the
//! same ceiling. nghttp2 copies the header list into its own stream state with C's malloc,
//! which this counting allocator does not see: what is pinned is flint's side (the request's
//! buffers, each stream slot's head, body and request body, the session's values).
//!
//! The server here allocates nothing per request (fixed buffers, a response prebuilt), and this
//! file holds a single test, so no other test runs beside it.

#[path = "common/h2_fixed.rs"]
mod h2_fixed;
#[path = "common/per_connection.rs"]
mod per_connection;
#[path = "common/steady_state.rs"]
mod steady_state;

use bench::{BenchConfig, HttpMode, Stop, Workload};
use h2_fixed::serve;
use per_connection::PerConnection;
use std::time::Duration;
use steady_state::{config, measure, short_and_long};
use test_support::alloc::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Templates in the path and a header, a status check (the server answers `:status: 200` and
/// 100 bytes of `x`).
const TEMPLATED: &str = r#"
[[page]]
weight = 1
files = [{ path = "/item?id={{random 1 100000}}&w={{webchild}}", headers = { "X-Seq" = "{{seq}}" },
           expect = { status = 200 } }]
"#;

/// A body check and a regex extraction used by the next file (which waits for it), a data
/// column in a header.
const CHECKED: &str = r#"
[data.users]
file = "users.csv"

[[page]]
weight = 1
files = [{ path = "/a?id={{users.id}}&r={{random 1 100000}}", headers = { "X-User" = "{{users.name}}" },
           expect = { status = 200, body_contains = "xxxx" },
           extract = { word = { regex = "(x{3})" } } },
         { path = "/b?w={{word}}" },
         { path = "/c?id={{users.id}}" }]
"#;

const USERS: &str = "id,name\n1,Ann Lee\n2,Bo\n3,Cy\n";

#[test]
fn allocations_per_templated_request_over_http2_are_measured_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), USERS).unwrap();
    let server = PerConnection::start(serve);
    // A stream slot's buffers, the request's and an extracted value's are each made once and
    // reused: the ceiling, as over HTTP/1.1, only leaves room for the long run's extra seconds
    // of time series (a few allocations a second against thousands of requests).
    for (name, text) in [("templated", TEMPLATED), ("checked", CHECKED)] {
        let w = Workload::parse_in(text, "app.toml", dir.path()).unwrap();
        assert!(w.plan().is_some());
        let config = |ms| BenchConfig {
            http: HttpMode::Http2,
            ..config(server.addr, Stop::Duration(Duration::from_millis(ms)))
        };
        let (short, long) = short_and_long(|ms| measure(&config(ms), &w));
        assert!(long.1 >= short.1 + 1000, "{name}: too few requests to tell");
        let per_request = long.0.saturating_sub(short.0) as f64 / (long.1 - short.1) as f64;
        println!("{name}: {per_request:.3} allocations per request ({short:?} {long:?})");
        assert!(
            per_request <= 0.05,
            "{name}: {per_request:.3} allocations per request"
        );
    }
    server.stop();
}
