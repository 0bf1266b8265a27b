//! HTTP/1.1 responses: the head parsed and the body framed by `wire` (the parser bench and
//! serve share), so a response bench would mis-frame is mis-framed here first.

use super::{decoded, set_timeouts, timed, FetchError, Fields, Limits, Response, Stream};
use std::time::Instant;
use wire::{BodyDecoder, Framing};

/// Reads one response: its head, then its body as `wire` frames it. Returns whether the
/// connection can carry the next request.
pub(super) fn read_response(
    conn: &mut Stream,
    deadline: Instant,
    limits: &Limits,
) -> Result<(Response, bool), FetchError> {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    let head = loop {
        if let Some(head) = wire::parse_response_head(&buf, false)? {
            // 1xx interim responses are skipped: the final one follows.
            if (100..200).contains(&head.status) {
                buf.drain(..head.head_len);
                continue;
            }
            break head;
        }
        set_timeouts(conn, deadline, limits.timeout)?;
        let n = conn
            .read(&mut chunk)
            .map_err(|e| timed(e, limits.timeout))?;
        if n == 0 {
            return Err(FetchError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let fields = Fields::parse(&buf[..head.head_len]);
    if let Framing::Length(n) = head.framing {
        if n > limits.max_size {
            return Err(FetchError::TooLarge {
                limit: limits.max_size,
            });
        }
    }
    let keep_text = fields.is_text();
    let mut body = Vec::new();
    let mut bytes = 0u64;
    let mut decoder = BodyDecoder::new(head.framing);
    let mut pending = buf.split_off(head.head_len);
    loop {
        let consumed = feed(
            &mut decoder,
            &pending,
            keep_text.then_some(&mut body),
            &mut bytes,
        )?;
        pending.drain(..consumed);
        if bytes > limits.max_size {
            return Err(FetchError::TooLarge {
                limit: limits.max_size,
            });
        }
        if decoder.is_done() {
            break;
        }
        set_timeouts(conn, deadline, limits.timeout)?;
        let n = conn
            .read(&mut chunk)
            .map_err(|e| timed(e, limits.timeout))?;
        if n == 0 {
            decoder.eof()?;
            break;
        }
        pending.extend_from_slice(&chunk[..n]);
    }
    let response = Response {
        status: head.status,
        content_type: fields.content_type,
        charset: fields.charset,
        location: fields.location,
        bytes,
        body: keep_text.then_some(body),
    };
    let response = decoded(response, fields.gzip, limits.max_size)?;
    // Bytes past the body would be a response we never asked for: do not reuse the connection.
    Ok((response, head.keep_alive && pending.is_empty()))
}

/// Feeds `input` to the decoder, appending payload to `out` and counting it in `bytes`; returns
/// the input consumed. `wire`'s decoder counts payload but (not allocating) does not say where
/// it lies among chunk framing; a trial on a copy that is all payload or all framing is taken
/// whole, a mixed one is halved until it is one or the other.
fn feed(
    decoder: &mut BodyDecoder,
    input: &[u8],
    mut out: Option<&mut Vec<u8>>,
    bytes: &mut u64,
) -> Result<usize, FetchError> {
    let mut pos = 0;
    while pos < input.len() && !decoder.is_done() {
        let mut n = input.len() - pos;
        loop {
            let mut trial = decoder.clone();
            let p = trial.feed(&input[pos..pos + n])?;
            if p.body == 0 || p.body == p.consumed || n == 1 {
                if p.body > 0 {
                    *bytes += p.body as u64;
                    if let Some(out) = out.as_deref_mut() {
                        out.extend_from_slice(&input[pos..pos + p.consumed]);
                    }
                }
                *decoder = trial;
                if p.consumed == 0 {
                    return Ok(pos);
                }
                pos += p.consumed;
                break;
            }
            n /= 2;
        }
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_payload_is_separated_from_its_framing() {
        let input = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\nNEXT";
        for split in 1..input.len() {
            let mut d = BodyDecoder::new(Framing::Chunked);
            let (mut out, mut bytes) = (Vec::new(), 0);
            let a = feed(&mut d, &input[..split], Some(&mut out), &mut bytes).unwrap();
            assert_eq!(a, split.min(input.len() - 4));
            let b = feed(&mut d, &input[a..], Some(&mut out), &mut bytes).unwrap();
            assert_eq!(a + b, input.len() - 4, "the next response is not consumed");
            assert!(d.is_done());
            assert_eq!(out, b"hello, world", "split at {split}");
            assert_eq!(bytes, 12);
        }
    }
}
