//! The server's public face: bind the listening sockets, run the event loops, stop them.
//!
//! One thread per core (`config.threads`), each with its own `SO_REUSEPORT` listening socket,
//! epoll instance, connection slab, buffer pool, `DateCache`, `Responder` and log buffer, so
//! nothing is shared between threads on the request path: no lock, no atomic, no channel. The
//! only shared state is `control.rs`'s, created here: a stop flag with one `Waker` per loop, the
//! count of open connections against `max_connections` (touched once per accept and once per
//! close), and the counters each loop publishes when asked (or when it exits), merged by
//! whoever asks.
//!
//! Where the rest lives: `event_loop.rs` (one thread: epoll, accept, timers, the connection cap,
//! shutdown), `conn.rs` (one connection's driver loop: read, answer, write, close),
//! `protocol.rs` (the session without I/O: bytes in, response segments out), `transport.rs` (the
//! seam between them) with `plain.rs` (the syscall shape per request), `stats.rs` (the
//! counters), `pool.rs` (recycled buffers).
//!
//! Per request, as designed (and asserted by `tests/it/server_http.rs` from these counters):
//! - keep-alive: 1 `recv` + 1 `send`, plus a share of one `epoll_wait`;
//! - 16 pipelined in one packet: 1 `recv` + 1 gathered `sendmsg` for all 16;
//! - HTTP/1.0: `accept4`, `recv` (right after accept), `send`, `close`, plus a share of an
//!   `epoll_wait` and of the `accept4` that says EAGAIN; no `epoll_ctl`, no `setsockopt`.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Interest, Poll, Waker};

use crate::access_log;
use crate::config::Config;
use crate::control::{Control, LISTENER, WAKER};
use crate::event_loop::Loop;
use crate::listeners;
use crate::plain::{PlainEnv, PlainTcp};
use crate::respond::{RespondError, Responder};
pub use crate::stats::ServerStats;
use crate::tls::{TlsEnv, TlsTcp};
use crate::tls_setup::{self, TlsError};

