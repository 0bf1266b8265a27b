//! The settings of both sides: limits with safe defaults, the client's trust store, the
//! server's certificate. Each side's QUIC configuration is built once and shared by all the
//! connections it makes or accepts.

use crate::error::Error;
use crate::server::head_budget::Budget;
use crate::tickets::Period;
use crate::token::{ResetKey, ResetSource};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Handshakes under way on one server past which [`Retry::Flood`] sends Retries by default:
/// far more than a busy thread has at once from real clients (a handshake takes a round
/// trip or two), few enough that their state is small.
pub const DEFAULT_RETRY_HANDSHAKES: usize = 128;

/// The ALPN of HTTP/3 (RFC 9114 3.1): the only protocol either side offers.
const ALPN: &[&[u8]] = &[b"h3"];

/// Limits of one connection (each side announces its own in its transport parameters).
#[derive(Debug, Clone)]
pub struct Limits {
    /// No packet for this long ends the connection (the smaller of both sides' applies).
    pub idle_timeout: Duration,
    /// Concurrent request streams the peer may open (a server's limit on a client).
    pub max_streams: u64,
    /// Bytes the peer may send on one stream before this side reads them (per-stream window).
    pub stream_window: u64,
    /// Bytes the peer may send on all streams of the connection (connection window).
    pub connection_window: u64,
    /// The largest UDP payload this side sends (1,350: fits IPv6 and common tunnels).
    pub max_udp_payload: usize,
    /// The largest header block this side accepts (SETTINGS_MAX_FIELD_SECTION_SIZE).
    pub max_field_section: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            idle_timeout: Duration::from_secs(30),
            max_streams: 100,
            stream_window: 1 << 20,
            connection_window: 10 << 20,
            max_udp_payload: 1350,
            max_field_section: 64 * 1024,
        }
    }
}

/// Which server certificates a client trusts.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// PEM certificates trusted besides the system's roots (flint bench's `--cacert`); a
    /// self-signed server certificate given here is trusted as itself, as curl does.
    pub cacert: Option<PathBuf>,
    /// Check nothing (flint bench's `--insecure`).
    pub insecure: bool,
}

/// A client's QUIC configuration: a TLS context made by the boring crate holding the system's
/// CA store (parsed at once, about 1 MB of heap), as quiche's `Config::new` makes it, to verify
/// servers with. Made here and not by `Config::new`: `Client::connect` sets each connection's
/// verification parameters (an IP address checked as one) through the boring crate's
/// `param_mut`, which asserts a flag (X.509 support) that the boring crate's builder stores in
/// the context's ex data: on a context quiche made itself the flag is absent and it panics.
fn client_quic_config(limits: &Limits) -> Result<quiche::Config, Error> {
    let tls_error = |e: boring::error::ErrorStack| Error::Config {
        what: format!("TLS context: {e}"),
        source: quiche::Error::TlsFail,
    };
    let mut tls =
        boring::ssl::SslContextBuilder::new(boring::ssl::SslMethod::tls()).map_err(tls_error)?;
    tls.set_default_verify_paths().map_err(tls_error)?;
    let c = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, tls).map_err(
        |source| Error::Config {
            what: "QUIC configuration".into(),
            source,
        },
    )?;
    quic_config(c, limits)
}

/// A server's QUIC configuration: its TLS context made bare, without the system's CA store
/// that `Config::new` loads (about 1 MB of heap per context, which a server asking no client
/// certificate never reads), so each event-loop thread's configuration holds little more than
/// the certificate and key. quiche's `accept` takes its configuration `&mut`: one per thread
/// keeps the accept path free of any lock.
fn server_quic_config(limits: &Limits) -> Result<(quiche::Config, Period), Error> {
    let mut bare =
        boring::ssl::SslContextBuilder::new(boring::ssl::SslMethod::tls()).map_err(|e| {
            Error::Config {
                what: format!("TLS context: {e}"),
                source: quiche::Error::TlsFail,
            }
        })?;
    // Session tickets (BoringSSL issues two after every handshake, resumed ones too) sealed
    // with the process's rotating keys, not the context's own: a client resuming lands on
    // whichever thread its port hashes to, whose context must open the ticket another thread
    // issued (`tickets.rs`).
    let period = crate::tickets::install(&mut bare);
    let c = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, bare).map_err(
        |source| Error::Config {
            what: "QUIC configuration".into(),
            source,
        },
    )?;
    Ok((quic_config(c, limits)?, period))
}

