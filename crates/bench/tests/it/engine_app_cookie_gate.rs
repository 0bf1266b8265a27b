//! A response whose fields no check and no extraction reads still has its cookies kept: the
//! client splits a head only when something reads its fields, and a `Set-Cookie` is such a
//! reader. `/a` sets a session cookie and its file checks only the status (and extracts a value
//! from the body, so that `/b` waits for its response, as it would over HTTP/2's concurrent
//! streams otherwise); `/b` is refused with a 409 unless it carries that cookie. Over HTTP/1.1
//! (keep-alive and pipelined), HTTP/2 and HTTP/3.

use crate::h3_pump::Pump;
use crate::per_connection;

use bench::config::TlsOptions;
use bench::workload::Workload;
use bench::{BenchConfig, HttpMode, Stop, Target};
use http2::{Body, Handler, Header, HeaderVerdict, Session, StreamId};
use http3::{Server, ServerEvent};
use per_connection::{read_until_stopped, PerConnection};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use test_support::certs::TestCa;

/// The cookie `/a` sets, and `/b` must carry.
const SID: &str = "sid=s1";

/// `/a` checks only its status (its head has no field a check or an extraction reads); its
/// value comes from the body.
const PAGE: &str = r#"
[[page]]
weight = 1
files = [
  { path = "/a", expect = { status = 200 }, extract = { word = { regex = "(ok)" } } },
  { path = "/b", expect = { status = 200 } },
]
"#;

/// What the server saw of `/b`: with the cookie, and refused without it.
#[derive(Default)]
struct Seen {
    with_cookie: AtomicU64,
    refused: AtomicU64,
}

impl Seen {
    /// The status for a request of `path` carrying `cookie` (every `Cookie` field joined).
    fn status(&self, path: &str, cookie: &str) -> u16 {
        if path != "/b" {
            return 200;
        }
        if cookie.split(';').any(|c| c.trim() == SID) {
            self.with_cookie.fetch_add(1, Ordering::SeqCst);
            200
        } else {
            self.refused.fetch_add(1, Ordering::SeqCst);
            409
        }
    }
}

/// HTTP/1.1: answers each request head in order.
fn serve_h1(mut s: TcpStream, stop: &AtomicBool, seen: &Seen) {
    let mut have = Vec::new();
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        have.extend_from_slice(data);
        while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&have[..end]).into_owned();
            have.drain(..end + 4);
            let path = head.split(' ').nth(1).unwrap_or("/");
            let cookie = (head.lines().skip(1))
                .filter_map(|l| l.split_once(':'))
                .filter(|(n, _)| n.trim().eq_ignore_ascii_case("cookie"))
                .map(|(_, v)| v.trim())
                .collect::<Vec<_>>()
                .join("; ");
            let response = match (path, seen.status(path, &cookie)) {
                ("/a", _) => format!(
                    "HTTP/1.1 200 OK\r\nSet-Cookie: {SID}; Path=/\r\nContent-Length: 2\r\n\r\nok"
                ),
                (_, 200) => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_owned(),
                _ => "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\nno".to_owned(),
            };
            if s.write_all(response.as_bytes()).is_err() {
                return false;
            }
        }
        true
    });
}

/// HTTP/2's side of one connection: what it writes, and each stream's path and cookie.
struct H2Peer<'a> {
    out: Vec<u8>,
    streams: HashMap<StreamId, (String, String)>,
    complete: Vec<StreamId>,
    seen: &'a Seen,
}

impl Handler for H2Peer<'_> {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        let (path, cookie) = self.streams.entry(stream).or_default();
        let value = String::from_utf8_lossy(value);
        match name {
            b":path" => *path = value.into_owned(),
            b"cookie" if cookie.is_empty() => *cookie = value.into_owned(),
            b"cookie" => *cookie = format!("{cookie}; {value}"),
            _ => {}
        }
        HeaderVerdict::Accept
    }

    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        if end_stream {
            self.complete.push(stream);
        }
    }

    fn on_data_end(&mut self, stream: StreamId) {
        self.complete.push(stream);
    }

    fn body_ready(&mut self, _: StreamId, max: usize) -> Body {
        Body::Ready {
            len: max.min(2),
            end: max >= 2,
        }
    }

    fn write_data(&mut self, _: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        self.out.extend_from_slice(frame_header);
        self.out.extend_from_slice(&b"ok"[..len]);
        true
    }
}

