//! From a parsed request and the cache to a response, appended to the caller's buffer.
//!
//! The hit path is: normalise the target into a reused buffer, one hash lookup, pick the
//! representation (only for files with precompressed siblings), compare validators against the
//! cached ETag / Last-Modified, then memcpy the status line, the Date the event loop formatted
//! this second, the prebuilt header block and (for bodies up to 16 KiB) the body, so head and body
//! leave in one write. Nothing is formatted, allocated or looked up on disk; a 304 inside the
//! revalidation window does not open or stat anything (a truss profile of a threaded Apache saw it
//! open and close the file). Every head is described once, its status and its fields in order,
//! and written to an [`Output`]: HTTP/1.1 text, or for a protocol that carries fields (HTTP/2,
//! HTTP/3) a [`Fields`](crate::response::Fields) head, a cached file's as its prebuilt fields ([`crate::response`]).
//! Bodies above 16 KiB are handed over as a shared `Rc<[u8]>` for a gathered write, and files
//! above `cache_max_file` as a kept-open descriptor for `sendfile`.
//!
//! What is refused, and with which status:
//! - under a protected prefix, without credentials of its htpasswd file: 401 with
//!   `WWW-Authenticate` (429 once the client failed too often), before anything else is looked
//!   at; see [`crate::auth`] (checked by the protocols, before files or programs);
//! - methods other than GET and HEAD: 405 with `Allow: GET, HEAD`;
//! - HTTP/1.1 without Host: 400 (RFC 9112 3.2);
//! - targets that are not origin- or absolute-form, bad `%` escapes, NUL, `%2F`/`%5C`, a
//!   backslash, a `..` segment (raw or encoded): 400, see [`crate::resolve`];
//! - names starting with a dot, except `/.well-known/` (unless `dotfiles = "allow"`): 404, without
//!   a lookup;
//! - absent paths, non-regular files, directories without an index (unless `autoindex`, then a
//!   listing, see [`crate::autoindex`]), anything whose real location is outside the root: 404
//!   (and not cached);
//! - a directory without its trailing slash: 301 to the path with it;
//! - a failed `If-Match` or `If-Unmodified-Since`: 412 (see [`crate::conditional`]);
//! - a range starting past the end: 416 with `Content-Range: bytes */len`;
//! - out of descriptors or memory while opening: 503.
//!
//! The responder's parts: `output.rs` (the [`Output`] heads are written to, the [`Reply`] and
//! [`Body`] handed back), `cached.rs` (the answer from a cached entry: 200, 206, 304, 412,
//! 416), `pages.rs` (the answers made up rather than found: error pages, redirects, refusals,
//! built once per status); this file holds the [`Responder`] and its request path: the target
//! normalised, the cache looked up or filled, a directory listed.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use wire::{Method, Request, Version};

use crate::autoindex::{self, Listing};
pub use crate::cache::CacheCounters;
use crate::cache::{Cache, CacheError};
use crate::config::{Config, Dotfiles};
use crate::resolve::{self, FsCounters, Resolved, Root};
use crate::response::{FieldName, Head};

mod cached;
mod output;
mod pages;

use output::{push_encoded, push_u64, Persistence};
pub use output::{Body, Output, Reply};
use pages::{page, ErrorPages};

/// Bodies up to this size are copied after the head, so both leave in one write.
pub const SMALL_BODY: usize = 16 * 1024;

/// Why a responder could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RespondError {
    /// The document root is missing, unreadable or not a directory.
    #[error("document root {path}")]
    Root {
        /// The root as configured.
        path: PathBuf,
        /// What canonicalising it said.
        source: io::Error,
    },
}

/// One per event-loop thread; owns that thread's cache (no locks, no atomics).
pub struct Responder {
    root: Root,
    index: String,
    cache: Cache,
    /// The normalised target of the current request, reused.
    key: Vec<u8>,
    /// Where a cache miss builds its file's path (`Root::resolve`), reused while nothing is
    /// found.
    fs_path: Vec<u8>,
    pages: ErrorPages,
    hide_dotfiles: bool,
    autoindex: bool,
    symlinks_outside_root: bool,
    /// Entries a directory listing shows at most.
    autoindex_max_entries: usize,
}

