//! Gateways over HTTP/3: a CGI program, a FastCGI application (php-fpm) and a proxied
//! upstream each answer an HTTP/3 request as they answer HTTP/1.1's and HTTP/2's (status,
//! fields, body bytes exact, the access log's `HTTP/3.0` line); a 1 MiB POST reaches a program
//! and an upstream whole; a client that resets its stream takes its program's process group
//! with it, and its upstream connection is not pooled again; Basic authentication stands in
//! front of a program.

use crate::fcgi_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use serve::config::H3_CONNECTION_WINDOW;

use crate::cgi_support::{proc_state, read_pid, HELLO};
use crate::common::{content, eventually, WAIT};
use crate::h3_support::cgi::{alice_zone, basic, CgiH3};
use crate::h3_support::{Driver, Got};
use crate::proxy_support::{mount, Req, Step, Upstream};

const MIB: usize = 1 << 20;

/// An upstream answering with the request's body, its length said.
fn echo(r: &Req) -> Vec<Step> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Up: 1\r\nContent-Length: {}\r\n\r\n",
        r.body.len()
    )
    .into_bytes();
    out.extend_from_slice(&r.body);
    vec![Step::Write(out)]
}

/// POSTs `body` to `path`, its length said, turning as flow control allows; then waits for
/// its response.
fn post(d: &mut Driver, path: &str, body: &[u8]) -> Got {
    let len = body.len().to_string();
    let stream = d.open("POST", path, &[("content-length", len.as_str())], false);
    d.send_all(stream, body);
    d.wait(&[stream]).remove(0)
}

