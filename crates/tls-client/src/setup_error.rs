//! Why TLS could not be set up for a run: in a file of its own, below both the configuration
//! (`config`) and the cipher list (`ciphers`) that report it.

use std::path::PathBuf;

/// Why TLS could not be set up for a run (before anything starts).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The CA file could not be read, or is not PEM.
    #[error("--cacert {path}: {source}")]
    CaFile {
        /// The file given with `--cacert`.
        path: PathBuf,
        /// What reading it or its PEM said.
        source: rustls::pki_types::pem::Error,
    },
    /// The CA file holds no PEM certificate.
    #[error("--cacert {path}: no certificate in it")]
    CaEmpty {
        /// The file given with `--cacert`.
        path: PathBuf,
    },
    /// A certificate of the CA file cannot be a trust anchor (its DER does not parse).
    #[error("--cacert {path}: {source}")]
    CaInvalid {
        /// The file given with `--cacert`.
        path: PathBuf,
        /// Why rustls refused the certificate.
        source: rustls::Error,
    },
    /// Verification is on, and neither the system nor `--cacert` gave a root to trust.
    #[error("no trusted root certificates: the system has none that load (install ca-certificates), and no --cacert was given (or use -k to skip verification)")]
    NoRoots,
    /// The URL's host cannot be a TLS server name (the value: that host).
    #[error("`{0}` is not a host name or address a certificate can be checked against")]
    ServerName(String),
    /// A name of `--tls-ciphers` that is no suite this client offers (the value: that name).
    #[error("--tls-ciphers: unknown cipher suite `{0}`")]
    Cipher(String),
    /// `--tls-ciphers` names suites only of a TLS version `--tls` excludes.
    #[error("--tls-ciphers: none of the suites is of the TLS version asked for (--tls)")]
    NoCipherForVersion,
    /// rustls refused the configuration made of the options.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}
