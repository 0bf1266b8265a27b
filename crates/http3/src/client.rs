//! One client connection: QUIC's handshake, then HTTP/3 requests on its streams. No I/O: the
//! caller's loop hands it each datagram received (`recv`), sends each it gives (`send`), and
//! calls `on_deadline` when `deadline` has passed.

use crate::config::ClientConfig;
use crate::error::{Closed, Error};
use crate::fields::{Field, Fields};
use crate::response_head::{self, Block};
use crate::{cid, Datagram, Stats};
use quiche::h3;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

/// What happened on a client connection, one event at a time from [`Client::poll`].
#[derive(Debug)]
pub enum ClientEvent {
    /// A response's head (an interim one, 1xx, may come first). `end`: no body follows.
    Response {
        /// The request's stream.
        stream: u64,
        /// Its `:status`.
        status: u16,
        /// The body length its `content-length` announces, if it has one.
        length: Option<u64>,
        /// Its fields, `:status` included.
        fields: Fields,
        /// The stream ended with the head.
        end: bool,
    },
    /// Trailers after a response's body.
    Trailers {
        /// The request's stream.
        stream: u64,
        /// The trailer fields.
        fields: Fields,
    },
    /// Body bytes are waiting on `stream`: read them with [`Client::recv_body`] until it
    /// returns 0 (the event comes again only once they have been read).
    Data {
        /// The request's stream.
        stream: u64,
    },
    /// The response on `stream` is complete.
    Finished {
        /// The request's stream.
        stream: u64,
    },
    /// A header block on `stream` was malformed (RFC 9114 4.1.2: a pseudo-header other than
    /// one `:status` first, a status outside 100 to 599, an uppercase or connection-specific
    /// field name, a `content-length` that is not one number; `response_head.rs`): the stream
    /// has been reset both ways with H3_MESSAGE_ERROR, a stream error, and the connection goes
    /// on.
    Malformed {
        /// The request's stream.
        stream: u64,
    },
    /// The server reset `stream` (an HTTP/3 error code: `crate::h3_code_name`).
    Reset {
        /// The request's stream.
        stream: u64,
        /// The HTTP/3 error code.
        code: u64,
    },
    /// The server is going away: streams from `id` on will not be processed.
    GoAway {
        /// The first stream ID the server will not process.
        id: u64,
    },
}

/// What became of a connection's 0-RTT (as [`Client::early_data`] tells).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyData {
    /// No request went in 0-RTT: none was sent before the handshake was done, or the
    /// session offered allows no early data (or none was offered).
    NotSent,
    /// Requests went in 0-RTT; the handshake is not done yet.
    Sent,
    /// The server took them: answered without a round trip more.
    Accepted,
    /// The server refused 0-RTT (its ticket key changed, early data off, a transport
    /// parameter lowered): QUIC sends the requests again once the handshake is done.
    Rejected,
}

/// Why this side refused the server's certificate, as BoringSSL's verifier said: what the TLS
/// alert of a failed handshake (`Closed::Handshake`: 48 unknown_ca, 42 bad_certificate...)
/// says in fewer words, for a report to say what is wrong and what to do, as over TLS on TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertificateRefusal {
    /// The chain ends at no trusted root (a self-signed certificate too).
    UnknownIssuer,
    /// The certificate does not name the server's host name or address.
    NameMismatch,
    /// Its validity ended before now.
    Expired,
    /// Its validity starts after now.
    NotYetValid,
    /// Any other refusal (a bad signature, a purpose, a CA certificate as the server's own).
    Other,
}

/// BoringSSL's `ssl_early_data_accepted`, as quiche's `early_data_reason` gives it.
const EARLY_DATA_ACCEPTED: u32 = 2;

/// One HTTP/3 connection to a server.
pub struct Client {
    quic: quiche::Connection,
    /// Set up once the handshake is done.
    h3: Option<h3::Connection>,
    max_field_section: u64,
    local: SocketAddr,
    started: Instant,
    handshake_done: Option<Instant>,
    /// A request was sent before the handshake was done (in 0-RTT).
    sent_early: bool,
}

