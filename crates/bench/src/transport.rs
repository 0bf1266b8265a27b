//! The Webchild's connection: connect, handshake, read, write and readiness all go through
//! [`Transport`], as wrk's `struct sock` and hyper's transport parameter do, so that a new kind
//! of connection is a variant here and not an edit of every read and write in the event loop.
//!
//! Plain TCP costs nothing for being behind the seam: the variant is matched in an inlined
//! method and the call is the same `read(2)` or `write(2)` the loop made before. Every socket is
//! registered once, READABLE|WRITABLE, edge-triggered, and never re-registered: the event loop
//! relies on a short read meaning "drained", so every variant keeps that promise (see `read`).

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::SocketAddr;

mod low_water;
mod tls;
mod unix;

use crate::config::TlsOptions;
use crate::stats::TlsAgreed;
use crate::{Scheme, Target};
use low_water::LowWater;
/// Below this many bytes owed a connection sets no low-water mark (`Transport::set_low_water`).
pub(crate) use low_water::FLOOR as LOW_WATER_FLOOR;
use rustls::ClientConnection;
use std::os::fd::AsFd;
pub use tls::{client_config, TlsSetupError};
use tls::{TlsConnector, TlsStream};
pub use tls_client::{cipher_suite_names, parse_cipher_list};

/// What every connection of a run is opened with, built once before the threads start.
#[derive(Debug, Clone)]
pub struct Connector {
    addr: SocketAddr,
    /// `--unix-socket`: connect there instead of `addr`.
    unix: Option<std::path::PathBuf>,
    tls: Option<TlsConnector>,
}

impl Connector {
    /// Plain TCP for `http://`; for `https://`, the TLS configuration every connection shares
    /// (roots loaded, versions and resumption set) once, here, so a bad CA file or a name no
    /// certificate can carry stops the run before it starts.
    /// `h2`: HTTP/2 (ALPN `h2` alone).
    pub fn new(target: &Target, tls: &TlsOptions, h2: bool) -> Result<Connector, TlsSetupError> {
        let tls = match target.scheme {
            Scheme::Http => None,
            Scheme::Https => Some(TlsConnector::new(&target.server_name, tls, h2)?),
        };
        Ok(Connector {
            addr: target.addr,
            unix: target.unix_socket.clone(),
            tls,
        })
    }

    /// What a connection is opened with, made before its TCP connect starts: for `https://`,
    /// rustls's client state, whose key shares take tens of µs, so that they are not in the time
    /// to connect (the WebSTONE paper's connect time is TCP's alone) while the state is still
    /// made when the connection is wanted (with `--tls-resume`, it takes a ticket then).
    pub(crate) fn prepare(&self) -> io::Result<Prepared> {
        match &self.tls {
            None => Ok(Prepared(None)),
            Some(tls) => Ok(Prepared(Some(tls.client()?))),
        }
    }
}

/// A connection's client state before its TCP connect (see [`Connector::prepare`]).
/// Not boxed: it lives on the stack for the moment between the two, and its one box is the
/// [`Transport::Tls`] it becomes.
pub(crate) struct Prepared(Option<ClientConnection>);

impl Prepared {
    /// Whether preparing took any time worth leaving out of the connect (HTTPS).
    pub(crate) fn is_tls(&self) -> bool {
        self.0.is_some()
    }
}

/// One connection to the server.
#[derive(Debug)]
pub(crate) enum Transport {
    /// With the socket's receive low-water mark (`low_water.rs`).
    Plain(TcpStream, LowWater),
    /// `--unix-socket`, plain HTTP.
    Unix(mio::net::UnixStream),
    /// Boxed: rustls's state is a few KiB, and a plain run should not carry it per Webchild.
    Tls(Box<TlsStream>),
}

impl Transport {
    /// Starts a nonblocking connect and registers the socket with `registry` under `token`;
    /// the first writable event tells it finished (see [`Transport::connected`]).
    pub(crate) fn open(
        connector: &Connector,
        prepared: Prepared,
        registry: &Registry,
        token: Token,
    ) -> io::Result<Transport> {
        if let Some(path) = &connector.unix {
            let mut s = unix::open(path)?;
            registry.register(&mut s, token, Interest::READABLE | Interest::WRITABLE)?;
            return Ok(Transport::Unix(s));
        }
        let mut tcp = open_tcp(connector.addr)?;
        registry.register(&mut tcp, token, Interest::READABLE | Interest::WRITABLE)?;
        match prepared.0 {
            None => Ok(Transport::Plain(tcp, LowWater::new())),
            Some(tls) => Ok(Transport::Tls(Box::new(TlsStream::new(tcp, tls)))),
        }
    }

