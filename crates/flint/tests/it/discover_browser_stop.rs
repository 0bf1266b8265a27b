//! `flint discover --browser`'s Chromium ends with it on every path: Chromium dying mid-page
//! is an error naming the page (not a wait for the page timeout), a renderer crashing is its
//! page's error while the browser goes on, Ctrl-C while a page loads ends the crawl and the
//! browser, and without Chromium one line says what to install.
//!
//! A page that never finishes loading is made with an image on a listener that accepts and
//! never answers: its connection tells the test Chromium is mid-load.

use crate::common;

use common::{flint, start_server, wait_exit};
use discover::browser::{find_chromium, BrowserOptions};
use lab_process::procfs;
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Far beyond every bounded wait below: a test that passes did not wait for it.
const PAGE_TIMEOUT: Duration = Duration::from_secs(300);

/// A listener that accepts and never answers; the receiver hears of each connection.
fn hanging() -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
            let _ = tx.send(());
        }
    });
    (addr, rx)
}

/// `/hang.html`, whose image never comes.
fn write_hanging_page(root: &Path, hang: &str) {
    std::fs::write(
        root.join("hang.html"),
        format!("<!doctype html><p>waiting</p><img src=\"http://{hang}/never.png\">\n"),
    )
    .unwrap();
}

/// The Chromium a `flint discover` started: its child that leads a group and talks on the
/// DevTools pipe.
fn chromium_under(parent: u32) -> Option<u32> {
    procfs::process_tree(parent).ok()?.into_iter().find(|&pid| {
        procfs::stat(pid).is_ok_and(|s| s.pgrp == pid && s.ppid == parent)
            && std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--remote-debugging-pipe"))
    })
}

fn gone_within(pgid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while procfs::group_alive(pgid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn chromium_dying_mid_page_is_an_error_naming_the_page_and_nothing_is_left() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    let (hang, connected) = hanging();
    write_hanging_page(root.path(), &hang);
    let mut child = flint()
        .args(["discover", &format!("http://{}/hang.html", server.addr)])
        .args(["--browser", "--page-timeout", "300s", "--ignore-robots"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mid_load = connected.recv_timeout(Duration::from_secs(120));
    let browser = chromium_under(child.id());
    if let Some(b) = browser {
        let pid = rustix::process::Pid::from_raw(b as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    }
    let started = Instant::now();
    let status = wait_exit(&mut child, PAGE_TIMEOUT / 4);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let waited = started.elapsed();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    mid_load.unwrap_or_else(|_| panic!("Chromium never asked for the hanging image: {stderr}"));
    let browser = browser.expect("a Chromium under flint discover");
    let status = status.unwrap_or_else(|| panic!("still running {waited:?} after: {stderr}"));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/hang.html"), "{stderr}");
    assert!(stderr.contains("exited or crashed"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        gone_within(browser, Duration::from_secs(30)),
        "Chromium's group {browser} outlived flint discover"
    );
}

#[test]
fn ctrl_c_while_a_page_loads_ends_discover_and_its_chromium() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    let (hang, connected) = hanging();
    write_hanging_page(root.path(), &hang);
    let mut child = flint()
        .args(["discover", &format!("http://{}/hang.html", server.addr)])
        .args(["--browser", "--page-timeout", "300s", "--ignore-robots"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mid_load = connected.recv_timeout(Duration::from_secs(120));
    let browser = chromium_under(child.id());
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(60));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    mid_load.unwrap_or_else(|_| panic!("Chromium never asked for the hanging image: {stderr}"));
    let browser = browser.expect("a Chromium under flint discover");
    let status = status.unwrap_or_else(|| panic!("not ended within 60 s of SIGINT: {stderr}"));
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        gone_within(browser, Duration::from_secs(30)),
        "Chromium's group {browser} outlived flint discover"
    );
}

#[test]
fn without_chromium_one_line_names_the_package_and_the_variable() {
    let out = flint()
        .args(["discover", "http://127.0.0.1:1/", "--browser"])
        .env("FLINT_CHROMIUM", "/nonexistent/chromium")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("apt-get install chromium"), "{stderr}");
    assert!(stderr.contains("FLINT_CHROMIUM"), "{stderr}");
    // Nothing was asked of the site: the check comes first (port 1 refuses anyway, but the
    // message is about Chromium, not the connection).
    assert!(!stderr.contains("refused"), "{stderr}");
}

#[test]
fn a_crashed_renderer_is_its_page_s_error_and_the_browser_goes_on() {
    use discover::browser::page::LoadError;
    let opts = BrowserOptions {
        chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
        all_origins: false,
        page_timeout: PAGE_TIMEOUT,
        insecure: false,
    };
    let mut browser = discover::browser::Browser::start(&opts, 800).expect("Chromium starts");
    let started = Instant::now();
    match browser.load("chrome://crash", None) {
        Err(LoadError::Page(why)) => assert!(why.contains("crashed"), "{why}"),
        other => panic!("not the page's error: {other:?}"),
    }
    assert!(
        started.elapsed() < PAGE_TIMEOUT / 4,
        "waited {:?}",
        started.elapsed()
    );
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("ok.html"), "<!doctype html><p>ok</p>\n").unwrap();
    let server = start_server(root.path(), 1);
    let load = browser
        .load(&format!("http://{}/ok.html", server.addr), None)
        .expect("the next page loads");
    assert_eq!(load.requests[0].status, Some(200), "{load:?}");
}

/// A cross-site iframe (`localhost` beside `127.0.0.1`) runs in a renderer of its own, and its
/// document's end is told to its own target: the page must not wait for it until the timeout.
#[test]
fn a_cross_site_frame_does_not_hold_its_page_to_the_timeout() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    let frame = format!("http://localhost:{}/f.html", server.port());
    std::fs::write(
        root.path().join("index.html"),
        format!("<!doctype html><p>x</p><iframe src=\"{frame}\"></iframe><img src=\"a.png\">\n"),
    )
    .unwrap();
    std::fs::write(
        root.path().join("f.html"),
        "<p>frame</p><img src=\"a.png\">\n",
    )
    .unwrap();
    std::fs::write(root.path().join("a.png"), [b'p'; 500]).unwrap();
    let start = url::Url::parse(&format!("http://{}/index.html", server.addr)).unwrap();
    let opts = discover::Options {
        depth: 0,
        max_pages: 10,
        max_files: 100,
        ignore_robots: true,
        viewport: None,
        dark: false,
        limits: discover::Limits {
            max_size: 1 << 20,
            timeout: Duration::from_secs(10),
            rate: 0.0,
        },
        tls: discover::TlsOptions::default(),
        http: discover::Http::Http11,
        stop: None,
        browser: Some(BrowserOptions {
            chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
            all_origins: false,
            page_timeout: PAGE_TIMEOUT,
            insecure: false,
        }),
    };
    let started = Instant::now();
    let site = discover::crawl(&start, &opts).expect("crawl");
    let waited = started.elapsed();
    assert!(waited < PAGE_TIMEOUT / 4, "waited {waited:?}");
    let page = &site.pages[0];
    assert!(page.notes.is_empty(), "{:?}", page.notes);
    assert!(
        page.entries.contains(&discover::Entry::Skipped {
            url: frame,
            reason: "an iframe on another origin: not listed (bench requests the one origin)"
                .into()
        }),
        "{:?}",
        page.entries
    );
    assert!(page.files().any(|f| f.path == "/a.png" && f.bytes == 500));
}
