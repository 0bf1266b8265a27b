//! The TLS transport: rustls between the socket and the same protocol the plain transport
//! serves.
//!
//! Bytes in: one `recv` into rustls (a short read means the socket is drained, as for plain TCP),
//! records processed, plaintext handed to the session's input buffer. Bytes out: the session's
//! queued segments are gathered side by side (heads, frame headers and bodies alike) and given to
//! rustls in one write, which seals them into full records (it seals at least one record per
//! write: one per segment would cost both sides an AEAD seal or open for every frame), and the
//! records of a whole batch leave in one gathered write. File bodies cannot go by `sendfile` through
//! user-space TLS: they are read from the page cache in 128 KiB chunks by `pread` into one
//! buffer per thread and sealed from there. Handshake records go out the same way, before any
//! plaintext is given: a connection whose handshake stalls is cut by the header timeout.
//!
//! A failed handshake or a record that does not decrypt ends the connection (after the alert
//! rustls queued, if the socket takes it), counted in `tls_errors`. Plain HTTP sent to this port
//! (a connection whose first byte is a letter, where a TLS record starts with its content type,
//! 20 to 24) gets what nginx answers: an unencrypted 400 saying so, then the close, counted in
//! `tls_plain_http`. The first read goes into the session's input buffer rather than straight
//! into rustls, so looking at the first byte costs no system call.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::{HandshakeKind, ServerConfig, ServerConnection};

use crate::pool::{Bufs, Seg};
use crate::protocol::{Negotiated, Session};
use crate::stats::ServerStats;
use crate::transport::{recv, Flushed, Transport};

/// What is given to rustls at once: a file body's chunk read by one `pread`, or small segments
/// gathered, sealed into 8 full records.
const FILE_CHUNK: usize = 128 * 1024;
/// A TLS record's most plaintext.
const RECORD: usize = 16 * 1024;
/// The first read of a connection, looked at before rustls is given it: a ClientHello fits.
const FIRST_READ: usize = 4096;
/// A fatal `decode_error` alert in a plaintext record (TLS 1.2 record version, as rustls writes).
const DECODE_ERROR_ALERT: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32];
/// Plaintext given to rustls before its records are written: bounds what one connection holds
/// sealed but unsent (nothing more is sealed until they are).
const SEAL_ROUND: usize = 256 * 1024;

/// A TLS connection.
pub(crate) struct TlsTcp {
    sock: TcpStream,
    tls: ServerConnection,
    /// The socket may hold unread input (as for plain TCP).
    rd_ready: bool,
    /// An edge said the client's FIN is in (as for plain TCP).
    fin_seen: bool,
    /// Decrypted plaintext (or the client's close_notify) is waiting inside rustls.
    plain_ready: bool,
    handshaking: bool,
    /// Nothing has been received yet: the first read is looked at before rustls sees it.
    first_read: bool,
    /// The connection began with plain HTTP, this many bytes of it read (see `read`).
    plain_http: Option<usize>,
}

/// What every TLS connection of a thread uses.
pub(crate) struct TlsEnv {
    config: Arc<ServerConfig>,
    /// The same without ALPN, for a client whose offer holds none of ours (see `receive`).
    config_no_alpn: Arc<ServerConfig>,
    /// A file body's next chunk, on its way from the page cache to rustls.
    chunk: Box<[u8]>,
}

impl TlsEnv {
    pub fn new(config: Arc<ServerConfig>) -> TlsEnv {
        let mut no_alpn = (*config).clone();
        no_alpn.alpn_protocols.clear();
        TlsEnv {
            config,
            config_no_alpn: Arc::new(no_alpn),
            chunk: vec![0; FILE_CHUNK].into_boxed_slice(),
        }
    }
}

/// The socket as rustls sees it: counted `recv`s that note a drained socket, counted writes.
struct Wire<'a> {
    sock: &'a TcpStream,
    rd_ready: &'a mut bool,
    fin_seen: bool,
    st: &'a mut ServerStats,
}

impl Read for Wire<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        recv(self.sock, self.rd_ready, self.fin_seen, buf, self.st)
    }
}

