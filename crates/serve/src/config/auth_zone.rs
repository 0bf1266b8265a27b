//! `[[auth]]` zones and `--basic-auth`: the path prefixes HTTP Basic authentication protects.

use std::path::PathBuf;

use super::text::{parse_auth_prefix, prefix_from_toml, split_pair};

/// A protected prefix: targets under `prefix` need a user and password of `file`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthZone {
    /// The URL prefix, normalised as a CGI mount's: starts with `/`, no trailing slash except
    /// for `/` itself (`/private`).
    #[serde(deserialize_with = "prefix_from_toml")]
    pub prefix: String,
    /// An Apache htpasswd file (bcrypt, SHA-256-crypt or SHA-512-crypt entries).
    pub file: PathBuf,
    /// The realm the challenge names (`WWW-Authenticate: Basic realm="..."`).
    #[serde(default = "default_realm")]
    pub realm: String,
}

/// The realm of a zone that names none.
pub const DEFAULT_REALM: &str = "flint";

fn default_realm() -> String {
    DEFAULT_REALM.into()
}

impl std::str::FromStr for AuthZone {
    type Err = String;

    /// `PREFIX=FILE`: `/private/=/etc/flint/htpasswd`, in the default realm.
    fn from_str(text: &str) -> Result<AuthZone, String> {
        let (prefix, file) = split_pair(
            text,
            "PREFIX=HTPASSWD_FILE (`/private/=/etc/flint/htpasswd`)",
        )?;
        if file.is_empty() {
            return Err(format!("`{text}`: the file is empty"));
        }
        Ok(AuthZone {
            prefix: parse_auth_prefix(prefix)?,
            file: PathBuf::from(file),
            realm: default_realm(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_file_takes_auth_zones_and_refuses_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        std::fs::write(
            &path,
            "auth_max_failures = 5\n[[auth]]\nprefix = \"/private/\"\nfile = \"/etc/pw\"\n\
             [[auth]]\nprefix = \"/\"\nfile = \"/etc/all\"\nrealm = \"everyone\"\n",
        )
        .unwrap();
        let c = Config::from_file(&path).unwrap();
        let zones: Vec<_> = (c.auth.iter())
            .map(|z| {
                (
                    z.prefix.as_str(),
                    z.file.to_str().unwrap(),
                    z.realm.as_str(),
                )
            })
            .collect();
        assert_eq!(
            zones,
            [
                ("/private", "/etc/pw", "flint"),
                ("/", "/etc/all", "everyone")
            ]
        );
        assert_eq!(c.auth_max_failures, 5);
        c.validate().unwrap();
        for (text, says) in [
            ("[[auth]]\nprefix = \"private\"\nfile = \"/x\"\n", "prefix"),
            ("[[auth]]\nprefix = \"/a/../b\"\nfile = \"/x\"\n", "prefix"),
            ("[[auth]]\nprefix = \"/a\"\n", "file"),
            (
                "[[auth]]\nprefix = \"/a\"\nfile = \"/x\"\nrelm = \"r\"\n",
                "relm",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = Config::from_file(&path).unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
        let zone: AuthZone = "/p/=/etc/pw".parse().unwrap();
        assert_eq!(
            (zone.prefix.as_str(), zone.realm.as_str()),
            ("/p", DEFAULT_REALM)
        );
        assert!("/p/".parse::<AuthZone>().is_err() && "/p/=".parse::<AuthZone>().is_err());
        for realm in ["a\"b", "a\\b", "a\nb", ""] {
            let bad = Config {
                auth: vec![AuthZone {
                    realm: realm.into(),
                    ..zone.clone()
                }],
                ..Config::default()
            };
            assert_eq!(bad.validate().unwrap_err().key, "auth.realm", "{realm:?}");
        }
        let bad = Config {
            auth_max_failures: 0,
            ..Config::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "auth_max_failures");
    }
}
