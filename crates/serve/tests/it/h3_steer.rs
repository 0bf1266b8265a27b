//! HTTP/3 on two threads, a client whose source port changes mid-connection (what a NAT that
//! rebinds its mapping does). The kernel's `SO_REUSEPORT` hash of the new 4-tuple would send
//! about half of the new ports to the thread that does not hold the connection, which drops
//! the packets (`h3_dropped`); the program serve attaches to the group hands each
//! short-header packet to the thread its connection ID names, so every request from every new
//! port is answered on the one connection and nothing is dropped.
//!
//! The same run without the program (`FLINT_H3_NO_STEER`, read by every server that starts)
//! is a child process: this test executable again, running only the ignored
//! `hash_only_child`, with the variable set in the child's environment alone. It shows the
//! first test would fail without the program: some new port's packets are dropped.

use std::process::Command;

use crate::common::TestServer;
use crate::h3_support::{Certs, Driver};

/// Connections, each moved once to a new source port. With the hash alone each new port lands
/// on the other thread with probability 1/2: none of 16 does with probability 2^-16. (One move
/// a connection: quiche keeps the path it left as in use, and with the two paths its default
/// `active_connection_id_limit` allows, a second move finds no room and is dropped by it.)
const PORTS: usize = 16;

/// What became of the requests sent from the new ports.
struct Rebinds {
    /// Requests answered 200 with the file, one a port.
    answered: usize,
    /// Ports whose request was not answered before the server counted a datagram dropped.
    lost: usize,
}

/// [`PORTS`] times: a connection, a GET, a new port and a GET from it, waited for until it
/// is answered or the server drops a datagram, then the connection closed.
fn rebinds(srv: &TestServer, certs: &Certs) -> Rebinds {
    let mut r = Rebinds {
        answered: 0,
        lost: 0,
    };
    let mut config = certs.client();
    for _ in 0..PORTS {
        let mut d = Driver::connect(&mut config, srv.addr);
        let first = d.fetch(&[("GET", "/a.txt")]);
        assert_eq!((first[0].status, &first[0].body[..]), (200, &b"hello"[..]));
        let dropped = srv.stats().h3_dropped;
        d.rebind();
        let stream = d.request("GET", "/a.txt", &[]);
        // Each turn waits for datagrams at most 20 ms: the stats are asked a few times per
        // round trip.
        let mut lost = false;
        d.until(|d| {
            let done = d.got.get(&stream).is_some_and(|g| g.finished);
            lost = !done && srv.stats().h3_dropped > dropped;
            done || lost
        });
        if lost {
            r.lost += 1;
        } else {
            let got = &d.got[&stream];
            assert_eq!((got.status, &got.body[..]), (200, &b"hello"[..]));
            r.answered += 1;
        }
        // Its CONNECTION_CLOSE sent (not waited for: a lost connection's is never heard).
        d.client.close(0, b"");
        d.turn();
    }
    r
}

fn serve_two_threads(certs: &Certs) -> TestServer {
    certs.serve(|c| c.threads = 2)
}

#[test]
fn a_client_whose_port_changes_keeps_its_connection() {
    let certs = Certs::new();
    let srv = serve_two_threads(&certs);
    let r = rebinds(&srv, &certs);
    let st = srv.stats();
    assert_eq!((r.answered, r.lost), (PORTS, 0), "{st:?}");
    assert_eq!(st.h3_dropped, 0, "{st:?}");
    assert_eq!(st.h3_steer_off, 0, "{st:?}");
    assert_eq!(st.http3_connections, PORTS as u64, "{st:?}");
    assert_eq!(st.http3_requests, 2 * PORTS as u64, "{st:?}");
    // Every connection closed: the server stops at once.
    srv.stop();
}

#[test]
fn without_the_program_some_new_port_reaches_the_other_thread() {
    let exe = std::env::current_exe().expect("the test executable");
    let mut child = Command::new(exe);
    child.args(["--ignored", "--exact", "h3_steer::hash_only_child"]);
    child.env("FLINT_H3_NO_STEER", "1");
    // The child's own waits are bounded (`BOUND` each); this one is bounded by them.
    let out = child.output().expect("run the child test");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // It ran (a filter matching nothing would succeed too).
    assert!(text.contains("1 passed"), "{text}");
}

/// Run by the test above with `FLINT_H3_NO_STEER` set: the kernel's hash alone.
#[test]
#[ignore = "run by without_the_program_some_new_port_reaches_the_other_thread"]
fn hash_only_child() {
    assert!(std::env::var_os("FLINT_H3_NO_STEER").is_some());
    let certs = Certs::new();
    let srv = serve_two_threads(&certs);
    let r = rebinds(&srv, &certs);
    // Not stopped before: a lost connection's request holds the shutdown (until its idle
    // timeout; the drop waits a bounded time).
    let st = srv.stats();
    assert_eq!(st.h3_steer_off, 2, "{st:?}");
    assert!(r.lost > 0, "all {PORTS} ports hashed to one thread: {st:?}");
    assert!(st.h3_dropped > 0, "{st:?}");
}
