//! `--redirect N`: the redirect targets a thread has learned. Requests are built once, before
//! the run, one per URL of the workload; a redirect's target is not known then. It is learned
//! instead: the first time a request of this thread is answered by a redirect to a Location it
//! has not seen from that request, the Location is resolved against the request's URL (a
//! relative one as a browser does), checked to be of the URL's origin, and its request is built
//! once and kept for the run, with its place in the thread's table. From then on the same
//! answer is a lookup: following a redirect allocates nothing.
//!
//! The page logic (`page.rs`) decides, when the response is complete, whether its page entry
//! goes on with the learned request (at most N times) and what is counted; the wires only ask
//! here when a redirect's head arrives and write the learned request's bytes.
//!
//! An application workload learns nothing: its requests are built per use, so each redirect's
//! target is worked out from its Location into a buffer of the Webchild's page entry.

use super::setup::{request_version, write_request};
use crate::stats::Unfollowed;
use crate::workload::RequestSpec;
use crate::BenchConfig;
use crate::Workload;

/// A request that is the page entry's own (a URL of the workload), not a learned one.
pub(super) const OWN: u32 = u32::MAX;

/// The most distinct redirect targets a thread keeps: a server that sends every client
/// somewhere new (a session in the Location, say) must not grow the client without bound.
pub(super) const MAX_LEARNED: usize = 1024;

/// The bit that marks an application workload's redirect target (see [`AppTarget`]): never
/// set in a learned request's index, which stays below `MAX_LEARNED`.
const APP: u32 = 1 << 30;

/// What the head of a response says about its page entry's next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hop {
    /// Not a redirect to follow: another status, a 304, or `--redirect 0`.
    None,
    /// A same-origin redirect: the learned request of this index is the entry's next.
    To(u32),
    /// A redirect that is not followed, and why: the response stands.
    Unfollowed(Unfollowed),
}

/// A learned redirect target: where it came from, and its request; or a Location that is not
/// followed, and why (remembered too, so that meeting it again allocates nothing either).
struct Learned {
    /// The request answered with the redirect: a workload URL with `OWN`, or a learned one.
    from: (usize, u32),
    /// The Location as the server sent it, and whether the method became GET.
    location: Box<[u8]>,
    get: bool,
    path: String,
    request: Vec<u8>,
    /// `--http 2` and `--http 3`: its header list.
    h2: Option<super::H2Requests>,
    head: bool,
    idempotent: bool,
    unfollowed: Option<Unfollowed>,
}

/// An application workload's redirect target: its request is built per use anyway (with the
/// session's cookies and values), so nothing is learned; the target is worked out from each
/// redirect's Location into a buffer of the Webchild's page entry. Two per entry (a page's
/// file of a Webchild), one for the request in flight and one for the hop it leads to: a
/// server that sends every request somewhere new (`/orders/<n>`) needs no more.
#[derive(Default)]
struct AppTarget {
    path: String,
    get: bool,
    head: bool,
    idempotent: bool,
}

/// One thread's learned targets (empty, and allocation-free, until a redirect is followed).
#[derive(Default)]
pub(super) struct Redirects {
    learned: Vec<Learned>,
    /// Application workloads: per Webchild slot and file, two targets (see [`AppTarget`]).
    app: Vec<AppTarget>,
    /// The most files of a page in the workload: the stride of `app` per Webchild.
    files: usize,
}

impl Redirects {
    /// The head of a response to request `from` (the entry's workload URL `url` and its
    /// learned request, or `OWN`) came with `status`: where the entry goes next.
    pub(super) fn on_head(
        &mut self,
        config: &BenchConfig,
        workload: &Workload,
        (url, learned): (usize, u32),
        entry: (usize, usize),
        status: u16,
        head: &[u8],
    ) -> Hop {
        if config.redirect == 0 || !is_redirect(status) {
            return Hop::None;
        }
        self.on_location(
            config,
            workload,
            (url, learned),
            entry,
            status,
            location(head),
        )
    }

