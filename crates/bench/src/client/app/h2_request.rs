//! An application workload's request built per use for HTTP/2: the header list nghttp2 makes
//! the HEADERS from (HPACK), with the expanded path, the entry's header templates, its
//! credentials and the cookie jar's `Cookie` field, and its body for the DATA frames. The same
//! fields the run's prebuilt lists hold for a plain request (`h2/requests.rs`), in the same
//! order. Built into buffers the Webchild keeps, which grow to the largest request and are
//! reused: nghttp2 copies the fields when the stream is submitted.

use super::{describes_body, set_path, AppExchange, HopTarget};
use crate::app::template::ExpandError;
use crate::client::h2::requests::{host_of, left_out};
use crate::client::setup::RunShared;
use crate::Scheme;
use base64::Engine as _;
use std::io::Write as _;
use std::ops::Range;

/// One request as an HTTP/2 header list and a body.
#[derive(Debug, Default)]
pub(in crate::client) struct H2Request {
    /// The fields' names and values, one after another.
    bytes: Vec<u8>,
    /// Each field: its name's and its value's range in `bytes`.
    fields: Vec<(Range<usize>, Range<usize>)>,
    /// The `:path` value's range in `bytes`.
    path: Range<usize>,
    /// The body, if the request has one (`has_body`).
    pub body: Vec<u8>,
    pub has_body: bool,
}

impl H2Request {
    /// The fields, as (name, value).
    pub(in crate::client) fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields
            .iter()
            .map(|(n, v)| (&self.bytes[n.clone()], &self.bytes[v.clone()]))
    }

    pub(in crate::client) fn field_count(&self) -> usize {
        self.fields.len()
    }

    /// The path the request goes to (with its query).
    pub(in crate::client) fn path(&self) -> &[u8] {
        &self.bytes[self.path.clone()]
    }

    /// The fields' names and values' lengths, HPACK's input.
    pub(in crate::client) fn plain_size(&self) -> u64 {
        self.fields
            .iter()
            .map(|(n, v)| (n.len() + v.len()) as u64)
            .sum()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
        self.body.clear();
        self.has_body = false;
        self.path = 0..0;
    }

    /// A field begins: its name written (lowercase, as HTTP/2 wants: RFC 9113 8.2.1); where
    /// its name and its value begin.
    fn begin(&mut self, name: &[u8]) -> (usize, usize) {
        let n = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes[n..].make_ascii_lowercase();
        (n, self.bytes.len())
    }

    /// The field begun at `(n, v)` ends with the bytes written since.
    fn end(&mut self, (n, v): (usize, usize)) {
        self.fields.push((n..v, v..self.bytes.len()));
    }

    fn add(&mut self, name: &[u8], value: &[u8]) {
        let at = self.begin(name);
        self.bytes.extend_from_slice(value);
        self.end(at);
    }
}

