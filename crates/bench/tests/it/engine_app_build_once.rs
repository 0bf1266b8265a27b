//! An application workload's request that must wait before it goes is built once: the request
//! sent is the one first built. Over HTTP/3 its header block is held back by flow control (the
//! server's connection window is smaller than the bodies in flight); over HTTP/2 the server
//! allows fewer streams than `--streams` and a smaller window than a body. The server counts
//! the `{{seq}}` values it saw, per Webchild: each exactly once and none skipped (a request
//! built again when it finally went would skip the value of its first build).

use crate::h3_pump;

use bench::config::TlsOptions;
use bench::workload::Workload;
use bench::{BenchConfig, HttpMode, Stop, Target};
use h3_pump::Pump;
use http2::{Handler, Header, HeaderVerdict, Session, StreamId};
use http3::{Server, ServerEvent};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use test_support::certs::TestCa;

/// Six files a page, each a POST whose body is larger than half the server's connection
/// window, its path and two fields naming the Webchild and its request count (a redirect's
/// request, its fields expanded again, carries its own count in the fields).
fn workload() -> Workload {
    let body = "x".repeat(1500);
    let file = format!(
        r#"{{ path = "/s?w={{{{webchild}}}}&n={{{{seq}}}}", method = "POST", body = "{body}",
              headers = {{ "X-W" = "{{{{webchild}}}}", "X-N" = "{{{{seq}}}}" }} }}"#
    );
    let files = vec![file; 6].join(",\n  ");
    let text = format!("[[page]]\nweight = 1\nfiles = [\n  {files}\n]\n");
    Workload::parse(&text, "w.toml").unwrap()
}

/// What the server saw: each Webchild's `seq` values, each with how often it came.
type Seen = Mutex<HashMap<u64, BTreeMap<u64, u32>>>;

struct H3App {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for H3App {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A server whose connection window (4,000 bytes) holds two of the bodies: the client's next
/// header blocks wait for the window the server gives back as it reads.
/// With `redirect`, each request whose `seq` is odd is answered 302 to `/r`,
/// so that a redirect followed is queued while a request is held back.
fn start_h3(ca: &TestCa, redirect: bool) -> H3App {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let limits = http3::Limits {
        connection_window: 4000,
        stream_window: 2000,
        ..http3::Limits::default()
    };
    let config = http3::ServerConfig::new(&cert, &key, &limits).unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (sn, sp) = (seen.clone(), stop.clone());
    let server = Server::new(config, addr);
    let thread = std::thread::spawn(move || serve_h3(sock, server, redirect, &sn, &sp));
    H3App {
        addr,
        seen,
        stop,
        thread: Some(thread),
    }
}

/// Records `w` and `n` of a path `/s?w=W&n=N`.
fn record(seen: &Seen, path: &[u8]) {
    let path = String::from_utf8_lossy(path);
    let query = path.split_once('?').map_or("", |(_, q)| q);
    let value = |name: &str| {
        let v = query.split('&').find_map(|kv| kv.strip_prefix(name));
        v.and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{path}"))
    };
    let (w, n) = (value("w="), value("n="));
    *seen
        .lock()
        .unwrap()
        .entry(w)
        .or_default()
        .entry(n)
        .or_default() += 1;
}

/// Records the `x-w` and `x-n` fields of an HTTP/3 request (a redirect's too); its `n`.
fn record_fields(seen: &Seen, fields: &http3::Fields) -> u64 {
    let value = |name: &[u8]| {
        let v = fields.get(name).map(String::from_utf8_lossy);
        v.and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{fields:?}"))
    };
    let (w, n) = (value(b"x-w"), value(b"x-n"));
    *seen
        .lock()
        .unwrap()
        .entry(w)
        .or_default()
        .entry(n)
        .or_default() += 1;
    n
}

/// The server's loop: datagrams in and out, each request's body read (giving the window
/// back) and answered at its end; every wait at most 20 ms so that `stop` is seen.
fn serve_h3(sock: UdpSocket, mut server: Server, redirect: bool, seen: &Seen, stop: &AtomicBool) {
    let mut odd = std::collections::HashSet::new();
    let mut pump = Pump::new(sock);
    while !stop.load(Ordering::SeqCst) {
        pump.turn(&mut server);
        while let Some(ev) = server.poll() {
            let id = match ev {
                ServerEvent::Request { id, fields, end } => {
                    let to_s = fields.get(b":path").is_some_and(|p| p.starts_with(b"/s"));
                    if record_fields(seen, &fields) % 2 == 1 && redirect && to_s {
                        odd.insert(id);
                    }
                    if !end {
                        continue;
                    }
                    id
                }
                ServerEvent::Body { id } => {
                    while let Ok(1..) = server.recv_body(id, pump.scratch()) {}
                    continue;
                }
                ServerEvent::BodyEnd { id } => id,
                _ => continue,
            };
            if odd.remove(&id) {
                let _ = server.send_response(id, 302, &[(b"location", b"/r")], true);
            } else if server.send_response(id, 200, &[], false).is_ok() {
                let _ = server.send_body(id, b"ok", true);
            }
        }
    }
}

/// Each Webchild's values were seen once each, with no gap; how many in all.
fn each_once_without_gaps(seen: &Seen, webchildren: u64) -> u64 {
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len() as u64, webchildren, "{seen:?}");
    let mut total = 0;
    for (w, values) in seen.iter() {
        let twice: Vec<_> = values.iter().filter(|(_, &c)| c != 1).collect();
        assert!(
            twice.is_empty(),
            "Webchild {w}: sent more than once {twice:?}"
        );
        let (first, last) = (values.keys().next().unwrap(), values.keys().last().unwrap());
        let gaps: Vec<u64> = (*first..=*last)
            .filter(|n| !values.contains_key(n))
            .collect();
        assert!(gaps.is_empty(), "Webchild {w}: never sent {gaps:?}");
        total += values.len() as u64;
    }
    total
}

#[test]
fn a_request_held_back_over_http3_is_sent_as_first_built() {
    let ca = TestCa::new("flint bench build once test CA");
    let app = start_h3(&ca, false);
    let cfg = BenchConfig {
        concurrency: 2,
        threads: 1,
        stop: Stop::Pages(8),
        http: HttpMode::Http3,
        streams: Some(4),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(10),
        fail_fast: false,
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(app.addr, "localhost"))
    };
    let r = bench::run(&cfg, &workload(), &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((s.pages_done, s.requests), (8, 8 * 6));
    assert!(s.http3.held_back > 0, "no request held back: {:?}", s.http3);
    assert_eq!(each_once_without_gaps(&app.seen, 2), s.requests);
}

/// A redirect followed while a request is held back is queued below it (counted): the held
/// request goes first, as built, and the redirect's request after it. (Here the redirect's
/// request is sent when taken off the queue: the case where it is held back in turn is not
/// reached, the window given back with the 302.)
#[test]
fn a_redirect_followed_while_a_request_is_held_back_over_http3_is_queued_below_it() {
    let ca = TestCa::new("flint bench build once redirect test CA");
    let app = start_h3(&ca, true);
    let cfg = BenchConfig {
        concurrency: 2,
        threads: 1,
        stop: Stop::Pages(8),
        http: HttpMode::Http3,
        streams: Some(4),
        redirect: 1,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(10),
        fail_fast: false,
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(app.addr, "localhost"))
    };
    let r = bench::run(&cfg, &workload(), &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.pages_done, 8);
    assert!(s.http3.held_back > 0, "no request held back: {:?}", s.http3);
    assert!(
        s.http3.queued_below_held > 0,
        "no redirect queued below a held request: {:?}",
        s.http3
    );
    // Half the files were redirected (each a request more, `/r`, with a value of its own):
    // the server saw every value once, no gap.
    assert!(s.requests > 8 * 6, "no redirect followed: {}", s.requests);
    assert_eq!(each_once_without_gaps(&app.seen, 2), s.requests);
}

