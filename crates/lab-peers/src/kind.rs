//! Which servers the lab knows ([`PeerKind`]). Whether one is installed here
//! ([`Installed`](crate::Installed)) is `installed.rs`, above this file and the errors that name
//! a server.

use std::fmt;
use std::str::FromStr;

/// The servers the lab knows how to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerKind {
    /// flint serve, from the `flint` executable the spec names (`flint lab` passes its own).
    Flint,
    /// nginx: one worker process, event-driven.
    Nginx,
    /// Apache httpd with the prefork MPM: a process per connection, as many as
    /// [`apache_workers`](crate::apache_workers) gives (a quarter more than the
    /// clients, plus two, at least 8).
    ApachePrefork,
    /// Apache httpd with the event MPM: one child process, its threads as many as
    /// [`apache_workers`](crate::apache_workers) gives.
    ApacheEvent,
    /// lighttpd: one process, event-driven.
    Lighttpd,
    /// h2o, an HTTP/2-first server (Debian's `h2o` package).
    H2o,
    /// Caddy (Debian's `caddy` package): the page experiment (HTTP/1 over both, HTTP/3 over TLS)
    /// and the dynamic one.
    Caddy,
}

impl PeerKind {
    /// Every server the lab knows: an experiment's servers unless its options name fewer.
    pub const ALL: [PeerKind; 7] = [
        PeerKind::Flint,
        PeerKind::Nginx,
        PeerKind::ApachePrefork,
        PeerKind::ApacheEvent,
        PeerKind::Lighttpd,
        PeerKind::H2o,
        PeerKind::Caddy,
    ];

    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::Flint => "flint",
            PeerKind::Nginx => "nginx",
            PeerKind::ApachePrefork => "apache-prefork",
            PeerKind::ApacheEvent => "apache-event",
            PeerKind::Lighttpd => "lighttpd",
            PeerKind::H2o => "h2o",
            PeerKind::Caddy => "caddy",
        }
    }

    /// The Debian command that installs it (flint: how to build it).
    pub fn install_hint(self) -> &'static str {
        match self {
            PeerKind::Flint => "cargo build --release -p flint (or set FLINT_BIN)",
            PeerKind::Nginx => "apt-get install -y nginx",
            PeerKind::ApachePrefork | PeerKind::ApacheEvent => "apt-get install -y apache2",
            PeerKind::Lighttpd => "apt-get install -y lighttpd",
            PeerKind::H2o => "apt-get install -y h2o",
            PeerKind::Caddy => "apt-get install -y caddy",
        }
    }

    /// Whether it can add Content-MD5 to responses (the digest experiment).
    pub fn supports_digest(self) -> bool {
        matches!(
            self,
            PeerKind::Flint | PeerKind::ApachePrefork | PeerKind::ApacheEvent
        )
    }

    /// The executable's name, looked up on PATH and in the sbin directories.
    pub(crate) fn program_name(self) -> &'static str {
        match self {
            PeerKind::Flint => "flint",
            PeerKind::Nginx => "nginx",
            PeerKind::ApachePrefork | PeerKind::ApacheEvent => "apache2",
            PeerKind::Lighttpd => "lighttpd",
            PeerKind::H2o => "h2o",
            PeerKind::Caddy => "caddy",
        }
    }

    /// Whether it speaks HTTP/2 with the config `config.rs` writes when [`PeerSpec::http2`] is
    /// set (h2 over TLS by ALPN, h2c over cleartext): all but Apache prefork, whose
    /// mod_http2 serves one stream at a time, and Caddy, whose config here speaks HTTP/1.1 (and
    /// HTTP/3 when asked).
    ///
    /// [`PeerSpec::http2`]: crate::PeerSpec::http2
    pub fn speaks_http2(self) -> bool {
        !matches!(self, PeerKind::ApachePrefork | PeerKind::Caddy)
    }

    /// Whether it speaks HTTP/3 (QUIC on the TLS port's UDP twin) with the config `config.rs`
    /// writes when [`TlsFiles::http3`] is set: flint serve and Caddy. nginx 1.22 and h2o 2.2
    /// (Debian bookworm's) were built without HTTP/3 (`nginx -V` names no `http_v3_module`).
    ///
    /// [`TlsFiles::http3`]: crate::TlsFiles::http3
    pub fn speaks_http3(self) -> bool {
        matches!(self, PeerKind::Flint | PeerKind::Caddy)
    }
}

impl fmt::Display for PeerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PeerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PeerKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = PeerKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown server `{s}` (known: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_round_trip_and_unknown_names_are_refused() {
        for kind in PeerKind::ALL {
            assert_eq!(kind.name().parse::<PeerKind>(), Ok(kind));
        }
        let err = "apache".parse::<PeerKind>().expect_err("not a peer");
        assert!(err.contains("apache-prefork"), "{err}");
    }
}
