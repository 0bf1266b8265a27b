//! HTTP/3 on two threads, a client whose source port changes mid-connection, more than once
//! (what a NAT that rebinds its mapping does). The kernel's `SO_REUSEPORT` hash of the new
//! 4-tuple would send about half of the new ports to the thread that does not hold the
//! connection, which drops the packets (`h3_dropped`); the program serve attaches to the group
//! hands each short-header packet to the thread its connection ID names, so every request from
//! every new port is answered on the one connection and nothing is dropped.
//!
//! The same run on a server with `h3_steer = false` (the kernel's hash alone) shows the first
//! test would fail without the program: some new port's packets are dropped.

use crate::common::TestServer;
use crate::h3_support::{Certs, Driver};

/// Connections, each moved [`MOVES`] times to a new source port. With the hash alone each new
/// port lands on the other thread with probability 1/2: none of 160 does with probability
/// 2^-160.
const CONNECTIONS: usize = 16;

/// New source ports a connection moves to, one after the other: more than the seven that are
/// new paths of quiche's (past them a new address takes an old one's path, the `http3`
/// crate's `server/paths.rs`).
const MOVES: usize = 10;

/// What became of the requests sent from the new ports.
struct Rebinds {
    /// Requests answered 200 with the file, one a port.
    answered: usize,
    /// Ports whose request was not answered before the server counted a datagram dropped
    /// (the rest of that connection's moves are not tried).
    lost: usize,
}

/// [`CONNECTIONS`] times: a connection, a GET, then [`MOVES`] times a new port and a GET
/// from it, each waited for until it is answered or the server drops a datagram; then the
/// connection closed.
fn rebinds(srv: &TestServer, certs: &Certs) -> Rebinds {
    let mut r = Rebinds {
        answered: 0,
        lost: 0,
    };
    let mut config = certs.client();
    for _ in 0..CONNECTIONS {
        let mut d = Driver::connect(&mut config, srv.addr);
        let first = d.fetch(&[("GET", "/a.txt")]);
        assert_eq!((first[0].status, &first[0].body[..]), (200, &b"hello"[..]));
        for _ in 0..MOVES {
            let dropped = srv.stats().h3_dropped;
            d.rebind();
            let stream = d.request("GET", "/a.txt", &[]);
            // Each turn waits for datagrams at most 20 ms: the stats are asked a few times
            // per round trip.
            let mut lost = false;
            d.until(|d| {
                let done = d.got.get(&stream).is_some_and(|g| g.finished);
                lost = !done && srv.stats().h3_dropped > dropped;
                done || lost
            });
            if lost {
                r.lost += 1;
                break;
            }
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

#[test]
fn a_client_whose_port_changes_keeps_its_connection() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.threads = 2);
    let r = rebinds(&srv, &certs);
    let st = srv.stats();
    assert_eq!((r.answered, r.lost), (CONNECTIONS * MOVES, 0), "{st:?}");
    assert_eq!(st.h3_dropped, 0, "{st:?}");
    assert_eq!(st.h3_steer_off, 0, "{st:?}");
    assert_eq!(st.http3_connections, CONNECTIONS as u64, "{st:?}");
    assert_eq!(
        st.h3_address_changes,
        (CONNECTIONS * MOVES) as u64,
        "{st:?}"
    );
    assert_eq!(
        st.http3_requests,
        (CONNECTIONS * (1 + MOVES)) as u64,
        "{st:?}"
    );
    // Every connection closed: the server stops at once.
    srv.stop();
}

#[test]
fn without_the_program_some_new_port_reaches_the_other_thread() {
    let certs = Certs::new();
    // A lost connection's request holds the shutdown until its idle timeout: a short one.
    let srv = certs.serve(|c| {
        c.threads = 2;
        c.h3_steer = false;
        c.h3_idle_timeout_ms = 2000;
    });
    let r = rebinds(&srv, &certs);
    let st = srv.stats();
    assert_eq!(st.h3_steer_off, 2, "{st:?}");
    assert!(
        r.lost > 0,
        "all new ports hashed to the right thread: {st:?}"
    );
    assert!(st.h3_dropped > 0, "{st:?}");
    srv.stop();
}

/// The thread holding `d`'s connection: the first two bytes of the server's connection ID.
fn thread_of(d: &Driver) -> u16 {
    let id = d.client.destination_id();
    u16::from_be_bytes([id[0], id[1]])
}

/// At shutdown a thread with no connection ends its loop first. Were its UDP socket closed
/// then, the kernel would move the group's last socket (thread 2's) into its place, and the
/// program's index 2 would name no socket: thread 2's connections would go by the hash, half
/// of their new ports to thread 1, which drops them. The sockets are closed once every loop
/// has ended, so each move of a connection on thread 2 while thread 1 still drains is
/// answered. (Thread 0 ends at some point of the moves: each move after it would be lost with
/// probability 1/2 were the socket closed.)
#[test]
fn while_the_server_drains_the_last_thread_s_connections_are_still_steered() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.threads = 3);
    let mut config = certs.client();
    // Two connections on thread 2 and one on thread 1, wherever the hash put them; those on
    // thread 0 closed.
    let (mut on1, mut on2) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        if on1.len() == 1 && on2.len() == 2 {
            break;
        }
        let mut d = Driver::connect(&mut config, srv.addr);
        match thread_of(&d) {
            1 if on1.is_empty() => on1.push(d),
            2 if on2.len() < 2 => on2.push(d),
            _ => {
                d.client.close(0, b"");
                d.turn();
            }
        }
    }
    assert!(
        on1.len() == 1 && on2.len() == 2,
        "200 connections, the hash shunned a thread"
    );
    // Each holds the shutdown: a response it does not read (its windows stay shut).
    for d in on1.iter_mut().chain(on2.iter_mut()) {
        d.reads = false;
        let stream = d.request("GET", "/4m.bin", &[]);
        d.until(|d| d.got.get(&stream).is_some_and(|g| g.status == 200));
    }
    srv.handle.shutdown();
    // Seven moves each (the paths quiche keeps a connection: each a new one), each a PING
    // answered on the new port, spread over some seconds by turns that wait (at most 20 ms
    // each): thread 0 ends once the connections closed on it have drained (3 PTOs, about 3 s
    // here).
    for d in &mut on2 {
        for _ in 0..MOVES_ALLOWED {
            d.rebind();
            let heard = d.client.stats().packets_received;
            d.client.ping();
            d.until(|d| d.client.stats().packets_received > heard);
            for _ in 0..25 {
                d.turn();
            }
        }
    }
    for d in on1.iter_mut().chain(on2.iter_mut()) {
        d.client.close(0, b"");
        d.turn();
    }
    let st = srv.stop();
    assert_eq!(st.h3_steer_off, 0, "{st:?}");
}

/// The changes of address that are new paths of quiche's (its `active_connection_id_limit`,
/// 8, less the first); the `http3` crate lets later ones take old paths.
const MOVES_ALLOWED: usize = 7;
