//! An HTTP/3 server on quiche's own HTTP/3 layer that sends each connection a GOAWAY (RFC 9114
//! 5.2) with a stream ID of its choosing, for engine_h3_goaway: crates/http3's server names
//! only the first stream it has not handed out, and answers the rest, while this one can name a
//! stream below requests it already has, and leaves every request at or above it unanswered
//! (the GOAWAY says they were not processed: answering one would be a request done twice).
//!
//! A connection answers its requests as they come (a 200 with `BODY` bytes), but holds back
//! the last `hold` of its first `after`; the `after`th request (or a pause in requests while
//! some are held: a page cannot go on while its files are held) sends the GOAWAY, naming the
//! held request `cover` places up, or the stream after the highest answered if that is
//! higher (`above_answered`): every held one below it is answered, the rest never are.
//! With `again`, a second, lower GOAWAY takes some of the covered ones back before they are
//! answered. With `close`, the covered held ones get their head and half their body, and the connection
//! is closed (H3_NO_ERROR) once the GOAWAY is out and the client has sent something since: they
//! die with it. The loop is the engine_h3_not_h3 server's (connections keyed by the client's
//! address, each of bench's has a port of its own); every wait is bounded by a read timeout.
//! `REFUSE_ALL` refuses everything: a GOAWAY 0 as soon as HTTP/3 is up, before any request.
//! `reject` resets requests with H3_REQUEST_REJECTED (RFC 9114 4.1.1: not processed, the
//! client may send them again), both ways as flint serve does after its GOAWAY: those at or
//! above the GOAWAY, every other one for a path, or all of them; or a test's script decides,
//! and may close the connection as soon as a rejection is acknowledged (`Reject::Script`).

use crate::quiche_server::{self, ServerThread};
use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, Stop, Target};
use quiche::h3::NameValue;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// The body of every response.
pub const BODY: usize = 1_200;
/// Held requests with no new one for this long: the GOAWAY goes then (a page cannot send its
/// next file while its files are held). Only which requests are refused depends on it.
const QUIET: Duration = Duration::from_millis(30);

/// When a connection sends its GOAWAY and what it names.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The request (counted on the connection) whose arrival sends the GOAWAY; 0: before any
    /// (`REFUSE_ALL`).
    pub after: u64,
    /// How many of the last of those `after` are held back unanswered.
    pub hold: usize,
    /// How many held ones the GOAWAY covers (answered, or cut by `close`); the rest are
    /// refused. With `cover >= hold` the GOAWAY names the stream after the last held one.
    pub cover: usize,
    /// A second GOAWAY, lower (RFC 9114 5.2 allows it), once the client has sent something
    /// after the first: it takes back this many of the covered held ones, never answered; the
    /// rest are answered (or cut) only then.
    pub again: usize,
    /// Close the connection after the GOAWAY, cutting the covered held ones short.
    pub close: bool,
    /// Which requests are reset with H3_REQUEST_REJECTED rather than answered.
    pub reject: Reject,
    /// A connection allows one request stream at a time (the next once one is done, when the
    /// client has acknowledged its end): a request rejected and closed on (`Act::RejectAndClose`)
    /// cannot be sent again on the connection, as the acknowledgement of its rejection that
    /// would give its stream back closes the connection before that is sent.
    pub one_stream: bool,
}

/// Which requests a connection rejects (H3_REQUEST_REJECTED); each is counted in `refused`.
#[derive(Debug, Clone, Copy)]
pub enum Reject {
    /// None: those at or above the GOAWAY are left unanswered, the rest answered.
    Never,
    /// Those at or above the GOAWAY (held ones when it goes, later ones as they come), as
    /// flint serve does, instead of leaving them unanswered.
    AboveGoaway,
    /// Every other request for this path on a connection, from its first: a request of it
    /// rejected once and sent again on the same connection is answered.
    EveryOther(&'static str),
    /// Every request.
    All,
    /// As the script says, of each request head as it comes (one at or above the GOAWAY is
    /// refused whatever it says), and of each held one the GOAWAY covers when it is to be
    /// answered.
    Script(fn(Head) -> Act),
}

/// A request as a script sees it.
#[derive(Debug, Clone, Copy)]
pub struct Head {
    /// Its connection, counted from 1 in the order accepted.
    pub conn: u64,
    /// Request heads read on the connection so far, this one included (refused ones too); 0
    /// for a held one the GOAWAY covers.
    pub nth: u64,
    /// Held, covered by the GOAWAY, and about to be answered.
    pub covered: bool,
}

/// What a script does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Take,
    Reject,
    /// Rejects it, and closes the connection (H3_NO_ERROR) as soon as the client has
    /// acknowledged the rejection, before anything else is sent.
    RejectAndClose,
}

