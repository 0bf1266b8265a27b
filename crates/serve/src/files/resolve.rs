//! The one place that decides which file a request target names, and whether it may be served.
//!
//! Two steps, kept apart on purpose:
//!
//! 1. [`normalise`] is pure byte work on the target: strip the query and fragment, percent-decode
//!    exactly once, collapse `.` and empty segments, and refuse what has no business in a path
//!    (NUL, `%2F`, backslashes, `..`). Its output is the cache key, so a request that passes it
//!    and a request that hits the cache are checked by the same code.
//! 2. [`Root::open`] runs only on a cache miss (or when a cached body must be re-read): it opens the
//!    path under the canonical root and then asks the kernel where the opened file really is
//!    (`/proc/self/fd/N`, falling back to `realpath`). A symlink that leads out of the root is
//!    refused after the open, on the very inode that would be served, so swapping a symlink
//!    between a check and an open cannot smuggle a file out.
//!
//! Why `..` is refused (400) rather than resolved: clients remove dot-segments before sending
//! (RFC 3986 5.2.4), so a `..` that reaches the server, raw or as `%2e%2e`, is a probe. Refusing
//! it outright means no arithmetic on segments ever decides whether a path climbs out of the root.
//! An encoded slash (`%2F`) or backslash would make one path segment look like two to some later
//! layer; they are refused (400) for the same reason. NUL would truncate a C path: 400.

use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The file-system calls resolving made, for the cache's counters (which add them to their own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsCounters {
    /// open(2) calls, failed ones included.
    pub opens: u64,
    /// stat/fstat calls, and the readlink that checks where an opened file really is.
    pub stats: u64,
}

/// Why a request target is refused before the filesystem is consulted. All are 400: the target
/// is not something a well-behaved client sends, so "bad request" is the honest answer (a 404
/// would suggest the name was looked up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not `/...` nor `http(s)://host/...` (`*`, authority-form, a relative path).
    #[error("target is neither origin-form nor absolute-form")]
    BadForm,
    /// A `%` not followed by two hexadecimal digits.
    #[error("invalid percent escape")]
    BadEscape,
    /// A NUL byte, raw or `%00`: no file name holds one.
    #[error("NUL byte in path")]
    Nul,
    /// `%2F` or `%5C`: a separator that would not split segments when checked but would once
    /// decoded.
    #[error("encoded slash or backslash in path")]
    EncodedSeparator,
    /// A raw backslash, a separator to some servers and file systems behind them.
    #[error("backslash in path")]
    Backslash,
    /// A `..` segment, raw or encoded: no target climbs out of where it points.
    #[error("`..` segment in path")]
    DotDot,
}

impl Refusal {
    /// The status this refusal answers with.
    pub fn status(self) -> u16 {
        400
    }
}

/// Decodes and normalises `target` into `out` (cleared first): `/`, `/a/b` or `/a/b/` (a trailing
/// slash is kept: it asks for a directory). Returns the raw query (`?...`, empty if none), kept
/// only to carry it over in a directory redirect.
pub fn normalise<'t>(target: &'t [u8], out: &mut Vec<u8>) -> Result<&'t [u8], Refusal> {
    out.clear();
    let rest = strip_absolute_form(target)?;
    if let Some(path_end) = normal_path_end(rest) {
        let (path, after) = rest.split_at(path_end);
        out.extend_from_slice(path);
        return Ok(query_of(after));
    }
    let path_end = rest
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(rest.len());
    let (path, after) = rest.split_at(path_end);
    normalise_path(path, out)?;
    Ok(query_of(after))
}

/// The long way for `path` (starting with `/`, no query): decode each segment, drop empty and `.`
/// ones, refuse `..`.
fn normalise_path(path: &[u8], out: &mut Vec<u8>) -> Result<(), Refusal> {
    out.push(b'/');
    let mut trailing = false;
    for raw in path.split(|&b| b == b'/') {
        let start = out.len();
        decode_segment(raw, out)?;
        let segment = &out[start..];
        if segment.is_empty() || segment == b"." {
            out.truncate(start);
            // "/a/" and "/a/." both name the directory a.
            trailing = true;
        } else if segment == b".." {
            return Err(Refusal::DotDot);
        } else {
            out.push(b'/');
            trailing = false;
        }
    }
    if !trailing && out.len() > 1 {
        out.pop();
    }
    Ok(())
}

/// The query (`?...` without a fragment) from what follows the path, empty if none.
fn query_of(after: &[u8]) -> &[u8] {
    match after.first() {
        Some(b'?') => {
            let end = after.iter().position(|&b| b == b'#').unwrap_or(after.len());
            &after[..end]
        }
        _ => &after[..0],
    }
}

