//! An HTTP/3 connection coming up: a non-blocking UDP socket connected to the server (so the
//! kernel hands it only the server's datagrams, and an ICMP port unreachable as a refused
//! connect), registered with the loop's poll under the Webchild's token; the QUIC handshake
//! within the connect timeout, whose time is the connect row's (there is no TCP connect).
//! With `--early-data` a resumed connection whose ticket allows 0-RTT sends the page's
//! requests as soon as its first flight is out (`sends_early`), and counts at the handshake's
//! end whether the server accepted them (rejected, QUIC sends them again; a 425 Too Early is
//! a response like another, not sent again).

use super::super::errors::connect_error;
use super::super::page::Child;
use super::super::{RunShared, ThreadState, Wire, BACKOFF_US, NONE};
use super::{State, H3};
use crate::stats::TlsAgreed;
use mio::net::UdpSocket;
use mio::{Interest, Token};
use std::cell::RefCell;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Instant;

/// The client's configuration (BoringSSL's context: the trust store loaded once), shared by
/// the Webchildren of one thread: quiche takes it mutably to connect, so it is not shared
/// across threads, and made per connection it would load the system's roots every time.
pub(super) type ThreadConfig = Rc<RefCell<http3::ClientConfig>>;

/// The longest wait before a connection after those that processed nothing: the back-off of a
/// failed connect (`BACKOFF_US`) doubled for each such connection in a row, up to 64 times it.
const MOST_DOUBLINGS: u32 = 6;

thread_local! {
    /// This thread's configuration, for the run it was made for (its schedule's base instant).
    static CONFIG: RefCell<Option<(Instant, ThreadConfig)>> = const { RefCell::new(None) };
}

/// The trust `--cacert` and `--insecure` ask for, as the HTTP/3 client takes it.
pub(crate) fn trust(config: &crate::BenchConfig) -> http3::Trust {
    http3::Trust {
        cacert: config.tls.cacert.clone(),
        insecure: config.tls.insecure,
    }
}

/// This thread's configuration for the run of `sh`, made at its first Webchild.
pub(super) fn thread_config(sh: &RunShared<'_>) -> ThreadConfig {
    let base = sh.schedule.base;
    CONFIG.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((_, config)) = c.as_ref().filter(|(b, _)| *b == base) {
            return config.clone();
        }
        // The runner made one before the threads started (`runner.rs`): it cannot fail now.
        let config = http3::ClientConfig::new(&trust(sh.config), &http3::Limits::default())
            .expect("the HTTP/3 configuration was checked before the run");
        let config = match sh.config.h3_early_data {
            true => config.early_data(),
            false => config,
        };
        let config = Rc::new(RefCell::new(config));
        *c = Some((base, config.clone()));
        config
    })
}

/// What a QUIC handshake agrees on, as the TLS summary names it: TLS 1.3 always, spelt as
/// rustls's version over TCP is (`TLSv1_3`), so the two group together; quiche does not expose
/// the suite and group BoringSSL chose, and the placeholder says so rather than name one.
const QUIC_TLS: TlsAgreed = TlsAgreed {
    version: "TLSv1_3",
    cipher: "not exposed by quiche",
    kx: "not exposed by quiche",
    alpn: Some("h3"),
};

impl H3 {
    /// With `--tls-resume`, the connection's session (its latest ticket), kept for the next
    /// connection: the buffer is reused, so after the first a session costs no allocation.
    pub(super) fn keep_session(&mut self) {
        if !self.resume {
            return;
        }
        if let Some(session) = self.client.as_ref().and_then(http3::Client::session) {
            self.session.clear();
            self.session.extend_from_slice(session);
        }
    }

    /// A connection for the page's next file (or what is to be sent again), the old one, if
    /// any, closed: started now, or, when on the last ones, which came up, the server processed
    /// no stream (a GOAWAY at once, before or after any stream, then perhaps its close), after
    /// a wait that doubles with each such connection in a row (10 ms, 20 ms, ... at most
    /// 640 ms), as over HTTP/2 (`h2/connecting.rs`), rather than at once, in a loop as fast as
    /// the server.
    pub(super) fn connect(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        // The old connection's packets since they were last taken (after a GOAWAY), first.
        self.take_packets(cx, now);
        self.close();
        if self.empty_in_a_row > 0 && now < cx.sh.schedule.end_us {
            self.state = State::Backoff;
            self.waited_from = now;
            let wait = BACKOFF_US << (self.empty_in_a_row - 1).min(MOST_DOUBLINGS);
            self.backoff_until = now + wait;
            cx.timers.arm(ch.slot, self.backoff_until);
            return;
        }
        self.start(ch, cx, now);
    }

