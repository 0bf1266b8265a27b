//! Where a run sends its requests: a URL as wrk, curl and oha users type it, parsed by the `url`
//! crate and resolved once, before anything starts, so that a typo costs one clear line and the
//! hot path never sees DNS.
//!
//! What is taken from the URL: the scheme (`http` or `https`, in any case), the host and port
//! (the scheme's port when none is written), the path and query (sent as the request target when
//! no other files are named), and the user and password, which become `Authorization: Basic`.
//! A fragment is never sent: it belongs to the browser, not the request (RFC 9110, 4.2.4).

use base64::Engine;
use percent_encoding::percent_decode_str;
use std::net::{SocketAddr, ToSocketAddrs};

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Cleartext: HTTP/1.x, or HTTP/2 with prior knowledge.
    Http,
    /// TLS: HTTP/1.x or HTTP/2 as ALPN agrees, or HTTP/3 over QUIC.
    Https,
}

impl Scheme {
    /// `http` or `https`, as a URL writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// The port a URL without one means: 80 or 443.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// A server to benchmark, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    /// Whether connections speak TLS.
    pub scheme: Scheme,
    /// Resolved once, before the run: no DNS on the hot path.
    pub addr: SocketAddr,
    /// The `Host` header value: the host, and the port when it is not the scheme's own
    /// (`127.0.0.1:8080`, `example.com`, `[::1]:8443`).
    pub host: String,
    /// The name TLS asks for (SNI) and checks the certificate against: the host without port
    /// or brackets (an IP address is checked against the certificate's IP addresses).
    pub server_name: String,
    /// What the user wrote (a password in it replaced by `***`), for reports.
    pub url: String,
    /// The URL's path and query when they name more than `/`.
    pub path: Option<String>,
    /// `Basic …` from the URL's user and password, sent as `Authorization`.
    pub authorization: Option<String>,
    /// `--unix-socket`: connections go to this socket (`addr` is then unused; the URL's host
    /// is still the `Host` header).
    pub unix_socket: Option<std::path::PathBuf>,
}

/// A URL that cannot be benchmarked, said in one line.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Not a URL the `url` crate parses, no host, or a bad `--connect-to`/`--resolve`.
    #[error("`{url}`: {reason}")]
    Invalid {
        /// The text as given.
        url: String,
        /// What is wrong, as the parser or the option says it.
        reason: String,
    },
    /// A scheme other than `http` and `https`.
    #[error("`{url}`: {scheme}:// is not supported (http:// or https://)")]
    Scheme {
        /// The text as given.
        url: String,
        /// The scheme it names.
        scheme: String,
    },
    /// A port that is not a number, above 65535, or 0.
    #[error("`{url}`: the port must be a number from 1 to 65535")]
    Port {
        /// The text as given.
        url: String,
    },
    /// The host name did not resolve.
    #[error("`{url}`: cannot resolve `{host}`: {source}")]
    Resolve {
        /// The text as given.
        url: String,
        /// The name looked up.
        host: String,
        /// What the resolver said.
        source: std::io::Error,
    },
    /// The host name resolved to an empty list.
    #[error("`{url}`: `{host}` resolves to no address")]
    NoAddress {
        /// The text as given.
        url: String,
        /// The name looked up.
        host: String,
    },
}