    /// [`Redirects::on_head`] with the Location already found (HTTP/2 has it as a field).
    /// `entry` is the Webchild's slot and the file of its page: where an application
    /// workload's target is kept.
    pub(super) fn on_location(
        &mut self,
        config: &BenchConfig,
        workload: &Workload,
        (url, learned): (usize, u32),
        entry: (usize, usize),
        status: u16,
        location: Option<&[u8]>,
    ) -> Hop {
        if config.redirect == 0 || !is_redirect(status) {
            return Hop::None;
        }
        let Some(location) = location.map(<[u8]>::trim_ascii).filter(|l| !l.is_empty()) else {
            return Hop::Unfollowed(Unfollowed::NoLocation);
        };
        let spec = workload.spec(url);
        let was_get = learned != OWN && self.target(learned).1;
        // RFC 9110 15.4: a 303 (and, as every browser does, a 301 or 302 of a POST) is
        // followed with a GET without the body; a 307 or 308 repeats the request as it was.
        let get = was_get
            || (!spec.is_head()
                && (status == 303 || (matches!(status, 301 | 302) && spec.method() != "GET")));
        if workload.app.0.is_some() {
            return self.app_hop(config, workload, (url, learned), entry, get, location);
        }
        let known = self
            .learned
            .iter()
            .position(|l| l.from == (url, learned) && l.get == get && *l.location == *location);
        if let Some(i) = known {
            return match self.learned[i].unfollowed {
                Some(why) => Hop::Unfollowed(why),
                None => Hop::To(i as u32),
            };
        }
        if self.learned.len() >= MAX_LEARNED {
            return Hop::Unfollowed(Unfollowed::TooManyLocations);
        }
        let from_path = match learned {
            OWN => workload.urls[url].as_str(),
            i => self.learned[i as usize].path.as_str(),
        };
        let path = match same_origin_path(config, from_path, location) {
            Ok(path) => path,
            Err(why) => {
                self.learned.push(Learned {
                    from: (url, learned),
                    location: location.into(),
                    get,
                    path: String::new(),
                    request: Vec::new(),
                    h2: None,
                    head: false,
                    idempotent: false,
                    unfollowed: Some(why),
                });
                return Hop::Unfollowed(why);
            }
        };
        let rewritten;
        let spec = if get {
            rewritten = as_get(spec);
            &rewritten
        } else {
            spec
        };
        let (version, keep_alive) = request_version(config.http);
        let mut request = Vec::new();
        write_request(
            &mut request,
            &path,
            spec,
            &config.target.host,
            config.target.authorization.as_deref(),
            version,
            keep_alive,
        );
        // HTTP/3 sends the same header lists as HTTP/2.
        let lists = matches!(config.http, crate::HttpMode::Http2 | crate::HttpMode::Http3);
        let h2 = lists.then(|| {
            let one = Workload {
                pages: Vec::new(),
                urls: vec![path.clone()],
                requests: vec![spec.clone()],
                app: Default::default(),
            };
            super::H2Requests::build(config, &one)
        });
        self.learned.push(Learned {
            from: (url, learned),
            location: location.into(),
            get,
            path,
            request,
            h2,
            head: spec.is_head(),
            idempotent: spec.is_idempotent(),
            unfollowed: None,
        });
        Hop::To((self.learned.len() - 1) as u32)
    }

    /// An application workload's redirect: its target worked out into the entry's buffer that
    /// the request in flight does not use (allocating only while the buffers grow).
    fn app_hop(
        &mut self,
        config: &BenchConfig,
        workload: &Workload,
        (url, learned): (usize, u32),
        entry: (usize, usize),
        get: bool,
        location: &[u8],
    ) -> Hop {
        let base = self.app_entry(workload, entry);
        // The other buffer than the one in flight's; the entry's own request's path was noted
        // in the second (`sent`).
        let (to, from) = match learned {
            OWN => (base, base + 1),
            i => (base + 1 - (i & !APP) as usize % 2, (i & !APP) as usize),
        };
        let from_path = self.app[from].path.as_str();
        let path = match same_origin_path(config, from_path, location) {
            Ok(path) => path,
            Err(why) => return Hop::Unfollowed(why),
        };
        let spec = workload.spec(url);
        let t = &mut self.app[to];
        t.path.clear();
        t.path.push_str(&path);
        t.get = get;
        t.head = spec.is_head();
        t.idempotent = get || spec.is_idempotent();
        Hop::To(to as u32 | APP)
    }

