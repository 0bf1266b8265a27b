//! A response from a cached entry: the representation negotiated, the preconditions
//! evaluated (304, 412), the range (206, 416), then the prebuilt head copied (HTTP/1.1) or
//! handed over as fields, and the body copied after the head, shared, or left to `sendfile`.
//! This is the hit path: nothing here goes through `fmt` or allocates, and the disk is
//! touched only to read a body into memory the first time, or to reopen a large file past the
//! thread's descriptor budget (`cache_open_files`).

use wire::Request;

use super::output::{push_u64, start_head, Body, Output, Persistence, Reply};
use super::pages::page;
use super::{Responder, SMALL_BODY};
use crate::cache::{BodyRef, CacheError};
use crate::conditional::{self, Outcome};
use crate::negotiate::{self, Coding};
use crate::range::{self, RangeSpec};
use crate::response::{Cached, FieldName, Head};

impl Responder {
    /// A response from a cached entry: 200, 206, 304, 412 or 416, written as `out` says.
    pub(super) fn serve(
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
                return Ok(self.pages.status_page(412, date, conn, head_method, out))
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