#[test]
fn a_program_an_application_and_an_upstream_answer_over_http3() {
    let fx = CgiH3::new();
    fx.add("hello", HELLO)
        .add("env", "printf 'Content-Type: text/plain\\n\\n'\nenv\n")
        .add(
            "big",
            "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nhead -c 700000 /dev/zero\n",
        )
        .add("local", "printf 'Location: /a.txt\\r\\n\\r\\n'\n")
        .add("nohead", "printf 'no head at all'\n");
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        "/api/big" => vec![Step::Write(
            [
                b"HTTP/1.1 200 OK\r\nContent-Length: 700000\r\n\r\n".to_vec(),
                vec![b'x'; 700_000],
            ]
            .concat(),
        )],
        _ => echo(r),
    });
    let fpm = fcgi_support::App::php_fpm(1);
    let m = mount("/api/", &[up.url()], "");
    let fpm_addr = fpm.addr();
    let (srv, mut d) = fx.start(|c| {
        c.proxy.push(m);
        c.fastcgi.push(format!("*.php={fpm_addr}").parse().unwrap());
        c.access_log = Some(fx.log());
    });
    std::fs::write(srv.root.path().join("a.txt"), b"hello").unwrap();
    std::fs::write(
        srv.root.path().join("hi.php"),
        "<?php header('X-Php: yes'); echo $_SERVER['SERVER_PROTOCOL'], ' ', $_GET['n'];\n",
    )
    .unwrap();

    let got = d.fetch(&[
        ("GET", "/cgi-bin/hello"),
        ("GET", "/cgi-bin/env"),
        ("GET", "/cgi-bin/big"),
        ("GET", "/cgi-bin/local"),
        ("GET", "/cgi-bin/nohead"),
        ("HEAD", "/cgi-bin/hello"),
        ("GET", "/api/x"),
        ("GET", "/api/big"),
        ("GET", "/hi.php?n=7"),
    ]);
    let [hello, env, big, local, nohead, head, api, api_big, php] = &got[..] else {
        unreachable!()
    };
    assert_eq!((hello.status, &hello.body[..]), (200, &b"hello\n"[..]));
    assert_eq!(hello.field("x-test"), Some("yes"));
    assert_eq!(hello.field("content-type"), Some("text/plain"));
    assert!(hello.field("date").is_some() && hello.field("server").is_some());
    let text = String::from_utf8_lossy(&env.body);
    for want in [
        "SERVER_PROTOCOL=HTTP/3.0",
        "REQUEST_METHOD=GET",
        "HTTP_HOST=localhost",
    ] {
        assert!(text.lines().any(|l| l == want), "{want} in {text}");
    }
    // No body, no length (RFC 3875 4.1.2), as over HTTP/1.1 and HTTP/2.
    assert!(
        !text.lines().any(|l| l.starts_with("CONTENT_LENGTH=")),
        "a GET's CONTENT_LENGTH: {text}"
    );
    // Many times the stream's window and the output window: paced by flow control.
    assert_eq!(
        (big.status, big.body.len(), big.reset),
        (200, 700_000, None)
    );
    assert!(big.body.iter().all(|&b| b == 0));
    assert_eq!((local.status, &local.body[..]), (200, &b"hello"[..]));
    assert_eq!(nohead.status, 502);
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!((api.status, api.field("x-up")), (200, Some("1")));
    assert_eq!(api.field("content-length"), Some("0"));
    assert_eq!((api_big.status, api_big.body.len()), (200, 700_000));
    assert_eq!((php.status, php.field("x-php")), (200, Some("yes")));
    assert_eq!(String::from_utf8_lossy(&php.body), "HTTP/3.0 7");
    // Sent at once with /api/big: either may have reached the upstream first.
    let seen = up.requests();
    let seen = (seen.iter())
        .find(|r| r.head.starts_with("GET /api/x HTTP/1.1\r\n"))
        .expect("/api/x went upstream as HTTP/1.1");
    assert_eq!(seen.field("host"), Some("localhost"));
    // The protocol the client spoke, as Via names it (RFC 9110 7.6.3).
    assert_eq!(seen.field("via"), Some("3 flint"));
    // A request without content says no length (RFC 9110 8.6).
    assert_eq!(seen.field("content-length"), None, "{}", seen.head);

    d.close();
    let st = srv.stop();
    assert_eq!(st.http3_requests, 9);
    assert_eq!(
        (st.cgi_requests, st.fastcgi_requests, st.proxy_requests),
        (6, 1, 2)
    );
    let text = fx.log_text();
    for want in [
        "\"GET /cgi-bin/hello HTTP/3.0\" 200 6\n",
        "\"GET /cgi-bin/big HTTP/3.0\" 200 700000\n",
        "\"GET /cgi-bin/nohead HTTP/3.0\" 502 ",
        "\"GET /api/big HTTP/3.0\" 200 700000\n",
        "\"GET /hi.php?n=7 HTTP/3.0\" 200 ",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
}

#[test]
fn a_mebibyte_posted_reaches_a_program_and_an_upstream_whole() {
    let fx = CgiH3::new();
    fx.add(
        "digest",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\necho \"$CONTENT_LENGTH\"\nsha256sum | cut -d' ' -f1\n",
    );
    let up = Upstream::start(echo);
    let m = mount("/api/", &[up.url()], "");
    let (_srv, mut d) = fx.start(|c| {
        c.proxy.push(m);
        c.max_body_bytes = 4 * MIB as u64;
    });
    let body = content("posted", MIB);
    let want = {
        use sha2::Digest;
        let hex: String = (sha2::Sha256::digest(&body).iter())
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{MIB}\n{hex}\n")
    };
    let r = post(&mut d, "/cgi-bin/digest", &body);
    assert_eq!(String::from_utf8_lossy(&r.body), want);
    assert_eq!((r.status, r.reset), (200, None));

    let r = post(&mut d, "/api/echo", &body);
    assert_eq!((r.status, r.reset), (200, None));
    assert!(r.body == body, "{} bytes echoed", r.body.len());
    assert_eq!(up.requests()[0].body.len(), MIB);
}

