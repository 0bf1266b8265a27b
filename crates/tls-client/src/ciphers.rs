//! The cipher suites flint offers, and in which order.
//!
//! A server that honours the client's order (nginx and h2o do by default, as OpenSSL servers
//! without `ssl_prefer_server_ciphers`) takes the first suite it also has, and that suite is
//! much of both sides' cost per byte: AES-256-GCM costs each side some 20-30% more per byte than
//! AES-128-GCM on hardware with AES instructions. rustls's own order puts AES-256-GCM first;
//! browsers put AES-128-GCM first (Chrome: AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305; Firefox
//! the last two swapped), and so do curl's and h2load's OpenSSL settings. A benchmark should
//! measure what a server does for browsers, so by default flint offers Chrome's order, and
//! `--tls-ciphers` chooses others; the report names the suite the server picked.

use crate::TlsSetupError;
use rustls::crypto::aws_lc_rs::cipher_suite as suite;
use rustls::SupportedCipherSuite;

/// Chrome's order of the suites rustls has (TLS 1.3's, then TLS 1.2's).
const BROWSER_ORDER: [SupportedCipherSuite; 9] = [
    suite::TLS13_AES_128_GCM_SHA256,
    suite::TLS13_AES_256_GCM_SHA384,
    suite::TLS13_CHACHA20_POLY1305_SHA256,
    suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
];

/// The suite called `name`: OpenSSL's name, as the report, curl and h2load print it
/// (`TLS_AES_128_GCM_SHA256`, `ECDHE-RSA-AES128-GCM-SHA256`), or rustls's
/// (`TLS13_AES_128_GCM_SHA256`, `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`); any case.
fn by_name(name: &str) -> Option<SupportedCipherSuite> {
    let upper = name.trim().to_ascii_uppercase();
    BROWSER_ORDER.into_iter().find(|s| {
        let own = s.suite().as_str().unwrap_or_default();
        own == upper || results::tls_names::cipher(own) == upper
    })
}

/// Every name `--tls-ciphers` takes, as the report prints them, in the default order.
pub fn cipher_suite_names() -> Vec<&'static str> {
    BROWSER_ORDER
        .iter()
        .map(|s| results::tls_names::cipher(s.suite().as_str().unwrap_or_default()))
        .collect()
}

/// `--tls-ciphers LIST` (comma- or colon-separated, the client's order of preference) as the
/// names the report prints; an unknown name is refused with the list of known ones.
pub fn parse_cipher_list(list: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for name in list.split([',', ':']).filter(|n| !n.trim().is_empty()) {
        let s = by_name(name).ok_or_else(|| {
            format!(
                "unknown cipher suite `{}` (known: {})",
                name.trim(),
                cipher_suite_names().join(", ")
            )
        })?;
        let canonical = s.suite().as_str().unwrap_or_default().to_owned();
        if !names.contains(&canonical) {
            names.push(canonical);
        }
    }
    if names.is_empty() {
        return Err("no cipher suite named".to_owned());
    }
    Ok(names)
}

/// What the client offers: `chosen` (`--tls-ciphers`) in its order, or the browsers' order.
pub(crate) fn offered(
    chosen: Option<&[String]>,
) -> Result<Vec<SupportedCipherSuite>, TlsSetupError> {
    match chosen {
        None => Ok(BROWSER_ORDER.to_vec()),
        Some(names) => names
            .iter()
            .map(|n| by_name(n).ok_or_else(|| TlsSetupError::Cipher(n.clone())))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_128_gcm_is_offered_first_in_each_version() {
        let first = offered(None).unwrap();
        assert_eq!(first[0].suite().as_str(), Some("TLS13_AES_128_GCM_SHA256"));
        let tls12 = first
            .iter()
            .find(|s| s.version() == &rustls::version::TLS12)
            .unwrap();
        assert_eq!(
            tls12.suite().as_str(),
            Some("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
        );
        // Every suite rustls's provider has is offered, none twice.
        let all = rustls::crypto::aws_lc_rs::ALL_CIPHER_SUITES;
        assert_eq!(first.len(), all.len());
        assert!(all.iter().all(|s| first.contains(s)));
    }

    #[test]
    fn names_are_rustls_or_iana_in_any_case_in_the_order_given() {
        let names = parse_cipher_list("tls_chacha20_poly1305_sha256:TLS13_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS13_AES_256_GCM_SHA384").unwrap();
        assert_eq!(
            names,
            [
                "TLS13_CHACHA20_POLY1305_SHA256",
                "TLS13_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            ]
        );
        let suites = offered(Some(&names)).unwrap();
        assert_eq!(suites[0], suite::TLS13_CHACHA20_POLY1305_SHA256);
        assert_eq!(suites.len(), 3);
        // OpenSSL's names, as the report, curl and h2load print them.
        let names =
            parse_cipher_list("ECDHE-RSA-AES128-GCM-SHA256,TLS_AES_128_GCM_SHA256").unwrap();
        assert_eq!(
            names,
            [
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS13_AES_128_GCM_SHA256"
            ]
        );
    }

    #[test]
    fn unknown_or_empty_lists_are_refused() {
        let e = parse_cipher_list("TLS_AES_128_CCM_SHA256").unwrap_err();
        assert!(
            e.contains("unknown cipher suite `TLS_AES_128_CCM_SHA256`"),
            "{e}"
        );
        assert!(e.contains("TLS_AES_128_GCM_SHA256, "), "{e}");
        assert!(e.contains("ECDHE-RSA-AES128-GCM-SHA256"), "{e}");
        assert!(parse_cipher_list(" , ").is_err());
        assert!(matches!(
            offered(Some(&["RC4".to_owned()])),
            Err(TlsSetupError::Cipher(n)) if n == "RC4"
        ));
    }
}
