//! A client whose address changes again and again, as behind a NAT that rebinds its mapping:
//! one connection lives through twenty new ports, a request from each answered whole there.
//! quiche keeps a path for every address a connection had (seven changes' worth); past them a
//! new address takes an old one's path if its IP is one the connection proved, and is dropped
//! if not (`server/paths.rs`).

mod common;

use common::memory::Certs;
use common::udp::{get, pattern, Driver, UdpServer};
use http3::{ClientEvent, Limits};
use std::time::{Duration, Instant};

/// The wait for each response, at most.
const BOUND: Duration = Duration::from_secs(20);
/// New ports the client moves to, one after the other.
const CHANGES: u64 = 20;
/// Each response's body: several datagrams, more than three times a request's (what a
/// server sends to an address it has not validated yet).
const LEN: usize = 30_000;
/// The paths quiche keeps for a connection (the crate's `active_connection_id_limit`): the
/// first address and seven changes.
const PATHS: u64 = 8;

/// A GET of [`LEN`] bytes: the bytes received and those that matched the pattern, or the
/// client's state if it was not answered whole within [`BOUND`].
fn fetch(d: &mut Driver) -> Result<(usize, usize), String> {
    let stream = ask(d)?;
    answer(d, stream)
}

/// Sends a GET of [`LEN`] bytes: its stream.
fn ask(d: &mut Driver) -> Result<u64, String> {
    (d.client)
        .send_request(&get(&format!("/bytes/{LEN}")), true)
        .map_err(|e| e.to_string())
}

/// The answer to `ask`'s GET on `stream`, as `fetch` gives it.
fn answer(d: &mut Driver, stream: u64) -> Result<(usize, usize), String> {
    let (mut len, mut good, mut finished) = (0, 0, false);
    let mut buf = vec![0u8; 65536];
    let start = Instant::now();
    while !finished && !d.client.is_closed() && start.elapsed() < BOUND {
        for ev in d.turn() {
            match ev {
                ClientEvent::Data { stream: s } if s == stream => loop {
                    let n = d.client.recv_body(stream, &mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    good += (buf[..n].iter().enumerate())
                        .filter(|&(i, &b)| b == pattern(len + i))
                        .count();
                    len += n;
                },
                ClientEvent::Finished { stream: s } if s == stream => finished = true,
                _ => {}
            }
        }
    }
    if finished {
        Ok((len, good))
    } else {
        Err(format!(
            "{len} bytes, closed: {:?}, stats: {:?}",
            d.client.closed(),
            d.client.stats()
        ))
    }
}

#[test]
fn a_connection_lives_through_twenty_changes_of_its_clients_port() {
    let certs = Certs::new();
    let limits = Limits::default();
    let server = UdpServer::start(certs.server(&limits));
    let mut config = certs.client(&limits);
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
    let mut ports = vec![d.port()];
    for change in 0..=CHANGES {
        if change > 0 {
            d.rebind();
            ports.push(d.port());
        }
        let got = fetch(&mut d);
        assert_eq!(got, Ok((LEN, LEN)), "after {change} changes of port");
        // The server's loop counts before it answers (the same turn read the request).
        let log = server.log.lock().unwrap();
        assert_eq!(
            (log.accepted, log.connections, log.address_changes),
            (1, 1, change),
            "after {change} changes of port: {log:?}"
        );
    }
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len() as u64, CHANGES + 1, "every port a new one");
    assert!(server.log.lock().unwrap().closed.is_empty());
}

/// Datagrams with the connection's ID that do not decrypt, from new ports (anyone who saw the
/// ID can send them): no address is taken for them, and the client goes on where it is.
#[test]
fn datagrams_from_new_ports_that_do_not_decrypt_move_nothing() {
    let certs = Certs::new();
    let limits = Limits::default();
    let server = UdpServer::start(certs.server(&limits));
    let mut config = certs.client(&limits);
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
    assert_eq!(fetch(&mut d), Ok((LEN, LEN)));
    let forged = forged(&d.client.destination_id());
    let strangers: Vec<_> = (0..20)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"))
        .collect();
    for s in &strangers {
        s.send_to(&forged, server.addr).unwrap();
    }
    // Sent after them, read after them (one socket's queue on loopback).
    assert_eq!(fetch(&mut d), Ok((LEN, LEN)));
    let log = server.log.lock().unwrap();
    assert_eq!(
        (log.accepted, log.connections, log.address_changes),
        (1, 1, 0),
        "{log:?}"
    );
}

