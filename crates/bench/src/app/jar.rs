//! A Webchild's cookie jar: RFC 6265's domain, path, expiry and `Secure` rules, kept by the
//! `cookie_store` crate, with what a browser adds and a load generator needs:
//!
//! - at most [`MAX_COOKIES_PER_DOMAIN`] cookies a domain, the oldest evicted first, and expired
//!   cookies dropped whenever a response stores one, so that a server setting a new cookie per
//!   response cannot grow the jar for the length of the run;
//! - the `Cookie` field in RFC 6265 5.4's order (longer paths first, then the earlier created
//!   first), so that requests from one state are byte for byte the same, whatever order the
//!   store's hash maps hold them in;
//! - nothing allocated per request in steady state: the `Cookie` field is written from the
//!   unexpired cookies as they are walked, and a `Set-Cookie` field identical to the one that
//!   stored a cookie still held (a session cookie with a `Path`: storing it again would change
//!   nothing) is not parsed again.

use cookie_store::{CookieDomain, CookieStore, StoreAction};
use std::collections::VecDeque;
use url::Url;

/// The most cookies kept per domain. RFC 6265 asks for at least 50 and browsers keep 150
/// (Firefox) to 180 (Chrome); 50 is the floor every browser honours, so an application that
/// works in browsers works here.
pub const MAX_COOKIES_PER_DOMAIN: usize = 50;

/// One cookie kept: a copy of it as the store holds it, whose domain, path and name are its key
/// in the store. A request's `Cookie` field is written from the copies, as `kept` orders them,
/// with no lookup in the store's hash maps per cookie per request.
struct Kept {
    cookie: cookie_store::Cookie<'static>,
    /// When it was created, in cookies stored by this jar (an update keeps it, as RFC 6265
    /// keeps the creation time).
    created: u64,
    /// The `Set-Cookie` text that stored it, when storing that text again changes nothing.
    set_by: Option<Box<[u8]>>,
}

impl Kept {
    /// The store's key of the cookie: its domain, path and name.
    fn key(&self) -> (&str, &str, &str) {
        (
            domain_of(&self.cookie),
            &self.cookie.path,
            self.cookie.name(),
        )
    }
}

/// A cookie's domain as the store keys it (the store refuses a cookie without one).
fn domain_of<'c>(cookie: &'c cookie_store::Cookie<'_>) -> &'c str {
    match &cookie.domain {
        CookieDomain::HostOnly(d) | CookieDomain::Suffix(d) => d,
        CookieDomain::NotPresent | CookieDomain::Empty => "",
    }
}

/// One Webchild's cookies (see the module's doc); empty at first, as a new browser's.
#[derive(Default)]
pub struct Jar {
    store: CookieStore,
    /// Every cookie in `store`, in the order a `Cookie` field lists them (RFC 6265 5.4 step
    /// 2): by its path's length, longest first, then oldest first.
    kept: VecDeque<Kept>,
    /// Cookies created so far: the next one's `created`.
    created: u64,
}

