//! The ways of fetching the microscape page ([`PageMode`]) and the measurement of the ways that
//! share one page among several connections.
//!
//! `http1.0`, `persistent` and `pipelined` are bench's own modes with one Webchild: one
//! connection (at a time) fetches the page, and bench measures the page time. A page shared
//! among N connections (`http1.0-4`: four connections at a time, one per file; `keepalive-6`: six
//! persistent connections) is something bench's Webchildren do not do: each fetches a whole page
//! on its own connection. So it is measured in rounds, through bench's public API: the page's
//! files are dealt round-robin to N shares; a round starts N one-page bench runs at once (one
//! Webchild each, on threads waiting at a barrier), each fetching its share on connections of
//! its own, and the page time is the round's, from the barrier's release to the last share's
//! end. Each round therefore opens its connections afresh (a first visit; the one-connection
//! modes keep theirs from page to page), and its time includes starting N bench runs: what that
//! costs is in the 0-RTT figures (docs/lab.md).

use crate::measure::{quiet_counters, Load, MeasureError, Measurement};
use crate::netpath::NetPath;
use bench::config::TlsOptions;
use bench::stats::Latency;
use bench::{BenchConfig, HttpMode, Observer, RunResult, Stats, Stop, Workload};
use lab_peers::{Peer, PeerKind};
use lab_process::pin_current_thread;
use lab_profile::{Method, Window};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A way of fetching the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageMode {
    /// A connection per file, one at a time (the notes' Navigator).
    Http10,
    /// One HTTP/1.1 connection, one request at a time.
    Persistent,
    /// One HTTP/1.1 connection, all requests written at once (the notes' robot).
    Pipelined,
    /// A connection per file, four at a time (the 1997 browsers).
    Http10x4,
    /// Six persistent HTTP/1.1 connections sharing the page (today's browsers without HTTP/2).
    KeepAlive6,
    /// One HTTP/2 connection, the files as concurrent streams.
    H2,
}

/// Why the `h2` mode cannot run on a server that does not speak HTTP/2 with the lab's config.
pub const H2_SERVER_MISSING: &str = "server lacks HTTP/2";

impl std::str::FromStr for PageMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PageMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = PageMode::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mode `{s}` (known: {})", names.join(", "))
            })
    }
}

impl PageMode {
    pub const ALL: [PageMode; 6] = [
        PageMode::Http10,
        PageMode::Persistent,
        PageMode::Pipelined,
        PageMode::Http10x4,
        PageMode::KeepAlive6,
        PageMode::H2,
    ];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            PageMode::Http10 => "http1.0",
            PageMode::Persistent => "persistent",
            PageMode::Pipelined => "pipelined",
            PageMode::Http10x4 => "http1.0-4",
            PageMode::KeepAlive6 => "keepalive-6",
            PageMode::H2 => "h2",
        }
    }

    /// bench's mode for each connection.
    pub fn http(self) -> HttpMode {
        match self {
            PageMode::Http10 | PageMode::Http10x4 => HttpMode::Http10,
            PageMode::Persistent | PageMode::KeepAlive6 => HttpMode::KeepAlive,
            PageMode::Pipelined => HttpMode::Pipeline,
            PageMode::H2 => HttpMode::Http2,
        }
    }

    /// Whether the server must be started with HTTP/2 on (nginx's cleartext `http2` listener
    /// speaks nothing else, so the HTTP/1 ways run on a peer started without it).
    pub fn needs_http2(self) -> bool {
        self == PageMode::H2
    }

    /// Connections that share one page at a time.
    pub fn connections(self) -> usize {
        match self {
            PageMode::Http10x4 => 4,
            PageMode::KeepAlive6 => 6,
            _ => 1,
        }
    }

    /// Why `server` cannot serve the page this way, if it cannot.
    pub fn unavailable(self, server: PeerKind) -> Option<String> {
        match self {
            PageMode::H2 if !server.speaks_http2() => Some(H2_SERVER_MISSING.into()),
            _ => None,
        }
    }
}

