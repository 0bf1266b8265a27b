//! HTTP/3's sends with UDP GSO: a 1 MiB download arrives whole and byte-exact with far fewer
//! send calls than datagrams (the kernel cut the batches); with GSO turned off at start
//! (`FLINT_H3_NO_GSO`, as when the kernel refuses it) the same download still arrives whole,
//! one datagram a call, and the stats say GSO is off. One test: the environment variable is
//! the process's, so the two servers start one after the other.

// For h3_support/cgi.rs (the CGI fixture, which these tests do not use).
mod cgi_support;
mod common;
mod h3_support;
mod tls_support;

use common::content;
use h3_support::{Certs, Driver};
use http3::H3_NO_ERROR;

const MIB: usize = 1 << 20;
/// Event-loop threads, each with its UDP socket: all are counted without GSO, the ones that
/// never sent too.
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
fn a_download_goes_in_gso_batches_and_whole_without_them() {
    let certs = Certs::new();
    let st = download(&certs);
    // At least the body's worth of full datagrams (at most 1,500 bytes each).
    assert!(st.h3_datagrams_sent >= (MIB / 1500) as u64, "{st:?}");
    assert!(
        st.h3_send_calls * 3 <= st.h3_datagrams_sent,
        "GSO batches: {st:?}"
    );
    assert_eq!(st.h3_gso_off, 0, "{st:?}");

    std::env::set_var("FLINT_H3_NO_GSO", "1");
    let st = download(&certs);
    std::env::remove_var("FLINT_H3_NO_GSO");
    assert!(st.h3_datagrams_sent >= (MIB / 1500) as u64, "{st:?}");
    assert_eq!(st.h3_send_calls, st.h3_datagrams_sent, "{st:?}");
    assert_eq!(st.h3_gso_off, THREADS as u64, "{st:?}");
}
