//! Every HTTP/2 request of the run as a header list, built once before the threads start:
//! its bytes in one buffer, each field a pair of ranges in it, and its body shared. A stream's
//! HEADERS are made from these by nghttp2 (HPACK) without anything built per request but an
//! array of [`http2::Header`] on the stack.

use crate::workload::RequestSpec;
use crate::{BenchConfig, Scheme, Workload};
use std::ops::Range;
use std::sync::Arc;

/// A request with more fields than this is sent from a list on the heap (allocated per
/// request); every request a command line makes has far fewer.
pub(in crate::client) const STACK_FIELDS: usize = 32;

/// The header lists of every URL.
#[derive(Debug, Clone, Default)]
pub struct H2Requests {
    bytes: Vec<u8>,
    /// Per URL: its fields (name and value ranges in `bytes`).
    fields: Vec<Vec<(Range<usize>, Range<usize>)>>,
    /// Per URL: its body, if any (shared with the streams that send it).
    bodies: Vec<Option<Arc<[u8]>>>,
    /// Per URL: names and values' lengths, HPACK's input (for the saving it makes).
    plain: Vec<u64>,
}

impl H2Requests {
    /// Every URL's request as HTTP/2's (and HTTP/3's) header list, built once: pseudo-header
    /// fields, the workload's fields, and the body each stream shares.
    pub fn build(config: &BenchConfig, workload: &Workload) -> Self {
        let mut r = H2Requests::default();
        let scheme: &[u8] = match config.target.scheme {
            Scheme::Http => b"http",
            Scheme::Https => b"https",
        };
        for (i, path) in workload.urls.iter().enumerate() {
            let spec = workload.spec(i);
            let start = r.fields.len();
            r.fields.push(Vec::new());
            let add = |r: &mut H2Requests, name: &[u8], value: &[u8]| {
                let n = r.bytes.len();
                r.bytes.extend_from_slice(name);
                // HTTP/2 field names are lowercase (RFC 9113 8.2.1).
                r.bytes[n..].make_ascii_lowercase();
                let v = r.bytes.len();
                r.bytes.extend_from_slice(value);
                r.fields[start].push((n..v, v..r.bytes.len()));
            };
            add(&mut r, b":method", spec.method().as_bytes());
            add(&mut r, b":scheme", scheme);
            let authority = host_of(spec).unwrap_or(&config.target.host);
            add(&mut r, b":authority", authority.as_bytes());
            add(&mut r, b":path", path.as_bytes());
            if !spec.has_header("user-agent") {
                add(&mut r, b"user-agent", wire::head::USER_AGENT);
            }
            let auth = config.target.authorization.as_deref();
            if let Some(auth) = auth.filter(|_| !spec.has_header("authorization")) {
                add(&mut r, b"authorization", auth.as_bytes());
            }
            for (name, value) in &spec.headers {
                if !left_out(name, value.as_bytes()) {
                    add(&mut r, name.as_bytes(), value.as_bytes());
                }
            }
            if let Some(body) = &spec.body {
                add(&mut r, b"content-length", body.len().to_string().as_bytes());
            }
            let plain = r.fields[start]
                .iter()
                .map(|(n, v)| (n.len() + v.len()) as u64)
                .sum();
            r.plain.push(plain);
            r.bodies.push(spec.body.as_deref().map(Arc::from));
        }
        r
    }

    /// URL `url`'s fields, as (name, value) byte slices.
    #[inline]
    pub(in crate::client) fn fields(&self, url: usize) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields[url]
            .iter()
            .map(|(n, v)| (&self.bytes[n.clone()], &self.bytes[v.clone()]))
    }

    #[inline]
    pub(in crate::client) fn field_count(&self, url: usize) -> usize {
        self.fields[url].len()
    }

    #[inline]
    pub(in crate::client) fn body(&self, url: usize) -> Option<&Arc<[u8]>> {
        self.bodies[url].as_ref()
    }

    /// The fields of the workload's requests (`-H`, a workload's entries, an application
    /// workload's templated fields) that HTTP/2 and HTTP/3 requests leave out as
    /// connection-specific ([`left_out`]; a templated TE whatever it would expand to, as its
    /// requests leave it out), each once, as written: what the start of the run notes.
    pub fn left_out_fields(workload: &Workload) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let specs = (0..workload.urls.len()).map(|i| workload.spec(i));
        let plain = specs.flat_map(|spec| &spec.headers);
        let plain = plain.map(|(name, value)| (name, value.as_bytes()));
        let app = workload.app.0.as_deref();
        let files = app.into_iter().flat_map(|plan| plan.files.iter().flatten());
        let templated = files
            .flat_map(|f| &f.headers)
            .map(|(name, _)| (name, &b""[..]));
        for (name, value) in plain.chain(templated) {
            let host = name.eq_ignore_ascii_case("host");
            let seen = names.iter().any(|n| n.eq_ignore_ascii_case(name));
            if !host && !seen && left_out(name, value) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The uncompressed size of URL `url`'s fields (names and values).
    #[inline]
    pub(in crate::client) fn plain_size(&self, url: usize) -> u64 {
        self.plain[url]
    }
}

