//! Nothing is allocated per request over HTTP/2 either: a short run and a run with many times
//! its requests make (almost) the same number of allocations. nghttp2 allocates its stream state
//! with C's malloc, which this counting allocator does not see: what is pinned is flint's own
//! side (the header lists, the stream table, the output queue, the page logic).
//!
//! The server here allocates nothing per request (fixed buffers, a response prebuilt), and this
//! file holds a single test, so no other test runs beside it.

#[path = "common/h2_fixed.rs"]
mod h2_fixed;
#[path = "common/per_connection.rs"]
mod per_connection;
#[path = "common/steady_state.rs"]
mod steady_state;

use bench::{BenchConfig, HttpMode, Workload};
use h2_fixed::serve;
use per_connection::PerConnection;
use steady_state::{assert_steady, config};
use test_support::alloc::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn no_allocation_per_request_over_http2() {
    let server = PerConnection::start(serve);
    let addr = server.addr;
    let pages = Workload::from_pages([
        ("a".to_string(), 1.0, vec!["/a.html", "/b.gif", "/c.gif"]),
        ("b".to_string(), 2.0, vec!["/d.gif"]),
    ])
    .unwrap();
    let one = Workload::from_pages([("a".to_string(), 1.0, vec!["/a.html"])]).unwrap();
    for (name, w, streams) in [("pages", &pages, None), ("-m 8", &one, Some(8))] {
        assert_steady(name, w, |stop| BenchConfig {
            http: HttpMode::Http2,
            streams,
            ..config(addr, stop)
        });
    }
    server.stop();
}
