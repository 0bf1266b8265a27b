//! An `https://` upstream: the TCP connection with a rustls client on it, driven by the event
//! loop as the plain one is (never a blocking read or write, never a thread). Its configuration
//! is made at start by `tls_setup/upstream.rs` (the project's TLS client's, `tls_client`,
//! bench's and discover's too: the system's roots plus the mount's `cacert`, ALPN `http/1.1`,
//! sessions resumed on the next connection to the same upstream); SNI and the name checked come
//! from the upstream's host.
//!
//! The handshake is moved on by every call of the exchange (`handshake`), so whichever event
//! comes (writable as the connection completes, readable as the server's flight arrives) moves
//! it; nothing of the request is handed to rustls before it is done, so a connection refused or
//! a certificate refused is a failure before any byte of the request was sent, as for a plain
//! connection. A refused handshake is an error carrying rustls's, whose kind
//! ([`tls_client::TlsFailure`]) and one-line explanation go to the error log.

use std::io::{self, Read, Write};
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};
use tls_client::{tls_error, ClientStream, TlsFailure};

/// Plaintext rustls may hold for us to send, and records waiting for the socket: the exchange
/// writes at most a body chunk at once; the limit keeps a connection's memory bounded.
const BUFFER_LIMIT: usize = 64 * 1024;

/// A TCP connection to an upstream with a rustls client on it.
#[derive(Debug)]
pub(crate) struct TlsUpstream {
    pub tcp: TcpStream,
    tls: ClientConnection,
    /// Decrypted bytes rustls holds that no read has taken yet.
    plaintext: usize,
    /// An error met after a read had bytes to return: the next read's.
    deferred: Option<io::Error>,
    /// The upstream closed the connection without close_notify: what came may be cut short.
    cut: bool,
    /// The upstream's close_notify came: the connection carries no other response.
    peer_closed: bool,
}

impl TlsUpstream {
    /// Starts the connection (not waited for) and the client state that will send its
    /// ClientHello once the socket is writable.
    pub fn connect(
        addr: std::net::SocketAddr,
        config: &Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<TlsUpstream> {
        let mut tls = ClientConnection::new(config.clone(), name).map_err(tls_error)?;
        tls.set_buffer_limit(Some(BUFFER_LIMIT));
        let tcp = TcpStream::connect(addr)?;
        // Requests are written whole; Nagle would hold the last record back.
        tcp.set_nodelay(true)?;
        Ok(TlsUpstream {
            tcp,
            tls,
            plaintext: 0,
            deferred: None,
            cut: false,
            peer_closed: false,
        })
    }

    /// Moves the handshake on with what the socket has: `Ok(true)` once it is complete,
    /// `Ok(false)` while it waits for the socket (its next event comes back here).
    pub fn handshake(&mut self) -> io::Result<bool> {
        tls_client::handshake(
            self,
            "the upstream closed the connection during the TLS handshake",
        )
    }

    /// Whether the handshake is still under way (the exchange moves it only then).
    pub fn is_handshaking(&self) -> bool {
        self.tls.is_handshaking()
    }

    /// Whether the connection ended with no close_notify: a body that runs to the close may
    /// have been cut there by anyone on the path (a body with a length or chunks tells).
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// A non-blocking look for bytes: `Ok(1)` plaintext or records wait, `Ok(0)` the upstream
    /// closed, `WouldBlock` nothing waits (as `Stream::peek_byte`).
    pub fn peek_byte(&self) -> io::Result<usize> {
        if self.plaintext > 0 {
            return Ok(1);
        }
        // A close_notify taken in with the last response's records: the socket may be quiet
        // and open, but the connection carries nothing more.
        if self.peer_closed {
            return Ok(0);
        }
        let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
        socket2::SockRef::from(&self.tcp).peek(&mut byte)
    }

    /// Writes waiting records until the socket is full.
    fn send_pending(&mut self) -> io::Result<()> {
        tls_client::send_pending(&mut self.tls, &mut self.tcp)
    }
}

impl ClientStream for TlsUpstream {
    type Socket = TcpStream;

    fn parts(&mut self) -> (&mut ClientConnection, &mut TcpStream) {
        (&mut self.tls, &mut self.tcp)
    }