impl AppExchange {
    /// Builds file `file`'s request, URL `url` (or, with `hop`, the redirect's it leads to)
    /// into `req`; `Err` when it needs a value never extracted (or one that would break a
    /// field): it is not sent.
    pub(in crate::client) fn build_h2(
        &mut self,
        sh: &RunShared<'_>,
        (file_at, url, hop): (usize, usize, Option<HopTarget<'_>>),
        req: &mut H2Request,
    ) -> Result<(), ExpandError> {
        req.clear();
        self.session.count_request();
        let spec = sh.workload.spec(url);
        let file = self.plan.files.get(url).and_then(Option::as_ref);
        let target = &sh.config.target;
        let scheme: &[u8] = match target.scheme {
            Scheme::Http => b"http",
            Scheme::Https => b"https",
        };
        let get = hop.is_some_and(|(_, get)| get);
        let method = if get { "GET" } else { spec.method() };
        req.add(b":method", method.as_bytes());
        req.add(b":scheme", scheme);
        req.add(
            b":authority",
            host_of(spec).unwrap_or(&target.host).as_bytes(),
        );
        let at = req.begin(b":path");
        match (hop, file) {
            (Some((path, _)), _) => req.bytes.extend_from_slice(path.as_bytes()),
            (None, Some(f)) => f.path.expand(&mut self.session, &mut req.bytes)?,
            (None, None) => req
                .bytes
                .extend_from_slice(sh.workload.urls[url].as_bytes()),
        }
        req.path = at.1..req.bytes.len();
        req.end(at);
        let own = |name: &str| {
            spec.has_header(name)
                || file.is_some_and(|f| f.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
        };
        if !own("user-agent") {
            req.add(b"user-agent", wire::head::USER_AGENT);
        }
        if !own("authorization") {
            match file.and_then(|f| f.auth.as_ref()) {
                Some(auth) => {
                    self.scratch.clear();
                    auth.expand(&mut self.session, &mut self.scratch)?;
                    let at = req.begin(b"authorization");
                    req.bytes.extend_from_slice(b"Basic ");
                    let from = req.bytes.len();
                    let n = base64::encoded_len(self.scratch.len(), true).unwrap_or(0);
                    req.bytes.resize(from + n, 0);
                    let b64 = base64::prelude::BASE64_STANDARD;
                    let written =
                        (b64.encode_slice(&self.scratch, &mut req.bytes[from..])).unwrap_or(0);
                    req.bytes.truncate(from + written);
                    req.end(at);
                }
                None => {
                    if let Some(a) = target.authorization.as_deref() {
                        req.add(b"authorization", a.as_bytes());
                    }
                }
            }
        }
        for (name, value) in &spec.headers {
            // The entry's own fields are its templates, added below.
            let templated = file.is_some_and(|f| f.headers.iter().any(|(n, _)| n == name));
            let skipped =
                templated || left_out(name, value.as_bytes()) || (get && describes_body(name));
            if !skipped {
                req.add(name.as_bytes(), value.as_bytes());
            }
        }
        for (name, value) in file.iter().flat_map(|f| &f.headers) {
            // (A templated TE's value is not known here: left out, as any TE but `trailers`.)
            if left_out(name, b"") || (get && describes_body(name)) {
                continue;
            }
            let at = req.begin(name.as_bytes());
            value.expand(&mut self.session, &mut req.bytes)?;
            req.end(at);
        }
        if !own("cookie") && self.session.has_cookies() {
            // The jar's rules need the path (worked out only when the jar holds a cookie).
            let path = std::str::from_utf8(req.path()).unwrap_or("/");
            set_path(&mut self.cookie_url, path);
            let at = req.begin(b"cookie");
            if self.session.cookie_header(&self.cookie_url, &mut req.bytes) {
                req.end(at);
            } else {
                req.bytes.truncate(at.0);
            }
        }
        match file.and_then(|f| f.body.as_ref()) {
            _ if get => {}
            // A 307 or 308 followed: the bytes the request sent, the same values.
            Some(_) if hop.is_some() => {
                req.body.extend_from_slice(self.sent_bodies.get(file_at));
                self.sent_bodies.release(file_at);
                req.has_body = true;
            }
            Some(t) => {
                t.expand(&mut self.session, &mut req.body)?;
                req.has_body = true;
            }
            None => {
                if let Some(b) = spec.body.as_deref() {
                    req.body.extend_from_slice(b);
                    req.has_body = true;
                }
            }
        }
        if req.has_body {
            let at = req.begin(b"content-length");
            // Digits into the buffer (a `Vec`'s `Write` never fails).
            let _ = write!(req.bytes, "{}", req.body.len());
            req.end(at);
        }
        Ok(())
    }

    /// Whether URL `url`'s response body is kept (a check or an extraction reads it).
    pub(in crate::client) fn keeps_body(&self, url: usize) -> bool {
        self.file(url).is_some_and(|f| f.needs_body)
    }

    /// Whether URL `url`'s file extracts values: the page's files after it wait for its
    /// response (they may need the values, or the cookies it sets).
    pub(in crate::client) fn extracts(&self, url: usize) -> bool {
        super::extracts(&self.plan, url)
    }
}
