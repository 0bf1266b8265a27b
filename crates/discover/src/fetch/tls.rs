//! The TLS client configuration: rustls on aws-lc-rs (the provider bench and serve use, so the
//! binary carries one crypto library), the system's roots plus `--cacert`, or no verification
//! with `-k`, as `flint bench` does it. ALPN offers the one protocol asked for (`http/1.1`, or
//! `h2` with `--http 2`).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

/// How certificates are checked.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM certificates trusted beside the system's roots.
    pub cacert: Option<PathBuf>,
    /// Accept any certificate.
    pub insecure: bool,
}

/// Why TLS cannot be set up (before anything is fetched).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("--cacert {path}: {source}")]
    CaFile {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("--cacert {path}: no certificate in it")]
    CaEmpty { path: PathBuf },
    #[error("--cacert {path}: {source}")]
    CaInvalid {
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("no trusted root certificates: the system has none that load (install ca-certificates), and no --cacert was given (or use -k to skip verification)")]
    NoRoots,
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

pub(crate) fn client_config(
    opts: &TlsOptions,
    http: super::Http,
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(roots(opts)?)
            .with_no_client_auth()
    };
    // Only the protocol asked for: HTTP/2 is not fallen back from silently.
    config.alpn_protocols = match http {
        super::Http::Http11 => vec![b"http/1.1".to_vec()],
        super::Http::Http2 => vec![b"h2".to_vec()],
    };
    Ok(Arc::new(config))
}

fn roots(opts: &TlsOptions) -> Result<rustls::RootCertStore, TlsSetupError> {
    let mut store = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped, as curl does; none at all is an error below.
    store.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(path) = &opts.cacert {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|source| TlsSetupError::CaFile {
                path: path.clone(),
                source,
            })?;
        if certs.is_empty() {
            return Err(TlsSetupError::CaEmpty { path: path.clone() });
        }
        for cert in certs {
            store.add(cert).map_err(|source| TlsSetupError::CaInvalid {
                path: path.clone(),
                source,
            })?;
        }
    }
    if store.is_empty() {
        return Err(TlsSetupError::NoRoots);
    }
    Ok(store)
}

/// `-k`: any certificate is accepted; handshake signatures are still checked.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
