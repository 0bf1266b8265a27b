//! An application workload's request that must wait before it goes (over HTTP/3, its header
//! block held back by flow control: the server's connection window is smaller than the bodies
//! in flight) is built once: the request sent is the one first built. The server counts the
//! `{{seq}}` values it saw, per Webchild: each exactly once and none skipped (a request built
//! again when it finally went would skip the value of its first build).

use bench::config::TlsOptions;
use bench::workload::Workload;
use bench::{BenchConfig, HttpMode, Stop, Target};
use http3::{Server, ServerEvent, MAX_DATAGRAM};
use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// Six files a page, each a POST whose body is larger than half the server's connection
/// window, its path naming the Webchild and its request count.
fn workload() -> Workload {
    let body = "x".repeat(1500);
    let file = format!(
        r#"{{ path = "/s?w={{{{webchild}}}}&n={{{{seq}}}}", method = "POST", body = "{body}" }}"#
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
fn start_h3(ca: &TestCa) -> H3App {
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
    let thread = std::thread::spawn(move || serve_h3(sock, Server::new(config, addr), &sn, &sp));
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

/// The server's loop: datagrams in and out, each request's body read (giving the window
/// back) and answered at its end; every wait at most 20 ms so that `stop` is seen.
fn serve_h3(sock: UdpSocket, mut server: Server, seen: &Seen, stop: &AtomicBool) {
    let mut buf = vec![0u8; 65536];
    let mut out = vec![0u8; MAX_DATAGRAM];
    while !stop.load(Ordering::SeqCst) {
        while let Some(d) = server.send(&mut out) {
            let _ = sock.send_to(&out[..d.len], d.to);
        }
        let wait = (server.deadline())
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(20))
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        sock.set_read_timeout(Some(wait)).unwrap();
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            server.recv(&mut buf[..n], from);
            sock.set_nonblocking(true).unwrap();
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                server.recv(&mut buf[..n], from);
            }
            sock.set_nonblocking(false).unwrap();
        }
        server.on_deadline(Instant::now());
        while let Some(ev) = server.poll() {
            let id = match ev {
                ServerEvent::Request { id, fields, end } => {
                    record(seen, fields.get(b":path").unwrap_or(b""));
                    if !end {
                        continue;
                    }
                    id
                }
                ServerEvent::Body { id } => {
                    while let Ok(1..) = server.recv_body(id, &mut buf) {}
                    continue;
                }
                ServerEvent::BodyEnd { id } => id,
                _ => continue,
            };
            if server.send_response(id, 200, &[], false).is_ok() {
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
    let app = start_h3(&ca);
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
    assert_eq!(each_once_without_gaps(&app.seen, 2), s.requests);
}
