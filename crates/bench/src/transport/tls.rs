//! HTTPS: the TLS variant of the transport, a rustls client driven by the Webchild's event loop.
//! How it is configured (trust, versions, cipher suites, ALPN, resumption) is the TLS client
//! crate's (`tls_client`), shared with `flint discover` and `flint serve`'s proxy; here is the
//! connection.
//!
//! The event loop's promise (a read short of the buffer means the socket is drained) holds here
//! too: a read goes on until the buffer is full or the kernel had less than was asked for. The
//! socket is read in one `recv` of up to 46 KiB (into a per-thread ciphertext buffer, handed to
//! rustls whole) rather than by rustls, which asks for 4 KiB, or the rest of one record, a call.

use super::low_water::LowWater;
use crate::config::TlsOptions;
use crate::stats::TlsAgreed;
use mio::net::TcpStream;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, HandshakeKind};
use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::sync::Arc;
pub use tls_client::{client_config, TlsSetupError};
use tls_client::{tls_error, ClientStream};

/// The most ciphertext read from the socket at once (the event loop's read buffer is as large).
const CIPHERTEXT_READ: usize = 64 * 1024;
/// The longest TLS record on the wire (16 KiB of plaintext, TLS 1.2's 2 KiB of expansion, a
/// 5-byte header): rustls may hold all but a byte of one from an earlier read, so a read of
/// `n` bytes can decrypt to `n` plus this much, and the caller's buffer must have that room.
const PARTIAL_RECORD: usize = 16 * 1024 + 2048 + 5;

thread_local! {
    /// The thread's ciphertext buffer: a read hands all it got to rustls before it returns, so
    /// one buffer serves all the thread's connections (allocated at the thread's first read).
    static CIPHERTEXT: RefCell<Box<[u8]>> =
        RefCell::new(vec![0; CIPHERTEXT_READ].into_boxed_slice());
}

/// Plaintext rustls may hold for us to send, and TLS records waiting for the socket: a request
/// is far smaller; the limit keeps a connection's memory bounded if the server stops reading.
const BUFFER_LIMIT: usize = 16 * 1024;

/// What every TLS connection of a run is made with.
#[derive(Debug, Clone)]
pub(crate) struct TlsConnector {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

impl TlsConnector {
    pub(crate) fn new(
        server_name: &str,
        opts: &TlsOptions,
        h2: bool,
    ) -> Result<Self, TlsSetupError> {
        let server_name = ServerName::try_from(server_name.to_owned())
            .map_err(|_| TlsSetupError::ServerName(server_name.to_owned()))?;
        let alpn: &[u8] = if h2 { b"h2" } else { b"http/1.1" };
        let config = client_config(opts, alpn)?;
        // The crypto library initialises itself once per process on its first key share (100 ms
        // and more in a debug build): done here, before the run, it is not in the first
        // connections' connect times.
        drop(ClientConnection::new(config.clone(), server_name.clone())?);
        Ok(TlsConnector {
            config,
            server_name,
        })
    }
}

/// A TCP connection with a rustls client on it.
#[derive(Debug)]
pub(crate) struct TlsStream {
    pub(super) tcp: TcpStream,
    tls: ClientConnection,
    /// The last socket read returned less than rustls offered: nothing more is there until the
    /// next readiness event.
    drained: bool,
    /// Our close_notify is queued (answering the server's).
    closed_notified: bool,
    /// The socket's receive low-water mark (`low_water.rs`).
    low: LowWater,
}

impl TlsConnector {
    /// A new connection's client state: its ClientHello, key shares included, and with
    /// `--tls-resume` a ticket taken from the cache.
    pub(super) fn client(&self) -> io::Result<ClientConnection> {
        let mut tls = ClientConnection::new(self.config.clone(), self.server_name.clone())
            .map_err(tls_error)?;
        tls.set_buffer_limit(Some(BUFFER_LIMIT));
        Ok(tls)
    }
}

impl TlsStream {
    pub(super) fn new(tcp: TcpStream, tls: ClientConnection) -> Self {
        TlsStream {
            tcp,
            tls,
            drained: false,
            closed_notified: false,
            low: LowWater::new(),
        }
    }