/// Where the path of `rest` (starting with `/`) ends (at `?`, `#` or the end) if it is its own
/// normal form, as almost every request's is: nothing to decode (`%`), nothing refused (NUL,
/// `\\`), no empty, `.` or `..` segment (no `/` followed by `/` or `.`). Then normalising is a
/// copy. A segment starting with a dot takes the long way, which also refuses `..`. One pass,
/// one table load a byte.
fn normal_path_end(rest: &[u8]) -> Option<usize> {
    let mut after_slash = false;
    for (i, &b) in rest.iter().enumerate() {
        match PATH_BYTE.0[b as usize] {
            PathByte::Plain => after_slash = false,
            PathByte::Slash | PathByte::Dot if after_slash => return None,
            PathByte::Slash => after_slash = true,
            PathByte::Dot => after_slash = false,
            PathByte::End => return Some(i),
            PathByte::Special => return None,
        }
    }
    Some(rest.len())
}

/// What a byte is to [`normal_path_end`], as a table: one load a byte.
#[derive(Clone, Copy)]
enum PathByte {
    Plain,
    Slash,
    Dot,
    /// `?` or `#`: the path ends.
    End,
    /// `%`, NUL, `\\`: decoded or refused by the long way.
    Special,
}

struct PathBytes([PathByte; 256]);

static PATH_BYTE: PathBytes = {
    let mut table = [PathByte::Plain; 256];
    table[b'/' as usize] = PathByte::Slash;
    table[b'.' as usize] = PathByte::Dot;
    table[b'?' as usize] = PathByte::End;
    table[b'#' as usize] = PathByte::End;
    table[b'%' as usize] = PathByte::Special;
    table[0] = PathByte::Special;
    table[b'\\' as usize] = PathByte::Special;
    PathBytes(table)
};

/// Origin-form (`/path`) is returned as is; absolute-form (`http://host/path`, RFC 9112 3.2.2)
/// loses its scheme and authority (this server has one root whatever the host); anything else
/// (`*`, authority-form, a relative path) is refused.
fn strip_absolute_form(target: &[u8]) -> Result<&[u8], Refusal> {
    if target.first() == Some(&b'/') {
        return Ok(target);
    }
    let after_scheme = if starts_with_ignore_case(target, b"http://") {
        &target[7..]
    } else if starts_with_ignore_case(target, b"https://") {
        &target[8..]
    } else {
        return Err(Refusal::BadForm);
    };
    match after_scheme
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
    {
        Some(i) if after_scheme[i] == b'/' => Ok(&after_scheme[i..]),
        // `http://host` and `http://host?q` name the root.
        _ => Ok(b"/"),
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Appends the percent-decoded `raw` segment to `out`.
fn decode_segment(raw: &[u8], out: &mut Vec<u8>) -> Result<(), Refusal> {
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        let decoded = match b {
            b'%' => {
                let (Some(hi), Some(lo)) = (
                    raw.get(i + 1).and_then(|&h| hex(h)),
                    raw.get(i + 2).and_then(|&l| hex(l)),
                ) else {
                    return Err(Refusal::BadEscape);
                };
                i += 2;
                match hi << 4 | lo {
                    0 => return Err(Refusal::Nul),
                    b'/' | b'\\' => return Err(Refusal::EncodedSeparator),
                    d => d,
                }
            }
            0 => return Err(Refusal::Nul),
            b'\\' => return Err(Refusal::Backslash),
            _ => b,
        };
        out.push(decoded);
        i += 1;
    }
    Ok(())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// What a normalised path names on disk.
// Built once per miss and moved straight into the cache: boxing the large variant would only
// add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Resolved {
    /// A regular file to serve; `fs_path` is where it was found (the index file for a directory).
    File {
        /// The file, opened read-only: what is checked is what is served.
        file: File,
        /// Its `fstat`.
        meta: Metadata,
        /// Its path on disk, bytes.
        fs_path: Vec<u8>,
    },
    /// A directory asked for without its trailing slash: 301 to the path plus `/`.
    Redirect,
    /// A directory asked for with its trailing slash that has no index file: a listing when
    /// those are on, else 404. `dir` is the opened directory (already checked to be under the
    /// root), so a listing reads the very directory that was checked.
    Directory {
        /// The directory, opened.
        dir: File,
        /// Its path on disk, bytes.
        fs_path: Vec<u8>,
    },
    /// Absent, not a regular file, or outside the root: 404.
    NotFound,
}

/// The canonical document root, computed once.
#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
    /// The canonical root as bytes without a trailing slash (empty when the root is `/`), so that
    /// `prefix + "/a/b"` is a path and `prefix + "/"` starts everything under the root.
    prefix: Vec<u8>,
    /// Serve files whose real location is outside the root (symlinks leading out).
    allow_outside: bool,
    /// Canonical directories no file is served from whatever leads there (the CGI
    /// directories, with `allow_outside`: without it, being outside the root refuses them).
    refused: Vec<Vec<u8>>,
    /// Name endings no file is served by whatever name leads there: a script's (`.cgi`,
    /// `.php`), which a gateway runs when asked for by its own name.
    refused_endings: Vec<Vec<u8>>,
}

