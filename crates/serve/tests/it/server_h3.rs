//! HTTP/3: flint serve with TLS and `http3` on 127.0.0.1:0 also serves QUIC on the same port
//! number over UDP. The `http3` crate's client fetches files of every body route (small cached, large by
//! pieces of a file), a 404, HEAD and a range, all on one connection at once: every status
//! and byte exact, the access log holding one `HTTP/3.0` line per request. A program answers
//! as over HTTP/1.1 (`gateway_h3.rs` for the gateways in full); a shutdown sends GOAWAY and lets a response under way finish. HTTP/1.1
//! and HTTP/2 responses advertise HTTP/3 with `Alt-Svc` when it is on (the default with TLS),
//! and only then. `server_h3_default.rs`: the default itself, a UDP port taken, a request
//! body's deadline.

use crate::h2_support;
use crate::tls_support;

use std::io::{BufReader, Write};
use std::net::SocketAddr;

use crate::common::{content, exchange, get, read_response, TestServer, FILES};
use crate::h3_support::{Certs, Driver};
use http3::{Closed, H3_NO_ERROR};
use serve::{Config, Server};

const MIB: usize = 1 << 20;

#[test]
fn files_a_404_head_and_a_range_are_exact_and_logged() {
    let certs = Certs::new();
    let log = certs.ca.dir().join("access.log");
    let log_path = log.clone();
    let srv = certs.serve(move |c| c.access_log = Some(log_path));
    std::fs::write(srv.root.path().join("1m.bin"), content("1m.bin", MIB)).unwrap();
    let mut d = Driver::connect(&mut certs.client(), srv.addr);

    let mut files: Vec<(&str, usize)> = FILES.to_vec();
    files.push(("1m.bin", MIB));
    let paths: Vec<String> = files.iter().map(|(n, _)| format!("/{n}")).collect();
    let mut asked: Vec<(&str, &str)> = paths.iter().map(|p| ("GET", p.as_str())).collect();
    asked.push(("GET", "/missing.txt"));
    asked.push(("HEAD", "/10k.bin"));
    asked.push(("HEAD", "/4m.bin"));
    let got = d.fetch(&asked);

    for ((name, len), g) in files.iter().zip(&got) {
        assert_eq!(g.status, 200, "{name}");
        assert_eq!(g.reset, None, "{name}");
        assert_eq!(g.field("content-length"), Some(&*len.to_string()), "{name}");
        assert!(
            g.body == content(name, *len),
            "{name}: {} bytes",
            g.body.len()
        );
        assert!(
            g.field("etag").is_some() && g.field("date").is_some(),
            "{name}"
        );
        assert!(g.field("connection").is_none(), "{name}");
    }
    let missing = &got[files.len()];
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.field("content-type"),
        Some("text/html; charset=utf-8")
    );
    let page = String::from_utf8_lossy(&missing.body);
    assert!(page.contains("404 Not Found"), "{page}");
    assert_eq!(
        missing.field("content-length"),
        Some(&*missing.body.len().to_string())
    );
    for (g, len) in got[files.len() + 1..].iter().zip([10 * 1024, 4 * MIB]) {
        assert_eq!(g.status, 200);
        assert_eq!(g.field("content-length"), Some(&*len.to_string()));
        assert!(g.body.is_empty(), "HEAD: no body");
    }

    // A range of a file read in pieces, and of a cached one.
    let ranged = [("/300k.bin", 100_000, 199_999), ("/10k.bin", 5, 9)];
    let streams: Vec<u64> = (ranged.iter())
        .map(|(p, a, b)| d.request("GET", p, &[("range", &format!("bytes={a}-{b}"))]))
        .collect();
    let parts = d.wait(&streams);
    for ((path, a, b), g) in ranged.iter().zip(&parts) {
        let name = &path[1..];
        let len = FILES.iter().find(|f| f.0 == name).unwrap().1;
        assert_eq!(g.status, 206, "{path}");
        assert_eq!(
            g.field("content-range"),
            Some(&*format!("bytes {a}-{b}/{len}"))
        );
        assert!(g.body == content(name, len)[*a..=*b], "{path}");
    }

    let requests = (asked.len() + ranged.len()) as u64;
    let st = srv.stats();
    assert_eq!(
        (st.http3_requests, st.requests),
        (requests, requests),
        "{st:?}"
    );
    assert_eq!(st.http3_connections, 1);
    assert!(
        st.status_4xx == 1 && st.status_2xx == requests - 1,
        "{st:?}"
    );
    assert!(st.file_reads > 0, "the large files read in pieces: {st:?}");
    // Each byte of a file above the cache's limit is read once, whatever flow control cut:
    // the GETs' whole files and the range of 300k.bin.
    let uncached = serve::Config::default().cache_max_file as usize;
    let read_once = (files.iter().map(|f| f.1).filter(|&len| len > uncached)).sum::<usize>()
        + (199_999 - 100_000 + 1);
    assert_eq!(st.file_read_bytes, read_once as u64, "{st:?}");
    // More than 5 MiB of bodies, in datagrams of at most 1,350 bytes.
    assert!(st.h3_datagrams_sent > (5 * MIB / 1350) as u64, "{st:?}");
    d.client.close(H3_NO_ERROR, b"");
    d.turn();
    srv.stop();

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len() as u64, requests, "{text}");
    assert!(lines.iter().all(|l| l.contains(" HTTP/3.0\" ")), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"GET /missing.txt HTTP/3.0\" 404 ")),
        "{text}"
    );
    let large = format!("\"GET /1m.bin HTTP/3.0\" 200 {MIB}");
    assert!(lines.iter().any(|l| l.contains(&large)), "{text}");
}

