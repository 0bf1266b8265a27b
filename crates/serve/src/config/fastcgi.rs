//! FastCGI mounts: `--fastcgi PATTERN=ADDR` and the file's `fastcgi` list, the applications
//! and the targets each answers.

use std::path::PathBuf;

use super::cgi::mount_prefix;
use super::text::split_pair;

/// Which targets a FastCGI application answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastCgiPattern {
    /// Files of the document root whose name ends with this (`.php`, from `*.php`).
    Extension(String),
    /// Targets under this URL prefix, normalised as a CGI mount's (`/app`).
    Prefix(String),
}

/// Where a FastCGI application listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastCgiAddr {
    /// A Unix socket's path (`unix:/run/php/php-fpm.sock`).
    Unix(PathBuf),
    /// A TCP address, resolved once when the mount is read (`127.0.0.1:9000`).
    Tcp(std::net::SocketAddr),
}

impl std::fmt::Display for FastCgiAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FastCgiAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            FastCgiAddr::Tcp(a) => write!(f, "{a}"),
        }
    }
}

/// A FastCGI application and the targets it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastCgiMount {
    /// The targets it answers: an extension or a URL prefix.
    pub pattern: FastCgiPattern,
    /// Where the application listens.
    pub addr: FastCgiAddr,
}

impl std::str::FromStr for FastCgiMount {
    type Err = String;

    /// `PATTERN=ADDR`: `*.php=unix:/run/php/php-fpm.sock`, `/app/=127.0.0.1:9000`.
    fn from_str(text: &str) -> Result<FastCgiMount, String> {
        let (pattern, addr) =
            split_pair(text, "PATTERN=ADDR (`*.php=unix:/run/php/php-fpm.sock`)")?;
        let pattern = match pattern.strip_prefix('*') {
            Some(ext) => {
                let name = ext.strip_prefix('.').unwrap_or("");
                if name.is_empty() || name.contains(['/', '*', '%']) {
                    return Err(format!(
                        "`{pattern}`: an extension pattern is `*.` and a name (`*.php`)"
                    ));
                }
                FastCgiPattern::Extension(ext.to_string())
            }
            // The same rules as a CGI mount's prefix.
            None => FastCgiPattern::Prefix(mount_prefix(pattern)?),
        };
        let addr = match addr.strip_prefix("unix:") {
            Some("") => return Err(format!("`{text}`: the socket path is empty")),
            Some(path) => FastCgiAddr::Unix(PathBuf::from(path)),
            None => {
                use std::net::ToSocketAddrs;
                let found = addr.to_socket_addrs().ok().and_then(|mut a| a.next());
                match found {
                    Some(a) => FastCgiAddr::Tcp(a),
                    None => {
                        return Err(format!(
                            "`{addr}`: expected unix:PATH or HOST:PORT for the application"
                        ))
                    }
                }
            }
        };
        Ok(FastCgiMount { pattern, addr })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn fastcgi_mounts_take_an_extension_or_a_prefix_and_a_socket() {
        use crate::config::{FastCgiAddr, FastCgiMount, FastCgiPattern};
        let php: FastCgiMount = "*.php=unix:/run/php/php-fpm.sock".parse().unwrap();
        assert_eq!(php.pattern, FastCgiPattern::Extension(".php".into()));
        assert_eq!(php.addr, FastCgiAddr::Unix("/run/php/php-fpm.sock".into()));
        let app: FastCgiMount = "/app/=127.0.0.1:9000".parse().unwrap();
        assert_eq!(app.pattern, FastCgiPattern::Prefix("/app".into()));
        assert_eq!(app.addr.to_string(), "127.0.0.1:9000");
        for bad in [
            "*.php",
            "*php=unix:/x",
            "*.=unix:/x",
            "*.p/q=unix:/x",
            "app=unix:/x",
            "/=unix:/x",
            "/../x=unix:/x",
            "*.php=unix:",
            "*.php=nowhere",
        ] {
            let e = bad.parse::<FastCgiMount>().unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{bad}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        std::fs::write(
            &path,
            "fastcgi = [\"*.php=unix:/s\", \"/a/=[::1]:9000\"]\nfastcgi_pool = 2\n",
        )
        .unwrap();
        let c = Config::from_file(&path).unwrap();
        assert_eq!((c.fastcgi.len(), c.fastcgi_pool), (2, Some(2)));
        std::fs::write(&path, "fastcgi = [\"*.php\"]\n").unwrap();
        let e = Config::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("PATTERN=ADDR"), "{e}");
    }
}
