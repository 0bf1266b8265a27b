//! Responses the responder makes up rather than finds: error pages, redirects, refusals
//! (401/429), the 503s of a full program table. Each status's page is built once per thread,
//! HTTP/1.1 head lines and fields alike, so a flood of 404s copies and does not format.

use wire::{Method, Request};

use super::output::{push_encoded, push_u64, Body, Output, Persistence, Reply};
use super::Responder;
use crate::auth::Denial;
use crate::resolve;
use crate::response::{FieldName, Head};

impl Responder {
    /// An error response for a request that could not be parsed or is refused: a small HTML
    /// body, `Content-Length`, and `Connection: close` when `close`. Without a parsed request
    /// the version is unknown, so `close == false` assumes HTTP/1.1 (see [`Responder::error_to`]).
    pub fn error<'o>(
        &mut self,
        status: u16,
        date: &[u8],
        close: bool,
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let conn = Persistence::close_if(close);
        self.pages
            .status_page(status, date, conn, false, &mut out.into())
    }

    /// The 400 that answers plain HTTP sent to a TLS port (then the connection closes); the
    /// transport sends it unencrypted.
    pub fn plain_http_on_tls(&mut self, date: &[u8], out: &mut Vec<u8>) -> Reply {
        let page = &self.pages.plain_http_on_tls;
        let out = &mut Output::Text(out);
        let alt_svc = self.pages.alt_svc.as_deref();
        page.write_head(&self.pages.server_name, alt_svc, date, out);
        out.end(Persistence::Close);
        out.body(&page.body);
        Reply {
            status: page.status,
            body_bytes: page.body.len() as u64,
            body: Body::None,
            close: true,
            head: Head::Written,
        }
    }

    /// An error response to a parsed request: honours its version, keep-alive and HEAD.
    pub fn error_to<'o>(
        &mut self,
        req: &Request<'_>,
        status: u16,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        let conn = Persistence::of(req);
        self.pages
            .status_page(status, date, conn, head_method, &mut out.into())
    }

    /// 302 to `req`'s target (a path of this server), for a program's local redirect the server
    /// will not follow itself: the client asks for it, with its own credentials. The `Location`
    /// is the path made normal and percent-encoded, with the query, as the directory redirect's:
    /// never the program's bytes, which a browser could read as another host (`//host/x`).
    pub(crate) fn found<'o>(
        &mut self,
        req: &Request<'_>,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        let conn = Persistence::of(req);
        let out: &mut Output<'_> = &mut out.into();
        let query = match resolve::normalise(req.target, &mut self.key) {
            Ok(query) => query,
            Err(refusal) => {
                let status = refusal.status();
                return self.pages.status_page(status, date, conn, head_method, out);
            }
        };
        let key = &self.key;
        page(&mut self.pages, 302, date, conn, head_method, out, |o| {
            o.field_with(FieldName::Location, |v| {
                push_encoded(v, key);
                v.extend_from_slice(query);
            })
        })
    }

    /// A request refused by authentication (`crate::auth`): 401 with its challenge, or 429
    /// with `Retry-After`.
    pub(crate) fn denied<'o>(
        &mut self,
        req: &Request<'_>,
        denial: &Denial,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        let (conn, status) = (Persistence::of(req), denial.status());
        let out: &mut Output<'_> = &mut out.into();
        page(
            &mut self.pages,
            status,
            date,
            conn,
            head_method,
            out,
            |o| match denial {
                Denial::Challenge(challenge) => o.field(FieldName::WwwAuthenticate, challenge),
                Denial::Limited(secs) => {
                    o.field_with(FieldName::RetryAfter, |v| push_u64(v, *secs))
                }
            },
        )
    }

    /// [`Responder::busy`] once the request's head is gone (its body was read before its
    /// program was to start): `close` ends the connection after it.
    pub fn busy_after_body<'o>(
        &mut self,
        close: bool,
        head_method: bool,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let conn = Persistence::close_if(close);
        self.retry_later(conn, head_method, date, out)
    }

    /// 503 with `Retry-After: 1`: every program slot is taken (`cgi_max_programs`).
    pub fn busy<'o>(
        &mut self,
        req: &Request<'_>,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        let head_method = req.method == Method::Head;
        self.retry_later(Persistence::of(req), head_method, date, out)
    }

    /// The 503 page of [`Responder::busy`] and [`Responder::busy_after_body`].
    fn retry_later<'o>(
        &mut self,
        conn: Persistence,
        head_method: bool,
        date: &[u8],
        out: impl Into<Output<'o>>,
    ) -> Reply {
        page(
            &mut self.pages,
            503,
            date,
            conn,
            head_method,
            &mut out.into(),
            |o| o.field(FieldName::RetryAfter, b"1"),
        )
    }
}

