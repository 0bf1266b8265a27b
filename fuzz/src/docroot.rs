//! The document root flint serve answers fuzzed requests from.
//!
//! Every file holds a pattern that depends on the file and the offset, so a body the server sends
//! can be checked byte for byte (a wrong range offset or a body from the wrong file shows), and a
//! file outside the root (reachable only through a symlink the server must refuse to follow) holds
//! bytes no pattern has, so serving it fails the check. Sizes straddle the server's thresholds:
//! bodies copied after the head, shared buffers, sendfile.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Files under the root: path and size.
pub const FILES: &[(&str, usize)] = &[
    ("index.html", 300),
    ("empty.txt", 0),
    ("a.txt", 1),
    ("page.html", 5_000),
    ("mid.js", 20_000),
    ("big.bin", 40_000),
    ("style.css", 3_000),
    ("style.css.gz", 1_000),
    ("style.css.br", 900),
    ("dir/index.html", 200),
    ("dir/file.txt", 100),
    ("dir/sub/x.txt", 50),
    (".hidden", 10),
    (".well-known/security.txt", 20),
    ("a b.txt", 5),
    ("100%.txt", 6),
    ("\u{e9}t\u{e9}.txt", 7),
];

/// Symlinks under the root: one to a file inside, one leading out.
const LINKS: &[(&str, &str)] = &[("link-in", "index.html"), ("link-out", "../outside.txt")];

/// Byte `i` of file number `f`.
pub fn pattern(f: usize, i: usize) -> u8 {
    ((i as u64 * 131 + f as u64 * 7919 + 17) % 251) as u8
}

/// Whether `body` is bytes `start..start + body.len()` of a root file whose size is `total`.
pub fn matches_some_file(body: &[u8], start: usize, total: usize) -> bool {
    FILES.iter().enumerate().any(|(f, &(_, size))| {
        size == total
            && start + body.len() <= size
            && body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == pattern(f, start + i))
    })
}

/// The root, made once per process (and once per machine: later processes find it complete).
pub fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-docroot");
        make(&base).unwrap_or_else(|e| panic!("making {}: {e}", base.display()));
        base.join("root")
    })
}

fn make(base: &Path) -> io::Result<()> {
    if base.join("root/.complete").exists() {
        return Ok(());
    }
    // Built aside and renamed into place, so two fuzzers starting together never see half a root.
    let tmp = base.with_extension(format!("tmp{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let root = tmp.join("root");
    for (f, &(path, size)) in FILES.iter().enumerate() {
        let path = root.join(path);
        fs::create_dir_all(path.parent().expect("under the root"))?;
        fs::write(&path, (0..size).map(|i| pattern(f, i)).collect::<Vec<u8>>())?;
    }
    for (link, to) in LINKS {
        symlink(to, root.join(link))?;
    }
    // No pattern byte is 0xff (the patterns are mod 251), so this can match no root file.
    fs::write(tmp.join("outside.txt"), [0xff; 64])?;
    fs::write(root.join(".complete"), b"")?;
    fs::create_dir_all(base.parent().expect("under target"))?;
    match fs::rename(&tmp, base) {
        Ok(()) => Ok(()),
        // Another process put its root in place first: theirs is as good.
        Err(_) if base.join("root/.complete").exists() => fs::remove_dir_all(&tmp),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hold_their_patterns_and_the_outside_file_matches_none() {
        let root = root();
        for (f, &(path, size)) in FILES.iter().enumerate() {
            let data = fs::read(root.join(path)).unwrap();
            assert_eq!(data.len(), size, "{path}");
            assert!(data.iter().enumerate().all(|(i, &b)| b == pattern(f, i)));
            assert!(matches_some_file(&data, 0, size));
        }
        let outside = fs::read(root.join("link-out")).unwrap();
        assert!(!matches_some_file(&outside[..10], 0, 64));
        assert!(!matches_some_file(&outside[..10], 0, 300));
        let index = fs::read(root.join("index.html")).unwrap();
        assert!(matches_some_file(&index[100..150], 100, 300));
        assert!(
            !matches_some_file(&index[100..150], 101, 300),
            "offset is checked"
        );
    }
}
