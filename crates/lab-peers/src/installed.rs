//! Whether a server is installed here ([`Installed`], found by [`PeerKind::probe`]): above both
//! the servers (`kind.rs`) and the errors that name one (`error.rs`), which it reports.

use crate::{config, PeerError, PeerKind};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

impl PeerKind {
    /// The argument that makes the server print its version.
    fn version_flag(self) -> &'static str {
        match self {
            PeerKind::Flint => "--version",
            PeerKind::Caddy => "version",
            _ => "-v",
        }
    }

    /// Finds the server's binary and asks its version. `flint_bin` is the flint executable (the
    /// running `flint` passes its own path); the others are looked up on PATH and in the sbin
    /// directories.
    pub fn probe(self, flint_bin: Option<&Path>) -> Result<Installed, PeerError> {
        let missing = || PeerError::NotInstalled {
            kind: self,
            install: self.install_hint(),
        };
        let program = match (self, flint_bin) {
            (PeerKind::Flint, Some(bin)) if lab_process::is_executable(bin) => bin.to_owned(),
            (PeerKind::Flint, _) => return Err(missing()),
            _ => lab_process::find_program(self.program_name()).ok_or_else(missing)?,
        };
        if matches!(self, PeerKind::ApachePrefork | PeerKind::ApacheEvent) {
            let mpm = match self {
                PeerKind::ApachePrefork => "mpm_prefork",
                _ => "mpm_event",
            };
            for module in [mpm, "mime", "dir", "authz_core"] {
                let path = Path::new(config::APACHE_MODULES).join(format!("mod_{module}.so"));
                if !path.is_file() {
                    return Err(missing());
                }
            }
        }
        let out = lab_process::output_within(
            Command::new(&program).arg(self.version_flag()),
            Duration::from_secs(10),
        )
        .map_err(|source| PeerError::Io {
            kind: self,
            what: format!("running {} {}", program.display(), self.version_flag()),
            source,
        })?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let version = match parse_version(&text) {
            // `caddy version` prints the bare number.
            Some(v) if !v.contains('/') && self == PeerKind::Caddy => format!("caddy/{v}"),
            Some(v) => v,
            None => "unknown".to_owned(),
        };
        Ok(Installed { program, version })
    }
}

/// `nginx/1.22.1` from `nginx version: nginx/1.22.1`; `Apache/2.4.71` from `Server version:
/// Apache/2.4.71 (Debian)`; `lighttpd/1.4.69` from `lighttpd/1.4.69 (ssl) - a light ...`;
/// `flint/0.1.0` from `flint 0.1.0`.
pub fn parse_version(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.rsplit_once("version: ").map_or(line, |(_, v)| v);
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first.contains('/') {
        return Some(first.to_owned());
    }
    // `h2o version 2.2.5`.
    let mut rest = words.clone();
    if let (Some("version"), Some(v)) = (rest.next(), rest.next()) {
        return Some(format!("{first}/{v}"));
    }
    // `NAME VERSION` (clap's --version).
    match words.next() {
        Some(v) if v.starts_with(|c: char| c.is_ascii_digit()) => Some(format!("{first}/{v}")),
        _ => Some(first.to_owned()),
    }
}

/// A server found on this machine.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The executable found (on PATH or in the sbin directories; flint's as given).
    pub program: PathBuf,
    /// `name/version` as the server prints it (`nginx/1.22.1`), `unknown` when it prints none.
    pub version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_name_slash_number() {
        assert_eq!(
            parse_version("nginx version: nginx/1.22.1\n").as_deref(),
            Some("nginx/1.22.1")
        );
        assert_eq!(
            parse_version("Server version: Apache/2.4.71 (Debian)\nServer built:   2026\n")
                .as_deref(),
            Some("Apache/2.4.71")
        );
        assert_eq!(
            parse_version("lighttpd/1.4.69 (ssl) - a light and fast webserver\n").as_deref(),
            Some("lighttpd/1.4.69")
        );
        assert_eq!(
            parse_version("flint 0.1.0\n").as_deref(),
            Some("flint/0.1.0")
        );
        assert_eq!(
            parse_version("h2o version 2.2.5\nOpenSSL: OpenSSL 3.0.19\n").as_deref(),
            Some("h2o/2.2.5")
        );
        assert_eq!(parse_version("\n  \n"), None);
    }

    #[test]
    fn a_missing_flint_binary_names_how_to_build_it() {
        let err = PeerKind::Flint
            .probe(Some(Path::new("/nonexistent/flint")))
            .expect_err("no such binary");
        assert!(err.to_string().contains("cargo build"), "{err}");
    }
}
