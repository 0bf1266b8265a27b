//! `--http 3` open-loop lanes against a server that allows as many streams as there are lanes
//! (crates/http3's UDP test server with `Limits { max_streams: 8 }`, `--streams 8`): when a
//! stream ends its lane is free, but quiche's credit for a new stream comes back only once the
//! server has collected the old one, about a round trip later. A page is picked, its send lag
//! recorded, only when there is a stream for it, as over HTTP/2: so each request is written
//! when its page was picked, bar the first of a connection, which waits for the handshake.

use crate::h3_runs;

use bench::{BenchConfig, Stop, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const LANES: u32 = 8;
const BODY: u64 = 3_000;

#[test]
fn an_open_loop_page_is_picked_only_with_a_stream_for_it() {
    let limits = http3::Limits {
        max_streams: u64::from(LANES),
        ..http3::Limits::default()
    };
    let (ca, server) = h3_runs::server("flint bench h3 lanes room test CA", &limits);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.csv");
    let pages = 400;
    // Slots far faster than the server answers: a free lane always has a page due, and finds
    // the server's credit spent after each stream's end.
    let config = BenchConfig {
        streams: Some(LANES),
        rate: Some(100_000.0),
        log: Some(log.clone()),
        ..h3_runs::config(&ca, &server, 2, Stop::Pages(pages))
    };
    let text = format!("[[page]]\nname = \"one\"\nweight = 1\nfiles = [\"/bytes/{BODY}\"]\n");
    let workload = Workload::parse(&text, "test").unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, pages);
    assert_eq!(s.http3.connections, 2, "{:?}", s.http3);
    let lag = s.send_lag.as_ref().expect("open loop: send lag");
    assert_eq!(lag.count(), pages);
    // Per request, from the log: picked (`start`) after its slot (`intended`), answered
    // `response` after the slot; the run's transfer times run from each request's write to its
    // end. So the transfers' sum and the log's give the sum of the waits from pick to write.
    let text = std::fs::read_to_string(&log).unwrap();
    let (mut picked_to_end, mut connects) = (0u64, 0u64);
    let mut lines = 0;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let num = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("{line}")) };
        let (start, intended, response) = (num(4), num(5), num(8));
        assert!(start >= intended, "{line}");
        picked_to_end += response - (start - intended);
        connects += f[6].parse::<u64>().unwrap_or(0);
        lines += 1;
    }
    assert_eq!(lines, pages, "{text}");
    let transfers: u64 = s.urls.iter().map(|u| u.transfer_us_sum).sum();
    // Each request goes in the turn its page is picked (written then), but for the first of
    // each connection, picked before its handshake: the waits are the connects, exactly. A
    // page picked while the server's credit was spent would add its wait for the credit.
    assert_eq!(
        picked_to_end - transfers,
        connects,
        "picked to written, against the connects"
    );
    assert_eq!(h3_runs::settled(&server).0, pages);
}