impl Root {
    /// Canonicalises `path` (symlinks resolved, made absolute); fails if it is missing or not
    /// a directory. `allow_outside` (`symlinks_outside_root`) lets files whose real location is
    /// outside it be served.
    pub fn new(path: &Path, allow_outside: bool) -> io::Result<Root> {
        let path = std::fs::canonicalize(path)?;
        if !path.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            ));
        }
        let mut prefix = path.as_os_str().as_bytes().to_vec();
        while prefix.last() == Some(&b'/') {
            prefix.pop();
        }
        Ok(Root {
            path,
            prefix,
            allow_outside,
            refused: Vec::new(),
            refused_endings: Vec::new(),
        })
    }

    /// No file whose real path lies under `dir` (canonicalised here) is served: a CGI
    /// directory, whose programs' bytes must never go out. Only needed with `allow_outside`
    /// (without it every real path outside the root is refused, and a CGI directory is outside
    /// by the start's check); then each open reads the opened file's real path as the default
    /// does, one `readlink` of its descriptor. A directory that cannot be canonicalised is
    /// refused at start elsewhere (`ServeError::CgiDir`).
    pub fn refuse_under(&mut self, dir: &Path) {
        if !self.allow_outside {
            return;
        }
        if let Ok(dir) = std::fs::canonicalize(dir) {
            let mut dir = dir.into_os_string().into_vec();
            while dir.last() == Some(&b'/') {
                dir.pop();
            }
            self.refused.push(dir);
        }
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `out` = root + `rel` (a normalised path, starting with `/`).
    pub fn join(&self, rel: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(rel);
    }

    /// Whether a canonical path is the root or under it.
    pub fn contains(&self, canonical: &[u8]) -> bool {
        is_under(canonical, &self.prefix)
    }

    /// Resolves a normalised path (from [`normalise`]): a file, the `index` of a directory asked
    /// for with a trailing slash, a redirect for a directory without one, or not found.
    /// Errors are only those that are not the client's fault (EMFILE, ENOMEM...): a 503.
    ///
    /// The file's path is built in `scratch`, kept when nothing is found (a flood of 404s
    /// allocates nothing) and handed over with what is found (an entry is built for it).
    pub fn resolve(
        &self,
        rel: &[u8],
        index: &str,
        counters: &mut FsCounters,
        scratch: &mut Vec<u8>,
    ) -> io::Result<Resolved> {
        scratch.clear();
        scratch.reserve(self.prefix.len() + rel.len() + index.len() + 1);
        self.join(rel, scratch);
        let Some((file, meta)) = self.open(scratch, counters)? else {
            return Ok(Resolved::NotFound);
        };
        if meta.is_file() {
            return Ok(Resolved::File {
                file,
                meta,
                fs_path: std::mem::take(scratch),
            });
        }
        if !meta.is_dir() {
            return Ok(Resolved::NotFound);
        }
        if rel.last() != Some(&b'/') {
            return Ok(Resolved::Redirect);
        }
        if index.is_empty() || index.contains('/') {
            let fs_path = std::mem::take(scratch);
            return Ok(Resolved::Directory { dir: file, fs_path });
        }
        let dir_len = scratch.len();
        scratch.extend_from_slice(index.as_bytes());
        match self.open(scratch, counters)? {
            Some((index, meta)) if meta.is_file() => Ok(Resolved::File {
                file: index,
                meta,
                fs_path: std::mem::take(scratch),
            }),
            _ => {
                scratch.truncate(dir_len);
                let fs_path = std::mem::take(scratch);
                Ok(Resolved::Directory { dir: file, fs_path })
            }
        }
    }

    /// No file whose real name ends with `ending` (a CGI extension, a FastCGI extension
    /// pattern's) is served, reached by a link or as a directory's index: only a gateway runs it.
    /// The check reads the opened file's real path, as the default does (with `allow_outside`,
    /// one `readlink` of its descriptor a file opened).
    pub fn refuse_ending(&mut self, ending: &str) {
        self.refused_endings.push(ending.as_bytes().to_vec());
    }

    /// Opens `fs_path` and checks that what was opened lies under the root. `Ok(None)`: absent,
    /// not allowed, or outside the root.
    ///
    /// `O_NONBLOCK` so that a FIFO planted under the root cannot block the event loop in open(2)
    /// (it has no effect on regular files); `O_NOCTTY` so that a terminal device cannot become the
    /// process's controlling terminal.
    pub fn open(
        &self,
        fs_path: &[u8],
        counters: &mut FsCounters,
    ) -> io::Result<Option<(File, Metadata)>> {
        counters.opens += 1;
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(OsStr::from_bytes(fs_path));
        let file = match opened {
            Ok(f) => f,
            Err(e) if is_resource_error(&e) => return Err(e),
            Err(_) => return Ok(None),
        };
        counters.stats += 1;
        let meta = file.metadata()?;
        if !self.allow_outside || !self.refused.is_empty() || !self.refused_endings.is_empty() {
            counters.stats += 1;
            let Some(real) = real_path(&file, fs_path) else {
                return Ok(None);
            };
            let real = real.as_os_str().as_bytes();
            let name = real.rsplit(|&b| b == b'/').next().unwrap_or(real);
            if (!self.allow_outside && !self.contains(real))
                || self.refused.iter().any(|d| is_under(real, d))
                || self.refused_endings.iter().any(|e| name.ends_with(e))
            {
                return Ok(None);
            }
        }
        Ok(Some((file, meta)))
    }
}

