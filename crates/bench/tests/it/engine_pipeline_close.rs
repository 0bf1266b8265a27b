//! Pipelining against a server that processes requests as nginx does, one at a time in order,
//! counting each it begins (its access log): a request it was working on when the client's FIN
//! came is counted (nginx's 499) and nothing behind it is read; one pipelined behind a response
//! after which it closes (its `keepalive_requests`, said by `Connection: close`) is never
//! processed. Held to docs/latency.md's identity, the server's count = requests + unfinished,
//! exactly: the requests behind a closing response are sent again on a new connection
//! (`pipeline_resent`), and the lingering close holds its FIN until the server has answered all
//! but the last request outstanding.

use crate::common;
use crate::per_connection;

use bench::{HttpMode, RequestSpec, RunResult, Stop, Workload};
use common::{config, one_file, workload};
use per_connection::{HeadEnds, PerConnection};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";

/// What the server did: requests it began (its log), connections accepted and still open.
#[derive(Default)]
struct Log {
    processed: AtomicU64,
    accepted: AtomicU64,
    open: AtomicU64,
}

/// How the server answers: each request after `delay`, and `Connection: close` on the
/// `close_after`-th of a connection.
#[derive(Clone, Copy)]
struct Serving {
    delay: Duration,
    close_after: Option<u64>,
}

/// The socket's bytes as the server has taken them: complete request heads not yet begun, and
/// whether the client's FIN came.
struct Conn {
    s: TcpStream,
    heads: HeadEnds,
    pending: u64,
    eof: bool,
}

impl Conn {
    /// One read, waiting at most `wait`; false when the connection failed.
    fn read_for(&mut self, wait: Duration) -> bool {
        let _ = (self.s).set_read_timeout(Some(wait.max(Duration::from_millis(1))));
        let mut buf = [0u8; 4096];
        match self.s.read(&mut buf) {
            Ok(0) => self.eof = true,
            Ok(n) => self.pending += buf[..n].iter().filter(|&&b| self.heads.at(b)).count() as u64,
            Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
            Err(_) => return false,
        }
        true
    }
}

fn serve(s: TcpStream, stop: &AtomicBool, how: Serving, log: &Log) {
    log.accepted.fetch_add(1, Ordering::SeqCst);
    log.open.fetch_add(1, Ordering::SeqCst);
    serve_requests(s, stop, how, log);
    log.open.fetch_sub(1, Ordering::SeqCst);
}

fn serve_requests(s: TcpStream, stop: &AtomicBool, how: Serving, log: &Log) {
    let mut c = Conn {
        s,
        heads: HeadEnds::default(),
        pending: 0,
        eof: false,
    };
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        if c.pending == 0 {
            if c.eof || !c.read_for(Duration::from_millis(20)) {
                return;
            }
            continue;
        }
        // Begun: in the log whatever happens to it.
        c.pending -= 1;
        log.processed.fetch_add(1, Ordering::SeqCst);
        let until = Instant::now() + how.delay;
        while !how.delay.is_zero() && Instant::now() < until {
            if c.eof {
                return; // the client closed while it was worked on: 499, nothing more read
            }
            if !c.read_for(until.saturating_duration_since(Instant::now())) {
                return;
            }
        }
        answered += 1;
        let last = how.close_after == Some(answered);
        if c.s.write_all(if last { CLOSE } else { OK }).is_err() {
            return;
        }
        if last {
            // As nginx closes: its side ends, what the client still sends is read and
            // dropped until it closes too (a FIN, not a reset, for what it had sent).
            let _ = c.s.shutdown(Shutdown::Write);
            let deadline = Instant::now() + Duration::from_secs(5);
            while !c.eof && Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                if !c.read_for(Duration::from_millis(20)) {
                    return;
                }
            }
            return;
        }
    }
}

/// A server serving `how`, and its log.
fn server(how: Serving) -> (PerConnection, Arc<Log>) {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let srv = PerConnection::start(move |s, stop| serve(s, stop, how, &l));
    (srv, log)
}

