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
//! HTTP/3) a [`Fields`] head, a cached file's as its prebuilt fields ([`crate::response`]).
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

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use wire::{Method, Request, Version};

use crate::auth::Denial;
use crate::autoindex::{self, Listing};
pub use crate::cache::CacheCounters;
use crate::cache::{BodyRef, Cache, CacheError};
use crate::conditional::{self, Outcome};
use crate::config::{Config, Dotfiles};
use crate::negotiate::{self, Coding};
use crate::range::{self, RangeSpec};
use crate::resolve::{self, FsCounters, Resolved, Root};
use crate::response::{Cached, FieldName, Fields, Head};

/// Bodies up to this size are copied after the head, so both leave in one write.
pub const SMALL_BODY: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RespondError {
    #[error("document root {path}")]
    Root { path: PathBuf, source: io::Error },
}

/// What `respond` produced beyond the bytes it appended.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Body bytes of this response (for the access log): in `out`, or in `body`.
    pub body_bytes: u64,
    pub body: Body,
    /// Close the connection after this response.
    pub close: bool,
    /// How its head is carried: written to the output, or a cached representation's fields.
    pub head: Head,
}

/// Where a response goes: HTTP/1.1 text, or a head of fields for a protocol that carries them
/// (HTTP/2, HTTP/3). The responder describes each head once (its status, its fields in order);
/// only the encoding differs.
#[derive(Debug)]
pub enum Output<'a> {
    /// HTTP/1.1: the head as text appended to the buffer, then a generated body, or a cached
    /// one up to [`SMALL_BODY`], so that head and body leave in one write.
    Text(&'a mut Vec<u8>),
    /// The head's fields into `head` (its `:status` is the reply's; a cached file's head is
    /// [`Head::Cached`], its prebuilt fields), a generated body into `body`; both are cleared
    /// first. A cached body is handed over shared whatever its size: HTTP/2 frames it as flow
    /// control allows, later, so a copy would have to be kept per stream.
    Fields {
        head: &'a mut Fields,
        body: &'a mut Vec<u8>,
    },
}

impl<'a> From<&'a mut Vec<u8>> for Output<'a> {
    fn from(out: &'a mut Vec<u8>) -> Output<'a> {
        Output::Text(out)
    }
}

impl<'a, 'b> From<&'a mut Output<'b>> for Output<'a> {
    fn from(out: &'a mut Output<'b>) -> Output<'a> {
        match out {
            Output::Text(out) => Output::Text(out),
            Output::Fields { head, body } => Output::Fields { head, body },
        }
    }
}

impl Output<'_> {
    fn carries_fields(&self) -> bool {
        matches!(self, Output::Fields { .. })
    }

    /// A head's start: HTTP/1.1's status line and Date; or the fields cleared, then Date.
    fn start(&mut self, status_line: &[u8], date: &[u8]) {
        match self {
            Output::Text(out) => start_head(out, status_line, date),
            Output::Fields { head, body } => {
                head.clear();
                body.clear();
                head.push(FieldName::Date, date);
            }
        }
    }

    fn field(&mut self, name: FieldName, value: &[u8]) {
        self.field_with(name, |v| v.extend_from_slice(value));
    }

    /// A field whose value `value` writes in place (a number, an encoded path).
    fn field_with(&mut self, name: FieldName, value: impl FnOnce(&mut Vec<u8>)) {
        match self {
            Output::Text(out) => {
                out.extend_from_slice(name.text());
                out.extend_from_slice(b": ");
                value(out);
                out.extend_from_slice(b"\r\n");
            }
            Output::Fields { head, .. } => head.push_with(name, value),
        }
    }

    /// A head's end: in HTTP/1.1, its Connection field if any and the blank line.
    fn end(&mut self, conn: Persistence) {
        if let Output::Text(out) = self {
            end_head(out, conn);
        }
    }

    /// A generated body (or a small cached one in HTTP/1.1), after the head.
    fn body(&mut self, bytes: &[u8]) {
        match self {
            Output::Text(out) => out.extend_from_slice(bytes),
            Output::Fields { body, .. } => body.extend_from_slice(bytes),
        }
    }
}

