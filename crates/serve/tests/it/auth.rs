//! HTTP Basic authentication end to end: htpasswd files made at test time (by Debian's
//! `htpasswd` when installed, else by the bcrypt crate), answers over HTTP/1.1, HTTP/2 and TLS,
//! the prefixes, the failure limiter counted by requests, CGI's `REMOTE_USER`, the access log's
//! user, and a refused file at start (the `flint` executable's exit status and its one line).

use crate::cgi_support;
use crate::tls_support;

use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::h2_support::Client;
use crate::tls_support::{tls_connect, Certs};
use base64::Engine;
use serve::config::AuthZone;
use serve::Config;

/// SHA-256-crypt and SHA-512-crypt of "pw-carol" and "pw-dave", made by `htpasswd -nb2` and
/// `-nb5` (used when `htpasswd` is not installed).
const CAROL: &str = "$5$S5VSJjAYUPF7DU/9$W.g7s4vFfKJ/.7240Zm.PLxryLWb3YuBMfwqy3WBphD";
const DAVE: &str = "$6$LcSDG3ugSj2IQXHW$bZe2vjkGel.PkYhUZ.ictOkgXqeADkWHTQIs9wAXBpnVn697r5WnjT0g3OUMktkugeScVMCq2f/8GvbDq8EYs.";

/// An htpasswd line for `user` with `password` in `scheme` (`-B` bcrypt at cost 4, `-2`, `-5`),
/// by `htpasswd` when it is installed.
fn line(user: &str, password: &str, scheme: &str) -> String {
    let made = Command::new("htpasswd")
        .args(["-nb", scheme])
        .args(if scheme == "-B" {
            &["-C", "4"][..]
        } else {
            &[]
        })
        .args([user, password])
        .stderr(Stdio::null())
        .output();
    if let Some(out) = made.ok().filter(|o| o.status.success()) {
        return String::from_utf8(out.stdout).unwrap().trim().to_string();
    }
    let hash = match (scheme, user) {
        ("-2", "carol") => CAROL.to_string(),
        ("-5", "dave") => DAVE.to_string(),
        ("-B", _) => bcrypt::hash_with_salt(password, 4, *b"0123456789abcdef")
            .unwrap()
            .format_for_version(bcrypt::Version::TwoY),
        _ => panic!("no fallback hash for {user} {scheme}"),
    };
    format!("{user}:{hash}")
}

