//! What a TLS handshake agreed on, as the statistics keep it.

use serde::{Deserialize, Serialize};

/// What a TLS handshake agreed on (rustls's names: `TLSv1_3`, `TLS13_AES_128_GCM_SHA256`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSession {
    /// The protocol version (`TLSv1_3`).
    pub version: String,
    /// The cipher suite (`TLS13_AES_128_GCM_SHA256`).
    pub cipher: String,
    /// The key exchange group (`X25519`, `X25519MLKEM768`, ...).
    pub kx: String,
    /// The protocol the server chose by ALPN (`http/1.1`), if any.
    pub alpn: Option<String>,
    /// It is a resumed handshake's: one of a full handshake takes its place when one comes (a
    /// resumed TLS 1.2 session agrees on no key exchange group: `kx` is `none`).
    pub resumed: bool,
}

impl TlsSession {
    /// Whether `resumed`, a handshake's kind, should replace what is kept (`kept`): nothing
    /// is kept yet, or a resumed handshake's is and this one is full.
    pub fn replaced_by(kept: Option<&TlsSession>, resumed: bool) -> bool {
        kept.is_none_or(|t| t.resumed && !resumed)
    }
}

/// A handshake's agreement as rustls names it, without allocating (made a [`TlsSession`] once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsAgreed {
    /// The protocol version, as in [`TlsSession::version`].
    pub version: &'static str,
    /// The cipher suite, as in [`TlsSession::cipher`].
    pub cipher: &'static str,
    /// The key exchange group, as in [`TlsSession::kx`].
    pub kx: &'static str,
    /// The protocol chosen by ALPN, if any.
    pub alpn: Option<&'static str>,
}
