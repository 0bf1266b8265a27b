//! An application workload over `--http 3`, against a small application on the `http3::Server`
//! of crates/http3 in a thread of the test: a login that sets a session cookie and answers a
//! token (each login ending the user's previous session), files that need the current
//! session's cookie and token for the user they name (a file opened before the login's
//! response would carry the previous page's, refused), and a page whose body is checked. Each
//! response's checks are held once, values are never shared between Webchildren, a value that
//! never comes leaves its files unsent, and the server's count is the client's requests (+
//! unfinished), a value that would split a field not sent.

use crate::h3_pump;

use bench::config::TlsOptions;
use bench::stats::ErrorKind;
use bench::workload::Workload;
use bench::{BenchConfig, HttpMode, Stop, Target};
use h3_pump::Pump;
use http3::{Server, ServerEvent};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use test_support::certs::TestCa;

/// A login, two files that need its token and cookie, and one whose body names the user.
const PAGE: &str = r#"
[[page]]
name = "visit"
weight = 1
files = [
  { path = "/login?user=USER", expect = { status = 200 },
    extract = { token = { header = "X-Token" } } },
  { path = "/f1?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/f2?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/me?user=USER", headers = { "X-Token" = "{{token}}" },
    expect = { body_contains = "hello USER", header_equals = { "X-User" = "USER" } } },
]
"#;

/// What the application knows and saw.
#[derive(Default)]
struct State {
    /// Session id -> (user, token); a user's login removes the user's previous session.
    sessions: HashMap<String, (String, String)>,
    current: HashMap<String, String>,
    next: u64,
    requests: u64,
    logins: HashMap<String, u64>,
    /// Files refused (no session, another user's, a stale one, a wrong token).
    refused: u64,
    /// Files (not logins) of each user.
    files: HashMap<String, u64>,
    /// Request body bytes read.
    body_bytes: u64,
}