/// An htpasswd file of alice (bcrypt), bob (bcrypt), carol (SHA-256) and dave (SHA-512), each
/// with the password `pw-NAME`.
fn users_file(dir: &Path) -> PathBuf {
    let lines = [
        "# made by the test".to_string(),
        line("alice", "pw-alice", "-B"),
        line("bob", "pw-bob", "-B"),
        line("carol", "pw-carol", "-2"),
        line("dave", "pw-dave", "-5"),
    ];
    let path = dir.join("htpasswd");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn basic(user: &str, password: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {token}")
}

fn get_as(path: &str, authorization: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nAuthorization: {authorization}\r\n\r\n")
}

/// A server whose `/private/` asks for a user of `users_file`, with `private/secret.txt` in
/// its root.
fn protected(dir: &Path, tweak: impl FnOnce(&mut Config)) -> TestServer {
    let file = users_file(dir);
    TestServer::start(|c| {
        std::fs::create_dir(c.root.join("private")).unwrap();
        std::fs::write(c.root.join("private/secret.txt"), b"secret").unwrap();
        c.auth.push(AuthZone {
            prefix: "/private".into(),
            file,
            realm: "flint".into(),
        });
        tweak(c);
    })
}

const CHALLENGE: &str = "Basic realm=\"flint\", charset=\"UTF-8\"";

#[test]
fn without_or_with_wrong_credentials_401_with_the_right_ones_200() {
    let dir = tempfile::tempdir().unwrap();
    let srv = protected(dir.path(), |_| {});
    let r = exchange(srv.addr, &get("/private/secret.txt"));
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some(CHALLENGE));
    // Not a redirect that says the directory exists first.
    assert_eq!(exchange(srv.addr, &get("/private")).status, 401);
    // A wrong password and an unknown user: the same answer, head and body.
    let wrong = exchange(
        srv.addr,
        &get_as("/private/secret.txt", &basic("alice", "nope")),
    );
    let unknown = exchange(
        srv.addr,
        &get_as("/private/secret.txt", &basic("zed", "pw-alice")),
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.body, r.body);
    assert_eq!(unknown.body, wrong.body);
    let fields = |r: &Response| {
        let mut h: Vec<_> = r
            .headers
            .iter()
            .filter(|(n, _)| n != "Date")
            .cloned()
            .collect();
        h.sort();
        h
    };
    assert_eq!(fields(&unknown), fields(&wrong));
    for bad in ["Basic", "Basic !!!", "Bearer abc", &basic("alice", "")] {
        assert_eq!(
            exchange(srv.addr, &get_as("/private/secret.txt", bad)).status,
            401
        );
    }
    let ok = exchange(
        srv.addr,
        &get_as("/private/secret.txt", &basic("alice", "pw-alice")),
    );
    assert_eq!((ok.status, &ok.body[..]), (200, &b"secret"[..]));
    // HEAD is refused the same way, without a body.
    let mut s = connect(srv.addr);
    s.write_all(b"HEAD /private/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let head = read_response(&mut BufReader::new(s), true).unwrap();
    assert_eq!((head.status, head.body.len()), (401, 0));
    // Outside the prefix nothing is asked; a prefix is whole segments.
    assert_eq!(exchange(srv.addr, &get("/a.txt")).status, 200);
    assert_eq!(exchange(srv.addr, &get("/privateer")).status, 404);
    let st = srv.stop();
    assert_eq!(st.auth_missing, 3, "{st:?}");
    assert_eq!(st.auth_failed, 6, "{st:?}");
    assert_eq!(st.auth_ok, 1, "{st:?}");
    assert_eq!(st.status_4xx, 10, "{st:?}");
}

#[test]
fn a_request_answered_413_is_counted_as_no_refusal_of_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let srv = protected(dir.path(), |c| c.max_body_bytes = 1000);
    let post = |authorization: Option<String>| {
        let field = authorization.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
        format!(
            "POST /private/secret.txt HTTP/1.1\r\nHost: t\r\n{field}Content-Length: 2000\r\n\r\n"
        )
    };
    // Too large whoever sends it: the answer is 413, not a challenge.
    assert_eq!(exchange(srv.addr, &post(None)).status, 413);
    let wrong = Some(basic("alice", "nope"));
    assert_eq!(exchange(srv.addr, &post(wrong)).status, 413);
    // A challenge answered is still counted.
    assert_eq!(exchange(srv.addr, &get("/private/secret.txt")).status, 401);
    let st = srv.stop();
    assert_eq!(
        (st.auth_missing, st.auth_failed, st.status_4xx),
        (1, 0, 3),
        "{st:?}"
    );
}

#[test]
fn each_accepted_scheme_lets_its_user_in_and_a_password_is_checked_once() {
    let dir = tempfile::tempdir().unwrap();
    let srv = protected(dir.path(), |_| {});
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for user in ["alice", "bob", "carol", "dave"] {
        for _ in 0..3 {
            let auth = basic(user, &format!("pw-{user}"));
            s.write_all(get_as("/private/secret.txt", &auth).as_bytes())
                .unwrap();
            let resp = read_response(&mut r, false).unwrap();
            assert_eq!(
                (resp.status, &resp.body[..]),
                (200, &b"secret"[..]),
                "{user}"
            );
        }
        let auth = basic(user, "pw-someone-else");
        s.write_all(get_as("/private/secret.txt", &auth).as_bytes())
            .unwrap();
        assert_eq!(read_response(&mut r, false).unwrap().status, 401, "{user}");
    }
    let st = srv.stop();
    // Three requests per user, one hash check each.
    assert_eq!((st.auth_ok, st.auth_cached, st.auth_failed), (12, 8, 4));
}

