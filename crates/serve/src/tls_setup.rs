//! What `--tls-cert` and `--tls-key` become: one rustls server configuration, checked before
//! anything is served.
//!
//! rustls with its default aws-lc-rs provider (the client side uses the same, so the binary
//! carries one crypto library); TLS 1.3 and 1.2 only; ALPN `h2` (unless `http2 = false`) and
//! `http/1.1`; resumption by session tickets whose keys rotate, and by a session cache; no 0-RTT
//! (early data can be replayed, and a static server gains little from it). A key that does not
//! match the certificate, an unreadable file, one that is not a regular file or is larger than
//! any chain (`start_files`), an encrypted key, or one with no PEM block of the right kind is one
//! clear error at start.
//!
//! The client side made at start is beside it: `upstream.rs`, what a proxy mount's `cacert`
//! becomes (below both the configuration's check and the proxy, so neither imports the other).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::aws_lc_rs;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerConfig, ServerSessionMemoryCache};

use crate::start_files::{self, MAX_PEM_BYTES};

mod tickets;
pub(crate) mod upstream;

/// TLS sessions remembered per server for resumption by session ID (TLS 1.2 clients without
/// ticket support); about 100 bytes each.
const SESSION_CACHE: usize = 16_384;

/// Why TLS could not be set up at start: one line naming the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file could not be read, or holds no PEM certificate.
    #[error("TLS certificate {path}: {message}")]
    Cert {
        /// The file (`tls_cert`).
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The key file could not be read, holds no PEM private key, or one rustls does not take.
    #[error("TLS key {path}: {message}")]
    Key {
        /// The file (`tls_key`).
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The key is not the private key of the certificate's leaf.
    #[error("TLS key {key} does not belong to the certificate {cert}")]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// Only one of `tls_cert` and `tls_key` was given; says which is missing ("the key").
    #[error("TLS needs both a certificate and a key (tls_cert, tls_key): {0} is missing")]
    Incomplete(&'static str),
    /// rustls refused the configuration otherwise.
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Builds the server configuration from a PEM certificate chain (leaf first) and a PEM private
/// key (PKCS#8, PKCS#1 or SEC1; ECDSA, RSA or Ed25519). With `http2`, ALPN offers `h2` first.
/// `ticket_period`: how often the session ticket key changes (`tls_ticket_key_period_ms`).
pub fn server_config(
    cert: &Path,
    key: &Path,
    http2: bool,
    ticket_period: Duration,
) -> Result<Arc<ServerConfig>, TlsError> {
    let cert_error = |message: String| TlsError::Cert {
        path: cert.to_path_buf(),
        message,
    };
    let key_error = |message: String| TlsError::Key {
        path: key.to_path_buf(),
        message,
    };
    let cert_pem = start_files::read(cert, MAX_PEM_BYTES).map_err(|e| cert_error(e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(pem_message(e)))?;
    if chain.is_empty() {
        return Err(cert_error("no PEM CERTIFICATE block in it".into()));
    }
    let key_pem = start_files::read(key, MAX_PEM_BYTES).map_err(|e| key_error(e.to_string()))?;
    if start_files::is_encrypted_key(&key_pem) {
        return Err(key_error(
            "the key is encrypted (passphrase-protected); give it decrypted, e.g. `openssl pkey -in KEY -out KEY.plain`".into(),
        ));
    }
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        key_error(match e {
            rustls::pki_types::pem::Error::NoItemsFound => "no PEM PRIVATE KEY block in it".into(),
            e => pem_message(e),
        })
    })?;
    let provider = Arc::new(aws_lc_rs::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsError::Mismatch {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            },
            e => TlsError::Key {
                path: key.to_path_buf(),
                message: e.to_string(),
            },
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if http2 {
        config.alpn_protocols.insert(0, b"h2".to_vec());
    }
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    // Ticket keys change every `ticket_period` from the process's start (rustls's default, 6 hours,
    // unless set), in whole seconds, the previous key still opening tickets for one more
    // period (`tls_setup/tickets.rs`).
    config.ticketer = Arc::new(tickets::PeriodTicketer::new(ticket_period.as_secs())?);
    // One ticket per full handshake: enough for a client's next connection, half the work of
    // the default two.
    config.send_tls13_tickets = 1;
    config.max_early_data_size = 0;
    Ok(Arc::new(config))
}

/// Whether this kernel offers the `tls` upper-layer protocol (kernel TLS, which would let file
/// bodies go by `sendfile` through the kernel's record layer).
pub fn kernel_tls_offered() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_ulp")
        .is_ok_and(|ulps| ulps.split_whitespace().any(|u| u == "tls"))
}

/// The line `flint serve` prints at start about kernel TLS.
pub fn kernel_tls_note() -> &'static str {
    if kernel_tls_offered() {
        "kernel TLS is offered by this kernel but not used yet: records are encrypted in user space and large files read in 128 KiB chunks"
    } else {
        "kernel TLS (the tls ULP) is not offered by this kernel: records are encrypted in user space and large files read in 128 KiB chunks"
    }
}

fn pem_message(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(e) => e.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM block in it".into(),
        e => format!("malformed PEM ({e:?})"),
    }
}