impl Target {
    /// Parses and resolves `text`: `http://host:port/path?query`, `HTTPS://host`, or a bare
    /// `host:port` (taken as `http://`).
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        Self::parse_with(text, true)
    }

    /// As [`Target::parse`] without resolving the host: for [`Target::connect_to`], which
    /// gives the address (the URL's host need not resolve, as with curl's `--connect-to`).
    /// The address is the unspecified one until then.
    pub fn parse_unresolved(text: &str) -> Result<Target, TargetError> {
        Self::parse_with(text, false)
    }

    fn parse_with(text: &str, resolving: bool) -> Result<Target, TargetError> {
        let invalid = |reason: String| TargetError::Invalid {
            url: text.to_owned(),
            reason,
        };
        // Without a scheme, `localhost:8080` would parse as the scheme `localhost`.
        let full = if text.contains("://") {
            text.to_owned()
        } else {
            format!("http://{text}")
        };
        let mut url = url::Url::parse(&full).map_err(|e| match e {
            url::ParseError::InvalidPort => TargetError::Port {
                url: text.to_owned(),
            },
            url::ParseError::EmptyHost => invalid("no host".into()),
            e => invalid(e.to_string()),
        })?;
        let scheme = match url.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(TargetError::Scheme {
                    url: text.to_owned(),
                    scheme: other.to_owned(),
                })
            }
        };
        let port = url.port().unwrap_or(scheme.default_port());
        if port == 0 {
            return Err(TargetError::Port {
                url: text.to_owned(),
            });
        }
        let (addr, server_name) = match url.host() {
            None => return Err(invalid("no host".into())),
            Some(url::Host::Ipv4(ip)) => (SocketAddr::from((ip, port)), ip.to_string()),
            Some(url::Host::Ipv6(ip)) => (SocketAddr::from((ip, port)), ip.to_string()),
            Some(url::Host::Domain(name)) if !resolving => {
                (SocketAddr::from(([0, 0, 0, 0], port)), name.to_owned())
            }
            Some(url::Host::Domain(name)) => (resolve(text, name, port)?, name.to_owned()),
        };
        let host_str = url.host_str().unwrap_or_default();
        let host = match url.port() {
            Some(p) => format!("{host_str}:{p}"),
            None => host_str.to_owned(),
        };
        let authorization = basic_auth(&url);
        let mut path = url.path().to_owned();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let shown = if url.password().is_some() {
            let _ = url.set_password(Some("***"));
            url.set_fragment(None);
            url.to_string()
        } else {
            text.to_owned()
        };
        Ok(Target {
            scheme,
            addr,
            host,
            server_name,
            url: shown,
            path: (path != "/").then_some(path),
            authorization,
            unix_socket: None,
        })
    }

    /// Where connections go, for reports: the address, or `unix:PATH`.
    pub fn endpoint(&self) -> String {
        match &self.unix_socket {
            Some(path) => format!("unix:{}", path.display()),
            None => self.addr.to_string(),
        }
    }

    /// `-a USER:PASS` (oha's and hey's): `Authorization: Basic`, in place of any from the URL.
    pub fn with_basic_auth(mut self, user_pass: &str) -> Target {
        let encoded = base64::engine::general_purpose::STANDARD.encode(user_pass);
        self.authorization = Some(format!("Basic {encoded}"));
        self
    }

    /// Connects to another address while the URL's host stays the `Host` header and the name
    /// TLS asks for and checks, as curl's and oha's `--connect-to` and curl's `--resolve` do.
    /// `spec`: `HOST:PORT` (every connection goes there), curl's `HOST1:PORT1:HOST2:PORT2`
    /// (when the URL is HOST1:PORT1; either may be empty), or with `resolve`, curl's
    /// `HOST:PORT:ADDRESS` (the URL's host and port at that address).
    pub fn connect_to(mut self, spec: &str, curl_resolve: bool) -> Result<Target, TargetError> {
        let flag = if curl_resolve {
            "--resolve"
        } else {
            "--connect-to"
        };
        let invalid = |why: &str| TargetError::Invalid {
            url: spec.to_owned(),
            reason: format!("{flag}: {why}"),
        };
        let parts = split_host_ports(spec);
        let url_port = self.addr.port();
        let matches = |host: &str, port: &str| {
            (host.is_empty() || host.eq_ignore_ascii_case(&self.server_name))
                && (port.is_empty() || port.parse() == Ok(url_port))
        };
        let (host, port) = match (curl_resolve, parts.as_slice()) {
            (false, [host, port]) => (host.to_string(), port.to_string()),
            (false, [h1, p1, h2, p2]) => {
                if !matches(h1, p1) {
                    return Err(invalid(&format!(
                        "`{h1}:{p1}` is not the URL's host and port"
                    )));
                }
                let host = if h2.is_empty() {
                    &self.server_name
                } else {
                    *h2
                };
                let port = if p2.is_empty() {
                    url_port.to_string()
                } else {
                    p2.to_string()
                };
                (host.to_owned(), port)
            }
            (true, [host, port, addr]) => {
                if !matches(host, port) {
                    return Err(invalid(&format!(
                        "`{host}:{port}` is not the URL's host and port"
                    )));
                }
                (addr.to_string(), url_port.to_string())
            }
            (false, _) => return Err(invalid("expected HOST:PORT or HOST1:PORT1:HOST2:PORT2")),
            (true, _) => return Err(invalid("expected HOST:PORT:ADDRESS")),
        };
        let port: u16 = match port.parse() {
            Ok(p) if p > 0 => p,
            _ => return Err(invalid(&format!("`{port}` is not a port"))),
        };
        self.addr = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => SocketAddr::from((ip, port)),
            Err(_) => resolve(spec, &host, port)?,
        };
        Ok(self)
    }

    /// `http://addr`, for a server this process found or started itself.
    pub fn http(addr: SocketAddr) -> Target {
        Target {
            scheme: Scheme::Http,
            addr,
            host: addr.to_string(),
            server_name: addr.ip().to_string(),
            url: format!("http://{addr}"),
            path: None,
            authorization: None,
            unix_socket: None,
        }
    }

    /// `https://addr`, checked against the certificate of `server_name`.
    pub fn https(addr: SocketAddr, server_name: &str) -> Target {
        Target {
            scheme: Scheme::Https,
            host: format!("{server_name}:{}", addr.port()),
            server_name: server_name.to_owned(),
            url: format!("https://{server_name}:{}", addr.port()),
            ..Target::http(addr)
        }
    }
}

