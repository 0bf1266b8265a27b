//! `--redirect N`: what became of the redirects the run met. A redirect followed is a request
//! the server counted (it is in `requests` and its status in `statuses`); one not followed is a
//! response that stands, as it does without `--redirect`, counted here by why.

use serde::{Deserialize, Serialize};

/// Why a redirect (301, 302, 303, 307, 308) was not followed: its response stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfollowed {
    /// Its Location is another origin (scheme, host or port): the Webchild's connection is to
    /// the URL's origin only.
    CrossOrigin,
    /// It had no Location (or an empty one).
    NoLocation,
    /// Its Location is not a URL, nor a reference relative to the request's.
    BadLocation,
    /// A thread already knows as many distinct redirect targets as it keeps (each is a request
    /// built once and kept for the run).
    TooManyLocations,
}

impl Unfollowed {
    /// Every reason, in the order of `RedirectStats::unfollowed`'s counters.
    pub const ALL: [Unfollowed; 4] = [
        Unfollowed::CrossOrigin,
        Unfollowed::NoLocation,
        Unfollowed::BadLocation,
        Unfollowed::TooManyLocations,
    ];

    /// The snake_case name, for the JSON key and the summary's line.
    pub fn name(self) -> &'static str {
        match self {
            Unfollowed::CrossOrigin => "cross_origin",
            Unfollowed::NoLocation => "no_location",
            Unfollowed::BadLocation => "bad_location",
            Unfollowed::TooManyLocations => "too_many_locations",
        }
    }
}

/// Redirects of the window: followed, and not followed by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RedirectStats {
    /// Redirects followed: each a request the server answered, its time its page entry's.
    pub followed: u64,
    /// Redirects not followed, by reason, indexed as [`Unfollowed::ALL`].
    pub unfollowed: [u64; Unfollowed::ALL.len()],
}

impl RedirectStats {
    /// One more redirect not followed, for `why`.
    pub fn add_unfollowed(&mut self, why: Unfollowed) {
        self.unfollowed[why as usize] += 1;
    }

    /// The reasons seen, with their counts, in the order of [`Unfollowed::ALL`].
    pub fn unfollowed_seen(&self) -> impl Iterator<Item = (Unfollowed, u64)> + '_ {
        Unfollowed::ALL
            .iter()
            .map(|&why| (why, self.unfollowed[why as usize]))
            .filter(|&(_, n)| n > 0)
    }

    /// Adds another thread's (or host's) counts.
    pub fn merge(&mut self, o: &RedirectStats) {
        self.followed += o.followed;
        for (a, b) in self.unfollowed.iter_mut().zip(o.unfollowed) {
            *a += b;
        }
    }
}
