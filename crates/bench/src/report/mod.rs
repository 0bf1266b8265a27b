//! Reports of a [`crate::RunResult`]: the paper's, ptester's, a modern summary, and JSON.
//!
//! The figures are computed once, here ([`figures`], [`page_blocks`]), from the merged
//! statistics, and every report formats the same numbers: the WebSTONE text, the JSON and the
//! summary cannot disagree. The paper's arithmetic lives in [`formulas`] (docs/webstone.md).
//!
//! [`webstone`] (the paper's section 7 report), [`ptester`] (per-URL table), [`summary`] (modern
//! summary) and [`json`] (schema in docs/bench-json.schema.json) all read one [`Figures`]
//! computed once, so the text and the JSON cannot disagree; [`environment`] describes the
//! machine, for every kind of result (bench, compare, lab), as the WebSTONE paper asks every
//! result to disclose.

mod environment;
pub mod formulas;
mod hosts;
mod json;
mod ptester;
mod summary;
mod webstone;
pub mod words;

pub use environment::environment;
pub use hosts::hosts_table;
pub use json::{json, record, rfc3339, timeseries, SCHEMA_VERSION};
pub use ptester::ptester_body;
pub use summary::{summary, summary_body};
pub use webstone::{webstone, webstone_body};
pub use words::count_of;

/// ptester's table, ending with the note of a run cut short (Ctrl-C, fail fast).
pub fn ptester(r: &RunResult) -> String {
    ptester_body(r) + &interrupted_note(r).unwrap_or_default()
}

/// What a text report ends with: the unfinished requests, a rate not kept, an interruption or
/// an early stop.
/// Printed once, after the last of the reports asked for.
pub fn end_notes(r: &RunResult, indent: &str) -> String {
    let mut o = unfinished_notes(r, indent);
    if let Some(note) = interrupted_note(r) {
        o.push_str(&note);
    }
    o
}

use crate::config::{HttpMode, Stop};
use crate::RunResult;
use formulas::secs;

/// The run-wide figures of the WebSTONE summary, plus the modern rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// Pages per minute of the measured window (fractional).
    pub webstone_number: f64,
    /// Webchildren whose measurements these are ("Total number of clients"): on many hosts,
    /// those of the hosts that finished.
    pub clients: u64,
    /// Webchildren of client hosts lost during the run: not in these figures.
    pub clients_lost: u64,
    /// Event-loop threads that ran the measured Webchildren, on every host.
    pub threads: u64,
    /// Client hosts merged (0: a run in one process).
    pub hosts: u64,
    /// Sum of the Webchildren's running time in the window, s.
    pub cumulative_s: f64,
    /// Pages retrieved: those whose every file was a success.
    pub pages: u64,
    /// Failed requests and error responses, every kind.
    pub errors: u64,
    /// Connections opened.
    pub connects: u64,
    /// Files retrieved (complete responses).
    pub requests: u64,
    /// The sum of the connect times, s.
    pub total_connect_s: f64,
    /// The average connect time, s: over connects, not files (the paper's clients connected once
    /// per file).
    pub avg_connect_s: f64,
    /// The slowest connect, s.
    pub max_connect_s: f64,
    /// "Total amount of data moved": head and body bytes of the counted responses, exactly.
    pub data_moved: u64,
    /// Every byte read in the window: data moved plus the bytes of no counted response.
    pub bytes_read: u64,
    /// Body bytes of the counted responses.
    pub body_bytes: u64,
    /// Header bytes of the counted responses.
    pub header_bytes: u64,
    /// The average body per file.
    pub avg_body_bytes: f64,
    /// The average file retrieved, head and body (the paper's average retrieval size).
    pub avg_retrieval_bytes: f64,
    /// The paper's per-Webchild throughput: data moved / cumulative time.
    pub thruput: f64,
    /// The paper's average response time: cumulative time / files.
    pub avg_response_s: f64,
    /// Longest single file (connect included), s, exact to the µs as the page blocks' maxima.
    pub max_response_s: f64,
    /// The measured window, s.
    pub duration_s: f64,
    /// Files retrieved per second of the measured window.
    pub requests_per_s: f64,
    /// Pages retrieved per second of the measured window.
    pub pages_per_s: f64,
    /// Aggregate: data moved / measured window.
    pub throughput_bytes_per_s: f64,
}

