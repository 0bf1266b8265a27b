//! Mangled input, deterministic: real client and server byte streams with bytes flipped, cut,
//! repeated and fed in odd-sized pieces. The sessions must answer or fail, never panic, call
//! back only inside recv/send, and close each stream at most once.

mod common;

use std::collections::HashMap;

use common::{get, responder, Event, Pair, Peer};
use http2::{Config, Session};

/// What a client writes for a few requests (one with a body, then reset; a PING) and what the
/// server answers, recorded from a real exchange.
fn recorded() -> (Vec<u8>, Vec<u8>) {
    let mut p = Pair::defaults();
    let mut to_server = Vec::new();
    let mut to_client = Vec::new();
    for i in 0..4 {
        let path = format!("/file{i}");
        p.client
            .submit_request(&get(path.as_bytes()), false)
            .unwrap();
    }
    let post = p.client.submit_request(&get(b"/upload"), true).unwrap();
    p.c.bodies.insert(post, (vec![b'p'; 40_000], 0));
    p.client.submit_ping().unwrap();
    let mut respond = responder(|s| vec![b'r'; 5_000 * s as usize]);
    for round in 0..50 {
        if round == 2 {
            // The POST is never answered (the responder answers only requests without a body).
            p.client
                .submit_rst_stream(post, http2::error_code::CANCEL)
                .unwrap();
        }
        p.client.send(&mut p.c).unwrap();
        to_server.extend_from_slice(&p.c.out);
        p.server.recv(&p.c.out, &mut p.s).unwrap();
        p.c.out.clear();
        respond(&mut p.server, &mut p.s);
        p.server.send(&mut p.s).unwrap();
        to_client.extend_from_slice(&p.s.out);
        p.client.recv(&p.s.out, &mut p.c).unwrap();
        p.s.out.clear();
    }
    assert_eq!(p.c.received.len(), 4, "the GETs were answered");
    assert!(p
        .s
        .events
        .contains(&Event::Rst(post, http2::error_code::CANCEL)));
    assert_eq!(p.s.received[&post].len(), 40_000);
    (to_server, to_client)
}

fn mangle(rng: &mut fastrand::Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.usize(1..8) {
        if out.is_empty() {
            break;
        }
        let at = rng.usize(..out.len());
        match rng.u8(..4) {
            0 => out[at] ^= 1 << rng.u8(..8),
            1 => out[at] = rng.u8(..),
            2 => out.truncate(at),
            _ => {
                let end = (at + rng.usize(1..64)).min(out.len());
                let piece = out[at..end].to_vec();
                out.splice(at..at, piece);
            }
        }
    }
    out
}

/// Feeds `input` to `session` in random pieces, writing after each; stops at a failure.
fn feed(
    rng: &mut fastrand::Rng,
    session: &mut Session<Peer>,
    h: &mut Peer,
    input: &[u8],
    respond: &mut dyn FnMut(&mut Session<Peer>, &mut Peer),
) {
    let mut rest = input;
    while !rest.is_empty() {
        let n = rng.usize(1..=rest.len().min(3_000));
        match session.recv(&rest[..n], h) {
            Ok(used) => assert_eq!(used, n),
            Err(_) => return,
        }
        rest = &rest[n..];
        respond(session, h);
        if session.send(h).is_err() {
            return;
        }
        h.out.clear();
    }
}

fn closed_at_most_once(h: &Peer) {
    let mut closes: HashMap<i32, usize> = HashMap::new();
    for e in &h.events {
        if let Event::Close(s, _) = e {
            *closes.entry(*s).or_default() += 1;
        }
    }
    assert!(closes.values().all(|&n| n == 1), "{closes:?}");
}

#[test]
fn mangled_client_bytes_never_break_a_server() {
    let (to_server, _) = recorded();
    let mut rng = fastrand::Rng::with_seed(0x5eed_0001);
    for _ in 0..1_500 {
        let input = mangle(&mut rng, &to_server);
        let mut server = Session::server(&Config::server()).unwrap();
        let mut s = Peer::new();
        let mut respond = responder(|_| vec![b'x'; 100]);
        feed(&mut rng, &mut server, &mut s, &input, &mut respond);
        closed_at_most_once(&s);
    }
    assert_eq!(http2::stray_callbacks(), 0);
}

#[test]
fn mangled_server_bytes_never_break_a_client() {
    let (_, to_client) = recorded();
    let mut rng = fastrand::Rng::with_seed(0x5eed_0002);
    for _ in 0..1_500 {
        let input = mangle(&mut rng, &to_client);
        let mut client = Session::client(&Config::client()).unwrap();
        let mut c = Peer::new();
        for i in 0..4 {
            let path = format!("/file{i}");
            client.submit_request(&get(path.as_bytes()), false).unwrap();
        }
        client.send(&mut c).unwrap();
        c.out.clear();
        feed(&mut rng, &mut client, &mut c, &input, &mut |_, _| {});
        closed_at_most_once(&c);
    }
    assert_eq!(http2::stray_callbacks(), 0);
}