enum Fill {
    Slot(u32),
    Redirect,
    /// A directory without an index, to be listed.
    Listing {
        dir: File,
        fs_path: Vec<u8>,
    },
    Retry,
    Status(u16),
}

impl Responder {
    /// Canonicalises the root once; fails if it is missing or not a directory.
    pub fn new(config: &Config) -> Result<Responder, RespondError> {
        let mut root = Root::new(&config.root, config.symlinks_outside_root).map_err(|source| {
            RespondError::Root {
                path: config.root.clone(),
                source,
            }
        })?;
        // A link out of the root never leads to a program's bytes.
        for mount in &config.cgi {
            root.refuse_under(&mount.dir);
        }
        // Nor to a script's, by another name than the one a gateway claims.
        for ending in config.script_endings() {
            root.refuse_ending(ending);
        }
        Ok(Responder {
            root,
            index: config.index.clone(),
            cache: Cache::new(config),
            key: Vec::with_capacity(256),
            fs_path: Vec::new(),
            pages: ErrorPages::new(&config.server_name, config.alt_svc().as_deref()),
            hide_dotfiles: config.dotfiles == Dotfiles::Hide,
            autoindex: config.autoindex,
            symlinks_outside_root: config.symlinks_outside_root,
            autoindex_max_entries: config.autoindex_max_entries,
        })
    }

