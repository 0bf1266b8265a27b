//! `listen`: the address `--listen` and the file's key take, a port, an address or a name.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

/// The address a bare port (`--listen 8080`) or a bare host listens on, and the port a bare
/// host gets: loopback, so that exposing files to the network always takes an explicit address.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// Why a listen address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenError {
    /// None of the accepted forms; the text as given.
    #[error("`{0}`: expected PORT, HOST:PORT, IPv4:PORT or [IPv6]:PORT")]
    Syntax(String),
    /// A port that is not a number from 0 to 65535; the text as given.
    #[error("`{0}`: the port must be a number from 0 to 65535")]
    Port(String),
    /// A host name the resolver did not turn into an address.
    #[error("`{host}`: cannot resolve: {reason}")]
    Resolve {
        /// The name, as given.
        host: String,
        /// What the resolver said.
        reason: String,
    },
}

/// Parses a listen address: `8080` (a port on [`DEFAULT_LISTEN`]'s address), `127.0.0.1:8080`,
/// `[::1]:8080`, `localhost:8080` (resolved; the first address the resolver gives), or a bare
/// address or name (on [`DEFAULT_LISTEN`]'s port). Port 0 asks the kernel for a free port.
pub fn parse_listen(text: &str) -> Result<SocketAddr, ListenError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let port = text.parse().map_err(|_| ListenError::Port(text.into()))?;
        return Ok(SocketAddr::new(DEFAULT_LISTEN.ip(), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_LISTEN.port()));
    }
    let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
    if let Some(ip) = bare.and_then(|t| t.parse::<IpAddr>().ok()) {
        return Ok(SocketAddr::new(ip, DEFAULT_LISTEN.port()));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => {
            let port = port.parse().map_err(|_| ListenError::Port(text.into()))?;
            (host, port)
        }
        None => (text, DEFAULT_LISTEN.port()),
    };
    let name_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !name_ok {
        return Err(ListenError::Syntax(text.into()));
    }
    let resolve_error = |reason: String| ListenError::Resolve {
        host: host.into(),
        reason,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(|e| resolve_error(e.to_string()))?
        .next()
        .ok_or_else(|| resolve_error("no address".into()))
}

/// `listen` in the file: a string for [`parse_listen`], or a bare port number. A number out of
/// range is refused as `--listen` refuses it, and a value of another type says which two forms
/// `listen` takes (an untagged enum would say only that no variant matched).
pub(super) fn listen_from_toml<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<SocketAddr, D::Error> {
    d.deserialize_any(ListenVisitor)
}

struct ListenVisitor;

impl ListenVisitor {
    fn port<E: serde::de::Error>(number: impl ToString) -> Result<SocketAddr, E> {
        let text = number.to_string();
        let port = text
            .parse()
            .map_err(|_| E::custom(ListenError::Port(text)))?;
        Ok(SocketAddr::new(DEFAULT_LISTEN.ip(), port))
    }

    fn other<E: serde::de::Error>(value: impl std::fmt::Display) -> E {
        E::custom(format_args!("`{value}`: expected {}", Self::EXPECTED))
    }

    // (Not naming the key: the file's reader adds it with the line.)
    const EXPECTED: &'static str = "a port from 0 to 65535 (8080) or an address as a \
        string (\"PORT\", \"HOST:PORT\", \"IPv4:PORT\" or \"[IPv6]:PORT\")";
}

impl serde::de::Visitor<'_> for ListenVisitor {
    type Value = SocketAddr;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(Self::EXPECTED)
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<SocketAddr, E> {
        Self::port(n)
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<SocketAddr, E> {
        Self::port(n)
    }

    fn visit_u128<E: serde::de::Error>(self, n: u128) -> Result<SocketAddr, E> {
        Self::port(n)
    }

    fn visit_i128<E: serde::de::Error>(self, n: i128) -> Result<SocketAddr, E> {
        Self::port(n)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SocketAddr, E> {
        parse_listen(text).map_err(E::custom)
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<SocketAddr, E> {
        Err(Self::other(b))
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<SocketAddr, E> {
        // Debug keeps the point: `8080.0` as written, not a `8080` that looks like a port.
        Err(Self::other(format_args!("{x:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_accepts_a_port_a_name_and_both_address_families() {
        let parse = |s: &str| parse_listen(s).unwrap();
        assert_eq!(parse("8080"), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(parse("0"), "127.0.0.1:0".parse().unwrap());
        assert_eq!(parse("0.0.0.0:80"), "0.0.0.0:80".parse().unwrap());
        assert_eq!(parse("[::1]:8080"), "[::1]:8080".parse().unwrap());
        assert_eq!(parse("[::]:0"), "[::]:0".parse().unwrap());
        assert_eq!(parse("10.1.2.3"), "10.1.2.3:8080".parse().unwrap());
        assert_eq!(parse("[::1]"), "[::1]:8080".parse().unwrap());
        let local = parse("localhost:8081");
        assert!(local.ip().is_loopback(), "{local}");
        assert_eq!(local.port(), 8081);
        assert!(parse("localhost").ip().is_loopback());
    }

    #[test]
    fn bad_listen_addresses_say_what_is_expected() {
        for (text, want) in [
            ("", "expected PORT"),
            ("a b:80", "expected PORT"),
            ("http://x:80", "expected PORT"),
            ("70000", "port must be"),
            ("localhost:http", "port must be"),
            ("[::1]:99999", "port must be"),
            ("no-such-host.invalid:80", "cannot resolve"),
        ] {
            let e = parse_listen(text).expect_err(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
