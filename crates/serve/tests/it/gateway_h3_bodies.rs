//! Request bodies whose length is not said, over HTTP/3: gathered whole (within
//! `max_body_bytes`) before a program or an upstream hears of them, which are then told the
//! length (RFC 3875 4.1.2), as HTTP/2 does; past the limit, 413 and no program started.

use crate::common::content;
use crate::h3_support::cgi::{alice_zone, CgiH3};
use crate::h3_support::{Driver, Got};
use crate::proxy_support::{mount, Req, Step, Upstream};

/// An upstream answering with the request's body and the length it was told.
fn echo(r: &Req) -> Vec<Step> {
    let said = r.field("content-length").unwrap_or("none").to_string();
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nX-Told: {said}\r\nContent-Length: {}\r\n\r\n",
        r.body.len()
    )
    .into_bytes();
    out.extend_from_slice(&r.body);
    vec![Step::Write(out)]
}

/// POSTs `body` to `path` with no `content-length`, in pieces of 7 000 bytes with a turn of
/// the connection between them (the server sees the request before its body's end); then
/// waits for the response.
fn post_unsaid(d: &mut Driver, path: &str, body: &[u8]) -> Got {
    post_unsaid_with(d, path, &[], body)
}

/// [`post_unsaid`] with `extra` fields.
fn post_unsaid_with(d: &mut Driver, path: &str, extra: &[(&str, &str)], body: &[u8]) -> Got {
    let stream = d.open("POST", path, extra, false);
    let mut at = 0;
    d.until(|d| {
        let end = (at + 7_000).min(body.len());
        let last = end == body.len();
        at += d
            .client
            .send_body(stream, &body[at..end], last)
            .unwrap_or(0);
        // A response before the body is all sent (413): nothing more to send.
        at == body.len() || d.got.get(&stream).is_some_and(|g| g.status != 0)
    });
    d.wait(&[stream]).remove(0)
}

#[test]
fn a_body_of_unknown_length_reaches_a_program_and_an_upstream_whole_with_its_length() {
    let fx = CgiH3::new();
    fx.add(
        "echo",
        "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nprintf '%s:' \"$CONTENT_LENGTH\"\nexec cat\n",
    );
    let up = Upstream::start(echo);
    let m = mount("/api/", &[up.url()], "");
    let (srv, mut d) = fx.start(|c| {
        c.proxy.push(m);
        c.max_body_bytes = 100_000;
    });
    let body = content("unsaid", 60_000);

    let r = post_unsaid(&mut d, "/cgi-bin/echo", &body);
    assert_eq!((r.status, r.reset), (200, None), "{:?}", r.fields);
    let mut want = b"60000:".to_vec();
    want.extend_from_slice(&body);
    assert!(r.body == want, "echo: {} bytes", r.body.len());

    // An empty body that ends after its head: nothing attached, no length (RFC 3875 4.1.2),
    // as over HTTP/2.
    let r = post_unsaid(&mut d, "/cgi-bin/echo", b"");
    assert_eq!((r.status, &r.body[..]), (200, &b":"[..]));

    let r = post_unsaid(&mut d, "/api/echo", &body);
    assert_eq!((r.status, r.field("x-told")), (200, Some("60000")));
    assert!(r.body == body, "echoed: {} bytes", r.body.len());

    d.close();
    let st = srv.stop();
    // Each counted once, though answered only once its body was whole.
    assert_eq!((st.http3_requests, st.cgi_starts), (3, 2));
    assert_eq!((st.status_4xx, st.proxy_requests), (0, 1));
}

#[test]
fn a_body_of_unknown_length_past_the_limit_gets_413_and_starts_no_program() {
    let fx = CgiH3::new();
    fx.add(
        "echo",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nexec cat\n",
    );
    let (srv, mut d) = fx.start(|c| c.max_body_bytes = 20_000);
    let r = post_unsaid(&mut d, "/cgi-bin/echo", &vec![b'x'; 40_000]);
    assert_eq!(r.status, 413, "{r:?}");
    // The limit itself passes, on the same connection.
    let r = post_unsaid(&mut d, "/cgi-bin/echo", &vec![b'y'; 20_000]);
    assert_eq!((r.status, r.body.len()), (200, 20_000), "{:?}", r.fields);
    d.close();
    let st = srv.stop();
    assert_eq!((st.cgi_starts, st.status_4xx, st.http3_requests), (1, 1, 2));
}

/// Opens `n` POSTs to `path` with no `content-length`, then sends each `len` bytes without
/// ending it; their streams.
fn open_unsaid(d: &mut Driver, path: &str, n: usize, len: usize) -> Vec<u64> {
    let streams: Vec<u64> = (0..n).map(|_| d.open("POST", path, &[], false)).collect();
    let body = vec![b'g'; len];
    let mut sent = vec![0; n];
    d.until(|d| {
        for (i, &s) in streams.iter().enumerate() {
            let refused = d.got.get(&s).is_some_and(|g| g.status != 0);
            if sent[i] < len && !refused {
                sent[i] += d.client.send_body(s, &body[sent[i]..], false).unwrap_or(0);
            }
        }
        (streams.iter().zip(&sent))
            .all(|(s, &at)| at == len || d.got.get(s).is_some_and(|g| g.status != 0))
    });
    streams
}

