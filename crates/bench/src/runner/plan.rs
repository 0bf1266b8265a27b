//! Who runs which Webchildren, with which seeds and schedule offsets, for how long.
//!
//! A run's Webchildren are numbered globally, `0..concurrency`, and everything about a Webchild
//! follows from its global number and the run's options alone: its random stream (the seed and
//! the number), its `-n` quota (the pages split over all Webchildren), its open-loop offset (its
//! number's share of one interval of the whole run). So any slice of the numbers can run anywhere
//! (a thread of this process, or a worker on another host) and the slices together do exactly
//! what one process running them all would have done.

use crate::client::Schedule;
use crate::runner::BenchError;
use crate::{BenchConfig, HttpMode, Stop, Workload};
use std::ops::Range;
use std::time::Instant;

/// The part of a run one process runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// Global Webchild numbers, within `0..config.concurrency`.
    pub children: Range<usize>,
    /// When the run starts (warm-up first, if any): nothing is sent before. `None`: at once.
    pub start: Option<Instant>,
    /// `start` on the wall clock the run's times are given in (the log's, the result's start):
    /// on many hosts, the agreed start in the coordinator's clock, so that every host's log is
    /// in that one clock. `None`: this host's own wall clock.
    pub start_unix_us: Option<u64>,
}

impl Slice {
    /// Every Webchild of the run, starting at once: a run in one process.
    pub fn whole(config: &BenchConfig) -> Self {
        Slice {
            children: 0..config.concurrency,
            start: None,
            start_unix_us: None,
        }
    }
}

/// The schedule of a run whose time 0 is `base` (`base_unix_us` in Unix µs), for all threads.
pub(super) fn schedule(config: &BenchConfig, base: Instant, base_unix_us: u64) -> Schedule {
    let measure_us = config.warmup.as_micros() as u64;
    let mut schedule = Schedule {
        base,
        base_unix_us,
        measure_us,
        end_us: match config.stop {
            Stop::Duration(d) => measure_us + d.as_micros() as u64,
            Stop::Pages(_) => u64::MAX,
        },
        pages: match config.stop {
            Stop::Pages(n) => Some(n),
            Stop::Duration(_) => None,
        },
        concurrency: config.concurrency,
        think_us: config.think.map_or(0, |t| t.as_micros() as u64),
        // The whole run's interval (all Webchildren of all hosts): each Webchild's offset is its
        // global number's share of it, so the merged arrivals are evenly spaced.
        interval_us: config.rate.map(|r| 1e6 * config.concurrency as f64 / r),
        late_after_us: None,
        connect_timeout_us: config.connect_timeout.as_micros().max(1) as u64,
        response_timeout_us: config.response_timeout.as_micros().max(1) as u64,
    };
    schedule.late_after_us = schedule.compute_late_after_us();
    schedule
}

/// Part `i` of `parts` of `range`: contiguous, sizes differing by at most one, the first parts
/// taking the remainder.
pub fn spread(range: Range<usize>, parts: usize, i: usize) -> Range<usize> {
    let n = range.len();
    let (per, extra) = (n / parts, n % parts);
    let start = range.start + i * per + i.min(extra);
    start..start + per + usize::from(i < extra)
}

