//! What an application workload makes of a complete response: its head and body kept as they
//! arrive, then the verdict: the cookies kept, the checks held, the values extracted (a failed
//! one forgets the file's values). A redirect that is followed only has its cookies kept.

use super::head_fields::sets_cookie;
use super::{set_path, AppExchange};
use crate::app::check::Answer;
use crate::app::fields::Fields;
use crate::app::plan::MAX_KEPT_BODY;
use crate::app::session::Session;
use crate::client::exchange::Verdict;
use crate::stats::check_failures::{self, CheckFailure};
use crate::stats::{ErrorKind, Stats};

/// A complete response as its connection kept it, for [`AppExchange::judge_kept`].
pub(in crate::client) struct Kept<'a> {
    /// A status line, then the header fields as `name: value` lines.
    pub head: &'a [u8],
    /// The body, when a check or an extraction reads it (else empty).
    pub body: &'a [u8],
    /// The body was longer than [`MAX_KEPT_BODY`]: not kept.
    pub too_large: bool,
    /// The path the request went to (the cookie jar's rules need it).
    pub path: &'a [u8],
}

impl AppExchange {
    /// A response's head for URL `url`: kept (cookies, checks), its body kept when read.
    pub(in crate::client) fn on_head(&mut self, head: &[u8], url: usize) {
        self.head.clear();
        self.head.extend_from_slice(head);
        self.body.clear();
        self.too_large = false;
        self.keep_body = self.file(url).is_some_and(|f| f.needs_body);
    }

    /// A run of the body's bytes (decoded).
    pub(in crate::client) fn on_payload(&mut self, bytes: &[u8]) {
        if self.keep_body {
            keep_body_bytes(&mut self.body, &mut self.too_large, bytes);
        }
    }

    /// The complete response to file `file` of the page, URL `url` (`shown` in samples), as
    /// this connection kept it ([`AppExchange::judge_kept`]); a redirect that `follows` only
    /// has its cookies kept ([`AppExchange::redirected`]).
    pub(in crate::client) fn judge(
        &mut self,
        (file, url, shown): (usize, usize, &str),
        (status, follows): (u16, Option<bool>),
        stats: &mut Stats,
        counted: bool,
    ) -> Verdict {
        // Taken out for the call and put back: the buffers keep their room.
        let (head, body, out) = (
            std::mem::take(&mut self.head),
            std::mem::take(&mut self.body),
            std::mem::take(&mut self.out),
        );
        let k = file.saturating_sub(self.first);
        let path = self.paths.get(k).and_then(|r| out.get(r.clone()));
        let kept = Kept {
            head: &head,
            body: &body,
            too_large: self.too_large,
            path: path.unwrap_or(b"/"),
        };
        let verdict = match follows {
            Some(get) => {
                let body = self.bodies.get(k).and_then(|r| out.get(r.clone()));
                self.keep_sent_body((file, url), body.unwrap_or_default(), get);
                self.redirected(&kept);
                Verdict::ByStatus
            }
            None => self.judge_kept((url, shown), status, kept, stats, counted),
        };
        (self.head, self.body, self.out) = (head, body, out);
        verdict
    }

    /// A redirect that is followed: its cookies are kept, as a browser keeps them (they apply
    /// to the request it leads to: RFC 6265); the checks and extractions are the final
    /// response's.
    pub(in crate::client) fn redirected(&mut self, kept: &Kept<'_>) {
        if !self.plan.options.cookies || !sets_cookie(kept.head) {
            return;
        }
        keep_cookies(self, Fields::of_head(kept.head), kept.path);
    }

    /// A complete response to URL `url` (`shown` in samples): its cookies kept, its checks
    /// held, its values extracted. The verdict counts once for the response; a failure of the
    /// window (`counted`) may be kept as a sample.
    pub(in crate::client) fn judge_kept(
        &mut self,
        (url, shown): (usize, &str),
        status: u16,
        kept: Kept<'_>,
        stats: &mut Stats,
        counted: bool,
    ) -> Verdict {
        // The head's fields are walked in its text by what reads them (every field, however
        // many: nothing splits them into a room of a fixed size); the jar (unless
        // `--no-cookies`) walks them only when the head sets a cookie, which one look finds.
        let headers = Fields::of_head(kept.head);
        if self.plan.options.cookies && sets_cookie(kept.head) {
            keep_cookies(self, headers, kept.path);
        }
        let Some(file) = self.plan.files.get(url).and_then(Option::as_ref) else {
            return Verdict::ByStatus;
        };
        let answer = Answer {
            status,
            headers,
            body: kept.body,
        };
        let sample = |kind: ErrorKind, detail: String| {
            let head = kept.head;
            move || CheckFailure {
                kind: kind.name().to_owned(),
                url: shown.to_owned(),
                detail,
                head: String::from_utf8_lossy(head).trim_end().to_owned(),
            }
        };
        let fail = |kind: ErrorKind, detail: String, stats: &mut Stats| {
            if counted {
                check_failures::keep(&mut stats.check_failures, sample(kind, detail));
            }
            Verdict::Failed(kind)
        };
        // A response that fails leaves none of the file's values behind: the values an earlier
        // response gave belong to a session the server may have ended (a login that now fails),
        // so a request that needs them is not sent (`missing_value_unsent`) rather than sent
        // with a stale one.
        let forget = |session: &mut Session| {
            for x in &file.extract {
                session.clear_value(x.slot);
            }
        };
        if kept.too_large && file.needs_body {
            forget(&mut self.session);
            let detail =
                format!("a body over {MAX_KEPT_BODY} B, which a check or an extraction reads");
            return fail(ErrorKind::BodyTooLarge, detail, stats);
        }
        let mut verdict = Verdict::ByStatus;
        if let Some(expect) = &file.expect {
            if let Err(f) = expect.check(&answer, &mut self.session, &mut self.scratch) {
                forget(&mut self.session);
                return fail(f.kind.into(), f.detail, stats);
            }
            if expect.decides_status() {
                verdict = Verdict::Passed;
            }
        }
        for (x, room) in file.extract.iter().zip(&mut self.rooms[url]) {
            match x.take(&answer, room) {
                Some(v) => self.session.set_value(x.slot, &v),
                None => {
                    forget(&mut self.session);
                    let detail = x.missing(&answer, room);
                    return fail(ErrorKind::ExtractMissing, detail, stats);
                }
            }
        }
        verdict
    }
}

/// Adds `bytes` to a kept response body, or, past [`MAX_KEPT_BODY`], lets the body go and
/// marks it too large (its checks then say so); nothing more is kept once it is.
pub(super) fn keep_body_bytes(body: &mut Vec<u8>, too_large: &mut bool, bytes: &[u8]) {
    if *too_large {
        return;
    }
    if body.len() + bytes.len() > MAX_KEPT_BODY {
        *too_large = true;
        body.clear();
    } else {
        body.extend_from_slice(bytes);
    }
}

/// Keeps the `Set-Cookie` fields among `headers` of a response to a request for `path`.
fn keep_cookies(app: &mut AppExchange, headers: Fields<'_>, path: &[u8]) {
    let mut set_cookies = headers.all(b"set-cookie").peekable();
    if set_cookies.peek().is_some() {
        // The jar's rules need the path the request went to.
        set_path(
            &mut app.cookie_url,
            std::str::from_utf8(path).unwrap_or("/"),
        );
        app.session.store_cookies(&app.cookie_url, set_cookies);
    }
}
