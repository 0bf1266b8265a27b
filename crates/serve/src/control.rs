//! What the server's handle and its event-loop threads share: a stop flag with one `Waker` per
//! loop, the count of open connections against `max_connections`, the count of gateway programs
//! running, the counters each loop publishes when asked, and the HTTP/3 ticket key clock. Apart from `server.rs` (which
//! creates it and hands it out) and `event_loop.rs` (which reads it), so that neither imports
//! the other's internals.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex};

use mio::{Token, Waker};

use crate::stats::ServerStats;

/// The listening socket's token in each loop.
pub(crate) const LISTENER: Token = Token(usize::MAX - 1);
/// The loop's waker's token (shutdown, a stats snapshot asked).
pub(crate) const WAKER: Token = Token(usize::MAX);
/// The loop's UDP socket's token (HTTP/3), when it has one.
pub(crate) const QUIC: Token = Token(usize::MAX - 2);

/// How the handle controls the threads: a stop flag, their wakers, and stats snapshots.
pub(crate) struct Control {
    pub stop: AtomicBool,
    /// One per loop; shared with the loop's spawner thread, which wakes it too.
    pub wakers: Vec<Arc<Waker>>,
    /// Connections open across every thread, against `max_connections`.
    pub conns: AtomicUsize,
    /// Bumped by `ShutdownHandle::stats`; each loop answers by publishing its counters
    /// (generation `u64::MAX` once it has exited, with its final counters).
    pub snap_gen: AtomicU64,
    pub snaps: Mutex<Vec<(u64, ServerStats)>>,
    pub snap_cv: Condvar,
    /// Gateway programs running across every thread, against `cgi_max_programs`.
    pub programs: Arc<AtomicUsize>,
    /// The htpasswd files' users and the failure counts, when a prefix is protected.
    pub auth: Option<Arc<crate::auth::Shared>>,
    /// The clock every thread's HTTP/3 session ticket key periods count on (one a server:
    /// a test moving it moves no other server's).
    pub ticket_clock: http3::TicketClock,
}

impl Control {
    pub fn wake_all(&self) {
        for w in &self.wakers {
            let _ = w.wake();
        }
    }
}
