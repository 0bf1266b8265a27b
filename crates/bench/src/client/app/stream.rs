//! What a stream of an application workload keeps (HTTP/2's slots of the stream table, HTTP/3's
//! streams in flight): its response's head as the checks read it, its body when a check or an
//! extraction reads it (bounded by `MAX_KEPT_BODY`), the path its request went to and the
//! request's body. The buffers grow to the largest seen and are reused.

use std::io::Write as _;

/// What one stream of an application workload keeps.
#[derive(Debug, Default)]
pub(in crate::client) struct AppStream {
    /// The response's head: a status line, then its fields as `name: value` lines (what the
    /// checks read, and a failure's sample shows).
    pub head: Vec<u8>,
    /// The response's body while a check or an extraction needs it (`keep_body`).
    pub body: Vec<u8>,
    pub keep_body: bool,
    /// The body passed `MAX_KEPT_BODY`: not kept (`body_too_large` if it is needed).
    pub too_large: bool,
    /// The path the request went to (for the cookie jar's rules).
    pub path: Vec<u8>,
    /// The request's body, sent as DATA.
    pub request_body: Vec<u8>,
}

/// The room a slot's kept body keeps once its stream is done: a larger buffer is given back,
/// so that only the streams in flight hold large bodies (up to `MAX_KEPT_BODY` each), not
/// every slot of the table (`--streams 100` has 256) that once met one.
pub(in crate::client) const KEPT_ROOM: usize = 16 * 1024;

impl AppStream {
    /// Its stream is done (judged, failed or refused): a body buffer grown past `KEPT_ROOM`
    /// is given back.
    pub(in crate::client) fn release(&mut self) {
        if self.body.capacity() > KEPT_ROOM {
            self.body = Vec::new();
        }
    }

    /// A field of the response's header block.
    pub(in crate::client) fn on_field(&mut self, name: &[u8], value: &[u8]) {
        if name == b":status" {
            // A final response after a 1xx starts the head again.
            self.head.clear();
            self.head.extend_from_slice(b"HTTP/2 ");
        } else if name.starts_with(b":") {
            return;
        } else {
            self.head.extend_from_slice(name);
            self.head.extend_from_slice(b": ");
        }
        self.head.extend_from_slice(value);
        self.head.extend_from_slice(b"\r\n");
    }

    /// An HTTP/3 response's head begins, its status line made of `status` (its fields follow
    /// through `on_field`, the pseudo-fields left out).
    pub(in crate::client) fn begin_head(&mut self, status: u16) {
        self.head.clear();
        self.head.extend_from_slice(b"HTTP/3 ");
        // Digits into the buffer (a `Vec`'s `Write` never fails).
        let _ = write!(self.head, "{status}");
        self.head.extend_from_slice(b"\r\n");
    }

    /// Bytes of the response's body.
    pub(in crate::client) fn on_body(&mut self, bytes: &[u8]) {
        if self.keep_body {
            super::keep_body_bytes(&mut self.body, &mut self.too_large, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_kept_body_is_given_back_when_its_stream_is_done_a_small_one_is_reused() {
        let mut slot = AppStream {
            keep_body: true,
            ..AppStream::default()
        };
        slot.on_body(&vec![b'x'; 512 * 1024]);
        assert_eq!(slot.body.len(), 512 * 1024);
        slot.release();
        assert!(
            slot.body.capacity() <= KEPT_ROOM,
            "{}",
            slot.body.capacity()
        );
        slot.body.clear();
        slot.on_body(&[b'y'; 1024]);
        let room = slot.body.capacity();
        slot.release();
        assert_eq!(slot.body.capacity(), room, "a small body's room is kept");
    }
}
