//! A request body the server has no use for (a static server takes no uploads), read and
//! dropped so the connection stays usable for the next request, as nginx discards one.
//!
//! Its end is found as the client frames it: a Content-Length counts down, a chunked body is
//! decoded by `wire`'s body decoder (sizes, extensions, trailers; no allocation). What is read is
//! bounded, as nginx's `client_max_body_size` bounds it: a Content-Length above the limit is
//! refused before anything is read (413), a chunked body is cut once its payload passes the
//! limit, or once its framing alone (chunk sizes, extensions, trailers) passes it: a client
//! sending one-byte chunks with long extensions must not keep a connection busy forever.
//!
//! And it is bounded in time, as a head is: a body is due within `body_timeout_ms` of its start,
//! extended by one second for every `body_min_rate` bytes received (Apache's mod_reqtimeout
//! `body=10,MinRate=500`), and no gap between its bytes may be longer than `body_timeout_ms`
//! (nginx's `client_body_timeout`). A limit on the gap alone let one byte every few seconds
//! hold a connection for weeks.

use std::time::{Duration, Instant};

use wire::{BodyDecoder, Framing, Request};

/// Framing bytes a chunked body may carry beyond its payload limit.
const FRAMING_SLACK: u64 = 64 * 1024;

/// The body of an answered request, still arriving.
#[derive(Debug, Clone)]
pub(crate) struct Drain {
    decoder: BodyDecoder,
    /// Payload bytes still allowed.
    payload_left: u64,
    /// Framing bytes still allowed (chunked only).
    framing_left: u64,
    clock: BodyClock,
}

/// A body's clock: when it began (the end of its head), when its latest bytes arrived, and how
/// many have. HTTP/2 keeps one a stream (`h2.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyClock {
    since: Instant,
    latest: Instant,
    received: u64,
}

impl BodyClock {
    pub fn start(now: Instant) -> BodyClock {
        BodyClock {
            since: now,
            latest: now,
            received: 0,
        }
    }

    /// `n` more bytes arrived.
    pub fn add(&mut self, n: u64, now: Instant) {
        if n > 0 {
            self.latest = now;
            self.received += n;
        }
    }

    /// When the rest of the body is due: `timeout` after its latest bytes, and no later than
    /// `timeout` after its start plus a second per `min_rate` bytes received (0: no rate).
    pub fn deadline(&self, timeout: Duration, min_rate: u64) -> Instant {
        let gap = self.latest + timeout;
        if min_rate == 0 {
            return gap;
        }
        let earned = Duration::from_secs_f64(self.received as f64 / min_rate as f64);
        gap.min(self.since + timeout + earned)
    }
}

/// Why a body cannot be read to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Over the limit: 413 if nothing was answered yet.
    TooLarge,
    /// Chunked framing that does not parse: 400 if nothing was answered yet.
    Malformed,
}

impl BodyError {
    pub fn status(self) -> u16 {
        match self {
            BodyError::TooLarge => 413,
            BodyError::Malformed => 400,
        }
    }
}

/// How far [`Drain::feed`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fed {
    /// Input bytes that were body (payload and framing); what follows is the next request.
    pub used: usize,
    pub done: bool,
}

impl Drain {
    /// The body `req` announces, if it has one; `Err(TooLarge)` for a Content-Length above
    /// `limit`.
    pub fn of(req: &Request<'_>, limit: u64, now: Instant) -> Result<Option<Drain>, BodyError> {
        let framing = match (req.chunked, req.content_length) {
            (true, _) => Framing::Chunked,
            (false, Some(n)) if n > limit => return Err(BodyError::TooLarge),
            (false, Some(n)) if n > 0 => Framing::Length(n),
            (false, _) => return Ok(None),
        };
        Ok(Some(Drain {
            decoder: BodyDecoder::new(framing),
            payload_left: limit,
            framing_left: limit.saturating_add(FRAMING_SLACK),
            clock: BodyClock::start(now),
        }))
    }

    /// When the rest of the body is due (see [`BodyClock::deadline`]).
    pub fn deadline(&self, timeout: Duration, min_rate: u64) -> Instant {
        self.clock.deadline(timeout, min_rate)
    }

    /// Starts the body's clock again: the server stopped reading while its output was blocked,
    /// and that time is not the client's.
    pub fn restart(&mut self, now: Instant) {
        self.clock = BodyClock::start(now);
    }

    /// Reads what of the body is in `input` (all of it unless the body ends inside).
    pub fn feed(&mut self, input: &[u8], now: Instant) -> Result<Fed, BodyError> {
        self.feed_with(input, now, |_| {})
    }

    /// [`Drain::feed`], keeping the payload: appended to `kept` (a program's body, decoded from
    /// its chunks; on an error `kept` holds part of it and is to be dropped).
    pub fn feed_into(
        &mut self,
        input: &[u8],
        now: Instant,
        kept: &mut Vec<u8>,
    ) -> Result<Fed, BodyError> {
        self.feed_with(input, now, |run| kept.extend_from_slice(run))
    }

    fn feed_with(
        &mut self,
        input: &[u8],
        now: Instant,
        payload: impl FnMut(&[u8]),
    ) -> Result<Fed, BodyError> {
        let p = (self.decoder.feed_payload(input, payload)).map_err(|_| BodyError::Malformed)?;
        let (payload, framing) = (p.body as u64, (p.consumed - p.body) as u64);
        if payload > self.payload_left || framing > self.framing_left {
            return Err(BodyError::TooLarge);
        }
        self.payload_left -= payload;
        self.framing_left -= framing;
        self.clock.add(p.consumed as u64, now);
        Ok(Fed {
            used: p.consumed,
            done: p.done,
        })
    }
}
