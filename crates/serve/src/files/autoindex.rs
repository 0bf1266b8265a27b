//! Directory listings (`autoindex`, off by default), for those who use `flint serve` the way
//! they would use `python3 -m http.server`.
//!
//! Never on the path of a file request: a listing is built only when a directory asked for with
//! its trailing slash has no index file, and it is not cached (a directory changes whenever a file
//! is added to it, and a listing is asked for by a person, not a benchmark).
//!
//! What it shows, and what it does not:
//! - the directory that [`crate::resolve::Root::open`] opened and checked to be under the root,
//!   read through its descriptor (`/proc/self/fd/N`), so a rename or symlink swap after the check
//!   cannot point the listing elsewhere;
//! - directories first, then files, each sorted by name (bytewise, as `ls` in the C locale);
//! - size in bytes and modification time of each entry;
//! - not: names starting with a dot (unless dotfiles are allowed), FIFOs, sockets and devices
//!   (never served), symlinks leading out of the root (unless those are allowed: their size and
//!   date would describe a file outside);
//! - names are HTML-escaped in the text and percent-encoded in the links, so a file named
//!   `<script>` or `a"b` or `x:y` is shown and linked as itself;
//! - at most `autoindex_max_entries` entries (the first the directory yields, then sorted), then
//!   a line saying how many were left out, so one huge directory cannot hold the event loop or
//!   memory for long: the entries past the limit are counted by name alone (no `stat`, nothing
//!   kept), and only up to [`MAX_COUNTED`] of them; past that the line says "at least".

use std::fs::{self, File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::resolve::Root;

/// Entries past the limit that are counted for the last line; reading further would cost a
/// directory of millions its whole `getdents` walk per request for one number.
pub const MAX_COUNTED: u64 = 100_000;

/// What to list and how.
pub struct Listing<'a> {
    /// The opened directory.
    pub dir: &'a File,
    /// Where it was opened (used only where `/proc` is not mounted).
    pub fs_path: &'a Path,
    /// The normalised URL path of the directory, with its trailing slash.
    pub url_path: &'a [u8],
    /// The document root: where a symlink in the listing must lead, unless
    /// `symlinks_outside_root`.
    pub root: &'a Root,
    /// List names starting with a dot (`dotfiles = "allow"`).
    pub show_dotfiles: bool,
    /// List symlinks whose target is outside the root (as `symlinks_outside_root` serves them).
    pub symlinks_outside_root: bool,
    /// Entries shown at most.
    pub max_entries: usize,
}

struct Item {
    name: Vec<u8>,
    is_dir: bool,
    size: u64,
    modified: Option<SystemTime>,
}

