//! The certificates verify as they should: a leaf against its CA for its names, not for
//! another name, and not once expired.

use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{ServerName, UnixTime};
use std::sync::Arc;
use test_support::certs::{KeyKind, SelfSigned, TestCa};

fn verify(
    roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    chain: &[rustls::pki_types::CertificateDer<'static>],
    name: &str,
) -> Result<(), rustls::Error> {
    let mut store = rustls::RootCertStore::empty();
    for r in roots {
        store.add(r).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
            .unwrap();
    verifier
        .verify_server_cert(
            &chain[0],
            &chain[1..],
            &ServerName::try_from(name.to_owned()).unwrap(),
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
}

#[test]
fn a_leaf_verifies_for_its_names_only_and_not_expired() {
    let ca = TestCa::new("flint test CA");
    let leaf = ca.leaf();
    verify(vec![ca.der()], &leaf.chain, "localhost").unwrap();
    verify(vec![ca.der()], &leaf.chain, "127.0.0.1").unwrap();
    assert!(verify(vec![ca.der()], &leaf.chain, "example.com").is_err());
    let expired = ca.leaf_with(&["localhost"], KeyKind::EcdsaP256, true);
    assert!(verify(vec![ca.der()], &expired.chain, "localhost").is_err());
    let other = TestCa::new("another CA");
    assert!(verify(vec![other.der()], &leaf.chain, "localhost").is_err());
    // Files and a server configuration come out usable.
    let (cert, key) = leaf.write_pem(ca.dir());
    assert!(
        std::fs::read_to_string(cert)
            .unwrap()
            .matches("BEGIN CERTIFICATE")
            .count()
            == 2
    );
    assert!(std::fs::read_to_string(key)
        .unwrap()
        .contains("PRIVATE KEY"));
    leaf.server_config();
}

#[test]
fn a_self_signed_certificate_verifies_as_its_own_root() {
    for kind in [KeyKind::EcdsaP256, KeyKind::Rsa2048] {
        let c = SelfSigned::new(kind);
        verify(
            vec![c.der.clone()],
            std::slice::from_ref(&c.der),
            "localhost",
        )
        .unwrap();
        c.server_config();
    }
}