impl Write for Wire<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.st.writes += 1;
        let n = (&mut &*self.sock).write(buf)?;
        self.st.written_bytes += n as u64;
        Ok(n)
    }

    /// The records of a batch in one `writev`.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.st.writes += 1;
        let n = (&mut &*self.sock).write_vectored(bufs)?;
        self.st.written_bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TlsTcp {
    fn wire<'a>(&'a mut self, st: &'a mut ServerStats) -> (&'a mut ServerConnection, Wire<'a>) {
        let wire = Wire {
            sock: &self.sock,
            rd_ready: &mut self.rd_ready,
            fin_seen: self.fin_seen,
            st,
        };
        (&mut self.tls, wire)
    }

    /// Writes sealed records until none are left (`Ok(true)`) or the socket is full.
    fn send_records(&mut self, st: &mut ServerStats) -> io::Result<bool> {
        while self.tls.wants_write() {
            let (tls, mut wire) = self.wire(st);
            match tls.write_tls(&mut wire) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Reads records from the socket and processes them (handshake, alerts, application data).
    /// `scratch` (the session's input space) takes the connection's first bytes, to be looked
    /// at before rustls is given them.
    fn receive(
        &mut self,
        env: &TlsEnv,
        scratch: &mut [u8],
        st: &mut ServerStats,
    ) -> io::Result<usize> {
        let first = self.first_read;
        let n = if first {
            self.receive_first(scratch, st)?
        } else {
            let (tls, mut wire) = self.wire(st);
            tls.read_tls(&mut wire)?
        };
        if n == 0 {
            return Ok(0);
        }
        let processed = match self.tls.process_new_packets() {
            // An ALPN offer without one of our protocols (only `http/1.0`, say): rustls refuses
            // it with an alert; nginx answers without ALPN, and so do we. Only the first flight
            // can get this, and it is still in `scratch`: a connection without ALPN takes it
            // again (nothing was sent yet; the alert is dropped with the first connection).
            Err(rustls::Error::NoApplicationProtocol) if first => {
                self.retry_without_alpn(env, &scratch[..n])
            }
            processed => processed,
        };
        match processed {
            Ok(state) => {
                self.plain_ready = state.plaintext_bytes_to_read() > 0 || state.peer_has_closed();
            }
            Err(e) => {
                st.tls_errors += 1;
                if !self.tls.wants_write() && self.tls.protocol_version().is_none() {
                    // rustls refuses a handshake message longer than it takes (64 KiB; a
                    // ClientHello may declare 16 MiB) without queuing the alert it sends for
                    // other malformed ones. Before any version or key is agreed an alert is a
                    // plaintext record: sent here, as nginx sends it.
                    if let rustls::Error::InvalidMessage(_) = e {
                        let (_, mut wire) = self.wire(st);
                        let _ = wire.write(&DECODE_ERROR_ALERT);
                    }
                }
                // Best effort: the alert rustls queued tells the client why.
                let _ = self.send_records(st);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        }
        if self.handshaking && !self.tls.is_handshaking() {
            self.handshaking = false;
            st.tls_handshakes += 1;
            st.tls_resumed += u64::from(self.tls.handshake_kind() == Some(HandshakeKind::Resumed));
        }
        Ok(n)
    }

    /// The connection's first read, into `scratch`: plain HTTP is refused (an HTTP method is
    /// letters; no TLS record starts with one), anything else is handed to rustls.
    fn receive_first(&mut self, scratch: &mut [u8], st: &mut ServerStats) -> io::Result<usize> {
        // Within what rustls takes before it must process records (one handshake message's
        // worth); the rest of a larger first flight is read by rustls itself.
        let len = scratch.len().min(FIRST_READ);
        let n = recv(
            &self.sock,
            &mut self.rd_ready,
            self.fin_seen,
            &mut scratch[..len],
            st,
        )?;
        if n == 0 {
            return Ok(0);
        }
        self.first_read = false;
        if scratch[0].is_ascii_alphabetic() {
            self.plain_http = Some(n);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "plain HTTP sent to the TLS port",
            ));
        }
        let mut rest = &scratch[..n];
        while !rest.is_empty() {
            if self.tls.read_tls(&mut rest)? == 0 {
                break;
            }
        }
        Ok(n)
    }
}

