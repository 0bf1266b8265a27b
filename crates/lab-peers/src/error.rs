//! Why a peer could not be used: not installed, or installed and failing.

use crate::PeerKind;
use std::net::SocketAddr;
use std::time::Duration;

/// Why a peer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The server's program (or, for Apache, one of the modules the lab loads) is not on this
    /// machine: the caller goes on with the other peers.
    #[error("{kind} is not installed (install: {install})")]
    NotInstalled {
        /// The server missing.
        kind: PeerKind,
        /// The command that installs it (a Debian package, or how flint is built).
        install: &'static str,
    },
    /// A file or a process could not be made, written or run.
    #[error("{kind}: {what}: {source}")]
    Io {
        /// The server it was for.
        kind: PeerKind,
        /// What was being done (`writing nginx.conf`, `running nginx -v`).
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// Content-MD5 was asked of a server that cannot add it (the digest experiment).
    #[error("{kind} has no Content-MD5 option")]
    NoDigest {
        /// The server asked.
        kind: PeerKind,
    },
    /// The server exited before it accepted connections.
    #[error("{kind} exited during start-up ({status}); its log:\n{log}")]
    Exited {
        /// The server that exited.
        kind: PeerKind,
        /// Its exit status, as the system says it.
        status: String,
        /// The last lines of its log, where a server says why.
        log: String,
    },
    /// The server ran but did not accept connections (or, for Apache, its pool was not up)
    /// within the spec's readiness timeout.
    #[error("{kind} did not accept connections on {addr} within {waited:?}; its log:\n{log}")]
    NotReady {
        /// The server that was not ready.
        kind: PeerKind,
        /// Where it should have listened.
        addr: SocketAddr,
        /// How long it was given.
        waited: Duration,
        /// The last lines of its log.
        log: String,
    },
}
