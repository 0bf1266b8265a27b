//! What makes an HTTP/2 request one the server refuses, end to end: a field value with NUL, CR
//! or LF (malformed, RFC 9113 8.2.1: the stream is reset, the connection goes on), more fields
//! than HTTP/1.1 allows (431, the same limit), a `host` naming another entity than `:authority`
//! (400, RFC 9113 8.3.1, once both are normalised), a header list past the advertised limit
//! (431, the connection goes on), a connection whose requests keep being refused (GOAWAY
//! ENHANCE_YOUR_CALM), and a valid request read with a protocol violation (not answered, so
//! the GOAWAY must not name it: RFC 9113 6.8).

use std::io::Write;

use crate::common::{connect, exchange, TestServer};
use crate::h2_support::raw::{self, Frame};
use crate::h2_support::Client;

const PROTOCOL_ERROR: u32 = 0x1;
const ENHANCE_YOUR_CALM: u32 = 0xb;

fn resets(frames: &[Frame]) -> Vec<(u32, u32)> {
    (frames.iter())
        .filter(|f| f.0 == raw::RST_STREAM)
        .map(|f| (f.2, u32::from_be_bytes(f.3[..4].try_into().unwrap())))
        .collect()
}

/// The GOAWAY's last stream id and error code.
fn goaway(frames: &[Frame]) -> Option<(u32, u32)> {
    (frames.iter()).find(|f| f.0 == raw::GOAWAY).map(|f| {
        (
            u32::from_be_bytes(f.3[..4].try_into().unwrap()),
            u32::from_be_bytes(f.3[4..8].try_into().unwrap()),
        )
    })
}

#[test]
fn a_field_value_with_nul_cr_or_lf_resets_its_stream_and_the_connection_goes_on() {
    let srv = TestServer::start(|_| {});
    for value in [&b"a\0b"[..], b"a\rb", b"a\nb", b"a\r\nx-injected: 1"] {
        let mut s = connect(srv.addr);
        let mut out = raw::start();
        let mut block = raw::get_block("/a.txt", "localhost");
        raw::literal_name(&mut block, b"x-bad", value);
        raw::frame(
            &mut out,
            raw::HEADERS,
            raw::END_HEADERS | raw::END_STREAM,
            1,
            &block,
        );
        raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
        s.write_all(&out).unwrap();
        let frames = raw::read_until(&mut s, |f| {
            f.iter()
                .any(|f| f.0 == raw::DATA && f.2 == 3 && f.1 & raw::END_STREAM != 0)
        });
        assert_eq!(
            resets(&frames),
            [(1, PROTOCOL_ERROR)],
            "{value:?}: {frames:?}"
        );
        assert!(
            !frames.iter().any(|f| f.2 == 1 && f.0 != raw::RST_STREAM),
            "stream 1 is not answered: {frames:?}"
        );
        assert_eq!(goaway(&frames), None, "{frames:?}");
        assert!(frames.iter().any(|f| f.0 == raw::HEADERS && f.2 == 3));
    }
    srv.stop();
}

#[test]
fn the_field_count_limit_is_http11s() {
    let srv = TestServer::start(|_| {});
    let limit = wire::RequestLimits::default().max_fields();
    let names: Vec<String> = (0..limit).map(|i| format!("x-f{i}")).collect();
    // `:authority` counts as HTTP/1.1's Host: with it, `limit - 1` more fields fit, one more
    // does not.
    for (extra, status) in [(limit - 1, 200), (limit, 431)] {
        let fields: Vec<(&str, &str)> = names[..extra].iter().map(|n| (&n[..], "1")).collect();
        let mut c = Client::new(connect(srv.addr), "localhost");
        assert_eq!(c.get("/a.txt", &fields).status, status, "{extra} fields");
        let mut head = String::from("GET /a.txt HTTP/1.1\r\nHost: localhost\r\n");
        fields
            .iter()
            .for_each(|(n, v)| head.push_str(&format!("{n}: {v}\r\n")));
        head.push_str("Connection: close\r\n\r\n");
        // HTTP/1.1's `Connection` is one more field: one fewer of the others.
        let head = head.replacen(&format!("{}: 1\r\n", names[0]), "", 1);
        assert_eq!(exchange(srv.addr, &head).status, status, "HTTP/1.1");
    }
    srv.stop();
}

#[test]
fn a_host_naming_another_entity_than_the_authority_is_a_400() {
    let srv = TestServer::start(|_| {});
    let mut c = Client::new(connect(srv.addr), "localhost");
    assert_eq!(c.get("/a.txt", &[("host", "elsewhere")]).status, 400);
    // The same host, written in other case: the same entity (RFC 3986 6.2.2.1).
    let r = c.get("/a.txt", &[("host", "LocalHost")]);
    assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
    // The scheme's default port, or an empty one, is no port at all (6.2.3); another port is
    // another entity.
    for host in ["localhost:80", "localhost:"] {
        assert_eq!(c.get("/a.txt", &[("host", host)]).status, 200, "{host}");
    }
    assert_eq!(c.get("/a.txt", &[("host", "localhost:8080")]).status, 400);
    let mut c = Client::new(connect(srv.addr), "LOCALHOST:80");
    assert_eq!(c.get("/a.txt", &[("host", "localhost")]).status, 200);
    assert_eq!(c.get("/a.txt", &[("host", "localhost:443")]).status, 400);
    let mut c = Client::new(connect(srv.addr), "[::1]:80");
    assert_eq!(c.get("/a.txt", &[("host", "[::1]")]).status, 200);
    assert_eq!(c.get("/a.txt", &[("host", "[::2]")]).status, 400);
    srv.stop();
}