#[test]
fn the_longest_prefix_decides_the_file_and_the_realm() {
    let dir = tempfile::tempdir().unwrap();
    let all = users_file(dir.path());
    let only_bob = dir.path().join("only-bob");
    std::fs::write(&only_bob, line("bob", "pw-bob", "-B") + "\n").unwrap();
    let srv = TestServer::start(|c| {
        std::fs::create_dir_all(c.root.join("inner")).unwrap();
        std::fs::write(c.root.join("inner/x.txt"), b"x").unwrap();
        c.auth.push(AuthZone {
            prefix: "/".into(),
            file: all,
            realm: "everything".into(),
        });
        c.auth.push(AuthZone {
            prefix: "/inner".into(),
            file: only_bob,
            realm: "inner room".into(),
        });
    });
    let r = exchange(srv.addr, &get("/a.txt"));
    assert_eq!(
        (r.status, r.header("www-authenticate")),
        (401, Some("Basic realm=\"everything\", charset=\"UTF-8\""))
    );
    let r = exchange(srv.addr, &get("/inner/x.txt"));
    assert_eq!(
        r.header("www-authenticate"),
        Some("Basic realm=\"inner room\", charset=\"UTF-8\"")
    );
    let alice = basic("alice", "pw-alice");
    let bob = basic("bob", "pw-bob");
    assert_eq!(exchange(srv.addr, &get_as("/a.txt", &alice)).status, 200);
    assert_eq!(
        exchange(srv.addr, &get_as("/inner/x.txt", &alice)).status,
        401
    );
    // The same header verified for "/" is checked again against the inner file.
    assert_eq!(exchange(srv.addr, &get_as("/a.txt", &bob)).status, 200);
    assert_eq!(
        exchange(srv.addr, &get_as("/inner/x.txt", &bob)).status,
        200
    );
    assert_eq!(
        exchange(srv.addr, &get_as("/%69nner/./x.txt", &alice)).status,
        401
    );
}

#[test]
fn over_http2_and_tls_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let srv = protected(dir.path(), |_| {});
    let mut c = Client::new(connect(srv.addr), "localhost");
    let r = c.get("/private/secret.txt", &[]);
    assert_eq!(
        (r.status, r.header("www-authenticate")),
        (401, Some(CHALLENGE))
    );
    let wrong = basic("carol", "nope");
    assert_eq!(
        c.get("/private/secret.txt", &[("authorization", &wrong)])
            .status,
        401
    );
    let good = basic("carol", "pw-carol");
    for _ in 0..2 {
        let r = c.get("/private/secret.txt", &[("authorization", &good)]);
        assert_eq!((r.status, &r.body[..]), (200, &b"secret"[..]));
    }
    assert_eq!(c.get("/a.txt", &[]).status, 200);
    drop(c);
    let st = srv.stop();
    assert_eq!(
        (st.http2_connections, st.auth_ok, st.auth_cached),
        (1, 2, 1)
    );
    assert_eq!((st.auth_missing, st.auth_failed), (1, 1));

    let certs = Certs::new(false);
    let file = users_file(dir.path());
    let srv = certs.serve(|c| {
        std::fs::create_dir(c.root.join("private")).unwrap();
        std::fs::write(c.root.join("private/secret.txt"), b"secret").unwrap();
        c.auth.push(AuthZone {
            prefix: "/private".into(),
            file,
            realm: "flint".into(),
        });
    });
    let config = certs.client(&tls_support::both_versions());
    for (auth, status) in [(basic("dave", "pw-dave"), 200), (basic("dave", "x"), 401)] {
        let mut t = tls_connect(srv.addr, &config);
        t.write_all(get_as("/private/secret.txt", &auth).as_bytes())
            .unwrap();
        let r = read_response(&mut BufReader::new(&mut t), false).unwrap();
        assert_eq!(r.status, status);
    }
}

#[test]
fn past_the_failures_allowed_a_client_gets_429_without_a_check() {
    let dir = tempfile::tempdir().unwrap();
    let srv = protected(dir.path(), |c| c.auth_max_failures = 3);
    let known = basic("bob", "pw-bob");
    assert_eq!(
        exchange(srv.addr, &get_as("/private/secret.txt", &known)).status,
        200
    );
    for _ in 0..3 {
        let r = exchange(
            srv.addr,
            &get_as("/private/secret.txt", &basic("alice", "guess")),
        );
        assert_eq!(r.status, 401);
    }
    // Even the right password is not checked now; one verified before still goes in.
    for auth in [basic("alice", "guess"), basic("alice", "pw-alice")] {
        let r = exchange(srv.addr, &get_as("/private/secret.txt", &auth));
        assert_eq!(r.status, 429);
        let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=60).contains(&secs), "{secs}");
    }
    assert_eq!(
        exchange(srv.addr, &get_as("/private/secret.txt", &known)).status,
        200
    );
    // A request without credentials is asked for them, as before.
    assert_eq!(exchange(srv.addr, &get("/private/secret.txt")).status, 401);
    let st = srv.stop();
    assert_eq!((st.auth_failed, st.auth_limited, st.auth_ok), (3, 2, 2));
}

