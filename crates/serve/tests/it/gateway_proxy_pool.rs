//! The proxy's pool of idle upstream connections under many clients at once: every connection
//! that comes back is kept (up to the mount's `pool`), so clients that keep coming back never
//! make it open new ones. Counted by the upstream's accepts, not by time.

use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Instant;

use crate::common::*;
use crate::proxy_support::*;

/// Requests held until `parties` of them wait, then all answered: each round of the clients
/// has every one of its requests in flight upstream at once, on as many connections.
struct Rounds {
    state: Mutex<(usize, u64)>,
    all_in: Condvar,
    parties: usize,
}

impl Rounds {
    /// Waits (bounded) for the round's other requests; false if they did not all come.
    fn wait(&self) -> bool {
        let mut st = self.state.lock().unwrap();
        let round = st.1;
        st.0 += 1;
        if st.0 == self.parties {
            *st = (0, round + 1);
            self.all_in.notify_all();
            return true;
        }
        let until = Instant::now() + WAIT;
        while st.1 == round {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self.all_in.wait_timeout(st, left).unwrap().0;
        }
        true
    }
}

#[test]
fn more_clients_than_the_old_pool_cap_reuse_their_upstream_connections() {
    // More than the 32 idle connections per address the pool used to keep.
    const CLIENTS: usize = 48;
    const REQUESTS: usize = 5;
    let rounds = Arc::new(Rounds {
        state: Mutex::new((0, 0)),
        all_in: Condvar::new(),
        parties: CLIENTS,
    });
    let missed = Arc::new(Mutex::new(0usize));
    let up = {
        let (rounds, missed) = (rounds.clone(), missed.clone());
        Upstream::start(move |_| {
            if !rounds.wait() {
                *missed.lock().unwrap() += 1;
            }
            ok("pooled")
        })
    };
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let addr = srv.addr;
            std::thread::spawn(move || {
                let mut s = connect(addr);
                let mut rd = BufReader::new(s.try_clone().unwrap());
                for _ in 0..REQUESTS {
                    s.write_all(b"GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n")
                        .unwrap();
                    let r = read_response(&mut rd, false).unwrap();
                    assert_eq!((r.status, r.body.as_slice()), (200, &b"pooled"[..]));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(
        *missed.lock().unwrap(),
        0,
        "every round had all its requests at once"
    );
    let st = srv.stop();
    let accepted = up.accepted.load(Ordering::SeqCst);
    assert_eq!(st.proxy_requests, (CLIENTS * REQUESTS) as u64);
    // One connection per client in flight at once, opened in the first round, kept after.
    assert_eq!(accepted, CLIENTS, "upstream connections opened");
    assert_eq!(st.proxy_connects, CLIENTS as u64);
}

#[test]
fn an_idle_upstream_connection_is_closed_once_unused_for_the_idle_timeout() {
    // An upstream of one connection that answers one request, then waits (longer than the
    // test's bound) for the proxy to close it: a read timing out means it was never closed.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, closed) = mpsc::channel();
    let upstream = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(2 * WAIT)).unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "closed before the request");
            head.extend_from_slice(&buf[..n]);
        }
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nonce")
            .unwrap();
        let _ = tx.send(s.read(&mut buf).map_err(|e| e.kind()));
    });
    let m = mount("/api/", &[url], "idle_timeout_ms = 2000");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let r = exchange(
        srv.addr,
        "GET /api/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"once"[..]));
    let before = srv.stats().wakeups;
    // The client's connection is gone: only the pool's ageing can close the upstream's.
    let got = closed
        .recv_timeout(3 * WAIT)
        .expect("the upstream thread ended");
    assert_eq!(got, Ok(0), "the proxy closed its idle connection");
    upstream.join().unwrap();
    // With no client connection the loop slept until the connection aged out: one wake-up for
    // that (two if the clock woke it a hair early) and one for this snapshot, where a sweep
    // every 250 ms would have made 8 or more in the 2 s.
    let woke = srv.stats().wakeups - before;
    assert!(woke <= 4, "{woke} wake-ups while the server was idle");
    assert_eq!(srv.stop().proxy_connects, 1);
}

#[test]
fn a_kept_upstream_connection_costs_a_peek_and_a_read_per_response() {
    // Requests one after the other on one client connection, each answered in one write: the
    // kept connection is peeked as it is taken (bytes the upstream sent unasked must never be
    // the next request's answer), and the response read once, after its event.
    const REQUESTS: u64 = 40;
    let up = Upstream::start(|_| ok("once"));
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    for _ in 0..REQUESTS {
        s.write_all(b"GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = read_response(&mut rd, false).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"once"[..]));
    }
    drop((s, rd));
    let st = srv.stop();
    assert_eq!(st.proxy_requests, REQUESTS);
    assert_eq!(st.proxy_connects, 1, "one upstream connection, kept");
    // A peek per reuse (the first request's connection is new) and a read per response; a
    // response may come in two segments now and then on a busy machine: a read more.
    let least = 2 * REQUESTS - 1;
    assert!(
        st.proxy_reads >= least && st.proxy_reads < least + REQUESTS / 4,
        "{} reads of the upstream connection for {REQUESTS} responses",
        st.proxy_reads
    );
}
