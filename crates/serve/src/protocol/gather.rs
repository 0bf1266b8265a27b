//! A request body kept in memory for a program or an upstream before it starts (HTTP/2's and
//! HTTP/3's bodies of unknown length, gathered whole: `gateway::body_gate`), bounded not only
//! by `max_body_bytes` a request but by a budget a connection and a thread: without them a
//! client's 100 streams, or 1,000 connections, each dripping a body just under the limit
//! would hold that many times `max_body_bytes` for the body deadline.
//!
//! [`Gathered`] starts at what its first bytes need and grows in bounded steps (a quarter of
//! what it holds, at least [`STEP`], never past `max_body_bytes` unless a piece needs it; a
//! `Vec` left to double could hold twice what came), charges every byte of capacity it takes
//! for a gathered body ([`Gathered::push`]) to its thread's count, and gives memory and charge
//! back once the body is handed on ([`Gathered::clear`], or [`Gathered::consume`] of all of
//! it) or dropped. Bytes of an upload streamed to a running program
//! ([`Gathered::push_streamed`]) are not charged: flow control bounds them already. The protocol asks for room with the bytes its
//! connection's other gathered bodies hold: a body that would take its connection past
//! [`Budget::connection`] or its thread past [`Budget::thread`] is refused (503: the server
//! is short of room, not the request too large; the client may send it again later).

use std::cell::Cell;

/// The most a gathered body's buffer grows beyond what it needs at once.
pub(crate) const STEP: usize = 64 * 1024;

/// How many `max_body_bytes` one connection's gathered bodies may hold together.
pub(crate) const CONNECTION_BODIES: u64 = 4;
/// How many `max_body_bytes` one thread's gathered bodies may hold together.
pub(crate) const THREAD_BODIES: u64 = 32;

thread_local! {
    /// Bytes of capacity held by this thread's gathered bodies.
    static HELD: Cell<u64> = const { Cell::new(0) };
}

/// Bytes of capacity this thread's gathered bodies hold now.
pub(crate) fn thread_held() -> u64 {
    HELD.with(Cell::get)
}

/// What gathered bodies may hold together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// All of one connection's (bytes).
    pub connection: u64,
    /// All of one thread's (bytes).
    pub thread: u64,
    /// One body's limit, `max_body_bytes` (bytes): no step grows a buffer past it.
    pub body: u64,
}

impl Budget {
    /// The defaults for a server whose body limit is `max_body`: [`CONNECTION_BODIES`] and
    /// [`THREAD_BODIES`] times it (each at least one body and a step).
    pub fn for_max_body(max_body: u64) -> Budget {
        let one = max_body.saturating_add(STEP as u64);
        Budget {
            connection: max_body.saturating_mul(CONNECTION_BODIES).max(one),
            thread: max_body.saturating_mul(THREAD_BODIES).max(one),
            body: max_body,
        }
    }
}

/// The body would take its connection or its thread past its [`Budget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverBudget;

/// A gathered request body (see the module's notes).
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    bytes: Vec<u8>,
    /// `bytes[..at]` is handed on already.
    at: usize,
    /// Bytes of its capacity charged to its thread (taken by [`Gathered::push`]).
    charged: u64,
}

impl Gathered {
    /// Appends `data` to a gathered body, charged. `connection_held`: what its connection's
    /// gathered bodies hold now ([`Gathered::held`]), this one's included. Refused (nothing
    /// appended) when growing would pass `budget`.
    pub fn push(
        &mut self,
        data: &[u8],
        connection_held: u64,
        budget: Budget,
    ) -> Result<(), OverBudget> {
        let need = self.bytes.len() + data.len();
        let cap = self.bytes.capacity();
        if self.grows(data.len()) {
            // The first bytes take what they need (a small body holds no more); then a step of
            // a quarter of what it holds (at least STEP, within one body's limit): a large body
            // is not copied once for every STEP, nor held at up to twice its size.
            let body = usize::try_from(budget.body).unwrap_or(usize::MAX);
            let new_cap = if cap == 0 {
                need
            } else {
                need.max((cap + (cap / 4).max(STEP)).min(body))
            };
            let grow = (new_cap - cap) as u64;
            if connection_held.saturating_add(grow) > budget.connection
                || thread_held().saturating_add(grow) > budget.thread
            {
                return Err(OverBudget);
            }
            self.bytes.reserve_exact(new_cap - self.bytes.len());
            let grown = (self.bytes.capacity() - cap) as u64;
            self.charged += grown;
            HELD.with(|h| h.set(h.get() + grown));
        }
        self.bytes.extend_from_slice(data);
        Ok(())
    }