/// Whether a normalised path (from [`normalise`]) has a segment whose name starts with a dot,
/// other than a leading `/.well-known` (RFC 8615: where ACME challenges and the like live).
/// `normalise` has already removed `.` segments and refused `..`, so any `/.` left starts a
/// hidden name.
pub fn is_hidden(path: &[u8]) -> bool {
    let rest = match path.strip_prefix(b"/.well-known") {
        Some(rest) if rest.is_empty() || rest[0] == b'/' => rest,
        _ => path,
    };
    rest.windows(2).any(|w| w == b"/.")
}

/// Errors that say the server is short of something, not that the file is missing.
pub fn is_resource_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::EINTR | libc::EAGAIN)
    )
}

/// The status of a failure to read, open or start: 503 when out of descriptors or memory (see
/// [`is_resource_error`]), else `otherwise`.
#[inline]
pub fn io_status(e: &io::Error, otherwise: u16) -> u16 {
    if is_resource_error(e) {
        503
    } else {
        otherwise
    }
}

/// Where the opened file really is: the kernel's name for the descriptor, which no later symlink
/// swap can change; `realpath` of the name where `/proc` is not mounted.
fn real_path(file: &File, fs_path: &[u8]) -> Option<PathBuf> {
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    match std::fs::read_link(link) {
        Ok(p) if p.is_absolute() => Some(p),
        _ => std::fs::canonicalize(OsStr::from_bytes(fs_path)).ok(),
    }
}