    /// An application workload's request of the entry's own URL went out to `path` (its
    /// templates expanded): what a relative Location in its answer resolves against.
    pub(super) fn sent(&mut self, workload: &Workload, entry: (usize, usize), path: &[u8]) {
        let base = self.app_entry(workload, entry);
        let t = &mut self.app[base + 1].path;
        t.clear();
        t.push_str(&String::from_utf8_lossy(path));
    }

    /// The first of the entry's two buffers, there once this returns.
    fn app_entry(&mut self, workload: &Workload, (slot, file): (usize, usize)) -> usize {
        if self.files == 0 {
            let most = workload.pages.iter().map(|p| p.files.len()).max();
            self.files = most.unwrap_or(1).max(1);
        }
        let base = (slot * self.files + file) * 2;
        if self.app.len() < base + 2 {
            self.app.resize_with(base + 2, AppTarget::default);
        }
        base
    }

    /// Application workload target `i`, if it is one.
    #[inline]
    fn app_target(&self, i: u32) -> Option<&AppTarget> {
        (i & APP != 0).then(|| &self.app[(i & !APP) as usize])
    }

    /// Learned request `i`'s bytes.
    #[inline]
    pub(super) fn request(&self, i: u32) -> &[u8] {
        &self.learned[i as usize].request
    }

    /// `--http 2` and `--http 3`: its header list (URL 0 of it).
    #[inline]
    pub(super) fn h2(&self, i: u32) -> &super::H2Requests {
        self.learned[i as usize]
            .h2
            .as_ref()
            .expect("HTTP/2 requests built")
    }

    /// Its path, for the log.
    pub(super) fn path(&self, i: u32) -> &str {
        match self.app_target(i) {
            Some(t) => &t.path,
            None => &self.learned[i as usize].path,
        }
    }

    /// Its path, and whether its method became GET (without the body): what an application
    /// workload builds its request from.
    pub(super) fn target(&self, i: u32) -> (&str, bool) {
        if let Some(t) = self.app_target(i) {
            return (&t.path, t.get);
        }
        let l = &self.learned[i as usize];
        (&l.path, l.get)
    }

    /// Whether it is a HEAD (its response has no body).
    pub(super) fn is_head(&self, i: u32) -> bool {
        match self.app_target(i) {
            Some(t) => t.head,
            None => self.learned[i as usize].head,
        }
    }

    /// Whether it may be sent again on a new connection (an idempotent method).
    pub(super) fn may_resend(&self, i: u32) -> bool {
        match self.app_target(i) {
            Some(t) => t.idempotent,
            None => self.learned[i as usize].idempotent,
        }
    }
}

/// The statuses that redirect to their Location (304 and 300 do not).
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The spec as a GET: no body, and no header that described the body.
fn as_get(spec: &RequestSpec) -> RequestSpec {
    RequestSpec {
        method: None,
        headers: spec
            .headers
            .iter()
            .filter(|(n, _)| !describes_body(n))
            .cloned()
            .collect(),
        body: None,
    }
}

