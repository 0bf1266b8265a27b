//! The crawl's links in memory bounded by `--max-pages`, however many links the pages name.
//!
//! A page may name thousands of links, and every page of a site a different thousand: keeping
//! each distinct link seen made a crawl of 100 large pages take gigabytes. Here only what can
//! still be crawled is kept: the pages fetched or queued, and no more queued than `--max-pages`
//! leaves room for (each page taken from the queue counts, whether it turns out to be HTML or
//! not). A link that finds no room, or that is not followed (beyond `--depth`, another origin,
//! robots.txt), is told apart from the others up to `--max-pages` of its kind and counted
//! beyond that, repeats included: the notes say "at least" then.

use std::collections::{HashSet, VecDeque};
use url::{Position, Url};

/// A URL without its fragment: what identifies a page or a resource.
pub(crate) fn key(url: &Url) -> String {
    url[..Position::AfterQuery].to_owned()
}

/// Distinct keys counted in bounded memory: the first `cap` are kept, so that repeats of them
/// are not counted twice; the rest are counted as they come, repeats included.
pub(crate) struct Tally {
    kept: HashSet<String>,
    cap: usize,
    /// References beyond `cap`, repeats included.
    pub(crate) more: u64,
}

/// What [`Tally::add`] made of a key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Seen for the first time, and kept.
    New,
    /// Kept already.
    Again,
    /// Not kept: counted in `more`.
    Over,
}

impl Tally {
    pub(crate) fn new(cap: usize) -> Tally {
        Tally {
            kept: HashSet::new(),
            cap,
            more: 0,
        }
    }

    pub(crate) fn add(&mut self, key: &str) -> Counted {
        if self.kept.contains(key) {
            Counted::Again
        } else if self.kept.len() < self.cap {
            self.kept.insert(key.to_owned());
            Counted::New
        } else {
            self.more += 1;
            Counted::Over
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }

    /// The kept keys that `keep` holds for.
    pub(crate) fn count_where(&self, keep: impl Fn(&str) -> bool) -> usize {
        self.kept.iter().filter(|k| keep(k)).count()
    }
}

/// What a count leaves out when some links were not kept: nothing, or how many more references
/// (repeats included) there were.
pub(crate) fn not_told_apart(more: u64) -> String {
    if more == 0 {
        String::new()
    } else {
        format!(", and {more} more references to links not told apart (only --max-pages links of a kind are kept)")
    }
}

/// The pages fetched and to fetch, breadth first.
pub(crate) struct Frontier {
    max_pages: usize,
    /// Pages fetched, tried or queued, and where their redirects ended.
    known: HashSet<String>,
    queue: VecDeque<(Url, u32)>,
    /// Pages taken from the queue.
    taken: usize,
    /// Links that found no room left under `--max-pages`.
    pub(crate) beyond_max: Tally,
}

impl Frontier {
    pub(crate) fn new(max_pages: usize) -> Frontier {
        Frontier {
            max_pages,
            known: HashSet::new(),
            queue: VecDeque::new(),
            taken: 0,
            beyond_max: Tally::new(max_pages),
        }
    }

    /// Queues a page `depth` links from the start, unless it is known or there is no room.
    pub(crate) fn push(&mut self, url: Url, depth: u32) {
        let k = key(&url);
        if self.known.contains(&k) {
            return;
        }
        if self.taken + self.queue.len() < self.max_pages {
            self.known.insert(k);
            self.queue.push_back((url, depth));
        } else {
            self.beyond_max.add(&k);
        }
    }

    pub(crate) fn pop(&mut self) -> Option<(Url, u32)> {
        let next = self.queue.pop_front()?;
        self.taken += 1;
        Some(next)
    }

    pub(crate) fn knows(&self, k: &str) -> bool {
        self.known.contains(k)
    }

    /// Marks where a redirect ended (one a page taken, so within twice `--max-pages`); whether
    /// it was new.
    pub(crate) fn mark(&mut self, k: String) -> bool {
        self.known.insert(k)
    }

    /// Links held.
    pub(crate) fn kept(&self) -> usize {
        self.known.len() + self.beyond_max.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_keeps_its_cap_and_counts_the_rest() {
        let mut t = Tally::new(2);
        assert_eq!(t.add("a"), Counted::New);
        assert_eq!(t.add("a"), Counted::Again);
        assert_eq!(t.add("b"), Counted::New);
        assert_eq!(t.add("c"), Counted::Over);
        assert_eq!(t.add("c"), Counted::Over);
        assert_eq!((t.len(), t.more), (2, 2));
        assert_eq!(not_told_apart(0), "");
    }

    #[test]
    fn the_queue_never_holds_more_than_max_pages_leaves_room_for() {
        let mut f = Frontier::new(3);
        let u = |i: u32| Url::parse(&format!("http://h/{i}")).unwrap();
        f.push(u(0), 0);
        assert_eq!(f.pop().map(|(u, _)| u.path().to_owned()), Some("/0".into()));
        for i in 1..100 {
            f.push(u(i), 1);
        }
        assert_eq!(f.queue.len(), 2);
        assert_eq!(f.beyond_max.len(), 3);
        assert_eq!(f.beyond_max.more, 97 - 3);
        f.push(u(1), 1);
        assert_eq!(f.kept(), 3 + 3, "a known page is not counted again");
    }
}
