//! `--debug` over HTTP/3: each request's and response's header block on stderr as it is sent
//! or received, its fields one a line (pseudo-headers first, as QPACK carries them), under a
//! line naming the stream, as over HTTP/2. Called only when `--debug` is on: the run's hot
//! path pays one test of the flag.

use super::super::ThreadState;

/// A header block of `stream`: `what` it is (`request`, `response`, `trailers`), its fields,
/// then `body` (an application's request body as built) after an empty line.
pub(super) fn block<'a>(
    cx: &ThreadState<'_>,
    stream: u64,
    what: &str,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    body: Option<&[u8]>,
) {
    let mut text = format!("[HTTP/3 stream {stream}: {what}]\n").into_bytes();
    for (name, value) in fields {
        text.extend_from_slice(name);
        text.extend_from_slice(b": ");
        text.extend_from_slice(value);
        text.push(b'\n');
    }
    if let Some(body) = body {
        text.push(b'\n');
        text.extend_from_slice(body);
        text.push(b'\n');
    }
    cx.debug(&text);
}
