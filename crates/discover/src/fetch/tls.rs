//! The TLS client configuration: `flint bench`'s own ([`bench::transport::client_config`]), so
//! that both trust, pin and refuse certificates alike, with the same messages: rustls on
//! aws-lc-rs (the provider bench and serve use, so the binary carries one crypto library), the
//! system's roots plus `--cacert` (a self-signed certificate given there is accepted as the
//! server's own, as curl does), or no verification with `-k`. ALPN offers the one protocol asked
//! for (`http/1.1`, or `h2` with `--http 2`). Sessions resume across a crawl's connections: a
//! crawl is not a handshake benchmark.

use rustls::ClientConfig;
use std::path::PathBuf;
use std::sync::Arc;

pub use bench::transport::TlsSetupError;

/// How certificates are checked.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM certificates trusted beside the system's roots.
    pub cacert: Option<PathBuf>,
    /// Accept any certificate.
    pub insecure: bool,
}

pub(crate) fn client_config(
    opts: &TlsOptions,
    http: super::Http,
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let bench_opts = bench::config::TlsOptions {
        cacert: opts.cacert.clone(),
        insecure: opts.insecure,
        resume: true,
        version: None,
        ciphers: None,
    };
    // Only the protocol asked for: HTTP/2 is not fallen back from silently.
    let alpn: &[u8] = match http {
        super::Http::Http11 => b"http/1.1",
        super::Http::Http2 => b"h2",
    };
    bench::transport::client_config(&bench_opts, alpn)
}
