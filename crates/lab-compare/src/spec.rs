//! `NAME=URL` and `NAME=COMMAND`: what the user names, checked before anything starts.
//!
//! Names label the table rows and the JSON, so an empty or repeated name would make the output
//! ambiguous; both are refused with the text the user typed. A `--serve` command must say where
//! to listen (`{port}`): flint picks the port, and a server listening elsewhere would never be
//! found by the readiness check.

/// The placeholder in a `--serve` command that flint replaces with the port it picked.
pub const PORT_PLACEHOLDER: &str = "{port}";

/// `NAME=VALUE` split at the first `=` (URLs and commands may contain more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedValue {
    /// Before the first `=`, trimmed; never empty.
    pub name: String,
    /// After the first `=`, trimmed; never empty.
    pub value: String,
}

/// A `NAME=...` argument that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// No `=` in the argument.
    #[error("`{text}`: expected NAME={what} (no `=` found)")]
    NoEquals {
        /// The argument as typed.
        text: String,
        /// What the value is (`URL`, `COMMAND`).
        what: &'static str,
    },
    /// Nothing but blanks before the `=`.
    #[error("`{text}`: the name before `=` is empty")]
    EmptyName {
        /// The argument as typed.
        text: String,
    },
    /// Nothing but blanks after the `=`.
    #[error("`{text}`: the {what} after `=` is empty")]
    EmptyValue {
        /// The argument as typed.
        text: String,
        /// What the value is (`URL`, `COMMAND`).
        what: &'static str,
    },
    /// Two targets share a name.
    #[error("the name `{name}` is given twice: each target needs its own name")]
    Duplicate {
        /// The name given twice.
        name: String,
    },
    /// A `--serve` command without [`PORT_PLACEHOLDER`].
    #[error("`{command}` has no {PORT_PLACEHOLDER}: flint picks a free port and puts it there (e.g. `--listen 127.0.0.1:{PORT_PLACEHOLDER}`)")]
    NoPort {
        /// The command, after `=` and trimmed.
        command: String,
    },
}

/// Splits `NAME=VALUE`; `what` names the value in messages (`URL`, `COMMAND`).
pub fn split(text: &str, what: &'static str) -> Result<NamedValue, SpecError> {
    let (name, value) = text.split_once('=').ok_or_else(|| SpecError::NoEquals {
        text: text.to_owned(),
        what,
    })?;
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() {
        return Err(SpecError::EmptyName {
            text: text.to_owned(),
        });
    }
    if value.is_empty() {
        return Err(SpecError::EmptyValue {
            text: text.to_owned(),
            what,
        });
    }
    Ok(NamedValue {
        name: name.to_owned(),
        value: value.to_owned(),
    })
}

/// `--target NAME=URL` (the URL itself is checked by the caller, which resolves it).
pub fn parse_target(text: &str) -> Result<NamedValue, SpecError> {
    split(text, "URL")
}

/// `--serve NAME=COMMAND`; the command must contain [`PORT_PLACEHOLDER`].
pub fn parse_serve(text: &str) -> Result<NamedValue, SpecError> {
    let spec = split(text, "COMMAND")?;
    if !spec.value.contains(PORT_PLACEHOLDER) {
        return Err(SpecError::NoPort {
            command: spec.value,
        });
    }
    Ok(spec)
}

/// The first name that appears twice, as an error.
pub fn check_unique<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), SpecError> {
    let mut seen = std::collections::HashSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(SpecError::Duplicate {
                name: name.to_owned(),
            });
        }
    }
    Ok(())
}

/// `command` with every [`PORT_PLACEHOLDER`] replaced by `port`.
pub fn with_port(command: &str, port: u16) -> String {
    command.replace(PORT_PLACEHOLDER, &port.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_and_value_split_at_the_first_equals() {
        let s = parse_target("nginx=http://127.0.0.1:8080/?a=b").unwrap();
        assert_eq!(s.name, "nginx");
        assert_eq!(s.value, "http://127.0.0.1:8080/?a=b");
    }

    #[test]
    fn missing_equals_is_a_clear_error() {
        let err = parse_target("http://127.0.0.1:8080").unwrap_err();
        assert!(matches!(err, SpecError::NoEquals { .. }));
        assert!(err.to_string().contains("expected NAME=URL"), "{err}");
    }

    #[test]
    fn empty_name_is_a_clear_error() {
        let err = parse_target("=http://127.0.0.1:1").unwrap_err();
        assert!(
            err.to_string().contains("name before `=` is empty"),
            "{err}"
        );
        assert!(matches!(
            parse_target("  =x").unwrap_err(),
            SpecError::EmptyName { .. }
        ));
    }

    #[test]
    fn empty_value_is_a_clear_error() {
        let err = parse_serve("a=").unwrap_err();
        assert!(
            err.to_string().contains("COMMAND after `=` is empty"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_names_are_refused() {
        let err = check_unique(["a", "b", "a"]).unwrap_err();
        assert_eq!(err, SpecError::Duplicate { name: "a".into() });
        assert!(check_unique(["a", "b"]).is_ok());
    }

    #[test]
    fn serve_command_must_say_where_to_listen() {
        let err = parse_serve("a=flint serve . --listen 127.0.0.1:8080").unwrap_err();
        assert!(err.to_string().contains("has no {port}"), "{err}");
        assert!(parse_serve("a=flint serve . --listen 127.0.0.1:{port}").is_ok());
    }

    #[test]
    fn port_placeholder_is_replaced_everywhere() {
        assert_eq!(with_port("x {port} y={port}", 8081), "x 8081 y=8081");
    }
}