/// The page's files (workload URL indexes, in page order) dealt round-robin to `n` shares, each
/// a one-page workload.
pub fn shares(page: &Workload, n: usize) -> Vec<Workload> {
    let files = &page.pages[0].files;
    (0..n.min(files.len()))
        .map(|i| {
            let mine: Vec<&str> = files
                .iter()
                .skip(i)
                .step_by(n)
                .map(|&u| page.urls[u].as_str())
                .collect();
            Workload::from_pages([(format!("share{i}"), 1.0, mine)])
                .unwrap_or_else(|e| unreachable!("a share of a valid page: {e}"))
        })
        .collect()
}

/// Measures `page` shared among `load.clients` connections, in rounds (see the module's doc),
/// profiling `peer` over the measured rounds and counting the path's packets when there is one.
/// The calling thread must be in the path's client namespace.
#[allow(clippy::too_many_arguments)]
pub fn measure_shared(
    peer: &Peer,
    tls: Option<(&str, &TlsOptions)>,
    page: &Workload,
    load: Load,
    method: Option<Method>,
    stop: &AtomicBool,
    path: Option<&NetPath>,
) -> Result<Measurement, MeasureError> {
    let (target, tls) = crate::measure::target(peer, tls);
    let shares = shares(page, load.clients);
    let configs: Vec<BenchConfig> = shares
        .iter()
        .map(|_| BenchConfig {
            tls: tls.clone(),
            concurrency: 1,
            threads: 1,
            stop: Stop::Pages(1),
            warmup: Duration::ZERO,
            http: load.http,
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(30),
            progress: false,
            ..BenchConfig::new(target.clone())
        })
        .collect();
    let window = Window::prepare(peer.pid(), method)?;
    let _pin = load.cpu.and_then(|cpu| pin_current_thread(cpu).ok());
    if !load.warmup.is_zero() {
        rounds(&configs, &shares, page, Goal::For(load.warmup), stop, None)?;
    }
    let before = path.map(quiet_counters).transpose()?;
    let goal = load.pages.map_or(Goal::For(load.duration), Goal::Pages);
    let started_at = SystemTime::now();
    let (stats, duration) = rounds(&configs, &shares, page, goal, stop, Some(&window))?;
    let wire = match (path, before) {
        (Some(path), Some(before)) => Some(quiet_counters(path)?.since(&before)),
        _ => None,
    };
    let seen = window.finish();
    let profile_error = (method.is_some() && seen.profile.is_none()).then(|| {
        let why: Vec<String> = seen
            .profile_errors
            .iter()
            .map(ToString::to_string)
            .collect();
        if why.is_empty() {
            "no profile".to_owned()
        } else {
            why.join("; ")
        }
    });
    let config = BenchConfig {
        concurrency: load.clients,
        stop: goal.stop(),
        ..configs[0].clone()
    };
    Ok(Measurement {
        window: seen.window.unwrap_or(duration),
        run: RunResult {
            config,
            workload: page.clone(),
            stats,
            duration,
            started_at,
            interrupted: stop.load(Ordering::Relaxed),
        },
        profile: seen.profile,
        profile_error,
        server_cpu: seen.server_cpu.map(|c| c.total()),
        client_cpu: seen.client_cpu,
        wire,
    })
}

/// How long rounds go on.
#[derive(Debug, Clone, Copy)]
enum Goal {
    For(Duration),
    Pages(u64),
}

impl Goal {
    fn stop(self) -> Stop {
        match self {
            Goal::For(d) => Stop::Duration(d),
            Goal::Pages(n) => Stop::Pages(n),
        }
    }

    fn reached(self, pages: u64, elapsed: Duration) -> bool {
        match self {
            Goal::For(d) => elapsed >= d,
            Goal::Pages(n) => pages >= n,
        }
    }
}

