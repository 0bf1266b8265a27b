//! `--pipeline N` on one-file pages (a single URL among them): N pages in flight on the
//! connection, each request a page of its own, as `h2load --h1 -m N` and wrk's pipeline.lua
//! keep them. A server that closes mid-pipeline is the error of its kind for the response it
//! cut, the requests behind it unfinished; one that closes after a complete response (saying
//! `Connection: close`, or ending a close-delimited body) never processed those behind it,
//! which are sent again on a new connection (`pipeline_resent`).

use crate::common;
use crate::per_connection;

use bench::stats::ErrorKind;
use bench::{BenchError, HttpMode, RequestSpec, RunResult, Stop, Workload};
use common::{config, one_file, workload};
use per_connection::{read_until_stopped, HeadEnds, PerConnection};
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";

/// `-c 1 --pipeline depth -n pages` against `addr`.
fn run(addr: std::net::SocketAddr, w: &Workload, depth: u32, pages: u64) -> RunResult {
    let mut cfg = config(addr, 1, Stop::Pages(pages));
    cfg.http = HttpMode::Pipeline;
    cfg.streams = Some(depth);
    bench::run(&cfg, w, &AtomicBool::new(false)).expect("run")
}

/// Answers requests in order, each after a read found nothing more (3 ms), and keeps the most
/// requests it ever held unanswered.
fn serve_slowly(mut s: TcpStream, most: &AtomicU64, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(3)));
    let (mut buf, mut heads, mut pending) = ([0u8; 4096], HeadEnds::default(), 0u64);
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                pending += buf[..n].iter().filter(|&&b| heads.at(b)).count() as u64;
                most.fetch_max(pending, Ordering::Relaxed);
                continue;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
        if pending > 0 {
            pending -= 1;
            if s.write_all(OK).is_err() {
                return;
            }
        }
    }
}

#[test]
fn one_file_pages_keep_n_requests_in_flight() {
    let most = Arc::new(AtomicU64::new(0));
    let m = most.clone();
    let server = PerConnection::start(move |s, stop| serve_slowly(s, &m, stop));
    let w = workload(&[("a", 1.0, &["/a"]), ("b", 1.0, &["/b"])]);
    let r = run(server.addr, &w, 4, 40);
    server.stop();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests, 40);
    assert_eq!(r.stats.pages_done, 40);
    assert_eq!(r.stats.unfinished, 0);
    // The first four leave in one write: the server reads them together.
    let most = most.load(Ordering::Relaxed);
    assert!(
        (2..=4).contains(&most),
        "{most} requests in flight with --pipeline 4"
    );
}

/// Reads until `n` request heads have come, then writes `reply` and closes (everything sent
/// was read, so the close is a FIN).
fn after_heads(s: &mut TcpStream, stop: &AtomicBool, n: usize, reply: &[u8]) {
    let (mut heads, mut seen) = (HeadEnds::default(), 0);
    read_until_stopped(s, stop, &mut [0u8; 4096], |s, data| {
        seen += data.iter().filter(|&&b| heads.at(b)).count();
        if seen < n {
            return true;
        }
        let _ = s.write_all(reply);
        false
    });
}

#[test]
fn a_server_closing_mid_pipeline_cuts_one_response_and_leaves_the_rest_unfinished() {
    // Two responses, the third's head and 5 of its 100 bytes, then the close; the fourth
    // request was sent and never answered.
    let reply = [
        OK,
        OK,
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
    ]
    .concat();
    let server = PerConnection::start(move |mut s, stop| after_heads(&mut s, stop, 4, &reply));
    let r = run(server.addr, &one_file(), 4, 4);
    server.stop();
    assert_eq!(r.stats.requests, 2);
    assert_eq!(r.stats.errors.get(ErrorKind::ShortBody), 1);
    assert_eq!(r.stats.errors.total(), 1, "{:?}", r.stats.errors);
    assert_eq!(r.stats.unfinished, 1);
    assert_eq!(r.stats.unsent_at_end, 0);
    assert_eq!(r.stats.pages_done, 2);
}

/// A server whose first connection reads `n` request heads, writes `reply` and closes; every
/// later one answers each request.
fn first_connection_closes(n: usize, reply: &'static [u8]) -> (PerConnection, Arc<AtomicU64>) {
    let connections = Arc::new(AtomicU64::new(0));
    let c = connections.clone();
    let server = PerConnection::start(move |mut s, stop| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            return after_heads(&mut s, stop, n, reply);
        }
        let mut heads = HeadEnds::default();
        read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
            let n = data.iter().filter(|&&b| heads.at(b)).count();
            (0..n).all(|_| s.write_all(OK).is_ok())
        });
    });
    (server, connections)
}

#[test]
fn requests_behind_connection_close_are_sent_again_on_a_new_connection() {
    // The first connection answers its first request with `Connection: close` and closes; the
    // server never processed pages 2 to 4 behind it: they go again, with pages 5 and 6.
    let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
    let (server, connections) = first_connection_closes(4, close);
    let r = run(server.addr, &one_file(), 4, 6);
    server.stop();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests, 6);
    assert_eq!(r.stats.unfinished, 0);
    assert_eq!(r.stats.pipeline_resent, 3);
    assert_eq!(r.stats.pages_done, 6);
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

#[test]
fn requests_behind_a_close_delimited_response_are_sent_again() {
    // Its body ends with the connection: the two requests behind it go again.
    let (server, connections) =
        first_connection_closes(3, b"HTTP/1.1 200 OK\r\n\r\nuntil the close");
    let r = run(server.addr, &one_file(), 3, 3);
    server.stop();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests, 3);
    assert_eq!(r.stats.unfinished, 0);
    assert_eq!(r.stats.pipeline_resent, 2);
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

