//! Client hosts of a bench run on many hosts: a table per run and each host's throughput over
//! time (a host that started late, stalled or was lost shows in its line).
//!
//! Read from the typed host records (`results::HostRecord`), the same types the coordinator
//! wrote.

use super::benches;
use crate::chart::{Axis, LineChart, Series};
use crate::html::{figures, table, Col, Page};
use crate::input::{latency, Input};
use crate::text::{count, esc, opt};
use results::HostStatus;

pub fn render(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    let mut svgs = Vec::new();
    for (input, b) in benches(inputs) {
        let hosts = &b.hosts;
        if hosts.is_empty() {
            continue;
        }
        let cols = [
            Col("host", false),
            Col("Webchildren", true),
            Col("status", false),
            Col("requests", true),
            Col("pages", true),
            Col("errors", true),
            Col("clock offset (ms)", true),
            Col("start skew (ms)", true),
            Col("client CPU (µs/request)", true),
            Col("p50 (ms)", true),
            Col("p99 (ms)", true),
        ];
        let rows: Vec<Vec<String>> = hosts
            .iter()
            .map(|h| {
                let ok = h.status == HostStatus::Ok;
                let mut status = match &h.reason {
                    Some(why) if !ok => format!("{}: {}", h.status.name(), esc(why)),
                    _ => h.status.name().to_owned(),
                };
                if let Some(warning) = &h.warning {
                    // An ok host whose figures miss part of its window (it started late).
                    status.push_str(&format!(" ({})", esc(warning)));
                }
                if let Some(at) = h.known_until_s {
                    // A lost host's figures are what it said it had done, not merged.
                    status.push_str(&format!(" (figures as last heard, {at:.1} s in)"));
                }
                let r = &h.response_ms;
                vec![
                    esc(&h.name),
                    count(h.webchildren as f64),
                    status,
                    count(h.requests as f64),
                    count(h.pages as f64),
                    count(h.errors as f64),
                    opt(h.clock_offset_ms),
                    opt(h.start_skew_ms),
                    opt(h.client_cpu_us_per_request),
                    opt(latency(r, |l| l.p50).filter(|_| ok)),
                    opt(latency(r, |l| l.p99).filter(|_| ok)),
                ]
            })
            .collect();
        if inputs.len() > 1 {
            out.push_str(&format!("<h3>{}</h3>", esc(&input.label)));
        }
        if b.incomplete {
            out.push_str(
                "<p>Incomplete: a host was lost; the figures are the merge of the others, and a \
                 lost host's row is what it said it had done when last heard.</p>",
            );
        }
        out.push_str(&table(&cols, &rows, "hosts"));
        let series: Vec<Series> = hosts
            .iter()
            .filter(|h| !h.requests_per_second.is_empty())
            .map(|h| Series {
                name: h.name.clone(),
                points: h
                    .requests_per_second
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| ((i + 1) as f64, n as f64))
                    .collect(),
            })
            .collect();
        let chart = LineChart {
            id: page.chart_id(),
            title: format!("Throughput per host · {}", input.label),
            x: Axis::linear("time from the agreed start of the measured window (s)"),
            y: Axis::linear("requests per second"),
            series,
        };
        svgs.extend(chart.svg());
    }
    if out.is_empty() {
        return out;
    }
    out.push_str(&figures(
        &svgs,
        "Each host's requests per second, its seconds aligned on the start every host agreed to.",
    ));
    out
}