/// Whether a workload's header field `name: value` is left out of an HTTP/2 (or HTTP/3)
/// request, whatever the name's case: HTTP/2 has no Host field (`:authority` carries it) and
/// no connection-specific ones (RFC 9113 section 8.2.2, RFC 9114 section 4.2): Connection,
/// Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, and TE unless its value is
/// `trailers`. A server must take a request with one for malformed (Caddy answers 400, h2o and
/// flint serve end the connection), so they are left out rather than sent or refused; the
/// start of the run notes them ([`H2Requests::left_out_fields`]).
pub(in crate::client) fn left_out(name: &str, value: &[u8]) -> bool {
    const SKIPPED: [&str; 6] = [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ];
    let te =
        name.eq_ignore_ascii_case("te") && !value.trim_ascii().eq_ignore_ascii_case(b"trailers");
    te || SKIPPED.iter().any(|s| name.eq_ignore_ascii_case(s))
}

/// A workload's own `Host` field, which becomes `:authority`.
pub(in crate::client) fn host_of(spec: &RequestSpec) -> Option<&String> {
    spec.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_specific_fields_are_left_out_whatever_their_case() {
        for name in [
            "Connection",
            "keep-alive",
            "PROXY-CONNECTION",
            "Proxy-Connection",
            "transfer-encoding",
            "Upgrade",
            "Host",
        ] {
            assert!(left_out(name, b"x"), "{name}");
        }
        // TE only as `trailers` (RFC 9113 section 8.2.2).
        assert!(left_out("TE", b"gzip"));
        assert!(left_out("te", b"trailers, gzip"));
        assert!(!left_out("te", b"trailers"));
        assert!(!left_out("TE", b"Trailers"));
        for name in [
            "accept-encoding",
            "tea",
            "x-connection",
            "proxy-authorization",
        ] {
            assert!(!left_out(name, b"gzip"), "{name}");
        }
    }

    #[test]
    fn a_request_list_has_no_connection_specific_field_and_the_note_names_them_once() {
        let spec = RequestSpec {
            headers: vec![
                ("TE".into(), "gzip".into()),
                ("Proxy-Connection".into(), "keep-alive".into()),
                ("X-Kept".into(), "1".into()),
                ("Host".into(), "example.test".into()),
                ("te".into(), "gzip".into()),
            ],
            ..RequestSpec::default()
        };
        let workload = Workload::from_paths(&["/a".to_string(), "/b".to_string()])
            .expect("paths")
            .with_defaults(&spec)
            .expect("defaults");
        let config = BenchConfig::new(crate::Target::http(([127, 0, 0, 1], 1).into()));
        let r = H2Requests::build(&config, &workload);
        for url in 0..2 {
            let names: Vec<&[u8]> = r.fields(url).map(|(n, _)| n).collect();
            assert!(names.contains(&&b"x-kept"[..]), "{names:?}");
            assert!(!names
                .iter()
                .any(|n| *n == b"te" || *n == b"proxy-connection"));
            let authority = r.fields(url).find(|(n, _)| *n == b":authority");
            assert_eq!(authority.map(|(_, v)| v), Some(&b"example.test"[..]));
        }
        assert_eq!(
            H2Requests::left_out_fields(&workload),
            vec!["TE".to_string(), "Proxy-Connection".to_string()]
        );
    }

    #[test]
    fn an_application_workloads_templated_fields_left_out_are_named_too() {
        // An application file's TE is left out whatever it is or expands to, `trailers` too
        // (its requests never send it), and named once however often and however spelled.
        let text = r#"
[[page]]
name = "p"
weight = 1
files = [
  { path = "/login", extract = { token = { header = "X-Token" } } },
  { path = "/a", headers = { "TE" = "trailers", "X-Token" = "{{token}}" } },
  { path = "/b", headers = { "tE" = "trailers", "Upgrade" = "{{token}}" } },
]
"#;
        let workload = Workload::parse(text, "w.toml").expect("workload");
        assert!(workload.app.0.is_some(), "an application workload");
        assert_eq!(
            H2Requests::left_out_fields(&workload),
            vec!["Upgrade".to_string(), "TE".to_string()]
        );
    }
}