impl Client {
    /// A connection from `local` to `peer`, whose certificate must name `server_name` (sent
    /// as SNI too), or an IP address (as `127.0.0.1` or `::1`, no brackets: checked against
    /// the certificate's addresses, no SNI sent). Nothing is sent until the first [`Client::send`].
    pub fn connect(
        config: &mut ClientConfig,
        server_name: &str,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> Result<Client, Error> {
        Client::resume(config, server_name, local, peer, &[])
    }

    /// As [`Client::connect`], offering `session` (what [`Client::session`] gave on an earlier
    /// connection to the same server) to resume: an abbreviated handshake if the server still
    /// opens its ticket, else a full one. Empty or unreadable bytes: a full handshake.
    pub fn resume(
        config: &mut ClientConfig,
        server_name: &str,
        local: SocketAddr,
        peer: SocketAddr,
        session: &[u8],
    ) -> Result<Client, Error> {
        let id = cid::random();
        let scid = quiche::ConnectionId::from_ref(&id);
        let mut quic = match server_name.parse::<IpAddr>() {
            // An address is no host name: RFC 6066 3 sends no SNI for it, and the certificate
            // must name it as an address (an iPAddress entry), which BoringSSL checks only when
            // told the name is one; given as a host name it is matched against the DNS names
            // and refused (bad_certificate) even by a certificate that names the address.
            Ok(ip) => {
                let mut quic = quiche::connect(None, &scid, local, peer, &mut config.quic)?;
                AsMut::<boring::ssl::SslRef>::as_mut(&mut quic)
                    .param_mut()
                    .set_ip(ip)
                    .map_err(|e| Error::Config {
                        what: format!("the certificate's address {ip}: {e}"),
                        source: quiche::Error::TlsFail,
                    })?;
                quic
            }
            Err(_) => quiche::connect(Some(server_name), &scid, local, peer, &mut config.quic)?,
        };
        if !session.is_empty() {
            // A session that does not parse is not offered: the handshake is a full one.
            let _ = quic.set_session(session);
        }
        Ok(Client {
            quic,
            h3: None,
            max_field_section: config.max_field_section,
            local,
            started: Instant::now(),
            handshake_done: None,
            sent_early: false,
        })
    }

    /// A datagram received from `from`. A packet that cannot be decrypted or parsed is
    /// dropped by QUIC (counted in `stats`); an error here means the connection has failed
    /// (see [`Client::closed`]).
    pub fn recv(&mut self, datagram: &mut [u8], from: SocketAddr) -> Result<(), Error> {
        let info = quiche::RecvInfo {
            from,
            to: self.local,
        };
        match self.quic.recv(datagram, info) {
            Ok(_) | Err(quiche::Error::Done) => {}
            Err(e) => return Err(e.into()),
        }
        if self.handshake_done.is_none() && self.quic.is_established() {
            self.handshake_done = Some(Instant::now());
        }
        self.set_up_h3()
    }

    /// HTTP/3 set up once the handshake is done, or as soon as it may send early data.
    fn set_up_h3(&mut self) -> Result<(), Error> {
        if self.h3.is_none() && (self.quic.is_established() || self.quic.is_in_early_data()) {
            let config = crate::config::h3_config(self.max_field_section)?;
            self.h3 = Some(h3::Connection::with_transport(&mut self.quic, &config)?);
        }
        Ok(())
    }

    /// The next datagram to send, written into `out` (at least [`crate::MAX_DATAGRAM`]
    /// bytes), or None when there is nothing to send now.
    pub fn send(&mut self, out: &mut [u8]) -> Option<Datagram> {
        let sent = match self.quic.send(out) {
            Ok((len, info)) => Some(Datagram {
                len,
                to: info.to,
                at: info.at,
            }),
            Err(_) => None,
        };
        // The Initial written, a resumed session that allows it has 0-RTT keys: HTTP/3's
        // streams may go now (a failure here is the connection's, as `recv` would meet it).
        if self.h3.is_none() && self.quic.is_in_early_data() {
            let _ = self.set_up_h3();
        }
        sent
    }

    /// When `on_deadline` must be called (loss detection, acknowledgements, idle timeout).
    pub fn deadline(&self) -> Option<Instant> {
        self.quic.timeout_instant()
    }

    /// The deadline has passed: retransmit, or close on idle timeout.
    pub fn on_deadline(&mut self) {
        self.quic.on_timeout();
    }

    /// A PING on the next `send`: the connection stays alive past both sides' idle timeouts
    /// with nothing else to send (as a browser keeping a connection open does).
    pub fn ping(&mut self) {
        let _ = self.quic.send_ack_eliciting();
    }

    /// The handshake is done and HTTP/3 set up.
    pub fn is_ready(&self) -> bool {
        self.h3.is_some() && self.handshake_done.is_some() && !self.quic.is_closed()
    }

    /// Requests may be sent: the handshake is done, or (with
    /// [`ClientConfig::early_data`](crate::ClientConfig::early_data) and a session that
    /// allows it) the first flight is out and requests go in 0-RTT.
    pub fn can_send(&self) -> bool {
        self.h3.is_some() && !self.quic.is_closed()
    }

    /// Whether requests went in 0-RTT, and what the server made of them (known once the
    /// handshake is done).
    pub fn early_data(&self) -> EarlyData {
        match (self.sent_early, self.handshake_done.is_some()) {
            (false, _) => EarlyData::NotSent,
            (true, false) => EarlyData::Sent,
            (true, true) if self.quic.early_data_reason() == EARLY_DATA_ACCEPTED => {
                EarlyData::Accepted
            }
            (true, true) => EarlyData::Rejected,
        }
    }

    /// How long the handshake took (from `connect` to the connection's establishment).
    pub fn handshake_time(&self) -> Option<std::time::Duration> {
        self.handshake_done.map(|t| t - self.started)
    }

    /// The session the server gave for resuming (its latest ticket and transport
    /// parameters), once one has come (after the handshake): for [`Client::resume`].
    pub fn session(&self) -> Option<&[u8]> {
        self.quic.session()
    }

    /// The handshake resumed a session (the server opened the ticket offered).
    pub fn is_resumed(&self) -> bool {
        self.quic.is_resumed()
    }

    /// Request streams the server's limit still allows.
    pub fn streams_left(&self) -> u64 {
        self.quic.peer_streams_left_bidi()
    }

    /// A request: `fields` are the pseudo-headers (`:method`, `:scheme`, `:authority`,
    /// `:path`) then the others, lowercase. `end`: no body follows (a GET); else send it with
    /// `send_body`. Returns the request's stream.
    pub fn send_request(&mut self, fields: &[Field<'_>], end: bool) -> Result<u64, Error> {
        let h3 = self.h3.as_mut().ok_or(Error::NotReady)?;
        let stream = h3.send_request(&mut self.quic, fields, end)?;
        self.sent_early |= self.handshake_done.is_none();
        Ok(stream)
    }

    /// Some of `body` on `stream` (how much flow control took; 0: none now); `end` ends the
    /// request once all of `body` is taken.
    pub fn send_body(&mut self, stream: u64, body: &[u8], end: bool) -> Result<usize, Error> {
        let h3 = self.h3.as_mut().ok_or(Error::NotReady)?;
        match h3.send_body(&mut self.quic, stream, body, end) {
            Ok(n) => Ok(n),
            Err(h3::Error::Done) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// The next event, or None when there is none until more datagrams arrive.
    pub fn poll(&mut self) -> Option<ClientEvent> {
        let h3 = self.h3.as_mut()?;
        loop {
            let (stream, event) = match h3.poll(&mut self.quic) {
                Ok(e) => e,
                Err(h3::Error::Done) => return None,
                // HTTP/3 closed the connection for it (a protocol error by the server): the
                // connection's end says which.
                Err(_) => return None,
            };
            return Some(match event {
                h3::Event::Headers { list, more_frames } => {
                    let fields = Fields(list);
                    match response_head::judge(fields.iter()) {
                        Block::Head { status, length } => ClientEvent::Response {
                            stream,
                            status,
                            length,
                            fields,
                            end: !more_frames,
                        },
                        Block::Trailers => ClientEvent::Trailers { stream, fields },
                        Block::Malformed => {
                            let _ = self.reset(stream, crate::H3_MESSAGE_ERROR);
                            ClientEvent::Malformed { stream }
                        }
                    }
                }
                h3::Event::Data => ClientEvent::Data { stream },
                h3::Event::Finished => ClientEvent::Finished { stream },
                h3::Event::Reset(code) => ClientEvent::Reset { stream, code },
                h3::Event::GoAway => ClientEvent::GoAway { id: stream },
                h3::Event::PriorityUpdate => continue,
            });
        }
    }

    /// Body bytes of `stream` into `buf`: how many (0: none waiting now).
    pub fn recv_body(&mut self, stream: u64, buf: &mut [u8]) -> Result<usize, Error> {
        let h3 = self.h3.as_mut().ok_or(Error::NotReady)?;
        match h3.recv_body(&mut self.quic, stream, buf) {
            Ok(n) => Ok(n),
            Err(h3::Error::Done) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Cancels `stream` both ways (RESET_STREAM and STOP_SENDING with `code`, usually
    /// H3_REQUEST_CANCELLED, 0x10c).
    pub fn reset(&mut self, stream: u64, code: u64) -> Result<(), Error> {
        for dir in [quiche::Shutdown::Read, quiche::Shutdown::Write] {
            match self.quic.stream_shutdown(stream, dir, code) {
                Ok(()) | Err(quiche::Error::Done) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Gives up sending the rest of `stream`'s request (RESET_STREAM with `code`, usually
    /// H3_REQUEST_CANCELLED): for a body the server answered before it had it all. The
    /// response's side is left as it is; without this the stream would stay half-open, holding
    /// one of the server's streams until the server stops it.
    pub fn reset_request(&mut self, stream: u64, code: u64) -> Result<(), Error> {
        match self
            .quic
            .stream_shutdown(stream, quiche::Shutdown::Write, code)
        {
            Ok(()) | Err(quiche::Error::Done) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Asks the server to stop sending `stream`'s response (STOP_SENDING with `code`); the
    /// request's own side stays open.
    pub fn stop_sending(&mut self, stream: u64, code: u64) -> Result<(), Error> {
        match self
            .quic
            .stream_shutdown(stream, quiche::Shutdown::Read, code)
        {
            Ok(()) | Err(quiche::Error::Done) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Closes the connection with an HTTP/3 code (H3_NO_ERROR, 0x100, for a clean end).
    pub fn close(&mut self, code: u64, reason: &[u8]) {
        // Done: already closing.
        let _ = self.quic.close(true, code, reason);
    }

    /// The connection is over (closed, timed out, or failed), or draining after a
    /// CONNECTION_CLOSE (RFC 9000 10.2.2: nothing more is sent, and a stream opened now would
    /// never leave): nothing more to send or poll.
    pub fn is_closed(&self) -> bool {
        self.quic.is_closed() || self.quic.is_draining()
    }

    /// Why the connection ended (once `is_closed`).
    pub fn closed(&self) -> Option<Closed> {
        self.is_closed().then(|| Closed::of(&self.quic))
    }

    /// Why this side refused the server's certificate, if it did (the verifier's result, kept
    /// once the handshake has failed on it); None for a certificate accepted or not yet seen.
    pub fn certificate_refusal(&mut self) -> Option<CertificateRefusal> {
        use boring::x509::X509VerifyError as E;
        let error = AsMut::<boring::ssl::SslRef>::as_mut(&mut self.quic)
            .verify_result()
            .err()?;
        Some(match error {
            E::UNABLE_TO_GET_ISSUER_CERT
            | E::UNABLE_TO_GET_ISSUER_CERT_LOCALLY
            | E::UNABLE_TO_VERIFY_LEAF_SIGNATURE
            | E::DEPTH_ZERO_SELF_SIGNED_CERT
            | E::SELF_SIGNED_CERT_IN_CHAIN => CertificateRefusal::UnknownIssuer,
            E::HOSTNAME_MISMATCH | E::IP_ADDRESS_MISMATCH => CertificateRefusal::NameMismatch,
            E::CERT_HAS_EXPIRED => CertificateRefusal::Expired,
            E::CERT_NOT_YET_VALID => CertificateRefusal::NotYetValid,
            _ => CertificateRefusal::Other,
        })
    }

    /// The connection ID the client's packets carry now: the server's (a flint serve's names
    /// the thread holding the connection in its first two bytes, big-endian).
    pub fn destination_id(&self) -> Vec<u8> {
        self.quic.destination_id().to_vec()
    }

    /// Packets and bytes so far.
    pub fn stats(&self) -> Stats {
        Stats::of(&self.quic)
    }
}