/// Past quiche's paths, garbage with the connection's ID from every old address, then a copy
/// of the client's packet from a new port ahead of it: what quiche did not read orders
/// nothing, so the copy takes over the least recently heard from old path, not the client's
/// current one, and the client, going on from where it is, makes no further change (it
/// did, counted, when the garbage made the current path the least recent).
#[test]
fn garbage_from_old_addresses_leaves_the_current_one_in_place() {
    let certs = Certs::new();
    let limits = Limits::default();
    let server = UdpServer::start(certs.server(&limits));
    let mut config = certs.client(&limits);
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
    assert_eq!(fetch(&mut d), Ok((LEN, LEN)));
    for change in 1..PATHS {
        d.rebind();
        assert_eq!(fetch(&mut d), Ok((LEN, LEN)), "after {change} changes");
    }
    d.send_from_left(&forged(&d.client.destination_id()));
    // A PING while nothing is under way (what the server sends the copy's port until the
    // client is heard from again is then no response's data), its copy read first and
    // counted as a change.
    d.copy_via = Some(std::net::UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"));
    d.client.ping();
    let start = Instant::now();
    while server.log.lock().unwrap().address_changes < PATHS {
        assert!(start.elapsed() < BOUND, "the copy was not taken");
        d.turn();
    }
    assert!(d.copy_via.is_none());
    // The client's own packets from where it is count none.
    assert_eq!(fetch(&mut d), Ok((LEN, LEN)));
    let log = server.log.lock().unwrap();
    assert_eq!(
        (log.accepted, log.connections, log.address_changes),
        (1, 1, PATHS),
        "{log:?}"
    );
    assert!(log.closed.is_empty());
}

/// A short-header packet with connection ID `id` that does not decrypt.
fn forged(id: &[u8]) -> Vec<u8> {
    let mut forged = vec![0x41u8];
    forged.extend_from_slice(id);
    forged.extend((0..100u8).map(|i| i.wrapping_mul(37)));
    forged
}

/// The client's Handshake packets from another port: quiche reads them on the path it has
/// (long headers make no path) and answers at the first address, so no address is taken for
/// them and none is counted; the client's later changes count as ever.
#[test]
fn long_headers_from_a_new_port_are_no_change_of_address() {
    let certs = Certs::new();
    let limits = Limits::default();
    let server = UdpServer::start(certs.server(&limits));
    let mut config = certs.client(&limits);
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.long_via = Some(std::net::UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"));
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
    d.long_via = None;
    assert!(d.diverted > 0, "no long header went from the other port");
    assert_eq!(fetch(&mut d), Ok((LEN, LEN)));
    {
        let log = server.log.lock().unwrap();
        assert_eq!(
            (log.accepted, log.connections, log.address_changes),
            (1, 1, 0),
            "{} datagrams from the other port: {log:?}",
            d.diverted
        );
    }
    // quiche's seven new paths are all the client's own.
    for change in 1..PATHS {
        d.rebind();
        assert_eq!(fetch(&mut d), Ok((LEN, LEN)), "after {change} changes");
    }
    let log = server.log.lock().unwrap();
    assert_eq!(log.address_changes, PATHS - 1, "{log:?}");
    assert!(log.closed.is_empty());
}

/// Past quiche's paths, the connection's own packets from an IP it never proved (a client on
/// its eighth network, or an attacker's copy sent from a victim's address) are dropped unread
/// and counted, nothing sent there; the client, on a new port of its first IP, goes on and
/// its request is answered.
#[test]
fn past_the_paths_an_ip_not_proved_is_never_answered() {
    let certs = Certs::new();
    let limits = Limits::default();
    let server = UdpServer::start(certs.server(&limits));
    let mut config = certs.client(&limits);
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
    assert_eq!(fetch(&mut d), Ok((LEN, LEN)));
    for change in 1..PATHS {
        d.rebind();
        assert_eq!(
            fetch(&mut d),
            Ok((LEN, LEN)),
            "after {change} changes of port"
        );
    }
    let elsewhere = d.rebind_to([127, 0, 0, 2]);
    let before = d.received;
    let stream = ask(&mut d).unwrap();
    // Until the server has dropped some of it, or answered there.
    let start = Instant::now();
    while server.log.lock().unwrap().address_changes_refused == 0 && d.received == before {
        assert!(start.elapsed() < BOUND, "nothing refused, nothing answered");
        d.turn();
    }
    let log = format!("{:?}", server.log.lock().unwrap());
    assert_eq!(
        d.received - before,
        0,
        "datagrams received at {elsewhere}: {log}"
    );
    d.rebind();
    // Lost from 127.0.0.2, sent again from the new port.
    assert_eq!(answer(&mut d, stream), Ok((LEN, LEN)));
    let log = server.log.lock().unwrap();
    let late = d.waiting_at(elsewhere);
    assert_eq!(late, 0, "datagrams sent to {elsewhere} later: {log:?}");
    assert!(log.address_changes_refused > 0, "{log:?}");
    assert_eq!(
        (log.accepted, log.connections, log.address_changes),
        (1, 1, PATHS),
        "{log:?}"
    );
    assert!(log.closed.is_empty());
}
