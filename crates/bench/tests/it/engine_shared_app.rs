//! An application workload over `--connections-per-client N`: a Webchild's N connections share
//! its one session. The test's application logs a user in (a session cookie and a token, each
//! login ending the user's previous session) and answers the page's other files only with the
//! current session's cookie and token, for the user the request names: a file sent on another
//! connection than the login's without the Webchild's jar or values fails, so does one carrying
//! another Webchild's, or one sent before the login's response (it holds the login for a while,
//! and a request of its user that comes meanwhile is counted apart). Its count of requests is
//! held to the client's requests + unfinished.

use crate::per_connection;

use bench::stats::ErrorKind;
use bench::workload::Workload;
use bench::{BenchConfig, BenchError, HttpMode, Stop, Target};
use per_connection::{read_until_stopped, PerConnection};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the application holds a login before answering it.
const LOGIN_HOLD: Duration = Duration::from_millis(15);

/// A page of a login and six files that need its cookie and its token, each naming the user.
const PAGE: &str = r#"
[[page]]
name = "visit"
weight = 1
files = [
  { path = "/login?user=USER", extract = { token = { header = "X-Token" } } },
  { path = "/f1?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/f2?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/f3?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/f4?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/f5?user=USER", headers = { "X-Token" = "{{token}}" } },
  { path = "/f6?user=USER", headers = { "X-Token" = "{{token}}" } },
]
"#;

/// What the application knows and saw.
#[derive(Default)]
struct State {
    /// Session id -> (user, token); a user's login removes the user's previous session.
    sessions: HashMap<String, (String, String)>,
    current: HashMap<String, String>,
    /// Users whose login is being held (received, not yet answered).
    logging_in: HashSet<String>,
    next: u64,
    /// Logins per user.
    logins: HashMap<String, u64>,
    /// The connections (client ports) each session's files came over.
    spread: HashMap<String, HashSet<u16>>,
    /// Files of a user that came while the user's login was held: sent before its response.
    early: u64,
    /// Files refused (no session, another user's, a stale one, a wrong token).
    refused: u64,
    /// Files (not logins) per user.
    files: HashMap<String, u64>,
}

struct App {
    server: PerConnection,
    received: Arc<AtomicU64>,
    state: Arc<Mutex<State>>,
}

fn start() -> App {
    let received = Arc::new(AtomicU64::new(0));
    let state = Arc::new(Mutex::new(State::default()));
    let (count, st) = (received.clone(), state.clone());
    let server = PerConnection::start(move |s, stop| serve(s, stop, &count, &st));
    App {
        server,
        received,
        state,
    }
}

fn serve(mut s: TcpStream, stop: &AtomicBool, count: &AtomicU64, state: &Mutex<State>) {
    let port = s.peer_addr().map_or(0, |a| a.port());
    let mut have = Vec::new();
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        have.extend_from_slice(data);
        while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&have[..end]).into_owned();
            have.drain(..end + 4);
            count.fetch_add(1, Ordering::SeqCst);
            let close = head.lines().next().is_some_and(|l| l.ends_with("HTTP/1.0"));
            let mut response = answer(&head, port, state);
            if close {
                response = response.replacen("\r\n", "\r\nConnection: close\r\n", 1);
            }
            if s.write_all(response.as_bytes()).is_err() || close {
                return false;
            }
        }
        true
    });
}

/// A header field's value.
fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn respond(status: &str, fields: &str) -> String {
    format!("HTTP/1.1 {status}\r\nContent-Length: 2\r\n{fields}\r\nok")
}

