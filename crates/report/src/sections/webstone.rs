//! WebSTONE's report (the paper's section 7): the run's totals (connects and connect time,
//! response time, data moved, the WebSTONE number), then the per-page block, one table row per
//! page: how often it was hit, how long it took, how much data it moved. Plus the modern
//! p50/p99 of the page time.
//!
//! Over HTTPS the paper's connect time stays the TCP connect; the TLS handshake, which the paper
//! did not have, is in its own columns beside it.

use super::benches;
use super::https::is_https;
use crate::html::{table, Col};
use crate::input::{latency, Input};
use crate::text::{self, esc};
use results::{BenchResult, PageRecord};
use std::fmt::Write;

/// A count cell.
fn cnt(x: u64) -> String {
    text::count(x as f64)
}

/// Seconds for a cell; blank when the figure is not a time that was measured.
fn secs(x: f64) -> String {
    text::opt(x.is_finite().then_some(x))
}

/// The run's totals, a row per bench result; TLS columns when some run was over HTTPS.
fn totals(inputs: &[Input<'_>]) -> String {
    let runs: Vec<(&Input<'_>, &BenchResult)> = benches(inputs).collect();
    if runs.is_empty() {
        return String::new();
    }
    let tls = runs.iter().any(|(_, b)| is_https(b));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(i, b)| {
            let s = &b.summary;
            let mut row = vec![
                format!(r#"<span class="file">{}</span>"#, esc(&i.label)),
                text::opt((s.webstone_number > 0.0).then_some(s.webstone_number)),
                cnt(s.connects),
                secs(s.avg_connect_s),
                secs(s.max_connect_s),
            ];
            if tls {
                let h = s.tls_handshake_ms.unwrap_or_default();
                let handshakes = s.tls.as_ref().map_or(h.count, |t| t.handshakes);
                row.extend(if is_https(b) {
                    [
                        cnt(handshakes),
                        text::opt(latency(&h, |l| l.mean / 1e3)),
                        text::opt(latency(&h, |l| l.max / 1e3)),
                    ]
                } else {
                    ["–".into(), "–".into(), "–".into()]
                });
            }
            row.extend([
                secs(s.avg_response_s),
                secs(s.max_response_s),
                text::bytes(s.bytes_total as f64),
                text::opt(
                    (s.webstone_thruput_bytes_per_s > 0.0)
                        .then_some(s.webstone_thruput_bytes_per_s / 1e6),
                ),
            ]);
            row
        })
        .collect();
    let mut cols = vec![
        Col("Result", false),
        Col("WebSTONE number", true),
        Col("Connects", true),
        Col("Avg connect s (TCP)", true),
        Col("Max connect s (TCP)", true),
    ];
    if tls {
        cols.extend([
            Col("TLS handshakes", true),
            Col("Avg TLS handshake s", true),
            Col("Max TLS handshake s", true),
        ]);
    }
    cols.extend([
        Col("Avg response s", true),
        Col("Max response s", true),
        Col("Data moved", true),
        Col("Thruput MB/s per Webchild", true),
    ]);
    let mut out = String::from("<h3>Totals</h3>");
    out.push_str(&table(&cols, &rows, "webstone"));
    out.push_str(r#"<p class="note">As the WebSTONE report's summary: the WebSTONE number is pages per minute; connect time is the TCP connect"#);
    if tls {
        out.push_str(", and the TLS handshake that follows it is timed apart");
    }
    out.push_str(
        r#"; Thruput is the paper's: data moved over the Webchildren's cumulative time, so per Webchild (the Benchmarks table's MB/s is all of them together over the window).</p>"#,
    );
    out
}

/// One run's per-page table.
fn page_table(b: &BenchResult) -> Option<String> {
    let pages = &b.pages;
    if pages.is_empty() {
        return None;
    }
    let total_weight: f64 = pages.iter().map(|p| p.weight).sum();
    let duration = Some(b.summary.duration_s).filter(|d| *d > 0.0);
    let mut rows: Vec<Vec<String>> = pages
        .iter()
        .map(|p: &PageRecord| {
            vec![
                format!(
                    r#"{}<small class="rng" title="{}">{} file{}</small>"#,
                    esc(if p.name.is_empty() { "?" } else { &p.name }),
                    esc(&p.files.join("\n")),
                    p.files.len(),
                    if p.files.len() == 1 { "" } else { "s" }
                ),
                text::opt((total_weight > 0.0).then(|| 100.0 * p.weight / total_weight)),
                if p.size_bytes > 0 {
                    text::bytes(p.size_bytes as f64)
                } else {
                    "–".into()
                },
                cnt(p.hits),
                text::opt(duration.map(|d| p.hits as f64 / d)),
                cnt(p.errors),
                text::opt(latency(&p.time_ms, |l| l.p50)),
                text::opt(latency(&p.time_ms, |l| l.p99)),
                text::num(p.max_response_s * 1e3),
                text::num(p.connect_time_s * 1e3),
                text::bytes(p.data_moved_bytes as f64),
                cnt(p.connects),
            ]
        })
        .collect();
    let sum = |pick: fn(&PageRecord) -> f64| pages.iter().map(pick).sum::<f64>();
    let hits = sum(|p| p.hits as f64);
    let mut total = vec!["total".to_owned(), "100".into(), String::new()];
    total.push(text::count(hits));
    total.push(text::opt(duration.map(|d| hits / d)));
    total.push(text::count(sum(|p| p.errors as f64)));
    total.extend([String::new(), String::new(), String::new()]);
    total.push(text::num(sum(|p| p.connect_time_s) * 1e3));
    total.push(text::bytes(sum(|p| p.data_moved_bytes as f64)));
    total.push(text::count(sum(|p| p.connects as f64)));
    rows.push(total);
    let cols = [
        Col("Page", false),
        Col("Weight %", true),
        Col("Page size", true),
        Col("Hits", true),
        Col("Pages/s", true),
        Col("Errors", true),
        Col("p50 ms", true),
        Col("p99 ms", true),
        Col("Max page ms", true),
        Col("Connect ms", true),
        Col("Data moved", true),
        Col("Connects", true),
    ];
    let mut t = table(&cols, &rows, "pages");
    // The totals row is the last one: mark it so it reads as a sum.
    if let Some(pos) = t.rfind("<tr><td>total") {
        t.replace_range(pos..pos + 4, r#"<tr class="total">"#);
    }
    Some(t)
}

pub fn pages(inputs: &[Input<'_>]) -> String {
    let mut blocks = String::new();
    for (input, b) in benches(inputs) {
        if let Some(t) = page_table(b) {
            let _ = write!(
                blocks,
                r#"<h3><span class="file">{}</span></h3>{t}"#,
                esc(&input.label)
            );
        }
    }
    let mut out = totals(inputs);
    if blocks.is_empty() {
        return out;
    }
    out.push_str(&blocks);
    out.push_str(r#"<p class="note">As the WebSTONE report's page blocks: times of a whole page (all its files, fetched by one Webchild: one after another over HTTP/1.x, as concurrent streams over HTTP/2), in milliseconds throughout (the paper gave the maximum and the connect time in seconds); connect time is the sum over the page's connects.</p>"#);
    out
}
