//! Throwaway certificates for HTTPS measurements, made when they are needed and never stored:
//! self-signed, for `localhost` and 127.0.0.1, with either key the TLS sweep compares.
//!
//! ECDSA P-256 and RSA-2048 are the two keys a web server is likely to have today; the server's
//! cost of a full handshake is mostly its signature, and the two differ there by an order of
//! magnitude, so `flint lab tls` measures both. The certificate is its own trust anchor: the
//! client trusts exactly it (`--cacert`), so nothing is checked less than in production.

use lab_peers::TlsFiles;
use std::path::Path;

/// The name the certificates are made for, and the name the client asks for (SNI).
pub const SERVER_NAME: &str = "localhost";

/// The kind of key a certificate carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertKind {
    /// ECDSA on the P-256 curve: a small key, cheap to sign with.
    EcdsaP256,
    /// RSA with a 2048-bit key: the long-standing default, its signatures far costlier to make.
    Rsa2048,
}

impl CertKind {
    /// Both kinds, in the order the TLS experiment measures them.
    pub const ALL: [CertKind; 2] = [CertKind::EcdsaP256, CertKind::Rsa2048];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            CertKind::EcdsaP256 => "ecdsa-p256",
            CertKind::Rsa2048 => "rsa-2048",
        }
    }
}

impl std::fmt::Display for CertKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a certificate could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// rcgen could not make the key or sign the certificate.
    #[error("making the {kind} certificate: {source}")]
    Make {
        /// The kind asked for.
        kind: CertKind,
        /// rcgen's error.
        source: rcgen::Error,
    },
    /// The certificate or its key could not be written (one already there is not replaced).
    #[error("writing the {kind} certificate: {source}")]
    Write {
        /// The kind being written.
        kind: CertKind,
        /// The system's error.
        source: std::io::Error,
    },
}

/// A certificate and its key, PEM text.
#[derive(Debug, Clone)]
pub struct CertPem {
    /// The self-signed certificate (PEM).
    pub cert: String,
    /// Its private key (PEM, PKCS #8).
    pub key: String,
}

/// Makes a self-signed certificate for [`SERVER_NAME`] and 127.0.0.1 with a new key of `kind`.
pub fn make(kind: CertKind) -> Result<CertPem, CertError> {
    let err = |source| CertError::Make { kind, source };
    let alg = match kind {
        CertKind::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        CertKind::Rsa2048 => &rcgen::PKCS_RSA_SHA256,
    };
    let key = rcgen::KeyPair::generate_for(alg).map_err(err)?;
    let params =
        rcgen::CertificateParams::new(vec![SERVER_NAME.to_owned(), "127.0.0.1".to_owned()])
            .map_err(err)?;
    let cert = params.self_signed(&key).map_err(err)?;
    Ok(CertPem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// Makes a certificate of `kind` and writes it and its key to `dir` as `KIND.crt` and
/// `KIND.key` (the key readable by the owner only).
pub fn write(kind: CertKind, dir: &Path) -> Result<TlsFiles, CertError> {
    let pem = make(kind)?;
    let files = TlsFiles {
        cert: dir.join(format!("{kind}.crt")),
        key: dir.join(format!("{kind}.key")),
        ..TlsFiles::default()
    };
    let write = |path: &Path, text: &str, mode: u32| -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)?
            .write_all(text.as_bytes())
    };
    let err = |source| CertError::Write { kind, source };
    write(&files.cert, &pem.cert, 0o644).map_err(err)?;
    write(&files.key, &pem.key, 0o600).map_err(err)?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_make_pem_with_the_right_key() {
        let dir = tempfile::tempdir().unwrap();
        for kind in CertKind::ALL {
            let files = write(kind, dir.path()).unwrap();
            let cert = std::fs::read_to_string(&files.cert).unwrap();
            let key = std::fs::read_to_string(&files.key).unwrap();
            assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
            assert!(key.contains("PRIVATE KEY-----"), "{key}");
            // PKCS#8 of an RSA-2048 key is over a kilobyte; of a P-256 key, a few hundred bytes.
            match kind {
                CertKind::EcdsaP256 => assert!(key.len() < 400, "{}", key.len()),
                CertKind::Rsa2048 => assert!(key.len() > 1500, "{}", key.len()),
            }
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&files.key).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the key is the owner's only");
        }
    }
}