#[test]
fn a_reset_stream_ends_its_program_and_gives_up_its_upstream_connection() {
    let fx = CgiH3::new();
    let pid_file = fx.file("pid");
    fx.add(
        "linger",
        &format!(
            "printf 'Content-Type: text/plain\\r\\n\\r\\n'\necho $$ > {p}.tmp && mv {p}.tmp {p}\nexec yes\n",
            p = pid_file.display()
        ),
    );
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        // Longer than the test: only the reset ends it.
        "/api/slow" => vec![
            Step::Write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart".to_vec()),
            Step::Sleep(Duration::from_secs(60)),
        ],
        _ => echo(r),
    });
    let m = mount("/api/", &[up.url()], "");
    let (srv, mut d) = fx.start(|c| c.proxy.push(m));
    // A program writing without end, its response read for a while, then reset.
    let s = d.request("GET", "/cgi-bin/linger", &[]);
    d.until(|d| d.got.get(&s).is_some_and(|g| g.body.len() > 100_000));
    assert!(eventually(WAIT, || read_pid(&pid_file).is_some()));
    let pid = read_pid(&pid_file).unwrap();
    d.client.reset(s, http3::H3_REQUEST_CANCELLED).unwrap();
    // Turning meanwhile: a reset whose datagram was lost is sent again.
    d.until(|_| proc_state(pid).is_none());
    // An upstream response under way, then the reset: its connection is not pooled.
    let s = d.request("GET", "/api/slow", &[]);
    d.until(|d| d.got.get(&s).is_some_and(|g| g.body.len() == 4));
    d.client.reset(s, http3::H3_REQUEST_CANCELLED).unwrap();
    d.turn();
    let got = d.fetch(&[("GET", "/api/x"), ("GET", "/a.txt")]);
    assert_eq!((got[0].status, got[1].status), (200, 200));
    d.close();
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_connects), (2, 2));
    assert_eq!(up.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(st.cgi_requests, 1);
}

#[test]
fn basic_authentication_stands_in_front_of_a_program_over_http3() {
    let fx = CgiH3::new();
    fx.add(
        "who",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\necho \"$AUTH_TYPE $REMOTE_USER\"\n",
    );
    let zone = alice_zone(fx.certs.ca.dir(), "/cgi-bin");
    let (srv, mut d) = fx.start(|c| c.auth.push(zone));
    let (good, bad) = (basic("alice", "pw-alice"), basic("alice", "nope"));
    let streams = [
        d.request("GET", "/cgi-bin/who", &[]),
        d.request("GET", "/cgi-bin/who", &[("authorization", &bad)]),
        d.request("GET", "/cgi-bin/who", &[("authorization", &good)]),
    ];
    let got = d.wait(&streams);
    assert_eq!((got[0].status, got[1].status), (401, 401));
    assert!(got[0].field("www-authenticate").is_some());
    assert_eq!(got[2].status, 200);
    assert_eq!(String::from_utf8_lossy(&got[2].body), "Basic alice\n");
    d.close();
    let st = srv.stop();
    assert_eq!((st.cgi_requests, st.cgi_starts), (1, 1));
}

/// Two `authorization` fields: one would be checked and the other passed on, so the request
/// is refused (400) before it reaches the upstream, as over HTTP/1.1 and HTTP/2.
#[test]
fn two_authorization_fields_are_400_over_http3() {
    let fx = CgiH3::new();
    let up = Upstream::start(echo);
    let zone = alice_zone(fx.certs.ca.dir(), "/api");
    let m = mount("/api/", &[up.url()], "");
    let (srv, mut d) = fx.start(|c| {
        c.auth.push(zone);
        c.proxy.push(m);
    });
    let (good, bad) = (basic("alice", "pw-alice"), basic("mallory", "x"));
    let streams = [
        d.request("GET", "/api/a", &[("authorization", &good)]),
        d.request(
            "GET",
            "/api/a",
            &[("authorization", &good), ("authorization", &bad)],
        ),
        d.request(
            "GET",
            "/api/a",
            &[("authorization", &bad), ("authorization", &good)],
        ),
    ];
    let got = d.wait(&streams);
    let statuses: Vec<u16> = got.iter().map(|g| g.status).collect();
    assert_eq!(statuses, [200, 400, 400]);
    d.close();
    srv.stop();
    assert_eq!(up.requests().len(), 1);
}

