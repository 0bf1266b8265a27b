//! What flint's non-blocking client connections (bench's, and serve's proxy to `https://`
//! upstreams) do alike with rustls on a socket their event loop drives: write the records rustls
//! holds until the socket is full, and move the handshake on with what the socket has. What they
//! read, when and into what stays with each client (its [`ClientStream::process`] and its reads).

use std::io::{self, Write};

use rustls::ClientConnection;

/// A client connection: rustls's state on a non-blocking socket.
pub trait ClientStream {
    /// The socket (a non-blocking TCP stream).
    type Socket: io::Read + io::Write;

    /// The client state and the socket it is on.
    fn parts(&mut self) -> (&mut ClientConnection, &mut Self::Socket);

    /// Decrypts what was read, keeping what the client needs of rustls's state; a TLS error
    /// (after its alert is sent, best effort) is the error returned.
    fn process(&mut self) -> io::Result<()>;
}

/// Writes waiting records until `socket` is full (`Ok` then too: its writable event comes back).
#[inline]
pub fn send_pending(tls: &mut ClientConnection, socket: &mut impl Write) -> io::Result<()> {
    while tls.wants_write() {
        match tls.write_tls(socket) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Moves the handshake on with what the socket has: `Ok(true)` once it is complete, `Ok(false)`
/// while it waits for the socket (its next event comes back here). A close before the handshake
/// completed is `UnexpectedEof` with `closed` as its message.
pub fn handshake(stream: &mut impl ClientStream, closed: &'static str) -> io::Result<bool> {
    loop {
        let (tls, socket) = stream.parts();
        send_pending(tls, socket)?;
        if !tls.is_handshaking() {
            return Ok(true);
        }
        if tls.wants_write() {
            return Ok(false); // the socket is full: its writable event comes back here
        }
        match tls.read_tls(socket) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, closed)),
            Ok(_) => stream.process()?,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A TLS failure as an I/O error that still carries it ([`crate::TlsFailure::of`] looks inside).
pub fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}
