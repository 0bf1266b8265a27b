//! Certificates made at test time by rcgen: a test CA and leaves it signs, for servers the tests
//! start (rustls in-process, `flint serve`, nginx) and clients that trust exactly that CA.
//!
//! Every leaf names `localhost` and 127.0.0.1 unless told otherwise, so a test can connect by
//! address and still check the name, or connect by a name the certificate lacks to see the
//! check fail.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The names a leaf carries by default.
pub const LOCAL_NAMES: &[&str] = &["localhost", "127.0.0.1"];

/// The key a certificate is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA on P-256, signing with SHA-256: a small, fast key (the CA's always).
    EcdsaP256,
    /// RSA of 2048 bits, signing with SHA-256 (PKCS#1 v1.5): the common server key.
    Rsa2048,
}

fn key_pair(kind: KeyKind) -> KeyPair {
    match kind {
        KeyKind::EcdsaP256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        KeyKind::Rsa2048 => KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256),
    }
    .expect("rcgen makes a key")
}

/// A certificate authority that exists for one test; its certificate is also a PEM file (for
/// `--cacert`, curl's `--cacert`, nginx's `ssl_trusted_certificate`).
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// The CA certificate as a PEM file.
    pub pem: PathBuf,
    dir: tempfile::TempDir,
}

impl TestCa {
    /// A CA whose common name is `name` (it shows in a verifier's error messages).
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, key_pair(KeyKind::EcdsaP256))
            .expect("a self-signed CA");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let pem = dir.path().join("ca.pem");
        std::fs::write(&pem, issuer.pem()).expect("write ca.pem");
        TestCa { issuer, pem, dir }
    }

    /// The CA certificate, for a rustls root store.
    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// The directory the CA's files are in (removed when the CA is dropped).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A leaf for [`LOCAL_NAMES`], valid now.
    pub fn leaf(&self) -> Leaf {
        self.leaf_with(LOCAL_NAMES, KeyKind::EcdsaP256, false)
    }

    /// A leaf for `names` (DNS names or IP addresses), with a key of `kind`; `expired` makes
    /// one whose validity ended in 2021.
    pub fn leaf_with(&self, names: &[&str], kind: KeyKind, expired: bool) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("leaf params");
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = key_pair(kind);
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a leaf signed by the CA");
        Leaf {
            chain: vec![cert.der().clone(), self.issuer.der().clone()],
            chain_pem: format!("{}{}", cert.pem(), self.issuer.pem()),
            key_der: key.serialize_der(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A server's certificate chain (leaf first, then the CA) and its private key.
pub struct Leaf {
    /// The leaf's DER, then the CA's: what a server presents.
    pub chain: Vec<CertificateDer<'static>>,
    chain_pem: String,
    key_der: Vec<u8>,
    key_pem: String,
}

impl Leaf {
    /// The private key, for rustls.
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }

    /// Writes `cert.pem` (the chain) and `key.pem` into `dir`; their paths, in that order.
    pub fn write_pem(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, &self.chain_pem).expect("write cert.pem");
        std::fs::write(&key, &self.key_pem).expect("write key.pem");
        (cert, key)
    }

    /// A rustls server configuration serving this chain: TLS 1.2 and 1.3, ALPN `http/1.1`,
    /// aws-lc-rs (the provider flint uses).
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        server_config(self.chain.clone(), self.key())
    }
}

/// A self-signed certificate for [`LOCAL_NAMES`] and its key, as PEM files in a directory that
/// lives as long as this value: for a server that takes files and a client that trusts exactly
/// this certificate.
pub struct SelfSigned {
    /// `cert.pem`: the certificate, for `--tls-cert` or a client's `--cacert`.
    pub cert: PathBuf,
    /// `key.pem`: its private key (PKCS#8), for `--tls-key`.
    pub key: PathBuf,
    /// The certificate in DER, for a rustls root store.
    pub der: CertificateDer<'static>,
    key_der: Vec<u8>,
    _dir: tempfile::TempDir,
}

impl SelfSigned {
    /// Marked CA:FALSE, as a server's own certificate should be, with a key of `kind`.
    pub fn new(kind: KeyKind) -> SelfSigned {
        Self::with(kind, IsCa::NoCa)
    }

    /// Marked CA:TRUE, as `openssl req -x509` makes one (WebPKI refuses such a certificate as a
    /// server's own unless it is trusted as itself).
    pub fn marked_ca(kind: KeyKind) -> SelfSigned {
        Self::with(kind, IsCa::Ca(rcgen::BasicConstraints::Unconstrained))
    }

    /// [`SelfSigned::marked_ca`], valid only from `not_before` to `not_after` (years, each
    /// from its 1 January): in the past it has expired, in the future it is not valid yet.
    pub fn marked_ca_valid(kind: KeyKind, not_before: i32, not_after: i32) -> SelfSigned {
        Self::with_validity(
            kind,
            IsCa::Ca(rcgen::BasicConstraints::Unconstrained),
            Some((not_before, not_after)),
        )
    }

    fn with(kind: KeyKind, is_ca: IsCa) -> SelfSigned {
        Self::with_validity(kind, is_ca, None)
    }

    fn with_validity(kind: KeyKind, is_ca: IsCa, years: Option<(i32, i32)>) -> SelfSigned {
        let key = key_pair(kind);
        let names: Vec<String> = LOCAL_NAMES.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("params");
        params.is_ca = is_ca;
        if let Some((from, to)) = years {
            params.not_before = rcgen::date_time_ymd(from, 1, 1);
            params.not_after = rcgen::date_time_ymd(to, 1, 1);
        }
        let cert = params.self_signed(&key).expect("self-signed");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert_path, cert.pem()).expect("write cert.pem");
        std::fs::write(&key_path, key.serialize_pem()).expect("write key.pem");
        SelfSigned {
            cert: cert_path,
            key: key_path,
            der: cert.der().clone(),
            key_der: key.serialize_der(),
            _dir: dir,
        }
    }

    /// The directory the files are in (removed when this is dropped): room for a test's own
    /// files beside them.
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// The private key, for rustls.
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }

    /// A rustls server configuration serving this certificate (TLS 1.2 and 1.3, ALPN
    /// `http/1.1`).
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        server_config(vec![self.der.clone()], self.key_der())
    }
}

/// TLS 1.2 and 1.3, ALPN `http/1.1`, aws-lc-rs (the provider flint uses).
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .expect("TLS 1.2 and 1.3")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("a usable certificate chain and key");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}
