//! Many connections left idle each end at their own deadline: the server keeps the earliest
//! deadline of all between turns (recomputing only the connections it acted on), and no
//! connection, whenever it came or was last used, is left out of it.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer};
use http3::{Limits, Timeouts, H3_NO_ERROR};
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