/// Whether a request's field `name` describes its body: left out when a redirect makes the
/// request a GET without it (RFC 9110 15.4: the content-specific fields go with the content).
pub(super) fn describes_body(name: &str) -> bool {
    [
        "content-type",
        "content-encoding",
        "content-language",
        "content-location",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// HTTP/2: the Location fields of a connection's streams, noted as their HEADERS arrive (the
/// stream handler cannot resolve them: the thread's table is not at hand there) and taken when
/// the stream closes. Its buffers are reused: nothing is allocated once they have grown.
#[derive(Default)]
pub(super) struct Locations {
    bytes: Vec<u8>,
    of: Vec<(i32, u32, u32)>,
    spare: Vec<u8>,
}

impl Locations {
    /// Past this, the bytes of streams already gone are dropped (kept ones copied over).
    const COMPACT_AT: usize = 64 * 1024;

    pub(super) fn note(&mut self, stream: i32, value: &[u8]) {
        if self.of.is_empty() {
            self.bytes.clear();
        } else if self.bytes.len() + value.len() > Self::COMPACT_AT {
            self.compact();
        }
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(value);
        self.of.push((stream, start, value.len() as u32));
    }

    /// Stream `stream`'s Location, if it had one; forgotten then.
    pub(super) fn take(&mut self, stream: i32) -> Option<&[u8]> {
        let i = self.of.iter().position(|&(id, _, _)| id == stream)?;
        let (_, start, len) = self.of.swap_remove(i);
        Some(&self.bytes[start as usize..(start + len) as usize])
    }

    /// Keeps only the bytes of the streams still noted.
    fn compact(&mut self) {
        self.spare.clear();
        for (_, start, len) in &mut self.of {
            let from = *start as usize..(*start + *len) as usize;
            *start = self.spare.len() as u32;
            self.spare.extend_from_slice(&self.bytes[from]);
        }
        std::mem::swap(&mut self.bytes, &mut self.spare);
    }

    /// The connection is gone.
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.of.clear();
    }
}

/// The value of the head's Location field, trimmed; `None` when it has none or an empty one.
/// The head was parsed already: lines end in CRLF (or LF), the status line first.
fn location(head: &[u8]) -> Option<&[u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if !name.eq_ignore_ascii_case(b"location") {
            return None;
        }
        let value = value.trim_ascii();
        (!value.is_empty()).then_some(value)
    })
}

