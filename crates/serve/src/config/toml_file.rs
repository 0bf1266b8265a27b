//! Reading the TOML file: its size bounded, UTF-8, every key known, each error one line naming
//! the file, the line and the key.

use std::path::Path;

use super::Config;

/// Why a configuration file gave no [`Config`]: one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}")]
    Io {
        /// The file, as given.
        path: String,
        /// What reading it said.
        source: std::io::Error,
    },
    /// Too large, not UTF-8, not TOML, or a key unknown or of the wrong type.
    #[error("{path}: {message}")]
    Parse {
        /// The file, as given.
        path: String,
        /// What is wrong, with its line and key when known.
        message: String,
    },
}

impl Config {
    /// Reads a TOML file; unknown keys and wrong types are errors naming the key and line.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        use crate::start_files::{self, StartFileError, MAX_CONFIG_BYTES};
        let name = || path.display().to_string();
        let bytes = start_files::read(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            StartFileError::Io(source) => ConfigError::Io {
                path: name(),
                source,
            },
            e => ConfigError::Parse {
                path: name(),
                message: e.to_string(),
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::Parse {
            path: name(),
            message: "not UTF-8 text".into(),
        })?;
        toml::from_str(&text).map_err(|e| {
            // toml's own rendering spans several lines (a source excerpt and a caret): one line
            // with the line number says the same.
            let message = e.message().trim().replace('\n', " ");
            let message = match e.span() {
                Some(span) => {
                    let start = span.start.min(text.len());
                    let line = text[..start].matches('\n').count() + 1;
                    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                    let whole = text[line_start..].lines().next().unwrap_or("");
                    // Name the key when the message does not (a bad value of a known key).
                    match whole.split_once('=').map(|(k, _)| k.trim()) {
                        Some(key) if !key.is_empty() && !message.contains(key) => {
                            format!("line {line}: `{key}`: {message}")
                        }
                        _ => format!("line {line}: {message}"),
                    }
                }
                None => message,
            };
            ConfigError::Parse {
                path: path.display().to_string(),
                message,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named_once_and_the_cause_is_its_source() {
        let e = Config::from_file(Path::new("/nonexistent/serve.toml")).unwrap_err();
        assert_eq!(e.to_string(), "/nonexistent/serve.toml");
        let source = std::error::Error::source(&e)
            .expect("the io error")
            .to_string();
        assert!(source.contains("No such file"), "{source}");
    }
}
