//! `--http 3 --tls-resume --early-data`: a Webchild's resumed connection sends its page's
//! requests in 0-RTT. The server (crates/http3's UDP test server, 0-RTT on) closes a
//! connection left idle past its keep-alive timeout, shorter than the run's think time, so
//! pages go on new, resumed connections. The server's own count is the test: requests it was
//! handed while their connection was still in 0-RTT (> 0 with the option, 0 without), and
//! every request it saw is one bench counted, done or unfinished. Counts, not times.

use crate::udp;

use bench::config::TlsOptions;
use bench::stats::ErrorKind;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const PAGES: u64 = 5;
const FILES: u64 = 3;
const BODY: u64 = 2_000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A server accepting 0-RTT whose connections close after 100 ms with no request.
fn server(ca: &TestCa) -> udp::UdpServer {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let timeouts = http3::Timeouts {
        keep_alive: Duration::from_millis(100),
        ..http3::Timeouts::default()
    };
    let config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default())
        .unwrap()
        .timeouts(timeouts)
        .early_data(true);
    udp::UdpServer::start(config)
}

/// `PAGES` pages, a second's think between them: ten times the server's keep-alive, so that
/// each page finds its last connection closed even on a busy machine, whose timers fire late.
fn run(ca: &TestCa, server: &udp::UdpServer, early_data: bool) -> RunResult {
    let stop = Stop::Pages(PAGES);
    run_to(
        &ca.pem,
        server.addr,
        early_data,
        stop,
        Duration::from_secs(10),
        Duration::from_secs(1),
    )
}

/// `PAGES` pages (or `stop`) to `addr`, each response within `response_timeout`, `think`
/// between pages.
fn run_to(
    cacert: &Path,
    addr: SocketAddr,
    early_data: bool,
    stop: Stop,
    response_timeout: Duration,
    think: Duration,
) -> RunResult {
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        stop,
        http: HttpMode::Http3,
        think: Some(think),
        connect_timeout: CONNECT_TIMEOUT,
        response_timeout,
        tls: TlsOptions {
            cacert: Some(cacert.to_path_buf()),
            resume: true,
            ..TlsOptions::default()
        },
        h3_early_data: early_data,
        ..BenchConfig::new(Target::https(addr, "localhost"))
    };
    let files: Vec<String> = (0..FILES).map(|_| format!("\"/bytes/{BODY}\"")).collect();
    let workload = Workload::parse(
        &format!(
            "[[page]]\nname = \"p\"\nweight = 1\nfiles = [{}]\n",
            files.join(", ")
        ),
        "test",
    )
    .unwrap();
    bench::run(&config, &workload, &AtomicBool::new(false)).unwrap()
}