#[test]
fn a_program_answers_over_http3_as_over_http_1_1() {
    let certs = Certs::new();
    let cgi = tempfile::tempdir().unwrap();
    // A program that would answer over HTTP/1.1 and HTTP/2.
    let program = cgi.path().join("x");
    std::fs::write(
        &program,
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nran'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mount = format!("/cgi-bin/={}", cgi.path().display());
    let srv = certs.serve(move |c| c.cgi = vec![mount.parse().unwrap()]);
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let got = d.fetch(&[("GET", "/cgi-bin/x"), ("GET", "/a.txt")]);
    assert_eq!((got[0].status, got[1].status), (200, 200));
    assert_eq!(
        (&got[0].body[..], &got[1].body[..]),
        (&b"ran"[..], &b"hello"[..])
    );
    assert_eq!(srv.stats().cgi_starts, 1);
}

#[test]
fn shutdown_sends_goaway_and_lets_the_response_under_way_finish() {
    let certs = Certs::new();
    let srv = certs.serve(|_| {});
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let stream = d.request("GET", "/4m.bin", &[]);
    d.until(|d| d.got.get(&stream).is_some_and(|g| g.body.len() > 100_000));
    srv.handle.shutdown();
    d.until(|d| d.client.is_closed());
    let st = srv.stop();
    let g = &d.got[&stream];
    assert!(
        g.finished && g.body == content("4m.bin", 4 * MIB),
        "{} bytes",
        g.body.len()
    );
    assert_eq!(
        d.goaway,
        Some(stream + 4),
        "GOAWAY past the stream answered"
    );
    match d.client.closed() {
        Some(Closed::Error {
            by_peer: true,
            app: true,
            code: H3_NO_ERROR,
            ..
        }) => {}
        other => panic!("closed by the server with H3_NO_ERROR, not {other:?}"),
    }
    assert_eq!((st.h3_goaways_sent, st.http3_requests), (1, 1), "{st:?}");
}

#[test]
fn the_configured_limits_reach_the_clients() {
    let certs = Certs::new();
    let srv = certs.serve(|c| {
        c.h3_max_streams = 3;
        c.h3_max_connections = 1;
    });
    let first = Driver::connect(&mut certs.client(), srv.addr);
    assert_eq!(first.client.streams_left(), 3, "h3_max_streams");
    // A second connection past h3_max_connections: its Initials are dropped, unanswered,
    // until its own idle timeout.
    let limits = http3::Limits {
        idle_timeout: std::time::Duration::from_secs(1),
        ..http3::Limits::default()
    };
    let second = Driver::try_connect(&mut certs.client_with(&limits), srv.addr);
    assert_eq!(second.client.closed(), Some(Closed::IdleTimeout));
    let st = srv.stats();
    assert_eq!(st.http3_connections, 1, "{st:?}");
    assert!(st.h3_dropped >= 1, "{st:?}");
}

#[test]
fn http3_is_served_with_tls_unless_turned_off_and_required_only_with_tls() {
    let certs = Certs::new();
    let root = tempfile::tempdir().unwrap();
    let config = |tls: bool, http3: Option<bool>| Config {
        root: root.path().to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: 2,
        tls_cert: tls.then(|| certs.cert.clone()),
        tls_key: tls.then(|| certs.key.clone()),
        http3,
        ..Config::default()
    };
    for http3 in [None, Some(true)] {
        let on = Server::bind(config(true, http3)).unwrap();
        assert!(on.http3() && on.http3_warning().is_none(), "{http3:?}");
        // Both threads' UDP sockets hold the port number: another socket cannot bind it.
        let taken = std::net::UdpSocket::bind(on.local_addr());
        assert!(taken.is_err(), "the UDP port is the server's");
    }
    assert!(!Server::bind(config(true, Some(false))).unwrap().http3());
    let plain = Server::bind(config(false, None)).unwrap();
    assert!(!plain.http3() && plain.http3_warning().is_none());
    // Required without TLS: one line saying so, nothing bound.
    let e = Server::bind(config(false, Some(true)))
        .err()
        .expect("refused");
    assert!(
        e.to_string().starts_with("`http3` = true: needs TLS"),
        "{e}"
    );
}

#[test]
fn alt_svc_advertises_http3_on_http1_and_http2_responses() {
    let certs = tls_support::Certs::new(false);
    let srv = certs.serve(|c| c.http3 = None);
    let want = format!("h3=\":{}\"; ma=86400", srv.addr.port());
    // HTTP/1.1: a cached file's 200 and 304, and an error page.
    let h1 = certs.client(&tls_support::both_versions());
    let mut t = BufReader::new(tls_support::tls_connect(srv.addr, &h1));
    let mut ask = |request: String| {
        t.get_mut().write_all(request.as_bytes()).unwrap();
        read_response(&mut t, false).unwrap()
    };
    let ok = ask(get("/a.txt"));
    assert_eq!((ok.status, ok.header("alt-svc")), (200, Some(&*want)));
    let etag = ok.header("etag").unwrap().to_string();
    let again = ask(format!(
        "GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n"
    ));
    assert_eq!((again.status, again.header("alt-svc")), (304, Some(&*want)));
    let missing = ask(get("/missing"));
    assert_eq!(
        (missing.status, missing.header("alt-svc")),
        (404, Some(&*want))
    );
    // HTTP/2: the prebuilt fields of a file, and an error page's.
    let mut config = (*certs.client(&tls_support::both_versions())).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let mut tls = tls_support::tls_connect(srv.addr, &std::sync::Arc::new(config));
    let mut c = h2_support::Client::new(&mut tls, "localhost");
    let r = c.get("/10k.bin", &[]);
    assert_eq!((r.status, r.header("alt-svc")), (200, Some(&*want)));
    let r = c.get("/missing", &[]);
    assert_eq!((r.status, r.header("alt-svc")), (404, Some(&*want)));
    drop(c);
    assert_eq!(srv.stop().http2_connections, 1);

    // HTTP/3 turned off, or no TLS: nothing advertised.
    let off = certs.serve(|c| c.http3 = Some(false));
    let mut t = BufReader::new(tls_support::tls_connect(off.addr, &h1));
    t.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    let r = read_response(&mut t, false).unwrap();
    assert_eq!((r.status, r.header("alt-svc")), (200, None));
    let plain = TestServer::start(|_| {});
    let r = exchange(plain.addr, &get("/a.txt"));
    assert_eq!((r.status, r.header("alt-svc")), (200, None));
}

#[test]
fn a_client_that_pings_forever_is_closed_at_the_keepalive_timeout() {
    let certs = Certs::new();
    // QUIC's own idle timeout far away: only the keep-alive deadline can end it.
    let srv = certs.serve(|c| {
        c.keepalive_timeout_ms = 300;
        c.h3_idle_timeout_ms = 120_000;
    });
    let long = http3::Limits {
        idle_timeout: std::time::Duration::from_secs(120),
        ..http3::Limits::default()
    };
    let mut pinger = Driver::try_connect(&mut certs.client_with(&long), srv.addr);
    pinger.pings = true;
    pinger.until(|d| d.client.is_closed());
    // (No request first: on a busy machine the test could not be sure to send it in time.)
    assert_eq!(pinger.goaway, Some(0), "GOAWAY: no request processed");
    let by_server = Some(Closed::Error {
        by_peer: true,
        app: true,
        code: H3_NO_ERROR,
        reason: String::new(),
    });
    assert_eq!(pinger.client.closed(), by_server);
    let st = srv.stop();
    assert_eq!(
        (st.h3_keepalive_closes, st.h3_goaways_sent),
        (1, 1),
        "{st:?}"
    );
}

#[test]
fn a_response_the_client_never_reads_is_reset_at_the_send_timeout() {
    let certs = Certs::new();
    let srv = certs.serve(|c| {
        c.send_timeout_ms = 300;
        c.h3_idle_timeout_ms = 120_000;
    });
    // A client that never reads a 4 MiB response through its 16 KiB window, PINGing.
    let small = http3::Limits {
        idle_timeout: std::time::Duration::from_secs(120),
        stream_window: 16 * 1024,
        connection_window: 64 * 1024,
        ..http3::Limits::default()
    };
    let mut stuck = Driver::connect(&mut certs.client_with(&small), srv.addr);
    (stuck.reads, stuck.pings) = (false, true);
    stuck.request("GET", "/4m.bin", &[]);
    stuck.until(|d| d.client.is_closed());
    match stuck.client.closed() {
        Some(Closed::Error {
            by_peer: true,
            app: true,
            code: H3_NO_ERROR,
            ..
        }) => {}
        other => panic!("closed by the server, not {other:?}"),
    }
    let st = srv.stop();
    assert_eq!((st.h3_send_timeouts, st.http3_requests), (1, 1), "{st:?}");
}

#[test]
fn a_retry_and_the_per_address_cap_reach_the_clients() {
    let certs = Certs::new();
    let srv = certs.serve(|c| {
        c.h3_retry = serve::config::H3Retry::Always;
        c.h3_max_connections_per_address = 1;
    });
    // Through a Retry: the handshake completes with the token, and requests are answered.
    let mut first = Driver::connect(&mut certs.client(), srv.addr);
    let got = first.fetch(&[("GET", "/a.txt")]);
    assert_eq!((got[0].status, &got[0].body[..]), (200, &b"hello"[..]));
    // A second connection from 127.0.0.1, at the address's limit: its Initial gets a Retry
    // (no state), and the Initial bringing the token back is refused with CONNECTION_REFUSED,
    // which the client hears at once: its idle timeout (a connect timeout) is ten minutes,
    // and `try_connect` gives up long before. (This is deterministic because the test server
    // runs one thread: with several, the second connection's port could hash to another
    // thread, whose share of the limit is its own.)
    let limits = http3::Limits {
        idle_timeout: std::time::Duration::from_secs(600),
        ..http3::Limits::default()
    };
    let mut second = Driver::try_connect(&mut certs.client_with(&limits), srv.addr);
    // The close follows the server's first flight: the handshake may look done to the client
    // before the close is read.
    second.until(|d| d.client.is_closed());
    match second.client.closed() {
        Some(Closed::Error {
            by_peer: true,
            app: false,
            code: 0x2,
            ..
        }) => {}
        other => panic!("refused with CONNECTION_REFUSED, not {other:?}"),
    }
    let st = srv.stats();
    assert_eq!((st.http3_connections, st.h3_bad_tokens), (1, 0), "{st:?}");
    // One Retry for each Initial of the first ClientHello (it may take two), and the
    // second connection's.
    assert!(st.h3_retries >= 2, "{st:?}");
    assert!(st.h3_refused_per_address >= 1, "{st:?}");
}

/// A transfer the client cuts off is logged with the body bytes handed to QUIC, not the file's
/// size (Common Log Format's `%b` is the bytes sent): at least what the client read, well
/// short of the whole.
#[test]
fn a_transfer_the_client_stops_is_logged_with_the_bytes_sent() {
    let certs = Certs::new();
    let log = certs.ca.dir().join("stopped.log");
    let log_path = log.clone();
    let srv = certs.serve(move |c| c.access_log = Some(log_path));
    let len = 16 * MIB;
    std::fs::write(srv.root.path().join("16m.bin"), content("16m.bin", len)).unwrap();
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let stream = d.request("GET", "/16m.bin", &[]);
    // Read a mebibyte, then stop reading and ask the server to stop sending.
    d.until(|d| d.got.get(&stream).is_some_and(|g| g.body.len() >= MIB));
    d.reads = false;
    let read = d.got[&stream].body.len();
    d.client
        .stop_sending(stream, http3::H3_REQUEST_CANCELLED)
        .unwrap();
    d.turn();
    let line = "\"GET /16m.bin HTTP/3.0\" 200 ";
    let mut logged = String::new();
    // Flushed within a second of the line (the loop's timer), turned meanwhile.
    d.until(|d| {
        d.turn();
        logged = std::fs::read_to_string(&log).unwrap_or_default();
        logged.contains(line)
    });
    let at = logged.find(line).unwrap() + line.len();
    let sent: usize = logged[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        sent >= read && sent < len / 2,
        "logged {sent} of {len}, {read} read"
    );
    d.close();
    let st = srv.stop();
    assert_eq!((st.http3_requests, st.status_2xx), (1, 1), "{st:?}");
}

/// A response still under way when the server stops (its client reads, slowly: no send
/// timeout comes, the grace ends first) is logged before the log's last flush, with the bytes
/// it sent, and counted when it was answered, as it is with no access log.
#[test]
fn a_response_under_way_at_shutdown_is_logged_and_counted() {
    let certs = Certs::new();
    let log = certs.ca.dir().join("shutdown.log");
    let log_path = log.clone();
    let srv = certs.serve(move |c| {
        c.access_log = Some(log_path);
        // The grace of a shutdown is the send timeout.
        c.send_timeout_ms = 1500;
        c.h3_idle_timeout_ms = 120_000;
    });
    let len = 16 * MIB;
    std::fs::write(srv.root.path().join("16m.bin"), content("16m.bin", len)).unwrap();
    let small = http3::Limits {
        idle_timeout: std::time::Duration::from_secs(120),
        stream_window: 16 * 1024,
        connection_window: 64 * 1024,
        ..http3::Limits::default()
    };
    let mut d = Driver::connect(&mut certs.client_with(&small), srv.addr);
    (d.reads, d.pings) = (false, true);
    let stream = d.request("GET", "/16m.bin", &[]);
    d.until(|d| d.got.get(&stream).is_some_and(|g| g.status == 200));
    let stopping = std::thread::spawn(move || srv.stop());
    // A KiB read every few turns: the response moves on (the window opens again every few
    // KiB read), far too slowly to end within the grace; slowly enough that quiche's window
    // autotuning never grows the window.
    let (mut turns, mut read, mut buf) = (0u64, 0usize, [0u8; 1024]);
    d.until(|d| {
        turns += 1;
        if turns % 4 == 0 {
            read += d.client.recv_body(stream, &mut buf).unwrap_or(0);
        }
        stopping.is_finished()
    });
    let st = stopping.join().unwrap();
    assert!(
        read < len,
        "the response ended within the grace: {read} read"
    );
    assert_eq!((st.http3_requests, st.status_2xx), (1, 1), "{st:?}");
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = "\"GET /16m.bin HTTP/3.0\" 200 ";
    let at = logged.find(line).expect("logged at shutdown") + line.len();
    let sent: usize = logged[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        sent >= read && sent < len,
        "logged {sent} of {len}, {read} read"
    );
}
