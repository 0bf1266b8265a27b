//! The cache: digests once per version, changes seen after the revalidation window,
//! Greedy-Dual-Size under a small budget, precompressed siblings.

use std::time::{Duration, Instant};

use crate::files_support::Site;
use base64::Engine as _;
use sha2::Digest as _;

fn sha256_b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(data))
}

#[test]
fn digests_are_the_md5_and_sha256_of_the_body() {
    let mut site = Site::with(&[("hello.txt", b"hello")], |c| c.digest = true);
    let r = site.get("/hello.txt", &[]);
    assert_eq!(r.header("Content-MD5"), Some("XUFAKrxLKna5cZ2REBfFkg=="));
    let expected = format!("sha-256=:{}:", sha256_b64(b"hello"));
    assert_eq!(r.header("Repr-Digest"), Some(expected.as_str()));
}

#[test]
fn digest_is_computed_once_per_file_version() {
    let large = vec![7u8; 100_000];
    let mut site = Site::with(&[("small", b"hello"), ("large", &large)], |c| {
        c.digest = true;
        c.cache_max_file = 10_000;
    });
    for _ in 0..50 {
        assert_eq!(site.get("/small", &[]).status, 200);
        let r = site.get("/large", &[]);
        assert_eq!(r.body, large);
        let expected = format!("sha-256=:{}:", sha256_b64(&large));
        assert_eq!(r.header("Repr-Digest"), Some(expected.as_str()));
    }
    assert_eq!(site.responder.counters().digests_computed, 2);
    // A new version is hashed once more, on the first request after the window.
    std::fs::write(site.root().join("small"), b"hello, again").unwrap();
    let later = Instant::now() + Duration::from_secs(61);
    for _ in 0..5 {
        let r = site.raw_at(b"GET /small HTTP/1.1\r\nHost: h\r\n\r\n", later);
        assert_eq!(r.body, b"hello, again");
    }
    assert_eq!(site.responder.counters().digests_computed, 3);
}

#[test]
fn partial_content_carries_repr_digest_but_not_content_md5() {
    let mut site = Site::with(&[("hello.txt", b"hello")], |c| c.digest = true);
    let r = site.get("/hello.txt", &["Range: bytes=0-1"]);
    assert_eq!(r.status, 206);
    assert!(
        !r.has("Content-MD5"),
        "Content-MD5 would describe the whole body"
    );
    let expected = format!("sha-256=:{}:", sha256_b64(b"hello"));
    assert_eq!(r.header("Repr-Digest"), Some(expected.as_str()));
}

#[test]
fn change_on_disk_is_seen_after_the_revalidation_window_not_before() {
    // Default window, 1 s; time is passed in, so no sleeping.
    let mut site = Site::with(&[("a.txt", b"one")], |c| c.revalidate_ms = 1000);
    let t0 = Instant::now();
    let get =
        |site: &mut Site, t: Instant| site.raw_at(b"GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n", t);
    let first = get(&mut site, t0);
    std::fs::write(site.root().join("a.txt"), b"two, longer").unwrap();
    let stats = site.responder.counters().stats;
    let inside = get(&mut site, t0 + Duration::from_millis(900));
    assert_eq!(inside.body, b"one", "trusted inside the window");
    assert_eq!(
        site.responder.counters().stats,
        stats,
        "no stat inside the window"
    );
    let after = get(&mut site, t0 + Duration::from_millis(1000));
    assert_eq!(after.body, b"two, longer");
    assert_ne!(after.header("ETag"), first.header("ETag"));
    let c = site.responder.counters();
    assert_eq!((c.revalidations, c.changed), (1, 1));
}

