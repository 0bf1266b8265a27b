//! A request body kept in memory for a program or an upstream before it starts (HTTP/2's and
//! HTTP/3's bodies of unknown length, gathered whole: `gateway::body_gate`), bounded not only
//! by `max_body_bytes` a request but by a budget a connection and a thread: without them a
//! client's 100 streams, or 1,000 connections, each dripping a body just under the limit
//! would hold that many times `max_body_bytes` for the body deadline.
//!
//! [`Gathered`] grows its buffer in bounded steps (a quarter of what it holds, at least
//! [`STEP`]; a `Vec` left to double could hold twice what came), charges every byte of capacity to its
//! thread's count, and gives it back when dropped. The protocol asks for room with the bytes its
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
}

impl Budget {
    /// The defaults for a server whose body limit is `max_body`: [`CONNECTION_BODIES`] and
    /// [`THREAD_BODIES`] times it (each at least one body and a step).
    pub fn for_max_body(max_body: u64) -> Budget {
        let one = max_body.saturating_add(STEP as u64);
        Budget {
            connection: max_body.saturating_mul(CONNECTION_BODIES).max(one),
            thread: max_body.saturating_mul(THREAD_BODIES).max(one),
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
}

impl Gathered {
    /// Appends `data`. `connection_held`: the capacity its connection's gathered bodies hold
    /// now, this one's included. Refused (nothing appended) when growing would pass `budget`.
    pub fn push(
        &mut self,
        data: &[u8],
        connection_held: u64,
        budget: Budget,
    ) -> Result<(), OverBudget> {
        let need = self.bytes.len() + data.len();
        let cap = self.bytes.capacity();
        if need > cap {
            // A step of a quarter of what it holds (at least STEP): a large body is not
            // copied once for every STEP, nor held at up to twice its size.
            let new_cap = need.max(cap + (cap / 4).max(STEP));
            let grow = (new_cap - cap) as u64;
            if connection_held.saturating_add(grow) > budget.connection
                || thread_held().saturating_add(grow) > budget.thread
            {
                return Err(OverBudget);
            }
            self.bytes.reserve_exact(new_cap - self.bytes.len());
            let grown = (self.bytes.capacity() - cap) as u64;
            HELD.with(|h| h.set(h.get() + grown));
        }
        self.bytes.extend_from_slice(data);
        Ok(())
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

    /// Drops the first `n` bytes (handed on). Once nothing is left a large buffer is given
    /// back; one of a [`STEP`] or less is kept for the next bytes (a body streamed to a
    /// program through it does not allocate for each piece).
    pub fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.bytes.len());
        if self.is_empty() {
            if self.bytes.capacity() > STEP {
                self.release();
            } else {
                self.bytes.clear();
                self.at = 0;
            }
        }
    }

    /// Drops all it holds (as [`Gathered::consume`] of all of it).
    pub fn clear(&mut self) {
        self.consume(self.len());
    }

    fn release(&mut self) {
        let cap = self.bytes.capacity() as u64;
        if cap > 0 {
            HELD.with(|h| h.set(h.get().saturating_sub(cap)));
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
            g.push(&[7; 1000], g.capacity(), budget).unwrap();
        }
        assert_eq!(g.len(), 40_000);
        assert!(
            g.capacity() <= 40_000 + STEP as u64 + 40_000 / 4,
            "{}",
            g.capacity()
        );
        assert_eq!(thread_held() - before, g.capacity());
        g.consume(39_000);
        assert_eq!(g.bytes(), &[7; 1000][..]);
        g.clear();
        assert!(g.is_empty());
        assert_eq!(thread_held() - before, g.capacity(), "a step's room kept");
        drop(g);
        assert_eq!(thread_held(), before);
    }

    #[test]
    fn refused_past_the_connection_or_the_thread_budget() {
        let budget = Budget {
            connection: 3 * STEP as u64,
            thread: 5 * STEP as u64,
        };
        let piece = vec![1; STEP];
        let mut a = Gathered::default();
        a.push(&piece, 0, budget).unwrap();
        a.push(&piece, a.capacity(), budget).unwrap();
        // A third step for this connection fits, a fourth does not.
        let mut b = Gathered::default();
        b.push(&piece, a.capacity(), budget).unwrap();
        let held = a.capacity() + b.capacity();
        assert_eq!(b.push(&piece, held, budget), Err(OverBudget));
        assert_eq!(b.len(), STEP, "nothing appended when refused");
        // Another connection: the thread's budget stops it first.
        let mut c = Gathered::default();
        c.push(&piece, 0, budget).unwrap();
        c.push(&piece, c.capacity(), budget).unwrap();
        assert_eq!(c.push(&piece, c.capacity(), budget), Err(OverBudget));
        drop((a, b));
        c.push(&piece, c.capacity(), budget).unwrap();
    }
}
