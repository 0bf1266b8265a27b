//! Over HTTP/2 a one-file page's time is its file's response time, page by page, whether the
//! page went on an open connection or waited for a new one (its connect, and the server's
//! SETTINGS, are in both: docs/latency.md), with lanes (`--streams N`, each stream a page) and
//! without.

use crate::common;
use crate::h2server;

use bench::Stop;
use common::{ms, one_file};
use h2server::{run, Fault, H2Server};

/// A new connection's SETTINGS come this late: far above a response's time here.
const SETTINGS_PAUSE: u64 = 60;

fn assert_page_is_response(streams: Option<u32>, goaway_after: u64, pages: u64) {
    let server = H2Server::start(Fault::SlowSettings(ms(SETTINGS_PAUSE), goaway_after));
    let r = run(&server, &one_file(), Stop::Pages(pages), |c| {
        c.streams = streams;
    });
    let s = &r.stats;
    let what = format!("--streams {streams:?}, GOAWAY after {goaway_after}");
    assert_eq!(s.errors.total(), 0, "{what}: {:?}", s.errors);
    assert_eq!(s.pages[0].hits, pages, "{what}");
    assert_eq!(s.response.count(), pages, "{what}");
    // Every page waited for its connection's SETTINGS at most once; the first pages did.
    assert!(
        s.pages[0].time_us_max >= SETTINGS_PAUSE * 1000,
        "{what}: page max {} µs",
        s.pages[0].time_us_max
    );
    // Page by page the same value: the same maxima, and the same distributions (both
    // histograms have the same precision, so any page whose time differs from its file's shows).
    assert_eq!(
        s.pages[0].time_us_max, s.response_us_max,
        "{what}: page max vs response max"
    );
    assert!(
        s.page == s.response,
        "{what}: page and response distributions differ"
    );
}

#[test]
fn a_one_file_page_on_a_new_connection_takes_its_response_time() {
    assert_page_is_response(None, u64::MAX, 20);
}

#[test]
fn a_lane_on_a_new_connection_takes_its_response_time() {
    assert_page_is_response(Some(4), u64::MAX, 40);
}

#[test]
fn pages_after_a_goaway_wait_for_the_new_connection_in_their_response_time() {
    // The server's GOAWAY after 5 streams a connection: the pages after it wait for a new
    // connection (its SETTINGS late), some of them sent again.
    assert_page_is_response(None, 5, 20);
    assert_page_is_response(Some(4), 5, 40);
}