#[test]
fn change_on_disk_is_seen_within_a_short_window_in_real_time() {
    let mut site = Site::with(&[("a.txt", b"one")], |c| c.revalidate_ms = 50);
    assert_eq!(site.get("/a.txt", &[]).body, b"one");
    std::fs::write(site.root().join("a.txt"), b"two, longer").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if site.get("/a.txt", &[]).body == b"two, longer" {
            break;
        }
        assert!(Instant::now() < deadline, "change not seen within 5 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn unchanged_file_costs_one_stat_per_window_and_no_open() {
    let mut site = Site::with(&[("a.txt", b"one")], |c| {
        c.revalidate_ms = 1000;
        c.precompressed = false;
    });
    let t0 = Instant::now();
    site.raw_at(b"GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n", t0);
    let before = site.responder.counters();
    for i in 1..=30u64 {
        let t = t0 + Duration::from_millis(100 * i);
        assert_eq!(
            site.raw_at(b"GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n", t)
                .body,
            b"one"
        );
    }
    let after = site.responder.counters();
    assert_eq!(after.opens, before.opens);
    assert_eq!(
        after.stats - before.stats,
        3,
        "one stat per second over 3 s"
    );
}

#[test]
fn deleted_file_becomes_404_after_the_window() {
    let mut site = Site::new(&[("a.txt", b"one")]);
    assert_eq!(site.get("/a.txt", &[]).status, 200);
    std::fs::remove_file(site.root().join("a.txt")).unwrap();
    let later = Instant::now() + Duration::from_secs(61);
    let r = site.raw_at(b"GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n", later);
    assert_eq!(r.status, 404);
    assert_eq!(site.responder.counters().entries, 0);
}

#[test]
fn gds_evicts_a_big_cold_file_before_small_hot_ones() {
    let big = vec![b'B'; 8000];
    let (a, b, c) = (vec![b'a'; 1000], vec![b'b'; 1000], vec![b'c'; 1500]);
    let mut site = Site::with(&[("big", &big), ("a", &a), ("b", &b), ("c", &c)], |cfg| {
        cfg.cache_bytes = 10_000;
        cfg.cache_max_file = 10_000;
    });
    assert_eq!(site.get("/big", &[]).body, big);
    for _ in 0..10 {
        assert_eq!(site.get("/a", &[]).body, a);
        assert_eq!(site.get("/b", &[]).body, b);
    }
    assert_eq!(site.get("/c", &[]).body, c); // 11,500 > 10,000: one body goes
    let after = site.responder.counters();
    assert_eq!(after.evictions, 1);
    assert_eq!(after.body_bytes, 3500, "big went, the hot ones stayed");
    for _ in 0..5 {
        site.get("/a", &[]);
        site.get("/b", &[]);
        site.get("/c", &[]);
    }
    assert_eq!(site.responder.counters().body_loads, after.body_loads);
    assert_eq!(
        site.get("/big", &[]).body,
        big,
        "an evicted body is read again"
    );
    assert!(site.responder.counters().body_bytes <= 10_000);
}

fn precompressed_site(tune: impl FnOnce(&mut serve::Config)) -> Site {
    Site::with(
        &[
            ("app.js", b"identity body"),
            ("app.js.gz", b"gzip body"),
            ("app.js.br", b"br body"),
            ("only-gz.css", b"css"),
            ("only-gz.css.gz", b"css gz"),
            ("plain.txt", b"plain"),
        ],
        tune,
    )
}

#[test]
fn precompressed_sibling_is_chosen_by_accept_encoding() {
    let mut site = precompressed_site(|_| {});
    let cases: [(&[&str], &[u8], Option<&str>); 6] = [
        (&[], b"identity body", None),
        (&["Accept-Encoding: gzip"], b"gzip body", Some("gzip")),
        (
            &["Accept-Encoding: gzip, deflate, br"],
            b"br body",
            Some("br"),
        ),
        (
            &["Accept-Encoding: br;q=0.5, gzip"],
            b"gzip body",
            Some("gzip"),
        ),
        (&["Accept-Encoding: identity;q=0"], b"identity body", None),
        (&["Accept-Encoding: deflate"], b"identity body", None),
    ];
    let mut etags = std::collections::HashSet::new();
    for (headers, body, encoding) in cases {
        let r = site.get("/app.js", headers);
        assert_eq!(r.status, 200);
        assert_eq!(r.body, body, "{headers:?}");
        assert_eq!(r.header("Content-Encoding"), encoding, "{headers:?}");
        assert_eq!(
            r.header("Content-Type"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
        etags.insert(r.header("ETag").unwrap().to_string());
    }
    assert_eq!(etags.len(), 3, "a distinct ETag per encoding");
    let r = site.get("/only-gz.css", &["Accept-Encoding: br, gzip"]);
    assert_eq!(
        (r.body.as_slice(), r.header("Content-Encoding")),
        (&b"css gz"[..], Some("gzip"))
    );
    let r = site.get("/plain.txt", &["Accept-Encoding: br, gzip"]);
    assert!(!r.has("Vary") && !r.has("Content-Encoding"));
    let r = site.get("/app.js.gz", &[]);
    assert_eq!(r.header("Content-Type"), Some("application/gzip"));
    assert!(!r.has("Content-Encoding"));
}

#[test]
fn not_modified_is_per_encoding_and_keeps_vary() {
    let mut site = precompressed_site(|_| {});
    let gz = site.get("/app.js", &["Accept-Encoding: gzip"]);
    let gz_tag = gz.header("ETag").unwrap().to_string();
    let r = site.get(
        "/app.js",
        &["Accept-Encoding: gzip", &format!("If-None-Match: {gz_tag}")],
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
    let r = site.get("/app.js", &[&format!("If-None-Match: {gz_tag}")]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"identity body"[..]));
}

#[test]
fn precompressed_siblings_are_ignored_when_disabled() {
    let mut site = precompressed_site(|c| c.precompressed = false);
    let r = site.get("/app.js", &["Accept-Encoding: gzip, br"]);
    assert_eq!(r.body, b"identity body");
    assert!(!r.has("Vary") && !r.has("Content-Encoding"));
}

#[test]
fn sibling_appearing_later_is_seen_after_the_window() {
    let mut site = Site::new(&[("a.js", b"plain")]);
    let ae = b"GET /a.js HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n";
    let t0 = Instant::now();
    assert_eq!(site.raw_at(ae, t0).body, b"plain");
    std::fs::write(site.root().join("a.js.gz"), b"zipped").unwrap();
    let r = site.raw_at(ae, t0 + Duration::from_secs(61));
    assert_eq!(r.body, b"zipped");
    assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
}

#[test]
fn digests_describe_the_selected_representation() {
    let mut site = precompressed_site(|c| c.digest = true);
    let r = site.get("/app.js", &["Accept-Encoding: gzip"]);
    let expected = format!("sha-256=:{}:", sha256_b64(b"gzip body"));
    assert_eq!(r.header("Repr-Digest"), Some(expected.as_str()));
    let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(b"gzip body"));
    assert_eq!(r.header("Content-MD5"), Some(md5.as_str()));
}

#[test]
fn only_the_changed_representation_is_hashed_again() {
    let mut site = precompressed_site(|c| c.digest = true);
    site.get("/app.js", &[]);
    site.get("/app.js", &["Accept-Encoding: gzip"]);
    assert_eq!(
        site.responder.counters().digests_computed,
        3,
        "app.js, .gz, .br"
    );
    std::fs::write(site.root().join("app.js.gz"), b"new gzip body").unwrap();
    let later = Instant::now() + Duration::from_secs(61);
    let r = site.raw_at(
        b"GET /app.js HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n",
        later,
    );
    assert_eq!(r.body, b"new gzip body");
    assert_eq!(site.responder.counters().digests_computed, 4);
}