/// Nothing starts with options, a workload or a slice the engine cannot run.
pub fn check(config: &BenchConfig, workload: &Workload, slice: &Slice) -> Result<(), BenchError> {
    let bad = |m: &str| Err(BenchError::Config(m.to_owned()));
    if config.concurrency == 0 {
        return bad("concurrency must be at least 1");
    }
    if config.threads == 0 {
        return bad("threads must be at least 1");
    }
    if u32::try_from(config.concurrency).is_err() {
        return bad("concurrency is too large");
    }
    if slice.children.is_empty() || slice.children.end > config.concurrency {
        return Err(BenchError::Config(format!(
            "Webchildren {}..{} are not a part of the run's 0..{}",
            slice.children.start, slice.children.end, config.concurrency
        )));
    }
    match config.stop {
        Stop::Pages(0) => return bad("the page count must be at least 1"),
        Stop::Duration(d) if d.is_zero() => return bad("the duration must be positive"),
        _ => {}
    }
    if let Some(r) = config.rate {
        check_rate(config, r)?;
    }
    let wrong = |m: String| Err(BenchError::Workload(m));
    if workload.pages.is_empty() {
        return wrong("no pages".into());
    }
    check_http3(config)?;
    check_early_data(config)?;
    check_streams(config)?;
    check_lanes(config, workload)?;
    check_connections(config)?;
    check_app(config, workload)?;
    for p in &workload.pages {
        if !(p.weight.is_finite() && p.weight >= 0.0) {
            return wrong(format!("page {:?} has weight {}", p.name, p.weight));
        }
        if p.files.is_empty() {
            return wrong(format!("page {:?} has no files", p.name));
        }
        if let Some(f) = p.files.iter().find(|&&f| f >= workload.urls.len()) {
            return wrong(format!(
                "page {:?} names URL #{f}, which does not exist",
                p.name
            ));
        }
    }
    let total: f64 = workload.pages.iter().map(|p| p.weight).sum();
    if !total.is_finite() {
        return wrong("the pages' weights add up to more than a number holds".into());
    }
    if total <= 0.0 {
        return wrong("every page has weight 0".into());
    }
    Ok(())
}

/// The most pages a second one Webchild is given: the schedule counts in whole microseconds,
/// and no client sends a page a microsecond on one connection.
pub const MAX_RATE_PER_WEBCHILD: f64 = 1e6;

/// The most pages a schedule may hold: what an `f64` (the schedule's arithmetic) counts exactly,
/// far below where a `u64` count would wrap.
pub const MAX_SCHEDULED_PAGES: f64 = (1u64 << 53) as f64;

/// A rate the schedule can hold: positive, at most [`MAX_RATE_PER_WEBCHILD`] a Webchild, and
/// its pages over the warm-up and the window countable ([`MAX_SCHEDULED_PAGES`]).
fn check_rate(config: &BenchConfig, r: f64) -> Result<(), BenchError> {
    let bad = |m: String| Err(BenchError::Config(m));
    if !(r.is_finite() && r > 0.0) {
        return bad("the rate must be a positive number of pages per second".into());
    }
    let c = config.concurrency as f64;
    // 1e20 and 1e-300 as written, not as 21 digits or 300 zeros.
    let shown = match (1e-3..1e9).contains(&r) {
        true => format!("{r}"),
        false => format!("{r:e}"),
    };
    if r > MAX_RATE_PER_WEBCHILD * c {
        return bad(format!(
            "the rate {shown} pages/s is more than {} Webchildren (-c) can be given: at most \
             1000000 pages/s a Webchild (one a microsecond, the schedule's unit)",
            config.concurrency
        ));
    }
    let window_s = config.warmup.as_secs_f64()
        + match config.stop {
            Stop::Duration(d) => d.as_secs_f64(),
            Stop::Pages(_) => 0.0,
        };
    if r * window_s > MAX_SCHEDULED_PAGES {
        return bad(format!(
            "the rate {shown} pages/s over {window_s} s schedules more than 2^53 pages, more than \
             can be counted"
        ));
    }
    if let Stop::Pages(n) = config.stop {
        // The last page is due after its Webchild's other pages, an interval (c / rate) each.
        let last_due_s = (n.div_ceil(config.concurrency.max(1) as u64) as f64 - 1.0).max(0.0) * c
            / r
            + config.warmup.as_secs_f64();
        if last_due_s > MAX_SCHEDULE_S {
            return bad(format!(
                "the rate {shown} pages/s for {n} pages over {} Webchildren is due over more \
                 than {MAX_SCHEDULE_S:e} s (what -d allows): a higher rate or fewer pages",
                config.concurrency
            ));
        }
    }
    Ok(())
}

/// The longest a schedule may run, s: the bound of `-d`, for a page count (`-n`) at a rate too.
pub const MAX_SCHEDULE_S: f64 = 1e9;

