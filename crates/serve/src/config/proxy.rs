//! Reverse-proxy mounts: `--proxy PREFIX=http://HOST:PORT` (or `https://HOST:PORT`, or
//! `unix:PATH`) and `[[proxy]]` tables.

use std::net::ToSocketAddrs;
use std::path::PathBuf;

use super::forwarding::{Cidr, Forwarding};
use super::text::{parsed_list_from_toml, prefix_from_toml, split_pair};
use super::FastCgiAddr;

/// Targets under `prefix` are sent, path unchanged, to one of `upstreams` (round robin).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyMount {
    /// The URL prefix, normalised as a CGI mount's (`/api`).
    #[serde(deserialize_with = "prefix_from_toml")]
    pub prefix: String,
    /// `http://HOST:PORT`, `https://HOST:PORT` (resolved at start) or `unix:PATH` each.
    #[serde(deserialize_with = "upstreams_from_toml")]
    pub upstreams: Vec<Upstream>,
    /// A new connection must be established within this, ms.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_ms: u64,
    /// The response's final head must come within this of the request's last byte, ms: 1xx
    /// heads before it do not move the deadline (and count against `max_header_bytes`).
    #[serde(default = "default_first_byte_timeout")]
    pub first_byte_timeout_ms: u64,
    /// Longest gap between two reads or writes of an exchange under way, ms (a client that
    /// reads nothing stops the reads too: it bounds that wait as well).
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: u64,
    /// Idle connections kept at most per upstream address and per thread; 0 closes each after
    /// its response. Every connection that comes back is kept up to this (so as many as were in
    /// use at once stay for the next burst), each closed once unused for `idle_timeout_ms`.
    /// At most 65,536; at most `max_in_flight` are kept (a thread never has more to keep).
    /// Unset, it follows `max_in_flight` ([`ProxyMount::pool_size`]).
    #[serde(default)]
    pub pool: Option<usize>,
    /// Requests of this mount under way at once per thread (503 past it): the proxy's own
    /// bound, independent of `cgi_max_programs` (a proxied request holds a socket and two
    /// buffers, no process). Like nginx's `worker_connections` or HAProxy's `maxconn`, a
    /// guard against an upstream that stops answering, set high enough that no client
    /// (an HTTP/2 client with its 100 streams, many clients) meets it in normal use.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// An address that refused, reset or timed out before answering is skipped this long, ms.
    #[serde(default = "default_fail_timeout")]
    pub fail_timeout_ms: u64,
    /// The forwarding fields written for the upstream (`x-forwarded`, `forwarded`, `both`,
    /// `none`).
    #[serde(default)]
    pub forwarding: Forwarding,
    /// Clients (other proxies) whose own forwarding fields are kept and appended to; every
    /// other client's are dropped.
    #[serde(default, deserialize_with = "parsed_list_from_toml")]
    pub trusted: Vec<Cidr>,
    /// PEM certificates an `https://` upstream's certificate is checked against, beside the
    /// system's roots (`--proxy-cacert`); a self-signed certificate given here is trusted as
    /// the upstream's own, for the names it carries.
    #[serde(default)]
    pub cacert: Option<PathBuf>,
    /// With `h3_early_data`: a safe request (GET, HEAD, OPTIONS) received in 0-RTT is sent on
    /// to the upstream, marked `Early-Data: 1` (RFC 8470 5.1), instead of refused with 425;
    /// the upstream says whether it may run it now, and its 425 goes back as it is. Default
    /// off: only an upstream that understands the mark should be sent what may be a replay.
    #[serde(default)]
    pub early_data: bool,
}

impl ProxyMount {
    /// The idle connections kept per address and thread: `pool` when set, else as many as may
    /// be in flight (HTTP/2 clients in front put hundreds of requests in flight at once, and a
    /// pool smaller than that closes the surplus after each burst and connects again for the
    /// next one); never more than `max_in_flight` (a thread never has more to keep).
    pub fn pool_size(&self) -> usize {
        self.pool
            .unwrap_or(self.max_in_flight)
            .min(self.max_in_flight)
    }
}

