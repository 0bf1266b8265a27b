//! CGI mounts: `--cgi PREFIX=DIR` and the file's `cgi` list, the directories of programs
//! outside the document root.

use std::path::PathBuf;

/// A CGI mount: targets under `prefix` name programs under `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiMount {
    /// The URL prefix, normalised: starts with `/`, no trailing slash (`/cgi-bin`).
    pub prefix: String,
    /// The directory the programs are in, outside the document root: checked at start (one
    /// that cannot be opened as a directory is `ServeError::CgiDir`); a target naming no executable under it
    /// gets 404.
    pub dir: PathBuf,
}

impl std::str::FromStr for CgiMount {
    type Err = String;

    /// `PREFIX=DIR`: `/cgi-bin/=/srv/cgi`.
    fn from_str(text: &str) -> Result<CgiMount, String> {
        let Some((prefix, dir)) = text.split_once('=') else {
            return Err(format!(
                "`{text}`: expected PREFIX=DIR (`/cgi-bin/=/srv/cgi`)"
            ));
        };
        let trimmed = prefix.trim_end_matches('/');
        let bad_segment = trimmed
            .split('/')
            .skip(1)
            .any(|seg| seg.is_empty() || seg.starts_with('.'));
        if !prefix.starts_with('/') || trimmed.is_empty() || bad_segment || prefix.contains('%') {
            return Err(format!(
                "`{prefix}`: the prefix must be a path under / without empty, dot or escaped segments"
            ));
        }
        if dir.is_empty() {
            return Err(format!("`{text}`: the directory is empty"));
        }
        Ok(CgiMount {
            prefix: trimmed.to_string(),
            dir: PathBuf::from(dir),
        })
    }
}

/// `cgi` in the file: a list of `PREFIX=DIR` strings.
pub(super) fn cgi_mounts_from_toml<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<CgiMount>, D::Error> {
    let texts = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    texts
        .iter()
        .map(|t| t.parse().map_err(serde::de::Error::custom))
        .collect()
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
