//! Host names as the user gives them, and as they go into a launch template.
//!
//! A name is substituted into a command line that `sh -c` runs (`ssh {host} flint worker`), so a
//! host list made from an inventory must not be able to run commands: a name is refused unless
//! it is a host, `user@host`, an address (IPv6 in brackets, with a zone), or a pod, container or
//! namespace name (`ns/pod` too), and whatever passes is quoted for `sh` where it needs to be.

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

#[cfg(test)]
mod tests {
    use super::*;

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
