//! What can go wrong, and why a connection ended.

use std::fmt;

/// An error of a call into a connection (not a connection's end: see [`Closed`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration the TLS library or QUIC refused (a certificate file, a key, a limit).
    #[error("{what}: {source}")]
    Config {
        /// What was refused (`certificate /path`, `QUIC configuration`).
        what: String,
        /// quiche's reason.
        source: quiche::Error,
    },
    /// A file the configuration names could not be read or holds nothing usable (flint
    /// bench's `--cacert`).
    #[error("{what}: {source}")]
    File {
        /// Which file (`--cacert /path`).
        what: String,
        /// Why: the system's reason, or what the file lacks.
        source: std::io::Error,
    },
    /// QUIC refused the call (the connection is closed, a stream is in the wrong state).
    #[error("QUIC: {0}")]
    Quic(#[from] quiche::Error),
    /// HTTP/3 refused the call (a stream that is not a request, a field list QPACK refused).
    #[error("HTTP/3: {0}")]
    H3(quiche::h3::Error),
    /// The handshake is not done yet: HTTP/3 cannot be spoken before it.
    #[error("the connection is not ready for requests yet (handshake under way)")]
    NotReady,
    /// The peer's stream limit is reached: wait for a stream to end.
    #[error("no stream left: the peer's limit on concurrent streams is reached")]
    NoStream,
    /// The peer's flow control leaves no room for the header block now: the request is told
    /// `Writable` once there is.
    #[error("the stream's flow-control window has no room for the header block yet")]
    Blocked,
    /// More fields than [`crate::MAX_FIELDS`].
    #[error("more than {} fields in one header block", crate::MAX_FIELDS)]
    TooManyFields,
    /// The request's connection has ended (or its stream has), or the id is stale.
    #[error("no such request: its connection or stream has ended")]
    Gone,
}

impl From<quiche::h3::Error> for Error {
    fn from(e: quiche::h3::Error) -> Error {
        match e {
            quiche::h3::Error::StreamBlocked => Error::Blocked,
            quiche::h3::Error::TransportError(quiche::Error::StreamLimit) => Error::NoStream,
            quiche::h3::Error::TransportError(q) => Error::Quic(q),
            other => Error::H3(other),
        }
    }
}

/// Why a connection ended, by kind (each a separate error count for a load generator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// No packet for the idle timeout (the smaller of both sides' `max_idle_timeout`).
    IdleTimeout,
    /// The handshake failed on a TLS alert (0x100 + the alert in a CONNECTION_CLOSE): a
    /// certificate refused by either side, no common ALPN or cipher suite.
    Handshake {
        /// The TLS alert (RFC 8446 6: 42 bad_certificate, 48 unknown_ca...; [`crate::alert_name`]).
        alert: u8,
        /// The peer sent the alert (else this side did).
        by_peer: bool,
    },
    /// A CONNECTION_CLOSE from the peer, or one this side sent (an error it found, or the
    /// application's own `close`): the code is HTTP/3's (`app`) or QUIC's.
    Error {
        /// The peer closed (else this side did).
        by_peer: bool,
        /// The code is HTTP/3's ([`crate::h3_code_name`]), else QUIC's ([`crate::quic_code_name`]).
        app: bool,
        /// The error code.
        code: u64,
        /// The reason phrase the close carried, as text (lossy UTF-8), often empty.
        reason: String,
    },
    /// Closed with no error recorded (a close sent with none, a stateless end).
    Quietly,
}

impl Closed {
    /// How `conn` ended (call once `is_closed()`).
    pub(crate) fn of(conn: &quiche::Connection) -> Closed {
        if conn.is_timed_out() {
            return Closed::IdleTimeout;
        }
        let (error, by_peer) = match (conn.peer_error(), conn.local_error()) {
            (Some(e), _) => (e, true),
            (None, Some(e)) => (e, false),
            (None, None) => return Closed::Quietly,
        };
        if !error.is_app && (0x100..0x200).contains(&error.error_code) {
            return Closed::Handshake {
                alert: (error.error_code - 0x100) as u8,
                by_peer,
            };
        }
        Closed::Error {
            by_peer,
            app: error.is_app,
            code: error.error_code,
            reason: String::from_utf8_lossy(&error.reason).into_owned(),
        }
    }