/// The peer's connection IDs a side stores, and (as quiche uses it) the paths a connection
/// keeps. quiche keeps every path a connection has left while it still holds the peer's ID
/// used on it (the ID is reused on the new path when no spare one is issued, as here), and a
/// new path past the limit is dropped, unanswered and uncounted (`recv` says nothing of it).
/// The server follows a client past that (`server/paths.rs`: a new address of an IP the
/// client proved takes an old one's path; one of another IP is dropped), so the limit is the paths a connection keeps: 8 makes seven changes of
/// address new paths that quiche validates as it does any (a NAT rebinds after its mapping
/// has been idle past its timeout, so a connection that goes quiet often may have several),
/// at the cost of up to seven more paths a connection (each its congestion and recovery
/// state, kept until the connection ends) and of room for eight of the peer's IDs. The
/// server issues no ID past its first, so a connection is still one entry of the server's
/// map of IDs (each spare ID issued would be another).
pub(crate) const ACTIVE_CONNECTION_ID_LIMIT: u64 = 8;

/// The settings both sides share, on `c`.
fn quic_config(mut c: quiche::Config, limits: &Limits) -> Result<quiche::Config, Error> {
    c.set_application_protos(ALPN)
        .map_err(|source| Error::Config {
            what: "ALPN h3".into(),
            source,
        })?;
    c.set_max_idle_timeout(limits.idle_timeout.as_millis() as u64);
    c.set_max_recv_udp_payload_size(crate::MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(limits.max_udp_payload);
    c.set_initial_max_data(limits.connection_window);
    c.set_initial_max_stream_data_bidi_local(limits.stream_window);
    c.set_initial_max_stream_data_bidi_remote(limits.stream_window);
    // HTTP/3's own unidirectional streams: control, QPACK encoder and decoder (RFC 9114 6.2).
    c.set_initial_max_stream_data_uni(64 * 1024);
    c.set_initial_max_streams_uni(3);
    c.set_initial_max_streams_bidi(limits.max_streams);
    c.set_disable_active_migration(true);
    c.set_active_connection_id_limit(ACTIVE_CONNECTION_ID_LIMIT);
    c.enable_pacing(true);
    Ok(c)
}

/// HTTP/3's settings, made for each connection as its handshake completes (quiche's
/// `h3::Config` is not shared: it is a few words).
pub(crate) fn h3_config(max_field_section: u64) -> Result<quiche::h3::Config, Error> {
    let mut h = quiche::h3::Config::new().map_err(Error::from)?;
    h.set_max_field_section_size(max_field_section);
    Ok(h)
}

fn path_str<'a>(what: &str, path: &'a Path) -> Result<&'a str, Error> {
    path.to_str().ok_or_else(|| Error::Config {
        what: format!("{what} {}: not a UTF-8 path", path.display()),
        source: quiche::Error::TlsFail,
    })
}

/// What ends the first line of each certificate of a PEM file, in the three forms BoringSSL
/// reads (`BEGIN CERTIFICATE`, `BEGIN X509 CERTIFICATE`, `BEGIN TRUSTED CERTIFICATE`).
const CERT_MARK: &[u8] = b"CERTIFICATE-----";

/// What every client connection of a run is made with.
pub struct ClientConfig {
    pub(crate) quic: quiche::Config,
    pub(crate) max_field_section: u64,
}

