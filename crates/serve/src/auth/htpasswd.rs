//! Apache htpasswd files, read whole at start: `user:hash` lines, `#` comments and blank lines
//! skipped, anything after a second `:` ignored (as Apache's mod_authn_file reads them).
//!
//! Accepted: bcrypt (`$2y$`, `$2a$`, `$2b$`: `htpasswd -B`), SHA-256-crypt (`$5$`: `htpasswd -2`)
//! and SHA-512-crypt (`$6$`: `htpasswd -5`). Refused, with the file and line named: Apache's
//! MD5-crypt (`$apr1$`, htpasswd's default), glibc's MD5-crypt (`$1$`), SHA-1 (`{SHA}`),
//! crypt(3) DES and plain text. An attacker who gets the file tries billions of MD5 or SHA-1
//! guesses a second on one GPU and reads plain text outright; a server that accepted them
//! quietly would keep such files in service. Malformed lines and a user named twice are refused
//! the same way: a file that means something else than it says is not guessed at.
//!
//! A check runs on the event loop's thread and cannot be cut short, so a hash too slow to check
//! is refused too: bcrypt above cost [`MAX_BCRYPT_COST`], SHA-crypt above
//! [`MAX_SHA_CRYPT_ROUNDS`] rounds (at cost 31 one check would hold its thread for days).

use std::collections::HashMap;
use std::path::Path;

use sha_crypt::{PasswordVerifier, ShaCrypt};

use crate::start_files::{self, StartFileError};

/// The largest htpasswd file read: a bcrypt line is about 70 bytes, so 16 MiB holds over
/// 200,000 users.
pub const MAX_HTPASSWD_BYTES: u64 = 16 << 20;

/// The highest bcrypt cost accepted: about 1.1 s of a thread's CPU for one check (69 ms at
/// cost 10, doubling with each step: docs/serve.md). htpasswd's default is 5; 10 to 12 is what
/// most applications use, 14 about the most seen in practice.
pub const MAX_BCRYPT_COST: u32 = 14;

/// The most SHA-crypt rounds accepted: about 0.3 s of a thread's CPU for one SHA-512-crypt
/// check (1.5 ms at the default 5000).
pub const MAX_SHA_CRYPT_ROUNDS: u32 = 1_000_000;

/// Why a file is refused: one line naming it, and the line when one is at fault.
#[derive(Debug, thiserror::Error)]
#[error("htpasswd file {path}{}: {reason}", line.map(|n| format!(" line {n}")).unwrap_or_default())]
pub struct HtpasswdError {
    /// The file, as configured.
    pub path: String,
    /// The line at fault, from 1; None when the file as a whole is (unreadable, too large).
    pub line: Option<usize>,
    /// What is wrong (`expected USER:HASH`...).
    pub reason: String,
}

/// A password hash of an accepted scheme, checked for its form when read.
#[derive(Debug, Clone)]
pub(crate) enum Hash {
    Bcrypt(Box<str>),
    ShaCrypt(Box<str>),
}

impl Hash {
    /// Whether `password` is the one hashed. The computed hash is compared with the stored one
    /// in constant time by each crate (`subtle` in bcrypt, `ctutils` in sha-crypt).
    pub(crate) fn verify(&self, password: &[u8]) -> bool {
        match self {
            Hash::Bcrypt(h) => bcrypt::verify(password, h).unwrap_or(false),
            Hash::ShaCrypt(h) => ShaCrypt::default().verify_password(password, &**h).is_ok(),
        }
    }

    /// The hash of `text`, or why it is refused.
    fn parse(text: &str) -> Result<Hash, String> {
        let refused = |scheme: &str| {
            format!(
                "{scheme} is refused (too fast to guess against): hash the password again with \
                 `htpasswd -B` (bcrypt) or `htpasswd -5` (SHA-512-crypt)"
            )
        };
        if ["$2y$", "$2a$", "$2b$"].iter().any(|p| text.starts_with(p)) {
            let parts = (text.parse::<bcrypt::HashParts>())
                .map_err(|e| format!("a malformed bcrypt hash ({e})"))?;
            let cost = parts.get_cost();
            if cost > MAX_BCRYPT_COST {
                return Err(too_slow(&format!("bcrypt cost {cost}"), MAX_BCRYPT_COST));
            }
            return Ok(Hash::Bcrypt(text.into()));
        }
        if text.starts_with("$5$") || text.starts_with("$6$") {
            return match sha_crypt_rounds(text) {
                Some(n) if n > MAX_SHA_CRYPT_ROUNDS => Err(too_slow(
                    &format!("SHA-crypt at {n} rounds"),
                    MAX_SHA_CRYPT_ROUNDS,
                )),
                Some(_) => Ok(Hash::ShaCrypt(text.into())),
                None => Err("a malformed SHA-crypt hash".into()),
            };
        }
        Err(if text.starts_with("$apr1$") {
            refused("Apache MD5-crypt (`$apr1$`)")
        } else if text.starts_with("$1$") {
            refused("MD5-crypt (`$1$`)")
        } else if text.starts_with("{SHA}") {
            refused("SHA-1 (`{SHA}`)")
        } else if text.len() == 13 && text.bytes().all(is_crypt_char) {
            refused("crypt(3) DES")
        } else if text.starts_with('$') {
            "an unknown hash scheme: bcrypt (`$2y$`), SHA-256-crypt (`$5$`) or SHA-512-crypt \
             (`$6$`) are accepted"
                .into()
        } else {
            refused("a plain-text password")
        })
    }
}

