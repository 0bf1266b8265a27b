//! Which hosts, and how many Webchildren each: `--hosts H1,H2`, or a hosts file listing one host a
//! line, optionally followed by its number of Webchildren, as WebSTONE's client configuration did.

use std::ops::Range;

/// One client host, as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// As given: a host name, `user@host`, an address, or what the launch template takes (a
    /// pod, a namespace); it fills the template's `{host}` and names the host in reports.
    pub name: String,
    /// Given by a hosts file; `None`: an even share of `-c`.
    pub webchildren: Option<usize>,
}

/// Hosts the run cannot use; one clear line each, before anything starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostsInputError {
    /// `--hosts` or the hosts file names no host.
    #[error("the host list is empty")]
    Empty,
    /// A line of the hosts file (or `--hosts`, as line 1) that is not `HOST [WEBCHILDREN]`.
    #[error("{file}:{line}: {why}")]
    BadLine {
        /// The hosts file as given, or `--hosts`.
        file: String,
        /// From 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// `-c` below the number of hosts: a host would run no Webchild.
    #[error("{clients} Webchildren cannot be spread over {hosts} hosts: give -c at least {hosts}")]
    TooFewClients {
        /// `-c`.
        clients: usize,
        /// Hosts named.
        hosts: usize,
    },
    /// Some lines of the hosts file give Webchildren and some do not.
    #[error("give a number of Webchildren for every host of the hosts file, or for none")]
    MixedCounts,
    /// The launch template is empty or blank.
    #[error("the launch template has no command")]
    EmptyTemplate,
    /// `--log -`: the workers' stdout is the protocol's channel.
    #[error("--log - would write into the workers' control channel: give a file name (each host writes its own)")]
    LogToStdout,
    /// Not a host, `user@host`, address, pod or namespace name (see [`super::name`]).
    #[error("{file}:{line}: {why}")]
    BadName {
        /// The hosts file as given, or `--hosts`.
        file: String,
        /// From 1 (1 for `--hosts`).
        line: usize,
        /// What in the name is refused.
        why: String,
    },
    /// A name that reached the launch template without being checked (every list and file is
    /// checked when read; this is the second line of defence).
    #[error("{host:?} is not launched: {why}")]
    UnsafeLaunchName {
        /// The name as it reached the template.
        host: String,
        /// What in it is refused.
        why: String,
    },
}

/// `H1,H2,...`: spaces around names are ignored, empty names are not allowed.
pub fn parse_list(text: &str) -> Result<Vec<HostSpec>, HostsInputError> {
    let names: Vec<&str> = text.split(',').map(str::trim).collect();
    if names.iter().all(|n| n.is_empty()) {
        return Err(HostsInputError::Empty);
    }
    if names.iter().any(|n| n.is_empty()) {
        return Err(HostsInputError::BadLine {
            file: "--hosts".into(),
            line: 1,
            why: format!("an empty host name in {text:?}"),
        });
    }
    names
        .into_iter()
        .map(|n| {
            checked(n, "--hosts", 1).map(|name| HostSpec {
                name,
                webchildren: None,
            })
        })
        .collect()
}

/// `name`, or why it cannot be put into a launch command (`file:line` saying where it was).
fn checked(name: &str, file: &str, line: usize) -> Result<String, HostsInputError> {
    match super::name::refusal(name) {
        None => Ok(name.to_owned()),
        Some(why) => Err(HostsInputError::BadName {
            file: file.to_owned(),
            line,
            why,
        }),
    }
}

/// A hosts file: `HOST [WEBCHILDREN]` a line; blank lines and `#` comments are skipped.
pub fn parse_file(file: &str, text: &str) -> Result<Vec<HostSpec>, HostsInputError> {
    let mut hosts = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| HostsInputError::BadLine {
            file: file.to_owned(),
            line: i + 1,
            why,
        };
        let mut words = line.split_whitespace();
        let name = checked(words.next().unwrap_or_default(), file, i + 1)?;
        let webchildren = match words.next() {
            None => None,
            Some(w) => match w.parse::<usize>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(bad(format!(
                        "{w:?} is not a number of Webchildren (1 or more)"
                    )))
                }
            },
        };
        if let Some(extra) = words.next() {
            return Err(bad(format!("unexpected {extra:?} after the Webchildren")));
        }
        hosts.push(HostSpec { name, webchildren });
    }
    if hosts.is_empty() {
        return Err(HostsInputError::Empty);
    }
    let counted = hosts.iter().filter(|h| h.webchildren.is_some()).count();
    if counted != 0 && counted != hosts.len() {
        return Err(HostsInputError::MixedCounts);
    }
    Ok(hosts)
}