impl ClientConfig {
    /// Certificates checked against the system's roots plus `trust.cacert` (BoringSSL's
    /// verifier, with the server name given to `Client::connect` checked against the
    /// certificate's names), or not at all with `trust.insecure`. Sessions the server issues
    /// are kept by each connection ([`crate::Client::session`]) for the caller to resume
    /// with; no 0-RTT unless [`ClientConfig::early_data`].
    pub fn new(trust: &Trust, limits: &Limits) -> Result<ClientConfig, Error> {
        let mut quic = client_quic_config(limits)?;
        quic.verify_peer(!trust.insecure);
        if let Some(path) = &trust.cacert {
            // BoringSSL says only that loading failed (quiche's TlsFail): the file's own
            // trouble is told first, as flint's TCP side tells it.
            let file_error = |source| Error::File {
                what: format!("--cacert {}", path.display()),
                source,
            };
            let pem = std::fs::read(path).map_err(file_error)?;
            if !pem.windows(CERT_MARK.len()).any(|w| w == CERT_MARK) {
                return Err(file_error(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "no certificate in it",
                )));
            }
            // Past the mark, BoringSSL's refusal is a certificate it could not read (a body
            // that is not base64 DER): said as the file's trouble, not as TlsFail.
            quic.load_verify_locations_from_file(path_str("--cacert", path)?)
                .map_err(|_| {
                    file_error(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "no certificate BoringSSL can read in it",
                    ))
                })?;
        }
        Ok(ClientConfig {
            quic,
            max_field_section: limits.max_field_section,
        })
    }

    /// 0-RTT: a connection resuming a session whose ticket allows early data may send
    /// requests before its handshake is done ([`crate::Client::can_send`]), in 0-RTT packets
    /// the server may replay-check, accept or reject ([`crate::Client::early_data`]).
    pub fn early_data(mut self) -> ClientConfig {
        self.quic.enable_early_data();
        self
    }
}

/// A server's deadlines besides QUIC's idle timeout (which any packet, a PING included,
/// restarts): those of flint serve's HTTP/1.1 and HTTP/2 connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A handshake (a 0-RTT one too, whose HTTP/3 is set up before it is done), and a request
    /// stream's header block from the stream's first byte, must complete within this; a
    /// stream past it is reset (H3_REQUEST_INCOMPLETE), a handshake closed.
    pub header: Duration,
    /// A connection done with its handshake (a 0-RTT connection's counts from the end of it)
    /// and with no whole request under way (a stream still in its header block does not
    /// count) for this long gets a GOAWAY naming the first stream not seen, then a
    /// CONNECTION_CLOSE with H3_NO_ERROR once every stream seen before it is done with (a
    /// request received in the turn the deadline is acted on is answered; an unfinished
    /// header block is not waited for), however often its client PINGs.
    pub keep_alive: Duration,
    /// A connection whose responses make no progress for this long (nothing more taken by
    /// flow control, no stream acknowledged whole: a client that does not acknowledge or
    /// does not open its windows) has them reset and is closed. It runs only while bytes
    /// wait on the client: a slow upload whose response is done meets only `body`.
    pub send: Duration,
    /// A request body is due within this of its head, plus a second per `body_min_rate`
    /// bytes the server has read of it, and with no longer gap between its bytes (flint
    /// serve's `body_timeout_ms`, as for HTTP/1.1 and HTTP/2); past it the server stops
    /// reading it: STOP_SENDING with H3_NO_ERROR when the response has gone whole to QUIC
    /// (RFC 9114 4.1.1), else the stream reset both ways with H3_REQUEST_INCOMPLETE (and a
    /// `Reset` event).
    pub body: Duration,
    /// Bytes a second a request body must average to earn time past `body`; 0 leaves only
    /// the gap.
    pub body_min_rate: u64,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            header: Duration::from_secs(10),
            keep_alive: Duration::from_secs(60),
            send: Duration::from_secs(60),
            body: Duration::from_secs(10),
            body_min_rate: 500,
        }
    }
}

/// When a server answers a client's Initial with a Retry (RFC 9000 8.1.2) to check that the
/// client is at its address before any state is kept for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Never (every handshake a round trip shorter; a flood of spoofed Initials costs state).
    Never,
    /// When this many handshakes are under way at once (a flood, most likely from spoofed
    /// addresses, which never come back with the token), or once connections (handshaking
    /// or done) hold half of `max_connections` (so unvalidated connections never take more
    /// than half the slots, however many real ones hold the rest): no state for spoofed
    /// Initials, no round trip more for anyone otherwise.
    Flood(usize),
    /// For every connection.
    Always,
}

/// What request header blocks not whole yet may hold on one server (one thread's socket)
/// by default, bytes: 32 MiB, a connection's share 4 MiB (about 100 streams of 40 KB).
pub const DEFAULT_HEADER_BUDGET: u64 = 32 << 20;