    /// Starts the connection (`connect`'s wait over, if any): the work waits from when that
    /// wait began.
    pub(super) fn start(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let waited_from = match self.state {
            State::Backoff => self.waited_from,
            _ => now,
        };
        self.conn_gen += 1;
        // What a connection left to send here (its GOAWAY's, its rejections, those waiting when
        // it closed) was judged by what it did (`judge_refusals`): a first rejection of each on
        // this one is sent again once more, as on any connection. (No loop: a connection sends
        // a request again after one rejection at most, unless it is going away, and what it
        // leaves is judged again: from one on which the server processed nothing, once.)
        for ex in &mut self.flight.retry {
            ex.refused_once = false;
        }
        self.state = State::Handshaking;
        self.connect_us = NONE;
        self.waited_from = waited_from;
        ch.connect_began(cx, now);
        self.connect_start_us = now;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.connect_timeout_us);
        if let Err(e) = self.open(ch, cx) {
            return self.conn_failed(ch, cx, connect_error(&e), now);
        }
        // The Initial goes now.
        self.next(ch, cx, now);
        // Out, it gave a session that allows 0-RTT its keys: the page's requests go at once.
        if self.sends_early() {
            self.next(ch, cx, now);
        }
    }

    fn open(&mut self, ch: &Child, cx: &ThreadState<'_>) -> std::io::Result<()> {
        let any: SocketAddr = match self.peer {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let mut sock = UdpSocket::bind(any)?;
        sock.connect(self.peer)?;
        let local = sock.local_addr()?;
        // Asked per socket (one setsockopt, one getsockopt a connection, not a request).
        let (gro, gso) = super::datagrams::wanted();
        self.gro = gro && http3::udp::recv::set_gro(sock.as_raw_fd());
        let gso = gso && http3::udp::gso::kernel_segments(sock.as_raw_fd());
        self.tx.reset(gso, super::pacing::wanted());
        cx.registry.register(
            &mut sock,
            Token(ch.slot),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let name = &cx.sh.config.target.server_name;
        // Without `--tls-resume` no session was kept (`keep_session`): the offer is empty, a
        // full handshake.
        let client = http3::Client::resume(
            &mut self.config.borrow_mut(),
            name,
            local,
            self.peer,
            &self.session,
        )
        .map_err(std::io::Error::other)?;
        self.sock = Some(sock);
        self.client = Some(client);
        Ok(())
    }

    /// The client may send before its handshake is done: `--early-data`, a resumed session
    /// whose ticket allows 0-RTT, the first flight out. The page's streams go in 0-RTT.
    pub(super) fn sends_early(&self) -> bool {
        self.state == State::Handshaking
            && self.client.as_ref().is_some_and(http3::Client::can_send)
    }

    /// The handshake is done (HTTP/3 is set up): its time is the connect row's, and the page's
    /// streams may go (those sent in 0-RTT are on their way: counted, and the first of them
    /// takes the connect time, as the first file sent after a handshake does).
    pub(super) fn handshake_done(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Open;
        // The handshake's time, kept here: with 0-RTT the first early stream takes
        // `connect_us` below, and the handshake row is this time all the same.
        let handshake_us = now - self.connect_start_us;
        self.connect_us = handshake_us;
        let early = self
            .client
            .as_ref()
            .map_or(http3::EarlyData::NotSent, http3::Client::early_data);
        let ex = match self.flight.iter_mut().min_by_key(|s| s.id) {
            Some(first) if early != http3::EarlyData::NotSent => {
                first.ex.connect_us = std::mem::replace(&mut self.connect_us, NONE);
                first.ex
            }
            _ => self.first_exchange(ch, cx.sh.workload),
        };
        ch.record_connect(cx, &ex, now);
        // Every QUIC handshake is TLS 1.3's, counted as TCP's TLS handshakes are (resumed only
        // with `--tls-resume`, the only time a session is offered); its time is the connect
        // row's (there is no TCP connect before it).
        let resumed = self.client.as_ref().is_some_and(http3::Client::is_resumed);
        ch.record_handshake(cx, &ex, now, handshake_us, (QUIC_TLS, resumed));
        if cx.counts(now, now) {
            let rtt = self
                .client
                .as_ref()
                .map_or(0, |c| c.stats().rtt.as_micros());
            let recvmmsg = self.rx.borrow().batched;
            let h = &mut cx.stats.http3;
            h.connections += 1;
            h.add_handshake_rtt(rtt as u64);
            if early != http3::EarlyData::NotSent {
                h.early_offered += 1;
                h.early_accepted += u64::from(early == http3::EarlyData::Accepted);
                h.early_rejected += u64::from(early == http3::EarlyData::Rejected);
                h.early_requests += self.flight.len() as u64;
            }
            h.gro_off += u64::from(!self.gro);
            h.gso_off += u64::from(!self.tx.gso());
            h.recvmmsg_off += u64::from(!recvmmsg);
        }
    }
}