/// One WebSTONE per-page block.
#[derive(Debug, Clone, PartialEq)]
pub struct PageBlock {
    /// The page's name in the workload.
    pub name: String,
    /// Its relative weight in the workload.
    pub weight: f64,
    /// Times the page was retrieved whole.
    pub hits: u64,
    /// Times it was abandoned, one of its files failed.
    pub errors: u64,
    /// The sum of its page times, s.
    pub total_time_s: f64,
    /// Its longest page time, s.
    pub max_response_s: f64,
    /// The sum of the connect times of its files, s.
    pub connect_time_s: f64,
    /// The slowest connect made for one of its files, s.
    pub max_connect_s: f64,
    /// Body bytes of the page's files (the paper's figure is hits x page size).
    pub data_moved: u64,
    /// Sum of its files' sizes, as last served.
    pub size: u64,
    /// Connections opened for its files.
    pub connects: u64,
}

/// The summary figures of a run.
pub fn figures(r: &RunResult) -> Figures {
    use formulas::*;
    let s = &r.stats;
    let duration_s = r.duration.as_secs_f64();
    let cumulative_s = secs(s.cumulative_us);
    let with_connects = s.urls.iter().filter(|u| u.connects > 0);
    let url_connect_us: u64 = with_connects.clone().map(|u| u.connect_us_sum).sum();
    let url_connect_max = with_connects.clone().map(|u| u.connect_us_max).max();
    let connect = s.connect.summary();
    // Per-URL sums are exact; the histogram is the fallback if an engine left them empty.
    let (total_connect_s, max_connect_s) = match url_connect_max {
        Some(max) => (secs(url_connect_us), secs(max)),
        None => (connect.mean * connect.count as f64 / 1e3, connect.max / 1e3),
    };
    // A result merged by the runner knows its Webchildren and threads; one built by hand does
    // not, and stands for the whole run.
    let asked = r.config.concurrency as u64;
    let clients = if s.webchildren > 0 {
        s.webchildren
    } else {
        asked
    };
    let threads = match s.threads {
        0 => r.config.threads.min(r.config.concurrency) as u64,
        n => n,
    };
    Figures {
        webstone_number: webstone_number(s.pages_done, duration_s / 60.0),
        clients,
        clients_lost: asked.saturating_sub(clients),
        threads,
        hosts: s.hosts,
        cumulative_s,
        pages: s.pages_done,
        errors: s.errors.total(),
        connects: s.connects,
        requests: s.requests,
        total_connect_s,
        avg_connect_s: average_connect_time(total_connect_s, s.connects),
        max_connect_s,
        data_moved: s.data_moved(),
        bytes_read: s.bytes_total,
        body_bytes: s.bytes_body,
        header_bytes: s.bytes_header,
        avg_body_bytes: average_size(s.bytes_body, s.requests),
        avg_retrieval_bytes: average_size(s.data_moved(), s.requests),
        thruput: thruput(s.data_moved(), cumulative_s),
        avg_response_s: average_response_time(cumulative_s, s.requests),
        max_response_s: secs(s.response_us_max),
        duration_s,
        requests_per_s: per_second(s.requests, duration_s),
        pages_per_s: per_second(s.pages_done, duration_s),
        throughput_bytes_per_s: aggregate_throughput(s.data_moved(), duration_s),
    }
}

/// The per-page blocks, in workload order.
pub fn page_blocks(r: &RunResult) -> Vec<PageBlock> {
    let s = &r.stats;
    r.workload
        .pages
        .iter()
        .zip(&s.pages)
        .map(|(page, ps)| PageBlock {
            name: page.name.clone(),
            weight: page.weight,
            hits: ps.hits,
            errors: ps.errors,
            total_time_s: secs(ps.time_us_sum),
            max_response_s: secs(ps.time_us_max),
            connect_time_s: secs(ps.connect_us_sum),
            max_connect_s: secs(ps.connect_us_max),
            data_moved: ps.body_bytes,
            size: formulas::page_size(
                page.files
                    .iter()
                    .map(|&u| s.urls.get(u).map_or(0, |u| u.last_body_size)),
            ),
            connects: ps.connects,
        })
        .collect()
}

/// Who made the load, in words: `6 Webchildren on 6 threads on 3 hosts`, and those lost with
/// their hosts apart.
pub fn load_shape_text(f: &Figures) -> String {
    let mut t = format!(
        "{} on {}",
        count_of(f.clients, "Webchild", "Webchildren"),
        count_of(f.threads, "thread", "threads")
    );
    if f.hosts > 0 {
        t.push_str(&format!(" on {}", count_of(f.hosts, "host", "hosts")));
    }
    if f.clients_lost > 0 {
        t.push_str(&format!(
            " ({} more on lost hosts, not measured)",
            f.clients_lost
        ));
    }
    t
}