/// `a:1:[::1]:2` as `["a", "1", "::1", "2"]`: colons split, except inside brackets.
fn split_host_ports(spec: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut depth) = (0, 0);
    for (i, c) in spec.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ':' if depth == 0 => {
                parts.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&spec[start..]);
    parts
        .into_iter()
        .map(|p| p.trim_start_matches('[').trim_end_matches(']'))
        .collect()
}

/// The first address of `name`: `connect` would try them in order, a benchmark uses one.
fn resolve(url: &str, name: &str, port: u16) -> Result<SocketAddr, TargetError> {
    (name, port)
        .to_socket_addrs()
        .map_err(|source| TargetError::Resolve {
            url: url.to_owned(),
            host: name.to_owned(),
            source,
        })?
        .next()
        .ok_or_else(|| TargetError::NoAddress {
            url: url.to_owned(),
            host: name.to_owned(),
        })
}

/// `Basic base64(user:password)`, both percent-decoded, when the URL names a user.
fn basic_auth(url: &url::Url) -> Option<String> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let mut pair = percent_decode_str(url.username()).collect::<Vec<u8>>();
    pair.push(b':');
    pair.extend(percent_decode_str(url.password().unwrap_or_default()));
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    Some(format!("Basic {encoded}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gives_scheme_address_host_and_path() {
        let t = Target::parse("http://127.0.0.1:8080/x.html?a=1").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!(t.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(t.host, "127.0.0.1:8080");
        assert_eq!(t.server_name, "127.0.0.1");
        assert_eq!(t.path.as_deref(), Some("/x.html?a=1"));
        assert_eq!(t.url, "http://127.0.0.1:8080/x.html?a=1");
        assert_eq!(t.authorization, None);
    }

    #[test]
    fn a_bare_host_is_http_on_port_80_with_no_path() {
        let t = Target::parse("127.0.0.1").unwrap();
        assert_eq!((t.scheme, t.addr.port(), t.path), (Scheme::Http, 80, None));
        let t = Target::parse("localhost:8080/").unwrap();
        assert_eq!((t.addr.port(), t.host.as_str()), (8080, "localhost:8080"));
        assert!(t.addr.ip().is_loopback());
    }

    #[test]
    fn uppercase_schemes_are_accepted_and_https_defaults_to_443() {
        let t = Target::parse("HTTP://127.0.0.1:9/").unwrap();
        assert_eq!((t.scheme, t.addr.port()), (Scheme::Http, 9));
        let t = Target::parse("HtTpS://127.0.0.1/a").unwrap();
        assert_eq!((t.scheme, t.addr.port()), (Scheme::Https, 443));
        assert_eq!(t.host, "127.0.0.1", "the scheme's own port is not written");
    }

    #[test]
    fn a_fragment_is_not_sent() {
        let t = Target::parse("http://127.0.0.1:8080/a.html?q=1#section").unwrap();
        assert_eq!(t.path.as_deref(), Some("/a.html?q=1"));
        let t = Target::parse("http://127.0.0.1:8080/#top").unwrap();
        assert_eq!(t.path, None);
    }

    #[test]
    fn userinfo_becomes_basic_auth_and_the_password_is_not_shown() {
        let t = Target::parse("http://Aladdin:open%20sesame@127.0.0.1:8080/").unwrap();
        // RFC 7617's example, with the space percent-encoded in the URL.
        assert_eq!(
            t.authorization.as_deref(),
            Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        );
        assert!(!t.url.contains("sesame"), "{}", t.url);
        assert_eq!(t.host, "127.0.0.1:8080", "no userinfo in Host");
        let t = Target::parse("http://user@127.0.0.1/").unwrap();
        assert_eq!(t.authorization.as_deref(), Some("Basic dXNlcjo="));
    }

    #[test]
    fn ipv6_hosts_keep_brackets_in_host_and_lose_them_for_tls() {
        let t = Target::parse("https://[::1]:8443/").unwrap();
        assert_eq!(t.addr.to_string(), "[::1]:8443");
        assert_eq!(t.host, "[::1]:8443");
        assert_eq!(t.server_name, "::1");
    }

    #[test]
    fn connect_to_changes_the_address_and_keeps_host_and_name() {
        // A name that does not resolve, as a URL whose server is not up yet: its address given.
        let base = Target::https("127.0.0.1:8443".parse().unwrap(), "example.test");
        let t = base.clone().connect_to("127.0.0.2:9000", false).unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.2:9000");
        assert_eq!(
            (t.host.as_str(), t.server_name.as_str()),
            ("example.test:8443", "example.test")
        );
        let t = base
            .clone()
            .connect_to("example.test:8443:[::1]:9001", false)
            .unwrap();
        assert_eq!(t.addr.to_string(), "[::1]:9001");
        let t = base.clone().connect_to("::127.0.0.3:", false).unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.3:8443");
        let t = base
            .clone()
            .connect_to("example.test:8443:127.0.0.4", true)
            .unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.4:8443");
        let e = base
            .clone()
            .connect_to("other:8443:127.0.0.4", true)
            .unwrap_err();
        assert!(
            e.to_string().contains("is not the URL's host and port"),
            "{e}"
        );
        assert!(base.clone().connect_to("127.0.0.1", false).is_err());
        assert!(base.connect_to("127.0.0.1:0", false).is_err());
    }

    #[test]
    fn dash_a_is_basic_auth() {
        let t =
            Target::http("127.0.0.1:80".parse().unwrap()).with_basic_auth("Aladdin:open sesame");
        assert_eq!(
            t.authorization.as_deref(),
            Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        );
    }

    #[test]
    fn bad_urls_get_one_clear_line() {
        let line = |u: &str| Target::parse(u).unwrap_err().to_string();
        let e = line("http://127.0.0.1:70000/");
        assert!(e.contains("port must be a number from 1 to 65535"), "{e}");
        let e = line("http://127.0.0.1:0/");
        assert!(e.contains("port must be"), "{e}");
        let e = line("ftp://127.0.0.1/");
        assert!(e.contains("ftp:// is not supported"), "{e}");
        let e = line("http://:8080/a");
        assert!(e.starts_with("`http://:8080/a`: "), "{e}");
        let e = line("http://no-such-host.invalid:8080/");
        assert!(e.contains("cannot resolve `no-such-host.invalid`"), "{e}");
        for e in [e, line("http://[::1/")] {
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
