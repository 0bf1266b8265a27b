//! What a proxy mount's `cacert` becomes: the rustls client configuration its `https://`
//! upstreams' connections are made with (`gateway/upstream/tls.rs`). Made and checked at
//! start, by `Config::validate` (a CA file that cannot be read stops the start in one line) and
//! by each thread's proxy mounts, which take the same configuration.

use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use tls_client::{TlsOptions, TlsSetupError};

/// The client configuration of a mount's `https://` upstreams: the system's roots plus
/// `cacert`, ALPN `http/1.1` alone, resumption on (a proxy is no handshake benchmark). Made
/// once per CA file in the process (the configuration's check makes it, each thread's mounts
/// take it, at start-up only): the roots are parsed once and every thread shares the session
/// cache, so a session made on one thread is resumed on another.
pub(crate) fn tls_config(cacert: Option<&Path>) -> Result<Arc<ClientConfig>, TlsSetupError> {
    type Made = Vec<(Option<std::path::PathBuf>, Arc<ClientConfig>)>;
    static MADE: std::sync::Mutex<Made> = std::sync::Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, config)) = made.iter().find(|(path, _)| path.as_deref() == cacert) {
        return Ok(config.clone());
    }
    let config = new_tls_config(cacert)?;
    made.push((cacert.map(Path::to_path_buf), config.clone()));
    Ok(config)
}

fn new_tls_config(cacert: Option<&Path>) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let opts = TlsOptions {
        cacert: cacert.map(Path::to_path_buf),
        insecure: false,
        resume: true,
        version: None,
        ciphers: None,
    };
    tls_client::client_config(&opts, b"http/1.1")
}

/// Why a mount's TLS configuration cannot be made, in the proxy's terms (the TLS client's
/// messages name bench's `--cacert` and `-k`).
pub(crate) fn setup_error(e: &TlsSetupError) -> String {
    match e {
        TlsSetupError::CaFile { path, source } => format!("{}: {source}", path.display()),
        TlsSetupError::CaEmpty { path } => format!("{}: no certificate in it", path.display()),
        TlsSetupError::CaInvalid { path, source } => format!("{}: {source}", path.display()),
        TlsSetupError::NoRoots => {
            "none: the system has no root certificates that load (install ca-certificates)"
                .to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mounts_client_configuration_is_made_once_and_shared() {
        let ca = test_support::certs::TestCa::new("shared config CA");
        let a = tls_config(Some(&ca.pem)).unwrap();
        let b = tls_config(Some(&ca.pem)).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one configuration, one session cache");
        let other = test_support::certs::TestCa::new("another CA");
        let c = tls_config(Some(&other.pem)).unwrap();
        assert!(
            !Arc::ptr_eq(&a, &c),
            "another CA file, another configuration"
        );
    }
}