/// The server's (requests, early requests) once it has seen `want` requests, or after 10 s.
fn at_server(server: &udp::UdpServer, want: u64) -> (u64, u64) {
    let start = Instant::now();
    loop {
        let (requests, early) = {
            let l = server.log.lock().unwrap();
            (l.requests, l.early)
        };
        if requests >= want || start.elapsed() > Duration::from_secs(10) {
            return (requests, early);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn resumed_connections_send_their_pages_in_0rtt_and_the_server_sees_them_early() {
    let ca = TestCa::new("flint bench h3 0-RTT test CA");
    let server = server(&ca);
    let r = run(&ca, &server, true);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES * FILES);
    let h = &s.http3;
    assert!(h.connections > 1, "new connections: {}", h.connections);
    assert_eq!(s.tls_resumed, h.connections - 1, "all but the first resume");
    assert_eq!(
        h.early_offered, s.tls_resumed,
        "each resumed one sent early"
    );
    assert_eq!(h.early_accepted, h.early_offered, "{h:?}");
    assert_eq!(h.early_rejected, 0);
    assert_eq!(
        h.early_requests,
        h.early_offered * FILES,
        "a page's files each"
    );
    // A 0-RTT connection's handshake is its connect row's time, as any QUIC connection's:
    // measured, not the "never" a taken connect time leaves behind.
    let (handshake, connect) = (s.tls_handshake.summary(), s.connect.summary());
    assert_eq!(handshake.count, h.connections, "one handshake a connection");
    assert!(
        handshake.max <= connect.max && handshake.mean <= connect.mean,
        "TLS handshake {handshake:?}, connect {connect:?}"
    );
    let (requests, early) = at_server(&server, s.requests + s.unfinished);
    assert_eq!(
        requests,
        s.requests + s.unfinished,
        "every request the server saw"
    );
    // The server's own count: a request whose connection finished its handshake before the
    // server got to it is not early there, so it may see fewer than bench sent.
    assert!(
        early > 0 && early <= h.early_requests,
        "server {early}, bench {}",
        h.early_requests
    );
    let text = bench::report::summary(&r);
    let said = format!(
        "0-RTT on {} connections ({} accepted, 0 rejected), {} requests",
        h.early_offered, h.early_accepted, h.early_requests
    );
    assert!(text.contains(&said), "{text}");
    let json = bench::report::json(&r);
    assert_eq!(json["summary"]["http3"]["early_accepted"], h.early_accepted);
    assert_eq!(
        json["config"]["tls"]["early_data"], true,
        "the run's options say 0-RTT"
    );
}

#[test]
fn without_early_data_nothing_is_sent_in_0rtt() {
    let ca = TestCa::new("flint bench h3 0-RTT test CA");
    let server = server(&ca);
    let r = run(&ca, &server, false);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES * FILES);
    assert!(s.tls_resumed > 0, "sessions resumed: {}", s.tls_resumed);
    let (requests, early) = at_server(&server, s.requests + s.unfinished);
    assert_eq!(requests, s.requests + s.unfinished);
    assert_eq!(early, 0, "the server saw requests in 0-RTT");
    let h = &s.http3;
    assert_eq!((h.early_offered, h.early_requests), (0, 0));
    assert!(!bench::report::summary(&r).contains("0-RTT"));
    let json = bench::report::json(&r);
    assert_eq!(json["config"]["tls"]["resume"], true);
    assert!(
        json["config"]["tls"].get("early_data").is_none(),
        "off: not written"
    );
}

/// A UDP relay to `server` for the first client address it hears from only: later
/// connections (bench opens each from a new port) are dropped, their handshakes stalled as
/// by a server that went away after giving out its tickets.
struct FirstOnly {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FirstOnly {
    fn start(server: SocketAddr) -> FirstOnly {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            let mut first: Option<SocketAddr> = None;
            while !stopped.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                if from == server {
                    if let Some(client) = first {
                        let _ = sock.send_to(&buf[..n], client);
                    }
                } else if *first.get_or_insert(from) == from {
                    let _ = sock.send_to(&buf[..n], server);
                }
            }
        });
        FirstOnly {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FirstOnly {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// CPU time (user + system) of this process's thread named `name`, if it is running.
fn thread_cpu(name: &str) -> Option<Duration> {
    // /proc's times are in USER_HZ, 100 a second on Linux (fixed by its ABI).
    let tick = Duration::from_millis(10);
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
        // After the name's closing parenthesis: state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u32 = f.get(11)?.parse::<u32>().ok()? + f.get(12)?.parse::<u32>().ok()?;
        return Some(tick * ticks);
    }
    None
}

/// The second page's connection is dropped after its 0-RTT went out: its handshake stalls
/// until the connect timeout, its early streams waiting. With a response timeout shorter than
/// that, the thread still sleeps (the connect timeout bounds the early streams; their own
/// deadline, were it armed, would be in the past at every turn: a busy loop), and the failed
/// handshake is one connect error, as without `--early-data`, its other files unsent.
#[test]
fn a_stalled_0rtt_handshake_fails_once_at_the_connect_timeout_without_spinning() {
    let ca = TestCa::new("flint bench h3 0-RTT test CA");
    let server = server(&ca);
    let relay = FirstOnly::start(server.addr);
    let addr = relay.addr;
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let cacert = ca.pem.clone();
    let run = std::thread::spawn(move || {
        let r = run_to(
            &cacert,
            addr,
            true,
            Stop::Duration(CONNECT_TIMEOUT + Duration::from_secs(1)),
            Duration::from_millis(50),
            Duration::from_millis(400),
        );
        finished.store(true, Ordering::Relaxed);
        r
    });
    // The bench thread's CPU, last seen while it ran (bounded: the run stops after a connect
    // timeout and a second; a minute at most here).
    let mut cpu = Duration::ZERO;
    let start = Instant::now();
    while !done.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
        if let Some(c) = thread_cpu("flint-bench-0") {
            cpu = c;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = run.join().unwrap();
    let s = &r.stats;
    // One or two stalled connections in the run's time (each after a think time), each one
    // error: counted per early stream, one would be FILES.
    let failed = s.errors.get(ErrorKind::ConnectTimeout);
    assert!((1..FILES).contains(&failed), "{:?}", s.errors);
    assert_eq!(s.errors.total(), failed, "{:?}", s.errors);
    assert!(s.requests >= FILES, "the first page's: {}", s.requests);
    assert_eq!(s.tls_resumed, 0, "the second handshake never ended");
    assert!(
        cpu < CONNECT_TIMEOUT / 4,
        "the bench thread used {cpu:?} of CPU through a {CONNECT_TIMEOUT:?} stall"
    );
}