#[test]
fn a_program_cut_short_after_its_head_sends_its_head_and_bytes_then_a_reset() {
    let fx = CgiH3::new();
    fx.add(
        "cut",
        "printf 'Content-Type: text/plain\\r\\nContent-Length: 100\\r\\n\\r\\npart'\n",
    );
    let (srv, mut d) = fx.start(|c| c.access_log = Some(fx.log()));
    // Several times: the reset racing the bytes before it lost them most times.
    for _ in 0..4 {
        let got = d.fetch(&[("GET", "/cgi-bin/cut")]).remove(0);
        assert_eq!(
            (got.status, &got.body[..], got.finished),
            (200, &b"part"[..], false),
            "{got:?}"
        );
        assert!(got.reset.is_some(), "{got:?}");
    }
    d.close();
    srv.stop();
    let text = fx.log_text();
    assert_eq!(
        text.matches("\"GET /cgi-bin/cut HTTP/3.0\" 200 4\n")
            .count(),
        4,
        "{text}"
    );
}

/// A script printing a head of `n` `X-F<i>` fields, `Content-Length: 2`, then `ok`.
fn many_fields(n: usize) -> String {
    let mut s = String::from("printf 'Content-Type: text/plain\\r\\n");
    for i in 0..n {
        s += &format!("X-F{i}: v{i}\\r\\n");
    }
    s += "Content-Length: 2\\r\\n\\r\\nok'\n";
    s
}

#[test]
fn a_head_of_too_many_fields_is_a_502_and_one_held_back_keeps_them_all_or_is_logged_499() {
    let fx = CgiH3::new();
    fx.add("wide", &many_fields(40))
        // More fields than a file's head: held back where one was.
        .add("gone", &many_fields(30))
        .add("huge", &many_fields(80))
        .add(
            "big",
            "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nhead -c 300000 /dev/zero\n",
        );
    // A connection window a big unread response fills: the next head is held back.
    let limits = http3::Limits {
        connection_window: 64 * 1024,
        ..Default::default()
    };
    let (srv, mut d) = fx.start_with(&limits, |c| c.access_log = Some(fx.log()));
    let got = d.fetch(&[("GET", "/cgi-bin/huge")]).remove(0);
    assert_eq!(got.status, 502, "{got:?}");

    d.reads = false;
    let before = d.client.stats().bytes_received;
    let big = d.request("GET", "/cgi-bin/big", &[]);
    // Most of the window come: what is still in flight is far less than the congestion
    // window grown by it, so a head held back from here waits for flow control, not for
    // acknowledgements.
    d.until(|d| d.client.stats().bytes_received - before >= 60 * 1024);
    // Small files asked for one at a time until the server holds one's head back (its own
    // count): the window is then full, and stays so while the client reads nothing. Each
    // one answered took some of it.
    let mut probes = Vec::new();
    while srv.stats().h3_heads_held == 0 {
        assert!(probes.len() < 90, "the window never filled: {probes:?}");
        let probe = d.request("GET", "/a.txt", &[]);
        probes.push(probe);
        d.until(|d| d.got.contains_key(&probe) || srv.stats().h3_heads_held == 1);
    }
    let wide = d.request("GET", "/cgi-bin/wide", &[]);
    // The server saw the program's head and had no room for it.
    d.until(|_| srv.stats().h3_heads_held == 2);
    assert!(!d.got.contains_key(&wide), "the head was not held back");
    // A head held back, then the stream reset: its status was never sent, so 499.
    let gone = d.request("GET", "/cgi-bin/gone", &[]);
    d.until(|_| srv.stats().h3_heads_held == 3);
    assert!(!d.got.contains_key(&gone), "the head was not held back");
    d.client.reset(gone, http3::H3_REQUEST_CANCELLED).unwrap();
    d.turn();
    // Read by hand: the events of what came while unread were passed over.
    d.reads = true;
    let mut all = vec![big, wide];
    all.extend(&probes);
    d.until(|d| {
        for &s in &all {
            d.drain(s);
        }
        all.iter().all(|s| d.got.get(s).is_some_and(|g| g.finished))
    });
    let got = [d.got[&big].clone(), d.got[&wide].clone()];
    assert_eq!((got[0].body.len(), got[1].status), (300_000, 200));
    for i in 0..40 {
        let (name, value) = (format!("x-f{i}"), format!("v{i}"));
        assert_eq!(got[1].field(&name), Some(&value[..]), "{name}");
    }
    assert_eq!(got[1].field("content-length"), Some("2"));
    assert_eq!(&got[1].body[..], b"ok");
    for p in &probes {
        assert_eq!((d.got[p].status, &d.got[p].body[..]), (200, &b"hello"[..]));
    }
    d.close();
    let st = srv.stop();
    // No other head waited: the held probe's, wide's and gone's.
    assert_eq!(st.h3_heads_held, 3, "{st:?}");
    let text = fx.log_text();
    assert!(
        text.contains("\"GET /cgi-bin/huge HTTP/3.0\" 502 "),
        "{text}"
    );
    assert!(
        text.contains("\"GET /cgi-bin/gone HTTP/3.0\" 499 "),
        "{text}"
    );
    assert!(
        text.contains("\"GET /cgi-bin/wide HTTP/3.0\" 200 2\n"),
        "{text}"
    );
}

