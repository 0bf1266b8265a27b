//! An HTTP/3 response sent: its head as fields (a cached file's prebuilt ones), then its body
//! as flow control takes it; what is not taken waits in `pending` for the stream's `Writable`
//! event (`push`).

use std::os::unix::fs::FileExt;

use http3::{Field, RequestId, Server};

use super::{Pending, Rest, CHUNK, H3, H3_INTERNAL_ERROR, MAX_FIELDS};
use crate::protocol::Worker;
use crate::respond::{Body, Reply};
use crate::response::{Cached, Fields as HeadFields, Head, ReprFields};

/// What became of a response [`H3::reply`] sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sent {
    /// Handed whole to QUIC (or all that could be: a file that failed is reset).
    Whole,
    /// Held back by flow control, in `pending`.
    Held,
    /// Not sent: the stream could take no response (reset).
    Failed,
}

impl H3 {
    /// Sends `reply` on `id`: its head, then its body as far as flow control allows; the rest
    /// waits in `pending`. What became of it.
    pub(super) fn reply(
        &mut self,
        id: RequestId,
        reply: Reply,
        no_body: bool,
        w: &mut Worker,
    ) -> Sent {
        let Reply {
            status, head, body, ..
        } = reply;
        let written = &self.head;
        let mut list: [Field<'_>; MAX_FIELDS] = [(b"", b""); MAX_FIELDS];
        let n = match &head {
            Head::Cached(prebuilt, cached) => {
                cached_fields(&w.date, prebuilt, *cached, written, &mut list)
            }
            Head::Written => {
                let mut n = 0;
                for (field, (name, value)) in list.iter_mut().zip(written.iter()) {
                    *field = (name.lower(), value);
                    n += 1;
                }
                n
            }
        };
        let page = if no_body { &[][..] } else { &self.response[..] };
        let rest = match body {
            _ if no_body => None,
            Body::Shared { data, start, len } if len > 0 => Some(Rest::Shared {
                data,
                at: start,
                end: start + len,
            }),
            Body::File { file, offset, len } if len > 0 => Some(Rest::File {
                file,
                offset,
                end: offset + len,
            }),
            _ => None,
        };
        let end = rest.is_none() && page.is_empty();
        match self.server.send_response(id, status, &list[..n], end) {
            Ok(()) => {}
            Err(http3::Error::Blocked) => {
                // Even the head must wait: kept whole, with the page's bytes.
                w.stats.h3_heads_held += 1;
                let owned = (list[..n].iter())
                    .map(|(name, value)| (name.to_vec(), value.to_vec()))
                    .collect();
                let rest = match rest {
                    None if !page.is_empty() => Some(Rest::Page {
                        bytes: page.into(),
                        at: 0,
                    }),
                    rest => rest,
                };
                let held = Pending {
                    head: Some((status, owned)),
                    rest,
                    log: None,
                };
                self.pending.insert(id, held);
                return Sent::Held;
            }
            // The stream cannot take a response (its connection may be gone): reset, so the
            // client is not left waiting for one.
            Err(_) => {
                let _ = self.server.reset(id, H3_INTERNAL_ERROR);
                return Sent::Failed;
            }
        }
        if !page.is_empty() {
            let taken = self.server.send_body(id, page, true).unwrap_or(page.len());
            if taken < page.len() {
                let rest = Some(Rest::Page {
                    bytes: page[taken..].into(),
                    at: 0,
                });
                let held = Pending {
                    head: None,
                    rest,
                    log: None,
                };
                self.pending.insert(id, held);
                return Sent::Held;
            }
        } else if rest.is_some() {
            // Kept only if flow control holds some back: a small body goes at once, and its
            // request costs no entry in `pending`.
            let mut held = Pending {
                head: None,
                rest,
                log: None,
            };
            if !push(&mut self.server, &mut self.chunk, id, &mut held, w) {
                self.pending.insert(id, held);
                return Sent::Held;
            }
        }
        Sent::Whole
    }

    /// Sends what `id`'s held-back response may send now. True when it is all sent (or can
    /// never be: the stream is gone, its file failed): the entry is to be dropped.
    pub(super) fn push(&mut self, id: RequestId, w: &mut Worker) -> bool {
        let H3 {
            server,
            pending,
            chunk,
            ..
        } = self;
        match pending.get_mut(&id) {
            Some(p) => push(server, chunk, id, p, w),
            None => true,
        }
    }
}

/// Sends what `id`'s held-back response `p` may send now: true when it is all sent (or can
/// never be: the stream is gone, its file failed).
fn push(
    server: &mut Server,
    chunk: &mut [u8],
    id: RequestId,
    p: &mut Pending,
    w: &mut Worker,
) -> bool {
    if let Some((status, fields)) = &p.head {
        let mut list: [Field<'_>; MAX_FIELDS] = [(b"", b""); MAX_FIELDS];
        for (field, (name, value)) in list.iter_mut().zip(fields) {
            *field = (&name[..], &value[..]);
        }
        let n = fields.len().min(MAX_FIELDS);
        match server.send_response(id, *status, &list[..n], p.rest.is_none()) {
            Ok(()) => p.head = None,
            Err(http3::Error::Blocked) => return false,
            Err(_) => {
                let _ = server.reset(id, H3_INTERNAL_ERROR);
                return true;
            }
        }
    }
    let Some(rest) = p.rest.as_mut() else {
        return true;
    };
    match rest {
        Rest::Shared { data, at, end } => send_from(server, id, &data[..*end], at),
        Rest::Page { bytes, at } => send_from(server, id, bytes, at),
        Rest::File { file, offset, end } => loop {
            let room = match server.capacity(id) {
                Ok(0) => return false, // a Writable event says when
                Ok(room) => room,
                Err(_) => return true,
            };
            let want = (room.min(CHUNK) as u64).min(*end - *offset) as usize;
            let read = match file.read_at(&mut chunk[..want], *offset) {
                Ok(n) if n > 0 => n,
                // The file shrank or failed under us: the response cannot be finished.
                _ => {
                    let _ = server.reset(id, H3_INTERNAL_ERROR);
                    return true;
                }
            };
            w.stats.file_reads += 1;
            w.stats.file_read_bytes += read as u64;
            let last = *offset + read as u64 == *end;
            let taken = match server.send_body(id, &chunk[..read], last) {
                Ok(taken) => taken,
                Err(_) => return true,
            };
            *offset += taken as u64;
            if *offset == *end {
                return true;
            }
            if taken < read {
                return false; // the rest is read again when flow control allows
            }
        },
    }
}

/// Sends `bytes[*at..]` as the body's end: true once all of it is taken (or the stream is
/// gone), else false with `at` moved past what was taken.
fn send_from(server: &mut Server, id: RequestId, bytes: &[u8], at: &mut usize) -> bool {
    match server.send_body(id, &bytes[*at..], true) {
        Ok(taken) => {
            *at += taken;
            *at == bytes.len()
        }
        Err(_) => true,
    }
}

/// A cached representation's head as fields: `date`, then its prebuilt fields (lowercase
/// static names, values in `prebuilt`), then those `written` for this response (a 206's range
/// and length). Returns how many were written.
fn cached_fields<'a>(
    date: &'a [u8],
    prebuilt: &'a ReprFields,
    cached: Cached,
    written: &'a HeadFields,
    list: &mut [Field<'a>; MAX_FIELDS],
) -> usize {
    list[0] = (b"date", date);
    let mut n = 1;
    // Room is left for a 206's two fields.
    for field in prebuilt.fields(cached).take(MAX_FIELDS - 3) {
        list[n] = field;
        n += 1;
    }
    for (name, value) in written.iter().take(MAX_FIELDS - n) {
        list[n] = (name.lower(), value);
        n += 1;
    }
    n
}
