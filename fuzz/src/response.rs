//! The client side: `wire::parse_response_head` and `wire::BodyDecoder` over a connection's
//! bytes, read the way flint bench's Webchild reads them.
//!
//! An input is what one server sends on one connection: heads and bodies back to back (pipelined
//! responses, 1xx interim responses before a final one), then the connection closes. A head is
//! parsed at the start of the unread bytes (a partial head is kept and parsed again with the next
//! read), its body followed by a decoder, then the next head. Properties, beyond "no panic":
//! - each parse and each feed reads nothing past its buffer (guard page, see [`crate::guard`]);
//! - a head is complete only with its blank line; the framing follows RFC 9112 6.3 (no body for
//!   HEAD, 1xx, 204, 304; close-delimited responses do not persist);
//! - the decoder consumes no more than it is given, consumes everything until the body is done
//!   and nothing after, counts no framing as body, and a complete body's length is the framed
//!   one: Content-Length exactly, or for chunked bodies what an independent reader of the
//!   chunked coding ([`crate::chunked`]) makes of the same bytes; it accepts every chunked body
//!   that reader accepts within the decoder's length limits;
//! - the connection arriving in arbitrary reads gives the same heads, body lengths, errors and
//!   end as all of it at once.

use wire::{parse_response_head, BodyDecoder, Framing, ResponseError, ResponseHead};

use crate::chunked;
use crate::guard::with_guarded;
use crate::split::cuts;

/// Responses followed per input; interim ones count.
const MAX_RESPONSES: usize = 16;
/// The decoder's limits on a chunk line's extensions and on the trailer section
/// (`wire::response`), with a margin: bodies under them must be accepted.
const EXT_LIMIT: usize = 4000;
const TRAILER_LIMIT: usize = 60_000;

/// What happened on the connection, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Head(ResponseHead),
    HeadError(ResponseError),
    /// A body complete: payload bytes, bytes consumed with its framing.
    Body {
        body: u64,
        consumed: u64,
    },
    BodyError(ResponseError),
    /// The connection closed: in a body (the decoder's verdict), or with this many bytes of an
    /// unfinished head unread.
    EofInBody(Result<(), ResponseError>),
    EofInHead(usize),
}

/// Runs every check on one input.
pub fn check(data: &[u8]) {
    let whole = read_connection(data, &[data.len()], true);
    let split = read_connection(data, &cuts(data), false);
    assert_eq!(
        whole, split,
        "the connection read in pieces gives other responses than all at once"
    );
    with_guarded(data, |buf| {
        if let Ok(Some(h)) = parse_response_head(buf, true) {
            assert_eq!(
                h.framing,
                Framing::Empty,
                "a response to HEAD with a body: {h:?}"
            );
        }
    });
}

enum State {
    Head,
    Body {
        decoder: BodyDecoder,
        framing: Framing,
        start: usize,
        body: u64,
        consumed: u64,
    },
}

/// The events of `data` arriving in reads that end at `cuts`. `oracle`: check chunked bodies
/// against the reference reader (once per input is enough: the other reading must agree).
fn read_connection(data: &[u8], cuts: &[usize], oracle: bool) -> Vec<Event> {
    let mut events = Vec::new();
    let mut state = State::Head;
    let mut pos = 0;
    let mut responses = 0;
    for &end in cuts {
        loop {
            match &mut state {
                State::Head => {
                    if pos == end || responses == MAX_RESPONSES {
                        break;
                    }
                    let parsed = with_guarded(&data[pos..end], |buf| {
                        let parsed = parse_response_head(buf, false);
                        if let Ok(Some(h)) = &parsed {
                            check_head(buf, h);
                        }
                        parsed
                    });
                    let h = match parsed {
                        Ok(None) => break,
                        Ok(Some(h)) => h,
                        Err(e) => {
                            events.push(Event::HeadError(e));
                            return events;
                        }
                    };
                    events.push(Event::Head(h));
                    responses += 1;
                    pos += h.head_len;
                    // As the Webchild does: interim responses are skipped, the final one follows.
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue;
                    }
                    state = State::Body {
                        decoder: BodyDecoder::new(h.framing),
                        framing: h.framing,
                        start: pos,
                        body: 0,
                        consumed: 0,
                    };
                }
                State::Body {
                    decoder,
                    framing,
                    start,
                    body,
                    consumed,
                } => {
                    // An empty read is fed too: a bodiless response is complete after its head.
                    let fed = with_guarded(&data[pos..end], |input| {
                        let before = decoder.clone();
                        let fed = decoder.feed(input);
                        if let Ok(p) = fed {
                            check_feed(
                                &before, decoder, *framing, input, p.consumed, p.body, p.done,
                            );
                        }
                        fed
                    });
                    let p = match fed {
                        Ok(p) => p,
                        Err(e) => {
                            if oracle {
                                check_refusal(*framing, &data[*start..]);
                            }
                            events.push(Event::BodyError(e));
                            return events;
                        }
                    };
                    pos += p.consumed;
                    *body += p.body as u64;
                    *consumed += p.consumed as u64;
                    if let Framing::Length(n) = *framing {
                        assert!(*body <= n, "more body than Content-Length {n}");
                    }
                    if !p.done {
                        break;
                    }
                    if oracle {
                        check_complete(*framing, &data[*start..], *body, *consumed);
                    }
                    events.push(Event::Body {
                        body: *body,
                        consumed: *consumed,
                    });
                    state = State::Head;
                }
            }
        }
    }
    match state {
        State::Body {
            decoder,
            framing,
            start,
            ..
        } => {
            let verdict = decoder.eof();
            if oracle && verdict.is_err() {
                check_refusal(framing, &data[start..]);
            }
            events.push(Event::EofInBody(verdict));
        }
        State::Head if pos < data.len() && responses < MAX_RESPONSES => {
            events.push(Event::EofInHead(data.len() - pos))
        }
        State::Head => {}
    }
    events
}

