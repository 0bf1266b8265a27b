//! Many connections left idle each end at their own deadline: the server keeps the earliest
//! deadline of all between turns (recomputing only the connections it acted on), and no
//! connection, whenever it came or was last used, is left out of it. And the keep-alive cuts
//! nothing it must not: a request received in the turn a late server acts on its keep-alive
//! is answered whole before the close, and a 0-RTT connection's keep-alive waits for its
//! handshake to be done (which has its own deadline). A server late to its deadline is one
//! whose `on_deadline` is called with a later instant: no test waits for it.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer, BOUND, SERVER};
use http3::{Client, ClientEvent, EarlyData, Limits, Server, ServerEvent, Timeouts};
use http3::{H3_NO_ERROR, MAX_DATAGRAM};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(120);
/// Room for a loaded machine: the last peer's request must come before its keep-alive ends it.
const KEEP_ALIVE: Duration = Duration::from_secs(4);

/// Connects `n` clients (from ports `first..`), turning until each has its handshake done;
/// with `ask`, the last one sends a GET of `/` in the turn its own handshake is seen done,
/// not after the others' (its keep-alive runs from then).
fn connect(net: &mut Net, first: u16, n: u16, ask: bool) {
    for port in first..first + n {
        let addr = format!("127.0.0.2:{port}").parse().unwrap();
        net.peers
            .push(Peer::connect(&mut client_config(1 << 20), addr));
    }
    let from = net.peers.len() - usize::from(n);
    let last = net.peers.len() - 1;
    let mut asked = !ask;
    net.until("handshakes", |net| {
        if !asked && net.peers[last].h3.is_some() {
            net.peers[last].get("/");
            asked = true;
        }
        asked && net.peers[from..].iter().all(|p| p.quic.is_established())
    });
}

#[test]
fn many_idle_connections_each_close_at_their_keep_alive_deadline() {
    let certs = Certs::new();
    let limits = Limits {
        idle_timeout: LONG,
        ..Limits::default()
    };
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: KEEP_ALIVE,
        send: LONG,
        ..Timeouts::default()
    };
    let mut net = Net::new(certs.server(&limits).timeouts(timeouts), 100);
    // A first batch, then a second one after it: the later connections' deadlines come after
    // the earlier ones', and one of them asks a request, which moves its own.
    connect(&mut net, 5000, 30, false);
    let now = Instant::now();
    let earliest = net.server.deadline();
    assert!(
        net.server.connections() == 0 || earliest.is_some_and(|d| d <= now + KEEP_ALIVE),
        "every idle connection's keep-alive is due within {KEEP_ALIVE:?}: {earliest:?}"
    );
    connect(&mut net, 6000, 10, true);
    let last = net.peers.len() - 1;
    let n = net.peers.len() as u64;
    // QUIC's idle timeout is two minutes and nobody PINGs: only the keep-alive deadlines,
    // taken from the server's earliest, end them.
    net.until("every keep-alive close", |net| {
        net.peers.iter().all(|p| p.quic.is_closed())
    });
    for (k, p) in net.peers.iter().enumerate() {
        assert_eq!(p.closed_by_server(), Some((true, H3_NO_ERROR)), "peer {k}");
    }
    assert_eq!(
        net.peers[last].finished.len(),
        1,
        "the request was answered"
    );
    let c = net.server.counts();
    assert_eq!(c.keep_alive_closes, n, "{c:?}");
    assert_eq!((c.header_timeouts, c.send_timeouts), (0, 0), "{c:?}");
    net.until("forgotten", |net| net.server.connections() == 0);
    assert_eq!(net.server.deadline(), None, "no connection, no deadline");
}

/// A keep-alive no turn of these tests reaches on the clock (the handshake's and the header
/// deadlines are further still): only an `on_deadline` given a later instant acts on it.
const LATE: Duration = Duration::from_secs(10);

fn late_timeouts() -> Timeouts {
    Timeouts {
        header: LONG,
        keep_alive: LATE,
        send: LONG,
        ..Timeouts::default()
    }
}

#[test]
fn a_request_received_in_the_turn_a_late_keep_alive_is_acted_on_is_answered_whole() {
    let certs = Certs::new();
    let limits = Limits {
        idle_timeout: LONG,
        ..Limits::default()
    };
    // 64 KiB through a 4 KiB stream window: many round trips, so a close as soon as the
    // server has nothing more to send at once would cut it.
    let len = 64 * 1024;
    let mut net = Net::new(certs.server(&limits).timeouts(late_timeouts()), len);
    let addr = "127.0.0.2:5000".parse().unwrap();
    net.peers
        .push(Peer::connect(&mut client_config(4096), addr));
    net.until("handshake", |n| n.peers[0].h3.is_some());
    // The request's datagram is received, and in the same turn, before it is polled, the
    // server finds its keep-alive past (a server busy elsewhere until then).
    let stream = net.peers[0].get("/");
    let mut buf = vec![0u8; 65_536];
    let (server, p) = (&mut net.server, &mut net.peers[0]);
    while let Ok((n, _)) = p.quic.send(&mut buf) {
        server.recv(&mut buf[..n], p.addr);
    }
    server.on_deadline(Instant::now() + LATE);
    assert_eq!(
        server.counts().keep_alive_closes,
        1,
        "the keep-alive was due"
    );
    net.until("the keep-alive close", |n| n.peers[0].quic.is_closed());
    let p = &net.peers[0];
    assert_eq!(
        p.goaway,
        Some(stream + 4),
        "GOAWAY: the request seen is processed"
    );
    assert_eq!(p.finished.get(&stream), Some(&len), "the response whole");
    assert!(p.quic.stream_finished(stream), "and ended");
    assert_eq!(p.closed_by_server(), Some((true, H3_NO_ERROR)));
}

