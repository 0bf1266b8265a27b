//! The measured window seen from outside: the observer's calls (a server profile covers exactly
//! them) and the per-second time series.

use crate::common;

use bench::report::json;
use bench::{Observer, RunResult, Stop};
use common::{config, ms, one_file, Behaviour, Seen, TestServer};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Records when it was called (on the wall clock, which the result's `started_at` is given in),
/// and how many requests the server had seen by then. `start_takes`: how long its
/// `window_started` takes before it records (a tracer attaching).
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(&'static str, SystemTime, u64)>>,
    seen: Option<Arc<Seen>>,
    start_takes: Duration,
}

impl Recorder {
    fn watching(seen: &Arc<Seen>) -> Self {
        Recorder {
            seen: Some(seen.clone()),
            ..Recorder::default()
        }
    }

    fn push(&self, what: &'static str) {
        let requests = self.seen.as_ref().map_or(0, |s| s.requests());
        let mut calls = self.calls.lock().unwrap();
        calls.push((what, SystemTime::now(), requests));
    }

    /// `(started, ended)`, after checking that each was called once, in that order.
    fn window(&self) -> ((SystemTime, u64), (SystemTime, u64)) {
        let calls = self.calls.lock().unwrap();
        let names: Vec<&str> = calls.iter().map(|c| c.0).collect();
        assert_eq!(names, ["started", "ended"]);
        ((calls[0].1, calls[0].2), (calls[1].1, calls[1].2))
    }
}

impl Observer for Recorder {
    fn window_started(&self) {
        std::thread::sleep(self.start_takes);
        self.push("started");
    }
    fn window_ended(&self) {
        self.push("ended");
    }
}

/// Checks the observer's calls against the window the runner itself recorded (`started_at`,
/// `duration`): after a warm-up, each call comes at or after its boundary, never before; without
/// one, the start is told before it comes (the observer is ready before the first request); the
/// end is told before the run returns. How late a call comes is the coordinating thread's
/// wake-up, which on a loaded machine has no bound worth asserting, so it is only printed.
fn calls_follow_the_recorded_window(
    r: &RunResult,
    started: SystemTime,
    ended: SystemTime,
    returned: SystemTime,
) {
    let window_start = r.started_at;
    let window_end = r.started_at + r.duration;
    let late = |at: SystemTime, boundary: SystemTime| at.duration_since(boundary).ok();
    println!(
        "window_started late by {:?}, window_ended late by {:?}",
        late(started, window_start),
        late(ended, window_end)
    );
    if r.config.warmup.is_zero() {
        assert!(started <= window_start, "told of the start after it came");
    } else {
        assert!(started >= window_start, "told of the start before it came");
    }
    assert!(ended >= window_end, "told of the end before it came");
    assert!(started <= ended);
    assert!(ended <= returned, "told of the end after the run returned");
}

#[test]
fn observer_window_starts_after_warmup_and_lasts_the_measured_duration() {
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 2, Stop::Duration(ms(600)));
    cfg.warmup = ms(300);
    cfg.think = Some(ms(5));
    let obs = Recorder::watching(&srv.seen);
    let t0 = SystemTime::now();
    let r = bench::run_observed(&cfg, &one_file(), &AtomicBool::new(false), &obs).unwrap();
    let returned = SystemTime::now();
    let ((started, requests_at_start), (ended, requests_at_end)) = obs.window();
    assert!(
        requests_at_start > 0,
        "warm-up requests came before the window"
    );
    // Told after the warm-up; the window lasts exactly what was asked.
    let after = started.duration_since(t0).unwrap();
    assert!(after >= ms(300), "told {after:?} after the run began");
    assert_eq!(r.duration, ms(600));
    calls_follow_the_recorded_window(&r, started, ended, returned);
    // Every measured request reached the server before the end was told.
    assert!(requests_at_end >= r.stats.requests, "{requests_at_end}");
}

#[test]
fn observer_without_warmup_is_told_before_the_first_request() {
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 2, Stop::Pages(40));
    cfg.think = Some(ms(10));
    let obs = Recorder::watching(&srv.seen);
    let r = bench::run_observed(&cfg, &one_file(), &AtomicBool::new(false), &obs).unwrap();
    let returned = SystemTime::now();
    let ((started, requests_at_start), (ended, requests_at_end)) = obs.window();
    assert_eq!(requests_at_start, 0);
    // A -n run ends with its last page: every request was in by then.
    assert_eq!(requests_at_end, 40);
    assert_eq!(r.stats.pages_done, 40);
    assert!(r.duration >= ms(150), "{:?}", r.duration);
    calls_follow_the_recorded_window(&r, started, ended, returned);
}

#[test]
fn an_observer_slow_to_start_takes_nothing_from_the_window() {
    // A tracer can take a good part of a second to attach on a busy machine: the window's time
    // starts when it is ready, and the run still has all of its window.
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 2, Stop::Duration(ms(600)));
    cfg.think = Some(ms(5));
    let obs = Recorder {
        start_takes: ms(400),
        ..Recorder::watching(&srv.seen)
    };
    let r = bench::run_observed(&cfg, &one_file(), &AtomicBool::new(false), &obs).unwrap();
    let returned = SystemTime::now();
    let ((started, requests_at_start), (ended, _)) = obs.window();
    assert_eq!(requests_at_start, 0);
    assert_eq!(r.duration, ms(600));
    calls_follow_the_recorded_window(&r, started, ended, returned);
    let watched = ended.duration_since(started).unwrap();
    assert!(
        watched >= ms(600),
        "the observer saw {watched:?} of the window"
    );
}