#[test]
fn gathered_bodies_past_the_connections_budget_get_503_and_the_server_answers_others() {
    let fx = CgiH3::new();
    fx.add(
        "count",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s' \"$CONTENT_LENGTH\"\n",
    );
    // A connection's gathered bodies may hold 4 x 40 000 bytes: each of these holds up to
    // 40 000 (`protocol/gather.rs`), so four at most fit, and the eight do not.
    let (srv, mut d) = fx.start(|c| c.max_body_bytes = 40_000);
    let streams = open_unsaid(&mut d, "/cgi-bin/count", 8, 39_000);
    // The client has handed every byte to QUIC, not the server received them: ended now, the
    // first bodies would start their programs and give their room back before the last came,
    // and more than four would fit. At most four fit, so four at least are refused once all
    // came (none has ended to give room back): the ends go only then.
    d.until(|d| {
        let refused = streams
            .iter()
            .filter(|s| d.got.get(s).is_some_and(|g| g.status != 0));
        refused.count() >= 4
    });
    // Every one ends (one refused may refuse the end: it has its answer).
    for &s in &streams {
        let _ = d.client.send_body(s, &[], true);
    }
    let got = d.wait(&streams);
    let ok = got.iter().filter(|g| g.status == 200).count();
    for g in &got {
        match g.status {
            200 => assert_eq!(&g.body[..], &b"39000"[..], "{g:?}"),
            status => assert_eq!(status, 503, "{g:?}"),
        }
    }
    assert!((1..=4).contains(&ok), "{ok} of 8 gathered: {got:?}");
    // The room is given back: the same connection gathers again.
    let r = post_unsaid(&mut d, "/cgi-bin/count", &[b'z'; 39_000]);
    assert_eq!((r.status, &r.body[..]), (200, &b"39000"[..]));
    d.close();
    let st = srv.stop();
    assert_eq!(
        (st.cgi_starts, st.status_5xx),
        (ok as u64 + 1, 8 - ok as u64)
    );
}

#[test]
fn many_small_posts_at_once_under_a_small_body_limit_all_reach_their_programs() {
    let fx = CgiH3::new();
    fx.add(
        "count",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s' \"$CONTENT_LENGTH\"\n",
    );
    let (srv, mut d) = fx.start(|c| c.max_body_bytes = 4096);
    // Twenty bodies of unknown length gathered at once, each far under the limit.
    let streams = open_unsaid(&mut d, "/cgi-bin/count", 20, 100);
    for &s in &streams {
        let _ = d.client.send_body(s, &[], true);
    }
    for got in d.wait(&streams) {
        assert_eq!((got.status, &got.body[..]), (200, &b"100"[..]), "{got:?}");
    }
    d.close();
    let st = srv.stop();
    assert_eq!((st.cgi_starts, st.status_5xx), (20, 0));
}

#[test]
fn a_gathered_request_on_a_protected_path_is_checked_once() {
    let fx = CgiH3::new();
    fx.add(
        "who",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s:%s' \"$REMOTE_USER\" \"$CONTENT_LENGTH\"\n",
    );
    let zone = alice_zone(fx.certs.ca.dir(), "/cgi-bin");
    let (srv, mut d) = fx.start(|c| c.auth.push(zone));
    // alice:pw-alice
    let creds = [("authorization", "Basic YWxpY2U6cHctYWxpY2U=")];
    let r = post_unsaid_with(&mut d, "/cgi-bin/who", &creds, &[b'a'; 20_000]);
    assert_eq!((r.status, &r.body[..]), (200, &b"alice:20000"[..]), "{r:?}");
    d.close();
    let st = srv.stop();
    // Its verdict at its head kept for its end: one check, one success.
    assert_eq!(
        (st.auth_ok, st.auth_failed, st.auth_missing),
        (1, 0, 0),
        "{st:?}"
    );
}

#[test]
fn a_gathered_body_its_program_has_not_taken_still_counts_for_its_connection() {
    let fx = CgiH3::new();
    let gate = fx.file("open");
    fx.add(
        "hold",
        &format!(
            "i=0\nwhile [ ! -e {g} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\ncat >/dev/null\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n",
            g = gate.display()
        ),
    );
    fx.add(
        "count",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s' \"$CONTENT_LENGTH\"\n",
    );
    // Room for 4 x 200 000 gathered bytes on the connection.
    let (srv, mut d) = fx.start(|c| c.max_body_bytes = 200_000);
    // Four bodies gathered whole, handed to programs that take none of them yet (a pipe
    // takes 64 KiB: the rest stays with the server).
    let held = open_unsaid(&mut d, "/cgi-bin/hold", 4, 190_000);
    for &s in &held {
        d.client.send_body(s, &[], true).expect("end");
    }
    d.until(|_| srv.stats().cgi_starts == 4);
    // A fifth finds the connection's room taken.
    let r = post_unsaid(&mut d, "/cgi-bin/count", &[b'q'; 190_000]);
    assert_eq!(r.status, 503, "{r:?}");
    std::fs::write(&gate, b"").unwrap();
    for got in d.wait(&held) {
        assert_eq!((got.status, &got.body[..]), (200, &b"ok"[..]), "{got:?}");
    }
    // Once the programs have their bodies, the room is back.
    let r = post_unsaid(&mut d, "/cgi-bin/count", &[b'r'; 190_000]);
    assert_eq!((r.status, &r.body[..]), (200, &b"190000"[..]));
    d.close();
    srv.stop();
}