/// One upstream address, as written and as resolved: a TCP address, or a unix socket (the
/// FastCGI pool's connections, which the proxy's share, reach both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// As written (without the scheme), for the error log.
    pub name: String,
    /// Where to connect: a TCP address (a name resolved once, when the mount is read) or a
    /// unix socket.
    pub addr: FastCgiAddr,
    /// `https://`: the name its certificate is checked against (and sent as SNI): the host
    /// as written, without the port.
    pub tls_name: Option<String>,
}

impl Upstream {
    /// The `Host` of a request that has none: the name as written, `localhost` for a socket
    /// (a path is no host name).
    pub fn host(&self) -> &str {
        match self.addr {
            FastCgiAddr::Tcp(_) => &self.name,
            FastCgiAddr::Unix(_) => "localhost",
        }
    }
}

fn default_connect_timeout() -> u64 {
    5_000
}
fn default_first_byte_timeout() -> u64 {
    60_000
}
fn default_idle_timeout() -> u64 {
    60_000
}
fn default_max_in_flight() -> usize {
    1024
}

/// The largest `max_in_flight` and `pool`: each request in flight may hold an upstream socket,
/// and a thread past this many would run out of descriptors long before.
pub const MAX_IN_FLIGHT: usize = 65_536;
fn default_fail_timeout() -> u64 {
    10_000
}

/// `http://HOST:PORT` (the port defaulting to 80, no path: the client's is passed unchanged),
/// `https://HOST:PORT` (443: HTTP/1.1 over TLS, the certificate checked for HOST), or
/// `unix:PATH`, a socket spoken to in HTTP/1.1 as a TCP upstream is.
pub fn parse_upstream(text: &str) -> Result<Upstream, String> {
    if let Some(path) = text.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(format!("`{text}`: the socket path is empty"));
        }
        return Ok(Upstream {
            name: text.to_string(),
            addr: FastCgiAddr::Unix(PathBuf::from(path)),
            tls_name: None,
        });
    }
    let (rest, tls, port) = if let Some(rest) = text.strip_prefix("http://") {
        (rest, false, 80)
    } else if let Some(rest) = text.strip_prefix("https://") {
        (rest, true, 443)
    } else {
        return Err(format!(
            "`{text}`: an upstream is http://HOST:PORT, https://HOST:PORT or unix:PATH"
        ));
    };
    let hostport = rest.strip_suffix('/').unwrap_or(rest);
    if hostport.is_empty() || hostport.contains('/') {
        return Err(format!(
            "`{text}`: an upstream has no path (the request's path is passed unchanged)"
        ));
    }
    let has_port = !hostport.ends_with(']') && hostport.contains(':');
    let with_port = if has_port {
        hostport.to_string()
    } else {
        format!("{hostport}:{port}")
    };
    let host = match hostport.rsplit_once(':') {
        Some((host, _)) if has_port => host,
        _ => hostport,
    };
    let tls_name = tls.then(|| {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()
    });
    // Checked here, once: a name rustls refuses would fail every request at connect.
    if let Some(name) = &tls_name {
        if rustls::pki_types::ServerName::try_from(name.as_str()).is_err() {
            return Err(format!(
                "`{text}`: `{name}` is not a host name or address a certificate can be checked against"
            ));
        }
    }
    let found = with_port.to_socket_addrs().ok().and_then(|mut a| a.next());
    match found {
        Some(addr) => Ok(Upstream {
            name: hostport.to_string(),
            addr: FastCgiAddr::Tcp(addr),
            tls_name,
        }),
        None => Err(format!("`{text}`: cannot resolve the upstream's address")),
    }
}

fn upstreams_from_toml<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Upstream>, D::Error> {
    let texts = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    if texts.is_empty() {
        return Err(serde::de::Error::custom("`upstreams` is empty"));
    }
    (texts.iter())
        .map(|t| parse_upstream(t).map_err(serde::de::Error::custom))
        .collect()
}

impl std::str::FromStr for ProxyMount {
    type Err = String;