/// Why a hash whose check would hold a thread too long is refused.
fn too_slow(what: &str, max: u32) -> String {
    format!(
        "{what} is refused (one check would hold a server thread too long; at most {max}): \
         hash the password again with `htpasswd -B` (bcrypt at cost 5) or a lower `-C`"
    )
}

/// The rounds of a well-formed SHA-crypt hash (5000 when it names none), or `None`: `$5$` or
/// `$6$`, an optional `rounds=N$` (1000 to 999,999,999), a salt of up to 16 crypt characters,
/// and the hash: 43 characters for SHA-256, 86 for SHA-512.
fn sha_crypt_rounds(text: &str) -> Option<u32> {
    let hash_len = if text.starts_with("$5$") { 43 } else { 86 };
    let mut fields = text[3..].split('$').collect::<Vec<_>>();
    let mut rounds = 5000;
    if let Some(named) = fields.first().and_then(|f| f.strip_prefix("rounds=")) {
        rounds = named
            .parse::<u32>()
            .ok()
            .filter(|n| (1000..=999_999_999).contains(n))?;
        fields.remove(0);
    }
    let [salt, hash] = fields[..] else {
        return None;
    };
    let ok = salt.len() <= 16
        && !salt.is_empty()
        && salt.bytes().all(is_crypt_char)
        && hash.len() == hash_len
        && hash.bytes().all(is_crypt_char);
    ok.then_some(rounds)
}

/// The crypt alphabet: `.`, `/`, digits and letters.
fn is_crypt_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'/'
}

/// The users of one file.
#[derive(Debug)]
pub(crate) struct Users {
    by_name: HashMap<Box<[u8]>, Hash>,
    /// Checked against when the user is unknown, so that such a request costs what a wrong
    /// password costs: the first user's hash, or one made at start for an empty file.
    decoy: Hash,
}

impl Users {
    /// The hash to check a password against, and whether `user` is one of the file's.
    pub(crate) fn hash_of(&self, user: &[u8]) -> (&Hash, bool) {
        match self.by_name.get(user) {
            Some(hash) => (hash, true),
            None => (&self.decoy, false),
        }
    }

    /// Users in the file.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Reads and checks a whole file.
    pub(crate) fn read(path: &Path) -> Result<Users, HtpasswdError> {
        let error = |line: Option<usize>, reason: String| HtpasswdError {
            path: path.display().to_string(),
            line,
            reason,
        };
        let bytes = start_files::read(path, MAX_HTPASSWD_BYTES).map_err(|e| match e {
            StartFileError::Io(e) => error(None, e.to_string()),
            e => error(None, e.to_string()),
        })?;
        let text = String::from_utf8(bytes).map_err(|_| error(None, "not UTF-8 text".into()))?;
        Users::parse(&text).map_err(|(line, reason)| error(Some(line), reason))
    }

    /// The users of a file's text, or the first bad line (1-based) and what is wrong with it.
    pub(crate) fn parse(text: &str) -> Result<Users, (usize, String)> {
        let mut by_name: HashMap<Box<[u8]>, Hash> = HashMap::new();
        let mut lines_of: HashMap<Box<[u8]>, usize> = HashMap::new();
        let mut first = None;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((user, rest)) = line.split_once(':') else {
                return Err((n, "expected USER:HASH".into()));
            };
            if user.is_empty() || user.chars().any(|c| c.is_control()) {
                return Err((
                    n,
                    "an empty user name, or one with control characters".into(),
                ));
            }
            let hash = rest.split(':').next().unwrap_or("");
            let hash =
                Hash::parse(hash).map_err(|reason| (n, format!("user {user:?}: {reason}")))?;
            let name: Box<[u8]> = user.as_bytes().into();
            if let Some(before) = lines_of.get(&name) {
                return Err((n, format!("user {user:?} is on line {before} already")));
            }
            first.get_or_insert_with(|| hash.clone());
            lines_of.insert(name.clone(), n);
            by_name.insert(name, hash);
        }
        let decoy = match first {
            Some(hash) => hash,
            // bcrypt at htpasswd's default cost, of nothing anyone can send (the salt is fixed:
            // this hash is never compared equal, only computed).
            None => bcrypt::hash_with_salt(b"\0decoy", 5, [7; 16])
                .map(|parts| Hash::Bcrypt(parts.format_for_version(bcrypt::Version::TwoY).into()))
                .map_err(|e| (0, format!("cannot make the decoy hash: {e}")))?,
        };
        Ok(Users { by_name, decoy })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Made by Debian's `htpasswd -nbB u p`, `-nb2` and `-nb5` (password "p").
    const BCRYPT: &str = "$2y$05$R9ubg3UY5SMx5nrVMl7vXO/xxJhNvlMcqx3Ad3WR84cUYM5yg3AyW";
    const SHA256: &str = "$5$UPHFmMhFjFHKoYTP$.CNJDT0NfLo7NIK41/.t2uTQHKHz.zCFAUsT6Rd3bX1";
    const SHA512: &str = "$6$hSFoavY.v2VOQHwX$7zq5yS5dzY.2EcntTH8vW8/S1J1OnSCnsaYFw8epeSKzdohsIYOLBQGvq1a7.GjUd7JokTsJKO30wLVv7VKu30";