    /// Whether this is a clean end (no error: NO_ERROR or H3_NO_ERROR, or none recorded).
    pub fn is_clean(&self) -> bool {
        match self {
            Closed::Quietly => true,
            Closed::Error { app, code, .. } => (*app && *code == 0x100) || (!*app && *code == 0),
            _ => false,
        }
    }
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Closed::IdleTimeout => f.write_str("idle timeout"),
            Closed::Handshake { alert, by_peer } => write!(
                f,
                "handshake failed: TLS alert {alert} ({}) {}",
                alert_name(*alert),
                if *by_peer { "from the peer" } else { "sent" }
            ),
            Closed::Error {
                by_peer,
                app,
                code,
                reason,
            } => {
                let name = if *app {
                    h3_code_name(*code)
                } else {
                    quic_code_name(*code)
                };
                write!(
                    f,
                    "connection closed {} with {name} (0x{code:x})",
                    if *by_peer { "by the peer" } else { "here" }
                )?;
                if !reason.is_empty() {
                    write!(f, ": {reason}")?;
                }
                Ok(())
            }
            Closed::Quietly => f.write_str("closed"),
        }
    }
}

/// The name of a TLS alert (RFC 8446 6, and RFC 7301's for ALPN).
pub fn alert_name(alert: u8) -> &'static str {
    match alert {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        109 => "missing_extension",
        110 => "unsupported_extension",
        112 => "unrecognized_name",
        116 => "certificate_required",
        120 => "no_application_protocol",
        _ => "unknown alert",
    }
}

/// The name of a QUIC transport error code (RFC 9000 20.1).
pub fn quic_code_name(code: u64) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "INTERNAL_ERROR",
        0x2 => "CONNECTION_REFUSED",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "STREAM_LIMIT_ERROR",
        0x5 => "STREAM_STATE_ERROR",
        0x6 => "FINAL_SIZE_ERROR",
        0x7 => "FRAME_ENCODING_ERROR",
        0x8 => "TRANSPORT_PARAMETER_ERROR",
        0x9 => "CONNECTION_ID_LIMIT_ERROR",
        0xa => "PROTOCOL_VIOLATION",
        0xb => "INVALID_TOKEN",
        0xc => "APPLICATION_ERROR",
        0xd => "CRYPTO_BUFFER_EXCEEDED",
        0xe => "KEY_UPDATE_ERROR",
        0xf => "AEAD_LIMIT_REACHED",
        0x10 => "NO_VIABLE_PATH",
        0x100..=0x1ff => "CRYPTO_ERROR",
        _ => "unknown transport error",
    }
}

/// The name of an HTTP/3 or QPACK error code (RFC 9114 8.1, RFC 9204 6).
pub fn h3_code_name(code: u64) -> &'static str {
    match code {
        0x100 => "H3_NO_ERROR",
        0x101 => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        0x103 => "H3_STREAM_CREATION_ERROR",
        0x104 => "H3_CLOSED_CRITICAL_STREAM",
        0x105 => "H3_FRAME_UNEXPECTED",
        0x106 => "H3_FRAME_ERROR",
        0x107 => "H3_EXCESSIVE_LOAD",
        0x108 => "H3_ID_ERROR",
        0x109 => "H3_SETTINGS_ERROR",
        0x10a => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        0x10c => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        0x10e => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        0x200 => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => "unknown application error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_failure_names_its_alert() {
        let c = Closed::Handshake {
            alert: 48,
            by_peer: false,
        };
        assert_eq!(
            c.to_string(),
            "handshake failed: TLS alert 48 (unknown_ca) sent"
        );
        assert!(!c.is_clean());
    }

    #[test]
    fn codes_have_names_and_clean_ends_are_told_apart() {
        let c = Closed::Error {
            by_peer: true,
            app: true,
            code: 0x10c,
            reason: "bye".into(),
        };
        assert_eq!(
            c.to_string(),
            "connection closed by the peer with H3_REQUEST_CANCELLED (0x10c): bye"
        );
        assert!(!c.is_clean());
        let clean = Closed::Error {
            by_peer: false,
            app: true,
            code: 0x100,
            reason: String::new(),
        };
        assert!(clean.is_clean());
        assert_eq!(quic_code_name(0xa), "PROTOCOL_VIOLATION");
    }
}
