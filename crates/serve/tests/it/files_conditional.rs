//! Conditional requests (304 and 412 from the cache, without touching the file, in RFC 9110
//! section 13.2.2's order) and ranges (206, 416).

use std::time::{Duration, SystemTime};

use crate::files_support::Site;

const BODY: &[u8] = b"0123456789abcdefghij";

fn site() -> Site {
    Site::new(&[("f.txt", BODY)])
}

#[test]
fn if_none_match_gets_304_without_open_or_stat() {
    let mut site = site();
    let first = site.get("/f.txt", &[]);
    let etag = first.header("ETag").unwrap().to_string();
    let before = site.responder.counters();
    for header in [
        format!("If-None-Match: {etag}"),
        format!("If-None-Match: \"other\", W/{etag}"),
        "If-None-Match: *".to_string(),
    ] {
        let r = site.get("/f.txt", &[&header]);
        assert_eq!(r.status, 304, "{header}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("ETag"), Some(etag.as_str()));
        assert_eq!(r.header("Last-Modified"), first.header("Last-Modified"));
        assert!(!r.has("Content-Length"));
    }
    let after = site.responder.counters();
    assert_eq!(after.opens, before.opens, "a 304 opens nothing");
    assert_eq!(after.stats, before.stats, "a 304 stats nothing");
    assert_eq!(after.hits, before.hits + 3);
}

#[test]
fn if_modified_since_gets_304_without_open_or_stat() {
    let mut site = site();
    let first = site.get("/f.txt", &[]);
    let lm = first.header("Last-Modified").unwrap().to_string();
    let before = site.responder.counters();
    let r = site.get("/f.txt", &[&format!("If-Modified-Since: {lm}")]);
    assert_eq!(r.status, 304);
    let r = site.method("HEAD", "/f.txt", &[&format!("If-Modified-Since: {lm}")]);
    assert_eq!(r.status, 304);
    let after = site.responder.counters();
    assert_eq!((after.opens, after.stats), (before.opens, before.stats));
    // An older date: modified since, so 200.
    let r = site.get(
        "/f.txt",
        &["If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT"],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, BODY);
}

#[test]
fn if_none_match_takes_precedence_over_if_modified_since() {
    let mut site = site();
    let lm = site
        .get("/f.txt", &[])
        .header("Last-Modified")
        .unwrap()
        .to_string();
    let r = site.get(
        "/f.txt",
        &[
            "If-None-Match: \"stale\"",
            &format!("If-Modified-Since: {lm}"),
        ],
    );
    assert_eq!(
        r.status, 200,
        "a failed If-None-Match ignores If-Modified-Since"
    );
}

#[test]
fn single_range_gets_206_with_content_range() {
    let mut site = site();
    let r = site.get("/f.txt", &["Range: bytes=2-5"]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body, b"2345");
    assert_eq!(r.header("Content-Range"), Some("bytes 2-5/20"));
    assert_eq!(r.header("Content-Length"), Some("4"));
    let r = site.get("/f.txt", &["Range: bytes=15-"]);
    assert_eq!((r.status, r.body.as_slice()), (206, &b"fghij"[..]));
    let r = site.get("/f.txt", &["Range: bytes=-3"]);
    assert_eq!((r.status, r.body.as_slice()), (206, &b"hij"[..]));
    assert_eq!(r.header("Content-Range"), Some("bytes 17-19/20"));
}

#[test]
fn range_past_the_end_gets_416() {
    let mut site = site();
    for range in ["bytes=20-", "bytes=100-200", "bytes=-0"] {
        let r = site.get("/f.txt", &[&format!("Range: {range}")]);
        assert_eq!(r.status, 416, "{range}");
        assert_eq!(r.header("Content-Range"), Some("bytes */20"));
    }
}

#[test]
fn multiple_or_garbage_ranges_are_ignored() {
    let mut site = site();
    for range in ["bytes=0-1,5-6", "bytes=5-2", "lines=1-2", "bytes=x"] {
        let r = site.get("/f.txt", &[&format!("Range: {range}")]);
        assert_eq!(r.status, 200, "{range}");
        assert_eq!(r.body, BODY);
    }
    // HEAD has no ranges.
    assert_eq!(
        site.method("HEAD", "/f.txt", &["Range: bytes=0-1"]).status,
        200
    );
}

#[test]
fn if_range_honours_the_range_only_for_the_current_validator() {
    let mut site = site();
    let first = site.get("/f.txt", &[]);
    let etag = first.header("ETag").unwrap().to_string();
    let lm = first.header("Last-Modified").unwrap().to_string();
    let r = site.get(
        "/f.txt",
        &["Range: bytes=0-1", &format!("If-Range: {etag}")],
    );
    assert_eq!((r.status, r.body.as_slice()), (206, &b"01"[..]));
    let r = site.get("/f.txt", &["Range: bytes=0-1", &format!("If-Range: {lm}")]);
    assert_eq!(r.status, 206);
    let r = site.get("/f.txt", &["Range: bytes=0-1", "If-Range: \"old\""]);
    assert_eq!((r.status, r.body.as_slice()), (200, BODY));
    let r = site.get(
        "/f.txt",
        &["Range: bytes=0-1", &format!("If-Range: W/{etag}")],
    );
    assert_eq!(r.status, 200, "a weak tag never matches If-Range");
}

#[test]
fn ranges_of_large_files_go_by_file_with_an_offset() {
    let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let mut site = Site::with(&[("big.bin", &data)], |c| c.cache_max_file = 10_000);
    let r = site.get("/big.bin", &["Range: bytes=40000-40009"]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body_kind, "file");
    assert_eq!(r.body, &data[40_000..40_010]);
    let r = site.get("/big.bin", &["Range: bytes=-30000"]);
    assert_eq!(r.body, &data[20_000..]);
}

/// A date long before any file of the test was written.
const PAST: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

fn etag_and_date(site: &mut Site) -> (String, String) {
    let r = site.get("/f.txt", &[]);
    (
        r.header("ETag").unwrap().to_string(),
        r.header("Last-Modified").unwrap().to_string(),
    )
}

#[test]
fn if_match_needs_a_strong_match_or_star() {
    let mut site = site();
    let (etag, _) = etag_and_date(&mut site);
    for (header, status) in [
        ("If-Match: \"nope\"".to_string(), 412),
        (format!("If-Match: {etag}"), 200),
        (format!("If-Match: \"a\", {etag}"), 200),
        ("If-Match: *".to_string(), 200),
        (format!("If-Match: W/{etag}"), 412),
        // Not a list of tags: nothing matches, so 412 rather than a guess.
        ("If-Match: nope".to_string(), 412),
        (format!("If-Match: {}", etag.trim_matches('"')), 412),
    ] {
        let r = site.get("/f.txt", &[&header]);
        assert_eq!(r.status, status, "{header}");
        if status == 412 {
            assert!(!r.has("ETag"), "a 412 is an error page: {header}");
            assert_ne!(r.body, BODY);
        } else {
            assert_eq!(r.body, BODY, "{header}");
        }
    }
    let head = site.method("HEAD", "/f.txt", &["If-Match: \"nope\""]);
    assert_eq!((head.status, head.body.len()), (412, 0));
}

#[test]
fn several_if_match_and_if_none_match_lines_are_one_list() {
    let mut site = site();
    let (etag, _) = etag_and_date(&mut site);
    let r = site.get(
        "/f.txt",
        &["If-Match: \"a\"", &format!("If-Match: \"b\", {etag}")],
    );
    assert_eq!(r.status, 200);
    let r = site.get("/f.txt", &["If-Match: \"a\"", "If-Match: \"b\""]);
    assert_eq!(r.status, 412);
    let r = site.get(
        "/f.txt",
        &["If-None-Match: \"a\"", &format!("If-None-Match: {etag}")],
    );
    assert_eq!(r.status, 304);
    let r = site.get("/f.txt", &["If-None-Match: \"a\"", "If-None-Match: \"b\""]);
    assert_eq!(r.status, 200);
}

#[test]
fn if_unmodified_since_in_the_past_fails_also_for_a_range() {
    let mut site = site();
    let (_, lm) = etag_and_date(&mut site);
    let ius = |d: &str| format!("If-Unmodified-Since: {d}");
    let r = site.get("/f.txt", &[&ius(PAST)]);
    assert_eq!(r.status, 412);
    let r = site.get("/f.txt", &["Range: bytes=0-1", &ius(PAST)]);
    assert_eq!(r.status, 412, "a range of a file changed since is refused");
    let r = site.get("/f.txt", &["Range: bytes=0-1", &ius(&lm)]);
    assert_eq!((r.status, r.body.as_slice()), (206, &b"01"[..]));
    let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
    assert_eq!(site.get("/f.txt", &[&ius(&later)]).status, 200);
    // Not a date: ignored (RFC 9110 13.1.4).
    assert_eq!(site.get("/f.txt", &[&ius("yesterday")]).status, 200);
    // With If-Match present, If-Unmodified-Since is not evaluated.
    let r = site.get("/f.txt", &["If-Match: *", &ius(PAST)]);
    assert_eq!(r.status, 200);
}

#[test]
fn preconditions_are_evaluated_in_rfc_order() {
    let mut site = site();
    let (etag, lm) = etag_and_date(&mut site);
    let inm = format!("If-None-Match: {etag}");
    let ims = format!("If-Modified-Since: {lm}");
    let cases: &[(&[&str], u16)] = &[
        // A failed If-Match decides before a matching If-None-Match.
        (&["If-Match: \"nope\"", &inm], 412),
        // A failed If-Unmodified-Since decides before If-Modified-Since.
        (&[&format!("If-Unmodified-Since: {PAST}"), &ims], 412),
        // If-Match passes, If-None-Match matches: 304.
        (&["If-Match: *", &inm], 304),
        // If-None-Match present and not matching: If-Modified-Since is ignored.
        (&["If-None-Match: \"a\"", &ims], 200),
        // A 304 wins over the range.
        (&[&inm, "Range: bytes=0-1"], 304),
        // If-Range with another tag: the range is ignored.
        (&["If-Match: *", "Range: bytes=0-1", "If-Range: \"a\""], 200),
        (
            &[
                "If-Match: *",
                "Range: bytes=0-1",
                &format!("If-Range: {etag}"),
            ],
            206,
        ),
    ];
    for (headers, status) in cases {
        assert_eq!(site.get("/f.txt", headers).status, *status, "{headers:?}");
    }
}

#[test]
fn a_412_opens_and_stats_nothing() {
    let mut site = site();
    site.get("/f.txt", &[]);
    let before = site.responder.counters();
    assert_eq!(site.get("/f.txt", &["If-Match: \"nope\""]).status, 412);
    let r = site.get("/f.txt", &[&format!("If-Unmodified-Since: {PAST}")]);
    assert_eq!(r.status, 412);
    let after = site.responder.counters();
    assert_eq!((after.opens, after.stats), (before.opens, before.stats));
    assert_eq!(after.hits, before.hits + 2);
}

#[test]
fn preconditions_do_not_turn_a_404_into_a_412() {
    let mut site = site();
    let r = site.get("/missing.txt", &["If-Match: *"]);
    assert_eq!(r.status, 404);
}
