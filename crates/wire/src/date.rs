//! The `Date` header value, formatted at most once a second.
//!
//! Every response carries a `Date` (RFC 9110 6.6.1) but its text only changes once a second, so
//! the server keeps one `DateCache` per worker and formats only when the second has moved on,
//! into a fixed array: the per-response cost is one clock read and a compare.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const HTTP_DATE_LEN: usize = 29;
/// 9999-12-31T23:59:59Z: the last second an IMF-fixdate (four-digit year) can express.
const MAX_SECS: u64 = 253_402_300_799;

/// The current second's IMF-fixdate, re-formatted only when the second changes.
#[derive(Debug, Clone)]
pub struct DateCache {
    secs: u64,
    buf: [u8; HTTP_DATE_LEN],
    formats: u64,
}

impl Default for DateCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DateCache {
    /// A cache holding the current second's date, formatted once here.
    pub fn new() -> Self {
        let mut cache = DateCache {
            secs: 0,
            buf: [0; HTTP_DATE_LEN],
            formats: 0,
        };
        cache.format(now_secs());
        cache
    }

    /// The 29-byte IMF-fixdate of the current second.
    pub fn get(&mut self) -> &[u8] {
        self.get_at(now_secs())
    }

    /// The IMF-fixdate of `secs` since the Unix epoch, re-using the last one if it is the same
    /// second (the seam `get` goes through; tests drive it with fixed times).
    pub fn get_at(&mut self, secs: u64) -> &[u8] {
        let secs = secs.min(MAX_SECS);
        if secs != self.secs {
            self.format(secs);
        }
        &self.buf
    }

    /// How many times the date has been formatted (the cache's misses).
    pub fn formats(&self) -> u64 {
        self.formats
    }

    fn format(&mut self, secs: u64) {
        let date = httpdate::HttpDate::from(UNIX_EPOCH + Duration::from_secs(secs));
        let mut cursor = &mut self.buf[..];
        // An IMF-fixdate of a year <= 9999 is exactly 29 bytes, so this cannot fail.
        let _ = write!(cursor, "{date}");
        self.secs = secs;
        self.formats += 1;
    }
}

fn now_secs() -> u64 {
    // A clock before 1970 is a broken clock; 1970 is as good a date as any for it.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `t` as an IMF-fixdate (for Last-Modified and the like).
pub fn http_date(t: SystemTime) -> String {
    let t = t.clamp(UNIX_EPOCH, UNIX_EPOCH + Duration::from_secs(MAX_SECS));
    httpdate::fmt_http_date(t)
}

/// Parses any of the three HTTP date formats (If-Modified-Since); `None` if it is not one.
pub fn parse_http_date(s: &[u8]) -> Option<SystemTime> {
    httpdate::parse_http_date(std::str::from_utf8(s).ok()?).ok()
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31), proleptic Gregorian (H. Hinnant's
/// `civil_from_days`): for the date formats httpdate does not write (the access log's
/// timestamp, RFC 3339 in the JSON results), without a calendar crate.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_from_days_knows_leap_days_and_centuries() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        assert_eq!(
            civil_from_days((RFC_EXAMPLE / 86_400) as i64),
            (1994, 11, 6)
        );
    }

    /// The example date of RFC 9110: Sun, 06 Nov 1994 08:49:37 GMT.
    const RFC_EXAMPLE: u64 = 784_111_777;

    #[test]
    fn formats_an_imf_fixdate() {
        let mut cache = DateCache::new();
        assert_eq!(cache.get_at(RFC_EXAMPLE), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(cache.get().len(), HTTP_DATE_LEN);
    }

    #[test]
    fn same_second_is_not_reformatted() {
        let mut cache = DateCache::new();
        let first = cache.get_at(RFC_EXAMPLE).to_vec();
        let formats = cache.formats();
        assert_eq!(cache.get_at(RFC_EXAMPLE), &first[..]);
        assert_eq!(
            cache.formats(),
            formats,
            "a second call in the same second reformatted"
        );
        assert_eq!(
            cache.get_at(RFC_EXAMPLE + 1),
            b"Sun, 06 Nov 1994 08:49:38 GMT"
        );
        assert_eq!(cache.formats(), formats + 1);
    }

    #[test]
    fn get_tracks_the_clock() {
        let mut cache = DateCache::new();
        let before = now_secs();
        let got = parse_http_date(cache.get()).expect("cache output parses");
        let after = now_secs();
        let secs = got.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert!(
            (before..=after).contains(&secs),
            "{secs} not in {before}..={after}"
        );
    }

    #[test]
    fn dates_past_year_9999_are_clamped_not_a_panic() {
        let mut cache = DateCache::new();
        assert_eq!(cache.get_at(u64::MAX), b"Fri, 31 Dec 9999 23:59:59 GMT");
        let far = UNIX_EPOCH + Duration::from_secs(MAX_SECS + 1000);
        assert_eq!(http_date(far), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(
            http_date(UNIX_EPOCH - Duration::from_secs(5)),
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
    }

    #[test]
    fn http_dates_round_trip_and_junk_is_none() {
        let t = UNIX_EPOCH + Duration::from_secs(RFC_EXAMPLE);
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_http_date(http_date(t).as_bytes()), Some(t));
        // The two obsolete formats a recipient must accept (RFC 9110 5.6.7).
        assert_eq!(parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date(b"Sun Nov  6 08:49:37 1994"), Some(t));
        assert_eq!(parse_http_date(b"yesterday"), None);
        assert_eq!(parse_http_date(b"\xff\xfe"), None);
    }
}