#[test]
fn a_program_gets_remote_user_and_auth_type_never_the_password() {
    let scripts = cgi_support::Scripts::new();
    scripts.add("env", "printf 'Content-Type: text/plain\\n\\n'\nenv\n");
    let dir = tempfile::tempdir().unwrap();
    let file = users_file(dir.path());
    let srv = cgi_support::start(&scripts, |c| {
        c.auth.push(AuthZone {
            prefix: "/cgi-bin".into(),
            file,
            realm: "flint".into(),
        });
    });
    let r = cgi_support::ask(&srv, &get("/cgi-bin/env"));
    assert_eq!(r.status, 401);
    let auth = basic("carol", "pw-carol");
    let r = cgi_support::ask(&srv, &get_as("/cgi-bin/env", &auth));
    assert_eq!(r.status, 200);
    let env = String::from_utf8(r.body).unwrap();
    assert!(env.lines().any(|l| l == "REMOTE_USER=carol"), "{env}");
    assert!(env.lines().any(|l| l == "AUTH_TYPE=Basic"), "{env}");
    assert!(
        !env.contains("pw-carol") && !env.contains("AUTHORIZATION"),
        "{env}"
    );
    let st = srv.stop();
    assert_eq!((st.cgi_starts, st.auth_ok, st.auth_missing), (1, 1, 1));
}

#[test]
fn the_access_log_names_the_user_third() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let srv = protected(dir.path(), |c| c.access_log = Some(log.clone()));
    exchange(
        srv.addr,
        &get_as("/private/secret.txt", &basic("dave", "pw-dave")),
    );
    exchange(
        srv.addr,
        &get_as("/private/secret.txt", &basic("dave", "x")),
    );
    let mut c = Client::new(connect(srv.addr), "localhost");
    let auth = basic("alice", "pw-alice");
    assert_eq!(
        c.get("/private/secret.txt", &[("authorization", &auth)])
            .status,
        200
    );
    drop(c);
    srv.stop();
    let mut text = String::new();
    std::fs::File::open(&log)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("127.0.0.1 - dave [") && lines[0].contains("\" 200 6"));
    assert!(lines[1].starts_with("127.0.0.1 - - [") && lines[1].contains("\" 401 "));
    assert!(lines[2].starts_with("127.0.0.1 - alice [") && lines[2].contains("HTTP/2.0\" 200"));
}

/// Two `Authorization` fields: the server would check one and an upstream read the other, so
/// the request is refused (400) over HTTP/1.1 and HTTP/2 before anything reaches the upstream.
#[test]
fn two_authorization_fields_are_400_and_never_reach_the_upstream() {
    use crate::proxy_support::{mount, ok, Upstream};
    let up = Upstream::start(|_| ok("upstream"));
    let dir = tempfile::tempdir().unwrap();
    let m = mount("/api/", &[up.url()], "");
    let srv = protected(dir.path(), |c| {
        c.auth.push(AuthZone {
            prefix: "/api".into(),
            file: dir.path().join("htpasswd"),
            realm: "flint".into(),
        });
        c.proxy.push(m);
    });
    let (good, bad) = (basic("bob", "pw-bob"), basic("mallory", "x"));
    let one = exchange(srv.addr, &get_as("/api/a", &good));
    assert_eq!((one.status, one.body.as_slice()), (200, &b"upstream"[..]));
    for (first, second) in [(&good, &bad), (&bad, &good), (&good, &good)] {
        let head = format!(
            "GET /api/a HTTP/1.1\r\nHost: t\r\nAuthorization: {first}\r\nAuthorization: {second}\r\n\r\n"
        );
        assert_eq!(exchange(srv.addr, &head).status, 400, "{head}");
    }
    let mut c = Client::new(connect(srv.addr), "localhost");
    let fields = [("authorization", good.as_str()), ("authorization", &bad)];
    assert_eq!(c.get("/api/a", &fields).status, 400);
    assert_eq!(c.get("/api/a", &fields[..1]).status, 200);
    drop(c);
    srv.stop();
    assert_eq!(
        up.requests().len(),
        2,
        "only the requests with one field went on"
    );
}