    /// `PREFIX=http://HOST:PORT` or `PREFIX=unix:PATH`: `/api/=http://127.0.0.1:8080`, with the
    /// default timeouts.
    fn from_str(text: &str) -> Result<ProxyMount, String> {
        let (prefix, upstream) = split_pair(text, "PREFIX=URL (`/api/=http://127.0.0.1:8080`)")?;
        Ok(ProxyMount {
            prefix: super::parse_auth_prefix(prefix)?,
            upstreams: vec![parse_upstream(upstream)?],
            connect_timeout_ms: default_connect_timeout(),
            first_byte_timeout_ms: default_first_byte_timeout(),
            idle_timeout_ms: default_idle_timeout(),
            pool: None,
            max_in_flight: default_max_in_flight(),
            fail_timeout_ms: default_fail_timeout(),
            forwarding: Forwarding::default(),
            trusted: Vec::new(),
            cacert: None,
            early_data: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_names_a_prefix_and_one_upstream() {
        let m: ProxyMount = "/api/=http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(m.prefix, "/api");
        let tcp = FastCgiAddr::Tcp("127.0.0.1:8080".parse().unwrap());
        assert_eq!(m.upstreams[0].addr, tcp);
        assert_eq!(m.upstreams[0].host(), "127.0.0.1:8080");
        let m: ProxyMount = "/=http://127.0.0.1".parse().unwrap();
        let tcp = FastCgiAddr::Tcp("127.0.0.1:80".parse().unwrap());
        assert_eq!((m.prefix.as_str(), &m.upstreams[0].addr), ("/", &tcp));
        let m: ProxyMount = "/api/=unix:/run/x.sock".parse().unwrap();
        let unix = FastCgiAddr::Unix("/run/x.sock".into());
        assert_eq!(
            (&m.upstreams[0].addr, m.upstreams[0].host()),
            (&unix, "localhost")
        );
        assert_eq!(m.upstreams[0].name, "unix:/run/x.sock");
        assert_eq!(m.upstreams[0].tls_name, None);
        let m: ProxyMount = "/api/=https://localhost".parse().unwrap();
        let u = &m.upstreams[0];
        assert_eq!(u.tls_name.as_deref(), Some("localhost"));
        assert!(matches!(u.addr, FastCgiAddr::Tcp(a) if a.port() == 443));
        assert_eq!(u.host(), "localhost");
        let m: ProxyMount = "/api/=https://[::1]:8443/".parse().unwrap();
        let u = &m.upstreams[0];
        assert_eq!(
            (u.tls_name.as_deref(), u.host()),
            (Some("::1"), "[::1]:8443")
        );
        let m: ProxyMount = "/api/=http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(m.upstreams[0].tls_name, None);
        // A name no certificate can be checked against is refused when read, in one line.
        let e = "/api/=https://no such name:8443"
            .parse::<ProxyMount>()
            .unwrap_err();
        assert!(e.contains("`no such name` is not a host name"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        for bad in [
            "/api/",
            "api/=http://127.0.0.1:1",
            "/api/=ftp://127.0.0.1:1",
            "/api/=https://127.0.0.1:1/base/",
            "/api/=http://127.0.0.1:1/base/",
            "/api/=unix:",
            "/a/../b=http://127.0.0.1:1",
        ] {
            assert!(bad.parse::<ProxyMount>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_table_takes_several_upstreams_and_its_timeouts() {
        let text = "[[proxy]]\nprefix = \"/api/\"\nupstreams = [\"http://127.0.0.1:1\", \"http://[::1]:2\"]\nidle_timeout_ms = 5\npool = 3\n";
        let c: crate::config::Config = toml::from_str(text).unwrap();
        let m = &c.proxy[0];
        assert_eq!(
            (m.upstreams.len(), m.idle_timeout_ms, m.pool_size()),
            (2, 5, 3)
        );
        assert_eq!((m.connect_timeout_ms, m.max_in_flight), (5_000, 1024));
        assert!(!m.early_data, "0-RTT to an upstream is opted in to");
        let text = "cgi_early_data = true\n[[proxy]]\nprefix = \"/\"\nupstreams = [\"http://127.0.0.1:1\"]\nearly_data = true\n";
        let c: crate::config::Config = toml::from_str(text).unwrap();
        assert!(c.proxy[0].early_data && c.cgi_early_data);
        let m: ProxyMount = "/api/=http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(
            m.pool_size(),
            m.max_in_flight,
            "every connection that comes back is kept"
        );
        // Unset, the pool follows the mount's own `max_in_flight`, not its default.
        let text = "[[proxy]]\nprefix = \"/\"\nupstreams = [\"http://127.0.0.1:1\"]\nmax_in_flight = 4096\n";
        let c: crate::config::Config = toml::from_str(text).unwrap();
        assert_eq!(c.proxy[0].pool_size(), 4096);
        let text = "[[proxy]]\nprefix = \"/\"\nupstreams = [\"http://127.0.0.1:1\"]\nmax_in_flight = 8\npool = 100\n";
        let c: crate::config::Config = toml::from_str(text).unwrap();
        assert_eq!(
            c.proxy[0].pool_size(),
            8,
            "no more kept than may be in flight"
        );
        assert_eq!((m.forwarding, m.trusted.len()), (Forwarding::XForwarded, 0));
        let text = "[[proxy]]\nprefix = \"/\"\nupstreams = [\"http://127.0.0.1:1\"]\nforwarding = \"both\"\ntrusted = [\"10.0.0.0/8\", \"::1\"]\n";
        let c: crate::config::Config = toml::from_str(text).unwrap();
        assert_eq!(
            (c.proxy[0].forwarding, c.proxy[0].trusted.len()),
            (Forwarding::Both, 2)
        );
        for bad in [
            "forwarding = \"all\"",
            "trusted = [\"10.0.0.0/40\"]",
            "trusted = [\"::ffff:10.0.0.0/8\"]",
            "trusted = \"::1\"",
        ] {
            let text =
                format!("[[proxy]]\nprefix = \"/\"\nupstreams = [\"http://127.0.0.1:1\"]\n{bad}\n");
            assert!(
                toml::from_str::<crate::config::Config>(&text).is_err(),
                "{bad}"
            );
        }
        assert!(toml::from_str::<crate::config::Config>(
            "[[proxy]]\nprefix = \"/a\"\nupstreams = []\n"
        )
        .is_err());
        assert!(toml::from_str::<crate::config::Config>(
            "[[proxy]]\nprefix = \"/a\"\nupstreams = [\"http://127.0.0.1:1\"]\npool_size = 1\n"
        )
        .is_err());
    }

    /// A mount made in code, not parsed, is checked as the parser checks one, each fault in one
    /// line naming its key; a zero timeout is refused as well (it would time out every request).
    #[test]
    fn a_mount_made_in_code_is_validated_as_a_parsed_one() {
        let good: ProxyMount = "/api/=http://127.0.0.1:1".parse().unwrap();
        let with = |f: fn(&mut ProxyMount)| {
            let mut m = good.clone();
            f(&mut m);
            let c = crate::config::Config {
                proxy: vec![m],
                ..Default::default()
            };
            c.validate().map_err(|e| e.to_string())
        };
        assert_eq!(with(|_| {}), Ok(()));
        // A pool larger than the requests in flight is no fault: no more than those are kept.
        assert_eq!(
            with(|m| {
                m.max_in_flight = 8;
                m.pool = Some(MAX_IN_FLIGHT);
            }),
            Ok(())
        );
        let refused = [
            (with(|m| m.upstreams.clear()), "`proxy.upstreams`"),
            (with(|m| m.prefix = "api".into()), "`proxy.prefix`"),
            (
                with(|m| m.connect_timeout_ms = 0),
                "`proxy.connect_timeout_ms`",
            ),
            (
                with(|m| m.first_byte_timeout_ms = 0),
                "`proxy.first_byte_timeout_ms`",
            ),
            (with(|m| m.idle_timeout_ms = 0), "`proxy.idle_timeout_ms`"),
            (with(|m| m.max_in_flight = 0), "`proxy.max_in_flight`"),
            (
                with(|m| m.max_in_flight = MAX_IN_FLIGHT + 1),
                "`proxy.max_in_flight`",
            ),
            // An absurd pool would reserve its room at start: refused in one line instead.
            (with(|m| m.pool = Some(1 << 40)), "`proxy.pool`"),
        ];
        for (got, key) in refused {
            let line = got.unwrap_err();
            assert!(line.starts_with(key), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
        let zero: Result<crate::config::Config, _> = toml::from_str(
            "[[proxy]]\nprefix = \"/a\"\nupstreams = [\"http://127.0.0.1:1\"]\nidle_timeout_ms = 0\n",
        );
        assert!(zero.unwrap().validate().is_err());
    }
}
