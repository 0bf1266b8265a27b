//! The bodies a page's requests sent, kept for a redirect that sends them again.
//!
//! A 307 or 308 repeats the request with the same method and the same content (RFC 9110
//! 15.4.8): a body built from a template is kept as it was sent (expanding it again would give
//! another `{{seq}}` or `{{random}}`). Nothing else is kept: a 301, 302 or 303 of a POST
//! becomes a GET without a body, and a body written in the workload as it is goes again as it
//! is. A buffer that grew past [`KEPT_ROOM`] is given back once the request it fed is built, as
//! an HTTP/2 stream slot's kept response body is.

/// The room a kept body keeps after its use.
pub(super) const KEPT_ROOM: usize = 16 * 1024;

/// Per file of the page, the body its request sent (empty unless a redirect repeats it).
#[derive(Default)]
pub(super) struct SentBodies(Vec<Vec<u8>>);

impl SentBodies {
    /// File `file`'s request sent `body` and a redirect of it is followed: kept when the
    /// redirect `repeats` it (it keeps its method, and the body is built from a template).
    pub(super) fn keep(&mut self, file: usize, body: &[u8], repeats: bool) {
        if !repeats {
            return;
        }
        if self.0.len() <= file {
            self.0.resize_with(file + 1, Vec::new);
        }
        let kept = &mut self.0[file];
        kept.clear();
        kept.extend_from_slice(body);
    }

    /// The body file `file` sent, as [`SentBodies::keep`] kept it.
    pub(super) fn get(&self, file: usize) -> &[u8] {
        self.0.get(file).map_or(&[], Vec::as_slice)
    }

    /// File `file`'s kept body was copied into the request the redirect leads to: a buffer
    /// larger than [`KEPT_ROOM`] is given back (that request's own bytes are kept again if it
    /// is redirected in turn).
    pub(super) fn release(&mut self, file: usize) {
        if let Some(kept) = self.0.get_mut(file) {
            kept.clear();
            if kept.capacity() > KEPT_ROOM {
                *kept = Vec::new();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_kept_only_for_a_redirect_that_repeats_it_and_a_large_one_given_back() {
        let mut sent = SentBodies::default();
        sent.keep(2, b"user=ann", false);
        assert_eq!(
            (sent.get(2), sent.0.len()),
            (&b""[..], 0),
            "a 303: nothing kept"
        );
        sent.keep(1, b"user=ann", true);
        assert_eq!(sent.get(1), b"user=ann");
        sent.release(1);
        let room = sent.0[1].capacity();
        assert!(room > 0, "a small body's room is kept");
        let large = vec![b'x'; 512 * 1024];
        sent.keep(1, &large, true);
        assert_eq!(sent.get(1), &large[..]);
        sent.release(1);
        assert!(
            sent.0[1].capacity() <= KEPT_ROOM,
            "{}",
            sent.0[1].capacity()
        );
        assert_eq!(sent.get(1), b"", "used once");
    }
}