struct App {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for App {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(ca: &TestCa) -> App {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default()).unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let state = Arc::new(Mutex::new(State::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (st, sp) = (state.clone(), stop.clone());
    let thread = std::thread::spawn(move || serve(sock, Server::new(config, addr), &st, &sp));
    App {
        addr,
        state,
        stop,
        thread: Some(thread),
    }
}

/// The server's loop: datagrams in and out, each request answered whole as it comes (the
/// answers are small), every wait at most 20 ms so that `stop` is seen.
fn serve(sock: UdpSocket, mut server: Server, state: &Mutex<State>, stop: &AtomicBool) {
    let mut pump = Pump::new(sock);
    let mut waiting: HashMap<http3::RequestId, Answer> = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        pump.turn(&mut server);
        while let Some(ev) = server.poll() {
            // A request is answered once its body has ended, as an application that reads
            // its form does: a stream that never ends is never answered.
            let (id, answer) = match ev {
                ServerEvent::Request { id, fields, end } => {
                    let text =
                        |name: &[u8]| String::from_utf8_lossy(fields.get(name).unwrap_or(b""));
                    let (path, cookie, token) = (text(b":path"), text(b"cookie"), text(b"x-token"));
                    let answer = answer(&path, &cookie, &token, state);
                    if !end {
                        waiting.insert(id, answer);
                        continue;
                    }
                    (id, answer)
                }
                ServerEvent::Body { id } => {
                    while let Ok(n) = server.recv_body(id, pump.scratch()) {
                        if n == 0 {
                            break;
                        }
                        state.lock().unwrap().body_bytes += n as u64;
                    }
                    continue;
                }
                ServerEvent::BodyEnd { id } => match waiting.remove(&id) {
                    Some(answer) => (id, answer),
                    None => continue,
                },
                _ => continue,
            };
            let (status, head, body) = answer;
            let head: Vec<(&[u8], &[u8])> = head.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
            if server.send_response(id, status, &head, false).is_ok() {
                let _ = server.send_body(id, body.as_bytes(), true);
            }
        }
    }
}

type Answer = (u16, Vec<(&'static [u8], String)>, String);

fn answer(target: &str, cookie: &str, token: &str, state: &Mutex<State>) -> Answer {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let user = query.strip_prefix("user=").unwrap_or("").to_owned();
    let mut st = state.lock().unwrap();
    st.requests += 1;
    if path == "/crlf" {
        // A value that would split a head if it went into a field.
        return (200, Vec::new(), "tok=\"a\r\nX-Evil: 1\"".into());
    }
    if path == "/login" {
        st.next += 1;
        let (sid, tok) = (format!("s{}", st.next), format!("t{}", st.next));
        if let Some(old) = st.current.insert(user.clone(), sid.clone()) {
            st.sessions.remove(&old);
        }
        st.sessions.insert(sid.clone(), (user.clone(), tok.clone()));
        *st.logins.entry(user.clone()).or_default() += 1;
        let mut fields = vec![(&b"set-cookie"[..], format!("sid={sid}; Path=/"))];
        // The user "nobody" logs in without a token: the page's files can never be sent.
        if user != "nobody" {
            fields.push((b"x-token", tok));
        }
        return (200, fields, "ok".into());
    }
    *st.files.entry(user.clone()).or_default() += 1;
    let sid = cookie
        .split(';')
        .find_map(|kv| kv.trim().strip_prefix("sid="))
        .unwrap_or("");
    let ok = (st.sessions.get(sid)).is_some_and(|(u, t)| *u == user && t == token);
    if !ok {
        st.refused += 1;
        return (409, Vec::new(), "stale".into());
    }
    (
        200,
        vec![(b"x-user", user.clone())],
        format!("hello {user}"),
    )
}

fn workload(rows: &str, user: &str) -> Workload {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), rows).unwrap();
    let data = match rows.is_empty() {
        true => String::new(),
        false => "[data.users]\nfile = \"users.csv\"\n".to_owned(),
    };
    let text = format!("{data}{}", PAGE.replace("USER", user));
    Workload::parse_in(&text, "w.toml", dir.path()).unwrap()
}

fn config(ca: &TestCa, addr: SocketAddr, webchildren: usize, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency: webchildren,
        threads: 2,
        stop,
        http: HttpMode::Http3,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        fail_fast: false,
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(addr, "localhost"))
    }
}

#[test]
fn a_visit_over_http3_carries_its_session_and_passes_its_checks() {
    // Six Webchildren on two threads, each logging in as itself page after page: a file sent
    // with another Webchild's cookie or token, or with its own previous login's, is refused.
    let ca = TestCa::new("flint bench h3 app test CA");
    let app = start(&ca);
    let w = workload("", "w{{webchild}}");
    let cfg = config(&ca, app.addr, 6, Stop::Pages(36));
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    let st = app.state.lock().unwrap();
    assert_eq!(s.errors.total(), 0, "{:?} {:?}", s.errors, s.check_failures);
    assert_eq!(st.refused, 0);
    assert_eq!(s.errors.get(ErrorKind::MissingValueUnsent), 0);
    assert_eq!((s.pages_done, s.requests), (36, 36 * 4));
    assert_eq!(st.requests, s.requests);
    assert_eq!(st.logins.len(), 6, "{:?}", st.logins);
    assert_eq!(st.logins.values().sum::<u64>(), 36);
}

#[test]
fn a_value_that_never_comes_over_http3_leaves_its_files_unsent() {
    // Users u0, nobody, u1, nobody, ...: nobody's login gives no token.
    let ca = TestCa::new("flint bench h3 app test CA");
    let app = start(&ca);
    let rows = (0..5).fold("name\n".to_owned(), |s, i| s + &format!("u{i}\nnobody\n"));
    let w = workload(&rows, "{{users.name}}");
    let cfg = BenchConfig {
        threads: 1,
        ..config(&ca, app.addr, 1, Stop::Pages(10))
    };
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    let st = app.state.lock().unwrap();
    assert_eq!(s.errors.get(ErrorKind::ExtractMissing), 5, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 5, "{:?}", s.errors);
    assert_eq!(st.files.get("nobody"), None, "nobody's files were sent");
    assert_eq!(st.refused, 0);
    assert_eq!((s.pages_done, s.requests), (5, 5 * 4 + 5));
    assert_eq!(st.requests, s.requests);
}

