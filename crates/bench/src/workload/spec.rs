//! How a file is requested: its method, extra header fields and body, as `-m`, `-H`, `--body`
//! and a workload's file entries give them. Checked once before the run; the engine writes the
//! request built from it at start and never builds one per request.

/// A request's method, header fields and body; the default is a plain GET.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RequestSpec {
    /// `None`: GET.
    pub method: Option<String>,
    /// Extra header fields, in order. A `Host` or `User-Agent` here replaces flint's own.
    pub headers: Vec<(String, String)>,
    /// Sent after the head, with its `Content-Length`.
    pub body: Option<Vec<u8>>,
}

/// The spec of a plain GET, for URLs a workload built in code gives none.
pub static PLAIN_GET: RequestSpec = RequestSpec {
    method: None,
    headers: Vec::new(),
    body: None,
};

/// RFC 9110's token: what a method or a header name is made of.
fn is_token(s: &str) -> bool {
    wire::is_token(s.as_bytes())
}

impl RequestSpec {
    /// The request's method: the one given, GET by default.
    pub fn method(&self) -> &str {
        self.method.as_deref().unwrap_or("GET")
    }

    /// A HEAD's response has no body, whatever its Content-Length says.
    pub fn is_head(&self) -> bool {
        self.method() == "HEAD"
    }

    /// Whether the request may be sent again on a new connection when a reused one closes
    /// before answering (RFC 9110 9.2.2's idempotent methods): a POST is never resent.
    pub fn is_idempotent(&self) -> bool {
        matches!(
            self.method(),
            "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
        )
    }

    /// Whether a header field of this name (any case) is among the extra ones.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// `Name: value` as `-H` and a workload's `headers` take it.
    pub fn parse_header(text: &str) -> Result<(String, String), String> {
        let Some((name, value)) = text.split_once(':') else {
            return Err(format!("header {text:?} is not `Name: value`"));
        };
        let (name, value) = (name.trim(), value.trim());
        check_header(name, value)?;
        Ok((name.to_owned(), value.to_owned()))
    }

    /// Why the spec cannot be sent, or `None`.
    pub fn check(&self) -> Option<String> {
        if let Some(m) = &self.method {
            if !is_token(m) {
                return Some(format!("method {m:?} is not an HTTP method token"));
            }
        }
        self.headers
            .iter()
            .find_map(|(n, v)| check_header(n, v).err())
    }

    /// `self` over `defaults` (the command line's): a method or body of its own wins; header
    /// fields are the defaults' and then its own, its own replacing a default of the same name.
    pub fn over(&self, defaults: &RequestSpec) -> RequestSpec {
        let mut headers: Vec<(String, String)> = defaults
            .headers
            .iter()
            .filter(|(n, _)| !self.has_header(n))
            .cloned()
            .collect();
        headers.extend(self.headers.iter().cloned());
        RequestSpec {
            method: self.method.clone().or_else(|| defaults.method.clone()),
            headers,
            body: self.body.clone().or_else(|| defaults.body.clone()),
        }
    }
}

fn check_header(name: &str, value: &str) -> Result<(), String> {
    if !is_token(name) {
        return Err(format!("header name {name:?} is not an HTTP token"));
    }
    if value.contains(['\r', '\n', '\0']) {
        return Err(format!(
            "header {name}: its value contains a line break or NUL"
        ));
    }
    // flint frames what it sends: a body goes with the Content-Length it has.
    if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding")
    {
        return Err(format!(
            "header {name}: flint sets Content-Length from the body itself (--body, --body-file, \
             or body in the workload) and sends no other framing"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_and_bad_ones_say_why() {
        assert_eq!(
            RequestSpec::parse_header("X-Token:  abc def ").unwrap(),
            ("X-Token".into(), "abc def".into())
        );
        for bad in ["NoColon", "Bad Name: x", ": x", "Content-Length: 5"] {
            assert!(RequestSpec::parse_header(bad).is_err(), "{bad}");
        }
        let spec = RequestSpec {
            method: Some("GE T".into()),
            ..RequestSpec::default()
        };
        assert!(spec.check().unwrap().contains("method"));
    }

    #[test]
    fn a_files_own_fields_win_over_the_command_lines() {
        let cli = RequestSpec {
            method: Some("POST".into()),
            headers: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
            body: Some(b"cli".to_vec()),
        };
        let own = RequestSpec {
            method: None,
            headers: vec![("b".into(), "3".into())],
            body: Some(b"own".to_vec()),
        };
        let s = own.over(&cli);
        assert_eq!(s.method(), "POST");
        assert_eq!(
            s.headers,
            [("A".into(), "1".into()), ("b".into(), "3".into())]
        );
        assert_eq!(s.body.as_deref(), Some(&b"own"[..]));
        assert!(!s.is_idempotent());
        assert!(RequestSpec::default().is_idempotent());
    }
}
