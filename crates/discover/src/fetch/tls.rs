//! The TLS client configuration: the project's TLS client crate's ([`tls_client::client_config`],
//! `flint bench`'s too), so that both trust, pin and refuse certificates alike, with the same
//! messages: rustls on aws-lc-rs (the provider bench and serve use, so the binary carries one
//! crypto library), the system's roots plus `--cacert` (a self-signed certificate given there is accepted as the
//! server's own, as curl does), or no verification with `-k`. ALPN offers the one protocol asked
//! for (`http/1.1`, or `h2` with `--http 2`). Sessions resume across a crawl's connections: a
//! crawl is not a handshake benchmark. A failed handshake is told as bench tells it
//! ([`TlsFailure`]): the reason and the fix, not rustls's error.

use rustls::ClientConfig;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tls_client::TlsFailure;

pub use tls_client::TlsSetupError;

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
    let client_opts = tls_client::TlsOptions {
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
    tls_client::client_config(&client_opts, alpn)
}

/// Whether an I/O error is rustls refusing the handshake (or the peer's TLS).
pub(crate) fn is_tls(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
}

/// Why the handshake failed and what to do, as bench says it; a `--cacert` file that was given
/// and did not help is named as such rather than suggested again.
pub(crate) fn reason(e: &io::Error, cacert: Option<&Path>) -> String {
    let failure = TlsFailure::of(e);
    match (failure, cacert) {
        (TlsFailure::UnknownIssuer, Some(file)) => format!(
            "the certificate's issuer is not trusted, and not in --cacert {}: give the CA that \
             signed it (or -k to skip checks)",
            file.display()
        ),
        (TlsFailure::CaUsedAsEndEntity, Some(file)) => format!(
            "the server presented a CA certificate as its own, and --cacert {} is not that \
             certificate (or -k)",
            file.display()
        ),
        (f, _) => f.explain().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_reason_and_a_fix() {
        let e = |c| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(c),
            )
        };
        let unknown = e(rustls::CertificateError::UnknownIssuer);
        assert!(is_tls(&unknown));
        assert!(!is_tls(&io::Error::from(io::ErrorKind::TimedOut)));
        assert_eq!(
            reason(&unknown, None),
            "the certificate's issuer is not trusted: --cacert CA.pem (or -k to skip checks)"
        );
        assert_eq!(
            reason(&unknown, Some(Path::new("my.pem"))),
            "the certificate's issuer is not trusted, and not in --cacert my.pem: give the CA \
             that signed it (or -k to skip checks)"
        );
    }
}
