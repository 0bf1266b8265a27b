//! A UDP relay that makes the server see a resumed connection's 0-RTT requests before the
//! handshake is done, whatever the scheduling (engine_h3_early).
//!
//! The UDP test server counts a request as early if it hands it out while the handshake is not
//! done. Whether it is depends on the order datagrams meet the server: on one CPU the server,
//! woken by the client's Initial, reads it alone; the client then sends its 0-RTT requests and,
//! the server's flight already in its socket, its Finished right after, and the server reads
//! both in one turn: the requests come out after the Finished, not early. So, for every client
//! address after the first (the first connection is a full handshake, with nothing early), the
//! relay holds what the server sends until the server's log counts a page's early requests
//! (`early_per_connection`) more than when that address first came: the client cannot finish
//! its handshake before the server has handed out its requests. Held at most `HOLD`, below the
//! client's connect timeout (a 0-RTT the server refused never counts: the connection then
//! goes on late, not failed).
//!
//! Each client address has an upstream socket of its own, as behind a NAT, so the server tells
//! the connections apart by address as without the relay.

use crate::udp::Log;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest the server's datagrams to one client are held: below the engine tests' connect
/// timeout (2 s), so a hold that is never released delays a connection but fails none.
const HOLD: Duration = Duration::from_millis(1500);

/// One client address: its upstream socket, and what the server sent it that is held.
struct Client {
    addr: SocketAddr,
    up: UdpSocket,
    /// The server's early count when the client first came (None: nothing held).
    early_at: Option<u64>,
    since: Instant,
    held: Vec<Vec<u8>>,
}

pub struct HoldsFlights {
    pub addr: SocketAddr,
    /// Holds that ended at `HOLD`, not with a page's early requests (for a failure's message).
    pub gave_up: Arc<AtomicU64>,
    /// Holds still on (for a failure's message).
    pub holding: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HoldsFlights {
    /// A relay to `server`, whose `log` says when it has handed out early requests: a
    /// connection's flight is released once `early_per_connection` more were.
    pub fn start(
        server: SocketAddr,
        log: Arc<Mutex<Log>>,
        early_per_connection: u64,
    ) -> HoldsFlights {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        front
            .set_read_timeout(Some(Duration::from_millis(2)))
            .unwrap();
        let addr = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let gave_up = Arc::new(AtomicU64::new(0));
        let holding = Arc::new(AtomicU64::new(0));
        let counts = Counts {
            per_connection: early_per_connection,
            gave_up: gave_up.clone(),
            holding: holding.clone(),
        };
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || relay(front, server, &log, &stopped, &counts));
        HoldsFlights {
            addr,
            gave_up,
            holding,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for HoldsFlights {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a hold waits for, and what the relay tells of its holds.
struct Counts {
    per_connection: u64,
    gave_up: Arc<AtomicU64>,
    holding: Arc<AtomicU64>,
}

fn relay(
    front: UdpSocket,
    server: SocketAddr,
    log: &Mutex<Log>,
    stop: &AtomicBool,
    counts: &Counts,
) {
    let mut buf = vec![0u8; 65536];
    let mut clients: Vec<Client> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        // The clients' datagrams go on at once, each from its own upstream socket.
        if let Ok((n, from)) = front.recv_from(&mut buf) {
            if !clients.iter().any(|c| c.addr == from) {
                let up = UdpSocket::bind("127.0.0.1:0").unwrap();
                up.set_nonblocking(true).unwrap();
                let early_at = (!clients.is_empty()).then(|| log.lock().unwrap().early);
                clients.push(Client {
                    addr: from,
                    up,
                    early_at,
                    since: Instant::now(),
                    held: Vec::new(),
                });
            }
            let c = clients.iter().find(|c| c.addr == from).unwrap();
            let _ = c.up.send_to(&buf[..n], server);
        }
        let early = log.lock().unwrap().early;
        for c in &mut clients {
            if let Some(at) = c
                .early_at
                .filter(|&at| early >= at + counts.per_connection || c.since.elapsed() > HOLD)
            {
                let short = early < at + counts.per_connection;
                counts
                    .gave_up
                    .fetch_add(u64::from(short), Ordering::Relaxed);
                c.early_at = None;
                for d in c.held.drain(..) {
                    let _ = front.send_to(&d, c.addr);
                }
            }
            while let Ok((n, _)) = c.up.recv_from(&mut buf) {
                match c.early_at {
                    Some(_) => c.held.push(buf[..n].to_vec()),
                    None => {
                        let _ = front.send_to(&buf[..n], c.addr);
                    }
                }
            }
        }
        let holding = clients.iter().filter(|c| c.early_at.is_some()).count();
        counts.holding.store(holding as u64, Ordering::Relaxed);
    }
}