    #[test]
    fn each_accepted_scheme_verifies_its_password_only() {
        for hash in [BCRYPT, SHA256, SHA512] {
            let h = Hash::parse(hash).unwrap();
            assert!(h.verify(b"p"), "{hash}");
            assert!(!h.verify(b"q"), "{hash}");
            assert!(!h.verify(b""), "{hash}");
        }
    }

    #[test]
    fn weak_and_malformed_entries_are_refused_with_their_line() {
        let cases = [
            ("u:$apr1$abcdefgh$0123456789abcdefghijkl", "`$apr1$`"),
            ("u:$1$abcdefgh$0123456789abcdefghijkl", "`$1$`"),
            ("u:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=", "SHA-1"),
            ("u:abJnggxhB/yWI", "DES"),
            ("u:secret", "plain-text"),
            ("u:$2y$05$short", "malformed bcrypt"),
            ("u:$6$salt$tooshort", "malformed SHA-crypt"),
            ("u:$7$whatever", "unknown hash scheme"),
            ("no colon here", "USER:HASH"),
            (
                ":$2y$05$R9ubg3UY5SMx5nrVMl7vXO/xxJhNvlMcqx3Ad3WR84cUYM5yg3AyW",
                "empty user",
            ),
        ];
        for (line, want) in cases {
            let text = format!("# users\n\nok:{BCRYPT}\n{line}\n");
            let (n, reason) = Users::parse(&text).unwrap_err();
            assert_eq!(n, 4, "{line}");
            assert!(reason.contains(want), "{line}: {reason}");
        }
        let twice = format!("a:{BCRYPT}\na:{SHA256}\n");
        let (n, reason) = Users::parse(&twice).unwrap_err();
        assert_eq!((n, reason.contains("line 1")), (2, true), "{reason}");
    }

    /// A hash whose check would hold a thread for seconds or days is refused when read, with
    /// its line; the most accepted is read (and never checked here: it is slow by design).
    #[test]
    fn hashes_too_slow_to_check_are_refused_with_their_line() {
        let bcrypt_at = |cost: u32| BCRYPT.replacen("$05$", &format!("${cost:02}$"), 1);
        let sha_at = |rounds: u32| SHA512.replacen("$6$", &format!("$6$rounds={rounds}$"), 1);
        for (hash, want) in [
            (bcrypt_at(31), "bcrypt cost 31"),
            (bcrypt_at(MAX_BCRYPT_COST + 1), "bcrypt cost 15"),
            (sha_at(MAX_SHA_CRYPT_ROUNDS + 1), "1000001 rounds"),
            (sha_at(999_999_999), "999999999 rounds"),
        ] {
            let (n, reason) = Users::parse(&format!("ok:{BCRYPT}\nslow:{hash}\n")).unwrap_err();
            assert_eq!(n, 2, "{hash}");
            assert!(
                reason.contains(want) && reason.contains("refused"),
                "{reason}"
            );
        }
        let most = format!("a:{}\nb:{}\n", bcrypt_at(14), sha_at(MAX_SHA_CRYPT_ROUNDS));
        assert_eq!(Users::parse(&most).unwrap().len(), 2);
    }

    #[test]
    fn unknown_users_are_checked_against_a_real_hash() {
        let users = Users::parse(&format!("a:{SHA512}:a comment\r\nb:{BCRYPT}\n")).unwrap();
        assert_eq!(users.len(), 2);
        let (hash, known) = users.hash_of(b"nobody");
        assert!(!known);
        assert!(matches!(hash, Hash::ShaCrypt(_)), "the first user's hash");
        assert!(users.hash_of(b"b").1);
        let empty = Users::parse("# nobody yet\n").unwrap();
        let (hash, known) = empty.hash_of(b"a");
        assert!(!known && !hash.verify(b"decoy") && !hash.verify(b""));
    }
}
