//! TLS versions and cipher suites as curl, h2load and OpenSSL print them (`TLSv1.3`,
//! `TLS_AES_128_GCM_SHA256`, `ECDHE-RSA-AES128-GCM-SHA256`), for the reports. The result
//! documents keep rustls's names (`TLSv1_3`, `TLS13_AES_128_GCM_SHA256`), as they always have.

/// `TLSv1_3` as `TLSv1.3`.
pub fn version(rustls: &str) -> String {
    rustls.replace('_', ".")
}

/// A cipher suite's OpenSSL name, for the suites rustls has; any other name as it is. A table,
/// not a rule: OpenSSL's TLS 1.2 names follow none (TLS 1.3's are IANA's).
pub fn cipher(rustls: &str) -> &str {
    match rustls {
        "TLS13_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
        "TLS13_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-RSA-CHACHA20-POLY1305",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_openssls() {
        assert_eq!(version("TLSv1_2"), "TLSv1.2");
        assert_eq!(version("TLSv1_3"), "TLSv1.3");
        assert_eq!(cipher("TLS13_AES_128_GCM_SHA256"), "TLS_AES_128_GCM_SHA256");
        assert_eq!(
            cipher("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            "ECDHE-RSA-AES128-GCM-SHA256"
        );
        assert_eq!(cipher("SOMETHING_NEW"), "SOMETHING_NEW");
    }
}