    /// Moves the handshake on after the TCP connect: `Ok(true)` when the connection is ready for
    /// requests (at once for plain TCP), `Ok(false)` while it waits for the socket.
    pub(crate) fn handshake(&mut self) -> io::Result<bool> {
        match self {
            Transport::Plain(..) | Transport::Unix(_) => Ok(true),
            Transport::Tls(t) => t.handshake(),
        }
    }

    /// After a finished handshake: what TLS agreed on and whether it resumed a session
    /// (`None` for plain TCP).
    pub(crate) fn tls_session(&self) -> Option<(TlsAgreed, bool)> {
        match self {
            Transport::Plain(..) | Transport::Unix(_) => None,
            Transport::Tls(t) => Some(t.session()),
        }
    }

    /// After a finished handshake, whether the connection carries HTTP/2: TLS's ALPN chose
    /// `h2`; cleartext is HTTP/2 by prior knowledge (h2c), as h2load does.
    pub(crate) fn negotiated_h2(&self) -> bool {
        match self {
            Transport::Plain(..) | Transport::Unix(_) => true,
            Transport::Tls(t) => t.is_h2(),
        }
    }

    /// Whether bytes already accepted by `write` still wait for the socket (TLS records).
    #[inline]
    pub(crate) fn wants_write(&self) -> bool {
        match self {
            Transport::Plain(..) | Transport::Unix(_) => false,
            Transport::Tls(t) => t.wants_write(),
        }
    }

    /// Sends what waits (see `wants_write`) until the socket is full.
    pub(crate) fn send_pending(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(..) | Transport::Unix(_) => Ok(()),
            Transport::Tls(t) => t.send_pending(),
        }
    }

    /// Whether the TCP connect has finished (`Ok(false)`: not yet, the event was stale), or
    /// why it failed.
    pub(crate) fn connected(&self) -> io::Result<bool> {
        let (peer, error) = match self {
            Transport::Plain(s, _) => (s.peer_addr().map(drop), s.take_error()),
            Transport::Tls(t) => (t.tcp.peer_addr().map(drop), t.tcp.take_error()),
            Transport::Unix(s) => (s.peer_addr().map(drop), s.take_error()),
        };
        match peer {
            Ok(()) => Ok(true),
            Err(e) => match error {
                Ok(Some(err)) | Err(err) => Err(err),
                Ok(None) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                Ok(None) => Err(e),
            },
        }
    }

    /// Writes what it can of `buf` (the request's bytes); `WouldBlock` when nothing could go.
    #[inline]
    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s, _) => s.write(buf),
            Transport::Unix(s) => s.write(buf),
            Transport::Tls(t) => t.write(buf),
        }
    }

    /// The end of the run's lingering close, first half: hands the kernel everything already
    /// accepted (over HTTPS, the records rustls still holds, then its close_notify) and ends
    /// the sending side with a FIN behind it, so that a request counted as sent reaches the
    /// server before the connection closes. `Ok(false)`: records still wait for the socket
    /// (its writable event comes back); `Ok(true)`: the FIN is queued. Nothing new is written.
    /// An error when there is nothing to linger for: not connected, or a TLS handshake not
    /// finished (no request went on it).
    pub(crate) fn shutdown_write(&mut self) -> io::Result<bool> {
        match self {
            Transport::Plain(s, low) => {
                low.clear(s.as_fd());
                s.shutdown(std::net::Shutdown::Write).map(|()| true)
            }
            Transport::Unix(s) => s.shutdown(std::net::Shutdown::Write).map(|()| true),
            Transport::Tls(t) => t.shutdown_write(),
        }
    }

    /// Reads response bytes into `buf`. `Ok(0)` is the server's close; a count short of
    /// `buf.len()` means the socket is drained (edge-triggered epoll reports what comes next),
    /// which the event loop relies on to make one read per response.
    #[inline]
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s, low) => {
                let n = s.read(buf)?;
                if n > 0 {
                    low.on_read();
                }
                Ok(n)
            }
            Transport::Unix(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
        }
    }
}

impl Transport {
    /// Tells the connection how many response bytes it is owed (bytes the server has announced
    /// and will send: see `low_water.rs`), at `now` (µs since the run's base): the socket may
    /// then wake it only once a good share of them is there. Returns when the connection must
    /// be looked at again (this again), whether or not anything was read by then
    /// ([`low_water::NONE`]: no need).
    pub(crate) fn set_low_water(&mut self, owed: u64, now: u64) -> u64 {
        match self {
            Transport::Plain(s, low) => low.expect(s.as_fd(), owed, now),
            Transport::Unix(_) => low_water::NONE,
            Transport::Tls(t) => t.expect(owed, now),
        }
    }
}

/// A nonblocking TCP socket with Nagle off, its connect started.
fn open_tcp(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking(),
        Some(Protocol::TCP),
    )?;
    s.set_tcp_nodelay(true)?;
    match s.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(s.into()))
}
