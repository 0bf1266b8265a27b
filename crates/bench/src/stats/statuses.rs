//! Responses counted by status code.

use serde::{Deserialize, Serialize};

/// Counted responses by status code: a fixed table indexed by the code, so counting one is an
/// index and an add, never an allocation. Codes are three digits (the parser takes no other).
#[derive(Debug, Clone, PartialEq)]
pub struct StatusCounts(Box<[u64]>);

/// The codes seen, as a map `{code: count}`.
impl Serialize for StatusCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.seen())
    }
}

impl<'de> Deserialize<'de> for StatusCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // JSON map keys are strings.
        let seen = std::collections::BTreeMap::<String, u64>::deserialize(d)?;
        let mut counts = StatusCounts::new();
        for (code, n) in seen {
            let slot = code
                .parse::<usize>()
                .ok()
                .and_then(|i| counts.0.get_mut(i))
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("{code:?} is not a 3-digit status code"))
                })?;
            *slot = n;
        }
        Ok(counts)
    }
}

impl StatusCounts {
    const CODES: usize = 1000;

    /// An empty table, one counter for every three-digit code, allocated once per thread.
    pub fn new() -> Self {
        StatusCounts(vec![0; Self::CODES].into_boxed_slice())
    }

    /// One more response with `status`; on the request path, an index and an add.
    #[inline]
    pub fn add(&mut self, status: u16) {
        self.0[usize::from(status).min(Self::CODES - 1)] += 1;
    }

    /// The responses counted with `status`.
    pub fn get(&self, status: u16) -> u64 {
        self.0.get(usize::from(status)).copied().unwrap_or(0)
    }

    /// `(code, count)` of the codes seen, in increasing order.
    pub fn seen(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
    }

    /// Adds another thread's (or host's) counts, code by code.
    pub fn merge(&mut self, other: &StatusCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

impl Default for StatusCounts {
    fn default() -> Self {
        Self::new()
    }
}