/// HTTP/2 (cleartext, prior knowledge): `/a` answers with its cookie and a body of `ok`, `/b`
/// with no body; every read waits at most 20 ms so that `stop` is seen.
fn serve_h2(mut sock: TcpStream, stop: &AtomicBool, seen: &Seen) {
    let mut session = Session::server(&http2::Config::server()).unwrap();
    let mut peer = H2Peer {
        out: Vec::new(),
        streams: HashMap::new(),
        complete: Vec::new(),
        seen,
    };
    let mut buf = vec![0u8; 65536];
    let set_cookie = format!("{SID}; Path=/");
    while !stop.load(Ordering::SeqCst) {
        if session.send(&mut peer).is_err() {
            return;
        }
        if !peer.out.is_empty() {
            if sock.write_all(&peer.out).is_err() {
                return;
            }
            peer.out.clear();
        }
        match sock.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if session.recv(&buf[..n], &mut peer).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return,
        }
        for id in std::mem::take(&mut peer.complete) {
            let (path, cookie) = peer.streams.remove(&id).unwrap_or_default();
            let status = peer.seen.status(&path, &cookie).to_string();
            let mut headers = vec![Header::new(b":status", status.as_bytes())];
            if path == "/a" {
                headers.push(Header::new(b"set-cookie", set_cookie.as_bytes()));
            }
            let _ = session.submit_response(id, &headers, path == "/a");
        }
    }
}

/// HTTP/3: each request answered whole as it comes (none has a body), every wait at most
/// 20 ms so that `stop` is seen.
fn serve_h3(sock: UdpSocket, mut server: Server, stop: &AtomicBool, seen: &Seen) {
    let mut pump = Pump::new(sock);
    let set_cookie = format!("{SID}; Path=/");
    while !stop.load(Ordering::SeqCst) {
        pump.turn(&mut server);
        while let Some(ev) = server.poll() {
            let ServerEvent::Request { id, fields, .. } = ev else {
                continue;
            };
            let text = |name: &[u8]| String::from_utf8_lossy(fields.get(name).unwrap_or(b""));
            let (path, cookie) = (text(b":path").into_owned(), text(b"cookie").into_owned());
            let status = seen.status(&path, &cookie);
            let head: &[(&[u8], &[u8])] = match path.as_str() {
                "/a" => &[(b"set-cookie", set_cookie.as_bytes())],
                _ => &[],
            };
            if server.send_response(id, status, head, false).is_ok() {
                let _ = server.send_body(id, b"ok", true);
            }
        }
    }
}

#[test]
fn a_cookie_set_on_a_response_checked_by_status_alone_is_sent_after_over_http3() {
    let ca = TestCa::new("flint bench cookie gate test CA");
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let server_config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default()).unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (s, sp) = (seen.clone(), stop.clone());
    let thread =
        std::thread::spawn(move || serve_h3(sock, Server::new(server_config, addr), &sp, &s));
    let cfg = BenchConfig {
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        target: Target::https(addr, "localhost"),
        ..config(addr, HttpMode::Http3)
    };
    let r = bench::run(&cfg, &workload(), &AtomicBool::new(false));
    stop.store(true, Ordering::SeqCst);
    thread.join().unwrap();
    held(&r.expect("run").stats, &seen, HttpMode::Http3);
}

fn workload() -> Workload {
    Workload::parse(PAGE, "w.toml").unwrap()
}

/// No errors, every page done, and every `/b` carried the cookie.
fn held(st: &bench::stats::Stats, seen: &Seen, http: HttpMode) {
    assert_eq!(st.errors.total(), 0, "{http:?}: {:?}", st.errors);
    assert_eq!((st.pages_done, st.requests), (12, 24), "{http:?}");
    assert_eq!(seen.refused.load(Ordering::SeqCst), 0, "{http:?}");
    assert_eq!(seen.with_cookie.load(Ordering::SeqCst), 12, "{http:?}");
}

fn run(http: HttpMode) {
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    let server = match http {
        HttpMode::Http2 => PerConnection::start(move |c, stop| serve_h2(c, stop, &s)),
        _ => PerConnection::start(move |c, stop| serve_h1(c, stop, &s)),
    };
    let cfg = config(server.addr, http);
    let r = bench::run(&cfg, &workload(), &AtomicBool::new(false));
    server.stop();
    held(&r.expect("run").stats, &seen, http);
}

fn config(addr: SocketAddr, http: HttpMode) -> BenchConfig {
    BenchConfig {
        concurrency: 3,
        threads: 1,
        stop: Stop::Pages(12),
        http,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(10),
        fail_fast: false,
        ..BenchConfig::new(Target::http(addr))
    }
}

#[test]
fn a_cookie_set_on_a_response_checked_by_status_alone_is_sent_after_over_http1() {
    run(HttpMode::KeepAlive);
    run(HttpMode::Pipeline);
}

#[test]
fn a_cookie_set_on_a_response_checked_by_status_alone_is_sent_after_over_http2() {
    run(HttpMode::Http2);
}
