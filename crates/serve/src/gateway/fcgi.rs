//! FastCGI (the responder role): a request's meta-variables and body sent as records over a
//! socket to a long-running application (php-fpm, fcgiwrap), its FCGI_STDOUT read back as a
//! CGI program's stdout would be: the same head checks, the same response path.
//!
//! - [`record`] is the record layer, sans I/O, in the workspace's `fastcgi` crate (shared with
//!   the lab's FastCGI application): no FastCGI crate of crates.io fits a non-blocking loop that
//!   owns its sockets (they bring their own async runtime or block), and the layer is small.
//! - `params.rs` encodes a request's BEGIN_REQUEST and PARAMS from the request itself into
//!   the buffer its exchange writes.
//! - `exchange.rs` is one request on one connection, registered with the thread's epoll
//!   instance under its client connection's token, as a program's pipes are.
//! - [`Pool`] keeps a few idle connections per application and thread (`FCGI_KEEP_CONN`):
//!   only a connection whose request ended cleanly goes back. Each connection is registered
//!   once, under a pool slot's token (`POOL_TOKEN`), and stays registered while idle: an
//!   application closing an idle connection is an event (the connection is then dropped), and
//!   a reuse only says which client connection the slot's events drive now (no `epoll_ctl`,
//!   no check per request). It is registered for reading alone: a unix socket says writable
//!   each time the application reads from it, a wake-up per request for nothing; a write that
//!   blocks asks for writability until its request ends.

use std::io::{self, Read, Write};
use std::mem::MaybeUninit;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use crate::config::FastCgiAddr;

pub(crate) mod exchange;
#[cfg(test)]
mod launch_tests;
mod params;
mod pool;
pub use fastcgi::record;

pub(crate) use exchange::{Buffers, Exchange, Upstream};
pub(crate) use params::Params;
pub(crate) use pool::Pool;

/// A connection to an application.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    /// A proxy's `https://` upstream (`proxy/tls.rs`).
    Tls(Box<super::proxy::TlsUpstream>),
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

/// The token bit that marks a FastCGI connection's events: `slot | POOL_TOKEN`, routed by the
/// thread's [`Pool`] to the client connection the slot's connection serves now, if any.
pub(crate) const POOL_TOKEN: usize = 1 << (usize::BITS - 3);
