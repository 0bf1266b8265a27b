//! The connections the gateways that speak over a socket keep: to a FastCGI application
//! (`fcgi.rs`) or to a reverse proxy's upstream (`proxy.rs`), below both so that each uses them
//! and neither imports the other.
//!
//! - [`Stream`] is one connection: a unix socket, TCP, or TLS over TCP (`tls.rs`, a proxy's
//!   `https://` upstream), registered with the thread's epoll instance under a pool slot's
//!   token (`slot | POOL_TOKEN`).
//! - [`Pool`] (`pool.rs`) is one thread's idle connections per application or upstream
//!   address, their slots in the thread's token space, and the request [`Buffers`]
//!   (`buffers.rs`) of requests that ended, recycled for the next.

use std::io::{self, Read, Write};
use std::mem::MaybeUninit;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use crate::config::FastCgiAddr;

mod buffers;
mod pool;
pub(crate) mod tls;

pub(crate) use buffers::Buffers;
pub(crate) use pool::Pool;
pub(crate) use tls::TlsUpstream;

/// A connection to an application or a proxy's upstream.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    /// A proxy's `https://` upstream (`upstream/tls.rs`).
    Tls(Box<TlsUpstream>),
}

impl Stream {
    /// Starts a connection without waiting for it: a unix socket connects at once (or is
    /// refused), a TCP one completes later (writes wait for it, its failure is theirs).
    pub fn connect(addr: &FastCgiAddr) -> io::Result<Stream> {
        Ok(match addr {
            FastCgiAddr::Unix(path) => Stream::Unix(UnixStream::connect(path)?),
            FastCgiAddr::Tcp(a) => {
                let s = TcpStream::connect(*a)?;
                // Records are written whole; Nagle would hold the last one back.
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
        })
    }

    /// Whether an idle connection can still take a request: nothing to read and not closed (the
    /// application closes idle connections when it likes: php-fpm after `pm.max_requests`).
    /// Asked when an idle connection has an event, and by a proxy as it takes one.
    fn idle_and_open(&self) -> bool {
        matches!(self.peek_byte(), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// A non-blocking peek of one byte: `Ok(1)` bytes wait, `Ok(0)` the peer closed,
    /// `WouldBlock` nothing waits.
    pub fn peek_byte(&self) -> io::Result<usize> {
        let sock = match self {
            Stream::Unix(s) => socket2::SockRef::from(s),
            Stream::Tcp(s) => socket2::SockRef::from(s),
            Stream::Tls(s) => return s.peek_byte(),
        };
        let mut byte = [MaybeUninit::<u8>::uninit()];
        sock.peek(&mut byte)
    }

    /// Registers a new connection, once for its life, under pool slot `slot`'s token.
    pub fn register(&mut self, registry: &Registry, slot: usize) -> io::Result<()> {
        let token = Token(slot | POOL_TOKEN);
        registry.register(self, token, Interest::READABLE | Interest::WRITABLE)
    }

    /// [`Stream::register`] for reading alone (a FastCGI application's connection): a unix
    /// socket says writable each time its peer reads (the application taking a request),
    /// which would wake the loop once more per request for nothing. Writes that block ask for
    /// writability while they wait ([`Stream::set_writable_interest`]).
    pub fn register_readable(&mut self, registry: &Registry, slot: usize) -> io::Result<()> {
        registry.register(self, Token(slot | POOL_TOKEN), Interest::READABLE)
    }

    /// Adds writability to (`on`), or takes it from, the events of a connection registered
    /// by [`Stream::register_readable`].
    pub fn set_writable_interest(
        &mut self,
        registry: &Registry,
        slot: usize,
        on: bool,
    ) -> io::Result<()> {
        let interest = match on {
            true => Interest::READABLE | Interest::WRITABLE,
            false => Interest::READABLE,
        };
        registry.reregister(self, Token(slot | POOL_TOKEN), interest)
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Tls(s) => s.tcp.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Tls(s) => s.tcp.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.deregister(r),
            Stream::Tcp(s) => s.deregister(r),
            Stream::Tls(s) => s.tcp.deregister(r),
        }
    }
}

/// The rule both exchanges (a FastCGI application's, a proxy's upstream's) follow when a write
/// of the request fails after part of it went: the request ends there (the rest of its body is
/// dropped, the connection never pooled) and the exchange does not. An application or upstream
/// may answer before reading the whole body (a 413 to an upload it will not take) and close
/// (php-fpm does not: it reads the body away first): the write meets the close, while the
/// answer, whole, waits in the socket or was partly read already. Given `sent`, what sending
/// the pending request bytes before a read of the answer gave, and whether such a failure ended
/// the request (`write_failed`): whether the read goes on.
pub(crate) fn read_goes_on(sent: io::Result<()>, write_failed: bool) -> io::Result<()> {
    match sent {
        Err(e) if !write_failed => Err(e),
        _ => Ok(()),
    }
}

/// The token bit that marks a pooled connection's events (FastCGI or proxy): `slot | POOL_TOKEN`, routed by the
/// thread's [`Pool`] to the client connection the slot's connection serves now, if any.
pub(crate) const POOL_TOKEN: usize = 1 << (usize::BITS - 3);