#[test]
fn a_program_slower_than_the_idle_timeout_still_answers() {
    let fx = CgiH3::new();
    fx.add(
        "slow",
        "sleep 4\nprintf 'Content-Type: text/plain\\r\\n\\r\\nlate'\n",
    );
    let (srv, mut d) = fx.start(|c| c.h3_idle_timeout_ms = 2000);
    let got = d.fetch(&[("GET", "/cgi-bin/slow")]).remove(0);
    assert_eq!((got.status, &got.body[..]), (200, &b"late"[..]), "{got:?}");
    assert!(!d.client.is_closed(), "{:?}", d.client.closed());
    d.close();
    srv.stop();
}

#[test]
fn a_body_coming_after_its_program_ended_is_dropped_not_left_to_time_out() {
    let fx = CgiH3::new();
    // Its whole output fits the server's buffers: it ends while its response still goes
    // (more than the client's stream window, which the client does not open).
    fx.add(
        "early",
        "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nhead -c 40000 /dev/zero\n",
    );
    let limits = http3::Limits {
        stream_window: 16 * 1024,
        ..Default::default()
    };
    // The body's deadline far off: flow control alone says whether the body is read.
    let (srv, mut d) = fx.start_with(&limits, |c| c.body_timeout_ms = 600_000);
    d.reads = false;
    // A body past the server's stream and connection windows: all of it goes only if the
    // server reads it.
    let len = 2 * H3_CONNECTION_WINDOW as usize;
    let s = d.open(
        "POST",
        "/cgi-bin/early",
        &[("content-length", &len.to_string())],
        false,
    );
    // The server saw the program end: its request is logged (counted) as it ends, its head
    // sent before (the client has it) and its response not whole.
    d.until(|d| d.got.get(&s).is_some_and(|g| g.status == 200));
    d.until(|_| srv.stats().requests == 1);
    d.send_all(s, &vec![b'b'; len]);
    d.reads = true;
    d.until(|d| {
        d.drain(s);
        d.got[&s].finished || d.got[&s].reset.is_some()
    });
    let got = &d.got[&s];
    assert_eq!((got.body.len(), got.reset), (40_000, None));
    d.close();
    let st = srv.stop();
    assert_eq!((st.requests, st.h3_body_timeouts), (1, 0), "{st:?}");
}