    /// Moves the handshake on with what the socket has: `Ok(true)` once it is complete.
    pub(super) fn handshake(&mut self) -> io::Result<bool> {
        tls_client::handshake(
            self,
            "the server closed the connection during the TLS handshake",
        )
    }

    /// What the finished handshake agreed on, and whether it resumed a session.
    pub(super) fn session(&self) -> (TlsAgreed, bool) {
        let version = self
            .tls
            .protocol_version()
            .and_then(|v| v.as_str())
            .unwrap_or("unknown");
        let cipher = self
            .tls
            .negotiated_cipher_suite()
            .and_then(|s| s.suite().as_str())
            .unwrap_or("unknown");
        // TLS 1.2 resumption agrees on no group.
        let kx = self
            .tls
            .negotiated_key_exchange_group()
            .and_then(|g| g.name().as_str())
            .unwrap_or("none");
        let alpn = self.tls.alpn_protocol().map(|p| match p {
            b"http/1.1" => "http/1.1",
            b"h2" => "h2",
            _ => "other",
        });
        let resumed = self.tls.handshake_kind() == Some(HandshakeKind::Resumed);
        (
            TlsAgreed {
                version,
                cipher,
                kx,
                alpn,
            },
            resumed,
        )
    }

    /// Whether the server chose `h2` by ALPN.
    pub(super) fn is_h2(&self) -> bool {
        self.tls.alpn_protocol() == Some(b"h2")
    }

    /// Hands `buf` to rustls (encrypted at once) and sends what the socket takes.
    pub(super) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut n = self.tls.writer().write(buf)?;
        self.send_pending()?;
        if n == 0 && !buf.is_empty() {
            // rustls's buffer was full; what the socket took made room, or it is still full.
            n = self.tls.writer().write(buf)?;
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        Ok(n)
    }

    /// Whether TLS records wait for the socket to take them.
    pub(super) fn wants_write(&self) -> bool {
        self.tls.wants_write()
    }

    /// Writes waiting records until the socket is full (then its writable event comes back).
    #[inline]
    pub(super) fn send_pending(&mut self) -> io::Result<()> {
        tls_client::send_pending(&mut self.tls, &mut self.tcp)
    }

    /// See [`super::Transport::shutdown_write`]: the records rustls holds go first, then
    /// close_notify, then the FIN.
    pub(super) fn shutdown_write(&mut self) -> io::Result<bool> {
        if self.tls.is_handshaking() {
            // No request has gone on this connection: nothing to linger for. And a close_notify
            // now would leave rustls unable to fail the handshake it may still be processing
            // (it sends one alert at most, and asserts so).
            return Err(io::Error::other("TLS handshake not finished"));
        }
        self.low.clear(self.tcp.as_fd());
        self.send_pending()?;
        if self.tls.wants_write() {
            return Ok(false);
        }
        if !self.closed_notified {
            self.closed_notified = true;
            self.tls.send_close_notify();
            self.send_pending()?;
            if self.tls.wants_write() {
                return Ok(false);
            }
        }
        self.tcp.shutdown(std::net::Shutdown::Write)?;
        Ok(true)
    }

