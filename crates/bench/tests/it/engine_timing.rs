//! Warm-up, open loop, think time, threads and the merge: what is measured, and when.

use crate::common;

use bench::Stop;
use common::timed::until_busy;
use common::{config, ms, one_file, Behaviour, TestServer};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, UNIX_EPOCH};

#[test]
fn warmup_is_run_but_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.csv");
    // The server saw the warm-up's requests, the measured ones, and perhaps the one still in
    // flight at the end: what is left over is exactly the warm-up's count. Both must be some;
    // warm-up and window are made longer if a busy machine left either empty.
    let warmup_of = |srv: &TestServer, r: &bench::RunResult| {
        srv.seen
            .requests()
            .saturating_sub(r.stats.requests + r.stats.unfinished)
    };
    let (r, warmup, window) = until_busy(
        ms(400),
        |window| {
            let srv = TestServer::start(Behaviour::Good(10));
            let mut cfg = config(srv.addr, 1, Stop::Duration(window));
            cfg.warmup = window;
            cfg.think = Some(ms(20));
            cfg.log = Some(log.clone());
            let t0 = Instant::now();
            let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
            assert!(t0.elapsed() >= 2 * window);
            let warmup = warmup_of(&srv, &r);
            (r, warmup, window)
        },
        |(r, warmup, _)| r.stats.requests > 0 && *warmup > 0,
    );
    assert!(r.stats.requests > 0);
    assert!(
        warmup > 0,
        "measured {}, unfinished {}: no warm-up",
        r.stats.requests,
        r.stats.unfinished
    );
    assert_eq!(r.duration, window);
    // Nothing logged started before the measured window.
    let start = r.started_at.duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
    let text = std::fs::read_to_string(&log).unwrap();
    // One line per request, and one for a request still in flight at the end, if any.
    let finished = text.lines().filter(|l| !l.ends_with(",unfinished"));
    assert_eq!(finished.count() as u64, 1 + r.stats.requests);
    assert_eq!(
        text.lines().count() as u64,
        1 + r.stats.requests + r.stats.unfinished
    );
    for line in text.lines().skip(1) {
        let t: u64 = line.split(',').nth(4).unwrap().parse().unwrap();
        assert!(t >= start, "{line} starts before {start}");
    }
}

#[test]
fn think_time_paces_a_closed_loop() {
    let srv = TestServer::start(Behaviour::Good(10));
    let (r, window) = until_busy(
        ms(500),
        |window| {
            let mut cfg = config(srv.addr, 1, Stop::Duration(window));
            cfg.think = Some(ms(50));
            let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
            (r, window)
        },
        |(r, _)| r.stats.pages_done > 0,
    );
    // One page every 50 ms at most: about 10 in 500 ms, certainly not hundreds. A loaded
    // machine only makes fewer, so the lower bound is just that the loop ran (in a longer
    // window if a busy machine left the first one empty).
    let most = 12 * window.as_millis() as u64 / 500;
    assert!(
        (1..=most).contains(&r.stats.pages_done),
        "{} in {window:?}",
        r.stats.pages_done
    );
}

#[test]
fn open_loop_rate_is_honoured_and_corrected_latency_is_not_below_uncorrected() {
    let srv = TestServer::start(Behaviour::Good(100));
    let mut cfg = config(srv.addr, 4, Stop::Duration(Duration::from_secs(1)));
    cfg.rate = Some(200.0);
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    let pages = r.stats.pages_done;
    // Never more than the schedule allows; fewer when this machine is loaded (a late thread
    // does not catch up), so the lower bound only says the schedule was followed at all.
    assert!(
        (20..=300).contains(&pages),
        "{pages} pages at 200/s for 1 s"
    );
    let corrected = r.stats.page.summary();
    let uncorrected = r.stats.page_uncorrected.as_ref().unwrap().summary();
    // The corrected figures also hold the pages the schedule called for that never left (a busy
    // machine can starve the loop) and those unfinished at the end, each with its wait so far.
    assert_eq!(
        corrected.count,
        uncorrected.count + r.stats.pages_not_sent + r.stats.unfinished
    );
    assert!(corrected.max >= uncorrected.max);
    assert!(corrected.mean >= uncorrected.mean);
    let resp_c = r.stats.response.summary();
    let resp_u = r.stats.response_uncorrected.as_ref().unwrap().summary();
    assert!(resp_c.mean >= resp_u.mean);
}

#[test]
fn open_loop_counts_a_stalled_server_from_the_intended_start() {
    // One Webchild at 50 pages/s against a server that never answers within its 300 ms
    // timeout: after the first page every page starts late, so the corrected page time of a
    // page that did complete would include the wait; here, no page completes at all, and the
    // schedule does not make the client send faster to catch up.
    let srv = TestServer::start(Behaviour::NeverAnswer);
    let mut cfg = config(srv.addr, 1, Stop::Duration(ms(1000)));
    cfg.rate = Some(50.0);
    cfg.response_timeout = ms(300);
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert_eq!(r.stats.pages_done, 0);
    assert!(r.stats.errors.total() <= 4, "{:?}", r.stats.errors);
}

#[test]
fn threads_merge_to_the_same_totals() {
    let srv = TestServer::start(Behaviour::Good(10));
    for threads in [1, 3] {
        let mut cfg = config(srv.addr, 6, Stop::Pages(60));
        cfg.threads = threads;
        let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
        assert_eq!(r.stats.pages_done, 60, "threads {threads}");
        assert_eq!(r.stats.requests, 60);
        assert_eq!(r.stats.response.count(), 60);
        assert_eq!(r.stats.connects, 6);
        assert_eq!(r.stats.urls[0].connects, 6);
    }
}

#[test]
fn cumulative_time_is_webchildren_times_the_window() {
    let srv = TestServer::start(Behaviour::Good(10));
    let cfg = config(srv.addr, 3, Stop::Duration(ms(300)));
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert_eq!(r.stats.cumulative_us, 3 * 300_000);
}

#[test]
fn progress_and_debug_do_not_hang_the_run() {
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 1, Stop::Duration(ms(1200)));
    cfg.progress = true;
    cfg.think = Some(ms(200));
    cfg.debug = true;
    let t0 = Instant::now();
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    // A hang would never return; the margin over the 1.2 s asked for is for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert_eq!(r.duration, ms(1200));
    assert!(r.stats.requests > 0);
}
