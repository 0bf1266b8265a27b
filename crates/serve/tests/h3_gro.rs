//! HTTP/3's receiving with `recvmmsg` and UDP GRO: a 1 MiB download (its acknowledgements
//! are what the server reads) arrives whole and byte-exact with every socket batching and
//! asking for GRO; with GRO turned off at start (`FLINT_H3_NO_GRO`, as on a kernel before 5.0)
//! the same download still arrives whole, and the stats say GRO is off on every socket. One
//! test: the environment variable is the process's, so the two servers start one after the
//! other.

mod common;
mod h3_support;
mod tls_support;

use common::content;
use h3_support::{Certs, Driver};
use http3::H3_NO_ERROR;

const MIB: usize = 1 << 20;
/// Event-loop threads, each with its UDP socket: all are counted, the ones that never read too.
const THREADS: usize = 3;

/// Downloads 1 MiB over HTTP/3 from a fresh server; its stats after.
fn download(certs: &Certs) -> serve::ServerStats {
    let srv = certs.serve(|c| c.threads = THREADS);
    std::fs::write(srv.root.path().join("1m.bin"), content("1m.bin", MIB)).unwrap();
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let got = d.fetch(&[("GET", "/1m.bin")]);
    assert_eq!(got[0].status, 200);
    assert!(
        got[0].body == content("1m.bin", MIB),
        "{} bytes",
        got[0].body.len()
    );
    d.client.close(H3_NO_ERROR, b"");
    d.turn();
    srv.stop()
}

#[test]
fn a_download_is_read_with_gro_and_batches_and_whole_without_gro() {
    let certs = Certs::new();
    let st = download(&certs);
    // The handshake and the acknowledgements of about 700 datagrams of body.
    assert!(st.h3_datagrams_received >= 10, "{st:?}");
    assert!(st.h3_recv_calls >= 1, "{st:?}");
    assert_eq!((st.h3_gro_off, st.h3_recvmmsg_off), (0, 0), "{st:?}");

    std::env::set_var("FLINT_H3_NO_GRO", "1");
    let st = download(&certs);
    std::env::remove_var("FLINT_H3_NO_GRO");
    assert!(st.h3_datagrams_received >= 10, "{st:?}");
    assert_eq!(st.h3_gro_off, THREADS as u64, "{st:?}");
    assert_eq!(st.h3_recvmmsg_off, 0, "{st:?}");
}