/// A body still to send after the bytes appended to `out`.
#[derive(Debug)]
pub enum Body {
    /// Nothing beyond what is in `out`.
    None,
    /// `data[start..start + len]`, to be written without copying.
    Shared {
        data: Rc<[u8]>,
        start: usize,
        len: usize,
    },
    /// `len` bytes of `file` from `offset`, by `sendfile`.
    File {
        file: Rc<File>,
        offset: u64,
        len: u64,
    },
}

/// How the connection goes on after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Persistence {
    /// HTTP/1.1 persistent: nothing to say.
    Persist,
    /// HTTP/1.0 with `Connection: keep-alive`: must be confirmed.
    KeepAlive10,
    Close,
}

impl Persistence {
    fn of(req: &Request<'_>) -> Persistence {
        match (req.keep_alive, req.version) {
            (false, _) => Persistence::Close,
            (true, Version::Http10) => Persistence::KeepAlive10,
            (true, Version::Http11) => Persistence::Persist,
        }
    }

    /// The end of the head: this connection line, then the empty line.
    fn end(self) -> &'static [u8] {
        match self {
            Persistence::Persist => b"\r\n",
            Persistence::KeepAlive10 => b"Connection: keep-alive\r\n\r\n",
            Persistence::Close => b"Connection: close\r\n\r\n",
        }
    }
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
        let root = Root::new(&config.root, config.symlinks_outside_root).map_err(|source| {
            RespondError::Root {
                path: config.root.clone(),
                source,
            }
        })?;
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
            return page(&mut self.pages, 400, date, conn, head_method, out, |_| {});
        }
        let query = match resolve::normalise(req.target, &mut self.key) {
            Ok(query) => query,
            Err(refusal) => {
                self.cache.counters.refused += 1;
                return page(
                    &mut self.pages,
                    refusal.status(),
                    date,
                    conn,
                    head_method,
                    out,
                    |_| {},
                );
            }
        };
        if self.hide_dotfiles && resolve::is_hidden(&self.key) {
            // Not looked up at all: the answer does not depend on whether the name exists.
            return page(&mut self.pages, 404, date, conn, head_method, out, |_| {});
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
                        return page(
                            &mut self.pages,
                            status,
                            date,
                            conn,
                            head_method,
                            out,
                            |_| {},
                        )
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
                    let status = if resolve::is_resource_error(&e) {
                        503
                    } else {
                        500
                    };
                    return page(
                        &mut self.pages,
                        status,
                        date,
                        conn,
                        head_method,
                        out,
                        |_| {},
                    );
                }
            }
        }
        page(&mut self.pages, 503, date, conn, head_method, out, |_| {})
    }

    /// An error response for a request that could not be parsed or is refused: a small HTML
    /// body, `Content-Length`, and `Connection: close` when `close`. Without a parsed request
    /// the version is unknown, so `close == false` assumes HTTP/1.1 (see [`Responder::error_to`]).
    pub fn error<'o>(
        &mut self,
        status: u16,
        date: &[u8],
        close: bool,
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let conn = if close {
            Persistence::Close
        } else {
            Persistence::Persist
        };
        page(
            &mut self.pages,
            status,
            date,
            conn,
            false,
            &mut out.into(),
            |_| {},
        )
    }

    /// The 400 that answers plain HTTP sent to a TLS port (then the connection closes); the
    /// transport sends it unencrypted.
    pub fn plain_http_on_tls(&mut self, date: &[u8], out: &mut Vec<u8>) -> Reply {
        let page = &self.pages.plain_http_on_tls;
        let out = &mut Output::Text(out);
        let alt_svc = self.pages.alt_svc.as_deref();
        page.write_head(&self.pages.server_name, alt_svc, date, out);
        out.end(Persistence::Close);
        out.body(&page.body);
        Reply {
            status: page.status,
            body_bytes: page.body.len() as u64,
            body: Body::None,
            close: true,
            head: Head::Written,
        }
    }

    /// An error response to a parsed request: honours its version, keep-alive and HEAD.
    pub fn error_to<'o>(
        &mut self,
        req: &Request<'_>,
        status: u16,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        let conn = Persistence::of(req);
        page(
            &mut self.pages,
            status,
            date,
            conn,
            head_method,
            &mut out.into(),
            |_| {},
        )
    }

    /// A request refused by authentication (`crate::auth`): 401 with its challenge, or 429
    /// with `Retry-After`.
    /// 302 to `location` (a path of this server), for a program's local redirect the server
    /// will not follow itself: the client asks for it, with its own credentials.
    pub(crate) fn found<'o>(
        &mut self,
        req: &Request<'_>,
        location: &[u8],
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        let conn = Persistence::of(req);
        let out: &mut Output<'_> = &mut out.into();
        page(&mut self.pages, 302, date, conn, head_method, out, |o| {
            o.field(FieldName::Location, location)
        })
    }

    pub(crate) fn denied<'o>(
        &mut self,
        req: &Request<'_>,
        denial: &Denial,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        let (conn, status) = (Persistence::of(req), denial.status());
        let out: &mut Output<'_> = &mut out.into();
        page(
            &mut self.pages,
            status,
            date,
            conn,
            head_method,
            out,
            |o| match denial {
                Denial::Challenge(challenge) => o.field(FieldName::WwwAuthenticate, challenge),
                Denial::Limited(secs) => {
                    o.field_with(FieldName::RetryAfter, |v| push_u64(v, *secs))
                }
            },
        )
    }

    /// [`Responder::busy`] once the request's head is gone (its body was read before its
    /// program was to start): `close` ends the connection after it.
    pub fn busy_after_body<'o>(
        &mut self,
        close: bool,
        head_method: bool,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let conn = if close {
            Persistence::Close
        } else {
            Persistence::Persist
        };
        self.retry_later(conn, head_method, date, out)
    }

    /// 503 with `Retry-After: 1`: every program slot is taken (`cgi_max_programs`).
    pub fn busy<'o>(
        &mut self,
        req: &Request<'_>,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        self.retry_later(Persistence::of(req), head_method, date, out)
    }

    /// The 503 page of [`Responder::busy`] and [`Responder::busy_after_body`].
    fn retry_later<'o>(
        &mut self,
        conn: Persistence,
        head_method: bool,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        page(
            &mut self.pages,
            503,
            date,
            conn,
            head_method,
            &mut out.into(),
            |o| o.field(FieldName::RetryAfter, b"1"),
        )
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
                Err(CacheError::Io(e)) if resolve::is_resource_error(&e) => Fill::Status(503),
                Err(CacheError::Io(_)) => Fill::Status(500),
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
            let status = if resolve::is_resource_error(&e) {
                503
            } else {
                404
            };
            return page(
                &mut self.pages,
                status,
                date,
                conn,
                head_method,
                out,
                |_| {},
            );
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

    /// A response from a cached entry: 200, 206, 304, 412 or 416, written as `out` says.
    fn serve(
        &mut self,
        slot: u32,
        req: &Request<'_>,
        head_method: bool,
        date: &[u8],
        conn: Persistence,
        out: &mut Output<'_>,
    ) -> Result<Reply, CacheError> {
        let entry = self.cache.entry(slot);
        let coding = if entry.has_siblings() {
            negotiate::choose(
                req.accept_encoding,
                entry.repr(Coding::Gzip).is_some(),
                entry.repr(Coding::Br).is_some(),
            )
        } else {
            Coding::Identity
        };
        let repr = entry
            .repr(coding)
            .expect("identity always, siblings when chosen");
        let validators = conditional::Validators {
            etag: &repr.etag,
            last_modified: &repr.last_modified,
            mtime_secs: repr.mtime_secs,
        };
        let close = conn == Persistence::Close;
        let range_allowed = match conditional::evaluate(req, &validators) {
            Outcome::Proceed { range } => range,
            Outcome::NotModified if out.carries_fields() => {
                if let Output::Fields { head, body } = out {
                    head.clear();
                    body.clear();
                }
                return Ok(Reply {
                    status: 304,
                    body_bytes: 0,
                    body: Body::None,
                    close,
                    head: Head::Cached(repr.heads.clone(), Cached::NotModified),
                });
            }
            Outcome::NotModified => {
                out.start(b"HTTP/1.1 304 Not Modified\r\n", date);
                if let Output::Text(out) = out {
                    out.extend_from_slice(repr.heads.not_modified_text());
                }
                out.end(conn);
                return Ok(Reply {
                    status: 304,
                    body_bytes: 0,
                    body: Body::None,
                    close,
                    head: Head::Written,
                });
            }
            Outcome::Failed => {
                return Ok(page(
                    &mut self.pages,
                    412,
                    date,
                    conn,
                    head_method,
                    out,
                    |_| {},
                ))
            }
        };
        let size = repr.version.size;
        // Range is defined for GET only (RFC 9110 14.2); If-Range guards it.
        let spec = match req.range {
            Some(value) if !head_method && range_allowed => range::parse(value, size),
            _ => RangeSpec::Ignore,
        };
        let (start, len) = match spec {
            RangeSpec::Ignore => (0, size),
            RangeSpec::Partial { start, len } => (start, len),
            RangeSpec::Unsatisfiable => {
                return Ok(page(
                    &mut self.pages,
                    416,
                    date,
                    conn,
                    head_method,
                    out,
                    |o| {
                        o.field_with(FieldName::ContentRange, |v| {
                            v.extend_from_slice(b"bytes */");
                            push_u64(v, size);
                        })
                    },
                ))
            }
        };
        let partial = !matches!(spec, RangeSpec::Ignore);
        let body = if head_method || len == 0 {
            None
        } else {
            Some(self.cache.body(slot, coding)?)
        };

        let repr = self.cache.entry(slot).repr(coding).expect("still cached");
        let mut carried = Head::Written;
        match &mut *out {
            // The prebuilt fields; a 206's range and length follow them.
            Output::Fields { head, body } => {
                head.clear();
                body.clear();
                let cached = if partial {
                    head.push_with(FieldName::ContentRange, |v| {
                        v.extend_from_slice(b"bytes ");
                        push_u64(v, start);
                        v.push(b'-');
                        push_u64(v, start + len - 1);
                        v.push(b'/');
                        push_u64(v, size);
                    });
                    head.push_with(FieldName::ContentLength, |v| push_u64(v, len));
                    Cached::Partial
                } else {
                    Cached::Full
                };
                carried = Head::Cached(repr.heads.clone(), cached);
            }
            Output::Text(out) if partial => {
                start_head(out, b"HTTP/1.1 206 Partial Content\r\n", date);
                out.extend_from_slice(repr.heads.partial_text());
                out.extend_from_slice(b"Content-Range: bytes ");
                push_u64(out, start);
                out.push(b'-');
                push_u64(out, start + len - 1);
                out.push(b'/');
                push_u64(out, size);
                out.extend_from_slice(b"\r\nContent-Length: ");
                push_u64(out, len);
                out.extend_from_slice(b"\r\n");
            }
            Output::Text(out) => {
                // The most frequent head: status line and Date name in one copy.
                out.extend_from_slice(b"HTTP/1.1 200 OK\r\nDate: ");
                out.extend_from_slice(date);
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(repr.heads.full_text());
            }
        }
        out.end(conn);
        let status = if partial { 206 } else { 200 };
        let body = match body {
            None => Body::None,
            Some(BodyRef::Mem(data)) => {
                let (start, len) = (start as usize, len as usize);
                if !out.carries_fields() && len <= SMALL_BODY {
                    out.body(&data[start..start + len]);
                    Body::None
                } else {
                    Body::Shared { data, start, len }
                }
            }
            Some(BodyRef::File(file)) => Body::File {
                file,
                offset: start,
                len,
            },
        };
        Ok(Reply {
            status,
            body_bytes: if head_method { 0 } else { len },
            body,
            close,
            head: carried,
        })
    }
}

