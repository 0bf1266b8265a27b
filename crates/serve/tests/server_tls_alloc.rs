//! Allocations per request over TLS keep-alive, counted on the server's threads only (the test's
//! own rustls client allocates for every record it seals or opens, and is not counted).
//!
//! flint's side of the path allocates nothing per request, as over plain TCP; what is counted
//! here is rustls 0.23's: it opens each received record into a fresh `Vec` (its plaintext queue)
//! and seals each outgoing record into another (its record queue), in both of its APIs, so a
//! request and its response cost one allocation each way. The test holds it to that: a change
//! on flint's side that allocates per request, or a response that takes more records than it
//! should, fails it.

mod common;
mod tls_support;

use std::io::{Read, Write};

use common::*;
use test_support::alloc::{allocations, exclude_current_thread, Counting};
use tls_support::*;

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn tls_keep_alive_allocates_only_rustls_record_buffers() {
    exclude_current_thread();
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.revalidate_ms = 600_000);
    let client = certs.client(&both_versions());
    let mut s = tls_connect(srv.addr, &client);
    let one = get("/1k.bin").into_bytes();
    let sixteen = one.repeat(16);
    let ka_len = {
        s.write_all(&one).unwrap();
        let r = read_response(&mut std::io::BufReader::new(&mut s), false).unwrap();
        let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        "HTTP/1.1 200 OK\r\n".len() + head + 2 + r.body.len()
    };
    let mut buf = vec![0u8; ka_len * 16];
    let mut round = |s: &mut TlsStream| {
        for _ in 0..100 {
            s.write_all(&one).unwrap();
            s.read_exact(&mut buf[..ka_len]).unwrap();
        }
        for _ in 0..10 {
            s.write_all(&sixteen).unwrap();
            s.read_exact(&mut buf[..ka_len * 16]).unwrap();
        }
    };
    round(&mut s); // warm-up: pools, queues and rustls' buffers reach their working size
    let before = allocations();
    round(&mut s);
    let allocated = allocations() - before;
    // 100 keep-alive requests: one record in, one out each; 10 batches of 16: one record in,
    // two out (16 responses of 1.2 KB fill 2 records of 16 KiB).
    let records = 100 * 2 + 10 * 3;
    eprintln!("server allocations: {allocated} for 260 requests in {records} records");
    // Slack for chance, not for flint: a record that arrives split across two reads can make
    // rustls grow its read buffer once; 260 requests allocating would still be far over it.
    assert!(
        allocated <= records + 10,
        "{allocated} allocations for 260 requests; rustls' record buffers account for {records}"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!(st.requests, 1 + 2 * 260);
}