#[test]
fn lanes_are_the_closed_loop_without_think_time_or_redirects() {
    let w = one_file();
    let addr = "127.0.0.1:9".parse().unwrap();
    let mut cfg = config(addr, 1, Stop::Pages(1));
    cfg.http = HttpMode::Pipeline;
    cfg.streams = Some(4);
    let refused = |cfg: &bench::BenchConfig| match bench::run(cfg, &w, &AtomicBool::new(false)) {
        Err(BenchError::Config(m)) => m,
        other => panic!("not refused: {other:?}"),
    };
    let m = refused(&bench::BenchConfig {
        rate: Some(10.0),
        ..cfg.clone()
    });
    assert!(m.contains("--rate"), "{m}");
    let m = refused(&bench::BenchConfig {
        think: Some(Duration::from_millis(1)),
        ..cfg.clone()
    });
    assert!(m.contains("--think"), "{m}");
    let m = refused(&bench::BenchConfig {
        redirect: 2,
        ..cfg.clone()
    });
    assert!(m.contains("--redirect"), "{m}");
}

/// A server of one connection: it answers the first of three pipelined requests with
/// `Connection: close` and closes; by then its port is bound and not listening, so that the
/// reconnect is refused. Its thread returns the socket holding the port (kept until the run
/// ends); every wait is bounded.
fn one_connection_then_refused() -> (SocketAddr, std::thread::JoinHandle<Socket>) {
    let socket = || {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s
    };
    let listener = socket();
    listener
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    listener.listen(8).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let thread = std::thread::spawn(move || {
        listener
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let (s, _) = listener.accept().expect("the run connects");
        drop(listener);
        let hold = socket();
        hold.bind(&addr.into())
            .expect("the port held, not listening");
        let mut s: TcpStream = s.into();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let (mut buf, mut heads, mut seen) = ([0u8; 4096], HeadEnds::default(), 0);
        while seen < 3 {
            let n = s.read(&mut buf).expect("three requests");
            assert!(n > 0, "three requests before the client's close");
            seen += buf[..n].iter().filter(|&&b| heads.at(b)).count();
        }
        s.write_all(CLOSE).unwrap();
        let _ = s.shutdown(Shutdown::Write);
        // Until the client closes too (a FIN for what it sent, as nginx's close).
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        hold
    });
    (addr, thread)
}

#[test]
fn a_failed_reconnect_leaves_the_lanes_going_again_not_sent() {
    // Pages 2 and 3, written behind page 1's `Connection: close`, were never processed: they
    // go again, and the new connection is refused. Page 2 is that error; page 3 was not sent
    // on any connection the server processed, so it is not sent, not unfinished.
    let (addr, server) = one_connection_then_refused();
    let r = run(addr, &one_file(), 3, 3);
    drop(server.join().expect("the server's thread"));
    let s = &r.stats;
    assert_eq!(s.requests, 1);
    assert_eq!(s.pipeline_resent, 2);
    assert_eq!(s.errors.get(ErrorKind::ConnectRefused), 1, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 1, "{:?}", s.errors);
    assert_eq!(s.unfinished, 0);
    assert_eq!(s.unsent_at_end, 1);
}

#[test]
fn a_failed_response_that_closes_sends_the_rest_again_in_a_batch_as_in_lanes() {
    // A 404 saying `Connection: close`: the requests written behind it were never processed.
    // Lanes: pages 2 and 3 go again. A batch: its files 2 and 3 go again, and the page, read
    // to its end as after a 404 on a connection that stays, is not a hit.
    let closing_404 = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno";
    let batch = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    for (w, pages, hits) in [(one_file(), 3, 2), (batch, 1, 0)] {
        let (server, connections) = first_connection_closes(3, closing_404);
        let r = run(server.addr, &w, 3, pages);
        server.stop();
        let s = &r.stats;
        assert_eq!(s.requests, 3, "{pages}");
        assert_eq!(s.statuses.get(404), 1, "{pages}");
        assert_eq!(s.pipeline_resent, 2, "{pages}");
        assert_eq!(s.unfinished + s.unsent_at_end, 0, "{pages}");
        assert_eq!(s.pages_done, hits, "{pages}");
        assert_eq!(connections.load(Ordering::SeqCst), 2, "{pages}");
    }
}

#[test]
fn a_batch_with_a_post_to_send_again_is_not_sent_again_and_each_is_counted() {
    // /a answered with `Connection: close`; /p (a POST) and /c were written behind it: the
    // page ends there, neither sent again, both counted not re-sent.
    let mut w = workload(&[("p", 1.0, &["/a", "/p", "/c"])]);
    let get = || RequestSpec {
        method: None,
        headers: Vec::new(),
        body: None,
    };
    let post = RequestSpec {
        method: Some("POST".into()),
        headers: Vec::new(),
        body: Some(b"x=1".to_vec()),
    };
    w.requests = vec![get(), post, get()];
    let (server, connections) = first_connection_closes(3, CLOSE);
    let r = run(server.addr, &w, 3, 1);
    server.stop();
    let s = &r.stats;
    assert_eq!(s.requests, 1);
    assert_eq!(s.pipeline_not_resent, 2);
    assert_eq!(s.pipeline_resent, 0);
    assert_eq!(s.unfinished + s.unsent_at_end + s.errors.total(), 0);
    assert_eq!(s.pages_done, 0);
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}