/// Whether `path` is `dir` or lies under it (`dir` without its trailing `/`).
fn is_under(path: &[u8], dir: &[u8]) -> bool {
    path.starts_with(dir) && (path.len() == dir.len() || path[dir.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(t: &str) -> Result<String, Refusal> {
        let mut out = Vec::new();
        normalise(t.as_bytes(), &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn dot_and_empty_segments_collapse() {
        assert_eq!(norm("/").unwrap(), "/");
        assert_eq!(norm("//").unwrap(), "/");
        assert_eq!(norm("/a//b").unwrap(), "/a/b");
        assert_eq!(norm("/a/./b/").unwrap(), "/a/b/");
        assert_eq!(norm("/a/.").unwrap(), "/a/");
        assert_eq!(norm("/./").unwrap(), "/");
        assert_eq!(norm("/a/b?x=1#f").unwrap(), "/a/b");
        assert_eq!(norm("/%2e/a").unwrap(), "/a");
        assert_eq!(norm("/.hidden/...").unwrap(), "/.hidden/...");
    }

    #[test]
    fn a_path_taken_as_normal_is_what_the_long_way_makes() {
        // Every path of up to 6 bytes over the bytes that matter to segments and escapes.
        let alphabet = b"/a.%2e\\?#";
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        let mut normal = 0u64;
        for len in 0..=6u32 {
            for mut k in 0..alphabet.len().pow(len) {
                let mut path = vec![b'/'];
                for _ in 0..len {
                    path.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                let end = path
                    .iter()
                    .position(|&b| b == b'?' || b == b'#')
                    .unwrap_or(path.len());
                slow.clear();
                let long_way = normalise_path(&path[..end], &mut slow);
                if let Some(at) = normal_path_end(&path) {
                    normal += 1;
                    assert_eq!(at, end, "{path:?}");
                    assert_eq!(long_way, Ok(()), "{path:?}");
                    assert_eq!(slow, &path[..end], "{path:?}");
                }
                let query = query_of(&path[end..]);
                assert_eq!(
                    long_way.map(|()| (&slow, query)),
                    normalise(&path, &mut fast).map(|q| (&fast, q)),
                    "{path:?}"
                );
            }
        }
        assert!(normal > 100, "{normal} normal paths");
    }

    #[test]
    fn percent_decoding_happens_once() {
        assert_eq!(norm("/a%20b").unwrap(), "/a b");
        assert_eq!(norm("/%252e%252e/x").unwrap(), "/%2e%2e/x");
        assert_eq!(norm("/%C3%A9").unwrap(), "/\u{e9}");
    }

    #[test]
    fn refusals() {
        assert_eq!(norm("/../etc/passwd"), Err(Refusal::DotDot));
        assert_eq!(norm("/a/../b"), Err(Refusal::DotDot));
        assert_eq!(norm("/%2e%2e/etc"), Err(Refusal::DotDot));
        assert_eq!(norm("/.%2E/etc"), Err(Refusal::DotDot));
        assert_eq!(norm("/a%2fb"), Err(Refusal::EncodedSeparator));
        assert_eq!(norm("/a%5cb"), Err(Refusal::EncodedSeparator));
        assert_eq!(norm("/a\\b"), Err(Refusal::Backslash));
        assert_eq!(norm("/a%00b"), Err(Refusal::Nul));
        assert_eq!(norm("/a\0b"), Err(Refusal::Nul));
        assert_eq!(norm("/a%2"), Err(Refusal::BadEscape));
        assert_eq!(norm("/a%zz"), Err(Refusal::BadEscape));
        assert_eq!(norm("*"), Err(Refusal::BadForm));
        assert_eq!(norm("example.com:80"), Err(Refusal::BadForm));
        assert_eq!(norm("a/b"), Err(Refusal::BadForm));
    }

    #[test]
    fn absolute_form_keeps_only_the_path() {
        assert_eq!(norm("http://example.com/a/b").unwrap(), "/a/b");
        assert_eq!(norm("HTTPS://example.com:8443/x/").unwrap(), "/x/");
        assert_eq!(norm("http://example.com").unwrap(), "/");
        assert_eq!(norm("http://example.com?q").unwrap(), "/");
        assert_eq!(norm("http://h/../x"), Err(Refusal::DotDot));
    }

    #[test]
    fn query_is_returned_for_redirects() {
        let mut out = Vec::new();
        assert_eq!(normalise(b"/d?a=1#x", &mut out).unwrap(), b"?a=1");
        assert_eq!(normalise(b"/d#x?y", &mut out).unwrap(), b"");
    }

    #[test]
    fn names_starting_with_a_dot_are_hidden_except_well_known() {
        for hidden in [
            "/.git/config",
            "/.env",
            "/a/.htpasswd",
            "/a/.d/",
            "/.well-known/.x",
            "/.well-knownx/a",
            "/...",
        ] {
            assert!(is_hidden(norm(hidden).unwrap().as_bytes()), "{hidden}");
        }
        for shown in [
            "/",
            "/a.b/c.d",
            "/.well-known",
            "/.well-known/",
            "/.well-known/acme-challenge/t0k",
            "/a/./b",
            "/%2e/x",
        ] {
            assert!(!is_hidden(norm(shown).unwrap().as_bytes()), "{shown}");
        }
        // Encoded dots are decoded before the check.
        assert!(is_hidden(norm("/%2egit/config").unwrap().as_bytes()));
    }

    #[test]
    fn root_containment_is_by_whole_segments() {
        let dir = std::env::temp_dir();
        let root = Root::new(&dir, false).unwrap();
        let p = root.prefix.clone();
        assert!(root.contains(&p));
        assert!(root.contains(&[&p[..], b"/x"].concat()));
        assert!(!root.contains(&[&p[..], b"x"].concat()));
        assert!(!root.contains(b"/"));
    }
}