/// `location` resolved against the request's URL (the target's origin and `from_path`): its
/// path and query when it is of the same origin (scheme, host and port), else why not.
fn same_origin_path(
    config: &BenchConfig,
    from_path: &str,
    location: &[u8],
) -> Result<String, Unfollowed> {
    let origin = format!("{}://{}", config.target.scheme.as_str(), config.target.host);
    let base = url::Url::parse(&origin)
        .and_then(|o| o.join(from_path))
        .map_err(|_| Unfollowed::BadLocation)?;
    let text = std::str::from_utf8(location).map_err(|_| Unfollowed::BadLocation)?;
    let to = base.join(text).map_err(|_| Unfollowed::BadLocation)?;
    if to.origin() != base.origin() {
        return Err(Unfollowed::CrossOrigin);
    }
    Ok(to[url::Position::BeforePath..url::Position::AfterQuery].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;

    fn config(redirect: u32) -> BenchConfig {
        let mut c = BenchConfig::new(Target::http("127.0.0.1:8080".parse().unwrap()));
        c.redirect = redirect;
        c
    }

    fn workload(path: &str) -> Workload {
        Workload::from_paths(&[path.to_owned()]).expect("a workload")
    }

    fn head(status: u16, location: Option<&str>) -> Vec<u8> {
        let mut h = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n");
        if let Some(l) = location {
            h.push_str(&format!("LOCATION:  {l} \r\n"));
        }
        h.push_str("\r\n");
        h.into_bytes()
    }

    #[test]
    fn a_relative_location_resolves_against_the_request_and_is_learned_once() {
        let c = config(3);
        let w = workload("/dir/a.html");
        let mut r = Redirects::default();
        let hop = r.on_head(
            &c,
            &w,
            (0, OWN),
            (0, 0),
            302,
            &head(302, Some("b.html?x=1#f")),
        );
        assert_eq!(hop, Hop::To(0));
        assert_eq!(r.path(0), "/dir/b.html?x=1");
        let text = String::from_utf8_lossy(r.request(0)).into_owned();
        assert!(
            text.starts_with("GET /dir/b.html?x=1 HTTP/1.1\r\n"),
            "{text}"
        );
        assert!(text.contains("Host: 127.0.0.1:8080\r\n"), "{text}");
        // The same answer again: the same request, nothing new.
        let again = r.on_head(
            &c,
            &w,
            (0, OWN),
            (0, 0),
            302,
            &head(302, Some("b.html?x=1#f")),
        );
        assert_eq!(again, Hop::To(0));
        assert_eq!(r.learned.len(), 1);
        // From the learned one, an absolute URL of the same origin.
        let next = r.on_head(
            &c,
            &w,
            (0, 0),
            (0, 0),
            301,
            &head(301, Some("http://127.0.0.1:8080/c")),
        );
        assert_eq!(next, Hop::To(1));
        assert_eq!(r.path(1), "/c");
    }

    #[test]
    fn what_is_not_followed_says_why() {
        let c = config(1);
        let w = workload("/a");
        let mut r = Redirects::default();
        let mut hop =
            |status, location| r.on_head(&c, &w, (0, OWN), (0, 0), status, &head(status, location));
        assert_eq!(hop(200, Some("/b")), Hop::None);
        assert_eq!(hop(304, Some("/b")), Hop::None);
        let other = Hop::Unfollowed(Unfollowed::CrossOrigin);
        assert_eq!(hop(302, Some("http://127.0.0.1:8081/b")), other);
        assert_eq!(hop(302, Some("https://127.0.0.1:8080/b")), other);
        assert_eq!(hop(302, Some("//example.com/b")), other);
        assert_eq!(hop(307, None), Hop::Unfollowed(Unfollowed::NoLocation));
        let bad = Hop::Unfollowed(Unfollowed::BadLocation);
        assert_eq!(hop(307, Some("http://[::1")), bad);
        // Met again, each is remembered, not parsed again: nothing more is kept.
        assert_eq!(hop(302, Some("//example.com/b")), other);
        assert_eq!(hop(307, Some("http://[::1")), bad);
        assert_eq!(r.learned.len(), 4);
        let off = config(0);
        assert_eq!(
            Redirects::default().on_head(&off, &w, (0, OWN), (0, 0), 302, &head(302, Some("/b"))),
            Hop::None
        );
    }

    #[test]
    fn a_303_or_a_posts_302_becomes_a_get_a_307_repeats_the_request() {
        let c = config(2);
        let post = RequestSpec {
            method: Some("POST".into()),
            headers: vec![
                ("Content-Type".into(), "text/plain".into()),
                ("Content-Encoding".into(), "identity".into()),
                ("Content-Language".into(), "en".into()),
                ("Content-Location".into(), "/a.txt".into()),
            ],
            body: Some(b"hi".to_vec()),
        };
        let w = workload("/a").with_defaults(&post).expect("a POST");
        let mut r = Redirects::default();
        let text = |r: &Redirects, i| String::from_utf8_lossy(r.request(i)).into_owned();
        assert_eq!(
            r.on_head(&c, &w, (0, OWN), (0, 0), 307, &head(307, Some("/b"))),
            Hop::To(0)
        );
        assert!(text(&r, 0).starts_with("POST /b "), "{}", text(&r, 0));
        assert!(text(&r, 0).ends_with("\r\n\r\nhi"), "{}", text(&r, 0));
        assert_eq!(
            r.on_head(&c, &w, (0, OWN), (0, 0), 302, &head(302, Some("/b"))),
            Hop::To(1)
        );
        let get = text(&r, 1);
        assert!(get.starts_with("GET /b "), "{get}");
        assert!(
            !get.contains("Content-") && get.ends_with("\r\n\r\n"),
            "{get}"
        );
        // Once a GET, a GET down the chain, even through a 307.
        assert_eq!(
            r.on_head(&c, &w, (0, 1), (0, 0), 307, &head(307, Some("/c"))),
            Hop::To(2)
        );
        assert!(text(&r, 2).starts_with("GET /c "));
    }
}
