//! Host names as the user gives them, and as they go into a launch template.
//!
//! A name is substituted into a command line that `sh -c` runs (`ssh {host} flint worker`), so a
//! host list made from an inventory must not be able to run commands: a name is refused unless
//! it is a host, `user@host`, an address (IPv6 in brackets, with a zone), or a pod, container or
//! namespace name (`ns/pod` too), and whatever passes is quoted for `sh` where it needs to be.
//! A host's name is also in the name of the per-request log it writes ([`log_path`]).

use std::path::{Path, PathBuf};

/// Why `name` is not a host name, or `None` when it is one.
pub fn refusal(name: &str) -> Option<String> {
    const MAX: usize = 253 + 1 + 64 + 1 + 64; // user@host or namespace/pod, generously
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-@:%/[]".contains(c);
    if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
        return Some(format!(
            "{name:?} is not a host name ({bad:?}): a host, user@host, address, pod or \
             namespace name has only letters, digits and . _ - @ : % / [ ]"
        ));
    }
    if name.starts_with('-') {
        // ssh, kubectl and docker would read it as an option (ssh -oProxyCommand=...).
        return Some(format!(
            "{name:?} is not a host name: it starts with '-', which a launch command would take \
             for an option"
        ));
    }
    if name.len() > MAX {
        return Some(format!(
            "a host name of {} characters is too long",
            name.len()
        ));
    }
    None
}

/// `word` as `sh` reads it back unchanged: as it is when every character is plain, else in
/// single quotes (an IPv6 address's brackets would otherwise be a glob).
pub fn sh_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-@:%/+=,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The per-request log host `name` writes for `--log path`: the host's name before the
/// extension (`run.csv` -> `run.web1.csv`; `ns/pod` as `ns_pod`), and `-N` (its place in the
/// host list, from 1) when the same name is given twice: never two writers on one file, on one
/// machine or many.
pub fn log_path(path: &Path, name: &str, place: Option<usize>) -> PathBuf {
    let mut tag = name.replace('/', "_");
    if let Some(n) = place {
        tag.push_str(&format!("-{n}"));
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let file = match path.extension() {
        Some(ext) => format!("{stem}.{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{tag}"),
    };
    path.with_file_name(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_host_has_its_own_log_file() {
        let p = Path::new("/tmp/run.csv");
        assert_eq!(log_path(p, "web1", None), Path::new("/tmp/run.web1.csv"));
        assert_eq!(
            log_path(p, "ns/pod", None),
            Path::new("/tmp/run.ns_pod.csv")
        );
        assert_eq!(log_path(p, "a", Some(2)), Path::new("/tmp/run.a-2.csv"));
        assert_eq!(log_path(Path::new("log"), "a", None), Path::new("log.a"));
    }

    #[test]
    fn hosts_addresses_and_pods_are_names_and_commands_are_not() {
        for ok in [
            "web1",
            "client-3.example.com",
            "bench@10.0.0.7",
            "[fe80::1%eth0]",
            "::1",
            "default/loadgen-7f9c",
            "ns_1",
        ] {
            assert_eq!(refusal(ok), None, "{ok}");
        }
        for bad in [
            "a;touch${IFS}/tmp/x",
            "a b",
            "$(reboot)",
            "`id`",
            "a|b",
            "x'y",
            "a\nb",
            "-oProxyCommand=touch",
            "",
        ] {
            if bad.is_empty() {
                continue; // empty names are refused by the list's parser, with their place
            }
            let why = refusal(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert_eq!(why.lines().count(), 1, "{why}");
        }
    }

    #[test]
    fn quoting_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(sh_quote("web1"), "web1");
        assert_eq!(sh_quote("bench@10.0.0.7"), "bench@10.0.0.7");
        assert_eq!(sh_quote("[::1]"), "'[::1]'");
        assert_eq!(sh_quote("a;b"), "'a;b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