    /// Decrypted bytes into `buf`: until it is full, the socket is drained, or the server has
    /// closed (`Ok(0)` then; a close without TLS's close_notify is a close too: HTTP's framing
    /// tells a complete response from a cut one, as it does for plain TCP).
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        loop {
            match self.tls.reader().read(&mut buf[filled..]) {
                Ok(0) => return Ok(filled),
                Ok(n) => {
                    filled += n;
                    if filled == buf.len() {
                        return Ok(filled);
                    }
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(filled),
                Err(e) => return Err(e),
            }
            if self.drained {
                self.drained = false;
                return match filled {
                    0 => Err(io::ErrorKind::WouldBlock.into()),
                    n => Ok(n),
                };
            }
            let room = buf.len() - filled;
            if room > PARTIAL_RECORD {
                let want = (room - PARTIAL_RECORD).min(CIPHERTEXT_READ);
                let out = &mut buf[filled..];
                filled +=
                    CIPHERTEXT.with_borrow_mut(|ct| self.read_socket(&mut ct[..want], out))?;
                continue;
            }
            // Too little room left for a whole read's plaintext: rustls reads the socket itself,
            // a record's worth at most.
            let mut source = Measured {
                tcp: &mut self.tcp,
                offered: 0,
                got: 0,
            };
            match self.tls.read_tls(&mut source) {
                Ok(0) => {} // the reader reports the close on the next turn
                Ok(_) => {
                    self.low.on_read();
                    self.drained = source.got < source.offered;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            self.process()?;
        }
    }

    /// See [`super::Transport::set_low_water`]: of the plaintext owed, a TLS record rustls holds
    /// part of (read from the socket already) will not reach the socket again.
    pub(super) fn expect(&mut self, owed: u64, now: u64) -> u64 {
        let owed = owed.saturating_sub(PARTIAL_RECORD as u64);
        self.low.expect(self.tcp.as_fd(), owed, now)
    }

    /// One `recv` of up to `ct.len()` bytes, all handed to rustls and decrypted into `out`
    /// (which has room for all of it: see [`PARTIAL_RECORD`]); returns the plaintext's length.
    /// rustls reading the socket itself would ask for 4 KiB at a time, the rest of a record at
    /// most: several `recv` calls where the server wrote many responses at once.
    fn read_socket(&mut self, ct: &mut [u8], out: &mut [u8]) -> io::Result<usize> {
        let n = match self.tcp.read(ct) {
            Ok(0) => {
                // The server's FIN: rustls learns it from an empty read and reports it next.
                self.tls.read_tls(&mut io::empty())?;
                self.process()?;
                return Ok(0);
            }
            Ok(n) => {
                self.low.on_read();
                n
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.drained = true;
                return Ok(0);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(0),
            Err(e) => return Err(e),
        };
        self.drained = n < ct.len();
        let mut rest = &ct[..n];
        let mut filled = 0;
        while !rest.is_empty() {
            // rustls takes what its record buffer has room for, and advances `rest`.
            if self.tls.read_tls(&mut rest)? == 0 {
                break; // after the server's close_notify nothing more is read
            }
            self.process()?;
            // Out at once: rustls's queue of decrypted records has a limit.
            match self.tls.reader().read(&mut out[filled..]) {
                Ok(k) => filled += k,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::UnexpectedEof
                    ) => {} // nothing decrypted yet; or the close, reported on the next turn
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }
}

impl ClientStream for TlsStream {
    type Socket = TcpStream;

    fn parts(&mut self) -> (&mut ClientConnection, &mut TcpStream) {
        (&mut self.tls, &mut self.tcp)
    }

    /// Decrypts what was read; on a TLS error, sends rustls's alert (best effort) and fails.
    /// The server's close_notify is answered with ours at once, as a browser's TLS does: a
    /// server such as lighttpd sends its close_notify after an HTTP/1.0 response and holds its
    /// FIN until the client answers (or its linger timeout, seconds later, ends the wait).
    fn process(&mut self) -> io::Result<()> {
        match self.tls.process_new_packets() {
            // Best effort: a server gone already (its RST) is no failure of what was read.
            Ok(io) if io.peer_has_closed() => {
                if !self.closed_notified {
                    self.closed_notified = true;
                    self.tls.send_close_notify();
                }
                let _ = self.send_pending();
                Ok(())
            }
            Ok(_) => self.send_pending(),
            Err(e) => {
                let _ = self.tls.write_tls(&mut self.tcp);
                Err(tls_error(e))
            }
        }
    }
}

/// The socket as rustls reads it, remembering how much was asked and how much came.
struct Measured<'a> {
    tcp: &'a mut TcpStream,
    offered: usize,
    got: usize,
}

impl Read for Measured<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.offered = buf.len();
        let n = self.tcp.read(buf)?;
        self.got = n;
        Ok(n)
    }
}