/// What every connection a server accepts is made with.
pub struct ServerConfig {
    pub(crate) quic: quiche::Config,
    pub(crate) max_field_section: u64,
    /// QUIC's idle timeout as this side sets it (the connection's is the shorter of both).
    pub(crate) idle_timeout: Duration,
    /// Connections at once; an Initial past it is dropped (the client retries, then times out).
    pub(crate) max_connections: usize,
    /// Connections at once from one IP address (or IPv6 /64) whose client is known to be
    /// there; past it an Initial without a token gets a Retry, and a validated one is refused.
    pub(crate) max_per_address: usize,
    pub(crate) timeouts: Timeouts,
    pub(crate) retry: Retry,
    /// How long a Retry token is good for.
    pub(crate) token_lifetime: Duration,
    /// The index of the thread (socket) serving with it, written in the connection IDs it
    /// issues: a thread answers a stateless reset only for its own IDs.
    pub(crate) thread: u16,
    /// What the stateless reset tokens' key is derived from (`token.rs`): the TLS private key
    /// (with the address each server is bound to), or a secret given; so a restarted
    /// server's reset ends the connections its predecessor held.
    pub(crate) reset: ResetSource,
    /// The session ticket key's rotation period, read by the TLS context's ticket callback.
    ticket_period: Period,
    /// What unfinished request header blocks may hold (`server/head_budget.rs`).
    pub(crate) head_budget: crate::server::head_budget::Budget,
}

/// Where the stateless reset key of a server whose TLS private key is the PEM file `key`
/// comes from: the key's DER encoding (the same key in another PEM layout gives the same
/// tokens) and the host name; each server adds the address it is bound to.
fn reset_source_of(key: &Path) -> Result<ResetSource, Error> {
    let what = || format!("key {}", key.display());
    let pem = std::fs::read(key).map_err(|source| Error::File {
        what: what(),
        source,
    })?;
    let der = boring::pkey::PKey::private_key_from_pem(&pem)
        .and_then(|k| k.private_key_to_der())
        .map_err(|_| Error::Config {
            what: what(),
            source: quiche::Error::TlsFail,
        })?;
    Ok(ResetSource::tls_key(&der, &host_name()))
}

/// The machine's host name (Linux's, as the kernel holds it), or nothing if it cannot be read:
/// the same across a restart, and told apart between the hosts of a fleet bound to the same
/// wildcard address with the same certificate.
fn host_name() -> Vec<u8> {
    std::fs::read("/proc/sys/kernel/hostname")
        .map(|mut name| {
            name.truncate(name.trim_ascii_end().len());
            name
        })
        .unwrap_or_default()
}

impl ServerConfig {
    /// A server presenting the PEM certificate chain `cert` with its private key `key`.
    pub fn new(cert: &Path, key: &Path, limits: &Limits) -> Result<ServerConfig, Error> {
        let (mut quic, ticket_period) = server_quic_config(limits)?;
        quic.load_cert_chain_from_pem_file(path_str("certificate", cert)?)
            .map_err(|source| Error::Config {
                what: format!("certificate {}", cert.display()),
                source,
            })?;
        quic.load_priv_key_from_pem_file(path_str("key", key)?)
            .map_err(|source| Error::Config {
                what: format!("key {}", key.display()),
                source,
            })?;
        // RFC 9000 8.1: at most three times what an unvalidated address sent us.
        quic.set_max_amplification_factor(3);
        crate::token::init();
        let reset = reset_source_of(key)?;
        Ok(ServerConfig {
            quic,
            max_field_section: limits.max_field_section,
            idle_timeout: limits.idle_timeout,
            max_connections: 10_000,
            max_per_address: 1_000,
            timeouts: Timeouts::default(),
            retry: Retry::Flood(DEFAULT_RETRY_HANDSHAKES),
            token_lifetime: Duration::from_secs(10),
            thread: 0,
            reset,
            ticket_period,
            head_budget: Budget::new(DEFAULT_HEADER_BUDGET, limits.max_field_section),
        })
    }