/// The HTML page for `listing`, appended to `out`.
pub fn render(listing: &Listing<'_>, out: &mut Vec<u8>) -> io::Result<()> {
    let (mut items, left_out) = read(listing, MAX_COUNTED)?;
    items.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
    let title = String::from_utf8_lossy(listing.url_path);
    out.extend_from_slice(b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">");
    out.extend_from_slice(b"<meta name=\"viewport\" content=\"width=device-width\">");
    out.extend_from_slice(b"<title>Index of ");
    push_escaped(out, &title);
    out.extend_from_slice(
        b"</title>\n<style>body{font-family:sans-serif;margin:2em}\
          td,th{padding:0 1.5em 0 0;text-align:left}td.n{text-align:right}\
          td,th{font-variant-numeric:tabular-nums}</style></head>\n<body><h1>Index of ",
    );
    push_escaped(out, &title);
    out.extend_from_slice(
        b"</h1>\n<table>\n<tr><th>Name</th><th>Last modified</th><th>Size (bytes)</th></tr>\n",
    );
    if listing.url_path != b"/" {
        out.extend_from_slice(b"<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for item in &items {
        out.extend_from_slice(b"<tr><td><a href=\"");
        push_href(out, &item.name);
        if item.is_dir {
            out.push(b'/');
        }
        out.extend_from_slice(b"\">");
        push_escaped(out, &String::from_utf8_lossy(&item.name));
        if item.is_dir {
            out.push(b'/');
        }
        out.extend_from_slice(b"</a></td><td>");
        if let Some(t) = item.modified {
            out.extend_from_slice(wire::http_date(t).as_bytes());
        }
        out.extend_from_slice(b"</td><td class=\"n\">");
        if item.is_dir {
            out.push(b'-');
        } else {
            out.extend_from_slice(item.size.to_string().as_bytes());
        }
        out.extend_from_slice(b"</td></tr>\n");
    }
    out.extend_from_slice(b"</table>\n");
    if left_out > 0 {
        let (more_than, entries) = match left_out {
            MAX_COUNTED => ("at least ", "entries"),
            1 => ("", "entry"),
            _ => ("", "entries"),
        };
        let note = format!(
            "<p class=\"more\">{more_than}{left_out} more {entries} not listed (a listing shows at \
             most {}).</p>\n",
            listing.max_entries
        );
        out.extend_from_slice(note.as_bytes());
    }
    out.extend_from_slice(b"</body></html>\n");
    Ok(())
}

/// The entries to show (unsorted) and how many more were counted (at most `max_counted`: the
/// directory is not read further).
fn read(listing: &Listing<'_>, max_counted: u64) -> io::Result<(Vec<Item>, u64)> {
    let by_fd = PathBuf::from(format!("/proc/self/fd/{}", listing.dir.as_raw_fd()));
    let (base, entries) = match fs::read_dir(&by_fd) {
        Ok(entries) => (by_fd, entries),
        Err(_) => (
            listing.fs_path.to_path_buf(),
            fs::read_dir(listing.fs_path)?,
        ),
    };
    let mut items = Vec::new();
    let mut left_out = 0u64;
    for entry in entries {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let name = name.as_bytes();
        if name.first() == Some(&b'.') && !listing.show_dotfiles {
            continue;
        }
        if items.len() >= listing.max_entries {
            left_out += 1;
            if left_out == max_counted {
                break;
            }
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let meta = if kind.is_symlink() {
            let target = base.join(entry.file_name());
            if !listing.symlinks_outside_root && !leads_inside(listing.root, &target) {
                continue;
            }
            fs::metadata(&target)
        } else {
            entry.metadata()
        };
        let Ok(meta) = meta else { continue };
        if !(meta.is_dir() || meta.is_file()) {
            continue;
        }
        items.push(item(name, &meta));
    }
    Ok((items, left_out))
}

fn item(name: &[u8], meta: &Metadata) -> Item {
    Item {
        name: name.to_vec(),
        is_dir: meta.is_dir(),
        size: meta.len(),
        modified: meta.modified().ok(),
    }
}

/// Whether a symlink's final target is under the root.
fn leads_inside(root: &Root, link: &Path) -> bool {
    fs::canonicalize(link).is_ok_and(|real| root.contains(real.as_os_str().as_bytes()))
}

/// HTML text and attribute escaping: `&`, `<`, `>`, `"` and `'`.
fn push_escaped(out: &mut Vec<u8>, text: &str) {
    for &b in text.as_bytes() {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            _ => out.push(b),
        }
    }
}

/// A name as a relative link: everything but RFC 3986's unreserved characters is
/// percent-encoded, so no name can be read as a scheme (`x:y`), a query, a fragment, another
/// segment, or break out of the attribute.
fn push_href(out: &mut Vec<u8>, name: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in name {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_past_the_limit_are_counted_only_up_to_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..30 {
            std::fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
        }
        let root = Root::new(dir.path(), false).unwrap();
        let opened = File::open(dir.path()).unwrap();
        let listing = Listing {
            dir: &opened,
            fs_path: dir.path(),
            url_path: b"/",
            root: &root,
            show_dotfiles: false,
            symlinks_outside_root: false,
            max_entries: 10,
        };
        let (items, left_out) = read(&listing, 5).unwrap();
        assert_eq!((items.len(), left_out), (10, 5), "stopped at the bound");
        let (items, left_out) = read(&listing, 1000).unwrap();
        assert_eq!((items.len(), left_out), (10, 20));
    }

    #[test]
    fn names_are_escaped_in_text_and_encoded_in_links() {
        let mut text = Vec::new();
        push_escaped(&mut text, "<a href='x'>&\"");
        assert_eq!(text, b"&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
        let mut href = Vec::new();
        push_href(&mut href, "a b/c?d#e:f%\"<é".as_bytes());
        assert_eq!(
            String::from_utf8(href).unwrap(),
            "a%20b%2Fc%3Fd%23e%3Af%25%22%3C%C3%A9"
        );
    }
}