/// An application workload's requests are built per use and judged per response over
/// HTTP/1.1 (keep-alive, pipelining a page's files), HTTP/1.0, HTTP/2 and HTTP/3 (a page's
/// files as streams), with one connection a Webchild or several sharing its session
/// (`--connections-per-client`, `client/shared.rs`), redirects followed with the session's
/// cookies (`client/app.rs`); the other modes would send its templates as they are written. A
/// pipelined batch's redirects wait for the batch, and the page's files after the batch would
/// not be sent: pipelining does not follow them.
fn check_app(config: &BenchConfig, workload: &Workload) -> Result<(), BenchError> {
    if workload.plan().is_none() {
        return Ok(());
    }
    // `--pipeline N` and `--http 2|3 --streams N` with one-file pages keep N pages in flight
    // as lanes, each a page of its own.
    let lanes =
        config.streams.is_some_and(|n| n > 1) && workload.pages.iter().all(|p| p.files.len() == 1);
    // What is refused, and what such a workload runs over instead.
    let lanes_not = "with pages of one file a Webchild has one page in flight at a time: \
                     leave out N, or give pages of several files";
    let (refused, instead) = match config.http {
        HttpMode::Pipeline if lanes => ("--pipeline N with pages of one file (lanes)", lanes_not),
        HttpMode::Pipeline if config.redirect > 0 => (
            "--redirect with --pipeline",
            "it follows redirects over HTTP/1.1 keep-alive (without --pipeline), HTTP/1.0, \
             HTTP/2 or HTTP/3",
        ),
        HttpMode::Http2 if lanes => (
            "--http 2 --streams N with pages of one file (lanes)",
            lanes_not,
        ),
        HttpMode::Http3 if lanes => (
            "--http 3 --streams N with pages of one file (lanes)",
            lanes_not,
        ),
        _ => return Ok(()),
    };
    Err(BenchError::Config(format!(
        "{refused} is not supported with an application workload (data, templates, expect, \
         extract) yet: {instead}"
    )))
}

/// `--http 3`: over QUIC to an `https://` server, a page's files as streams of one connection,
/// TLS 1.3 by BoringSSL (sessions resumed with `--tls-resume`); the options that cannot
/// apply are refused, each with its reason.
fn check_http3(config: &BenchConfig) -> Result<(), BenchError> {
    if config.http != HttpMode::Http3 {
        return Ok(());
    }
    let refused = match () {
        _ if config.target.scheme != crate::Scheme::Https => {
            "--http 3 needs an https:// URL: HTTP/3 runs over QUIC, which is always encrypted"
        }
        _ if config.target.unix_socket.is_some() => {
            "--http 3 runs over UDP: not with --unix-socket"
        }
        _ if config.tls.version == Some(crate::config::TlsVersion::Tls12) => {
            "--tls 1.2 cannot apply to --http 3: QUIC is TLS 1.3 only"
        }
        _ if config.tls.ciphers.is_some() => {
            "--tls-ciphers names rustls's suites for TLS over TCP: not with --http 3 (BoringSSL picks QUIC's TLS 1.3 suites)"
        }
        _ if config.h2_window.is_some() => "--h2-window is HTTP/2's: not with --http 3",
        // (One-file pages with `--streams N` are lanes, as over HTTP/2: in the closed loop,
        // the open loop and with --think alike.)
        _ => return Ok(()),
    };
    Err(BenchError::Config(refused.to_owned()))
}

/// `--early-data` is HTTP/3's 0-RTT, which only a resumed session has.
fn check_early_data(config: &BenchConfig) -> Result<(), BenchError> {
    let refused = match () {
        _ if !config.h3_early_data => return Ok(()),
        _ if config.http != HttpMode::Http3 => {
            "--early-data sends requests in QUIC's 0-RTT: it needs --http 3"
        }
        _ if !config.tls.resume => {
            "--early-data sends requests in a resumed session's 0-RTT: it needs --tls-resume"
        }
        _ => return Ok(()),
    };
    Err(BenchError::Config(refused.to_owned()))
}

