//! Nothing outside the root, ever: dot-segments raw and encoded, encoded separators, NUL,
//! symlinks leading out (also when swapped after caching), absolute-form targets.

use std::os::unix::fs::symlink;

use crate::files_support::Site;

const SECRET: &[u8] = b"TOP SECRET";

/// root/ with public files and links, and secret.txt next to (outside) the root.
fn site_with(tune: impl FnOnce(&mut serve::Config)) -> Site {
    let site = Site::with(
        &[
            ("public.txt", b"public"),
            ("sub/inner.txt", b"inner"),
            (".well-known/security.txt", b"contact"),
        ],
        tune,
    );
    let outside = site.dir.path();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    let root = site.root();
    symlink(outside.join("secret.txt"), root.join("link_out")).unwrap();
    symlink("../secret.txt", root.join("relative_out")).unwrap();
    symlink(outside, root.join("dir_out")).unwrap();
    symlink("public.txt", root.join("link_in")).unwrap();
    symlink("sub", root.join("sub_link")).unwrap();
    site
}

fn site() -> Site {
    site_with(|_| {})
}

fn assert_refused(site: &mut Site, target: &str, status: u16) {
    let r = site.get(target, &[]);
    assert_eq!(r.status, status, "{target}");
    assert!(
        !r.body.windows(SECRET.len()).any(|w| w == SECRET),
        "{target} leaked the secret"
    );
}

#[test]
fn dotdot_cannot_escape_root() {
    let mut site = site();
    for target in [
        "/../secret.txt",
        "/sub/../../secret.txt",
        "/./../secret.txt",
        "//../secret.txt",
        "/..",
        "/sub/..",
        "/public.txt/../../secret.txt",
    ] {
        assert_refused(&mut site, target, 400);
    }
    assert_eq!(site.responder.counters().refused, 7);
}

#[test]
fn percent_encoded_dotdot_cannot_escape_root() {
    let mut site = site();
    for target in [
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/.%2e/secret.txt",
        "/%2e./secret.txt",
        "/sub/%2e%2e/%2e%2e/secret.txt",
        "/sub/.%2E",
    ] {
        assert_refused(&mut site, target, 400);
    }
    // Decoded once: %252e%252e is the literal name "%2e%2e", which does not exist.
    assert_refused(&mut site, "/%252e%252e/secret.txt", 404);
}

#[test]
fn encoded_slash_is_refused() {
    let mut site = site();
    for target in [
        "/..%2fsecret.txt",
        "/..%2Fsecret.txt",
        "/sub%2finner.txt",
        "/..%5csecret.txt",
        "/sub%5Cinner.txt",
    ] {
        assert_refused(&mut site, target, 400);
    }
    // A raw backslash gets through the request parser (httparse accepts it in a target).
    assert_eq!(
        site.raw(b"GET /sub\\..\\..\\secret.txt HTTP/1.1\r\nHost: h\r\n\r\n")
            .status,
        400
    );
    assert_eq!(
        site.raw(b"GET /sub\\inner.txt HTTP/1.1\r\nHost: h\r\n\r\n")
            .status,
        400
    );
}

#[test]
fn nul_byte_is_refused() {
    let mut site = site();
    assert_refused(&mut site, "/public.txt%00.html", 400);
    assert_refused(&mut site, "/%00", 400);
    // A raw NUL never gets past the request parser; the normaliser refuses it all the same.
    let mut out = Vec::new();
    assert!(serve::resolve::normalise(b"/public.txt\0", &mut out).is_err());
}

#[test]
fn bad_escapes_are_refused() {
    let mut site = site();
    for target in ["/%zz", "/%", "/public.txt%2", "/%g0"] {
        assert_refused(&mut site, target, 400);
    }
}

#[test]
fn symlink_out_of_root_is_not_followed() {
    let mut site = site();
    for target in [
        "/link_out",
        "/relative_out",
        "/dir_out/secret.txt",
        "/dir_out/",
    ] {
        assert_refused(&mut site, target, 404);
    }
    assert_eq!(site.responder.counters().entries, 0);
}

#[test]
fn symlink_out_of_root_is_followed_only_when_configured() {
    let mut site = site_with(|c| c.symlinks_outside_root = true);
    let r = site.get("/link_out", &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, SECRET));
    assert_eq!(site.get("/dir_out/secret.txt", &[]).status, 200);
    // Still no climbing by name.
    assert_refused(&mut site, "/../secret.txt", 400);
}

#[test]
fn symlink_within_root_is_served() {
    let mut site = site();
    let r = site.get("/link_in", &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"public"[..]));
    let r = site.get("/sub_link/inner.txt", &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"inner"[..]));
}

#[test]
fn symlink_swapped_out_of_root_after_caching_is_refused_at_revalidation() {
    let mut site = site_with(|c| c.revalidate_ms = 0);
    assert_eq!(site.get("/link_in", &[]).status, 200);
    let link = site.root().join("link_in");
    std::fs::remove_file(&link).unwrap();
    symlink(site.dir.path().join("secret.txt"), &link).unwrap();
    assert_refused(&mut site, "/link_in", 404);
}

#[test]
fn precompressed_sibling_linking_out_of_root_is_not_served() {
    let mut site = site();
    symlink(
        site.dir.path().join("secret.txt"),
        site.root().join("public.txt.gz"),
    )
    .unwrap();
    let r = site.get("/public.txt", &["Accept-Encoding: gzip"]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"public"[..]));
    assert!(!r.has("Content-Encoding"));
}

#[test]
fn absolute_form_targets_are_confined_to_the_root() {
    let mut site = site();
    let r = site.get("http://example.com/public.txt", &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"public"[..]));
    assert_refused(&mut site, "http://example.com/../secret.txt", 400);
    assert_refused(&mut site, "http://example.com/%2e%2e/secret.txt", 400);
    assert_eq!(
        site.raw(b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").status,
        405
    );
    assert_refused(&mut site, "*", 400);
    assert_refused(&mut site, "public.txt", 400);
}

#[test]
fn hidden_files_and_dot_segments_inside_the_root_are_fine() {
    let mut site = site();
    assert_eq!(site.get("/.well-known/security.txt", &[]).status, 200);
    assert_eq!(site.get("/sub/./inner.txt", &[]).body, b"inner");
    assert_eq!(site.get("//sub//inner.txt", &[]).body, b"inner");
    assert_eq!(
        site.get("/sub/inner.txt?x=../../secret", &[]).body,
        b"inner"
    );
}

#[test]
fn fifo_under_root_is_404_without_blocking() {
    let mut site = site();
    let fifo = site.root().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable; skipped");
        return;
    }
    // Without O_NONBLOCK this open would wait forever for a writer.
    assert_refused(&mut site, "/pipe", 404);
}
