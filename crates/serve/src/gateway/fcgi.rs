//! FastCGI (the responder role): a request's meta-variables and body sent as records over a
//! socket to a long-running application (php-fpm, fcgiwrap), its FCGI_STDOUT read back as a
//! CGI program's stdout would be: the same head checks, the same response path.
//!
//! - `record.rs` is the record layer, sans I/O: no FastCGI crate fits a non-blocking loop that
//!   owns its sockets (they bring their own async runtime or block), and the layer is small.
//! - `exchange.rs` is one request on one connection, registered with the thread's epoll
//!   instance under its client connection's token, as a program's pipes are.
//! - [`Pool`] keeps a few idle connections per application and thread (`FCGI_KEEP_CONN`):
//!   only a connection whose request ended cleanly goes back, and it is checked before reuse.

use std::io::{self, Read, Write};
use std::mem::MaybeUninit;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use crate::config::FastCgiAddr;

pub(crate) mod exchange;
pub mod record;

pub(crate) use exchange::{Buffers, Exchange, Upstream};

/// A connection to an application.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
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

    /// Whether an idle connection can take a request: nothing to read and not closed (the
    /// application closes idle connections when it likes: php-fpm after `pm.max_requests`).
    fn idle_and_open(&self) -> bool {
        let sock = match self {
            Stream::Unix(s) => socket2::SockRef::from(s),
            Stream::Tcp(s) => socket2::SockRef::from(s),
        };
        let mut byte = [MaybeUninit::<u8>::uninit()];
        matches!(sock.peek(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    pub fn register(&mut self, registry: &Registry, token: usize) -> io::Result<()> {
        let token = Token(token | super::PROGRAM_TOKEN);
        registry.register(self, token, Interest::READABLE | Interest::WRITABLE)
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tcp(s) => s.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tcp(s) => s.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.deregister(r),
            Stream::Tcp(s) => s.deregister(r),
        }
    }
}

/// Request buffers kept for the next requests, beyond those of the idle connections.
const SPARE_BUFFERS: usize = 8;

/// One thread's idle connections, per application, and the buffers of requests that ended.
#[derive(Debug)]
pub(crate) struct Pool {
    idle: Vec<Vec<Stream>>,
    /// Idle connections kept per application (`fastcgi_pool`).
    limit: usize,
    buffers: Vec<Buffers>,
}

impl Pool {
    pub fn new(apps: usize, limit: usize) -> Pool {
        Pool {
            idle: (0..apps).map(|_| Vec::with_capacity(limit)).collect(),
            limit,
            buffers: Vec::new(),
        }
    }

    /// Whether requests ask the application to keep their connection.
    pub fn keeps(&self) -> bool {
        self.limit > 0
    }

    /// An idle connection to `app` still open, if there is one (the closed ones are dropped).
    pub fn take(&mut self, app: usize) -> Option<Stream> {
        let idle = &mut self.idle[app];
        while let Some(s) = idle.pop() {
            if s.idle_and_open() {
                return Some(s);
            }
        }
        None
    }

    /// A connection whose request ended cleanly: kept (unregistered: an idle connection
    /// drives no client connection) while the pool has room, else closed.
    pub fn put(&mut self, app: usize, mut s: Stream, registry: &Registry) {
        let idle = &mut self.idle[app];
        if idle.len() < self.limit && s.deregister(registry).is_ok() {
            idle.push(s);
        }
    }

    /// Buffers for a request: a request's that ended, or new ones.
    pub fn buffers(&mut self) -> Buffers {
        self.buffers.pop().unwrap_or_else(Buffers::new)
    }

    /// A request's buffers, kept for the next one (a few; the rest are freed).
    pub fn recycle(&mut self, b: Buffers) {
        if self.buffers.len() < SPARE_BUFFERS {
            self.buffers.push(b);
        }
    }
}
