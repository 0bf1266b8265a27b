//! A client whose address changes again and again, as behind a NAT that rebinds its mapping:
//! one connection lives through twenty new ports, a request from each answered whole there.
//! quiche keeps a path for every address a connection had (seven changes' worth); past them a
//! new address takes an old one's path (`server/paths.rs`).

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

/// A GET of [`LEN`] bytes: the bytes received and those that matched the pattern, or the
/// client's state if it was not answered whole within [`BOUND`].
fn fetch(d: &mut Driver) -> Result<(usize, usize), String> {
    let stream = (d.client)
        .send_request(&get(&format!("/bytes/{LEN}")), true)
        .map_err(|e| e.to_string())?;
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
    let id = d.client.destination_id();
    let mut forged = vec![0x41u8];
    forged.extend_from_slice(&id);
    forged.extend((0..100u8).map(|i| i.wrapping_mul(37)));
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
