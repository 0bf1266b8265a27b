//! The configs `flint lab` writes for its peers: minimal, and the same on every machine.
//!
//! Each server gets only what serving static files fast needs, with the settings the papers'
//! measurements assume: no access log, persistent connections that are never closed in the middle
//! of a measurement, sendfile where the server has it, file metadata cached where it can be.
//! Nothing points outside the peer's private directory except the document root and, for Apache,
//! its modules, so a peer never touches the distribution's own configuration, logs or pid files.
//! These functions only build text; [`super::Peer::start`] writes and uses it.
//!
//! What every config is given is here ([`ConfigParams`], [`TlsFiles`]); each server's config is
//! in a file of its name: `nginx.rs`, `apache.rs`, `lighttpd.rs`, `h2o.rs`, `caddy.rs`, and
//! flint serve's command line in `flint.rs`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

mod apache;
mod caddy;
mod flint;
mod h2o;
mod lighttpd;
mod nginx;
#[cfg(test)]
mod test_params;
pub use apache::{apache, apache_mime_types, apache_workers, Mpm, APACHE_MODULES};
pub use caddy::{caddy, caddy_env, CADDY_FILE_SERVER};
pub use flint::flint_args;
pub use h2o::h2o;
pub use lighttpd::{lighttpd, LIGHTTPD_OPENSSL};
pub use nginx::{nginx, NGINX_TLS_LOG_FORMAT};

/// What every config needs to know.
#[derive(Debug, Clone, Copy)]
pub struct ConfigParams<'a> {
    /// The peer's private directory: config, logs, pid file, locks, temp files.
    pub dir: &'a Path,
    /// The document root, shared by every peer of an experiment.
    pub root: &'a Path,
    /// The address to listen on (loopback, or the server's end of the lab's network path).
    pub host: IpAddr,
    /// The port to listen on.
    pub port: u16,
    /// Content-MD5 on each response (Apache's `ContentDigest On`; flint's `--digest`).
    pub digest: bool,
    /// Connections the experiment keeps open at once: a process-per-connection server (Apache
    /// prefork) needs at least that many processes, or clients starve behind kept-alive ones.
    pub max_clients: usize,
    /// Serve HTTPS only, with this certificate and key.
    pub tls: Option<&'a TlsFiles>,
    /// Speak HTTP/2 as well: h2 by ALPN over TLS, h2c (prior knowledge) over cleartext. nginx
    /// before 1.25 speaks only h2c on a cleartext `http2` listener, so HTTP/1 needs a peer
    /// started without it.
    pub http2: bool,
}

/// A certificate chain and its private key, PEM files the lab made (`flint lab tls`), and what
/// tests that hold a client against nginx's own account need besides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// The leaf's private key (PEM).
    pub key: PathBuf,
    /// nginx's `ssl_protocols` and `ssl_ciphers` in place of the lab's (TLS 1.2 and 1.3,
    /// OpenSSL's default ciphers): `("TLSv1", "DEFAULT@SECLEVEL=0")` makes a server that speaks
    /// only TLS 1.0 (OpenSSL 3 refuses it above security level 0). The other peers ignore it.
    pub nginx_protocols: Option<(String, String)>,
    /// nginx logs every request here, one line each in [`NGINX_TLS_LOG_FORMAT`]; `None`: no
    /// access log, as measurements want. The other peers ignore it.
    pub nginx_access_log: Option<PathBuf>,
    /// Answer HTTP/3 too, on the UDP port of the same number, where the server can
    /// ([`crate::PeerKind::speaks_http3`]); off, the peer is TCP alone, as the peers it is
    /// compared with are.
    pub http3: bool,
}

/// The MIME types of the lab's documents (`Content-Type` only; the lab never checks them).
const TYPES: [(&str, &str); 4] = [
    ("html", "text/html"),
    ("gif", "image/gif"),
    ("zip", "application/zip"),
    ("bin", "application/octet-stream"),
];

#[cfg(test)]
mod tests;
