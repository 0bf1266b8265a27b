//! Why a peer could not be used: not installed, or installed and failing.

use crate::PeerKind;
use std::net::SocketAddr;
use std::time::Duration;

/// Why a peer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{kind} is not installed (install: {install})")]
    NotInstalled {
        kind: PeerKind,
        install: &'static str,
    },
    #[error("{kind}: {what}: {source}")]
    Io {
        kind: PeerKind,
        what: String,
        source: std::io::Error,
    },
    #[error("{kind} has no Content-MD5 option")]
    NoDigest { kind: PeerKind },
    #[error("{kind} exited during start-up ({status}); its log:\n{log}")]
    Exited {
        kind: PeerKind,
        status: String,
        log: String,
    },
    #[error("{kind} did not accept connections on {addr} within {waited:?}; its log:\n{log}")]
    NotReady {
        kind: PeerKind,
        addr: SocketAddr,
        waited: Duration,
        log: String,
    },
}