    /// Decrypts what was read; on a TLS error, sends rustls's alert (best effort) and fails.
    fn process(&mut self) -> io::Result<()> {
        match self.tls.process_new_packets() {
            Ok(state) => {
                self.plaintext = state.plaintext_bytes_to_read();
                self.peer_closed |= state.peer_has_closed();
                // Best effort: the records may answer the server's (a key update); a failed
                // write shows on the next one.
                let _ = self.send_pending();
                Ok(())
            }
            Err(e) => {
                let _ = self.tls.write_tls(&mut self.tcp);
                Err(tls_error(e))
            }
        }
    }
}

impl Read for TlsUpstream {
    /// Decrypted bytes, read until `buf` is full or the socket is drained (rustls takes the
    /// socket's bytes a few KiB at a time: stopping at its first plaintext would leave bytes
    /// past a response unseen by the exchange's check, and make many more reads); `Ok(0)` once
    /// the upstream closed (without close_notify `cut` says so); `WouldBlock` when rustls holds nothing and the socket is drained, so an
    /// edge-triggered event is due before more comes. An error of the socket after some bytes
    /// is kept for the next call.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let mut n = 0;
        loop {
            match self.tls.reader().read(&mut buf[n..]) {
                // The close_notify, or `buf` full.
                Ok(0) => return Ok(n),
                Ok(k) => {
                    self.plaintext = self.plaintext.saturating_sub(k);
                    n += k;
                    if n == buf.len() {
                        return Ok(n);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.plaintext = 0,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.cut = true;
                    return Ok(n);
                }
                Err(e) if n > 0 => {
                    self.deferred = Some(e);
                    return Ok(n);
                }
                Err(e) => return Err(e),
            }
            match self.tls.read_tls(&mut self.tcp) {
                // The close: rustls reports it from the reader on the next turn.
                Ok(_) => {
                    if let Err(e) = self.process() {
                        if n == 0 {
                            return Err(e);
                        }
                        self.deferred = Some(e);
                        return Ok(n);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if n > 0 => {
                    if e.kind() != io::ErrorKind::WouldBlock {
                        self.deferred = Some(e);
                    }
                    return Ok(n);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for TlsUpstream {
    /// Hands `buf` to rustls (encrypted at once) and sends what the socket takes; `WouldBlock`
    /// while the handshake is under way or rustls's buffer is full.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.handshake()? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self.tls.writer().write(buf)?;
        self.send_pending()?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Sends the records rustls holds until the socket is full (`Ok` then too: the rest goes
    /// on the next call, the socket's writable event calls again).
    fn flush(&mut self) -> io::Result<()> {
        self.send_pending()
    }
}

/// Why a handshake failed, when `e` is one: the reason's name and its explanation.
pub(crate) fn failure(e: &io::Error) -> Option<TlsFailure> {
    e.get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>())
        .then(|| TlsFailure::of(e))
}

/// The error log's line for a refused handshake: the reason by its name (as `flint bench`
/// counts it), what it means, and rustls's own words.
pub(crate) fn log_line(name: &str, why: TlsFailure, e: &io::Error) -> String {
    format!(
        "flint serve: proxy {name}: TLS handshake failed: {}: {} ({e}) (502)",
        why.name(),
        explain(why)
    )
}

/// What a failure means for a proxy, in the server's words (the TLS client's name bench's
/// flags); the fix for an untrusted certificate holds whether the mount has a `cacert` or not.
pub(crate) fn explain(why: TlsFailure) -> &'static str {
    match why {
        TlsFailure::UnknownIssuer => {
            "the upstream certificate's issuer is not trusted: the mount's `cacert` (--proxy-cacert) must hold that issuer or the certificate itself"
        }
        TlsFailure::CaUsedAsEndEntity => {
            "the upstream presented a CA certificate as its own: the mount's `cacert` (--proxy-cacert) must hold that certificate"
        }
        TlsFailure::NameMismatch => "the certificate is not for the upstream's host name",
        TlsFailure::Expired => "the upstream certificate has expired",
        TlsFailure::NotYetValid => "the upstream certificate is not valid yet",
        TlsFailure::OtherCertificate => "the upstream certificate was refused",
        TlsFailure::NoCertificate => "the upstream sent no certificate",
        TlsFailure::ProtocolVersion => {
            "no TLS version or cipher suite in common with the upstream (TLS 1.2 or 1.3)"
        }
        TlsFailure::AlertFromServer => "the upstream ended the handshake with an alert",
        TlsFailure::NotTls => "the upstream did not answer in TLS (is it http://?)",
        TlsFailure::Reset => "the upstream closed or reset the connection in the handshake",
        TlsFailure::Other => "another handshake failure",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_certificate_is_logged_by_its_reason_and_its_fix() {
        let refused = |c| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(c),
            )
        };
        let e = refused(rustls::CertificateError::UnknownIssuer);
        let why = failure(&e).expect("a TLS failure");
        assert_eq!(why, TlsFailure::UnknownIssuer);
        let line = log_line("127.0.0.1:8443", why, &e);
        assert!(
            line.starts_with(
                "flint serve: proxy 127.0.0.1:8443: TLS handshake failed: unknown_issuer: "
            ),
            "{line}"
        );
        assert!(line.contains("`cacert` (--proxy-cacert)"), "{line}");
        let e = refused(rustls::CertificateError::NotValidForName);
        let line = log_line("localhost:8443", failure(&e).unwrap(), &e);
        assert!(
            line.contains(": name_mismatch: the certificate is not for the upstream's host name"),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
        // No reason is told in bench's flags.
        for e in [
            rustls::Error::PeerIncompatible(rustls::PeerIncompatible::Tls12NotOffered),
            rustls::Error::InvalidCertificate(rustls::CertificateError::Expired),
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        ] {
            let e = io::Error::new(io::ErrorKind::InvalidData, e);
            let line = log_line("u:443", failure(&e).unwrap(), &e);
            assert!(!line.contains("--tls") && !line.contains("-k"), "{line}");
        }
        // An I/O error that is no TLS failure is none.
        assert_eq!(failure(&io::ErrorKind::ConnectionRefused.into()), None);
    }
}