    /// Whether appending `n` bytes would grow its memory (what [`Gathered::push`] charges):
    /// the caller then sums what its connection holds, which only a growth needs.
    pub fn grows(&self, n: usize) -> bool {
        self.bytes.len() + n > self.bytes.capacity()
    }

    /// Appends `data` of an upload streamed to a running program: not charged (the stream's
    /// flow control window bounds what can wait here).
    pub fn push_streamed(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
    }

    /// What is not handed on yet.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[self.at..]
    }

    pub fn len(&self) -> usize {
        self.bytes.len() - self.at
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory it holds.
    pub fn capacity(&self) -> u64 {
        self.bytes.capacity() as u64
    }

    /// Bytes charged to its thread (and its connection): those a gathered body took.
    pub fn held(&self) -> u64 {
        self.charged
    }

    /// Drops the first `n` bytes (handed on). Once nothing is left, a gathered body's memory
    /// and charge are given back, as is a large buffer; a small uncharged one (of a [`STEP`]
    /// or less) is kept for the next bytes (a body streamed to a program through it does not
    /// allocate for each piece).
    pub fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.bytes.len());
        if self.is_empty() {
            if self.charged > 0 || self.bytes.capacity() > STEP {
                self.release();
            } else {
                self.bytes.clear();
                self.at = 0;
            }
        }
    }

    /// Drops all it holds, and gives its memory (and charge) back.
    pub fn clear(&mut self) {
        self.release();
    }

    fn release(&mut self) {
        if self.charged > 0 {
            HELD.with(|h| h.set(h.get().saturating_sub(self.charged)));
            self.charged = 0;
        }
        if self.bytes.capacity() > 0 {
            self.bytes = Vec::new();
        }
        self.at = 0;
    }
}

impl Drop for Gathered {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_in_bounded_steps_and_gives_back_what_it_held() {
        let before = thread_held();
        let budget = Budget::for_max_body(1 << 20);
        let mut g = Gathered::default();
        for _ in 0..40 {
            g.push(&[7; 1000], g.held(), budget).unwrap();
        }
        assert_eq!(g.len(), 40_000);
        assert!(
            g.capacity() <= 40_000 + STEP as u64 + 40_000 / 4,
            "{}",
            g.capacity()
        );
        assert_eq!(
            (thread_held() - before, g.held()),
            (g.capacity(), g.capacity())
        );
        g.consume(39_000);
        assert_eq!(g.bytes(), &[7; 1000][..]);
        g.clear();
        assert!(g.is_empty());
        assert_eq!(
            (g.capacity(), g.held()),
            (0, 0),
            "memory and charge given back"
        );
        assert_eq!(thread_held(), before);
    }

    #[test]
    fn a_small_body_holds_what_it_needs_and_no_step_passes_the_body_limit() {
        let before = thread_held();
        let budget = Budget::for_max_body(4096);
        let mut g = Gathered::default();
        g.push(&[1; 100], 0, budget).unwrap();
        assert_eq!(g.held(), g.capacity());
        assert!(g.capacity() < 4096, "{}", g.capacity());
        g.push(&[1; 100], g.held(), budget).unwrap();
        assert!(g.capacity() <= 4096, "{}", g.capacity());
        // Handed on whole: memory and charge given back.
        g.consume(200);
        assert_eq!((g.capacity(), thread_held()), (0, before));
    }

    #[test]
    fn an_upload_streamed_to_a_program_is_not_charged() {
        let before = thread_held();
        let mut g = Gathered::default();
        g.push_streamed(&[2; 5000]);
        assert_eq!((g.held(), thread_held()), (0, before));
        g.consume(5000);
        assert!(g.capacity() > 0, "a small streaming buffer is kept");
        assert_eq!(thread_held(), before);
    }

    #[test]
    fn refused_past_the_connection_or_the_thread_budget() {
        let budget = Budget {
            connection: 3 * STEP as u64,
            thread: 5 * STEP as u64,
            body: u64::MAX,
        };
        let piece = vec![1; STEP];
        let mut a = Gathered::default();
        a.push(&piece, 0, budget).unwrap();
        a.push(&piece, a.held(), budget).unwrap();
        // A third step for this connection fits, a fourth does not.
        let mut b = Gathered::default();
        b.push(&piece, a.held(), budget).unwrap();
        let held = a.held() + b.held();
        assert_eq!(b.push(&piece, held, budget), Err(OverBudget));
        assert_eq!(b.len(), STEP, "nothing appended when refused");
        // Another connection: the thread's budget stops it first.
        let mut c = Gathered::default();
        c.push(&piece, 0, budget).unwrap();
        c.push(&piece, c.held(), budget).unwrap();
        assert_eq!(c.push(&piece, c.held(), budget), Err(OverBudget));
        drop((a, b));
        c.push(&piece, c.held(), budget).unwrap();
    }
}