    /// Writes the response to `req` to `out` (HTTP/1.1 text: a `&mut Vec<u8>`, or fields: see
    /// [`Output`]); returns what remains to send.
    pub fn respond<'o>(
        &mut self,
        req: &Request<'_>,
        date: &[u8],
        now: Instant,
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let out: &mut Output<'_> = &mut out.into();
        let conn = Persistence::of(req);
        let head_method = match req.method {
            Method::Get => false,
            Method::Head => true,
            Method::Other => {
                return page(&mut self.pages, 405, date, conn, false, out, |o| {
                    o.field(FieldName::Allow, b"GET, HEAD")
                })
            }
        };
        if req.version == Version::Http11 && req.host.is_none() {
            return self.pages.status_page(400, date, conn, head_method, out);
        }
        let query = match resolve::normalise(req.target, &mut self.key) {
            Ok(query) => query,
            Err(refusal) => {
                self.cache.counters.refused += 1;
                return self
                    .pages
                    .status_page(refusal.status(), date, conn, head_method, out);
            }
        };
        if self.hide_dotfiles && resolve::is_hidden(&self.key) {
            // Not looked up at all: the answer does not depend on whether the name exists.
            return self.pages.status_page(404, date, conn, head_method, out);
        }
        // A file that changes between its stat and its read is resolved once more.
        for _ in 0..2 {
            let slot = match self.cache.lookup(&self.key, now) {
                Some(slot) => slot,
                None => match self.fill(now) {
                    Fill::Slot(slot) => slot,
                    Fill::Retry => continue,
                    Fill::Redirect => {
                        let key = &self.key;
                        return page(&mut self.pages, 301, date, conn, head_method, out, |o| {
                            o.field_with(FieldName::Location, |v| {
                                push_encoded(v, key);
                                v.push(b'/');
                                v.extend_from_slice(query);
                            })
                        });
                    }
                    Fill::Status(status) => {
                        return self.pages.status_page(status, date, conn, head_method, out)
                    }
                    Fill::Listing { dir, fs_path } => {
                        return self.listing(&dir, &fs_path, head_method, date, conn, out)
                    }
                },
            };
            match self.serve(slot, req, head_method, date, conn, out) {
                Ok(reply) => return reply,
                Err(CacheError::Changed | CacheError::Gone) => continue,
                Err(CacheError::Io(e)) => {
                    let status = resolve::io_status(&e, 500);
                    return self.pages.status_page(status, date, conn, head_method, out);
                }
            }
        }
        self.pages.status_page(503, date, conn, head_method, out)
    }

    /// The `Server: ...\r\n` line every response carries (and `Alt-Svc` when HTTP/3 is
    /// served).
    pub fn server_line(&self) -> &[u8] {
        &self.pages.server_line
    }

    /// The value of the `Server` field every response carries.
    pub fn server_name(&self) -> &[u8] {
        &self.pages.server_name
    }

    /// The value of the `Alt-Svc` field every response carries when HTTP/3 is served.
    pub fn alt_svc(&self) -> Option<&[u8]> {
        self.pages.alt_svc.as_deref()
    }

    /// What the cache has done so far (u64 counters, gauges filled in).
    pub fn counters(&self) -> CacheCounters {
        self.cache.counters()
    }

    /// The canonical document root.
    pub fn root(&self) -> &std::path::Path {
        self.root.path()
    }

    /// A cache miss: resolve on disk and build the entry.
    fn fill(&mut self, now: Instant) -> Fill {
        let mut fs = FsCounters::default();
        let resolved = (self.root).resolve(&self.key, &self.index, &mut fs, &mut self.fs_path);
        let counters = &mut self.cache.counters;
        counters.add_fs(fs);
        match resolved {
            Ok(Resolved::File {
                file,
                meta,
                fs_path,
            }) => match self
                .cache
                .insert(&self.root, &self.key, file, &meta, fs_path, now)
            {
                Ok(slot) => Fill::Slot(slot),
                Err(CacheError::Changed) => Fill::Retry,
                Err(CacheError::Gone) => Fill::Status(404),
                Err(CacheError::Io(e)) => Fill::Status(resolve::io_status(&e, 500)),
            },
            Ok(Resolved::Redirect) => Fill::Redirect,
            Ok(Resolved::Directory { dir, fs_path }) if self.autoindex => {
                Fill::Listing { dir, fs_path }
            }
            Ok(Resolved::Directory { .. }) => {
                counters.not_found += 1;
                Fill::Status(404)
            }
            Ok(Resolved::NotFound) => {
                counters.not_found += 1;
                Fill::Status(404)
            }
            Err(_) => Fill::Status(503),
        }
    }

    /// A directory listing (200), or 404/503 when the directory cannot be read. Built per
    /// request and never cached: see [`crate::autoindex`].
    fn listing(
        &mut self,
        dir: &File,
        fs_path: &[u8],
        head_method: bool,
        date: &[u8],
        conn: Persistence,
        out: &mut Output<'_>,
    ) -> Reply {
        let listing = Listing {
            dir,
            fs_path: Path::new(OsStr::from_bytes(fs_path)),
            url_path: &self.key,
            root: &self.root,
            show_dotfiles: !self.hide_dotfiles,
            symlinks_outside_root: self.symlinks_outside_root,
            max_entries: self.autoindex_max_entries,
        };
        let mut html = Vec::with_capacity(4096);
        if let Err(e) = autoindex::render(&listing, &mut html) {
            let status = resolve::io_status(&e, 404);
            return self.pages.status_page(status, date, conn, head_method, out);
        }
        out.start(b"HTTP/1.1 200 OK\r\n", date);
        out.field(FieldName::Server, &self.pages.server_name);
        if let Some(alt_svc) = &self.pages.alt_svc {
            out.field(FieldName::AltSvc, alt_svc);
        }
        out.field(FieldName::ContentType, b"text/html; charset=utf-8");
        out.field_with(FieldName::ContentLength, |v| push_u64(v, html.len() as u64));
        out.end(conn);
        let len = html.len();
        let body = if head_method {
            Body::None
        } else if len <= SMALL_BODY {
            out.body(&html);
            Body::None
        } else {
            Body::Shared {
                data: html.into(),
                start: 0,
                len,
            }
        };
        Reply {
            status: 200,
            body_bytes: if head_method { 0 } else { len as u64 },
            body,
            close: conn == Persistence::Close,
            head: Head::Written,
        }
    }
}
