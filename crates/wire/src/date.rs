//! The `Date` header value, formatted at most once a second.
//!
//! CONTRACT (implement; keep the signatures): `DateCache::new()`, `DateCache::get(&mut self) -> &[u8]`
//! returns the 29-byte IMF-fixdate of the current second (`Sun, 06 Nov 1994 08:49:37 GMT`),
//! re-formatting only when the second has changed. `http_date(SystemTime) -> String` and
//! `parse_http_date(&[u8]) -> Option<SystemTime>` (via the `httpdate` crate).