impl Jar {
    /// Forgets every cookie (`--reset-session`, as each page starts).
    pub fn clear(&mut self) {
        self.store.clear();
        self.kept.clear();
        self.created = 0;
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
    /// (bad domain, a Secure one over cleartext) is not kept, as a browser keeps none; loopback
    /// (`localhost`, 127.0.0.0/8, `::1`) counts as secure, as browsers count it.
    pub fn store(&mut self, text: &[u8], url: &Url) {
        let unchanged = self.kept.iter().any(|k| {
            let (domain, path, name) = k.key();
            k.set_by.as_deref() == Some(text) && self.store.get(domain, path, name).is_some()
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
        // RFC 6265bis 5.7: a `Secure` cookie from an origin that is not secure is ignored
        // (cookie_store would keep it, never to send it, taking one of the domain's places).
        if cookie.secure() == Some(true) && !is_secure(url) {
            return;
        }
        let again = cookie.path.is_from_path_attr() && !cookie.is_persistent();
        let cookie = cookie.into_owned();
        let kept = Kept {
            cookie: cookie.clone(),
            created: self.created,
            set_by: again.then(|| text.into()),
        };
        match self.store.insert(cookie, url) {
            Ok(StoreAction::Inserted) => {
                self.created += 1;
                // After every cookie of a path as long or longer: the newest of its length.
                let len = kept.cookie.path.len();
                let at = (self.kept.iter()).position(|k| k.cookie.path.len() < len);
                let at = at.unwrap_or(self.kept.len());
                self.kept.insert(at, kept);
                self.evict_beyond_cap(at);
            }
            Ok(StoreAction::UpdatedExisting) => {
                let key = kept.key();
                let same = |k: &&mut Kept| k.key() == key;
                // An update keeps the cookie's place (RFC 6265 keeps its creation time).
                if let Some(k) = self.kept.iter_mut().find(same) {
                    k.cookie = kept.cookie;
                    k.set_by = kept.set_by;
                }
            }
            _ => {}
        }
        self.drop_expired();
    }

    /// The `Cookie` field's value for a request to `url` (appended to `out`), or false when
    /// the jar holds none for it: its unexpired cookies in `kept`'s order, from the copies
    /// `kept` holds (the store decides what is kept; `store` keeps the copies the same).
    pub fn header(&self, url: &Url, out: &mut Vec<u8>) -> bool {
        let mut any = false;
        let cookies = self.kept.iter().map(|k| &k.cookie);
        for c in cookies.filter(|c| !c.is_expired() && c.matches(url)) {
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

    /// Evicts the oldest cookie of the domain of `kept[stored]`, the cookie just stored (the
    /// first created, whatever its path), when that domain holds more than its share.
    fn evict_beyond_cap(&mut self, stored: usize) {
        let domain = domain_of(&self.kept[stored].cookie);
        let of_domain =
            || (self.kept.iter().enumerate()).filter(|(_, k)| domain_of(&k.cookie) == domain);
        if of_domain().count() <= MAX_COOKIES_PER_DOMAIN {
            return;
        }
        let oldest = of_domain().min_by_key(|(_, k)| k.created).map(|(i, _)| i);
        if let Some(k) = oldest.and_then(|i| self.kept.remove(i)) {
            let (domain, path, name) = k.key();
            self.store.remove(domain, path, name);
        }
    }

    fn drop_expired(&mut self) {
        let store = &mut self.store;
        self.kept.retain(|k| {
            let (domain, path, name) = k.key();
            let live = store.get(domain, path, name).is_some();
            if !live {
                store.remove(domain, path, name);
            }
            live
        });
    }
}

/// Whether `url` is a secure origin for cookies: `https`, or loopback (`localhost`,
/// 127.0.0.0/8, `::1`), as browsers and cookie_store count it.
fn is_secure(url: &Url) -> bool {
    url.scheme() == "https"
        || match url.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
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

    /// RFC 6265 5.4 step 2: longer paths first, then the earlier created first (an update
    /// keeps its cookie's creation time), so that requests from one state are byte for byte
    /// the same.
    #[test]
    fn the_cookie_field_lists_longer_paths_first_then_the_oldest_first() {
        let url = Url::parse("http://app.test/x/y/z").unwrap();
        let mut jar = Jar::default();
        let mut want_root = Vec::new();
        for i in 0..20 {
            jar.store(format!("r{i}={i}; Path=/").as_bytes(), &url);
            want_root.push(format!("r{i}={i}"));
            if i == 5 {
                jar.store(b"d=4; Path=/x", &url);
                jar.store(b"b=2; Path=/x/y", &url);
            }
        }
        // Updated: the same place.
        jar.store(b"r3=new; Path=/", &url);
        want_root[3] = "r3=new".into();
        let mut want = vec!["b=2".to_owned(), "d=4".to_owned()];
        want.extend(want_root);
        let mut out = Vec::new();
        assert!(jar.header(&url, &mut out));
        assert_eq!(String::from_utf8(out).unwrap(), want.join("; "));
        // Only those whose path matches, in the same order.
        let mut out = Vec::new();
        assert!(jar.header(&Url::parse("http://app.test/x").unwrap(), &mut out));
        assert!(String::from_utf8(out)
            .unwrap()
            .starts_with("d=4; r0=0; r1=1; r2=2; r3=new"));
    }

    #[test]
    fn a_secure_cookie_is_kept_over_https_and_loopback_only() {
        for (url, kept) in [
            ("https://app.test/", true),
            ("http://127.0.0.1:8080/", true),
            ("http://localhost/", true),
            ("http://[::1]/", true),
            ("http://app.test/", false),
            ("http://192.0.2.1/", false),
        ] {
            let url = Url::parse(url).unwrap();
            let mut jar = Jar::default();
            jar.store(b"sec=1; Secure; Path=/", &url);
            assert_eq!(jar.len(), usize::from(kept), "{url}");
            assert_eq!(jar.header(&url, &mut Vec::new()), kept, "{url}");
        }
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
