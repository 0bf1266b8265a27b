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

use crate::Target;

/// What every connection of a run is opened with, built once before the threads start.
#[derive(Debug, Clone)]
pub struct Connector {
    addr: SocketAddr,
}

impl Connector {
    pub fn new(target: &Target) -> Connector {
        Connector { addr: target.addr }
    }
}

/// One connection to the server.
#[derive(Debug)]
pub(crate) enum Transport {
    Plain(TcpStream),
}

impl Transport {
    /// Starts a nonblocking connect and registers the socket with `registry` under `token`;
    /// the first writable event tells it finished (see [`Transport::connected`]).
    pub(crate) fn open(
        connector: &Connector,
        registry: &Registry,
        token: Token,
    ) -> io::Result<Transport> {
        let mut tcp = open_tcp(connector.addr)?;
        registry.register(&mut tcp, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(Transport::Plain(tcp))
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
        }
    }

    /// Whether the TCP connect has finished (`Ok(false)`: not yet, the event was stale), or
    /// why it failed.
    pub(crate) fn connected(&self) -> io::Result<bool> {
        let tcp = self.tcp();
        match tcp.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) => match tcp.take_error() {
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
            Transport::Plain(s) => s.write(buf),
        }
    }

    /// Reads response bytes into `buf`. `Ok(0)` is the server's close; a count short of
    /// `buf.len()` means the socket is drained (edge-triggered epoll reports what comes next),
    /// which the event loop relies on to make one read per response.
    #[inline]
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
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
