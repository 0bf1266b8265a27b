//! How a run's connections end (docs/latency.md, the end of the run): a lingering close, so
//! that the server gets a FIN after every request counted as sent (never a RST that drops
//! them), bounded: a server that never closes costs the bound and no more.

use crate::common;

use bench::Stop;
use common::timed::until_busy;
use common::{config, one_file};
use std::io::Read;
use std::net::{Shutdown, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The first window tried: each Webchild has its request in flight at its end (a longer one
/// only when a busy machine had not sent them all by then).
const WINDOW: Duration = Duration::from_millis(300);

/// What the server saw of one connection: the requests it read, and how it ended (`Ok(())`:
/// the client's FIN, after everything it sent; an error: a reset).
type Ended = (usize, std::io::Result<()>);

/// A server that reads requests and answers none. `close_on_fin`: it closes when the client's
/// FIN comes (a server's usual close); else it keeps the connection open until the test ends.
fn silent_server(close_on_fin: bool) -> (std::net::SocketAddr, mpsc::Receiver<Ended>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let (mut requests, mut buf) = (0, [0u8; 4096]);
                let end = loop {
                    match s.read(&mut buf) {
                        Ok(0) => break Ok(()),
                        Ok(n) => {
                            requests += buf[..n].windows(4).filter(|w| w == b"\r\n\r\n").count()
                        }
                        Err(e) => break Err(e),
                    }
                };
                let _ = tx.send((requests, end));
                if close_on_fin {
                    let _ = s.shutdown(Shutdown::Both);
                } else {
                    // Held open for a while after the client is done, then dropped.
                    std::thread::sleep(Duration::from_secs(20));
                }
            });
        }
    });
    (addr, rx)
}

/// Every connection's end as the server saw it, within `limit`.
fn ends(rx: &mpsc::Receiver<Ended>, connections: usize, limit: Duration) -> Vec<Ended> {
    let deadline = Instant::now() + limit;
    (0..connections)
        .map_while(|_| {
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok()
        })
        .collect()
}

#[test]
fn requests_in_flight_at_the_end_reach_the_server_followed_by_a_fin() {
    let (r, rx) = until_busy(
        WINDOW,
        |window| {
            let (addr, rx) = silent_server(true);
            let cfg = config(addr, 3, Stop::Duration(window));
            let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
            (r, rx)
        },
        |(r, _)| r.stats.unfinished == 3,
    );
    assert_eq!(r.stats.unfinished, 3, "one request in flight per Webchild");
    let seen = ends(&rx, 3, Duration::from_secs(10));
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (requests, end) in &seen {
        assert_eq!(*requests, 1);
        assert!(end.is_ok(), "a FIN after the request, not a reset: {end:?}");
    }
}

#[test]
fn a_server_that_never_closes_costs_the_linger_bound_and_no_more() {
    let (r, rx, window, took) = until_busy(
        WINDOW,
        |window| {
            let (addr, rx) = silent_server(false);
            let cfg = config(addr, 3, Stop::Duration(window));
            let started = Instant::now();
            let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
            (r, rx, window, started.elapsed())
        },
        |(r, ..)| r.stats.unfinished == 3,
    );
    assert_eq!(r.stats.unfinished, 3);
    assert_eq!(r.stats.requests, 0);
    // The window, then the whole second of the bound (the server never closes), then the
    // close; generous above for a loaded machine, far below a hang.
    let bound = window + Duration::from_secs(1);
    assert!(took >= bound, "{took:?}");
    assert!(took < bound + Duration::from_secs(7), "{took:?}");
    let seen = ends(&rx, 3, Duration::from_secs(10));
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen.iter().all(|(n, end)| *n == 1 && end.is_ok()),
        "{seen:?}"
    );
}