/// Each host's global Webchild numbers, contiguous and in host order: the hosts file's counts,
/// or `clients` split evenly (the first hosts take the remainder). The total is the run's
/// concurrency.
pub fn assign(hosts: &[HostSpec], clients: usize) -> Result<Vec<Range<usize>>, HostsInputError> {
    if hosts.is_empty() {
        return Err(HostsInputError::Empty);
    }
    let counts: Vec<usize> = match hosts
        .iter()
        .map(|h| h.webchildren)
        .collect::<Option<Vec<_>>>()
    {
        Some(counts) => counts,
        None if hosts.iter().any(|h| h.webchildren.is_some()) => {
            return Err(HostsInputError::MixedCounts)
        }
        None if clients < hosts.len() => {
            return Err(HostsInputError::TooFewClients {
                clients,
                hosts: hosts.len(),
            })
        }
        None => (0..hosts.len())
            .map(|i| crate::runner::plan::spread(0..clients, hosts.len(), i).len())
            .collect(),
    };
    let mut start = 0;
    Ok(counts
        .into_iter()
        .map(|n| {
            start += n;
            start - n..start
        })
        .collect())
}

/// The command that starts a worker on `host`: `template` with every `{host}` replaced by the
/// name quoted for `sh` (see [`super::name::sh_quote`]), for `sh -c`.
pub fn launch_command(template: &str, host: &str) -> Result<String, HostsInputError> {
    // The name goes into a shell command: refused here too, whatever checked it before.
    if let Some(why) = super::name::refusal(host) {
        return Err(HostsInputError::UnsafeLaunchName {
            host: host.to_owned(),
            why,
        });
    }
    let command = template.replace("{host}", &super::name::sh_quote(host));
    if command.trim().is_empty() {
        return Err(HostsInputError::EmptyTemplate);
    }
    Ok(command)
}

/// The default launch template: the worker over OpenSSH, never asking for a password.
pub const DEFAULT_TEMPLATE: &str = "ssh -o BatchMode=yes {host} flint worker";

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<HostSpec> {
        (0..n)
            .map(|i| HostSpec {
                name: format!("h{i}"),
                webchildren: None,
            })
            .collect()
    }

    #[test]
    fn clients_split_evenly_with_the_remainder_first() {
        let r = assign(&names(3), 10).unwrap();
        assert_eq!(r, [0..4, 4..7, 7..10]);
        assert_eq!(
            assign(&names(3), 2).unwrap_err(),
            HostsInputError::TooFewClients {
                clients: 2,
                hosts: 3
            }
        );
        assert_eq!(assign(&[], 2).unwrap_err(), HostsInputError::Empty);
    }

    #[test]
    fn a_hosts_file_gives_counts_and_names_its_bad_lines() {
        let text = "# client configuration\nindy9 6\n\nindy10 2  # the small one\n";
        let hosts = parse_file("hosts", text).unwrap();
        assert_eq!(hosts[0].name, "indy9");
        assert_eq!(
            assign(&hosts, 1).unwrap(),
            [0..6, 6..8],
            "counts decide, not -c"
        );
        let err = parse_file("hosts", "a 2\nb zero\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "hosts:2: \"zero\" is not a number of Webchildren (1 or more)"
        );
        assert_eq!(
            parse_file("hosts", "a 2\nb\n").unwrap_err(),
            HostsInputError::MixedCounts
        );
        assert_eq!(
            parse_file("hosts", "# nothing\n").unwrap_err(),
            HostsInputError::Empty
        );
    }

    #[test]
    fn host_lists_and_templates_are_checked() {
        assert_eq!(parse_list(" , ").unwrap_err(), HostsInputError::Empty);
        assert!(parse_list("a,,b").is_err());
        assert_eq!(parse_list("a, b").unwrap().len(), 2);
        assert_eq!(
            launch_command(DEFAULT_TEMPLATE, "web1").unwrap(),
            "ssh -o BatchMode=yes web1 flint worker"
        );
        assert_eq!(
            launch_command("  ", "x").unwrap_err(),
            HostsInputError::EmptyTemplate
        );
        assert_eq!(launch_command("flint worker", "x").unwrap(), "flint worker");
        assert_eq!(
            launch_command(": {host}; flint worker", "[::1]").unwrap(),
            ": '[::1]'; flint worker"
        );
        assert!(matches!(
            launch_command(DEFAULT_TEMPLATE, "x;reboot"),
            Err(HostsInputError::UnsafeLaunchName { .. })
        ));
    }

    #[test]
    fn names_that_are_not_hosts_are_refused_with_where_they_were() {
        let e = parse_list("a,b;touch${IFS}/tmp/x").unwrap_err().to_string();
        assert!(
            e.starts_with("--hosts:1: \"b;touch${IFS}/tmp/x\" is not a host name"),
            "{e}"
        );
        let e = parse_file("clients", "ok 2\n-oProxyCommand=x 1\n").unwrap_err();
        assert!(e.to_string().starts_with("clients:2: "), "{e}");
    }
}
