//! Where text goes. Reports go to stdout, unless stdout carries a result (`--json -`,
//! `--log -`, `--html -`): then they go to stderr, so that `flint bench ... --json - | jq` reads
//! JSON alone. A reader that goes away (`| head`) ends the output quietly, never with a panic
//! (`print!` panics on a closed pipe, Rust having SIGPIPE ignored).

use std::io::{self, Write};
use std::path::Path;

/// `-` as a file name: stdout.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Where the text reports go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// Stdout, unless one of `files` is stdout.
    pub fn for_reports<'a>(files: impl IntoIterator<Item = Option<&'a Path>>) -> Stream {
        if files.into_iter().flatten().any(is_stdout) {
            Stream::Stderr
        } else {
            Stream::Stdout
        }
    }

    /// Writes `text` and flushes; a closed pipe is not an error (the reader has seen enough).
    pub fn write(self, text: &str) -> io::Result<()> {
        let result = match self {
            Stream::Stdout => write_flush(&mut io::stdout().lock(), text.as_bytes()),
            Stream::Stderr => write_flush(&mut io::stderr().lock(), text.as_bytes()),
        };
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}

fn write_flush(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}

/// A line on stderr that cannot panic (stderr may be closed: a detached process).
pub fn error_line(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

/// Writes `bytes` to the file, or to stdout for `-`.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if is_stdout(path) {
        match write_flush(&mut io::stdout().lock(), bytes) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    } else {
        std::fs::write(path, bytes)
    }
}

/// Whether `path` can be written, found by opening it for writing (without truncating it): a
/// file that did not exist is removed again. `Err`: `PATH: cannot write there: REASON`.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let existed = path.exists();
    let opened = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    match opened {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(format!("{}: cannot write there: {e}", path.display())),
    }
}

/// The file `path` names, for telling whether two paths are one file: its canonical path, or
/// for a file not yet there its directory's canonical path and its name (`./out.json`,
/// `out.json` and a link to its directory are one file).
pub fn canonical(path: &Path) -> std::path::PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (dir.canonicalize(), path.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => path.to_path_buf(),
    }
}

/// Whether `a` and `b` name one file that is there: the same device and inode, so that two
/// hard links to it are one file, which their canonical paths do not say.
pub fn same_existing_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(m), Ok(n)) => (m.dev(), m.ino()) == (n.dev(), n.ino()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_hard_links_are_one_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, b"{}").unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        std::fs::write(&c, b"{}").unwrap();
        assert_ne!(canonical(&a), canonical(&b), "the paths alone differ");
        assert!(same_existing_file(&a, &b));
        assert!(!same_existing_file(&a, &c));
        assert!(!same_existing_file(&a, &dir.path().join("not yet")));
    }

    #[test]
    fn a_dash_moves_the_reports_to_stderr() {
        let (dash, file) = (Path::new("-"), Path::new("out.json"));
        assert_eq!(Stream::for_reports([None, Some(file)]), Stream::Stdout);
        assert_eq!(
            Stream::for_reports([Some(file), Some(dash)]),
            Stream::Stderr
        );
        assert_eq!(Stream::for_reports([None, None]), Stream::Stdout);
        assert!(!is_stdout(Path::new("./-")));
    }

    #[test]
    fn one_file_written_two_ways_is_one_canonical_path() {
        let dir = tempfile::tempdir().unwrap();
        let there = dir.path().join("out.json");
        let through = dir.path().join(".").join("out.json");
        // Not yet there, and there.
        assert_eq!(canonical(&there), canonical(&through));
        std::fs::write(&there, b"{}").unwrap();
        assert_eq!(canonical(&there), canonical(&through));
        assert_ne!(canonical(&there), canonical(&dir.path().join("out.csv")));
    }
}