fn answer(head: &str, port: u16, state: &Mutex<State>) -> String {
    let target = head.split(' ').nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let user = query.strip_prefix("user=").unwrap_or("").to_owned();
    if path == "/login" {
        let (sid, token) = {
            let mut st = state.lock().unwrap();
            st.next += 1;
            let (sid, token) = (format!("s{}", st.next), format!("t{}", st.next));
            if let Some(old) = st.current.insert(user.clone(), sid.clone()) {
                st.sessions.remove(&old);
            }
            st.sessions
                .insert(sid.clone(), (user.clone(), token.clone()));
            st.logging_in.insert(user.clone());
            *st.logins.entry(user.clone()).or_default() += 1;
            (sid, token)
        };
        // Nothing of this user may come before the answer: it holds what the files need.
        std::thread::sleep(LOGIN_HOLD);
        state.lock().unwrap().logging_in.remove(&user);
        // The user "nobody" logs in without a token: the page's files can never be sent.
        let token = match user.as_str() {
            "nobody" => String::new(),
            _ => format!("X-Token: {token}\r\n"),
        };
        return respond(
            "200 OK",
            &format!("Set-Cookie: sid={sid}; Path=/\r\n{token}"),
        );
    }
    let mut st = state.lock().unwrap();
    *st.files.entry(user.clone()).or_default() += 1;
    if st.logging_in.contains(&user) {
        st.early += 1;
    }
    let sid = field(head, "cookie")
        .and_then(|c| c.split(';').find_map(|kv| kv.trim().strip_prefix("sid=")))
        .unwrap_or("")
        .to_owned();
    let token = field(head, "x-token").unwrap_or("");
    let ok = st
        .sessions
        .get(&sid)
        .is_some_and(|(u, t)| *u == user && t == token);
    if !ok {
        st.refused += 1;
        return respond("409 Conflict", "");
    }
    st.spread.entry(sid).or_default().insert(port);
    respond("200 OK", "")
}

/// The page with the user taken from `user` (a template), and the data sets before it.
fn workload(data: &str, user: &str) -> Workload {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), users(40)).unwrap();
    let text = format!("{data}\n{}", PAGE.replace("USER", user));
    Workload::parse_in(&text, "w.toml", dir.path()).unwrap()
}

/// A data file of `n` users, `u0` to `u(n-1)`.
fn users(n: usize) -> String {
    (0..n).fold("name\n".to_owned(), |s, i| s + &format!("u{i}\n"))
}

const UNIQUE_USERS: &str = "[data.users]\nfile = \"users.csv\"\npick = \"unique\"\n";

fn config(addr: SocketAddr, webchildren: usize, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency: webchildren,
        threads: 2,
        stop,
        connections_per_child: 6,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        fail_fast: false,
        ..BenchConfig::new(Target::http(addr))
    }
}

#[test]
fn six_connections_carry_one_session_and_wait_for_the_login() {
    for http in [HttpMode::KeepAlive, HttpMode::Http10] {
        let app = start();
        // 40 pages over 4 Webchildren, each page a user of its own (`unique`): the page's row
        // is the Webchild's, not a connection's.
        let w = workload(UNIQUE_USERS, "{{users.name}}");
        let cfg = BenchConfig {
            http,
            ..config(app.server.addr, 4, Stop::Pages(40))
        };
        let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
        let s = &r.stats;
        let st = app.state.lock().unwrap();
        assert_eq!(s.errors.total(), 0, "{http:?}: {:?}", s.errors);
        assert_eq!((st.refused, st.early), (0, 0), "{http:?}");
        assert_eq!(
            s.errors.get(bench::stats::ErrorKind::MissingValueUnsent),
            0,
            "{http:?}"
        );
        assert_eq!((s.pages_done, s.requests), (40, 280), "{http:?}");
        assert_eq!(app.received.load(Ordering::SeqCst), 280, "{http:?}");
        // Each user logged in once, and each session's six files came over more than the one
        // connection: the login's values and cookie reached the Webchild's other connections.
        assert_eq!(st.logins.len(), 40, "{http:?}");
        assert!(st.logins.values().all(|&n| n == 1), "{http:?}");
        assert_eq!(st.spread.len(), 40, "{http:?}");
        let least = st.spread.values().map(HashSet::len).min().unwrap();
        println!("{http:?}: each session's files over at least {least} connections");
        assert!(least >= 2, "{http:?}: {least}");
    }
}