/// How files were fetched, in words.
pub fn http_mode_text(mode: HttpMode) -> &'static str {
    match mode {
        HttpMode::Http10 => "HTTP/1.0, a new connection per file",
        HttpMode::KeepAlive => "HTTP/1.1 keep-alive",
        HttpMode::Pipeline => "HTTP/1.1 pipelined pages",
        HttpMode::Http2 => "HTTP/2, a page's files as concurrent streams",
        HttpMode::Http3 => "HTTP/3 over QUIC, a page's files as concurrent streams",
    }
}

/// How files were fetched, in words, for this run: [`http_mode_text`], except that HTTP/2 with
/// one-file pages and `--streams N` above one keeps N single-file pages in flight on each
/// connection (h2load's `-m N`), which is not "a page's files as concurrent streams"; fewer when
/// the server allows fewer streams at once.
pub fn run_mode_text(r: &RunResult) -> String {
    let one_file = r.workload.pages.iter().all(|p| p.files.len() <= 1);
    match (r.config.http, r.config.streams) {
        (HttpMode::Http2, Some(n)) if n > 1 && one_file => {
            // The server's SETTINGS cap the streams in flight: say the number that applied.
            let allowed = r.stats.http2.max_concurrent_streams;
            if allowed > 0 && allowed < u64::from(n) {
                format!(
                    "HTTP/2, {allowed} one-file pages in flight per connection as streams ({n} \
                     asked, the server allows {allowed})"
                )
            } else {
                format!("HTTP/2, {n} one-file pages in flight per connection as streams")
            }
        }
        (HttpMode::Pipeline, Some(n)) if n > 1 && one_file => {
            format!("HTTP/1.1 pipelined, {n} one-file pages in flight per connection")
        }
        (mode, _) if r.config.connections_per_child > 1 => format!(
            "{}, {} connections a Webchild sharing each page's files",
            http_mode_text(mode),
            r.config.connections_per_child
        ),
        (mode, _) => http_mode_text(mode).to_owned(),
    }
}

/// Closed or open loop, in words.
pub fn load_text(r: &RunResult) -> String {
    match (r.config.rate, r.config.think) {
        (Some(rate), _) => format!("open loop at {rate} pages/s"),
        (None, Some(think)) => format!("closed loop, think {:.3} s", think.as_secs_f64()),
        (None, None) => "closed loop".to_owned(),
    }
}

/// How the run was asked to end, in words.
pub fn stop_text(stop: Stop) -> String {
    match stop {
        Stop::Duration(d) => format!("{:.3} s", d.as_secs_f64()),
        Stop::Pages(n) => count_of(n, "page", "pages"),
    }
}

/// Open loop with a page count (`-n`): how long after the schedule's last due page a page may
/// start before it counts as sent late, µs: one Webchild interval (`concurrency / rate`), and at
/// least `LATE_GRACE_MIN_US` (10 ms), so that a false alarm needs the client to stall that long
/// at the very end. `None` for a timed run and the closed loop.
pub fn late_grace_us(r: &RunResult) -> Option<u64> {
    let rate = r
        .config
        .rate
        .filter(|_| matches!(r.config.stop, Stop::Pages(_)))?;
    let interval_us = 1e6 * r.config.concurrency as f64 / rate;
    Some(interval_us.max(crate::client::LATE_GRACE_MIN_US as f64) as u64)
}

/// Whether an open-loop run fell short of its rate: pages due in the window that never started
/// (a timed run) or that started after the schedule's last due page and its grace
/// ([`late_grace_us`], a page count, `Stats::pages_sent_late`) are 1% or more of those
/// scheduled, and at least one.
pub fn rate_not_kept(r: &RunResult) -> bool {
    let s = &r.stats;
    let missed = s.pages_not_sent.saturating_add(s.pages_sent_late);
    r.config.rate.is_some()
        && missed > 0
        && u128::from(missed) * 100 >= u128::from(s.pages_scheduled)
}

/// Whether the requests still unanswered when the run ended say something. In the closed loop
/// a timed run ends with each connection's requests in flight; those that had waited no longer
/// than the slowest completed response are only that. Told: one that waited longer (a stalled
/// server), any in the open loop (they are in the corrected latencies), any in a run that
/// completed no response.
pub fn unfinished_tell(r: &RunResult) -> bool {
    let s = &r.stats;
    s.unfinished > 0
        && (r.config.rate.is_some()
            || s.response.count() == 0
            || s.unfinished_wait.summary().max > s.response.summary().max)
}

