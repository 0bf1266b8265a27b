//! A Webchild's session: what its requests carry from one to the next. The data rows its page
//! drew, the values it extracted, its cookies (a jar per Webchild, as a browser per user:
//! `jar.rs`), its count
//! of requests and its number. Nothing here is shared between Webchildren, so a value one
//! extracted can never be sent by another.

use super::data::DataSet;
use super::jar::Jar;
use super::template::Values;
use std::sync::Arc;
use url::Url;

/// One Webchild's session.
pub struct Session {
    data: Arc<[DataSet]>,
    /// Per data set: the row this page drew, if it drew one.
    rows: Vec<Option<usize>>,
    /// Per slot: whether it holds a value, and its text. The text's buffer is kept when the
    /// value is cleared or replaced, so that a value extracted again and again (a token per
    /// page) is copied into it rather than allocated per response.
    values: Vec<(bool, String)>,
    cookies: Option<Jar>,
    rng: fastrand::Rng,
    seq: u64,
    webchild: u64,
}

impl Session {
    /// A session for Webchild `webchild` with `slots` extracted values; cookies kept unless
    /// `cookies` is false (`--no-cookies`).
    pub fn new(
        data: Arc<[DataSet]>,
        slots: usize,
        cookies: bool,
        webchild: u64,
        seed: u64,
    ) -> Session {
        Session {
            rows: vec![None; data.len()],
            data,
            values: vec![(false, String::new()); slots],
            cookies: cookies.then(Jar::default),
            rng: fastrand::Rng::with_seed(seed),
            seq: 0,
            webchild,
        }
    }

    /// A page starts: one row drawn from each data set in `uses`. `Err(set)` when a `unique`
    /// set has run out: the page is not fetched (`data_exhausted`).
    pub fn start_page(&mut self, uses: &[usize]) -> Result<(), usize> {
        for &set in uses {
            let row = self.data[set].draw(&mut self.rng).ok_or(set)?;
            self.rows[set] = Some(row);
        }
        Ok(())
    }

    /// Forgets extracted values and cookies (`--reset-session` at each page).
    pub fn reset(&mut self) {
        self.values.iter_mut().for_each(|(set, _)| *set = false);
        if let Some(jar) = self.cookies.as_mut() {
            jar.clear();
        }
    }

    /// A request is being sent (counted for `{{seq}}`).
    pub fn count_request(&mut self) {
        self.seq += 1;
    }

    /// Value `slot` is now `value` (copied into the slot's kept buffer).
    pub fn set_value(&mut self, slot: usize, value: &str) {
        let (set, text) = &mut self.values[slot];
        text.clear();
        text.push_str(value);
        *set = true;
    }

    /// Forgets value `slot` (its extraction failed): a request needing it is not sent.
    pub fn clear_value(&mut self, slot: usize) {
        self.values[slot].0 = false;
    }

    /// Keeps the `Set-Cookie` fields of a response to `url`.
    pub fn store_cookies<'a>(&mut self, url: &Url, set_cookies: impl Iterator<Item = &'a [u8]>) {
        let Some(jar) = self.cookies.as_mut() else {
            return;
        };
        for v in set_cookies {
            jar.store(v, url);
        }
    }

    /// Whether the jar holds a cookie: without one no request carries a `Cookie` field, and the
    /// URL a request goes to need not be worked out for the jar's rules.
    pub fn has_cookies(&self) -> bool {
        self.cookies.as_ref().is_some_and(|jar| !jar.is_empty())
    }

    /// The `Cookie` field's value for a request to `url` (appended to `out`), or false when
    /// the jar holds none for it.
    pub fn cookie_header(&self, url: &Url, out: &mut Vec<u8>) -> bool {
        self.cookies
            .as_ref()
            .is_some_and(|jar| jar.header(url, out))
    }
}

impl Values for Session {
    fn column(&self, data: usize, column: usize) -> Option<&str> {
        let row = self.rows[data]?;
        Some(self.data[data].field(row, column))
    }

    fn value(&self, slot: usize) -> Option<&str> {
        let (set, text) = &self.values[slot];
        set.then_some(text.as_str())
    }

    fn random(&mut self, low: u64, high: u64) -> u64 {
        self.rng.u64(low..=high)
    }

    fn seq(&self) -> u64 {
        self.seq
    }

    fn webchild(&self) -> u64 {
        self.webchild
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::data::Pick;

    fn data() -> Arc<[DataSet]> {
        let users = DataSet::read(
            "users",
            "users.csv",
            &b"id,name\n1,Ann\n2,Bo\n"[..],
            Pick::Unique,
        )
        .unwrap();
        Arc::from(vec![users])
    }

    #[test]
    fn a_page_draws_its_rows_and_a_unique_set_runs_out() {
        let mut s = Session::new(data(), 1, true, 3, 1);
        assert_eq!(s.column(0, 1), None, "no row before a page");
        s.start_page(&[0]).unwrap();
        assert_eq!(s.column(0, 1), Some("Ann"));
        s.start_page(&[0]).unwrap();
        assert_eq!(s.column(0, 1), Some("Bo"));
        assert_eq!(s.start_page(&[0]), Err(0));
        assert_eq!(s.webchild(), 3);
    }

    #[test]
    fn cookies_follow_domain_path_and_secure_and_reset_forgets_them() {
        let mut s = Session::new(data(), 1, true, 0, 1);
        assert!(!s.has_cookies());
        let http = Url::parse("http://app.test/login").unwrap();
        let set: [&[u8]; 3] = [
            b"sid=42; Path=/; HttpOnly",
            b"cart=9; Path=/shop",
            b"tok=x; Secure",
        ];
        s.store_cookies(&http, set.into_iter());
        assert!(s.has_cookies());
        let mut out = Vec::new();
        assert!(s.cookie_header(&Url::parse("http://app.test/account").unwrap(), &mut out));
        assert_eq!(
            out, b"sid=42",
            "not /shop's, not the Secure one over cleartext"
        );
        out.clear();
        s.cookie_header(&Url::parse("http://app.test/shop/cart").unwrap(), &mut out);
        let mut got: Vec<&[u8]> = out.split(|&b| b == b';').map(<[u8]>::trim_ascii).collect();
        got.sort();
        assert_eq!(got, [&b"cart=9"[..], b"sid=42"]);
        out.clear();
        assert!(!s.cookie_header(&Url::parse("http://other.test/").unwrap(), &mut out));
        s.set_value(0, "v");
        s.reset();
        assert_eq!(s.value(0), None);
        assert!(!s.cookie_header(&http, &mut out));
        assert!(!s.has_cookies(), "reset empties the jar");
        let off = Session::new(data(), 0, false, 0, 1);
        assert!(!off.cookie_header(&http, &mut out), "--no-cookies");
        assert!(!off.has_cookies());
    }
}