/// Requests in flight per connection: HTTP/2 streams or HTTP/1.1 pipelining's depth.
fn check_streams(config: &BenchConfig) -> Result<(), BenchError> {
    let bad = |m: &str| Err(BenchError::Config(m.to_owned()));
    if config.h2_window.is_some() && !matches!(config.http, HttpMode::Http2 | HttpMode::Http3) {
        // (With --http 3, `check_http3` says it is HTTP/2's.)
        return bad("--h2-window is HTTP/2's flow-control window: it needs --http 2");
    }
    let Some(n) = config.streams else {
        return Ok(());
    };
    match config.http {
        HttpMode::Http2 | HttpMode::Http3 | HttpMode::Pipeline => {}
        _ => return bad("--streams needs --http 2 or 3 (HTTP/1.1 pipelines with --pipeline N)"),
    }
    if n == 0 || n > MAX_STREAMS {
        return bad("requests in flight per connection must be 1 to 1000");
    }
    Ok(())
}

/// `--pipeline N` with one-file pages keeps N pages in flight on a connection, each picked as
/// one ends (`client/h1/lanes.rs`): in the closed loop only, and with no redirect to follow
/// (a pipelined page's redirect waits for the page's batch, and a lane's page has no batch).
fn check_lanes(config: &BenchConfig, workload: &Workload) -> Result<(), BenchError> {
    let lanes = config.http == HttpMode::Pipeline
        && config.streams.is_some_and(|n| n > 1)
        && workload.pages.iter().all(|p| p.files.len() == 1);
    let other = match () {
        _ if config.rate.is_some() => "--rate",
        _ if config.think.is_some_and(|t| !t.is_zero()) => "--think",
        _ if config.redirect > 0 => "--redirect",
        _ => return Ok(()),
    };
    match lanes {
        true => Err(BenchError::Config(format!(
            "--pipeline N with one-file pages keeps N pages in flight back to back: not with              {other} (use --http 2 --streams N, or pages of several files)"
        ))),
        false => Ok(()),
    }
}

/// `--connections-per-client N`: a Webchild's connections share its pages one request each
/// at a time, in the closed loop (`client/shared.rs`).
fn check_connections(config: &BenchConfig) -> Result<(), BenchError> {
    let bad = |m: &str| Err(BenchError::Config(m.to_owned()));
    let n = config.connections_per_child;
    if n == 0 || n > crate::client::MAX_CONNECTIONS_PER_CHILD {
        return bad("connections per client must be 1 to 64");
    }
    if n == 1 {
        return Ok(());
    }
    let other = match config.http {
        HttpMode::Pipeline => "--pipeline",
        HttpMode::Http2 => "--http 2 (a page's files are streams of one connection)",
        HttpMode::Http3 => "--http 3 (a page's files are streams of one connection)",
        _ if config.rate.is_some() => "--rate",
        _ if config.think.is_some_and(|t| !t.is_zero()) => "--think",
        _ if config.redirect > 0 => "--redirect",
        _ => return Ok(()),
    };
    Err(BenchError::Config(format!(
        "--connections-per-client shares each page among a Webchild's connections back to \
         back, over HTTP/1.1 or 1.0: not with {other}"
    )))
}