/// An HTTP/2 server (cleartext, prior knowledge) on nghttp2's server session: two streams at
/// a time and a 2,000-byte window a stream, so that a page's requests wait for a stream and
/// their bodies for the window.
struct H2App {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for H2App {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start_h2() -> H2App {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (sn, sp) = (seen.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let mut conns = Vec::new();
        while !sp.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((s, _)) => {
                    let (sn, sp) = (sn.clone(), sp.clone());
                    conns.push(std::thread::spawn(move || serve_h2(s, &sn, &sp)));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        for c in conns {
            let _ = c.join();
        }
    });
    H2App {
        addr,
        seen,
        stop,
        thread: Some(thread),
    }
}

/// The server's side of one connection: what it writes, and the requests complete.
struct H2Peer<'a> {
    out: Vec<u8>,
    complete: Vec<StreamId>,
    seen: &'a Seen,
}

impl Handler for H2Peer<'_> {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn on_header(&mut self, _: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        if name == b":path" {
            record(self.seen, value);
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
}

/// Reads, answers each complete request with a 200 and no body, writes; every read waits at
/// most 20 ms so that `stop` is seen.
fn serve_h2(mut sock: TcpStream, seen: &Seen, stop: &AtomicBool) {
    let config = http2::Config {
        max_concurrent_streams: 2,
        initial_window_size: 2000,
        ..http2::Config::server()
    };
    let mut session = Session::server(&config).unwrap();
    let mut peer = H2Peer {
        out: Vec::new(),
        complete: Vec::new(),
        seen,
    };
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buf = vec![0u8; 65536];
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
            let _ = session.submit_response(id, &[Header::new(b":status", b"200")], false);
        }
    }
}

#[test]
fn a_request_waiting_for_a_stream_over_http2_is_sent_as_first_built() {
    let app = start_h2();
    let cfg = BenchConfig {
        concurrency: 2,
        threads: 1,
        stop: Stop::Pages(8),
        http: HttpMode::Http2,
        streams: Some(4),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(10),
        fail_fast: false,
        ..BenchConfig::new(Target::http(app.addr))
    };
    let r = bench::run(&cfg, &workload(), &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((s.pages_done, s.requests), (8, 8 * 6));
    // The server's limit (2) was in force below `--streams 4`, so requests waited for a
    // stream; and each went once: no stream reset, retried or failed.
    assert_eq!(s.http2.max_concurrent_streams, 2, "{:?}", s.http2);
    assert_eq!(s.http2.streams, s.requests, "{:?}", s.http2);
    assert_eq!(each_once_without_gaps(&app.seen, 2), s.requests);
}