/// A client of the crate's own and its address, whose datagrams go to `server` in memory.
struct Resumer {
    client: Client,
    addr: SocketAddr,
}

impl Resumer {
    /// Moves datagrams both ways until neither side has one, the server answering each
    /// request with an empty 200, then runs both sides' timers that are due.
    fn turn(&mut self, server: &mut Server) {
        let mut buf = vec![0u8; 65_536];
        let from: SocketAddr = SERVER.parse().unwrap();
        loop {
            let mut moved = false;
            while let Some(d) = self.client.send(&mut buf[..MAX_DATAGRAM]) {
                server.recv(&mut buf[..d.len], self.addr);
                moved = true;
            }
            while let Some(ev) = server.poll() {
                if let ServerEvent::Request { id, .. } = ev {
                    server.send_response(id, 200, &[], true).unwrap();
                }
            }
            while let Some(d) = server.send(&mut buf[..MAX_DATAGRAM]) {
                let _ = self.client.recv(&mut buf[..d.len], from);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        let now = Instant::now();
        if server.deadline().is_some_and(|d| d <= now) {
            server.on_deadline(now);
        }
        if self.client.deadline().is_some_and(|d| d <= now) {
            self.client.on_deadline();
        }
        std::thread::sleep(Duration::from_millis(1));
    }

    /// Turns until `done` holds; panics past [`BOUND`].
    fn until(
        &mut self,
        server: &mut Server,
        what: &str,
        mut done: impl FnMut(&mut Client, &Server) -> bool,
    ) {
        let start = Instant::now();
        while !done(&mut self.client, server) {
            assert!(start.elapsed() < BOUND, "{what}: not within {BOUND:?}");
            self.turn(server);
        }
    }
}

/// A server accepting 0-RTT with `timeouts`, and a session it issued (a first connection's,
/// from port 5000) for a client configured for early data.
fn early_server(certs: &Certs, timeouts: Timeouts) -> (Server, http3::ClientConfig, Vec<u8>) {
    let limits = Limits {
        idle_timeout: LONG,
        ..Limits::default()
    };
    let config = certs.server(&limits).timeouts(timeouts).early_data(true);
    let mut server = Server::new(config, SERVER.parse().unwrap());
    let mut client_config = certs.client(&limits).early_data();
    let addr = "127.0.0.2:5000".parse().unwrap();
    let server_addr = SERVER.parse().unwrap();
    let client = Client::connect(&mut client_config, "localhost", addr, server_addr).unwrap();
    let mut first = Resumer { client, addr };
    first.until(&mut server, "a session", |c, _| c.session().is_some());
    let session = first.client.session().unwrap().to_vec();
    // Gone before the tests' late deadlines, so that only the resumed connection meets them.
    first.client.close(H3_NO_ERROR, b"");
    first.until(&mut server, "the first connection gone", |_, s| {
        s.connections() == 0
    });
    (server, client_config, session)
}

/// A connection from port 5001 resuming `session`: its first flight (the Initial, then
/// HTTP/3's own streams in 0-RTT) has reached the server, which has set up HTTP/3 for it while
/// its handshake is not done; nothing else has moved.
fn resumed_first_flight(
    server: &mut Server,
    config: &mut http3::ClientConfig,
    session: &[u8],
) -> Resumer {
    let addr = "127.0.0.2:5001".parse().unwrap();
    let server_addr = SERVER.parse().unwrap();
    let client = Client::resume(config, "localhost", addr, server_addr, session).unwrap();
    let mut r = Resumer { client, addr };
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while let Some(d) = r.client.send(&mut buf) {
        server.recv(&mut buf[..d.len], addr);
    }
    assert!(r.client.can_send(), "the session allows 0-RTT");
    assert_eq!(server.counts().resumed, 1, "HTTP/3 set up in 0-RTT");
    r
}

#[test]
fn the_keep_alive_of_a_0rtt_connection_waits_for_its_handshake() {
    let certs = Certs::new();
    let (mut server, mut config, session) = early_server(&certs, late_timeouts());
    let mut r = resumed_first_flight(&mut server, &mut config, &session);
    // The server acts on its deadlines past the keep-alive before the 0-RTT request comes
    // (its client slow to send its next datagram): the handshake is not done, nothing closes.
    server.on_deadline(Instant::now() + LATE);
    let get: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/"),
    ];
    let stream = r.client.send_request(&get, true).unwrap();
    let (mut status, mut finished) = (0, false);
    r.until(&mut server, "the response", |c, _| {
        assert!(!c.is_closed(), "closed: {:?}", c.closed());
        while let Some(ev) = c.poll() {
            match ev {
                ClientEvent::Response { status: s, .. } => status = s,
                ClientEvent::Finished { stream: s } => finished |= s == stream,
                _ => {}
            }
        }
        finished
    });
    let c = server.counts();
    assert_eq!(c.keep_alive_closes, 0, "{c:?}");
    assert!(!r.client.is_closed(), "closed: {:?}", r.client.closed());
    assert_eq!((status, r.client.early_data()), (200, EarlyData::Accepted));
}

#[test]
fn a_0rtt_handshake_left_half_done_is_closed_at_the_handshake_deadline() {
    let certs = Certs::new();
    let (mut server, mut config, session) = early_server(&certs, late_timeouts());
    let _r = resumed_first_flight(&mut server, &mut config, &session);
    server.on_deadline(Instant::now() + LONG);
    let c = server.counts();
    assert_eq!((c.handshake_timeouts, c.keep_alive_closes), (1, 0), "{c:?}");
}
