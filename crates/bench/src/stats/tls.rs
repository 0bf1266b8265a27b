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
