//! The connection syscalls each request shape costs, from the loop's counters over many requests:
//! keep-alive, pipelined 16 deep, HTTP/1.0. The figures are printed (`--nocapture`) so that a
//! change to the I/O path can be compared before and after, and the ones that do not depend on
//! scheduling are asserted.

use std::io::{BufReader, Read, Write};

use crate::common::*;
use serve::ServerStats;

/// Per-request figures of a window: (reads, writes, sendfiles, closes, all counted syscalls).
fn per_request(before: &ServerStats, after: &ServerStats) -> [f64; 5] {
    let n = (after.requests - before.requests) as f64;
    [
        (after.reads - before.reads) as f64 / n,
        (after.writes - before.writes) as f64 / n,
        (after.sendfiles - before.sendfiles) as f64 / n,
        (after.closed - before.closed) as f64 / n,
        (after.syscalls() - before.syscalls()) as f64 / n,
    ]
}

fn print(shape: &str, f: [f64; 5]) {
    eprintln!(
        "{shape:<12} reads {:.3}  writes {:.3}  sendfiles {:.3}  closes {:.3}  syscalls {:.3} per request",
        f[0], f[1], f[2], f[3], f[4]
    );
}

#[test]
fn syscalls_per_request_by_shape() {
    let srv = TestServer::start(|_| {});
    let one = get("/1k.bin");
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(one.as_bytes()).unwrap();
    read_response(&mut r, false).unwrap();

    let before = srv.stats();
    for _ in 0..200 {
        s.write_all(one.as_bytes()).unwrap();
        read_response(&mut r, false).unwrap();
    }
    let ka = per_request(&before, &srv.stats());
    print("keep-alive", ka);
    assert_eq!(
        ka[..4],
        [1.0, 1.0, 0.0, 0.0],
        "one recv and one send per request"
    );

    let batch = one.repeat(16);
    let before = srv.stats();
    for _ in 0..20 {
        s.write_all(batch.as_bytes()).unwrap();
        read_responses(&mut r, 16, false);
    }
    let pipe = per_request(&before, &srv.stats());
    print("pipelined16", pipe);
    assert_eq!(
        pipe[..4],
        [1.0 / 16.0, 1.0 / 16.0, 0.0, 0.0],
        "one recv, one write a batch"
    );

    let before = srv.stats();
    let mut all = Vec::new();
    for _ in 0..100 {
        let mut c = connect(srv.addr);
        c.write_all(b"GET /1k.bin HTTP/1.0\r\n\r\n").unwrap();
        all.clear();
        c.read_to_end(&mut all).unwrap();
        assert!(all.ends_with(&content("1k.bin", 1024)));
    }
    let http10 = per_request(&before, &srv.stats());
    print("http/1.0", http10);
    assert_eq!(
        http10[..4],
        [1.0, 1.0, 0.0, 1.0],
        "recv, send, close per connection"
    );
}
