//! Per-thread buffers, recycled: a connection holds a [`Bufs`] only while it has bytes to hold.
//!
//! Why: a keep-alive connection spends most of its life idle, and 10,000 idle connections holding
//! 16 KiB of input each would be 160 MiB doing nothing. A connection takes a `Bufs` when it has
//! bytes to hold and gives it back once its input and output are both empty (nginx frees idle
//! keep-alive buffers for the same reason), so memory follows the busy connections, and in steady
//! state nothing is allocated per connection or per request: the pool hands back the same `Vec`s.
//!
//! The output queue is a list of segments in response order: ranges of one `out` buffer (heads
//! and small bodies the responder copied there), shared cached bodies (`Rc<[u8]>`, never copied)
//! and file ranges (sent by `sendfile`).

use std::collections::VecDeque;
use std::fs::File;
use std::rc::Rc;

/// What a queue may exceed `max_pipeline_bytes` by: parsing stops once the limit is passed, so
/// the last response (a head and a body of at most `respond::SMALL_BODY`) may overshoot it.
const OUT_SLACK: usize = crate::respond::SMALL_BODY + 16 * 1024;

/// A piece of queued output.
#[derive(Debug)]
pub enum Seg {
    /// `out[start..end]`.
    Mem { start: usize, end: usize },
    /// A cached body, shared with the cache (not copied).
    Shared {
        data: Rc<[u8]>,
        start: usize,
        len: usize,
    },
    /// A file range, sent by `sendfile`.
    File {
        file: Rc<File>,
        offset: u64,
        len: u64,
    },
}

/// The buffers a busy connection holds.
#[derive(Debug)]
pub struct Bufs {
    /// Fixed size, zeroed once when the pool creates it; `input[..in_len]` holds bytes read.
    pub input: Box<[u8]>,
    pub in_len: usize,
    /// Response heads and small bodies; `Seg::Mem` ranges point into it.
    pub out: Vec<u8>,
    pub segs: VecDeque<Seg>,
}

impl Bufs {
    /// Appends `out[start..]` to the queue, merging with a preceding `Mem` range.
    pub fn push_mem(&mut self, start: usize) {
        let end = self.out.len();
        if end == start {
            return;
        }
        if let Some(Seg::Mem { end: e, .. }) = self.segs.back_mut() {
            if *e == start {
                *e = end;
                return;
            }
        }
        self.segs.push_back(Seg::Mem { start, end });
    }

    pub fn idle(&self) -> bool {
        self.in_len == 0 && self.segs.is_empty()
    }

    /// The bytes of an in-memory segment (`None` for a file range).
    pub fn mem_bytes<'a>(&'a self, seg: &'a Seg) -> Option<&'a [u8]> {
        match seg {
            Seg::Mem { start, end } => Some(&self.out[*start..*end]),
            Seg::Shared { data, start, len } => Some(&data[*start..*start + *len]),
            Seg::File { .. } => None,
        }
    }

    /// Drops `n` written bytes from the front of the in-memory segments.
    pub fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let Some(seg) = self.segs.front_mut() else {
                return;
            };
            let left = match seg {
                Seg::Mem { start, end } => {
                    let take = n.min(*end - *start);
                    *start += take;
                    n -= take;
                    *end - *start
                }
                Seg::Shared { start, len, .. } => {
                    let take = n.min(*len);
                    *start += take;
                    *len -= take;
                    n -= take;
                    *len
                }
                Seg::File { .. } => return,
            };
            if left == 0 {
                self.segs.pop_front();
            }
        }
    }
}

/// A thread's spare buffers.
#[derive(Debug)]
pub struct Pool {
    free: Vec<Bufs>,
    input_size: usize,
    keep: usize,
    /// An `out` buffer larger than any queue may legitimately grow (`max_pipeline_bytes` plus
    /// slack) is shrunk when returned; anything smaller is kept as it is, so a client that
    /// pipelines deeply does not make the loop free and regrow its buffer on every batch.
    out_keep: usize,
    /// Buffers created (the pool was empty): flat in steady state.
    pub created: u64,
}

impl Pool {
    pub fn new(input_size: usize, keep: usize, max_pipeline_bytes: usize) -> Pool {
        Pool {
            free: Vec::new(),
            input_size,
            keep,
            out_keep: max_pipeline_bytes + OUT_SLACK,
            created: 0,
        }
    }

    pub fn take(&mut self) -> Bufs {
        self.free.pop().unwrap_or_else(|| {
            self.created += 1;
            Bufs {
                input: vec![0; self.input_size].into_boxed_slice(),
                in_len: 0,
                out: Vec::with_capacity(4096),
                segs: VecDeque::with_capacity(16),
            }
        })
    }

    pub fn give(&mut self, mut b: Bufs) {
        if self.free.len() >= self.keep {
            return;
        }
        b.in_len = 0;
        b.segs.clear(); // drops the Rc bodies and files
        b.out.clear();
        if b.out.capacity() > self.out_keep {
            b.out.shrink_to(self.out_keep);
        }
        self.free.push(b);
    }
}