fn start_head(out: &mut Vec<u8>, status_line: &[u8], date: &[u8]) {
    out.extend_from_slice(status_line);
    out.extend_from_slice(b"Date: ");
    out.extend_from_slice(date);
    out.extend_from_slice(b"\r\n");
}

fn end_head(out: &mut Vec<u8>, conn: Persistence) {
    out.extend_from_slice(conn.end());
}

/// Decimal digits of `n`, formatted on the stack.
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// A decoded path made safe for a `Location` header: everything but unreserved characters,
/// sub-delims, `:`, `@` and `/` is percent-encoded.
fn push_encoded(out: &mut Vec<u8>, path: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in path {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// Error pages, built once per status (a flood of 404s copies, it does not format).
struct ErrorPages {
    server_line: Box<[u8]>,
    /// The `Server` field's value.
    server_name: Box<[u8]>,
    /// The `Alt-Svc` field's value, when HTTP/3 is served.
    alt_svc: Option<Box<[u8]>>,
    pages: Vec<Page>,
    /// The 400 for plain HTTP sent to the TLS port: its own words, as nginx gives them.
    plain_http_on_tls: Page,
}

struct Page {
    status: u16,
    status_line: Box<[u8]>,
    /// Server, Content-Type, Content-Length, as HTTP/1.1 lines.
    headers: Box<[u8]>,
    content_type: &'static [u8],
    /// The body's length in decimal, as fields carry it.
    length: Box<[u8]>,
    body: Box<[u8]>,
}

impl Page {
    /// The page's head but its extra fields and its end: its status, Date, Server,
    /// Content-Type, Content-Length (HTTP/1.1's prebuilt lines in one copy).
    fn write_head(
        &self,
        server_name: &[u8],
        alt_svc: Option<&[u8]>,
        date: &[u8],
        out: &mut Output<'_>,
    ) {
        out.start(&self.status_line, date);
        match out {
            Output::Text(out) => out.extend_from_slice(&self.headers),
            Output::Fields { head, .. } => {
                head.push(FieldName::Server, server_name);
                if let Some(alt_svc) = alt_svc {
                    head.push(FieldName::AltSvc, alt_svc);
                }
                head.push(FieldName::ContentType, self.content_type);
                head.push(FieldName::ContentLength, &self.length);
            }
        }
    }
}

impl ErrorPages {
    fn new(server_name: &str, alt_svc: Option<&str>) -> ErrorPages {
        let mut server_line = format!("Server: {server_name}\r\n");
        if let Some(alt_svc) = alt_svc {
            server_line = format!("{server_line}Alt-Svc: {alt_svc}\r\n");
        }
        let body = b"The plain HTTP request was sent to HTTPS port\n";
        let headers = format!(
            "{server_line}Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
            body.len()
        );
        let mut pages = ErrorPages {
            plain_http_on_tls: Page {
                status: 400,
                status_line: b"HTTP/1.1 400 Bad Request\r\n".as_slice().into(),
                headers: headers.into_bytes().into(),
                content_type: b"text/plain; charset=utf-8",
                length: body.len().to_string().into_bytes().into(),
                body: body.as_slice().into(),
            },
            server_line: server_line.into_bytes().into(),
            server_name: server_name.as_bytes().into(),
            alt_svc: alt_svc.map(|v| v.as_bytes().into()),
            pages: Vec::with_capacity(24),
        };
        for status in [
            301, 400, 401, 404, 405, 408, 412, 413, 414, 416, 429, 431, 500, 501, 503, 505,
        ] {
            pages.index(status);
        }
        pages
    }

    /// Where the page of `status` is in `pages`, built the first time.
    fn index(&mut self, status: u16) -> usize {
        // Statuses outside 100..=599 are a caller's bug: answer 500 rather than panic.
        let status = if (100..=599).contains(&status) {
            status
        } else {
            500
        };
        if let Some(i) = self.pages.iter().position(|p| p.status == status) {
            return i;
        }
        let reason = wire::head::reason(status);
        let body = format!(
            "<html><head><title>{status} {reason}</title></head>\
             <body><h1>{status} {reason}</h1></body></html>\n"
        );
        let mut headers = self.server_line.to_vec();
        headers.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n");
        headers.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
        self.pages.push(Page {
            status,
            status_line: format!("HTTP/1.1 {status} {reason}\r\n")
                .into_bytes()
                .into(),
            headers: headers.into(),
            content_type: b"text/html; charset=utf-8",
            length: body.len().to_string().into_bytes().into(),
            body: body.into_bytes().into(),
        });
        self.pages.len() - 1
    }
}

/// Writes an error (or redirect) page; `extra` adds fields.
fn page(
    pages: &mut ErrorPages,
    status: u16,
    date: &[u8],
    conn: Persistence,
    head_method: bool,
    out: &mut Output<'_>,
    extra: impl FnOnce(&mut Output<'_>),
) -> Reply {
    let i = pages.index(status);
    let page = &pages.pages[i];
    page.write_head(&pages.server_name, pages.alt_svc.as_deref(), date, out);
    extra(out);
    out.end(conn);
    let body_bytes = if head_method {
        0
    } else {
        out.body(&page.body);
        page.body.len() as u64
    };
    Reply {
        status: page.status,
        body_bytes,
        body: Body::None,
        close: conn == Persistence::Close,
        head: Head::Written,
    }
}