/// A parsed head against its buffer and RFC 9112's framing rules.
fn check_head(buf: &[u8], h: &ResponseHead) {
    assert!(h.head_len <= buf.len(), "head_len past the buffer");
    let head = &buf[..h.head_len];
    assert!(
        head.ends_with(b"\n\n") || head.ends_with(b"\n\r\n"),
        "a head accepted without its blank line: {:?}",
        String::from_utf8_lossy(head)
    );
    assert!(h.version <= 1, "{h:?}");
    assert!((100..=999).contains(&h.status), "{h:?}");
    if (100..200).contains(&h.status) || h.status == 204 || h.status == 304 {
        assert_eq!(
            h.framing,
            Framing::Empty,
            "a body on a {} response",
            h.status
        );
    }
    if h.framing == Framing::Close {
        assert!(
            !h.keep_alive,
            "a close-delimited response marked persistent"
        );
    }
    assert_eq!(
        parse_response_head(head, false),
        Ok(Some(*h)),
        "the head alone parses differently from the head with what follows"
    );
}

/// One feed: bounds, and no framing counted as body.
fn check_feed(
    before: &BodyDecoder,
    after: &BodyDecoder,
    framing: Framing,
    input: &[u8],
    consumed: usize,
    body: usize,
    done: bool,
) {
    assert!(
        consumed <= input.len(),
        "consumed {consumed} of {}",
        input.len()
    );
    assert!(body <= consumed, "body {body} > consumed {consumed}");
    assert_eq!(done, after.is_done());
    if !done {
        assert_eq!(
            consumed,
            input.len(),
            "stopped early without finishing the body"
        );
    }
    if before.is_done() {
        assert_eq!((consumed, body), (0, 0), "fed after the end of the body");
    }
    match framing {
        Framing::Length(_) | Framing::Close => {
            assert_eq!(body, consumed, "framing bytes in a {framing:?} body")
        }
        Framing::Empty => assert!(done && consumed == 0, "an empty body took bytes"),
        Framing::Chunked => {}
    }
    if framing == Framing::Close {
        assert!(!done, "a close-delimited body ended before the close");
    }
}

/// A body the decoder calls complete: its length is the framed one.
fn check_complete(framing: Framing, from_start: &[u8], body: u64, consumed: u64) {
    match framing {
        Framing::Length(n) => assert_eq!((body, consumed), (n, n)),
        Framing::Empty => assert_eq!((body, consumed), (0, 0)),
        Framing::Close => unreachable!("checked by check_feed"),
        Framing::Chunked => {
            let reference = chunked::read(from_start).unwrap_or_else(|| {
                panic!(
                    "the decoder completed a chunked body the reference refuses: {:?}",
                    String::from_utf8_lossy(&from_start[..consumed as usize])
                )
            });
            assert_eq!(
                (reference.payload, reference.consumed as u64),
                (body, consumed),
                "chunked body: the reference's (payload, consumed) against the decoder's"
            );
        }
    }
}

/// The decoder refused a body or found it short at the close: the reference must not hold a
/// complete chunked body there that is within the decoder's limits.
fn check_refusal(framing: Framing, from_start: &[u8]) {
    if framing != Framing::Chunked {
        return;
    }
    if let Some(c) = chunked::read(from_start) {
        assert!(
            c.longest_ext > EXT_LIMIT || c.trailer_bytes > TRAILER_LIMIT,
            "the decoder refused a chunked body the reference accepts: {c:?} in {:?}",
            String::from_utf8_lossy(&from_start[..c.consumed])
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_interim_chunked_and_close_delimited_responses_are_followed() {
        let data = b"HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc\
            HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nhi\r\n0\r\nT: v\r\n\r\n\
            HTTP/1.0 200 OK\r\n\r\nrest of the connection";
        let events = read_connection(data, &[data.len()], true);
        let bodies: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::Body { body, consumed } => Some((*body, *consumed)),
                _ => None,
            })
            .collect();
        assert_eq!(bodies, vec![(3, 3), (2, 22)]);
        assert_eq!(events.last(), Some(&Event::EofInBody(Ok(()))));
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::Head(_)))
                .count(),
            4
        );
        check(data);
    }

    #[test]
    fn a_short_body_and_a_bad_chunk_are_reported() {
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
        let events = read_connection(short, &[short.len()], true);
        assert_eq!(
            events.last(),
            Some(&Event::EofInBody(Err(ResponseError::ShortBody)))
        );
        check(short);
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        let events = read_connection(bad, &[bad.len()], true);
        assert_eq!(
            events.last(),
            Some(&Event::BodyError(ResponseError::BadChunk))
        );
        check(bad);
    }
}