/// Why a server did not start, or why one of its threads stopped: [`Server::bind`] returns
/// the first (nothing is left bound), [`Server::run`] the first thread's that failed. One line
/// each; the cause, if any, is its `source()`.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    // Each message leaves its cause to `source()`: a report that prints the chain then shows
    // the cause once.
    /// The TCP port could not be bound (in use, or a privileged port).
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for (`listen`).
        addr: SocketAddr,
        /// What `bind` or `listen` said.
        source: io::Error,
    },
    /// The open-file limit ran out while each thread's listening sockets were opened: the
    /// thread count, not the address, is what failed (`--threads` beyond what the limit holds).
    #[error(
        "{threads} threads need more open files than this process may have: lower --threads \
         or raise the limit (ulimit -n)"
    )]
    OpenFiles {
        /// The threads asked for (`threads`).
        threads: usize,
        /// What `socket` said (EMFILE or ENFILE).
        source: io::Error,
    },
    /// The UDP twin of the TCP port could not be bound for HTTP/3: an error when `http3` is
    /// true, the warning of [`Server::http3_warning`] when it is unset.
    #[error("cannot listen on UDP {addr} for HTTP/3")]
    BindUdp {
        /// The TCP port's address, bound already.
        addr: SocketAddr,
        /// What `bind` said.
        source: io::Error,
    },
    /// quiche refused the HTTP/3 configuration (a certificate or key its BoringSSL does not
    /// take): an error when `http3` is true, a warning when it is unset.
    #[error("HTTP/3")]
    Http3(#[from] http3::Error),
    /// The access log file could not be opened for appending.
    #[error("access log {path}")]
    AccessLog {
        /// The file (`access_log`).
        path: PathBuf,
        /// What `open` said.
        source: io::Error,
    },
    /// A CGI mount's directory is missing or not a directory.
    #[error("CGI directory {path}")]
    CgiDir {
        /// The mount's directory, as configured.
        path: PathBuf,
        /// What canonicalising it said.
        source: io::Error,
    },
    /// A CGI mount's directory lies inside the document root, or holds it: its programs
    /// would be files of the root too, served as such.
    #[error(
        "CGI directory {path} lies inside the document root {root} (or holds it): its programs \
         would be served as files; put them apart"
    )]
    CgiDirInRoot {
        /// The mount's directory, as configured.
        path: PathBuf,
        /// The document root, as configured.
        root: PathBuf,
    },
    /// An event loop's own set-up or poll failed (epoll, its waker, a socket's registration).
    #[error("event loop")]
    Io(#[from] io::Error),
    /// The document root is missing or not a directory.
    #[error(transparent)]
    Respond(#[from] RespondError),
    /// The certificate or key could not be read, parsed or paired.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// An event-loop thread panicked (its index, from 0).
    #[error("event-loop thread {0} panicked")]
    Panicked(usize),
    /// A value no server can run with (see [`Config::validate`]).
    #[error(transparent)]
    Config(#[from] crate::config::InvalidConfig),
    /// An htpasswd file could not be read or holds an entry not understood, or two zones
    /// share a prefix.
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
}

/// Stops a running server from any thread. Clone + Send + Sync.
#[derive(Clone)]
pub struct ShutdownHandle {
    control: Arc<Control>,
}

impl ShutdownHandle {
    /// Stops accepting, lets responses under way finish (within `send_timeout_ms`), closes idle
    /// connections; `run` then returns. Idempotent.
    pub fn shutdown(&self) {
        self.control.stop.store(true, Ordering::Release);
        self.control.wake_all();
    }

    /// The counters of every thread as of now (each loop is woken to publish its own), or the
    /// last published ones if `timeout` passes first (after `run` returned: its final ones).
    pub fn stats(&self, timeout: Duration) -> ServerStats {
        let gen = self.control.snap_gen.fetch_add(1, Ordering::AcqRel) + 1;
        self.control.wake_all();
        let deadline = Instant::now() + timeout;
        let mut snaps = self.control.snaps.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            if now >= deadline || snaps.iter().all(|(g, _)| *g >= gen) {
                break;
            }
            snaps = match self.control.snap_cv.wait_timeout(snaps, deadline - now) {
                Ok((s, _)) => s,
                Err(e) => e.into_inner().0,
            };
        }
        let mut total = ServerStats::default();
        for (_, s) in snaps.iter() {
            total.merge(s);
        }
        total
    }

    /// The clock this server's HTTP/3 session ticket key periods count on, its threads' alike:
    /// the process's time unless a test (the `http3` crate's `test-hooks` feature) moves it on
    /// with `shift`, which moves this server's periods and no other's.
    pub fn ticket_clock(&self) -> http3::TicketClock {
        self.control.ticket_clock.clone()
    }
}

/// Bound listening sockets, ready to `run`.
pub struct Server {
    config: Config,
    local_addr: SocketAddr,
    loops: Vec<(Poll, TcpListener, Option<std::net::UdpSocket>)>,
    log: Option<Arc<File>>,
    control: Arc<Control>,
    /// Set when the port serves HTTPS.
    tls: Option<Arc<rustls::ServerConfig>>,
    /// Why HTTP/3 is not served though TLS is on and `http3` was left unset.
    http3_warning: Option<ServeError>,
}

impl Server {
    /// Checks the root, binds `config.effective_threads()` listening sockets to `config.listen`
    /// (one `SO_REUSEPORT` group no other server can join: see `listeners.rs`) and opens the
    /// access log.
    pub fn bind(mut config: Config) -> Result<Server, ServeError> {
        config.validate()?;
        let tls = tls_config(&config)?;
        let n = config.effective_threads().max(1);
        // Checked before anything is bound, so a wrong root is one clear error at start, not
        // one from every thread once the server is up.
        let root = crate::resolve::Root::new(&config.root, config.symlinks_outside_root).map_err(
            |source| RespondError::Root {
                path: config.root.clone(),
                source,
            },
        )?;
        for mount in &config.cgi {
            let dir = crate::resolve::Root::new(&mount.dir, config.symlinks_outside_root).map_err(
                |source| ServeError::CgiDir {
                    path: mount.dir.clone(),
                    source,
                },
            )?;
            // A program the root holds would be served as a file (its source, its secrets)
            // through the root's path to it: refused, whichever holds the other.
            if dir.path().starts_with(root.path()) || root.path().starts_with(dir.path()) {
                return Err(ServeError::CgiDirInRoot {
                    path: mount.dir.clone(),
                    root: config.root.clone(),
                });
            }
        }
        // Every htpasswd file is read and checked before anything is bound.
        let auth = crate::auth::Shared::load(&config)?;
        let (listeners, udp, http3_warning) = bind_ports(&mut config, n, tls.is_some())?;
        let addr = config.listen;
        let mut udp = udp.into_iter();
        let mut loops = Vec::with_capacity(n);
        let mut wakers = Vec::with_capacity(n);
        for listener in listeners {
            let mut listener = TcpListener::from_std(listener);
            let poll = Poll::new()?;
            poll.registry()
                .register(&mut listener, LISTENER, Interest::READABLE)?;
            wakers.push(Arc::new(Waker::new(poll.registry(), WAKER)?));
            loops.push((poll, listener, udp.next()));
        }
        let log = match &config.access_log {
            Some(path) => Some(
                access_log::open(path).map_err(|source| ServeError::AccessLog {
                    path: path.clone(),
                    source,
                })?,
            ),
            None => None,
        };
        let control = Arc::new(Control {
            stop: AtomicBool::new(false),
            wakers,
            conns: AtomicUsize::new(0),
            snap_gen: AtomicU64::new(0),
            snaps: Mutex::new(vec![(0, ServerStats::default()); n]),
            snap_cv: Condvar::new(),
            programs: Arc::new(AtomicUsize::new(0)),
            auth,
            ticket_clock: http3::TicketClock::new(),
        });
        Ok(Server {
            config,
            local_addr: addr,
            loops,
            log,
            control,
            tls,
            http3_warning,
        })
    }

    /// The bound address (with the port chosen when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `https` when the port serves TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Whether HTTP/3 is served (over UDP, on the same address and port number as TCP).
    pub fn http3(&self) -> bool {
        self.loops.first().is_some_and(|l| l.2.is_some())
    }

    /// Why HTTP/3 is not served though TLS is on and `http3` was left unset (its UDP port
    /// could not be bound, or quiche refused the certificate): one warning line at start; the
    /// server serves TCP alone and advertises nothing.
    pub fn http3_warning(&self) -> Option<&ServeError> {
        self.http3_warning.as_ref()
    }

    /// What to say at start about how TLS runs (kernel TLS or not), when it does.
    pub fn tls_note(&self) -> Option<&'static str> {
        self.tls.as_ref().map(|_| tls_setup::kernel_tls_note())
    }

    /// A handle that stops this server from any thread, once it runs (see [`ShutdownHandle`]).
    pub fn handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            control: self.control.clone(),
        }
    }

    /// Runs every event loop (N-1 spawned threads and the calling one) until shutdown; returns
    /// the merged counters, or the first error of any loop (which stops the others).
    pub fn run(self) -> Result<ServerStats, ServeError> {
        let Server {
            config,
            loops,
            log,
            control,
            tls,
            ..
        } = self;
        let mut loops = loops.into_iter().enumerate();
        let first = loops.next();
        let mut threads = Vec::new();
        for (id, (poll, listener, udp)) in loops {
            let (cfg, log, sh, tls) = (config.clone(), log.clone(), control.clone(), tls.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("flint-serve-{id}"))
                .spawn(move || run_loop(id, poll, listener, udp, &cfg, log, sh, tls));
            match spawned {
                Ok(t) => threads.push((id, t)),
                Err(e) => {
                    control.stop.store(true, Ordering::Release);
                    control.wake_all();
                    for (_, t) in threads {
                        let _ = t.join();
                    }
                    return Err(e.into());
                }
            }
        }
        // Each loop's UDP socket, closed only once every loop has ended (see `Quic::into_socket`).
        let mut sockets = Vec::new();
        let mut result = match first {
            Some((id, (poll, listener, udp))) => {
                let (r, socket) =
                    run_loop(id, poll, listener, udp, &config, log, control.clone(), tls);
                sockets.extend(socket);
                r
            }
            None => Ok(ServerStats::default()),
        };
        for (id, t) in threads {
            let (r, socket) = t.join().unwrap_or((Err(ServeError::Panicked(id)), None));
            sockets.extend(socket);
            result = match (result, r) {
                (Ok(mut a), Ok(b)) => {
                    a.merge(&b);
                    Ok(a)
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
        }
        drop(sockets);
        result
    }
}

#[allow(clippy::too_many_arguments)] // each is one of the thread's own parts
fn run_loop(
    id: usize,
    poll: Poll,
    listener: TcpListener,
    udp: Option<std::net::UdpSocket>,
    config: &Config,
    log: Option<Arc<File>>,
    control: Arc<Control>,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> (Result<ServerStats, ServeError>, Option<mio::net::UdpSocket>) {
    let threads = control.wakers.len().max(1);
    // Each thread's QUIC configuration is its own (quiche's is not shared between threads).
    let clock = &control.ticket_clock;
    let udp =
        udp.map(|socket| Ok::<_, ServeError>((socket, h3_config(config, id, threads, clock)?)));
    let mut socket = None;
    let result = Responder::new(config)
        .map_err(ServeError::from)
        .and_then(|responder| Ok((responder, udp.transpose()?)))
        .and_then(|(responder, udp)| {
            // One monomorphic loop per kind: the plain one carries nothing of TLS.
            let (stats, udp) = match tls {
                Some(tls) => {
                    let env = TlsEnv::new(tls);
                    Loop::<TlsTcp>::new(
                        id, poll, listener, config, log, responder, env, &control, udp,
                    )?
                    .run()
                }
                None => {
                    let env = PlainEnv::new();
                    Loop::<PlainTcp>::new(
                        id, poll, listener, config, log, responder, env, &control, udp,
                    )?
                    .run()
                }
            };
            socket = udp;
            Ok(stats?)
        });
    if result.is_err() {
        // One loop failing stops them all: a server with a dead thread would silently drop the
        // connections its listening socket still receives.
        control.stop.store(true, Ordering::Release);
        control.wake_all();
    }
    (result, socket)
}

/// Kernel-chosen ports tried before giving up on one whose UDP twin is free (port 0 only).
const PORT_TRIES: usize = 16;

type Bound = (
    Vec<std::net::TcpListener>,
    Vec<std::net::UdpSocket>,
    Option<ServeError>,
);

/// `source` as `other` makes it, unless it is the open-file limit running out (EMFILE,
/// ENFILE): then the thread count is named, not the address.
fn out_of_files(
    threads: usize,
    source: io::Error,
    other: impl FnOnce(io::Error) -> ServeError,
) -> ServeError {
    match source.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => ServeError::OpenFiles { threads, source },
        _ => other(source),
    }
}

/// The TCP listeners, then, when HTTP/3 is to be served (`tls` on and `http3` not false),
/// the UDP sockets on the same address and port number; `config.listen` becomes the bound
/// address (the port chosen for port 0: what Alt-Svc advertises) and `config.http3` what was
/// done (`Some(true)`: UDP bound). A UDP port that cannot be bound (or a certificate quiche
/// refuses) stops the start when `http3` is true, and is the returned warning when it was
/// left unset: TCP alone then.
///
/// The TCP port is bound first: a second server fails there. With port 0 the kernel picks a
/// TCP port free of TCP sockets, but its UDP twin may be any program's (a client's ephemeral
/// UDP port comes from the same range): then another port is taken, the first held until
/// then so the kernel cannot give it again. Tests starting many servers at once on port 0
/// thus never race for a UDP port.
fn bind_ports(config: &mut Config, n: usize, tls: bool) -> Result<Bound, ServeError> {
    let required = config.http3 == Some(true);
    let mut warning = None;
    let mut http3 = tls && config.serves_http3();
    if http3 {
        // Checked before anything is bound: a certificate quiche's BoringSSL refuses is one
        // error at start (or, unasked for, a warning).
        if let Err(e) = h3_config(config, 0, 1, &http3::TicketClock::new()) {
            if required {
                return Err(e.into());
            }
            warning = Some(ServeError::Http3(e));
            http3 = false;
        }
    }
    let mut held = Vec::new();
    let bound = loop {
        let listeners =
            listeners::bind(config.listen, n, config.defer_accept).map_err(|source| {
                out_of_files(n, source, |source| ServeError::Bind {
                    addr: config.listen,
                    source,
                })
            })?;
        let addr = listeners[0].local_addr()?;
        if !http3 {
            break (listeners, Vec::new(), warning);
        }
        match crate::udp::bind(addr, n) {
            Ok(udp) => break (listeners, udp, None),
            Err(e)
                if e.kind() == io::ErrorKind::AddrInUse
                    && config.listen.port() == 0
                    && held.len() < PORT_TRIES =>
            {
                held.push(listeners);
            }
            Err(source) => {
                let e = out_of_files(n, source, |source| ServeError::BindUdp { addr, source });
                if required {
                    return Err(e);
                }
                break (listeners, Vec::new(), Some(e));
            }
        }
    };
    drop(held);
    config.listen = bound.0[0].local_addr()?;
    config.http3 = Some(!bound.1.is_empty());
    Ok(bound)
}

/// Thread `id`'s QUIC configuration: its index (in the connection IDs it issues, so only it
/// answers for them with a stateless reset), the TLS certificate and key, the `h3_*` limits, its share
/// of `h3_max_connections`, of `h3_header_budget` and of `h3_max_connections_per_address` among `threads` (a
/// client's connections spread over the threads by the hash of their ports), and the
/// deadlines HTTP/1.1 and HTTP/2 have; its ticket key periods counted on its server's clock.
/// (Asked only when TLS is on: a server without a certificate serves no HTTP/3.)
fn h3_config(
    config: &Config,
    id: usize,
    threads: usize,
    ticket_clock: &http3::TicketClock,
) -> Result<http3::ServerConfig, http3::Error> {
    let (cert, key) = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => (cert, key),
        _ => return Err(http3::Error::NotReady),
    };
    let threads = threads.max(1);
    let share = (config.h3_max_connections / threads).max(1);
    let per_address = config.h3_max_connections_per_address.div_ceil(threads);
    let header_budget = config.h3_header_budget / threads as u64;
    Ok(http3::ServerConfig::new(cert, key, &config.http3_limits())?
        .max_connections(share)
        .max_per_address(per_address)
        .header_budget(header_budget)
        .thread(id as u16)
        .retry(config.http3_retry())
        .timeouts(config.http3_timeouts())
        .early_data(config.h3_early_data)
        .ticket_key_period(Duration::from_millis(config.tls_ticket_key_period_ms))
        .ticket_clock(ticket_clock))
}

/// The TLS configuration when `tls_cert` and `tls_key` are set, checked before anything is bound.
fn tls_config(config: &Config) -> Result<Option<Arc<rustls::ServerConfig>>, TlsError> {
    match (&config.tls_cert, &config.tls_key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => {
            let period = Duration::from_millis(config.tls_ticket_key_period_ms);
            tls_setup::server_config(cert, key, config.http2, period).map(Some)
        }
        (Some(_), None) => Err(TlsError::Incomplete("the key")),
        (None, Some(_)) => Err(TlsError::Incomplete("the certificate")),
    }
}
