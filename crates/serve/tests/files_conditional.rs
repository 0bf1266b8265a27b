//! Conditional requests (304 from the cache, without touching the file) and ranges (206, 416).

mod files_support;

use files_support::Site;

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
