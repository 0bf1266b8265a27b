//! CGI mounts: `--cgi PREFIX=DIR` and the file's `cgi` list, the directories of programs
//! outside the document root.

use std::path::PathBuf;

use super::parse_auth_prefix;
use super::text::split_pair;

/// A CGI mount: targets under `prefix` name programs under `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiMount {
    /// The URL prefix, normalised: starts with `/`, no trailing slash (`/cgi-bin`).
    pub prefix: String,
    /// The directory the programs are in, outside the document root: checked at start (one
    /// that cannot be opened as a directory is `ServeError::CgiDir`, one inside the root or
    /// holding it `ServeError::CgiDirInRoot`); a target naming no executable under it gets 404.
    pub dir: PathBuf,
}

impl std::str::FromStr for CgiMount {
    type Err = String;

    /// `PREFIX=DIR`: `/cgi-bin/=/srv/cgi`.
    fn from_str(text: &str) -> Result<CgiMount, String> {
        let (prefix, dir) = split_pair(text, "PREFIX=DIR (`/cgi-bin/=/srv/cgi`)")?;
        let prefix = mount_prefix(prefix)?;
        if dir.is_empty() {
            return Err(format!("`{text}`: the directory is empty"));
        }
        Ok(CgiMount {
            prefix,
            dir: PathBuf::from(dir),
        })
    }
}

/// A gateway mount's prefix (CGI's, or FastCGI's by prefix): a protected prefix's rules (see
/// [`parse_auth_prefix`]), but not `/` itself, which would take every file of the root.
pub(super) fn mount_prefix(prefix: &str) -> Result<String, String> {
    match parse_auth_prefix(prefix)? {
        root if root == "/" => Err(format!(
            "`{prefix}`: a gateway's prefix cannot be / itself (it would take every file)"
        )),
        prefix => Ok(prefix),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn the_file_takes_cgi_mounts_and_extensions_and_refuses_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        std::fs::write(
            &path,
            "cgi = [\"/cgi-bin/=/srv/cgi\", \"/a/b=/x\"]\ncgi_extensions = [\".cgi\"]\ncgi_max_programs = 3\n",
        )
        .unwrap();
        let c = Config::from_file(&path).unwrap();
        let mounts: Vec<_> = c
            .cgi
            .iter()
            .map(|m| (m.prefix.as_str(), m.dir.clone()))
            .collect();
        assert_eq!(
            mounts,
            [
                ("/cgi-bin", "/srv/cgi".into()),
                ("/a/b", std::path::PathBuf::from("/x"))
            ]
        );
        assert_eq!((c.cgi_extensions.len(), c.cgi_max_programs), (1, 3));
        c.validate().unwrap();
        for text in [
            "cgi = [\"cgi-bin=/x\"]\n",
            "cgi = [\"/=/x\"]\n",
            "cgi = [\"/../x=/y\"]\n",
            "cgi = [\"/x\"]\n",
        ] {
            std::fs::write(&path, text).unwrap();
            let e = Config::from_file(&path).unwrap_err().to_string();
            assert!(e.contains("cgi"), "{text:?}: {e}");
        }
        let bad = Config {
            cgi_extensions: vec!["cgi".into()],
            ..Config::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "cgi_extensions");
    }
}
