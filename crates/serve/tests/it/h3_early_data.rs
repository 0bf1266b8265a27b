//! HTTP/3 0-RTT against flint serve (`h3_early_data`): a client resuming a session sends its
//! requests before the handshake is done. What is safe to run twice (a GET of a file) is
//! served (a GET, HEAD or OPTIONS of a file); what is not (a POST, a GET of a proxied path or
//! of a CGI program) is answered 425 Too Early (RFC 8470) and never reaches the upstream or
//! the program (none is counted in `proxy_requests` or `cgi_requests`); nor does a protected
//! path's request reach Basic authentication's check (`auth_failed` stays 0). `h3_early_requests` and
//! `h3_too_early` count them, and the access log has each as any other request. Without
//! `h3_early_data` the server's tickets allow no early data: nothing goes before the
//! handshake, and nothing is counted.

use crate::cgi_support::{Scripts, HELLO};
use crate::common::TestServer;
use crate::h3_support::cgi::{alice_zone, basic};
use crate::h3_support::{flush, recv_until_deadline, Certs, BOUND};
use crate::proxy_support::{dead_port, mount};
use http3::{Client, ClientConfig, ClientEvent, EarlyData, MAX_DATAGRAM};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

pub(crate) const FILE: usize = 5_000;

/// What one connection did: the requests' statuses in the order asked, whether they went
/// before the handshake was done, what became of its 0-RTT, and the session it was given.
pub(crate) struct Outcome {
    pub statuses: Vec<u16>,
    pub sent_early: bool,
    pub early: EarlyData,
    pub session: Vec<u8>,
}

/// One connection from a new port offering `session`: `requests` (method, path; no body)
/// sent as soon as the client may send (in 0-RTT when the session allows it), every response
/// read whole, then the session it was given. What the server sends is held from the client
/// until `hold` says it may go: the client's Finished cannot leave before, so the server
/// sees the requests while the handshake is not done (else it may read them after the
/// Finished, when they are no replay and are served as any other).
pub(crate) fn fetch(
    config: &mut ClientConfig,
    server: SocketAddr,
    session: &[u8],
    requests: &[(&str, &str)],
    hold: &dyn Fn() -> bool,
) -> Outcome {
    fetch_with(config, server, session, requests, &[], hold)
}