/// The server's count once it has accepted the run's `connects` connections and every one
/// has ended (bounded).
fn settled(log: &Log, connects: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.accepted.load(Ordering::SeqCst) < connects || log.open.load(Ordering::SeqCst) > 0 {
        assert!(
            Instant::now() < deadline,
            "the server's connections never ended"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    log.processed.load(Ordering::SeqCst)
}

/// `-c concurrency --pipeline [depth]` until `stop` against `addr`.
fn run(
    addr: std::net::SocketAddr,
    w: &Workload,
    concurrency: usize,
    depth: Option<u32>,
    stop: Stop,
) -> RunResult {
    let mut cfg = config(addr, concurrency, stop);
    cfg.http = HttpMode::Pipeline;
    cfg.streams = depth;
    bench::run(&cfg, w, &AtomicBool::new(false)).expect("run")
}

/// `runs` runs, each against a fresh server: the server's count is requests + unfinished in
/// every one, with no error. Returns the runs' results.
fn exact_every_time(
    how: Serving,
    w: &Workload,
    (concurrency, depth, stop): (usize, Option<u32>, Stop),
    runs: usize,
) -> Vec<RunResult> {
    (0..runs)
        .map(|i| {
            let (srv, log) = server(how);
            let r = run(srv.addr, w, concurrency, depth, stop);
            let processed = settled(&log, r.stats.connects);
            srv.stop();
            let s = &r.stats;
            let what = format!(
                "run {i}: server {processed}, requests {}, unfinished {}, unsent {}, \
                 re-sent {}, errors {:?}",
                s.requests, s.unfinished, s.unsent_at_end, s.pipeline_resent, s.errors
            );
            println!("{what}");
            assert_eq!(s.errors.total(), 0, "{what}");
            assert_eq!(processed, s.requests + s.unfinished, "{what}");
            r
        })
        .collect()
}

#[test]
fn lanes_behind_a_closing_response_are_sent_again_and_the_count_is_exact() {
    // nginx's `keepalive_requests 3` under `--pipeline 4 -c 1 -n 30`: every connection
    // answers three pages in order, the last saying `Connection: close` with at least one
    // page written whole behind it (four in flight), so 10 connections; the last has none
    // behind (the quota leaves 3). How many are written whole behind each close (1 to 3)
    // depends on how the responses were read together.
    let how = Serving {
        delay: Duration::ZERO,
        close_after: Some(3),
    };
    let runs = exact_every_time(how, &one_file(), (1, Some(4), Stop::Pages(30)), 3);
    for r in &runs {
        let s = &r.stats;
        assert_eq!((s.requests, s.pages_done, s.unfinished), (30, 30, 0));
        assert_eq!(s.connects, 10);
        assert!(
            (9..=27).contains(&s.pipeline_resent),
            "{}",
            s.pipeline_resent
        );
        assert_eq!(s.pipeline_not_resent, 0);
    }
}

#[test]
fn a_batch_behind_a_closing_response_is_sent_again_and_the_count_is_exact() {
    // Pages of three files, each connection closing after its second answer, `-c 1 -n 10`.
    // Two pages take three connections: a,b (c re-sent) | c, then the next page's a (its b,c
    // re-sent) | b,c. So 15 connections and 15 re-sends for 30 requests.
    let how = Serving {
        delay: Duration::ZERO,
        close_after: Some(2),
    };
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    let runs = exact_every_time(how, &w, (1, None, Stop::Pages(10)), 3);
    for r in &runs {
        let s = &r.stats;
        assert_eq!((s.requests, s.pages_done, s.unfinished), (30, 10, 0));
        assert_eq!((s.connects, s.pipeline_resent), (15, 15));
    }
}

#[test]
fn a_server_still_answering_at_the_end_gets_the_fin_after_all_but_the_last() {
    // Each answer takes 10 ms: at the end every connection has three requests outstanding and
    // the server works on the first; a FIN then would end it with the two behind unread. The
    // two answers awaited before the FIN take 20 ms of the lingering close's 1 s bound: a
    // margin of 50 times for a loaded machine.
    let how = Serving {
        delay: Duration::from_millis(10),
        close_after: None,
    };
    let window = Stop::Duration(Duration::from_millis(200));
    let runs = exact_every_time(how, &one_file(), (2, Some(3), window), 3);
    assert!(runs.iter().any(|r| r.stats.unfinished >= 2));
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    let runs = exact_every_time(how, &w, (2, None, window), 3);
    assert!(runs.iter().any(|r| r.stats.unfinished >= 2));
}

#[test]
fn a_post_behind_a_closing_response_is_not_sent_again() {
    // Lanes of a GET page and a POST page; each connection closes after its first answer.
    let mut w = workload(&[("get", 1.0, &["/g"]), ("post", 1.0, &["/p"])]);
    w.requests = vec![
        RequestSpec {
            method: None,
            headers: Vec::new(),
            body: None,
        },
        RequestSpec {
            method: Some("POST".into()),
            headers: Vec::new(),
            body: Some(b"x=1".to_vec()),
        },
    ];
    let how = Serving {
        delay: Duration::ZERO,
        close_after: Some(1),
    };
    let runs = exact_every_time(
        how,
        &w,
        (2, Some(3), Stop::Duration(Duration::from_millis(300))),
        2,
    );
    for r in &runs {
        let s = &r.stats;
        assert!(s.pipeline_not_resent > 0, "{}", s.pipeline_not_resent);
        assert!(s.pipeline_resent > 0, "{}", s.pipeline_resent);
        // A page whose POST was not sent again is not a hit, nor a response.
        assert_eq!(s.pages_done, s.requests);
    }
}

/// A server whose first connection reads three request heads, answers the first (keep-alive)
/// and closes without a word; every later one answers each request.
fn first_answers_one_and_closes() -> (PerConnection, Arc<AtomicU64>) {
    let connections = Arc::new(AtomicU64::new(0));
    let c = connections.clone();
    let srv = PerConnection::start(move |mut s, stop| {
        let first = c.fetch_add(1, Ordering::SeqCst) == 0;
        let mut heads = HeadEnds::default();
        let mut seen = 0;
        per_connection::read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
            let n = data.iter().filter(|&&b| heads.at(b)).count();
            if !first {
                return (0..n).all(|_| s.write_all(OK).is_ok());
            }
            seen += n;
            if seen < 3 {
                return true;
            }
            let _ = s.write_all(OK);
            false // everything sent was read: the close is a FIN
        });
    });
    (srv, connections)
}

#[test]
fn a_close_after_a_complete_response_sends_the_rest_again() {
    // A batch: the page's second and third files, written behind the first, go again.
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    // Lanes: the two pages behind the first.
    for (w, depth) in [(w, None), (one_file(), Some(3))] {
        let (srv, connections) = first_answers_one_and_closes();
        let mut cfg = config(srv.addr, 1, Stop::Pages(3 - 2 * u64::from(depth.is_none())));
        cfg.http = HttpMode::Pipeline;
        cfg.streams = depth;
        let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
        srv.stop();
        let s = &r.stats;
        assert_eq!(s.errors.total(), 0, "{depth:?}: {:?}", s.errors);
        assert_eq!(s.requests, 3, "{depth:?}");
        assert_eq!(s.unfinished, 0, "{depth:?}");
        assert_eq!(s.pipeline_resent, 2, "{depth:?}");
        assert_eq!(connections.load(Ordering::SeqCst), 2, "{depth:?}");
    }
}
