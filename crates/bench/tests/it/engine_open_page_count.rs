//! The open loop cut with pages of several files in flight, over HTTP/2 and HTTP/3: each page
//! due in the window enters the page figures once (ended, in flight at the end, or never
//! started), however many of its files were still unanswered; every file in flight at the end
//! enters the response figures.
//!
//! The run is cut by count, not by time: once the server has received the streams it will never
//! answer, the stop flag ends it, through the same end-of-run accounting as `-d` (the load loop
//! takes the flag's moment as its end). A run cut after a fixed second would need both
//! Webchildren connected with every file sent by then, which a loaded machine does not promise.

use crate::common::{Behaviour, TestServer};
use crate::h2server::{Fault, H2Server};
use crate::h3_runs;

use bench::{BenchConfig, HttpMode, RunResult, Stop, Workload};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest a run may take (it is stopped once the stalled streams are in): past it, the
/// run ends by its duration and the count it fell short of fails the test.
const LONGEST: Duration = Duration::from_secs(30);

/// Runs `config` over `workload`, stopping it once `stalled()` reaches `stalls` (polled every
/// 10 ms, for at most the run's duration).
fn run_until_stalled(
    config: &BenchConfig,
    workload: &Workload,
    stalled: impl Fn() -> u64 + Sync,
    stalls: u64,
) -> RunResult {
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) && stalled() < stalls {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.store(true, Ordering::Relaxed);
        });
        let r = bench::run(config, workload, &stop).expect("run");
        done.store(true, Ordering::Relaxed);
        r
    })
}

/// One page of `files`.
fn pages_of(files: &[&str]) -> Workload {
    let list: Vec<String> = files.iter().map(|f| format!("\"{f}\"")).collect();
    let text = format!(
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [{}]\n",
        list.join(", ")
    );
    Workload::parse(&text, "test").unwrap()
}

/// What every such run must show; `at_least_unfinished`: files known to be in flight at the
/// end (more than one a page, else the test shows nothing).
fn assert_each_page_once(r: &RunResult, at_least_unfinished: u64) {
    let s = &r.stats;
    let in_flight = s.unfinished + s.unsent_at_end;
    assert!(
        in_flight >= at_least_unfinished,
        "unfinished {}, unsent {}",
        s.unfinished,
        s.unsent_at_end
    );
    assert!(s.pages_scheduled > 0);
    assert_eq!(
        s.page.count(),
        s.pages_scheduled,
        "page figures vs pages due: unfinished {}, unsent {}, not sent {}, ended {}",
        s.unfinished,
        s.unsent_at_end,
        s.pages_not_sent,
        s.pages.iter().map(|p| p.hits + p.errors).sum::<u64>()
    );
    // Every request answered, in flight at the end, or never sent enters the response figures.
    assert!(s.response.count() >= s.requests + in_flight);
}

#[test]
fn http2_counts_a_page_with_several_files_unanswered_at_the_end_once() {
    // Every stream stalls: each Webchild's first page has its three files in flight to the end,
    // the pages after it never start. Stopped once the server holds both pages' six streams.
    let server = H2Server::start(Fault::StallEvery(1));
    let mut config = crate::common::config(server.addr, 2, Stop::Duration(LONGEST));
    config.http = HttpMode::Http2;
    config.connect_timeout = Duration::from_secs(10);
    config.rate = Some(20.0);
    config.response_timeout = LONGEST * 2;
    let streams = &server.streams;
    let r = run_until_stalled(
        &config,
        &pages_of(&["/a", "/b", "/c"]),
        || streams.load(Ordering::Relaxed),
        2 * 3,
    );
    assert!(r.interrupted, "the server never held 6 streams");
    assert_each_page_once(&r, 2 * 3);
}

#[test]
fn http3_counts_a_page_with_several_files_unanswered_at_the_end_once() {
    // Each page: one file answered, two the server never answers. Stopped once the server
    // holds four of those.
    let (ca, server) = h3_runs::server("flint bench open page count CA", &http3::Limits::default());
    let mut config = h3_runs::config(&ca, &server, 2, Stop::Duration(LONGEST));
    config.rate = Some(20.0);
    config.response_timeout = LONGEST * 2;
    let workload = pages_of(&["/bytes/100", "/stall", "/stall"]);
    let log = &server.log;
    let r = run_until_stalled(&config, &workload, || log.lock().unwrap().stalled, 2 * 2);
    assert!(r.interrupted, "the server never held 4 stalled streams");
    assert_each_page_once(&r, 2 * 2);
}

#[test]
fn a_page_due_in_the_warmup_and_in_flight_at_the_end_is_not_a_page_of_the_window() {
    // One Webchild, a page due every 100 ms, each answered 600 ms after it is read: the
    // backlog grows from the start, so the page in flight at the end was due in the warm-up
    // (1 s) and, two pages on at least, started after the window opened. Its file enters the
    // response figures; the page, not one of the window's (`pages_scheduled`), does not enter
    // the page figures.
    let server = TestServer::start(Behaviour::Delayed(Duration::from_millis(600)));
    let mut config = crate::common::config(server.addr, 1, Stop::Duration(Duration::from_secs(3)));
    config.warmup = Duration::from_secs(1);
    config.rate = Some(10.0);
    config.connect_timeout = Duration::from_secs(10);
    config.response_timeout = LONGEST;
    let r = bench::run(&config, &pages_of(&["/a"]), &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    // The page in flight started in the window (one begun in the warm-up is not counted).
    assert_eq!(s.unfinished, 1, "{:?}", s.errors);
    assert_eq!(s.pages_not_sent, s.pages_scheduled);
    assert_eq!(
        s.page.count(),
        s.pages_scheduled,
        "page figures vs pages due: ended {}",
        s.pages.iter().map(|p| p.hits + p.errors).sum::<u64>()
    );
}
