//! What a client asks of TLS.

use std::path::PathBuf;

/// HTTPS options. The defaults: the system's roots, every connection a full handshake, TLS 1.2
/// or 1.3 as the server prefers, the cipher suites in browsers' order (AES-128-GCM first).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    /// PEM certificates trusted beside the system's roots.
    pub cacert: Option<PathBuf>,
    /// Accept any certificate (the reports say so).
    pub insecure: bool,
    /// Resume sessions (tickets or PSK) instead of a full handshake per connection.
    pub resume: bool,
    /// Only this version.
    pub version: Option<TlsVersion>,
    /// The cipher suites offered, in this order (rustls's names); `None`: browsers' order.
    #[serde(default)]
    pub ciphers: Option<Vec<String>>,
}

/// A TLS version a client can be held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TlsVersion {
    /// TLS 1.2 only.
    #[serde(rename = "1.2")]
    Tls12,
    /// TLS 1.3 only.
    #[serde(rename = "1.3")]
    Tls13,
}

impl TlsVersion {
    /// `1.2` or `1.3`, as the options spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "1.2",
            TlsVersion::Tls13 => "1.3",
        }
    }
}