/// The most requests in flight on one connection.
pub const MAX_STREAMS: u32 = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_spread_evenly_and_completely_over_a_range() {
        for (range, t) in [
            (0..10, 3),
            (0..3, 3),
            (0..1, 1),
            (0..7, 2),
            (0..100, 8),
            (5..12, 3),
        ] {
            let parts: Vec<_> = (0..t).map(|i| spread(range.clone(), t, i)).collect();
            assert_eq!(parts[0].start, range.start);
            assert_eq!(parts[t - 1].end, range.end);
            for w in parts.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            let sizes: Vec<_> = parts.iter().map(|r| r.len()).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
            assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "remainder first");
        }
    }

    #[test]
    fn http3_needs_https_and_refuses_what_cannot_apply_each_with_its_reason() {
        use crate::config::TlsVersion;
        use crate::Target;
        let addr = "127.0.0.1:443".parse().unwrap();
        let pages = Workload::parse(
            "[[page]]\nweight = 1\nfiles = [\"/a\", \"/b\"]\n[[page]]\nweight = 1\nfiles = [\"/c\"]\n",
            "test",
        )
        .unwrap();
        let one_file = Workload::from_paths(&["/a".to_string()]).unwrap();
        let h3 = |target: Target| BenchConfig {
            http: HttpMode::Http3,
            ..BenchConfig::new(target)
        };
        let https = h3(Target::https(addr, "localhost"));
        assert!(check(&https, &pages, &Slice::whole(&https)).is_ok());
        assert!(check(&https, &one_file, &Slice::whole(&https)).is_ok());
        let refused = |config: &BenchConfig, workload: &Workload, why: &str| match check(
            config,
            workload,
            &Slice::whole(config),
        ) {
            Err(BenchError::Config(m)) => assert!(m.contains(why), "{m}"),
            other => panic!("{why}: {other:?}"),
        };
        refused(&h3(Target::http(addr)), &pages, "needs an https:// URL");
        let mut c = https.clone();
        c.tls.resume = true;
        assert!(
            check(&c, &pages, &Slice::whole(&c)).is_ok(),
            "--tls-resume resumes QUIC's sessions"
        );
        let mut c = https.clone();
        c.tls.version = Some(TlsVersion::Tls12);
        refused(&c, &pages, "TLS 1.3 only");
        let mut c = https.clone();
        c.tls.ciphers = Some(vec!["TLS13_AES_128_GCM_SHA256".into()]);
        refused(&c, &pages, "--tls-ciphers names");
        let mut c = https.clone();
        c.h2_window = Some(1 << 20);
        refused(&c, &pages, "--h2-window");
        let mut c = https.clone();
        c.redirect = 3;
        assert!(
            check(&c, &pages, &Slice::whole(&c)).is_ok(),
            "--redirect follows as over HTTP/2"
        );
        let mut c = https.clone();
        c.streams = Some(8);
        assert!(
            check(&c, &pages, &Slice::whole(&c)).is_ok(),
            "a page's files, 8 at a time"
        );
        assert!(
            check(&c, &one_file, &Slice::whole(&c)).is_ok(),
            "lanes: 8 pages in flight"
        );
        let mut paced = c.clone();
        paced.rate = Some(100.0);
        assert!(
            check(&paced, &one_file, &Slice::whole(&paced)).is_ok(),
            "lanes in the open loop, as over HTTP/2"
        );
        assert!(
            check(&paced, &pages, &Slice::whole(&paced)).is_ok(),
            "a page's files, open loop"
        );
        let mut thinking = c.clone();
        thinking.think = Some(std::time::Duration::from_millis(10));
        assert!(
            check(&thinking, &one_file, &Slice::whole(&thinking)).is_ok(),
            "lanes that think, as over HTTP/2"
        );
        // What cannot apply is still refused with lanes in the open loop.
        let mut c = paced.clone();
        c.h2_window = Some(1 << 20);
        refused(&c, &one_file, "--h2-window");
        let mut c = paced.clone();
        c.target = Target::http(addr);
        refused(&c, &one_file, "needs an https:// URL");
        // Not HTTP/3: none of this is looked at here.
        let h2 = BenchConfig {
            http: HttpMode::Http2,
            ..BenchConfig::new(Target::http(addr))
        };
        assert!(check(&h2, &pages, &Slice::whole(&h2)).is_ok());
    }

    #[test]
    fn an_h2_window_needs_http2_as_streams_need_http2_or_3() {
        let addr = "127.0.0.1:80".parse().unwrap();
        let said = |c: &BenchConfig| match check_streams(c) {
            Err(BenchError::Config(m)) => m,
            other => panic!("{other:?}"),
        };
        let mut c = BenchConfig::new(crate::Target::http(addr));
        c.h2_window = Some(64 * 1024);
        for http in [HttpMode::KeepAlive, HttpMode::Http10, HttpMode::Pipeline] {
            c.http = http;
            assert_eq!(
                said(&c),
                "--h2-window is HTTP/2's flow-control window: it needs --http 2"
            );
        }
        c.http = HttpMode::Http2;
        assert!(check_streams(&c).is_ok());
    }

    #[test]
    fn early_data_needs_http3_and_tls_resume() {
        let addr = "127.0.0.1:443".parse().unwrap();
        let mut c = BenchConfig {
            http: HttpMode::Http3,
            h3_early_data: true,
            ..BenchConfig::new(crate::Target::https(addr, "localhost"))
        };
        c.tls.resume = true;
        assert!(check_early_data(&c).is_ok());
        let said = |c: &BenchConfig| match check_early_data(c) {
            Err(BenchError::Config(m)) => m,
            other => panic!("{other:?}"),
        };
        let mut no_resume = c.clone();
        no_resume.tls.resume = false;
        assert_eq!(
            said(&no_resume),
            "--early-data sends requests in a resumed session's 0-RTT: it needs --tls-resume"
        );
        let h2 = BenchConfig {
            http: HttpMode::Http2,
            ..c.clone()
        };
        assert_eq!(
            said(&h2),
            "--early-data sends requests in QUIC's 0-RTT: it needs --http 3"
        );
        c.h3_early_data = false;
        c.tls.resume = false;
        assert!(check_early_data(&c).is_ok(), "off: nothing to check");
    }

    #[test]
    fn a_rate_the_schedule_cannot_hold_is_refused_and_one_it_can_is_taken() {
        use std::time::Duration;
        let addr = "127.0.0.1:80".parse().unwrap();
        let one_file = Workload::from_paths(&["/a".to_string()]).unwrap();
        let paced = |rate: f64, c: usize, stop: Stop| BenchConfig {
            rate: Some(rate),
            concurrency: c,
            stop,
            ..BenchConfig::new(crate::Target::http(addr))
        };
        let said = |config: &BenchConfig| match check(config, &one_file, &Slice::whole(config)) {
            Err(BenchError::Config(m)) => m,
            other => panic!("{other:?}"),
        };
        let second = Stop::Duration(Duration::from_secs(1));
        // The tester's line: a count past 2^64 wrapped.
        let m = said(&paced(1e20, 4, second));
        assert!(
            m.contains("more than 4 Webchildren (-c) can be given"),
            "{m}"
        );
        assert!(said(&paced(4e6 + 1.0, 4, second)).contains("1000000 pages/s a Webchild"));
        let taken = paced(4e6, 4, second);
        assert!(check(&taken, &one_file, &Slice::whole(&taken)).is_ok());
        // Within the rate a Webchild may be given, but not countable over its window.
        let long = Stop::Duration(Duration::from_secs(1_000_000_000));
        let m = said(&paced(1e7, 1_000, long));
        assert!(m.contains("schedules more than 2^53 pages"), "{m}");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(said(&paced(bad, 1, second)).contains("positive number"));
        }
        // A page count bounds the schedule's count itself (2^50 pages over 2.8e8 s)...
        let counted = paced(4e6, 4, Stop::Pages(1 << 50));
        assert!(check(&counted, &one_file, &Slice::whole(&counted)).is_ok());
        // ... but not its length: 2^64 pages take 4.6e12 s; two of one Webchild 1e300 s apart.
        let m = said(&paced(4e6, 4, Stop::Pages(u64::MAX)));
        assert!(m.contains("is due over more than 1e9 s"), "{m}");
        let m = said(&paced(1e-300, 1, Stop::Pages(2)));
        assert!(m.contains("is due over more than 1e9 s"), "{m}");
        // One page a Webchild is due at once, whatever the rate.
        let one = paced(1e-300, 2, Stop::Pages(2));
        assert!(check(&one, &one_file, &Slice::whole(&one)).is_ok());
    }
}
