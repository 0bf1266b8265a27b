//! The ways of fetching the microscape page ([`PageMode`]).
//!
//! Each is bench's own with one client: `http1.0`, `persistent` and `pipelined` fetch the page
//! over one connection at a time; `http1.0-4` and `keepalive-6` are the browsers' ways, one
//! client whose 4 or 6 connections share the page's files (bench's `connections_per_child`):
//! each takes the page's next file when it is free, `keepalive-6`'s connections kept alive from
//! page to page, `http1.0-4`'s one per file, four at a time; `h2` one HTTP/2 connection; `h3` one
//! QUIC connection (HTTP/3), over TLS only: QUIC is always encrypted, so its cleartext rows say
//! why they are not there, and its TLS rows sit beside `h2`'s TLS rows (HTTP/2 over TLS with the
//! same certificate). bench measures the page time, from the page's start to its last file's
//! last byte, in every way.

use bench::HttpMode;
use lab_peers::PeerKind;

/// A way of fetching the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageMode {
    /// A connection per file, one at a time (the notes' Navigator).
    Http10,
    /// One HTTP/1.1 connection, one request at a time.
    Persistent,
    /// One HTTP/1.1 connection, all requests written at once (the notes' robot).
    Pipelined,
    /// A connection per file, four at a time (the 1997 browsers).
    Http10x4,
    /// Six persistent HTTP/1.1 connections sharing the page (today's browsers without HTTP/2).
    KeepAlive6,
    /// One HTTP/2 connection, the files as concurrent streams.
    H2,
    /// One QUIC connection (HTTP/3), the files as concurrent streams: TLS only.
    H3,
}

/// Why the `h2` mode cannot run on a server that does not speak HTTP/2 with the lab's config.
pub const H2_SERVER_MISSING: &str = "server lacks HTTP/2";
/// Why the `h3` mode cannot run on a server that does not speak HTTP/3 with the lab's config
/// (nginx 1.22 and h2o 2.2, Debian bookworm's, were built without it).
pub const H3_SERVER_MISSING: &str = "server lacks HTTP/3";
/// Why the `h3` mode has no cleartext rows.
pub const H3_NEEDS_TLS: &str = "HTTP/3 runs over QUIC, which is always encrypted: TLS rows only";

impl std::str::FromStr for PageMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PageMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = PageMode::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mode `{s}` (known: {})", names.join(", "))
            })
    }
}

impl PageMode {
    /// Every way, in the order the page experiment runs and tables them.
    pub const ALL: [PageMode; 7] = [
        PageMode::Http10,
        PageMode::Persistent,
        PageMode::Pipelined,
        PageMode::Http10x4,
        PageMode::KeepAlive6,
        PageMode::H2,
        PageMode::H3,
    ];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            PageMode::Http10 => "http1.0",
            PageMode::Persistent => "persistent",
            PageMode::Pipelined => "pipelined",
            PageMode::Http10x4 => "http1.0-4",
            PageMode::KeepAlive6 => "keepalive-6",
            PageMode::H2 => "h2",
            PageMode::H3 => "h3",
        }
    }

    /// bench's mode for each connection.
    pub fn http(self) -> HttpMode {
        match self {
            PageMode::Http10 | PageMode::Http10x4 => HttpMode::Http10,
            PageMode::Persistent | PageMode::KeepAlive6 => HttpMode::KeepAlive,
            PageMode::Pipelined => HttpMode::Pipeline,
            PageMode::H2 => HttpMode::Http2,
            PageMode::H3 => HttpMode::Http3,
        }
    }

    /// Whether the server must be started with HTTP/2 on (nginx's cleartext `http2` listener
    /// speaks nothing else, so the HTTP/1 ways run on a peer started without it).
    pub fn needs_http2(self) -> bool {
        self == PageMode::H2
    }

    /// Whether the server must be started with HTTP/3 on (its UDP port open): only for `h3`, so
    /// the other ways meet a server configured as the peers it is compared with are.
    pub fn needs_http3(self) -> bool {
        self == PageMode::H3
    }

    /// Connections that share one page at a time.
    pub fn connections(self) -> usize {
        match self {
            PageMode::Http10x4 => 4,
            PageMode::KeepAlive6 => 6,
            _ => 1,
        }
    }

    /// Why `server` cannot serve the page this way (over TLS when `tls`), if it cannot.
    pub fn unavailable(self, server: PeerKind, tls: bool) -> Option<String> {
        match self {
            PageMode::H2 if !server.speaks_http2() => Some(H2_SERVER_MISSING.into()),
            PageMode::H3 if !tls => Some(H3_NEEDS_TLS.into()),
            PageMode::H3 if !server.speaks_http3() => Some(H3_SERVER_MISSING.into()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_name_their_connections_and_what_they_need() {
        let names: Vec<&str> = PageMode::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(
            names,
            [
                "http1.0",
                "persistent",
                "pipelined",
                "http1.0-4",
                "keepalive-6",
                "h2",
                "h3"
            ]
        );
        assert_eq!(PageMode::Http10x4.connections(), 4);
        assert_eq!(PageMode::KeepAlive6.connections(), 6);
        assert_eq!(PageMode::Http10x4.http(), HttpMode::Http10);
        assert_eq!(PageMode::H2.http(), HttpMode::Http2);
        assert_eq!(PageMode::H3.http(), HttpMode::Http3);
        assert_eq!(PageMode::H3.connections(), 1);
        assert!(PageMode::H3.needs_http3() && !PageMode::H3.needs_http2());
        assert!(!PageMode::H2.needs_http3());
        for tls in [false, true] {
            assert_eq!(PageMode::H2.unavailable(PeerKind::Nginx, tls), None);
            assert_eq!(
                PageMode::H2
                    .unavailable(PeerKind::ApachePrefork, tls)
                    .as_deref(),
                Some(H2_SERVER_MISSING)
            );
            assert_eq!(
                PageMode::KeepAlive6.unavailable(PeerKind::ApachePrefork, tls),
                None
            );
        }
        // HTTP/3 over TLS only, and from the servers that speak it with the lab's config.
        assert_eq!(
            PageMode::H3.unavailable(PeerKind::Flint, false).as_deref(),
            Some(H3_NEEDS_TLS)
        );
        assert_eq!(PageMode::H3.unavailable(PeerKind::Flint, true), None);
        for kind in [PeerKind::Nginx, PeerKind::H2o, PeerKind::ApacheEvent] {
            assert_eq!(
                PageMode::H3.unavailable(kind, true).as_deref(),
                Some(H3_SERVER_MISSING),
                "{kind}"
            );
        }
    }

    #[test]
    fn modes_parse_by_name_and_an_unknown_one_lists_the_known() {
        assert_eq!("h3".parse::<PageMode>(), Ok(PageMode::H3));
        assert_eq!("h2".parse::<PageMode>(), Ok(PageMode::H2));
        let err = "h4".parse::<PageMode>().unwrap_err();
        assert!(
            err.contains("unknown mode `h4`") && err.ends_with("h2, h3)"),
            "{err}"
        );
    }
}