/// Error pages, built once per status (a flood of 404s copies, it does not format).
pub(super) struct ErrorPages {
    pub(super) server_line: Box<[u8]>,
    /// The `Server` field's value.
    pub(super) server_name: Box<[u8]>,
    /// The `Alt-Svc` field's value, when HTTP/3 is served.
    pub(super) alt_svc: Option<Box<[u8]>>,
    pages: Vec<Page>,
    /// The 400 for plain HTTP sent to the TLS port: its own words, as nginx gives them.
    plain_http_on_tls: Page,
}

struct Page {
    status: u16,
    status_line: Box<[u8]>,
    /// Server, Content-Type, Content-Length, as HTTP/1.1 lines.
    headers: Box<[u8]>,
    content_type: &'static [u8],
    /// The body's length in decimal, as fields carry it.
    length: Box<[u8]>,
    body: Box<[u8]>,
}

impl Page {
    /// The page's head but its extra fields and its end: its status, Date, Server,
    /// Content-Type, Content-Length (HTTP/1.1's prebuilt lines in one copy).
    fn write_head(
        &self,
        server_name: &[u8],
        alt_svc: Option<&[u8]>,
        date: &[u8],
        out: &mut Output<'_>,
    ) {
        out.start(&self.status_line, date);
        match out {
            Output::Text(out) => out.extend_from_slice(&self.headers),
            Output::Fields { head, .. } => {
                head.push(FieldName::Server, server_name);
                if let Some(alt_svc) = alt_svc {
                    head.push(FieldName::AltSvc, alt_svc);
                }
                head.push(FieldName::ContentType, self.content_type);
                head.push(FieldName::ContentLength, &self.length);
            }
        }
    }
}

impl ErrorPages {
    pub(super) fn new(server_name: &str, alt_svc: Option<&str>) -> ErrorPages {
        let mut server_line = format!("Server: {server_name}\r\n");
        if let Some(alt_svc) = alt_svc {
            server_line = format!("{server_line}Alt-Svc: {alt_svc}\r\n");
        }
        let body = b"The plain HTTP request was sent to HTTPS port\n";
        let headers = format!(
            "{server_line}Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
            body.len()
        );
        let mut pages = ErrorPages {
            plain_http_on_tls: Page {
                status: 400,
                status_line: b"HTTP/1.1 400 Bad Request\r\n".as_slice().into(),
                headers: headers.into_bytes().into(),
                content_type: b"text/plain; charset=utf-8",
                length: body.len().to_string().into_bytes().into(),
                body: body.as_slice().into(),
            },
            server_line: server_line.into_bytes().into(),
            server_name: server_name.as_bytes().into(),
            alt_svc: alt_svc.map(|v| v.as_bytes().into()),
            pages: Vec::with_capacity(24),
        };
        for status in [
            301, 400, 401, 404, 405, 408, 412, 413, 414, 416, 429, 431, 500, 501, 503, 505,
        ] {
            pages.index(status);
        }
        pages
    }

    /// Where the page of `status` is in `pages`, built the first time.
    fn index(&mut self, status: u16) -> usize {
        // Statuses outside 100..=599 are a caller's bug: answer 500 rather than panic.
        let status = if (100..=599).contains(&status) {
            status
        } else {
            500
        };
        if let Some(i) = self.pages.iter().position(|p| p.status == status) {
            return i;
        }
        let reason = wire::head::reason(status);
        let body = format!(
            "<html><head><title>{status} {reason}</title></head>\
             <body><h1>{status} {reason}</h1></body></html>\n"
        );
        let mut headers = self.server_line.to_vec();
        headers.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n");
        headers.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
        self.pages.push(Page {
            status,
            status_line: format!("HTTP/1.1 {status} {reason}\r\n")
                .into_bytes()
                .into(),
            headers: headers.into(),
            content_type: b"text/html; charset=utf-8",
            length: body.len().to_string().into_bytes().into(),
            body: body.into_bytes().into(),
        });
        self.pages.len() - 1
    }

    /// The page of `status` with no field beyond its own (see [`page`]).
    #[inline]
    pub(super) fn status_page(
        &mut self,
        status: u16,
        date: &[u8],
        conn: Persistence,
        head_method: bool,
        out: &mut Output<'_>,
    ) -> Reply {
        page(self, status, date, conn, head_method, out, |_| {})
    }
}

/// Writes an error (or redirect) page; `extra` adds fields.
pub(super) fn page(
    pages: &mut ErrorPages,
    status: u16,
    date: &[u8],
    conn: Persistence,
    head_method: bool,
    out: &mut Output<'_>,
    extra: impl FnOnce(&mut Output<'_>),
) -> Reply {
    let i = pages.index(status);
    let page = &pages.pages[i];
    page.write_head(&pages.server_name, pages.alt_svc.as_deref(), date, out);
    extra(out);
    out.end(conn);
    let body_bytes = if head_method {
        0
    } else {
        out.body(&page.body);
        page.body.len() as u64
    };
    Reply {
        status: page.status,
        body_bytes,
        body: Body::None,
        close: conn == Persistence::Close,
        head: Head::Written,
    }
}