#[test]
fn cookie_fields_count_as_one_and_host_beside_the_authority_as_none() {
    let srv = TestServer::start(|_| {});
    let limit = wire::RequestLimits::default().max_fields();
    // One field a cookie, as Firefox sends them (RFC 9113 8.2.3): HTTP/1.1 sees one line.
    let cookies: Vec<String> = (0..80).map(|i| format!("c{i}=v{i}")).collect();
    let fields: Vec<(&str, &str)> = cookies.iter().map(|c| ("cookie", &c[..])).collect();
    let mut c = Client::new(connect(srv.addr), "localhost");
    let r = c.get("/a.txt", &fields);
    assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
    // `:authority` is the Host line: a `host` beside it is not one more.
    let names: Vec<String> = (0..limit - 1).map(|i| format!("x-f{i}")).collect();
    let mut fields: Vec<(&str, &str)> = names.iter().map(|n| (&n[..], "1")).collect();
    fields.push(("host", "localhost"));
    assert_eq!(c.get("/a.txt", &fields).status, 200);
    srv.stop();
}

#[test]
fn a_header_list_past_the_limit_is_a_431_and_the_connection_goes_on() {
    let srv = TestServer::start(|c| c.h2_max_header_list_size = 4096);
    let big = "b".repeat(5000);
    let mut c = Client::new(connect(srv.addr), "localhost");
    // Within HTTP/1.1's head limit, past the header list size the server advertised: refused
    // with 431, and the request sent beside it is served on the same connection.
    let refused = c.submit("GET", "/a.txt", &[("x-big", &big)]);
    let sibling = c.submit("GET", "/a.txt", &[]);
    assert!(c.run_until(|s| [refused, sibling]
        .iter()
        .all(|id| s.responses.get(id).is_some_and(|r| r.done))));
    assert_eq!(c.seen.responses[&refused].status, 431);
    assert_eq!(c.seen.responses[&sibling].status, 200);
    assert_eq!(c.seen.responses[&sibling].body, b"hello");
    assert_eq!(c.seen.goaway, None);
    // Refused again and again, the connection is told to go away, as for any refusal.
    let mut answered = 1;
    while c.seen.goaway.is_none() && answered < 100 {
        assert_eq!(c.get("/a.txt", &[("x-big", &big)]).status, 431);
        answered += 1;
    }
    assert_eq!(c.seen.goaway.map(|g| g.1), Some(ENHANCE_YOUR_CALM));
    assert!((2..=40).contains(&answered), "{answered} refused first");
    srv.stop();
}

#[test]
fn a_connection_whose_requests_keep_being_refused_is_told_to_go_away() {
    let srv = TestServer::start(|_| {});
    let mut c = Client::new(connect(srv.addr), "localhost");
    let mut answered = 0;
    for _ in 0..100 {
        if c.seen.goaway.is_some() {
            break;
        }
        assert_eq!(c.get("/a.txt", &[("host", "elsewhere")]).status, 400);
        answered += 1;
    }
    // The GOAWAY names the last of them (client stream ids are odd).
    assert_eq!(c.seen.goaway, Some((2 * answered - 1, ENHANCE_YOUR_CALM)));
    assert!((2..=40).contains(&answered), "{answered} refused first");
    // Every refusal was answered whole, and the connection is closed.
    assert!(!c.run_until(|_| false));
    // A client sending what it should is served as ever.
    let mut other = Client::new(connect(srv.addr), "localhost");
    assert_eq!(other.get("/a.txt", &[]).status, 200);
    srv.stop();
}

#[test]
fn a_request_read_with_a_protocol_violation_is_not_named_in_the_goaway() {
    let srv = TestServer::start(|_| {});
    // Stream 1 answered first; then a valid request and a violation (an uppercase field name,
    // a connection error the request checks find) in one write: the valid one is never
    // answered, so the GOAWAY names stream 1, not 3.
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    raw::get(&mut out, 1, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    raw::read_until(&mut s, |f| {
        f.iter()
            .any(|f| f.0 == raw::DATA && f.2 == 1 && f.1 & raw::END_STREAM != 0)
    });
    let mut out = Vec::new();
    raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
    let mut block = raw::get_block("/a.txt", "localhost");
    raw::literal_name(&mut block, b"X-Upper", b"1");
    raw::frame(
        &mut out,
        raw::HEADERS,
        raw::END_HEADERS | raw::END_STREAM,
        5,
        &block,
    );
    s.write_all(&out).unwrap();
    let frames = raw::read_until(&mut s, |f| goaway(f).is_some());
    assert_eq!(goaway(&frames), Some((1, PROTOCOL_ERROR)), "{frames:?}");
    assert!(!frames.iter().any(|f| f.2 == 3), "{frames:?}");
    srv.stop();
}