    /// Derives the stateless reset tokens' key from `secret` instead of from the TLS private
    /// key and the address bound (as nginx's `quic_stateless_reset_token_key`): servers given
    /// the same secret, in this process or another, at any address, make the same token for
    /// a connection ID. For a fleet that routes by connection ID, whose servers end each
    /// other's connections on purpose; anyone who sees a connection's ID can get its token
    /// from any of them (RFC 9000 21.11), so give one secret only to servers a client's
    /// packets may reach for the same connection.
    pub fn stateless_reset_secret(mut self, secret: &[u8]) -> ServerConfig {
        self.reset = ResetSource::Secret(ResetKey::derive(secret));
        self
    }

    /// How often the session ticket key changes (default [`crate::DEFAULT_TICKET_KEY_PERIOD`],
    /// rustls's 6 hours): a ticket resumes in the period it was issued in and the next, so it
    /// lives at most twice this. Process-wide keys, derived from the period's number and
    /// length: servers of the process with different periods open none of each other's
    /// tickets.
    pub fn ticket_key_period(self, period: Duration) -> ServerConfig {
        self.ticket_period.set(period);
        self
    }

    /// Counts the session ticket key periods on `clock` (default: the process's time, no
    /// offset). flint serve hands every thread of one server its server's clock, so that a
    /// test moving one server's periods on (`TicketClock::shift`) moves no other
    /// server's. The first clock given stays.
    pub fn ticket_clock(self, clock: &crate::TicketClock) -> ServerConfig {
        self.ticket_period.count_on(clock);
        self
    }

    /// Accepts 0-RTT (default off): the session tickets issued allow early data, and a client
    /// resuming with one may send requests before its handshake is done. Such a request may
    /// be a replay (RFC 9001 9.2: anyone who saw the client's first flight can send it again,
    /// to any thread or process sharing the ticket key): the caller learns it with
    /// [`crate::Server::in_early_data`] and answers only what is safe to run twice (RFC 8470).
    pub fn early_data(mut self, on: bool) -> ServerConfig {
        if on {
            self.quic.enable_early_data();
        }
        self
    }

    /// At most `n` validated connections at once from one IP address or IPv6 /64 (default
    /// 1,000).
    pub fn max_per_address(mut self, n: usize) -> ServerConfig {
        self.max_per_address = n;
        self
    }

    /// When to send a Retry (default [`Retry::Flood`] at 128 handshakes under way, or once
    /// connections hold half of [`ServerConfig::max_connections`]).
    pub fn retry(mut self, retry: Retry) -> ServerConfig {
        self.retry = retry;
        self
    }

    /// How long a Retry token is good for (default 10 s: a client sends its next Initial
    /// within a round trip).
    pub fn token_lifetime(mut self, lifetime: Duration) -> ServerConfig {
        self.token_lifetime = lifetime;
        self
    }

    /// These deadlines (default [`Timeouts::default`]).
    pub fn timeouts(mut self, timeouts: Timeouts) -> ServerConfig {
        self.timeouts = timeouts;
        self
    }

    /// Serves as thread `index` of those sharing the port (default 0). Each thread of a
    /// `SO_REUSEPORT` group must have its own: a packet for another thread's connection (a
    /// client whose address changed, or a sender that saw the connection's ID) is dropped,
    /// never answered with that connection's stateless reset, which only the thread holding
    /// it may send (RFC 9000 21.11).
    pub fn thread(mut self, index: u16) -> ServerConfig {
        self.thread = index;
        self
    }

    /// At most `bytes` held at once in request header blocks not whole yet, over every
    /// connection (default [`DEFAULT_HEADER_BUDGET`]); a connection's share is an eighth of
    /// it (each at least one whole block of the header block limit). A stream whose bytes
    /// would pass either is reset with H3_REQUEST_REJECTED (RFC 9114 4.1.1: not processed, the
    /// client may send it again), counted in `header_budget_refused`.
    pub fn header_budget(mut self, bytes: u64) -> ServerConfig {
        self.head_budget = Budget::new(bytes, self.max_field_section);
        self
    }

    /// At most `n` connections at once (default 10,000).
    pub fn max_connections(mut self, n: usize) -> ServerConfig {
        self.max_connections = n;
        self
    }
}
