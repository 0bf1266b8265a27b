//! Hand-built `RunResult`s for the report tests: the paper's Netsite run, and small runs recorded
//! through the engine's `Stats::record_*` calls.
#![allow(dead_code)]

use bench::config::{BenchConfig, HttpMode, Stop, Target};
use bench::fileset::{mix_workload, size_from_name, Mix};
use bench::stats::{ErrorKind, ResponseSample};
use bench::{RunResult, Stats, Workload};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub fn config(concurrency: usize, stop: Stop, rate: Option<f64>) -> BenchConfig {
    BenchConfig {
        concurrency,
        threads: 2,
        stop,
        warmup: Duration::from_secs(1),
        rate,
        http: HttpMode::Http10,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(30),
        seed: 42,
        ..BenchConfig::new(Target::http("127.0.0.1:1".parse().unwrap()))
    }
}

/// The paper's Netsite 1.0 run (section 7), its totals set field by field.
pub fn netsite() -> RunResult {
    let workload = mix_workload(Mix::Mixed);
    let mut stats = Stats::new(&workload, false);
    // (hits, total time s, max response s, connect time s, max connect s, data moved, connects)
    let blocks: [(u64, f64, f64, f64, f64, u64, u64); 6] = [
        (
            6649,
            4238.492450,
            2.071999,
            77.660191,
            0.052151,
            81702912,
            19947,
        ),
        (
            607, 526.552497, 1.805497, 8.111734, 0.036912, 29213696, 1821,
        ),
        (
            980,
            15710.908864,
            22.764984,
            19.605667,
            5.785718,
            6165626880,
            1960,
        ),
        (
            2866,
            2581.663009,
            3.341992,
            33.253920,
            0.046310,
            625108992,
            8598,
        ),
        (
            3040,
            25083.667145,
            11.803875,
            26.375753,
            0.036555,
            9628385280,
            6080,
        ),
        (
            1628,
            2148.113647,
            2.793287,
            14.345538,
            0.036117,
            855207936,
            3256,
        ),
    ];
    let us = |s: f64| (s * 1e6).round() as u64;
    for (i, b) in blocks.iter().enumerate() {
        let p = &mut stats.pages[i];
        p.hits = b.0;
        p.time_us_sum = us(b.1);
        p.time_us_max = us(b.2);
        p.connect_us_sum = us(b.3);
        p.connect_us_max = us(b.4);
        p.body_bytes = b.5;
        p.connects = b.6;
        // The page's connect time on its first file, so the URLs' sum is the run's total.
        let first = workload.pages[i].files[0];
        let u = &mut stats.urls[first];
        u.connects += b.0;
        u.connect_us_sum += us(b.3);
        u.connect_us_min = u.connect_us_min.min(1000);
        u.connect_us_max = u.connect_us_max.max(us(b.4).min(5_782_854));
    }
    for (u, url) in stats.urls.iter_mut().zip(&workload.urls) {
        u.last_body_size = size_from_name(url).unwrap();
    }
    stats.pages_done = 15770;
    stats.connects = 41672;
    stats.requests = 41672;
    stats.bytes_total = 17409474560;
    stats.bytes_body = 17401507840;
    stats.bytes_header = 7966720;
    stats.cumulative_us = 50_333_931_099;
    stats.response.record_us(19_524_160);
    stats.response_us_max = 19_524_160;
    RunResult {
        config: config(24, Stop::Duration(Duration::from_secs(35 * 60)), None),
        workload,
        stats,
        duration: Duration::from_secs(35 * 60),
        started_at: UNIX_EPOCH + Duration::from_secs(795_439_390), // 1995-03-17T11:23:10Z
        interrupted: false,
    }
}

/// A small run recorded as the engine records it: two pages, keep-alive, a few errors.
pub fn small(open_loop: bool) -> RunResult {
    let workload = Workload::from_pages([
        (
            "home".to_string(),
            70.0,
            vec!["/index2k.html", "/logo1k.gif"],
        ),
        (
            "story".to_string(),
            30.0,
            vec!["/story8k.html", "/logo1k.gif"],
        ),
    ])
    .unwrap();
    let mut stats = Stats::new(&workload, open_loop);
    for i in 0..100u64 {
        let page = usize::from(i % 3 == 0);
        if i % 10 == 0 {
            stats.record_connect(page, workload.pages[page].files[0], 150 + i);
        }
        let mut time = 0;
        for &url in &workload.pages[page].files {
            let body = size_from_name(&workload.urls[url]).unwrap();
            let sample = ResponseSample {
                header_bytes: 200,
                body_bytes: body,
                ttfb_us: 300 + i,
                response_us: 800 + 10 * i,
                response_uncorrected_us: 700 + 5 * i,
                transfer_us: 600 + 10 * i,
            };
            stats.record_response(page, url, &sample);
            stats.bytes_total += 200 + body;
            // Pages 0..49 in the window's first second, 50..99 in its second.
            let second = stats.second((i / 50) as usize);
            second.requests += 1;
            second.bytes += 200 + body;
            second.response.record_us(sample.response_us);
            time += sample.response_us;
        }
        stats.record_page(page, true, time, time - 100);
    }
    stats.record_error(0, ErrorKind::Reset);
    stats.record_error(1, ErrorKind::Status5xx);
    stats.record_error(1, ErrorKind::Status5xx);
    stats.second(1).errors += 3;
    stats.record_page(0, false, 0, 0);
    stats.bytes_total += 1234; // a response cut short
    stats.second(1).bytes += 1234;
    stats.cumulative_us = 4 * 2_000_000;
    RunResult {
        config: config(4, Stop::Pages(100), open_loop.then_some(50.0)),
        workload,
        stats,
        duration: Duration::from_millis(2000),
        started_at: SystemTime::now(),
        interrupted: false,
    }
}

/// A clean closed-loop run of one-file pages, as `flint bench URL` makes: 50 responses of 1 to
/// 50 ms, no error, nothing unfinished.
pub fn one_file() -> RunResult {
    let workload = Workload::from_pages([("a".to_string(), 1.0, vec!["/a.html"])]).unwrap();
    let mut stats = Stats::new(&workload, false);
    stats.record_connect(0, 0, 100);
    for i in 1..=50u64 {
        let sample = ResponseSample {
            header_bytes: 100,
            body_bytes: 5,
            ttfb_us: 500 * i,
            response_us: 1000 * i,
            response_uncorrected_us: 1000 * i,
            transfer_us: 900 * i,
        };
        stats.record_response(0, 0, &sample);
        stats.bytes_total += 105;
        stats.second(0).requests += 1;
        stats.record_page(0, true, sample.response_us, sample.response_us);
    }
    stats.cumulative_us = 1_000_000;
    RunResult {
        config: config(1, Stop::Duration(Duration::from_secs(1)), None),
        workload,
        stats,
        duration: Duration::from_secs(1),
        started_at: SystemTime::now(),
        interrupted: false,
    }
}

/// Nothing measured at all (a run ended at once, or a server that never answered).
pub fn empty() -> RunResult {
    let workload = Workload::from_paths(&["/a.html".into()]).unwrap();
    let stats = Stats::new(&workload, false);
    RunResult {
        config: config(1, Stop::Duration(Duration::from_secs(1)), None),
        workload,
        stats,
        duration: Duration::ZERO,
        started_at: UNIX_EPOCH,
        interrupted: true,
    }
}