/// Runs rounds until `goal` (or `stop`), one thread per share; the whole page's figures in one
/// `Stats` (requests, bytes, errors, connects and their times summed over the shares; a page
/// time per round), and the time the rounds took. `window` is told when the first starts and
/// the last has ended.
fn rounds(
    configs: &[BenchConfig],
    shares: &[Workload],
    page: &Workload,
    goal: Goal,
    stop: &AtomicBool,
    window: Option<&Window>,
) -> Result<(Stats, Duration), MeasureError> {
    let n = shares.len();
    let barrier = Barrier::new(n + 1);
    let done = AtomicBool::new(false);
    let total = Mutex::new(Stats::new(page, false));
    let failure: Mutex<Option<bench::BenchError>> = Mutex::new(None);
    let mut page_time = Latency::new(3);
    let mut pages = 0u64;
    let started = std::thread::scope(|scope| {
        for (config, share) in configs.iter().zip(shares) {
            let (barrier, done, total, failure) = (&barrier, &done, &total, &failure);
            scope.spawn(move || loop {
                barrier.wait();
                if done.load(Ordering::Relaxed) {
                    return;
                }
                match bench::run(config, share, stop) {
                    Ok(r) => add(
                        &mut total.lock().unwrap_or_else(|p| p.into_inner()),
                        &r.stats,
                    ),
                    Err(e) => {
                        failure
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(e);
                    }
                }
                barrier.wait();
            });
        }
        if let Some(w) = window {
            w.window_started();
        }
        let started = Instant::now();
        loop {
            let failed = failure.lock().unwrap_or_else(|p| p.into_inner()).is_some();
            if failed || stop.load(Ordering::Relaxed) || goal.reached(pages, started.elapsed()) {
                done.store(true, Ordering::Relaxed);
                barrier.wait();
                break;
            }
            let t = Instant::now();
            barrier.wait();
            barrier.wait();
            page_time.record(t.elapsed());
            pages += 1;
        }
        if let Some(w) = window {
            w.window_ended();
        }
        started
    });
    let elapsed = started.elapsed();
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e.into());
    }
    let mut stats = total.into_inner().unwrap_or_else(|p| p.into_inner());
    stats.page = page_time;
    stats.pages_done = pages;
    Ok((stats, elapsed))
}

/// Adds one share's figures to the page's.
fn add(total: &mut Stats, share: &Stats) {
    total.requests += share.requests;
    total.connects += share.connects;
    total.bytes_total += share.bytes_total;
    total.bytes_header += share.bytes_header;
    total.bytes_body += share.bytes_body;
    total.errors.merge(&share.errors);
    total.connect.merge(&share.connect);
    total.tls_handshake.merge(&share.tls_handshake);
    total.tls_handshakes += share.tls_handshakes;
    total.tls_resumed += share.tls_resumed;
    total.response.merge(&share.response);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docroot;

    #[test]
    fn shares_deal_every_file_once_round_robin() {
        let page = docroot::microscape_workload();
        for n in [1, 4, 6] {
            let s = shares(&page, n);
            assert_eq!(s.len(), n);
            let mut all: Vec<String> = s.iter().flat_map(|w| w.urls.clone()).collect();
            assert_eq!(all.len(), 44, "{n}");
            all.sort();
            all.dedup();
            assert_eq!(all.len(), 44, "{n}: a file twice");
            assert_eq!(s[0].urls[0], docroot::HTML_PATH, "the HTML leads share 0");
            let sizes: Vec<usize> = s.iter().map(|w| w.urls.len()).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn modes_name_their_connections_and_what_they_need() {
        let names: Vec<&str> = PageMode::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(
            names,
            [
                "http1.0",
                "persistent",
                "pipelined",
                "http1.0-4",
                "keepalive-6",
                "h2"
            ]
        );
        assert_eq!(PageMode::Http10x4.connections(), 4);
        assert_eq!(PageMode::KeepAlive6.connections(), 6);
        assert_eq!(PageMode::Http10x4.http(), HttpMode::Http10);
        assert_eq!(PageMode::H2.http(), HttpMode::Http2);
        assert_eq!(PageMode::H2.unavailable(PeerKind::Nginx), None);
        assert_eq!(
            PageMode::H2.unavailable(PeerKind::ApachePrefork).as_deref(),
            Some(H2_SERVER_MISSING)
        );
        assert_eq!(
            PageMode::KeepAlive6.unavailable(PeerKind::ApachePrefork),
            None
        );
    }
}
