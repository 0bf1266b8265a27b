//! `--http 3 --tls-resume --early-data`: a Webchild's resumed connection sends its page's
//! requests in 0-RTT. The server (crates/http3's UDP test server, 0-RTT on) closes a
//! connection left idle past its keep-alive timeout, shorter than the run's think time, so
//! pages go on new, resumed connections. The server's own count is the test: requests it was
//! handed while their connection was still in 0-RTT (every one bench sent early, through a relay
//! that holds the server's flight until it has seen them: `h3_hold.rs`; none without the
//! option), and every request it saw is one bench counted, done or unfinished. Counts, not
//! times.

use crate::h3_hold::HoldsFlights;
use crate::{h3_runs, udp};

use bench::config::TlsOptions;
use bench::stats::ErrorKind;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
/// pages find their last connection closed and go on new, resumed ones. A server late to its
/// keep-alive (a busy machine) may instead get a page's requests in the turn it acts on it:
/// it answers them before it closes (crates/http3 closes once every request it has seen is
/// done with), or, its GOAWAY already out, bench sends them again on a new connection. The
/// counts below hold either way; only how many connections there were changes.
fn run(ca: &TestCa, addr: SocketAddr, early_data: bool) -> RunResult {
    let stop = Stop::Pages(PAGES);
    run_to(
        &ca.pem,
        addr,
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

#[test]
fn resumed_connections_send_their_pages_in_0rtt_and_the_server_sees_them_early() {
    let ca = TestCa::new("flint bench h3 0-RTT test CA");
    let server = server(&ca);
    let relay = HoldsFlights::start(server.addr, server.log.clone(), FILES);
    let r = run(&ca, relay.addr, true);
    let s = &r.stats;
    let gave_up = relay.gave_up.load(Ordering::Relaxed);
    let holding = relay.holding.load(Ordering::Relaxed);
    let why = format!(
        "{:?}, holds given up {gave_up}, still on {holding}, server {:?}",
        s.http3, server.log
    );
    assert_eq!(s.errors.total(), 0, "{:?}; {why}", s.errors);
    assert_eq!(s.requests, PAGES * FILES);
    let h = &s.http3;
    assert!(h.connections > 1, "new connections: {}", h.connections);
    assert_eq!(s.tls_resumed, h.connections - 1, "all but the first resume");
    assert_eq!(
        h.early_offered, s.tls_resumed,
        "each resumed one sent early"
    );
    assert_eq!(h.early_accepted, h.early_offered, "{why}");
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
    let (requests, early) = h3_runs::settled(&server);
    assert_eq!(
        requests,
        s.requests + s.unfinished,
        "every request the server saw"
    );
    // The server's own count: every request bench sent early was handed out before its
    // connection's handshake was done (the relay let no Finished go before).
    assert_eq!(early, h.early_requests, "server's count, bench's; {why}");
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
    let r = run(&ca, server.addr, false);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES * FILES);
    assert!(s.tls_resumed > 0, "sessions resumed: {}", s.tls_resumed);
    let (requests, early) = h3_runs::settled(&server);
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
    /// Client addresses heard from after the first: the connections dropped.
    dropped: Arc<AtomicU64>,
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
        let dropped = Arc::new(AtomicU64::new(0));
        let (stopped, counted) = (stop.clone(), dropped.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            let mut first: Option<SocketAddr> = None;
            let mut others: Vec<SocketAddr> = Vec::new();
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
                } else if !others.contains(&from) {
                    others.push(from);
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        FirstOnly {
            addr,
            dropped,
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

/// The stalled-handshake run's response timeout: shorter than the connect timeout (the early
/// streams' own deadline passes during the stall), long enough for the first page's responses
/// on a busy machine.
const STALL_RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Set in the process the stalled-handshake test runs its body in, alone.
const ALONE: &str = "FLINT_TEST_H3_EARLY_STALL_ALONE";
/// That test's name, as libtest filters it.
const STALL_TEST: &str =
    "engine_h3_early::a_stalled_0rtt_handshake_fails_once_at_the_connect_timeout_without_spinning";

/// Three pages, a second's think between them (ten times the server's keep-alive): a page on a
/// new connection has it dropped after its 0-RTT went out, its handshake stalled until the
/// connect timeout, its early streams waiting. The run ends with a count of pages, not a time,
/// so every stall's error is in it however late it began; and the stalls are counted (the
/// relay's dropped connections), not assumed: a server late to its keep-alive may answer a
/// page on the first connection still. With a response timeout shorter than the connect
/// timeout, the thread still sleeps (the connect timeout bounds the early streams; their own
/// deadline, were it armed, would be in the past at every turn: a busy loop), and each failed
/// handshake is one connect error, as without `--early-data`, its other files unsent.
///
/// The bench thread's CPU is read from `/proc` by its name, which the first thread of every
/// run has: beside the other tests of this executable (libtest runs them on threads of one
/// process) another run's thread could be read for it. So the body runs in a process of its
/// own, this executable run again with this test alone, stopped by its pid if it outlives
/// its bound.
#[test]
fn a_stalled_0rtt_handshake_fails_once_at_the_connect_timeout_without_spinning() {
    if std::env::var_os(ALONE).is_some() {
        return stalled_handshake();
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([STALL_TEST, "--exact", "--test-threads", "1", "--nocapture"])
        .env(ALONE, "1")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    // Waited for within a bound; stopped by its pid past it, or if it cannot be waited for.
    let start = Instant::now();
    let status = loop {
        let stopped_why = match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if start.elapsed() > Duration::from_secs(120) => {
                "not done within 120 s".to_string()
            }
            Ok(None) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => format!("waiting for it: {e}"),
        };
        let _ = child.kill();
        let _ = child.wait();
        break Err(stopped_why);
    };
    let said = std::fs::read_to_string(&out).unwrap_or_default()
        + &std::fs::read_to_string(&err).unwrap_or_default();
    let status = status.unwrap_or_else(|why| panic!("{why}:\n{said}"));
    assert!(status.success(), "{said}");
    assert!(said.contains("1 passed"), "the test ran, alone: {said}");
}

/// The body of the stalled-handshake test (in a process of its own).
fn stalled_handshake() {
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
            Stop::Pages(3),
            STALL_RESPONSE_TIMEOUT,
            Duration::from_secs(1),
        );
        finished.store(true, Ordering::Relaxed);
        r
    });
    // The bench thread's CPU, last seen while it ran (bounded: the run stops at the third
    // page's end, a connect timeout at most; a minute at most here).
    let mut cpu = Duration::ZERO;
    let start = Instant::now();
    while !done.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
        if let Some(c) = thread_cpu("flint-bench-0") {
            cpu = c;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = run.join().unwrap();
    let stalls = relay.dropped.load(Ordering::Relaxed);
    let s = &r.stats;
    // Each stalled connection is one error: counted per early stream, it would be FILES.
    let failed = s.errors.get(ErrorKind::ConnectTimeout);
    assert!(failed >= 1, "no page stalled: {:?}", s.errors);
    assert_eq!(failed, stalls, "one error a stall: {:?}", s.errors);
    assert_eq!(s.errors.total(), failed, "{:?}", s.errors);
    assert!(s.requests >= FILES, "the first page's: {}", s.requests);
    assert_eq!(s.tls_resumed, 0, "no later handshake ended");
    assert!(
        cpu < CONNECT_TIMEOUT / 4 * u32::try_from(stalls).unwrap(),
        "the bench thread used {cpu:?} of CPU through {stalls} stalls of {CONNECT_TIMEOUT:?}"
    );
}