/// `fetch` with `extra` fields on every request.
pub(crate) fn fetch_with(
    config: &mut ClientConfig,
    server: SocketAddr,
    session: &[u8],
    requests: &[(&str, &str)],
    extra: &[(&str, &str)],
    hold: &dyn Fn() -> bool,
) -> Outcome {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let local = sock.local_addr().unwrap();
    let mut c = Client::resume(config, "localhost", local, server, session).unwrap();
    let (mut buf, mut out) = (vec![0u8; 65536], vec![0u8; MAX_DATAGRAM]);
    let mut streams: Vec<u64> = Vec::new();
    let mut statuses: HashMap<u64, u16> = HashMap::new();
    let mut finished = 0;
    let mut sent_early = false;
    let mut held: Vec<Vec<u8>> = Vec::new();
    let mut holding = true;
    let start = Instant::now();
    // The first flight goes before anything is asked: a resumed session's 0-RTT keys exist
    // once the Initial is written.
    flush(&mut c, &sock);
    while !(finished == requests.len() && c.session().is_some()) {
        assert!(
            start.elapsed() < BOUND,
            "not done within {BOUND:?}: {:?}",
            c.closed()
        );
        assert!(!c.is_closed(), "closed: {:?}", c.closed());
        if streams.is_empty() && c.can_send() {
            sent_early = !c.is_ready();
            for (method, path) in requests {
                let mut fields = vec![
                    (&b":method"[..], method.as_bytes()),
                    (b":scheme", b"https"),
                    (b":authority", b"localhost"),
                    (b":path", path.as_bytes()),
                ];
                fields.extend(extra.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
                streams.push(c.send_request(&fields, true).unwrap());
            }
        }
        flush(&mut c, &sock);
        if let Some((n, from)) = recv_until_deadline(&c, &sock, &mut buf) {
            match holding {
                true => held.push(buf[..n].to_vec()),
                false => drop(c.recv(&mut buf[..n], from)),
            }
        }
        // Held only once the requests went early: a client that cannot send before the
        // handshake needs the server's answer first.
        if holding && (!streams.is_empty() || !c.can_send()) && hold() {
            holding = false;
            for mut d in held.drain(..) {
                let _ = c.recv(&mut d, server);
            }
        }
        if c.deadline().is_some_and(|d| d <= Instant::now()) {
            c.on_deadline();
        }
        while let Some(e) = c.poll() {
            match e {
                ClientEvent::Response { stream, status, .. } => {
                    statuses.insert(stream, status);
                }
                ClientEvent::Data { stream } => {
                    while c.recv_body(stream, &mut buf).unwrap_or(0) > 0 {}
                }
                ClientEvent::Finished { .. } => finished += 1,
                ClientEvent::Reset { stream, code } => panic!("stream {stream} reset: {code:#x}"),
                _ => {}
            }
        }
    }
    let early = c.early_data();
    let session = c.session().unwrap().to_vec();
    c.close(http3::H3_NO_ERROR, b"");
    while let Some(d) = c.send(&mut out) {
        let _ = sock.send_to(&out[..d.len], d.to);
    }
    Outcome {
        statuses: streams.iter().map(|s| statuses[s]).collect(),
        sent_early,
        early,
        session,
    }
}

/// A full handshake's GET of `/5k.bin` (nothing to resume: no 0-RTT), for the session it
/// gives.
pub(crate) fn first_visit(config: &mut ClientConfig, server: SocketAddr) -> Outcome {
    fetch(config, server, &[], &[("GET", "/5k.bin")], &|| true)
}

/// [`fetch_with`] resuming `session`, what the server sends held from the client until `srv`
/// has counted every one of `requests` early: the server has them while the handshake waits
/// on the client.
pub(crate) fn fetch_early(
    config: &mut ClientConfig,
    srv: &TestServer,
    session: &[u8],
    requests: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> Outcome {
    let hold = || srv.stats().h3_early_requests >= requests.len() as u64;
    fetch_with(config, srv.addr, session, requests, extra, &hold)
}

#[test]
fn in_0rtt_a_get_is_served_and_a_post_or_a_proxied_path_gets_425_unforwarded() {
    let certs = Certs::new();
    let log = certs.ca.dir().join("access.log");
    let log_path = log.clone();
    // An upstream nothing listens on: a request forwarded there would get a 502 at once, and
    // be counted in `proxy_requests`.
    let m = mount("/api/", &[format!("http://{}", dead_port())], "");
    let scripts = Scripts::new();
    scripts.add("hello", HELLO);
    let srv = certs.serve(|c| {
        c.h3_early_data = true;
        c.proxy.push(m);
        scripts.mount(c);
        c.access_log = Some(log_path);
    });
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client().early_data();
    // A full handshake gives the session (no early data without one).
    let first = first_visit(&mut config, srv.addr);
    assert_eq!(first.statuses, [200]);
    assert!(!first.sent_early, "nothing to resume: no 0-RTT");
    assert_eq!(first.early, EarlyData::NotSent);
    let asked = [
        ("GET", "/5k.bin"),
        ("HEAD", "/5k.bin"),
        ("OPTIONS", "/5k.bin"),
        ("POST", "/5k.bin"),
        ("GET", "/api/x"),
        ("GET", "/cgi-bin/hello"),
    ];
    let second = fetch_early(&mut config, &srv, &first.session, &asked, &[]);
    assert!(
        second.sent_early,
        "the resumed session's ticket allows 0-RTT"
    );
    assert_eq!(second.early, EarlyData::Accepted);
    // HEAD is served, OPTIONS gets a file's own answer to it (405, GET and HEAD allowed):
    // neither is too early.
    assert_eq!(second.statuses, [200, 200, 405, 425, 425, 425]);
    let st = srv.stop();
    assert_eq!(st.h3_early_requests, 6, "{st:?}");
    assert_eq!(st.h3_too_early, 3, "{st:?}");
    assert_eq!(st.http3_requests, 7, "{st:?}");
    assert_eq!(st.proxy_requests, 0, "never forwarded: {st:?}");
    assert_eq!(
        (st.cgi_requests, st.cgi_starts),
        (0, 0),
        "never run: {st:?}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}");
    assert!(
        (lines.iter()).any(|l| l.contains("\"GET /cgi-bin/hello HTTP/3.0\" 425 ")),
        "{text}"
    );
    assert!(
        (lines.iter()).any(|l| l.contains("\"POST /5k.bin HTTP/3.0\" 425 ")),
        "{text}"
    );
    assert!(
        (lines.iter()).any(|l| l.contains("\"GET /api/x HTTP/3.0\" 425 ")),
        "{text}"
    );
}

#[test]
fn without_h3_early_data_nothing_goes_before_the_handshake() {
    let certs = Certs::new();
    let srv = certs.serve(|_| {});
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client().early_data();
    let first = first_visit(&mut config, srv.addr);
    let asked = [("GET", "/5k.bin"), ("POST", "/5k.bin")];
    let second = fetch(&mut config, srv.addr, &first.session, &asked, &|| true);
    assert!(
        !second.sent_early,
        "the server's ticket allows no early data"
    );
    assert_eq!(second.early, EarlyData::NotSent);
    // After the handshake a POST is not too early: the static file's own answer.
    assert_eq!(second.statuses[0], 200);
    assert_ne!(second.statuses[1], 425);
    let st = srv.stop();
    assert_eq!(
        (st.h3_resumed, st.h3_early_requests, st.h3_too_early),
        (1, 0, 0),
        "{st:?}"
    );
}

#[test]
fn a_rejected_0rtt_is_sent_again_after_the_handshake() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.h3_early_data = true);
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client().early_data();
    let first = first_visit(&mut config, srv.addr);
    // The ticket's key name changed, as a restarted server sees it: the session is offered
    // and its 0-RTT sent, but the server cannot open the ticket and drops what came early.
    let mut foreign = first.session.clone();
    let ticket = crate::h3_resume::ticket_of(&foreign);
    for b in &mut foreign[ticket.start..ticket.start + 16] {
        *b ^= 0x5a;
    }
    let asked = [("GET", "/5k.bin"), ("POST", "/5k.bin")];
    let second = fetch(&mut config, srv.addr, &foreign, &asked, &|| true);
    assert!(
        second.sent_early,
        "the client's copy of the ticket allows 0-RTT"
    );
    assert_eq!(second.early, EarlyData::Rejected);
    // QUIC sent them again in 1-RTT: answered as after any handshake, no 425.
    assert_eq!(second.statuses[0], 200);
    assert_ne!(second.statuses[1], 425);
    let st = srv.stop();
    assert_eq!((st.h3_resumed, st.h3_early_requests), (0, 0), "{st:?}");
    assert_eq!(st.http3_requests, 3, "{st:?}");
}