#[test]
fn a_check_that_fails_over_http3_is_counted_once_and_ends_its_page() {
    // The body names the Webchild's user, not "someone": /me fails its check on every page.
    let ca = TestCa::new("flint bench h3 app test CA");
    let app = start(&ca);
    let text = PAGE
        .replace("hello USER", "hello someone")
        .replace("USER", "w{{webchild}}");
    let w = Workload::parse(&text, "w.toml").unwrap();
    let cfg = config(&ca, app.addr, 2, Stop::Pages(6));
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.get(ErrorKind::CheckBody), 6, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 6, "{:?}", s.errors);
    assert_eq!((s.pages_done, s.requests), (0, 6 * 4));
    let failure = s.check_failures.first().expect("a failure's sample");
    assert!(failure.head.starts_with("HTTP/3 200"), "{}", failure.head);
    assert!(failure.head.contains("x-user: w"), "{}", failure.head);
}

#[test]
fn a_body_that_expands_to_nothing_ends_its_stream_over_http3() {
    // Each file posts the user's note, empty for every other user: an empty body must end its
    // stream with the request's HEADERS, or the application (which answers at the body's end)
    // never answers and each such file times out.
    let ca = TestCa::new("flint bench h3 app test CA");
    let app = start(&ca);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), "name,note\nu0,\nu1,hi\n").unwrap();
    let text = PAGE.replace("USER", "{{users.name}}").replace(
        "{ path = \"/f1?user={{users.name}}\",",
        "{ path = \"/f1?user={{users.name}}\", method = \"POST\", body = \"{{users.note}}\",",
    );
    assert!(text.contains("method = \"POST\""), "{text}");
    let w = Workload::parse_in(
        &format!("[data.users]\nfile = \"users.csv\"\n{text}"),
        "w.toml",
        dir.path(),
    )
    .unwrap();
    let cfg = BenchConfig {
        threads: 1,
        response_timeout: Duration::from_secs(3),
        ..config(&ca, app.addr, 1, Stop::Pages(4))
    };
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    let st = app.state.lock().unwrap();
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((s.pages_done, s.requests), (4, 4 * 4));
    assert_eq!(st.requests, s.requests);
    // u1's two pages posted "hi", u0's two nothing.
    assert_eq!(st.body_bytes, 4);
}

#[test]
fn a_value_with_a_line_break_over_http3_is_not_sent() {
    // The token comes with a line break: a field holding it would split the head (QPACK would
    // carry it, an HTTP/1.1 hop behind the server would not), so the file is not sent.
    let ca = TestCa::new("flint bench h3 app test CA");
    let app = start(&ca);
    let text = r#"
[[page]]
weight = 1
files = [
  { path = "/crlf", extract = { t = { regex = 'tok="([^"]*)"' } } },
  { path = "/me?user=x", headers = { "X-Token" = "{{t}}" } },
]
"#;
    let w = Workload::parse(text, "w.toml").unwrap();
    let cfg = BenchConfig {
        threads: 1,
        ..config(&ca, app.addr, 1, Stop::Pages(6))
    };
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    let st = app.state.lock().unwrap();
    assert_eq!(
        s.errors.get(ErrorKind::UnsafeValueUnsent),
        6,
        "{:?}",
        s.errors
    );
    assert_eq!(s.errors.total(), 6, "{:?}", s.errors);
    assert_eq!((s.pages_done, s.requests), (0, 6));
    assert_eq!(
        st.files.get("x"),
        None,
        "a value with a line break was sent"
    );
    assert_eq!(st.requests, s.requests + s.unfinished);
}