/// No GOAWAY ever: the plan's `after` for a server that only rejects.
pub const NEVER: u64 = u64::MAX;

/// Every connection's GOAWAY names stream 0 as soon as HTTP/3 is up (the 0th request sends
/// it): no request is ever answered.
pub const REFUSE_ALL: Plan = Plan {
    after: 0,
    hold: 0,
    cover: 0,
    again: 0,
    close: false,
    reject: Reject::Never,
    one_stream: false,
};

/// What the server did.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Request heads read, refused ones included.
    pub seen: u64,
    /// Requests at or above a GOAWAY's stream ID, or rejected (`Reject`), never answered.
    pub refused: u64,
    /// Of those, the ones reset with H3_REQUEST_REJECTED.
    pub rejected: u64,
    /// Responses handed to QUIC whole.
    pub answered: u64,
    /// Responses cut short by the close after a GOAWAY (head and half the body).
    pub cut: u64,
    pub goaways: u64,
    /// Requests answered at or above their connection's GOAWAY ID (must stay 0).
    pub answered_above: u64,
    pub accepted: u64,
    /// Connections not closed yet: all, and those whose handshake completed (the only ones
    /// that can carry a request: no 0-RTT here). A client whose run ended before it read
    /// anything from the server drops its connection without a word (quiche sends no
    /// CONNECTION_CLOSE then), and the server's side stays until its idle timeout.
    pub open: u64,
    pub open_established: u64,
    /// Turns of the server's loop, and the last one that found no datagram waiting.
    pub turns: u64,
    pub last_idle_turn: u64,
}

impl Counts {
    /// Requests the server took as processed: answered, cut, or still held when their
    /// connection ended.
    pub fn processed(&self) -> u64 {
        self.seen - self.refused
    }
}

pub struct GoawayServer {
    pub addr: SocketAddr,
    pub counts: Arc<Mutex<Counts>>,
    _thread: ServerThread,
}

impl GoawayServer {
    pub fn start(ca: &TestCa, plan: Plan) -> GoawayServer {
        assert!(
            plan.hold < plan.after as usize || (plan.after, plan.hold) == (0, 0),
            "a held request before the GOAWAY's"
        );
        let mut config = quiche_server::config(ca, 1 << 22);
        config.set_disable_active_migration(true);
        if plan.one_stream {
            config.set_initial_max_streams_bidi(1);
        }
        let counts = Arc::new(Mutex::new(Counts::default()));
        let c = counts.clone();
        let thread = ServerThread::spawn(move |sock, stop| serve(sock, config, plan, c, stop));
        GoawayServer {
            addr: thread.addr,
            counts,
            _thread: thread,
        }
    }

    /// A run's config against this server: `concurrency` Webchildren on one thread over
    /// HTTP/3, trusting `ca`, with bounded connect and response timeouts, stopped by `stop`.
    pub fn bench_config(&self, ca: &TestCa, concurrency: usize, stop: Stop) -> BenchConfig {
        BenchConfig {
            concurrency,
            threads: 1,
            stop,
            http: HttpMode::Http3,
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(10),
            tls: TlsOptions {
                cacert: Some(ca.pem.clone()),
                ..TlsOptions::default()
            },
            // A run whose every attempt is refused (`REFUSE_ALL`, `Reject::All`) is held to its
            // count of pages, however long its back-offs take on a busy machine: not stopped
            // early by the fail-fast rule (tested on its own in `runner/fail_fast.rs`).
            fail_fast: false,
            ..BenchConfig::new(Target::https(self.addr, "localhost"))
        }
    }

