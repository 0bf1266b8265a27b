//! A page of a `--browser` crawl: loaded by Chromium, its files what the browser fetched; its
//! links, found by the crawl's own parse, followed as in HTML mode.

use super::Crawl;
use crate::browser::page::LoadError;
use crate::browser::Browser;
use crate::{Entry, Page};
use url::Url;

impl Crawl<'_> {
    /// `--browser`: the page's files as Chromium fetched them loading `url`, whose path is
    /// `path` (and the path a redirect led from); `fetched_bytes`: the crawler's own fetch's.
    pub(super) fn browser_page(
        &mut self,
        url: &Url,
        (path, redirected_from): (String, Option<String>),
        links: Vec<Url>,
        forms: crate::forms::Forms,
        depth: u32,
        fetched_bytes: u64,
    ) -> Result<(), String> {
        let Some(opts) = self.opts.browser.as_ref() else {
            return Err("no browser".into());
        };
        if self.browser.is_none() {
            let width = self.opts.viewport.unwrap_or(crate::browser::DEFAULT_WIDTH);
            match Browser::start(opts, width) {
                Ok(b) => self.browser = Some(b),
                Err(why) => {
                    self.browser_failed = Some(why.clone());
                    return Err(why);
                }
            }
        }
        let browser = self.browser.as_mut().expect("started above");
        let load = match browser.load(url.as_str(), self.opts.stop.as_deref()) {
            Ok(load) => load,
            Err(LoadError::Stopped) => return Err("interrupted".into()),
            Err(LoadError::Page(why)) => return Err(format!("Chromium: {why}")),
            Err(LoadError::Browser(why)) => {
                self.browser_failed = Some(why.clone());
                return Err(why);
            }
        };
        let (here, elsewhere) = load.requests_to(&self.origin);
        self.browser_requests += here;
        self.site.requests_elsewhere += elsewhere;
        let mut rec = crate::browser::entries(&load, url, opts.all_origins, self.opts.max_files)?;
        if let Some(Entry::File(doc)) = rec.entries.first_mut() {
            doc.redirected_from = redirected_from.clone();
            if rec.document_cut {
                // The browser's copy never ended: the crawler's own fetch of it did.
                doc.bytes = fetched_bytes;
            }
        }
        if rec.beyond > 0 {
            self.pages_cut += 1;
        }
        for frame in rec.frames {
            self.frontier.push(frame, depth);
        }
        self.site.pages.push(Page {
            path,
            redirected_from,
            weight: 1.0,
            entries: rec.entries,
            notes: rec.notes,
            forms,
        });
        if !self.stopped() {
            for link in links {
                self.link(link, depth);
            }
        }
        Ok(())
    }
}