#[test]
fn webchildren_never_share_a_session() {
    // Eight Webchildren each logging in as itself page after page on two threads: a cookie or
    // a token of another Webchild would be another user's session, refused.
    let app = start();
    let w = workload("", "w{{webchild}}");
    let r = bench::run(
        &config(app.server.addr, 8, Stop::Pages(48)),
        &w,
        &AtomicBool::new(false),
    )
    .expect("run");
    let s = &r.stats;
    let st = app.state.lock().unwrap();
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((st.refused, st.early), (0, 0));
    assert_eq!(s.requests, 48 * 7);
    assert_eq!(st.logins.len(), 8, "{:?}", st.logins);
    assert_eq!(st.logins.values().sum::<u64>(), 48);
}

#[test]
fn a_value_that_never_comes_fails_the_login_and_its_files_are_never_sent() {
    // Users u0, nobody, u1, nobody, ...: nobody's login gives no token.
    let app = start();
    let dir = tempfile::tempdir().unwrap();
    let rows = (0..10).fold("name\n".to_owned(), |s, i| s + &format!("u{i}\nnobody\n"));
    std::fs::write(dir.path().join("users.csv"), rows).unwrap();
    let text = format!(
        "[data.users]\nfile = \"users.csv\"\n{}",
        PAGE.replace("USER", "{{users.name}}")
    );
    let w = Workload::parse_in(&text, "w.toml", dir.path()).unwrap();
    let cfg = BenchConfig {
        threads: 1,
        ..config(app.server.addr, 1, Stop::Pages(20))
    };
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    let st = app.state.lock().unwrap();
    assert_eq!(
        s.errors.get(ErrorKind::ExtractMissing),
        10,
        "{:?}",
        s.errors
    );
    assert_eq!(s.errors.total(), 10, "{:?}", s.errors);
    assert_eq!(st.files.get("nobody"), None, "nobody's files were sent");
    assert_eq!((st.refused, st.early), (0, 0));
    assert_eq!(s.pages_done, 10);
    assert_eq!(s.requests, 10 * 7 + 10);
    assert_eq!(app.received.load(Ordering::SeqCst), s.requests);
}

#[test]
fn a_timed_run_ends_with_every_request_accounted_for() {
    let app = start();
    let w = workload("", "w{{webchild}}");
    let cfg = config(app.server.addr, 4, Stop::Duration(Duration::from_secs(1)));
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.requests > 0);
    // The server counts a request as its head arrives, which may be just after the run's end.
    let sent = s.requests + s.unfinished;
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.received.load(Ordering::SeqCst) < sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("requests {} unfinished {}", s.requests, s.unfinished);
    assert_eq!(app.received.load(Ordering::SeqCst), sent);
    let st = app.state.lock().unwrap();
    assert_eq!((st.refused, st.early), (0, 0));
}

#[test]
fn groups_of_an_application_stay_http_1() {
    let w = workload("", "w{{webchild}}");
    let cfg = BenchConfig {
        http: HttpMode::Http2,
        ..config("127.0.0.1:9".parse().unwrap(), 1, Stop::Pages(1))
    };
    match bench::run(&cfg, &w, &AtomicBool::new(false)) {
        Err(BenchError::Config(m)) => assert!(m.contains("--http 2"), "{m}"),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_unique_data_set_run_out_stops_the_webchild_and_all_its_connections_once() {
    // 40 rows for 60 pages of one Webchild: its 41st page finds none left.
    let app = start();
    let w = workload(UNIQUE_USERS, "{{users.name}}");
    let cfg = BenchConfig {
        threads: 1,
        ..config(app.server.addr, 1, Stop::Pages(60))
    };
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.get(ErrorKind::DataExhausted), 1, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 1, "{:?}", s.errors);
    assert_eq!((s.pages_done, s.requests), (40, 280));
    assert_eq!(app.received.load(Ordering::SeqCst), 280);
}
