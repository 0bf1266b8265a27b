//! The open loop cut by the run's duration with pages of several files in flight, over HTTP/2
//! and HTTP/3: each page due in the window enters the page figures once (ended, in flight at
//! the end, or never started), however many of its files were still unanswered; every file
//! in flight at the end enters the response figures.

use crate::h2server::{run, Fault, H2Server};
use crate::h3_runs;

use bench::{RunResult, Stop, Workload};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const RUN: Duration = Duration::from_secs(1);

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
    // the pages after it never start.
    let server = H2Server::start(Fault::StallEvery(1));
    let r = run(
        &server,
        &pages_of(&["/a", "/b", "/c"]),
        Stop::Duration(RUN),
        |c| {
            c.rate = Some(20.0);
            c.response_timeout = Duration::from_secs(30);
        },
    );
    assert_each_page_once(&r, 2 * 3);
}

#[test]
fn http3_counts_a_page_with_several_files_unanswered_at_the_end_once() {
    // Each page: one file answered, two the server never answers.
    let (ca, server) = h3_runs::server("flint bench open page count CA", &http3::Limits::default());
    let mut config = h3_runs::config(&ca, &server, 2, Stop::Duration(RUN));
    config.rate = Some(20.0);
    config.response_timeout = Duration::from_secs(30);
    let workload = pages_of(&["/bytes/100", "/stall", "/stall"]);
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert_each_page_once(&r, 2 * 2);
}