impl TlsTcp {
    /// Starts the handshake again without ALPN, from the first flight `hello`.
    fn retry_without_alpn(
        &mut self,
        env: &TlsEnv,
        hello: &[u8],
    ) -> Result<rustls::IoState, rustls::Error> {
        let mut tls = ServerConnection::new(env.config_no_alpn.clone())?;
        tls.set_buffer_limit(None);
        let mut rest = hello;
        while !rest.is_empty() {
            match tls.read_tls(&mut rest) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        self.tls = tls;
        self.tls.process_new_packets()
    }
}

impl Transport for TlsTcp {
    type Env = TlsEnv;

    fn new(sock: TcpStream, env: &mut TlsEnv) -> io::Result<TlsTcp> {
        let mut tls = ServerConnection::new(env.config.clone()).map_err(io::Error::other)?;
        // What rustls holds sealed is bounded by `flush` instead: one SEAL_ROUND, sealed only
        // once the records before it are written.
        tls.set_buffer_limit(None);
        Ok(TlsTcp {
            sock,
            tls,
            rd_ready: true,
            fin_seen: false,
            plain_ready: false,
            handshaking: true,
            first_read: true,
            plain_http: None,
        })
    }

    fn socket(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    fn readable(&mut self, closed: bool) {
        self.rd_ready = true;
        self.fin_seen |= closed;
    }

    fn may_read(&self) -> bool {
        self.rd_ready || self.plain_ready
    }

    fn read(
        &mut self,
        env: &mut TlsEnv,
        buf: &mut [u8],
        st: &mut ServerStats,
    ) -> io::Result<usize> {
        loop {
            if self.plain_ready {
                match self.tls.reader().read(buf) {
                    Ok(n) => {
                        if n < buf.len() {
                            self.plain_ready = false;
                        }
                        // Ok(0): the client sent close_notify.
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.plain_ready = false,
                    // The client closed TCP without close_notify: for a server reading
                    // requests, the same end of input.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
            }
            if !self.rd_ready {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            if self.receive(env, buf, st)? == 0 {
                return Ok(0);
            }
            if !self.plain_ready && !self.rd_ready {
                // Handshake progress only (its records are written by `flush`).
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
    }

    fn has_output(&self) -> bool {
        self.tls.wants_write()
    }

    /// Seals queued output into records, at most `SEAL_ROUND` bytes at a time, and writes them:
    /// a pipelined batch's responses leave as one batch of records in one gathered write.
    ///
    /// Records sealed before leave first, and nothing more is sealed while any wait: what a
    /// connection holds encrypted is one round at most, however many events a client that reads
    /// nothing provokes (a record it sends, a byte). rustls's own buffer limit stays off because
    /// this is the bound: with it on, a write past it would be cut short mid-segment.
    fn flush(
        &mut self,
        env: &mut TlsEnv,
        session: &mut Session,
        st: &mut ServerStats,
    ) -> io::Result<Flushed> {
        if self.plain_http.is_some() {
            return self.flush_unencrypted(session, st);
        }
        loop {
            if !self.send_records(st)? {
                return Ok(Flushed::Blocked);
            }
            if session.queued == 0 || self.tls.is_handshaking() {
                return Ok(Flushed::All);
            }
            if let Some(b) = session.bufs.as_mut() {
                let mut sealed = 0;
                while sealed < SEAL_ROUND && !b.segs.is_empty() {
                    let n = self.seal(env, b, st)?;
                    session.queued -= n as u64;
                    session.written += n as u64;
                    sealed += n;
                }
                if b.segs.is_empty() {
                    b.out.clear();
                }
            }
        }
    }

    fn shutdown_write(&mut self, _env: &mut TlsEnv, st: &mut ServerStats) -> io::Result<()> {
        self.close_notify(st);
        self.sock.shutdown(Shutdown::Write)
    }

    fn discard(&mut self, buf: &mut [u8], st: &mut ServerStats) -> io::Result<usize> {
        recv(&self.sock, &mut self.rd_ready, self.fin_seen, buf, st)
    }

    fn closing(&mut self, _env: &mut TlsEnv, st: &mut ServerStats) {
        self.close_notify(st);
    }

    fn handshaking(&self) -> bool {
        self.handshaking
    }

    fn refused_plain_http(&self) -> Option<usize> {
        self.plain_http
    }

    fn negotiated(&self) -> Negotiated {
        // ALPN is settled only once the handshake is: a ClientHello split across reads leaves
        // it unknown after the first, and the protocol is fixed once decided.
        if self.tls.is_handshaking() {
            return Negotiated::Pending;
        }
        match self.tls.alpn_protocol() {
            Some(b"h2") => Negotiated::H2,
            _ => Negotiated::Http1,
        }
    }
}

impl TlsTcp {
    /// Gives rustls the next up to `FILE_CHUNK` bytes of the queue, gathered into full records:
    /// the segments (a response head, a DATA frame's header, its body, the next response's
    /// frames) are copied side by side into the thread's chunk buffer and handed over in one
    /// write, since rustls seals at least one record per write (a record costs both sides an
    /// AEAD seal or open and 22 bytes). A file range is read into the same buffer by `pread`.
    /// A large in-memory body at the front is handed over in place, whole records of it up to
    /// a chunk (no copy; the tail joins the next gathering). Returns the bytes taken.
    fn seal(&mut self, env: &mut TlsEnv, b: &mut Bufs, st: &mut ServerStats) -> io::Result<usize> {
        let mut filled = 0;
        while filled < env.chunk.len() {
            let room = env.chunk.len() - filled;
            match b.segs.front_mut() {
                None => break,
                Some(Seg::File { file, offset, len }) => {
                    let want = (*len).min(room as u64) as usize;
                    st.file_reads += 1;
                    let n = match file.read_at(&mut env.chunk[filled..filled + want], *offset) {
                        // The file shrank under us: the promised length cannot be sent.
                        Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    st.file_read_bytes += n as u64;
                    *offset += n as u64;
                    *len -= n as u64;
                    if *len == 0 {
                        b.segs.pop_front();
                    }
                    filled += n;
                }
                Some(_) => {
                    let seg = b.segs.front().expect("a segment");
                    let bytes = b.mem_bytes(seg).expect("an in-memory segment");
                    if filled == 0 && bytes.len() >= 2 * RECORD {
                        let whole = bytes.len().min(FILE_CHUNK) / RECORD * RECORD;
                        self.tls.writer().write_all(&bytes[..whole])?;
                        b.advance(whole);
                        return Ok(whole);
                    }
                    let n = bytes.len().min(room);
                    env.chunk[filled..filled + n].copy_from_slice(&bytes[..n]);
                    b.advance(n);
                    filled += n;
                }
            }
        }
        self.tls.writer().write_all(&env.chunk[..filled])?;
        Ok(filled)
    }
}

impl TlsTcp {
    /// Tells the client no more data follows (so a truncation is told apart from the end),
    /// best effort: a full socket or a gone client just closes.
    fn close_notify(&mut self, st: &mut ServerStats) {
        if self.handshaking {
            return;
        }
        self.tls.send_close_notify();
        let _ = self.send_records(st);
    }

    /// Writes the session's queue as it is, unencrypted: the 400 that answers plain HTTP, which
    /// a plain HTTP client can read (only in-memory segments are ever queued for it).
    fn flush_unencrypted(
        &mut self,
        session: &mut Session,
        st: &mut ServerStats,
    ) -> io::Result<Flushed> {
        let Some(b) = session.bufs.as_mut() else {
            return Ok(Flushed::All);
        };
        while let Some(seg) = b.segs.front() {
            let Some(bytes) = b.mem_bytes(seg) else {
                return Err(io::ErrorKind::InvalidData.into());
            };
            let (_, mut wire) = self.wire(st);
            let n = match wire.write(bytes) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flushed::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            session.queued -= n as u64;
            session.written += n as u64;
            b.advance(n);
        }
        b.out.clear();
        Ok(Flushed::All)
    }
}
