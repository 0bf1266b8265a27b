//! Why TLS handshakes failed, counted by reason: `tls_certificate 1200` says that certificates
//! were refused, these say whether for an unknown issuer, a name, a date, or a CA certificate
//! used as the server's own, which is what a user has to know to fix the run.
//! The reasons themselves, and what each means, are the TLS client crate's (`tls_client`): every
//! HTTPS client of the project tells them alike.

use serde::{Deserialize, Serialize};
pub use tls_client::TlsFailure;

/// Failed handshakes by reason, a fixed array indexed by `TlsFailure as usize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsFailures(pub [u64; TlsFailure::ALL.len()]);

impl TlsFailures {
    /// One more handshake failed for `reason`.
    #[inline]
    pub fn add(&mut self, reason: TlsFailure) {
        self.0[reason as usize] += 1;
    }

    /// The handshakes that failed for `reason`.
    pub fn get(&self, reason: TlsFailure) -> u64 {
        self.0[reason as usize]
    }

    /// The failed handshakes, whatever the reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The reasons seen, with their counts, most frequent first.
    pub fn seen(&self) -> Vec<(TlsFailure, u64)> {
        let mut seen: Vec<_> = TlsFailure::ALL
            .iter()
            .map(|&r| (r, self.get(r)))
            .filter(|&(_, n)| n > 0)
            .collect();
        seen.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        seen
    }

    /// Adds another thread's (or host's) counts, reason by reason.
    pub fn merge(&mut self, other: &TlsFailures) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_list_the_most_frequent_first() {
        let mut a = TlsFailures::default();
        a.add(TlsFailure::NameMismatch);
        let mut b = TlsFailures::default();
        b.add(TlsFailure::UnknownIssuer);
        b.add(TlsFailure::UnknownIssuer);
        a.merge(&b);
        assert_eq!(a.total(), 3);
        assert_eq!(
            a.seen(),
            vec![
                (TlsFailure::UnknownIssuer, 2),
                (TlsFailure::NameMismatch, 1)
            ]
        );
    }
}
