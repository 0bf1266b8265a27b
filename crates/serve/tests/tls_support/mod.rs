//! Certificates made at test time and a TLS client for the HTTPS tests.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{
    ClientConfig, ClientConnection, RootCertStore, StreamOwned, SupportedProtocolVersion,
};

use crate::common::{connect, TestServer};
use test_support::certs::{KeyKind, SelfSigned};

/// A self-signed certificate for `localhost` and 127.0.0.1, and its key, as PEM files.
pub struct Certs {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub der: CertificateDer<'static>,
    made: SelfSigned,
}

impl Certs {
    /// ECDSA P-256 (`rsa` false) or RSA-2048.
    pub fn new(rsa: bool) -> Certs {
        let made = SelfSigned::new(if rsa {
            KeyKind::Rsa2048
        } else {
            KeyKind::EcdsaP256
        });
        Certs {
            cert: made.cert.clone(),
            key: made.key.clone(),
            der: made.der.clone(),
            made,
        }
    }

    /// The directory the PEM files are in, for a test's own files beside them.
    pub fn dir(&self) -> &Path {
        self.made.dir()
    }

    /// A server over these certificates (one thread, short timeouts via `tweak`).
    pub fn serve(&self, tweak: impl FnOnce(&mut serve::Config)) -> TestServer {
        let (cert, key) = (self.cert.clone(), self.key.clone());
        TestServer::start(move |c| {
            c.tls_cert = Some(cert);
            c.tls_key = Some(key);
            tweak(c);
        })
    }

    /// A client that trusts only this certificate, for the given versions.
    pub fn client(&self, versions: &[&'static SupportedProtocolVersion]) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

pub type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// A TLS connection to `localhost` at `addr` (the handshake runs on first use).
pub fn tls_connect(addr: SocketAddr, config: &Arc<ClientConfig>) -> TlsStream {
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(config.clone(), name).unwrap();
    StreamOwned::new(conn, connect(addr))
}

pub fn both_versions() -> Vec<&'static SupportedProtocolVersion> {
    vec![&rustls::version::TLS13, &rustls::version::TLS12]
}