/// Whether pages say nothing requests do not: as many pages as requests and the same times
/// (one-file pages, no redirect followed), so that the Pages line and the page rows would
/// repeat the Requests line and the response rows.
pub fn pages_repeat_requests(r: &RunResult) -> bool {
    let s = &r.stats;
    let same = |a: &crate::stats::Latency, b: &crate::stats::Latency| a.summary() == b.summary();
    let uncorrected = match (&s.page_uncorrected, &s.response_uncorrected) {
        (None, None) => true,
        (Some(p), Some(q)) => same(p, q),
        _ => false,
    };
    s.pages_done == s.requests && same(&s.page, &s.response) && uncorrected
}

/// The text reports' lines about what the run's end left undone: unfinished requests, and in the
/// open loop a rate that was not kept (with the Webchildren that would keep it). The unfinished
/// line starts with `indent`, as the lines of the report around it do; a rate not kept is a
/// warning and starts at the margin, in capitals.
fn unfinished_notes(r: &RunResult, indent: &str) -> String {
    let s = &r.stats;
    let mut o = String::new();
    if unfinished_tell(r) {
        let w = s.unfinished_wait.summary();
        o.push_str(&format!(
            "{indent}Unfinished: {} sent and not answered when the run ended, after waiting \
             {:.3} ms (median) to {:.3} ms; not errors, not in the requests above{}\n",
            count_of(s.unfinished, "request", "requests"),
            w.p50,
            w.max,
            if r.config.rate.is_some() {
                ", but in the corrected latencies with their wait so far (a lower bound)"
            } else {
                ""
            }
        ));
    }
    // In the closed loop a request still connecting when a timed run ends is only the end (the
    // server received nothing, no count has it); told in the open loop, where its wait is in
    // the latencies, and in a run that completed no response.
    let unsent_tell = r.config.rate.is_some() || s.response.count() == 0;
    if s.unsent_at_end > 0 && unsent_tell {
        o.push_str(&format!(
            "{indent}Not sent: {} begun and not yet sent when the run ended (connecting, in the \
             TLS handshake, or partly written); the server received none of them\n",
            count_of(s.unsent_at_end, "request", "requests"),
        ));
    }
    if let Some(rate) = r.config.rate.filter(|_| rate_not_kept(r)) {
        let sent = s.pages_scheduled.saturating_sub(s.pages_not_sent);
        let c = r.config.concurrency;
        let need = match &s.page_uncorrected {
            Some(p) if p.count() > 0 => {
                let page_s = p.summary().mean / 1e3;
                let need = formulas::webchildren_for(rate, page_s);
                if need <= c as u64 {
                    // Little's law: the Webchildren were enough for the pages' time; what held
                    // the pages back was the client (a busy machine, a slow start).
                    format!(
                        "at the {:.3} ms a page took, {rate} pages/s needs about {need} \
                         Webchildren (-c) and this run had {c}: the client itself was late",
                        page_s * 1e3,
                    )
                } else {
                    format!(
                        "at the {:.3} ms a page took, {rate} pages/s needs about {need} \
                         Webchildren (-c); this run had {c}",
                        page_s * 1e3,
                    )
                }
            }
            _ => "no page completed, so the server, not the Webchildren, held the rate back"
                .to_owned(),
        };
        let not_sent = format!("{} never started", s.pages_not_sent);
        let what = match late_grace_us(r) {
            // A page count sends every page in the end, unless stopped (Ctrl-C).
            Some(grace) => format!(
                "{} of them more than {:.3} ms after the last was due (one Webchild's interval, \
                 at least 10 ms){}",
                s.pages_sent_late,
                grace as f64 / 1e3,
                match s.pages_not_sent {
                    0 => String::new(),
                    _ => format!("; {not_sent}"),
                }
            ),
            None => not_sent,
        };
        o.push_str(&format!(
            "RATE NOT KEPT: {sent} of {} scheduled pages were sent, {what}; {need}.\n",
            s.pages_scheduled
        ));
    }
    o
}

/// The line every text report ends with when the run was cut short: by Ctrl-C, or because
/// every attempt failed the same way (fail fast).
fn interrupted_note(r: &RunResult) -> Option<String> {
    let measured = r.duration.as_secs_f64();
    if let Some(g) = r.stats.gave_up.filter(|_| !r.interrupted) {
        return Some(format!(
            "Stopped early: every attempt failed as {} ({} in {:.1} s); these figures cover \
             the {measured:.3} s measured.\n",
            g.kind.name(),
            g.attempts,
            g.after.as_secs_f64()
        ));
    }
    r.interrupted.then(|| {
        format!(
            "Interrupted: the run was ended early; these figures cover the {measured:.3} s measured.\n"
        )
    })
}
