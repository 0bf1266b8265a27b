//! Which gateway claims a target: a proxy mount's prefix, a script found before (`scripts.rs`),
//! a CGI mount or extension, a FastCGI application's pattern, each found under its root by the
//! same rules as a file. Apart from `gateway.rs` because it is the one question asked of every
//! request when gateways are configured, and reads without their starting and reaping.

use std::time::Instant;

use super::{cgi, Gateways, Route};
use crate::resolve;

impl Gateways {
    /// Whether a gateway claims `target`, and with what. `None`: not a gateway's (or a target
    /// the static path refuses anyway: it answers as for any file). A script found is kept
    /// for the next requests (`scripts.rs`).
    pub fn route(&mut self, target: &[u8], now: Instant) -> Option<Route> {
        resolve::normalise(target, &mut self.key).ok()?;
        if let Some(mount) = self.proxies.claims(&self.key) {
            return Some(Route::Proxy(mount));
        }
        if let Some(script) = self.scripts.get(&self.key, now) {
            return Some(Route::Cgi(script));
        }
        let route = self.find();
        if let Some(Route::Cgi(script)) = &route {
            self.scripts.insert(&self.key, script, now);
        }
        route
    }

    /// [`Gateways::route`] from the filesystem.
    fn find(&self) -> Option<Route> {
        let key = &self.key[..];
        for (prefix, root) in &self.mounts {
            let Some(rest) = key.strip_prefix(&prefix[..]) else {
                continue;
            };
            if !(rest.is_empty() || rest[0] == b'/') {
                continue;
            }
            if self.hide_dotfiles && resolve::is_hidden(key) {
                return Some(Route::Refused(404));
            }
            let any = |_: &[u8]| true;
            return Some(cgi::find(root, prefix, rest, &self.doc_root, any, None));
        }
        if let Some(route) = self.route_fastcgi() {
            return Some(route);
        }
        if self.extensions.is_empty() || !self.names_extension(key) {
            return None;
        }
        if self.hide_dotfiles && resolve::is_hidden(key) {
            return Some(Route::Refused(404));
        }
        let exts = &self.extensions;
        let is_script = |seg: &[u8]| exts.iter().any(|e| seg.ends_with(e) && seg.len() > e.len());
        Some(cgi::find(
            &self.doc_root,
            b"",
            key,
            &self.doc_root,
            is_script,
            None,
        ))
    }

    /// The FastCGI application that claims the normalised target in `self.key`, if one does:
    /// its script found under the document root by the same rules as a file (an extension
    /// pattern: the first segment with that extension; a prefix: the shortest leading file).
    fn route_fastcgi(&self) -> Option<Route> {
        let key = &self.key[..];
        let (i, app) = self.apps.iter().enumerate().find(|(_, a)| a.claims(key))?;
        if self.hide_dotfiles && resolve::is_hidden(key) {
            return Some(Route::Refused(404));
        }
        let is_script = |seg: &[u8]| app.names_script(seg);
        Some(cgi::find(
            &self.doc_root,
            b"",
            key,
            &self.doc_root,
            is_script,
            Some(i),
        ))
    }

    /// Whether a segment of `key` ends with a CGI extension.
    fn names_extension(&self, key: &[u8]) -> bool {
        key.split(|&b| b == b'/')
            .any(|seg| self.extensions.iter().any(|e| seg.ends_with(e)))
    }
}