#[test]
fn in_0rtt_a_protected_path_gets_425_before_its_credentials_are_checked() {
    let certs = Certs::new();
    let zone = alice_zone(certs.ca.dir(), "/private");
    let srv = certs.serve(|c| {
        c.h3_early_data = true;
        c.auth.push(zone);
    });
    std::fs::create_dir(srv.root.path().join("private")).unwrap();
    std::fs::write(srv.root.path().join("private/secret.txt"), b"secret").unwrap();
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client().early_data();
    let first = first_visit(&mut config, srv.addr);
    // Wrong credentials, from an address the handshake has not proven: were they checked,
    // each would be a failure the limiter holds against the address.
    let bad = basic("alice", "nope");
    let asked = [
        ("GET", "/private/secret.txt"),
        ("POST", "/private/secret.txt"),
    ];
    let extra = [("authorization", bad.as_str())];
    let second = fetch_early(&mut config, &srv, &first.session, &asked, &extra);
    assert_eq!(second.early, EarlyData::Accepted);
    assert_eq!(second.statuses, [425, 425]);
    let st = srv.stop();
    assert_eq!((st.h3_early_requests, st.h3_too_early), (2, 2), "{st:?}");
    assert_eq!(
        (st.auth_failed, st.auth_ok, st.auth_missing, st.auth_limited),
        (0, 0, 0, 0),
        "{st:?}"
    );
}
