//! A slice's start skew (a host's `start_skew_ms`) is how late its first request began: its
//! first connect, after the agreed start in the closed loop, after its page's intended time in
//! the open loop. Held to a server that records when each request arrived.

use crate::common;

use bench::{NoObserver, Slice, Stop, Target};
use common::{config, ms, one_file};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, UNIX_EPOCH};
use test_support::recording::Recording;

fn us(t: std::time::SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

/// Runs Webchildren `children` of `cfg` as a slice starting `start_in` from now, against `srv`:
/// the slice's start skew, and when it started and when the first request arrived (µs since the
/// epoch, on the wall clock both share).
fn skew_and_first_arrival(
    srv: &Recording,
    cfg: &bench::BenchConfig,
    children: std::ops::Range<usize>,
    start_in: Duration,
) -> (Duration, u64, u64) {
    let slice = Slice {
        children,
        start: Some(Instant::now() + start_in),
        start_unix_us: None,
    };
    let stop = AtomicBool::new(false);
    let o = bench::run_slice(cfg, &one_file(), &slice, &stop, &NoObserver).unwrap();
    let skew = o.start_skew.expect("it connected");
    let first = srv.arrivals().into_iter().map(us).min().unwrap();
    (skew, us(o.result.started_at), first)
}

#[test]
fn the_skew_ends_at_the_first_connect_not_before_the_first_arrival() {
    let srv = Recording::start(Duration::from_micros(200));
    let cfg = config(srv.addr, 4, Stop::Pages(40));
    let (skew, start, first) = skew_and_first_arrival(&srv, &cfg, 0..4, ms(100));
    // The first request arrived after its connect began; the wall clock and the run's monotonic
    // one agree within a few µs (the margin).
    assert!(
        start + skew.as_micros() as u64 <= first + 50,
        "skew {skew:?}, first arrival {} µs after the start",
        first.saturating_sub(start)
    );
}

#[test]
fn in_the_open_loop_the_skew_is_from_the_first_page_due() {
    // Webchildren 2 and 3 of 4 at 10 pages/s: each page of each Webchild 400 ms apart, theirs
    // due 200 and 300 ms after the start. Their first request leaves then, on time.
    let srv = Recording::start(Duration::from_micros(200));
    let mut cfg = config(srv.addr, 4, Stop::Duration(ms(500)));
    cfg.rate = Some(10.0);
    cfg.target = Target::http(srv.addr);
    let (skew, start, first) = skew_and_first_arrival(&srv, &cfg, 2..4, ms(50));
    assert!(first >= start + 200_000, "sent before its page was due");
    // Late by the wake-up, not by the 200 ms its first page waited for (the margin is for a
    // loaded machine).
    assert!(skew < ms(150), "{skew:?}");
}

#[test]
fn a_slice_that_begins_after_its_window_says_how_late_it_began() {
    // The agreed start is 800 ms past, the window 300 ms: nothing connects, and the slice
    // still says when it began (at least 800 ms late), never nothing.
    let srv = Recording::start(Duration::from_micros(200));
    let cfg = config(srv.addr, 2, Stop::Duration(ms(300)));
    let slice = Slice {
        children: 0..2,
        start: Some(Instant::now() - ms(800)),
        start_unix_us: None,
    };
    let stop = AtomicBool::new(false);
    let o = bench::run_slice(&cfg, &one_file(), &slice, &stop, &NoObserver).unwrap();
    assert_eq!(o.result.stats.requests, 0);
    let skew = o
        .start_skew
        .expect("a start skew although nothing connected");
    assert!(skew >= ms(800), "{skew:?}");
}