    /// The counts once every connection that completed its handshake has closed on the
    /// server's side (within 10 s: bench closes each as its Webchild goes away) and the server
    /// has found no datagram waiting in a turn begun after this was called (what bench sent
    /// before is all read then).
    pub fn settled(&self) -> Counts {
        let start = Instant::now();
        let from = self.counts.lock().unwrap().turns + 1;
        loop {
            let c = self.counts.lock().unwrap().clone();
            let done = c.open_established == 0 && c.last_idle_turn > from;
            if done || start.elapsed() > Duration::from_secs(10) {
                assert!(done, "connections still open: {c:?}");
                return c;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

struct Conn {
    quic: quiche::Connection,
    /// The connection's number (from 1, in the order accepted), and request heads read on it.
    number: u64,
    seen: u64,
    /// Streams rejected with `Act::RejectAndClose`: the connection closes once QUIC has let go
    /// of each (its reset acknowledged, `let_go`).
    close_after: Vec<u64>,
    h3: Option<quiche::h3::Connection>,
    /// Requests counted (refused ones not), the held ones' streams, and when the last came.
    requests: u64,
    held: Vec<u64>,
    last_request: Instant,
    /// `Reject::EveryOther`: whether the path's next request is rejected.
    reject_next: bool,
    /// The highest stream answered (or cut), and the GOAWAY's ID once sent.
    top_answered: Option<u64>,
    goaway: Option<u64>,
    /// Responses whose body QUIC has not taken whole yet: (stream, bytes taken).
    bodies: Vec<(u64, usize)>,
    /// Streams answered whole (to know when they are all acknowledged, for `close`).
    whole: Vec<u64>,
    /// `close`: waiting to close (the GOAWAY sent, a datagram from the client since).
    close_armed: bool,
    heard_since: bool,
}

fn serve(
    sock: UdpSocket,
    mut config: quiche::Config,
    plan: Plan,
    counts: Arc<Mutex<Counts>>,
    stop: Arc<AtomicBool>,
) {
    let local = sock.local_addr().unwrap();
    let h3_config = quiche::h3::Config::new().unwrap();
    let mut conns: HashMap<SocketAddr, Conn> = HashMap::new();
    let (mut buf, mut out) = (vec![0u8; 65536], vec![0u8; 1500]);
    while !stop.load(Ordering::SeqCst) {
        let wait = (conns.values())
            .filter_map(|c| c.quic.timeout())
            .min()
            .unwrap_or(Duration::from_millis(10))
            .clamp(Duration::from_millis(1), Duration::from_millis(10));
        sock.set_read_timeout(Some(wait)).unwrap();
        let mut first = true;
        let mut idle = true;
        loop {
            let got = match first {
                true => sock.recv_from(&mut buf),
                false => {
                    sock.set_nonblocking(true).unwrap();
                    let r = sock.recv_from(&mut buf);
                    sock.set_nonblocking(false).unwrap();
                    r
                }
            };
            first = false;
            let Ok((len, from)) = got else { break };
            idle = false;
            let initial = quiche::Header::from_slice(&mut buf[..len], quiche::MAX_CONN_ID_LEN)
                .is_ok_and(|h| h.ty == quiche::Type::Initial);
            if initial && conns.get(&from).is_some_and(|c| c.quic.is_draining()) {
                conns.remove(&from);
                counts.lock().unwrap().open -= 1;
            }
            if let Entry::Vacant(slot) = conns.entry(from) {
                if !initial {
                    continue;
                }
                let n = {
                    let mut c = counts.lock().unwrap();
                    c.accepted += 1;
                    c.open += 1;
                    c.accepted
                };
                let mut id = [0u8; 16];
                id[..8].copy_from_slice(&n.to_be_bytes());
                let scid = quiche::ConnectionId::from_ref(&id);
                let quic = quiche::accept(&scid, None, local, from, &mut config).unwrap();
                slot.insert(Conn {
                    quic,
                    number: n,
                    seen: 0,
                    close_after: Vec::new(),
                    h3: None,
                    requests: 0,
                    held: Vec::new(),
                    last_request: Instant::now(),
                    reject_next: true,
                    top_answered: None,
                    goaway: None,
                    bodies: Vec::new(),
                    whole: Vec::new(),
                    close_armed: false,
                    heard_since: false,
                });
            }
            let conn = conns.get_mut(&from).unwrap();
            let info = quiche::RecvInfo { from, to: local };
            let _ = conn.quic.recv(&mut buf[..len], info);
            conn.heard_since = true;
        }
        for conn in conns.values_mut() {
            // First in the turn: the acknowledgement that lets go of a rejected stream also
            // gives the client its stream back (MAX_STREAMS), which must not go out before the
            // close (`one_stream`). Not sooner: a rejection whose datagram was lost is sent
            // again only while the connection is open, and a close read with the request
            // still in flight would fail it rather than move it to a new connection.
            if !conn.close_after.is_empty() && let_go(&mut conn.quic, &conn.close_after) {
                conn.close_after.clear();
                close(conn, &sock, &mut out);
                continue;
            }
            if conn
                .quic
                .timeout_instant()
                .is_some_and(|t| t <= Instant::now())
            {
                conn.quic.on_timeout();
            }
            if conn.h3.is_none() && conn.quic.is_established() {
                conn.h3 = quiche::h3::Connection::with_transport(&mut conn.quic, &h3_config).ok();
            }
            step(conn, plan, &counts, &mut buf);
            while let Ok((n, info)) = conn.quic.send(&mut out) {
                let _ = sock.send_to(&out[..n], info.to);
            }
            if conn.close_armed && conn.heard_since && all_acknowledged(conn) {
                conn.close_armed = false;
                close(conn, &sock, &mut out);
            }
        }
        let before = conns.len();
        conns.retain(|_, c| !c.quic.is_closed());
        let mut c = counts.lock().unwrap();
        c.open -= (before - conns.len()) as u64;
        c.open_established = conns.values().filter(|c| c.quic.is_established()).count() as u64;
        c.turns += 1;
        if idle {
            c.last_idle_turn = c.turns;
        }
    }
}

/// Closes the connection (H3_NO_ERROR) and sends the close.
fn close(conn: &mut Conn, sock: &UdpSocket, out: &mut [u8]) {
    let _ = conn.quic.close(true, 0x100, b"");
    while let Ok((n, info)) = conn.quic.send(out) {
        let _ = sock.send_to(&out[..n], info.to);
    }
}

/// A connection's HTTP/3 events acted on, its bodies pushed on, and its GOAWAY sent when due.
fn step(conn: &mut Conn, plan: Plan, counts: &Mutex<Counts>, buf: &mut [u8]) {
    while poll_one(conn, plan, counts, buf) {}
    let quiet = !conn.held.is_empty() && conn.last_request.elapsed() >= QUIET;
    let due = conn.goaway.is_none() && (conn.requests >= plan.after || quiet);
    if due {
        go_away(conn, plan, counts);
    } else if conn.goaway.is_some() && !conn.held.is_empty() && conn.heard_since {
        go_away_again(conn, plan, counts);
    }
    push_bodies(conn, counts);
}

/// Acts on the connection's next HTTP/3 event: false when there is none.
fn poll_one(conn: &mut Conn, plan: Plan, counts: &Mutex<Counts>, buf: &mut [u8]) -> bool {
    let Some(h3) = conn.h3.as_mut() else {
        return false;
    };
    match h3.poll(&mut conn.quic) {
        Ok((stream, quiche::h3::Event::Headers { list, .. })) => {
            let mut c = counts.lock().unwrap();
            c.seen += 1;
            conn.seen += 1;
            let above = conn.goaway.is_some_and(|g| stream >= g);
            let reject = match plan.reject {
                Reject::Never => false,
                Reject::AboveGoaway => above,
                Reject::EveryOther(path) => {
                    let ours =
                        (list.iter()).any(|h| h.name() == b":path" && h.value() == path.as_bytes());
                    let next = conn.reject_next;
                    conn.reject_next ^= ours;
                    ours && next
                }
                Reject::All => true,
                Reject::Script(script) => {
                    let head = Head {
                        conn: conn.number,
                        nth: conn.seen,
                        covered: false,
                    };
                    let act = script(head);
                    if act == Act::RejectAndClose {
                        conn.close_after.push(stream);
                    }
                    act != Act::Take
                }
            };
            if above || reject {
                c.refused += 1;
                if reject {
                    c.rejected += 1;
                    drop(c);
                    self::reject(&mut conn.quic, stream);
                }
                return true;
            }
            drop(c);
            conn.requests += 1;
            conn.last_request = Instant::now();
            if conn.goaway.is_none() && conn.requests + plan.hold as u64 > plan.after {
                conn.held.push(stream);
            } else {
                answer(conn, stream, counts, false);
            }
            true
        }
        Ok((stream, quiche::h3::Event::Data)) => {
            while h3
                .recv_body(&mut conn.quic, stream, buf)
                .is_ok_and(|n| n > 0)
            {}
            true
        }
        Ok(_) => true,
        Err(_) => false,
    }
}

/// Rejects `stream` (RFC 9114 4.1.1), both ways with H3_REQUEST_REJECTED, as flint serve
/// rejects a request after its GOAWAY.
fn reject(quic: &mut quiche::Connection, stream: u64) {
    for dir in [quiche::Shutdown::Read, quiche::Shutdown::Write] {
        let _ = quic.stream_shutdown(stream, dir, 0x10b);
    }
}

/// Answers `stream`: its head, then its body (all of it, or half with `cut`) as QUIC takes it.
fn answer(conn: &mut Conn, stream: u64, counts: &Mutex<Counts>, cut: bool) {
    let Some(h3) = conn.h3.as_mut() else { return };
    if conn.goaway.is_some_and(|g| stream >= g) {
        counts.lock().unwrap().answered_above += 1;
    }
    conn.top_answered = conn.top_answered.max(Some(stream));
    let len = BODY.to_string();
    let head = [
        quiche::h3::Header::new(b":status", b"200"),
        quiche::h3::Header::new(b"content-length", len.as_bytes()),
    ];
    // A head that finds no room now is a bug of this server's sizing: its windows are far
    // above what a test sends.
    h3.send_response(&mut conn.quic, stream, &head, false)
        .expect("room for a response head");
    match cut {
        true => {
            let sent = h3.send_body(&mut conn.quic, stream, &[b'x'; BODY / 2], false);
            assert!(sent.is_ok(), "half a body: {sent:?}");
            counts.lock().unwrap().cut += 1;
        }
        false => conn.bodies.push((stream, 0)),
    }
}

/// Bodies go on as QUIC takes them; a body taken whole is a request answered.
fn push_bodies(conn: &mut Conn, counts: &Mutex<Counts>) {
    let Some(h3) = conn.h3.as_mut() else { return };
    let body = [b'x'; BODY];
    let quic = &mut conn.quic;
    let whole = &mut conn.whole;
    conn.bodies.retain_mut(|(stream, taken)| {
        while *taken < BODY {
            match h3.send_body(quic, *stream, &body[*taken..], true) {
                Ok(n) => *taken += n,
                Err(_) => return true,
            }
            if *taken < BODY {
                return true;
            }
        }
        whole.push(*stream);
        counts.lock().unwrap().answered += 1;
        false
    });
}

/// The GOAWAY: it names the held request `cover` places up (or the stream after the last held
/// one); the held ones below it are answered (or cut, with `close`), the rest never are.
fn go_away(conn: &mut Conn, plan: Plan, counts: &Mutex<Counts>) {
    conn.held.sort_unstable();
    let id = match conn.held.get(plan.cover) {
        Some(&s) => s,
        None => conn.held.last().map_or(0, |s| s + 4),
    }
    .max(above_answered(conn));
    let Some(h3) = conn.h3.as_mut() else { return };
    // The control stream has room for a few bytes at any time in these tests.
    h3.send_goaway(&mut conn.quic, id).expect("GOAWAY written");
    conn.goaway = Some(id);
    let mut c = counts.lock().unwrap();
    c.goaways += 1;
    // Answered before at or above the ID: processed, then said not to be.
    if conn.top_answered.is_some_and(|t| t >= id) {
        c.answered_above += 1;
    }
    let held = std::mem::take(&mut conn.held);
    let refused = held.iter().filter(|&&s| s >= id).count();
    c.refused += refused as u64;
    if matches!(plan.reject, Reject::AboveGoaway) {
        c.rejected += refused as u64;
        held.iter()
            .filter(|&&s| s >= id)
            .for_each(|&s| reject(&mut conn.quic, s));
    }
    drop(c);
    conn.held = held.into_iter().filter(|&s| s < id).collect();
    conn.heard_since = false;
    if plan.again == 0 {
        answer_held(conn, plan, counts);
    }
}

/// The second GOAWAY (`again`): it names the covered held request `again` places from the
/// last; those from it on are refused, the rest answered (or cut).
fn go_away_again(conn: &mut Conn, plan: Plan, counts: &Mutex<Counts>) {
    let id = conn.held[conn.held.len().saturating_sub(plan.again)].max(above_answered(conn));
    if conn.goaway.is_some_and(|first| id >= first) {
        // Nothing held is above what was answered since: no lower GOAWAY to send (a GOAWAY's
        // ID never grows), the held ones are answered.
        conn.heard_since = false;
        return answer_held(conn, plan, counts);
    }
    let Some(h3) = conn.h3.as_mut() else { return };
    h3.send_goaway(&mut conn.quic, id)
        .expect("a second GOAWAY written");
    conn.goaway = Some(id);
    let refused = conn.held.iter().filter(|&&s| s >= id).count();
    let mut c = counts.lock().unwrap();
    c.goaways += 1;
    c.refused += refused as u64;
    if matches!(plan.reject, Reject::AboveGoaway) {
        c.rejected += refused as u64;
        (conn.held.iter())
            .filter(|&&s| s >= id)
            .for_each(|&s| reject(&mut conn.quic, s));
    }
    drop(c);
    conn.held.retain(|&s| s < id);
    conn.heard_since = false;
    answer_held(conn, plan, counts);
}

/// The lowest ID a GOAWAY may name: the stream after the highest answered. Held requests are
/// the last to come of the first `after`, which are the last opened only when heads come in
/// order: a head whose datagram was lost (a busy machine's full socket buffer) comes after
/// those sent after it, and may be held below one answered. Refusing it would refuse the one
/// answered too (bench would send it again: a request done twice), so it is covered instead.
fn above_answered(conn: &Conn) -> u64 {
    conn.top_answered.map_or(0, |t| t + 4)
}

/// The held requests the last GOAWAY covered, answered (or cut, with `close`, which the
/// connection then waits to do), or rejected if a script says so.
fn answer_held(conn: &mut Conn, plan: Plan, counts: &Mutex<Counts>) {
    for s in std::mem::take(&mut conn.held) {
        if let Reject::Script(script) = plan.reject {
            let head = Head {
                conn: conn.number,
                nth: 0,
                covered: true,
            };
            let act = script(head);
            if act != Act::Take {
                if act == Act::RejectAndClose {
                    conn.close_after.push(s);
                }
                let mut c = counts.lock().unwrap();
                (c.refused, c.rejected) = (c.refused + 1, c.rejected + 1);
                drop(c);
                reject(&mut conn.quic, s);
                continue;
            }
        }
        answer(conn, s, counts, plan.close);
    }
    conn.close_armed = plan.close;
}

/// QUIC has let go of each of `streams`: a rejected one once its reset is acknowledged (and
/// the client's request read to its end, as a head with no body is).
fn let_go(quic: &mut quiche::Connection, streams: &[u64]) -> bool {
    (streams.iter()).all(|&s| {
        matches!(
            quic.stream_capacity(s),
            Err(quiche::Error::InvalidStreamState(_))
        )
    })
}

/// Every response answered whole on the connection has been acknowledged (QUIC let go of its
/// stream), so that closing drops nothing but what was cut.
fn all_acknowledged(conn: &mut Conn) -> bool {
    conn.bodies.is_empty() && let_go(&mut conn.quic, &conn.whole)
}
