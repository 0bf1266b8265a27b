//! The rustls client configuration every HTTPS client of flint is made with.
//!
//! What a benchmark needs from TLS differs from what a browser needs: every new connection is a
//! full handshake unless resumption is asked for (rustls resumes by default, which would measure
//! the cache, not the server's handshake); no 0-RTT; one ALPN protocol (a server that picks
//! another is refused by rustls, so a protocol is never fallen back from silently); the cipher
//! suites in browsers' order, AES-128-GCM first (see `ciphers`), or the ones asked for.
//! Certificates are checked against the system's roots (rustls-native-certs: the same store
//! curl and wrk trust there) plus `--cacert`, or not at all with `--insecure`. A certificate
//! given with `--cacert` that is the server's own (a self-signed one, which `openssl req -x509`
//! marks CA:TRUE and WebPKI then refuses as an end entity) is accepted for the names it carries,
//! as curl (OpenSSL) accepts a trusted certificate presented by the server itself.

use crate::failure::ca_used_as_end_entity;
use crate::{TlsOptions, TlsSetupError, TlsVersion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, Resumption, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

/// The rustls client configuration of `opts`, offering `alpn` alone (`b"http/1.1"` or `b"h2"`:
/// a server that picks neither is refused, so a protocol is never fallen back from silently).
/// Public so that every HTTPS client of the project (`flint discover` too) trusts, pins and
/// refuses certificates alike, with the same error messages.
pub fn client_config(opts: &TlsOptions, alpn: &[u8]) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let versions: &[&rustls::SupportedProtocolVersion] = match opts.version {
        None => rustls::ALL_VERSIONS,
        Some(TlsVersion::Tls12) => &[&rustls::version::TLS12],
        Some(TlsVersion::Tls13) => &[&rustls::version::TLS13],
    };
    let cipher_suites = crate::ciphers::offered(opts.ciphers.as_deref())?;
    if !cipher_suites
        .iter()
        .any(|s| versions.contains(&s.version()))
    {
        return Err(TlsSetupError::NoCipherForVersion);
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites,
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let builder =
        ClientConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions)?;
    let chain = if opts.insecure {
        None
    } else {
        let (roots, pinned) = roots(opts)?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| TlsSetupError::Config(rustls::Error::General(e.to_string())))?;
        Some(PinnedOrWebPki { webpki, pinned })
    };
    let verifier = Verifier {
        chain,
        signatures: provider.signature_verification_algorithms,
    };
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config.enable_early_data = false;
    config.resumption = if opts.resume {
        Resumption::default()
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

/// The system's roots (when they load) and `--cacert`'s certificates, and the latter apart.
fn roots(
    opts: &TlsOptions,
) -> Result<(rustls::RootCertStore, Vec<CertificateDer<'static>>), TlsSetupError> {
    let mut pinned = Vec::new();
    let mut store = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped, as curl does; none at all is an error below.
    let native = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(native.certs);
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
            store
                .add(cert.clone())
                .map_err(|source| TlsSetupError::CaInvalid {
                    path: path.clone(),
                    source,
                })?;
            pinned.push(cert);
        }
    }
    if store.is_empty() {
        return Err(TlsSetupError::NoRoots);
    }
    Ok((store, pinned))
}

/// The server's certificate checked by `chain` (`None` with `--insecure`: any certificate is
/// accepted), and the handshake's signatures always checked, with the provider's algorithms (the
/// handshake is then the same work with `--insecure` as verified, minus the chain).
#[derive(Debug)]
struct Verifier {
    chain: Option<PinnedOrWebPki>,
    signatures: WebPkiSupportedAlgorithms,
}

/// WebPKI's verification, and beside it the certificates given with `--cacert` taken as
/// themselves: a server presenting exactly one of them is trusted for the names it carries,
/// where WebPKI refuses it as a CA used as an end entity (or, CA:FALSE, as of unknown issuer).
#[derive(Debug)]
struct PinnedOrWebPki {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        let verdict = chain.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        // WebPKI checks the end entity's own dates before its issuer and its basic constraints:
        // a pinned certificate out of its dates is refused as expired (or not yet valid) before
        // it gets here, as one issued by a CA is (a test pins this order).
        let refused_as_itself = matches!(
            &verdict,
            Err(rustls::Error::InvalidCertificate(e))
                if *e == CertificateError::UnknownIssuer || ca_used_as_end_entity(e)
        );
        if refused_as_itself
            && chain
                .pinned
                .iter()
                .any(|c| c.as_ref() == end_entity.as_ref())
        {
            let parsed = ParsedCertificate::try_from(end_entity)?;
            verify_server_name(&parsed, server_name)?;
            return Ok(ServerCertVerified::assertion());
        }
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.signatures)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.signatures)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.signatures.supported_schemes()
    }
}
