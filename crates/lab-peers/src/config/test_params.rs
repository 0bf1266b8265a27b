//! The parameters the config tests write every peer's config with: a fixed directory, root and
//! loopback port, plain or with the lab's certificate.

use std::net::IpAddr;
use std::path::PathBuf;

use super::{ConfigParams, TlsFiles};

fn params(digest: bool, max_clients: usize) -> (PathBuf, PathBuf, usize, bool) {
    (
        PathBuf::from("/tmp/peer"),
        PathBuf::from("/srv/docs"),
        max_clients,
        digest,
    )
}

pub(super) fn with<T>(digest: bool, max_clients: usize, f: impl FnOnce(&ConfigParams) -> T) -> T {
    let (dir, root, max_clients, digest) = params(digest, max_clients);
    f(&ConfigParams {
        dir: &dir,
        root: &root,
        host: IpAddr::from([127, 0, 0, 1]),
        port: 18123,
        digest,
        max_clients,
        tls: None,
        http2: false,
    })
}

pub(super) fn with_tls<T>(f: impl FnOnce(&ConfigParams) -> T) -> T {
    let tls = TlsFiles {
        cert: PathBuf::from("/tmp/peer/cert.pem"),
        key: PathBuf::from("/tmp/peer/key.pem"),
        ..TlsFiles::default()
    };
    with(false, 40, |p| {
        f(&ConfigParams {
            tls: Some(&tls),
            ..*p
        })
    })
}
