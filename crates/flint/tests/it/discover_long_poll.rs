//! `flint discover --browser` on a page whose script holds a long-poll request open (a chat, a
//! live feed): the network is never idle, so the page is cut at `--page-timeout`, and what it
//! fetched until then is its file set: what the HTML named, what the script fetched before the
//! poll and while it was open, the poll itself a comment ("still loading at --page-timeout").
//!
//! The site is served by a small server of the test's own (flint serve has no request that
//! never ends): it answers files with keep-alive and holds `/poll` open without an answer,
//! telling the test when the poll's connection opens and when Chromium closes it, which bounds
//! how long the page was held.

use discover::browser::{find_chromium, BrowserOptions};
use discover::{Entry, Limits, Options, TlsOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PAGE: &str = r#"<!doctype html>
<html><head><title>live</title><script src="/js/live.js"></script></head>
<body><p>Live.</p></body></html>
"#;

/// Data first (an image it names inserted), then the long poll, then a fetch a second later,
/// while the poll is still open.
const SCRIPT: &str = r#"
fetch('/data.json').then(r => r.json()).then(d => {
  const img = document.createElement('img');
  img.src = d.image;
  document.body.appendChild(img);
  fetch('/poll?since=0').then(r => r.text()).then(t => { document.title = t; });
  setTimeout(() => fetch('/late.json'), 1000);
});
"#;

fn file(path: &str) -> Option<(&'static str, Vec<u8>)> {
    Some(match path {
        "/live.html" => ("text/html", PAGE.as_bytes().to_vec()),
        "/js/live.js" => ("text/javascript", SCRIPT.as_bytes().to_vec()),
        "/data.json" => (
            "application/json",
            br#"{"image": "/img/feed.png"}"#.to_vec(),
        ),
        "/img/feed.png" => ("image/png", vec![b'p'; 2222]),
        "/late.json" => ("application/json", b"{}".to_vec()),
        _ => return None,
    })
}

/// What the server tells the test of the poll.
enum Poll {
    Opened(Instant),
    Closed(Instant),
}

/// Serves `file`'s paths (404 otherwise) on 127.0.0.1:0 and holds `/poll` open.
fn serve() -> (String, mpsc::Receiver<Poll>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || connection(conn, tx));
        }
    });
    (addr, rx)
}

fn connection(conn: TcpStream, tx: mpsc::Sender<Poll>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(300)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        // The rest of the head (GETs carry no body).
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
        }
        if path.starts_with("/poll") {
            let _ = tx.send(Poll::Opened(Instant::now()));
            // No answer: read until the browser closes the connection.
            let _ = reader.read_to_end(&mut Vec::new());
            let _ = tx.send(Poll::Closed(Instant::now()));
            return;
        }
        let (status, kind, body) = match file(&path) {
            Some((kind, body)) => ("200 OK", kind, body),
            None => ("404 Not Found", "text/plain", b"not found".to_vec()),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err() {
            return;
        }
    }
}

#[test]
fn a_long_poll_ends_the_page_at_its_timeout_with_what_it_fetched() {
    let (addr, polls) = serve();
    let page_timeout = Duration::from_secs(8);
    let start = url::Url::parse(&format!("http://{addr}/live.html")).unwrap();
    let crawl = std::thread::spawn(move || {
        discover::crawl(
            &start,
            &Options {
                depth: 0,
                max_pages: 1,
                max_files: 100,
                ignore_robots: false,
                viewport: Some(800),
                dark: false,
                limits: Limits {
                    max_size: 1 << 20,
                    timeout: Duration::from_secs(10),
                    rate: 0.0,
                },
                tls: TlsOptions::default(),
                http: discover::Http::Http11,
                stop: None,
                browser: Some(BrowserOptions {
                    chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
                    all_origins: false,
                    page_timeout,
                    insecure: false,
                }),
            },
        )
    });
    // The poll opens once the page has loaded and its data came back; Chromium closes its
    // connection when the page is cut (its tab closed). Both within bounded waits.
    let opened = match polls.recv_timeout(Duration::from_secs(120)) {
        Ok(Poll::Opened(at)) => at,
        _ => panic!("the page's script never opened its poll"),
    };
    let closed = match polls.recv_timeout(page_timeout + Duration::from_secs(60)) {
        Ok(Poll::Closed(at)) => at,
        _ => panic!("the poll was still held {page_timeout:?} + 60 s after it opened"),
    };
    let site = crawl.join().unwrap().expect("crawl");
    // The page began before its poll: held no longer than --page-timeout and the time to
    // close a tab (seconds on a loaded machine: the margin is wide, the bound is what counts;
    // a page left to its poll would hold it past the 60 s wait above).
    let held = closed - opened;
    eprintln!("the poll was held {held:?} (--page-timeout {page_timeout:?})");
    assert!(
        held <= page_timeout + Duration::from_secs(20),
        "the poll was held {held:?} with --page-timeout {page_timeout:?}"
    );

    let page = &site.pages[0];
    let files: Vec<&str> = page.files().map(|f| f.path.as_str()).collect();
    assert_eq!(
        files,
        [
            "/live.html",
            "/js/live.js",
            "/data.json",
            "/img/feed.png",
            "/late.json"
        ],
        "{:#?}",
        page.entries
    );
    let poll = page.entries.iter().find_map(|e| match e {
        Entry::Skipped { url, reason } if url.starts_with("/poll") => Some(reason.as_str()),
        _ => None,
    });
    assert_eq!(
        poll.map(|r| r.starts_with("still loading at --page-timeout")),
        Some(true),
        "{:#?}",
        page.entries
    );
    assert!(
        page.notes
            .iter()
            .any(|n| n.contains("not idle at --page-timeout")),
        "{:?}",
        page.notes
    );
    let sizes: Vec<u64> = page.files().map(|f| f.bytes).collect();
    assert_eq!(sizes[3], 2222, "the inserted image's size");
}
