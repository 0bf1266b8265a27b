//! HTTP/2 when nghttp2 opens no more streams on a connection (its stream ids ran out, as after
//! 2^30 streams of a long `--streams` run): the connection finishes what it has in flight and
//! the rest goes on a new one, never a spin.

use crate::common;
use crate::h2server;

use bench::{HttpMode, Stop};
use common::{config, workload};
use h2server::{Fault, H2Server};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn when_stream_ids_run_out_the_rest_of_the_page_goes_on_a_new_connection() {
    let server = H2Server::start(Fault::None);
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c", "/d"])]);
    let mut cfg = config(server.addr, 1, Stop::Pages(5));
    cfg.http = HttpMode::Http2;
    // The last client stream id: one stream per connection, then nghttp2 refuses the next.
    cfg.h2_first_stream_id = Some(i32::MAX);
    let (tx, rx) = mpsc::channel();
    // On a thread: a client that spins never returns, and the test must fail, not hang.
    std::thread::spawn(move || {
        let _ = tx.send(bench::run(&cfg, &w, &AtomicBool::new(false)));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the run ended (a refused stream must not spin)")
        .expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((s.requests, s.pages_done), (20, 5));
    assert_eq!(s.http2.streams, 20, "each stream opened once");
    assert_eq!(s.http2.connections, 20, "one stream per connection");
}
