//! A page's resources: each fetched once for the whole crawl (its outcome cached), listed once
//! a page within `--max-files`, another origin's skipped, a stylesheet's references followed
//! (its `@import`s to a bounded depth, each cut named; the `url()`s of its rules by `styles.rs`).

use super::redirects::{Fetched, Reached};
use super::styles::Resolved;
use super::{skipped, target, Crawl, Fetch, Outcome, PageWork, MAX_IMPORT_DEPTH};
use crate::charset::{self, Charset};
use crate::css;
use crate::frontier::key;
use crate::{Entry, File};
use std::sync::Arc;
use url::Url;

impl Crawl<'_> {
    /// Whether the page may list one more reference (the HTML itself is not counted).
    pub(super) fn room(&self, work: &mut PageWork) -> bool {
        if work.entries.len() > self.opts.max_files {
            work.beyond += 1;
            return false;
        }
        true
    }

    /// Adds a resource (and, for a stylesheet, what it references) to the page's entries.
    pub(super) fn resource(
        &mut self,
        url: &Url,
        what: Fetch,
        import_depth: u32,
        work: &mut PageWork,
    ) {
        if !matches!(url.scheme(), "http" | "https") {
            return; // data:, blob:, about: need no request
        }
        if self.stopped() {
            return;
        }
        if !work.on_page.insert(key(url)) {
            // A stylesheet the page has fetched for another medium applies where it is
            // named again for this one: one request, its rules now applied.
            if what == (Fetch::Stylesheet { applies: true })
                && work.styles.not_applied.remove(&key(url))
            {
                if let Some(Outcome::Got { css, .. }) = self.cache.get(&key(url)).cloned() {
                    self.follow(&css, true, import_depth + 1, work);
                }
            }
            return;
        }
        if !self.room(work) {
            return;
        }
        let stylesheet = what != Fetch::File;
        if url.origin() != self.origin {
            work.entries
                .push(skipped(url, "another origin: not fetched"));
            return;
        }
        if work.on_page.contains(&format!("path {}", target(url))) {
            return; // the file a redirect of the page's already led to: one request, listed once
        }
        let outcome = match self.cache.get(&key(url)) {
            Some(o) => o.clone(),
            None => {
                let o = self.fetch_resource(url, stylesheet, work.charset);
                self.cache.insert(key(url), o.clone());
                o
            }
        };
        match outcome {
            Outcome::Failed(reason) => work.entries.push(Entry::Skipped {
                url: target(url),
                reason,
            }),
            Outcome::Got { file, css } => {
                let path = file.path.clone();
                // A redirect to a file the page already has: one request, not two, and the
                // entry it has says the redirect too.
                if let Some(from) = &file.redirected_from {
                    if !work.on_page.insert(format!("path {path}")) {
                        for entry in &mut work.entries {
                            if let Entry::File(f) = entry {
                                if f.path == path && f.redirected_from.is_none() {
                                    f.redirected_from = Some(from.clone());
                                }
                            }
                        }
                        return;
                    }
                }
                work.on_page.insert(format!("path {path}"));
                work.entries.push(Entry::File(file));
                let applies = what != (Fetch::Stylesheet { applies: false });
                if !applies {
                    work.styles.not_applied.insert(key(url));
                }
                self.follow(&css, applies, import_depth + 1, work);
            }
        }
    }

    /// An `@import` of a stylesheet `import_depth` deep (1: named by a page's stylesheet):
    /// fetched, or past [`MAX_IMPORT_DEPTH`] a comment naming the cut, once a page. Chromium
    /// follows a chain of any length; a hostile one (each stylesheet new, none seen again to
    /// end it as a cycle ends) would hold the crawl to one request and one stack frame a link.
    pub(super) fn import(
        &mut self,
        url: &Url,
        what: Fetch,
        import_depth: u32,
        work: &mut PageWork,
    ) {
        if import_depth <= MAX_IMPORT_DEPTH {
            self.resource(url, what, import_depth, work);
            return;
        }
        if !matches!(url.scheme(), "http" | "https")
            || work.on_page.contains(&key(url))
            || !work.on_page.insert(format!("cut {}", key(url)))
            || !self.room(work)
        {
            return;
        }
        self.site.imports_cut += 1;
        let depth = import_depth - 1;
        work.entries.push(Entry::Skipped {
            url: if url.origin() == self.origin {
                target(url)
            } else {
                url.to_string()
            },
            reason: format!(
                "an @import of a stylesheet imported {depth} deep: not fetched (a chain of \
                 @imports is followed {MAX_IMPORT_DEPTH} stylesheets deep)"
            ),
        });
    }

    /// Fetches a resource once for the crawl; a stylesheet's text decoded as a browser decodes
    /// it (`page`: the encoding of the page that named it first, when it names none).
    fn fetch_resource(&mut self, url: &Url, stylesheet: bool, page: Charset) -> Outcome {
        match self.fetch_once(url) {
            Err(e) => Outcome::Failed(e.reason()),
            // Named directly before (or reached by another redirect): that response, now
            // reached from here too.
            Ok(Reached::Cached(end)) => match self.cache.get(&key(&end)).cloned() {
                Some(Outcome::Got { file, css }) => Outcome::Got {
                    file: File {
                        redirected_from: Some(target(url)),
                        ..file
                    },
                    css,
                },
                Some(failed) => failed,
                None => Outcome::Failed(format!("redirected to {end}, lost from the cache")),
            },
            Ok(Reached::Fetched(Fetched {
                url: final_url,
                response: r,
                redirected,
            })) => {
                let css = match (&r.body, stylesheet || r.is_css()) {
                    // No page lists more than --max-files of them: no more are kept.
                    (Some(body), true) => Resolved::new(
                        css::parse(
                            &charset::decode(body, &charset::css(body, r.charset.as_deref(), page)),
                            &self.env,
                        ),
                        &final_url,
                        self.opts.max_files,
                    ),
                    _ => Resolved::default(),
                };
                let file = File {
                    path: target(&final_url),
                    bytes: r.bytes,
                    content_type: r.content_type,
                    redirected_from: redirected.then(|| target(url)),
                    initiator: None,
                };
                let css = Arc::new(css);
                if redirected {
                    // The file a redirect led to, named directly on a later page, is the same
                    // response: not requested again.
                    let direct = File {
                        redirected_from: None,
                        ..file.clone()
                    };
                    self.cache.entry(key(&final_url)).or_insert(Outcome::Got {
                        file: direct,
                        css: Arc::clone(&css),
                    });
                }
                Outcome::Got { file, css }
            }
        }
    }
}
