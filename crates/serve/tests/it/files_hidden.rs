//! Names starting with a dot are 404 by default, without being looked up, except under
//! `/.well-known/`; `dotfiles = "allow"` serves them.

use crate::files_support::Site;
use serve::config::Dotfiles;

const FILES: &[(&str, &[u8])] = &[
    (".git/config", b"[core]"),
    (".env", b"SECRET=1"),
    ("a/.htpasswd", b"user:hash"),
    (".well-known/security.txt", b"contact"),
    (".well-known/acme-challenge/t0k3n", b"proof"),
    (".well-known/.hidden", b"h"),
    ("a/b.txt", b"b"),
    ("x.y/z", b"z"),
];

#[test]
fn dotfiles_are_404_by_default_and_never_looked_up() {
    let mut site = Site::new(FILES);
    let before = site.responder.counters();
    for target in [
        "/.git/config",
        "/.git/",
        "/.git",
        "/.env",
        "/a/.htpasswd",
        "/%2eenv",
        "/.%67it/config",
        "/a/./.htpasswd",
        "/.well-known/.hidden",
        "http://h/.env",
        "/.missing",
    ] {
        let r = site.get(target, &[]);
        assert_eq!(r.status, 404, "{target}");
        assert!(!r.body.windows(6).any(|w| w == b"SECRET"), "{target}");
        assert_eq!(site.method("HEAD", target, &[]).status, 404, "{target}");
    }
    let after = site.responder.counters();
    assert_eq!(after.opens, before.opens, "hidden names are not looked up");
}

#[test]
fn well_known_and_dots_inside_names_are_served() {
    let mut site = Site::new(FILES);
    for (target, body) in [
        ("/.well-known/security.txt", &b"contact"[..]),
        ("/.well-known/acme-challenge/t0k3n", b"proof"),
        ("/%2ewell-known/security.txt", b"contact"),
        ("/a/b.txt", b"b"),
        ("/x.y/z", b"z"),
    ] {
        let r = site.get(target, &[]);
        assert_eq!((r.status, r.body.as_slice()), (200, body), "{target}");
    }
    assert_eq!(site.get("/.well-known", &[]).status, 301);
}

#[test]
fn dotfiles_allow_serves_them() {
    let mut site = Site::with(FILES, |c| c.dotfiles = Dotfiles::Allow);
    for (target, body) in [
        ("/.git/config", &b"[core]"[..]),
        ("/.env", b"SECRET=1"),
        ("/a/.htpasswd", b"user:hash"),
        ("/.well-known/.hidden", b"h"),
    ] {
        let r = site.get(target, &[]);
        assert_eq!((r.status, r.body.as_slice()), (200, body), "{target}");
    }
}
