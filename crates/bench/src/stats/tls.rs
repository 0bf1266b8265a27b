//! What a TLS handshake agreed on, as the statistics keep it.

use serde::{Deserialize, Serialize};

/// What a TLS handshake agreed on (rustls's names: `TLSv1_3`, `TLS13_AES_128_GCM_SHA256`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSession {
    pub version: String,
    pub cipher: String,
    /// The key exchange group (`X25519`, `X25519MLKEM768`, ...).
    pub kx: String,
    /// The protocol the server chose by ALPN (`http/1.1`), if any.
    pub alpn: Option<String>,
}

/// A handshake's agreement as rustls names it, without allocating (made a [`TlsSession`] once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsAgreed {
    pub version: &'static str,
    pub cipher: &'static str,
    pub kx: &'static str,
    pub alpn: Option<&'static str>,
}
