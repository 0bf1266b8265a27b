//! A program's local redirect (`Location: /path`, RFC 3875 6.2.2) is routed as a request for the
//! path would be: a file is served, but a path a gateway claims (a CGI program by mount or by
//! extension, a FastCGI script) is never served as a file and never started from a redirect
//! (502), over HTTP/1.1, HTTP/2 and HTTP/3 alike; and `Location: //host/x` is a local path, not a
//! redirect to another host.

use crate::h2_support;
use crate::h3_support::cgi::CgiH3;

use crate::cgi_support::*;
use crate::common::*;
use serve::Config;

/// The program every test redirects through: its query is its `Location`.
const LOC: &str = "printf 'Location: %s\\r\\n\\r\\n' \"$QUERY_STRING\"\n";

/// The targets redirected to, each with the status it must get and, for a 200, its body.
const CASES: &[(&str, u16, &[u8])] = &[
    ("/secret.cgi", 502, b""),
    ("/a.php", 502, b""),
    ("/cgi-bin/hello", 502, b""),
    ("/nothere.cgi", 404, b""),
    ("/a.txt", 200, b"hello"),
    ("//a.txt", 200, b"hello"),
    ("//evil.example/x", 404, b""),
];

/// A program by extension and a PHP script in the root, whose bytes must never go out.
fn gateways(c: &mut Config) {
    c.cgi_extensions = vec![".cgi".into()];
    c.fastcgi
        .push("*.php=unix:/nonexistent/flint-test.sock".parse().unwrap());
}

fn secrets(root: &std::path::Path) {
    write_script(&root.join("secret.cgi"), "# SECRET-CGI\nexit 1\n");
    std::fs::write(root.join("a.php"), "<?php $pw = 'SECRET-PHP';\n").unwrap();
}

fn check(target: &str, status: u16, location: Option<&str>, body: &[u8], want: (u16, &[u8])) {
    let text = String::from_utf8_lossy(body);
    assert_eq!(status, want.0, "{target}: {text}");
    assert!(!text.contains("SECRET"), "{target}: {text}");
    assert_eq!(location, None, "{target} sent the client away");
    if want.0 == 200 {
        assert_eq!(body, want.1, "{target}");
    }
}

#[test]
fn a_local_redirect_to_a_program_is_never_its_bytes_over_http1() {
    let scripts = Scripts::new();
    scripts.add("loc", LOC).add("hello", HELLO);
    let srv = start(&scripts, gateways);
    secrets(srv.root.path());
    for &(target, status, body) in CASES {
        let r = ask(&srv, &get(&format!("/cgi-bin/loc?{target}")));
        check(
            target,
            r.status,
            r.header("location"),
            &r.body,
            (status, body),
        );
    }
    // HEAD follows the same way, with no body.
    let r = ask(&srv, "HEAD /cgi-bin/loc?/a.php HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.status, r.body.len()), (502, 0));
    let st = srv.stop();
    // Only the redirecting program ever ran.
    assert_eq!(st.cgi_starts, CASES.len() as u64 + 1);
}

#[test]
fn a_local_redirect_to_a_program_is_never_its_bytes_over_http2() {
    let scripts = Scripts::new();
    scripts.add("loc", LOC).add("hello", HELLO);
    let srv = start(&scripts, gateways);
    secrets(srv.root.path());
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    for &(target, status, body) in CASES {
        let r = h2.get(&format!("/cgi-bin/loc?{target}"), &[]);
        check(
            target,
            r.status,
            r.header("location"),
            &r.body,
            (status, body),
        );
    }
    let st = srv.stop();
    assert_eq!(st.cgi_starts, CASES.len() as u64);
}

#[test]
fn a_local_redirect_to_a_program_is_never_its_bytes_over_http3() {
    let fx = CgiH3::new();
    fx.add("loc", LOC).add("hello", HELLO);
    let (srv, mut d) = fx.start(gateways);
    secrets(srv.root.path());
    std::fs::write(srv.root.path().join("a.txt"), b"hello").unwrap();
    let targets: Vec<String> = (CASES.iter())
        .map(|(t, _, _)| format!("/cgi-bin/loc?{t}"))
        .collect();
    let requests: Vec<(&str, &str)> = targets.iter().map(|t| ("GET", t.as_str())).collect();
    let got = d.fetch(&requests);
    for (&(target, status, body), r) in CASES.iter().zip(&got) {
        check(
            target,
            r.status,
            r.field("location"),
            &r.body,
            (status, body),
        );
    }
    d.close();
    let st = srv.stop();
    assert_eq!(st.cgi_starts, CASES.len() as u64);
}

/// SHA-256-crypt of "pw-carol" (as `htpasswd -nb2` makes it).
const CAROL: &str = "carol:$5$S5VSJjAYUPF7DU/9$W.g7s4vFfKJ/.7240Zm.PLxryLWb3YuBMfwqy3WBphD\n";

#[test]
fn under_a_protected_root_a_local_redirect_never_sends_the_client_to_another_host() {
    // Under `/` every local redirect is answered with a 302 for the client to follow with its
    // credentials: its Location is the path made normal and encoded, never the program's bytes
    // ("//host" is another host to a browser, and so is "/<TAB>/host", tabs being dropped).
    let scripts = Scripts::new();
    scripts.add(
        "two",
        "printf 'Location: //evil.example/x?q=1\\r\\n\\r\\n'\n",
    );
    scripts.add(
        "tab",
        "printf 'Location: /\\t/evil.example/x\\r\\n\\r\\n'\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    std::fs::write(&users, CAROL).unwrap();
    let srv = start(&scripts, |c| {
        c.auth.push(serve::config::AuthZone {
            prefix: "/".into(),
            file: users,
            realm: "flint".into(),
        });
    });
    let auth = "Basic Y2Fyb2w6cHctY2Fyb2w="; // carol:pw-carol
    let ask_for = |path: &str| {
        let head = format!("GET {path} HTTP/1.1\r\nHost: t\r\nAuthorization: {auth}\r\n\r\n");
        ask(&srv, &head)
    };
    let safe = |location: Option<&str>| {
        let at = location.unwrap_or("/");
        assert!(at.starts_with('/') && !at.starts_with("//"), "{at:?}");
        assert!(!at.bytes().any(|b| b < 0x20 || b == 0x7f), "{at:?}");
    };
    let r = ask_for("/cgi-bin/two");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/evil.example/x?q=1"));
    let r = ask_for("/cgi-bin/tab");
    safe(r.header("location"));
    assert_eq!((r.status, r.header("location")), (502, None));
    // Over HTTP/2 the same.
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    let r = h2.get("/cgi-bin/two", &[("authorization", auth)]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/evil.example/x?q=1"));
    let r = h2.get("/cgi-bin/tab", &[("authorization", auth)]);
    safe(r.header("location"));
    assert_eq!(r.status, 502);
}
