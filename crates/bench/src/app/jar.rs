//! A Webchild's cookie jar: RFC 6265's domain, path, expiry and `Secure` rules, kept by the
//! `cookie_store` crate, with what a browser adds and a load generator needs:
//!
//! - at most [`MAX_COOKIES_PER_DOMAIN`] cookies a domain, the oldest evicted first, and expired
//!   cookies dropped whenever a response stores one, so that a server setting a new cookie per
//!   response cannot grow the jar for the length of the run;
//! - nothing allocated per request in steady state: the `Cookie` field is written from the
//!   unexpired cookies as they are walked, and a `Set-Cookie` field identical to the one that
//!   stored a cookie still held (a session cookie with a `Path`: storing it again would change
//!   nothing) is not parsed again.

use cookie_store::{CookieStore, StoreAction};
use std::collections::VecDeque;
use url::Url;

/// The most cookies kept per domain. RFC 6265 asks for at least 50 and browsers keep 150
/// (Firefox) to 180 (Chrome); 50 is the floor every browser honours, so an application that
/// works in browsers works here.
pub const MAX_COOKIES_PER_DOMAIN: usize = 50;

/// One cookie kept, by the store's key.
struct Kept {
    domain: String,
    path: String,
    name: String,
    /// The `Set-Cookie` text that stored it, when storing that text again changes nothing.
    set_by: Option<Box<[u8]>>,
}

/// One Webchild's cookies (see the module's doc); empty at first, as a new browser's.
#[derive(Default)]
pub struct Jar {
    store: CookieStore,
    /// Every cookie in `store`, oldest first.
    kept: VecDeque<Kept>,
}

impl Jar {
    /// Forgets every cookie (`--reset-session`, as each page starts).
    pub fn clear(&mut self) {
        self.store.clear();
        self.kept.clear();
    }

    /// How many cookies the jar holds (expired ones not dropped yet included).
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether the jar holds no cookie (then no request carries a `Cookie` field).
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Keeps the cookie of one `Set-Cookie` field of a response to `url`. One the jar refuses
    /// (bad domain, a Secure one over cleartext) is not kept, as a browser keeps none.
    pub fn store(&mut self, text: &[u8], url: &Url) {
        let unchanged = self.kept.iter().any(|k| {
            k.set_by.as_deref() == Some(text)
                && self.store.get(&k.domain, &k.path, &k.name).is_some()
        });
        if unchanged {
            return;
        }
        let Ok(text_str) = std::str::from_utf8(text) else {
            return;
        };
        let Ok(cookie) = cookie_store::Cookie::parse(text_str, url) else {
            return;
        };
        let again = cookie.path.is_from_path_attr() && !cookie.is_persistent();
        let kept = Kept {
            domain: String::from(&cookie.domain),
            path: String::from(&cookie.path),
            name: cookie.name().to_owned(),
            set_by: again.then(|| text.into()),
        };
        match self.store.insert(cookie.into_owned(), url) {
            Ok(StoreAction::Inserted) => {
                let domain = kept.domain.clone();
                self.kept.push_back(kept);
                self.evict_beyond_cap(&domain);
            }
            Ok(StoreAction::UpdatedExisting) => {
                let same = |k: &&mut Kept| {
                    k.domain == kept.domain && k.path == kept.path && k.name == kept.name
                };
                // An update keeps the cookie's place (RFC 6265 keeps its creation time).
                if let Some(k) = self.kept.iter_mut().find(same) {
                    k.set_by = kept.set_by;
                }
            }
            _ => {}
        }
        self.drop_expired();
    }

    /// The `Cookie` field's value for a request to `url` (appended to `out`), or false when
    /// the jar holds none for it.
    pub fn header(&self, url: &Url, out: &mut Vec<u8>) -> bool {
        let mut any = false;
        for c in self.store.iter_unexpired().filter(|c| c.matches(url)) {
            if any {
                out.extend_from_slice(b"; ");
            }
            let (name, value) = c.name_value();
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(value.as_bytes());
            any = true;
        }
        any
    }

    fn evict_beyond_cap(&mut self, domain: &str) {
        let held = self.kept.iter().filter(|k| k.domain == domain).count();
        if held <= MAX_COOKIES_PER_DOMAIN {
            return;
        }
        if let Some(i) = self.kept.iter().position(|k| k.domain == domain) {
            if let Some(k) = self.kept.remove(i) {
                self.store.remove(&k.domain, &k.path, &k.name);
            }
        }
    }

    fn drop_expired(&mut self) {
        let store = &mut self.store;
        self.kept.retain(|k| {
            let live = store.get(&k.domain, &k.path, &k.name).is_some();
            if !live {
                store.remove(&k.domain, &k.path, &k.name);
            }
            live
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_keeps_its_newest_cookies_and_expired_ones_are_dropped() {
        let url = Url::parse("http://app.test/").unwrap();
        let mut jar = Jar::default();
        for i in 0..MAX_COOKIES_PER_DOMAIN + 10 {
            jar.store(format!("c{i}=v; Path=/").as_bytes(), &url);
        }
        assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
        let mut out = Vec::new();
        assert!(jar.header(&url, &mut out));
        let header = String::from_utf8(out).unwrap();
        let names: Vec<&str> = header
            .split("; ")
            .map(|c| &c[..c.find('=').unwrap()])
            .collect();
        assert_eq!(names.len(), MAX_COOKIES_PER_DOMAIN);
        assert!(!names.contains(&"c9"), "the oldest evicted: {header}");
        assert!(names.contains(&"c10") && names.contains(&"c59"), "{header}");
        // A cookie deleted by the server leaves the jar, not only the requests.
        jar.store(b"c10=; Max-Age=0; Path=/", &url);
        assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN - 1);
        // Another domain has its own share.
        jar.store(b"x=1; Path=/", &Url::parse("http://other.test/").unwrap());
        assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
    }

    #[test]
    fn a_cookie_set_again_as_it_was_is_kept_once_and_an_update_is_seen() {
        let url = Url::parse("http://app.test/").unwrap();
        let mut jar = Jar::default();
        jar.store(b"sid=1; Path=/", &url);
        jar.store(b"sid=1; Path=/", &url);
        jar.store(b"sid=2; Path=/", &url);
        assert_eq!(jar.len(), 1);
        let mut out = Vec::new();
        jar.header(&url, &mut out);
        assert_eq!(out, b"sid=2");
        // Back to a text seen before: not skipped as unchanged.
        jar.store(b"sid=1; Path=/", &url);
        out.clear();
        jar.header(&url, &mut out);
        assert_eq!(out, b"sid=1");
    }
}
