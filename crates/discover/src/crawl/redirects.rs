//! One GET as the crawl sends it: redirects followed within the origin (10 at most), a
//! fragment never sent, and why a fetch failed (its error, a status other than 2xx, a redirect
//! off the origin or without end), in the words a note or a skipped entry gives.

use super::{target, Crawl};
use crate::fetch::{FetchError, Response};
use crate::frontier::key;
use url::Url;

/// Redirects followed for one resource, at most.
const MAX_REDIRECTS: usize = 10;

fn status_reason(status: u16) -> String {
    format!("{status} {}", wire::head::reason(status))
}

impl Crawl<'_> {
    /// GETs `url`, following redirects within the origin: the URL it ended on, and whether a
    /// redirect took it there (a fragment, never sent, is no redirect).
    pub(super) fn fetch(&mut self, url: &Url) -> Result<Fetched, FetchFailure> {
        match self.follow_redirects(url, false)? {
            Reached::Fetched(f) => Ok(f),
            Reached::Cached(_) => unreachable!("the cache is consulted for resources only"),
        }
    }

    /// As [`Crawl::fetch`], for a resource: a redirect to a URL the crawl already holds the
    /// outcome of ends there, not requested again (the file named directly before the redirect
    /// that leads to it, on this page or an earlier one).
    pub(super) fn fetch_once(&mut self, url: &Url) -> Result<Reached, FetchFailure> {
        self.follow_redirects(url, true)
    }

    fn follow_redirects(&mut self, url: &Url, cached: bool) -> Result<Reached, FetchFailure> {
        let mut url = url.clone();
        url.set_fragment(None);
        for redirects in 0..=MAX_REDIRECTS {
            if url.origin() != self.origin {
                return Err(FetchFailure::Other(format!(
                    "redirects to another origin ({url})"
                )));
            }
            let response = self
                .fetcher
                .get(&target(&url))
                .map_err(FetchFailure::Fetch)?;
            if response.is_redirect() {
                let Some(next) = response.location.as_deref().and_then(|l| url.join(l).ok()) else {
                    return Err(FetchFailure::Other(format!(
                        "{} without a usable Location",
                        status_reason(response.status)
                    )));
                };
                url = next;
                url.set_fragment(None);
                if cached && self.cache.contains_key(&key(&url)) {
                    return Ok(Reached::Cached(url));
                }
                continue;
            }
            if !(200..300).contains(&response.status) {
                return Err(FetchFailure::Status(response.status));
            }
            return Ok(Reached::Fetched(Fetched {
                url,
                response,
                redirected: redirects > 0,
            }));
        }
        Err(FetchFailure::Other(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }
}

/// Where a resource's redirects ended.
pub(super) enum Reached {
    /// A 2xx, requested.
    Fetched(Fetched),
    /// A URL (without a fragment) whose outcome the crawl's cache holds: not requested.
    Cached(Url),
}

/// A fetch that ended in a 2xx.
pub(super) struct Fetched {
    /// Where it ended, without a fragment.
    pub(super) url: Url,
    pub(super) response: Response,
    /// Whether a redirect led there.
    pub(super) redirected: bool,
}

/// Why one fetch failed.
pub(super) enum FetchFailure {
    Fetch(FetchError),
    Status(u16),
    Other(String),
}

impl FetchFailure {
    pub(super) fn reason(&self) -> String {
        match self {
            FetchFailure::Fetch(e) => e.to_string(),
            FetchFailure::Status(s) => status_reason(*s),
            FetchFailure::Other(s) => s.clone(),
        }
    }
}
