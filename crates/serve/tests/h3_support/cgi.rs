//! CGI over HTTP/3, the set-up the gateway tests share: a directory of `#!/bin/sh` programs
//! mounted at `/cgi-bin/` and a test CA, then flint serve over them (TLS, HTTP/3, one thread)
//! and a client connected to it; and the one-user htpasswd file of the Basic authentication
//! tests.

use std::path::{Path, PathBuf};

use http3::Limits;
use serve::config::AuthZone;

use super::{Certs, Driver};
use crate::cgi_support::Scripts;
use crate::common::TestServer;

/// Programs at `/cgi-bin/` and the CA of the server that runs them ([`CgiH3::start`]).
pub struct CgiH3 {
    pub scripts: Scripts,
    pub certs: Certs,
}

impl CgiH3 {
    pub fn new() -> CgiH3 {
        CgiH3 {
            scripts: Scripts::new(),
            certs: Certs::new(),
        }
    }

    /// Writes the program `/cgi-bin/{name}`: `body` after `#!/bin/sh`.
    pub fn add(&self, name: &str, body: &str) -> &CgiH3 {
        self.scripts.add(name, body);
        self
    }

    /// A file beside the programs (one a program writes: its pid, a marker).
    pub fn file(&self, name: &str) -> PathBuf {
        self.scripts.path().join(name)
    }

    /// Where a test has the server write its access log (`c.access_log = Some(fx.log())`).
    pub fn log(&self) -> PathBuf {
        self.certs.ca.dir().join("access.log")
    }

    /// The access log as written (read once the server has stopped: it is then whole).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).expect("the access log")
    }

    /// flint serve with the programs mounted; `tweak` adjusts.
    pub fn serve(&self, tweak: impl FnOnce(&mut serve::Config)) -> TestServer {
        self.certs.serve(|c| {
            self.scripts.mount(c);
            tweak(c);
        })
    }

    /// [`CgiH3::serve`], and a client connected to it (the handshake done).
    pub fn start(&self, tweak: impl FnOnce(&mut serve::Config)) -> (TestServer, Driver) {
        self.start_with(&Limits::default(), tweak)
    }

    /// [`CgiH3::start`] with a client of these limits (its windows, say).
    pub fn start_with(
        &self,
        limits: &Limits,
        tweak: impl FnOnce(&mut serve::Config),
    ) -> (TestServer, Driver) {
        let srv = self.serve(tweak);
        let d = Driver::connect(&mut self.certs.client_with(limits), srv.addr);
        (srv, d)
    }
}

/// Basic authentication over `prefix`, its realm `flint`: one user, alice, password
/// `pw-alice`, in an htpasswd file written in `dir` (bcrypt at cost 4: quick to check).
pub fn alice_zone(dir: &Path, prefix: &str) -> AuthZone {
    let hash = bcrypt::hash_with_salt("pw-alice", 4, *b"0123456789abcdef")
        .unwrap()
        .format_for_version(bcrypt::Version::TwoY);
    let file = dir.join("htpasswd");
    std::fs::write(&file, format!("alice:{hash}\n")).unwrap();
    AuthZone {
        prefix: prefix.into(),
        file,
        realm: "flint".into(),
    }
}

/// An `authorization` field's value for `user` and `password`.
pub fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let t = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {t}")
}