#[test]
fn observer_is_told_the_window_ended_when_ctrl_c_stops_the_run() {
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 2, Stop::Duration(Duration::from_secs(20)));
    cfg.think = Some(ms(5));
    let stop = AtomicBool::new(false);
    let obs = Recorder::default();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(ms(400));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        bench::run_observed(&cfg, &one_file(), &stop, &obs).unwrap()
    });
    let returned = SystemTime::now();
    assert!(r.interrupted);
    let ((started, _), (ended, _)) = obs.window();
    // Stopped long before the 20 s asked for; the margin is for a loaded machine.
    assert!(r.duration < Duration::from_secs(10), "{:?}", r.duration);
    calls_follow_the_recorded_window(&r, started, ended, returned);
}

#[test]
fn observer_of_a_run_stopped_in_warmup_gets_an_empty_window() {
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 1, Stop::Duration(Duration::from_secs(5)));
    cfg.warmup = Duration::from_secs(20);
    let stop = AtomicBool::new(false);
    let obs = Recorder::default();
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(ms(200));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        bench::run_observed(&cfg, &one_file(), &stop, &obs).unwrap()
    });
    // Stopped long before the 20 s warm-up would have ended.
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    let ((started, _), (ended, _)) = obs.window();
    assert!(ended >= started);
    assert_eq!(r.duration, Duration::ZERO);
    assert_eq!(r.stats.requests, 0);
    assert!(r.stats.timeseries.is_empty());
}

/// Checks that the seconds add up to the run's totals and returns the JSON entries.
fn seconds_add_up(r: &RunResult) -> Vec<serde_json::Value> {
    let s = &r.stats;
    let ts = &s.timeseries;
    let sum = |f: fn(&bench::SecondStats) -> u64| ts.iter().map(f).sum::<u64>();
    assert_eq!(sum(|x| x.requests), s.requests);
    assert_eq!(sum(|x| x.errors), s.errors.total());
    assert_eq!(sum(|x| x.bytes), s.bytes_total);
    assert_eq!(sum(|x| x.response.count()), s.response.count());
    let doc = json(r);
    let entries = doc["timeseries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), ts.len());
    entries
}

#[test]
fn timeseries_has_an_entry_per_second_summing_to_the_summary() {
    let srv = TestServer::start(Behaviour::Good(100));
    let mut cfg = config(srv.addr, 2, Stop::Duration(ms(2500)));
    cfg.think = Some(ms(10));
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert!(r.stats.requests > 0, "{}", r.stats.requests);
    let entries = seconds_add_up(&r);
    let t: Vec<f64> = entries.iter().map(|e| e["t_s"].as_f64().unwrap()).collect();
    assert_eq!(t, [1.0, 2.0, 2.5]);
    let requests: Vec<u64> = entries
        .iter()
        .map(|e| e["requests"].as_u64().unwrap())
        .collect();
    // Every second has requests of its own; how many depends on this machine's load, so the
    // exact check is that they add up to the summary (above).
    assert!(requests.iter().all(|&n| n > 0), "{requests:?}");
    // A real run's document, this machine's environment included, matches the schema.
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/bench-json.schema.json"
    );
    let schema = serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let doc = json(&r);
    let bad: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    for e in &entries {
        let (p50, p99) = (e["p50_ms"].as_f64().unwrap(), e["p99_ms"].as_f64().unwrap());
        assert!(0.0 < p50 && p50 <= p99, "{e}");
        assert!(e["bytes"].as_u64().unwrap() >= 100 * e["requests"].as_u64().unwrap());
    }
}

#[test]
fn timeseries_of_a_page_count_run_covers_its_seconds() {
    let srv = TestServer::start(Behaviour::Good(10));
    let mut cfg = config(srv.addr, 1, Stop::Pages(30));
    cfg.think = Some(ms(40)); // ~1.2 s in all
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert_eq!(r.stats.requests, 30);
    let entries = seconds_add_up(&r);
    assert_eq!(entries.len(), bench::stats::seconds_in(r.duration));
    // Past one second whatever the machine's speed (30 pages and 29 thinks of 40 ms): the
    // last entry is a part-second. How many seconds a loaded machine makes of it is not fixed.
    assert!(entries.len() >= 2, "{:?}", r.duration);
    let last = entries.last().unwrap()["t_s"].as_f64().unwrap();
    assert!((last - r.duration.as_secs_f64()).abs() < 1e-9);
}

#[test]
fn timeseries_counts_errors_and_leaves_latency_null_without_responses() {
    // Refused connects are errors without any response: their seconds have no latency.
    let refused = common::refused_addr();
    let mut cfg = config(refused.addr, 1, Stop::Duration(ms(1200)));
    cfg.think = Some(ms(20));
    // Both seconds of the window, not stopped after the first by fail fast.
    cfg.fail_fast = false;
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert!(r.stats.errors.total() > 10);
    let entries = seconds_add_up(&r);
    // Two seconds of a 1.2 s window (one more if a loaded machine stopped it late).
    assert_eq!(entries.len(), bench::stats::seconds_in(r.duration));
    assert!(entries.len() >= 2, "{:?}", r.duration);
    for e in &entries {
        assert!(e["errors"].as_u64().unwrap() > 0, "{e}");
        assert_eq!(e["requests"], 0);
        assert!(e["p50_ms"].is_null() && e["p99_ms"].is_null(), "{e}");
    }
}
