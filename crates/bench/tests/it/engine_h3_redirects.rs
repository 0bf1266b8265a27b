//! `--redirect N` over `--http 3`, as over HTTP/2: a redirect's Location is a new stream of
//! the same connection, each hop a request the server counted, the file's response the final
//! one. Against a small server on the `http3::Server` of crates/http3 in a thread of the test:
//! a directory without its slash redirects to it (as flint serve does), `/loop` redirects to
//! itself, and `/login` (a POST) answers 303 to a relative `home` with a session cookie that
//! `/home` needs.

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

/// Requests the server saw, by method and path (its query left out).
type Seen = Mutex<HashMap<String, u64>>;

struct App {
    addr: SocketAddr,
    seen: Arc<Seen>,
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
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (sn, sp) = (seen.clone(), stop.clone());
    let thread = std::thread::spawn(move || serve(sock, Server::new(config, addr), &sn, &sp));
    App {
        addr,
        seen,
        stop,
        thread: Some(thread),
    }
}

type Answer = (u16, Vec<(&'static [u8], String)>, &'static str);

fn answer(method: &str, target: &str, cookie: &str, seen: &Seen) -> Answer {
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    *seen
        .lock()
        .unwrap()
        .entry(format!("{method} {path}"))
        .or_default() += 1;
    let moved = |status, to: String| (status, vec![(&b"location"[..], to)], "");
    match path {
        "/dir" => moved(301, "/dir/".into()),
        "/loop" => moved(302, "/loop".into()),
        "/login" => (
            303,
            vec![
                (&b"location"[..], "home".to_owned()),
                (b"set-cookie", "sid=42; Path=/".to_owned()),
            ],
            "",
        ),
        "/home" if !cookie.contains("sid=42") => (403, Vec::new(), "no session"),
        _ => (200, Vec::new(), "fine"),
    }
}

/// The server's loop: datagrams in and out, each request answered at its body's end; every
/// wait at most 20 ms so that `stop` is seen.
fn serve(sock: UdpSocket, mut server: Server, seen: &Seen, stop: &AtomicBool) {
    let mut pump = Pump::new(sock);
    let mut waiting: HashMap<http3::RequestId, Answer> = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        pump.turn(&mut server);
        while let Some(ev) = server.poll() {
            let (id, (status, head, body)) = match ev {
                ServerEvent::Request { id, fields, end } => {
                    let text =
                        |name: &[u8]| String::from_utf8_lossy(fields.get(name).unwrap_or(b""));
                    let a = answer(&text(b":method"), &text(b":path"), &text(b"cookie"), seen);
                    if !end {
                        waiting.insert(id, a);
                        continue;
                    }
                    (id, a)
                }
                ServerEvent::Body { id } => {
                    while let Ok(1..) = server.recv_body(id, pump.scratch()) {}
                    continue;
                }
                ServerEvent::BodyEnd { id } => match waiting.remove(&id) {
                    Some(a) => (id, a),
                    None => continue,
                },
                _ => continue,
            };
            let head: Vec<(&[u8], &[u8])> = head.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
            if server.send_response(id, status, &head, false).is_ok() {
                let _ = server.send_body(id, body.as_bytes(), true);
            }
        }
    }
}

fn config(ca: &TestCa, addr: SocketAddr, redirect: u32, pages: u64) -> BenchConfig {
    BenchConfig {
        concurrency: 2,
        threads: 1,
        stop: Stop::Pages(pages),
        http: HttpMode::Http3,
        redirect,
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

fn seen(app: &App, what: &str) -> u64 {
    app.seen.lock().unwrap().get(what).copied().unwrap_or(0)
}

#[test]
fn a_directory_without_its_slash_is_followed_as_a_new_stream() {
    let ca = TestCa::new("flint bench h3 redirect test CA");
    let app = start(&ca);
    let w = Workload::parse(
        "[[page]]\nweight = 1\nfiles = [\"/dir\", \"/a\"]\n",
        "w.toml",
    )
    .unwrap();
    let r = bench::run(&config(&ca, app.addr, 3, 10), &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.pages_done, 10);
    assert_eq!(s.redirects.followed, 10);
    assert_eq!((seen(&app, "GET /dir"), seen(&app, "GET /dir/")), (10, 10));
    // Each hop is a request the server counted.
    assert_eq!(s.requests, 10 * 3);
    assert_eq!(s.statuses.get(301), 10);
}

#[test]
fn a_loop_past_n_is_too_many_redirects_over_http3() {
    let ca = TestCa::new("flint bench h3 redirect test CA");
    let app = start(&ca);
    let w = Workload::from_paths(&["/loop".into()]).unwrap();
    let r = bench::run(&config(&ca, app.addr, 2, 4), &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(
        s.errors.get(ErrorKind::TooManyRedirects),
        4,
        "{:?}",
        s.errors
    );
    assert_eq!(s.redirects.followed, 4 * 2);
    assert_eq!(seen(&app, "GET /loop"), 4 * 3);
}

#[test]
fn an_application_login_is_followed_with_its_cookie_as_a_get() {
    // The 303 of a POST is followed with a GET to its relative Location, carrying the cookie
    // it set: /home refuses a request without it.
    let ca = TestCa::new("flint bench h3 redirect test CA");
    let app = start(&ca);
    let text = r#"
[[page]]
weight = 1
files = [{ path = "/login?u={{webchild}}", method = "POST", body = "user={{webchild}}",
           expect = { status = 200, body_contains = "fine" } }]
"#;
    let w = Workload::parse(text, "w.toml").unwrap();
    let r = bench::run(&config(&ca, app.addr, 3, 6), &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?} {:?}", s.errors, s.check_failures);
    assert_eq!((s.pages_done, s.redirects.followed), (6, 6));
    assert_eq!(seen(&app, "POST /login"), 6);
    assert_eq!(seen(&app, "GET /home"), 6);
}