/// Two `Authorization` fields over HTTP/2 with no prefix protected: an upstream that checks
/// credentials would read one while a log or another hop reads the other, so they are refused
/// (400) as over HTTP/1.1, whether or not the server itself checks them.
#[test]
fn two_authorization_fields_over_http2_are_400_with_no_zone_too() {
    use crate::proxy_support::{mount, ok, Upstream};
    let up = Upstream::start(|_| ok("upstream"));
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let (good, bad) = (basic("bob", "pw-bob"), basic("mallory", "x"));
    let mut c = Client::new(connect(srv.addr), "localhost");
    let fields = [("authorization", good.as_str()), ("authorization", &bad)];
    assert_eq!(c.get("/api/a", &fields).status, 400);
    assert_eq!(c.get("/api/a", &fields[..1]).status, 200);
    drop(c);
    srv.stop();
    assert_eq!(
        up.requests().len(),
        1,
        "only the request with one field went on"
    );
}

/// Runs `flint serve` with `args` after the root, which must exit on its own within a bound
/// (else it is killed by its PID and the test fails); returns its status and stderr.
fn serve_exit(root: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(test_support::flint_bin())
        .arg("serve")
        .arg(root)
        .args(["--listen", "127.0.0.1:0", "--threads", "1"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start flint");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("flint serve {args:?} still running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

#[test]
fn a_file_with_a_refused_scheme_stops_the_start_with_its_line_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("md5");
    let apr1 = Command::new("htpasswd")
        .args(["-nbm", "mallory", "pw"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_string())
        .unwrap_or_else(|| "mallory:$apr1$Jb0rVXhS$tCGs0SViEFVSO1vK0mfAw/".into());
    assert!(apr1.starts_with("mallory:$apr1$"), "{apr1}");
    std::fs::write(&file, format!("{}\n{apr1}\n", line("bob", "pw-bob", "-B"))).unwrap();
    let zone = format!("/private/={}", file.display());
    let (code, err) = serve_exit(dir.path(), &["--basic-auth", &zone]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let named = format!("htpasswd file {} line 2: user \"mallory\"", file.display());
    assert!(
        err.starts_with("flint: error: ") && err.contains(&named),
        "{err}"
    );
    assert!(
        err.contains("`$apr1$`") && err.contains("htpasswd -B"),
        "{err}"
    );

    // A plain-text password, a missing file, a realm with a quote: the same, one line.
    std::fs::write(&file, "eve:secret\n").unwrap();
    let (code, err) = serve_exit(dir.path(), &["--basic-auth", &zone]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("line 1") && err.contains("plain-text"),
        "{err}"
    );
    let missing = format!("/p/={}", dir.path().join("nope").display());
    let (code, err) = serve_exit(dir.path(), &["--basic-auth", &missing]);
    assert_eq!((code, err.lines().count()), (Some(2), 1), "{err}");
    let good = users_file(dir.path());
    let zone = format!("/private/={}", good.display());
    let (code, err) = serve_exit(dir.path(), &["--basic-auth", &zone, "--auth-realm", "a\"b"]);
    assert_eq!((code, err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("auth.realm"), "{err}");
}

/// A bcrypt hash of cost 31 would hold its thread for days at the first check (an unknown
/// user is checked against the first hash): the start is refused, naming the line.
#[test]
fn a_hash_too_slow_to_check_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hp31");
    let bob = line("bob", "pw-bob", "-B");
    let salt_and_hash = bob.rsplit('$').next().unwrap();
    std::fs::write(&file, format!("g:$2y$31${salt_and_hash}\n{bob}\n")).unwrap();
    let zone = format!("/p/={}", file.display());
    let (code, err) = serve_exit(dir.path(), &["--basic-auth", &zone]);
    assert_eq!((code, err.lines().count()), (Some(2), 1), "{err}");
    let named = format!("htpasswd file {} line 1: user \"g\"", file.display());
    assert!(
        err.contains(&named) && err.contains("bcrypt cost 31"),
        "{err}"
    );
}

#[test]
fn over_http2_a_program_gets_the_user_too() {
    let scripts = cgi_support::Scripts::new();
    scripts.add("env", "printf 'Content-Type: text/plain\\n\\n'\nenv\n");
    let dir = tempfile::tempdir().unwrap();
    let file = users_file(dir.path());
    let srv = cgi_support::start(&scripts, |c| {
        c.auth.push(AuthZone {
            prefix: "/cgi-bin".into(),
            file,
            realm: "flint".into(),
        });
    });
    let mut c = Client::new(connect(srv.addr), "localhost");
    assert_eq!(c.get("/cgi-bin/env", &[]).status, 401);
    let auth = basic("dave", "pw-dave");
    let r = c.get("/cgi-bin/env", &[("authorization", &auth)]);
    assert_eq!(r.status, 200);
    let env = String::from_utf8(r.body).unwrap();
    assert!(env.lines().any(|l| l == "REMOTE_USER=dave"), "{env}");
    assert!(env.lines().any(|l| l == "AUTH_TYPE=Basic"), "{env}");
    assert!(
        !env.contains("pw-dave") && !env.contains("AUTHORIZATION"),
        "{env}"
    );
}

#[test]
fn a_programs_local_redirect_into_a_protected_prefix_sends_the_client_there() {
    // The program is open; what it points to is not. Followed by the server, its request would
    // carry no credentials to check: the client is sent there instead, and must authenticate.
    let scripts = cgi_support::Scripts::new();
    scripts.add("go", "printf 'Location: /private/a.txt\\r\\n\\r\\n'\n");
    scripts.add("open", "printf 'Location: /a.txt\\r\\n\\r\\n'\n");
    let dir = tempfile::tempdir().unwrap();
    let file = users_file(dir.path());
    let srv = cgi_support::start(&scripts, |c| {
        c.auth.push(AuthZone {
            prefix: "/private".into(),
            file,
            realm: "flint".into(),
        });
    });
    std::fs::create_dir(srv.root.path().join("private")).unwrap();
    std::fs::write(srv.root.path().join("private/a.txt"), "secret").unwrap();
    let r = cgi_support::ask(&srv, &get("/cgi-bin/go"));
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/private/a.txt"));
    assert!(!String::from_utf8_lossy(&r.body).contains("secret"));
    // A redirect outside any protected prefix is still followed by the server.
    let r = cgi_support::ask(&srv, &get("/cgi-bin/open"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    // Over HTTP/2 the same.
    let mut c = Client::new(connect(srv.addr), "localhost");
    let r = c.get("/cgi-bin/go", &[]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/private/a.txt"));
    assert_ne!(r.body, b"secret");
}

#[test]
fn a_programs_access_log_line_names_its_user_too() {
    let scripts = cgi_support::Scripts::new();
    scripts.add("hi", "printf 'Content-Type: text/plain\\n\\nhi\\n'\n");
    let dir = tempfile::tempdir().unwrap();
    let file = users_file(dir.path());
    let log = dir.path().join("access.log");
    let srv = cgi_support::start(&scripts, |c| {
        c.auth.push(AuthZone {
            prefix: "/cgi-bin".into(),
            file,
            realm: "flint".into(),
        });
        c.access_log = Some(log.clone());
    });
    let r = cgi_support::ask(&srv, &get_as("/cgi-bin/hi", &basic("carol", "pw-carol")));
    assert_eq!(r.status, 200);
    let mut c = Client::new(connect(srv.addr), "localhost");
    let auth = basic("dave", "pw-dave");
    assert_eq!(
        c.get("/cgi-bin/hi", &[("authorization", &auth)]).status,
        200
    );
    drop(c);
    srv.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("127.0.0.1 - carol [") && lines[0].contains("\" 200 "),
        "{text}"
    );
    assert!(
        lines[1].starts_with("127.0.0.1 - dave [") && lines[1].contains("HTTP/2.0\" 200"),
        "{text}"
    );
}
