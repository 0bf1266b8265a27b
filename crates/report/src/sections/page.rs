//! The page experiment (`flint lab syscalls`), as "Network Performance Effects of HTTP/1.1,
//! CSS1, and PNG" reported it: per way of fetching the page, the page time against the round
//! trip (a chart per way, a line per server), and per page the packets and bytes each way on the
//! wire, the connections, the server's syscalls and CPU. A way a server (or the client) could
//! not fetch the page is a row saying why, never left out.

use super::lab_rows::{distinct, results, server};
use super::{labs, series_name};
use crate::chart::{Axis, LineChart, Series};
use crate::html::{figures, table, Col, Page};
use crate::input::Input;
use crate::text::{self, esc};
use results::LabRow;
use std::fmt::Write;

/// The ways in the order docs/lab.md gives them; unknown ones after.
const MODES: [&str; 7] = [
    "http1.0",
    "persistent",
    "pipelined",
    "http1.0-4",
    "keepalive-6",
    "h2",
    "h3",
];

/// Files per page of the microscape page (the HTML and its 43 images): per page is per
/// request times this.
const PAGE_FILES: f64 = 44.0;

/// A row's way of fetching, with ` tls` over HTTPS: `keepalive-6 tls`.
pub(super) fn way(r: &LabRow) -> String {
    format!(
        "{}{}",
        r.page_mode.as_deref().unwrap_or(r.mode.name()),
        if r.tls == Some(true) { " tls" } else { "" }
    )
}

/// Sort key of a way: the mode's place, cleartext before TLS.
pub(super) fn way_rank(w: &str) -> (usize, bool) {
    let (base, tls) = match w.strip_suffix(" tls") {
        Some(b) => (b, true),
        None => (w, false),
    };
    (
        MODES.iter().position(|m| *m == base).unwrap_or(MODES.len()),
        tls,
    )
}

pub fn render(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut svgs = Vec::new();
    let mut tables = String::new();
    for (input, lab) in labs(inputs) {
        // Only the page experiment's rows carry a way.
        let rs: Vec<&LabRow> = results(lab, "syscalls")
            .filter(|r| r.page_mode.is_some())
            .collect();
        if rs.is_empty() {
            continue;
        }
        let mut ways = distinct(rs.iter().map(|r| r.page_mode.as_deref().unwrap_or("")));
        ways.sort_by_key(|w| way_rank(w));
        let servers = distinct(rs.iter().map(|r| server(r)));
        let rtts: Vec<f64> = {
            let mut v: Vec<f64> = rs.iter().filter_map(|r| r.rtt_ms).collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        if rtts.len() > 1 {
            for w in &ways {
                for tls in [false, true] {
                    let series: Vec<Series> = servers
                        .iter()
                        .filter_map(|srv| {
                            let points: Vec<(f64, f64)> = rs
                                .iter()
                                .filter(|r| {
                                    server(r) == *srv
                                        && r.page_mode.as_deref() == Some(*w)
                                        && r.tls.unwrap_or(false) == tls
                                })
                                .filter_map(|r| Some((r.rtt_ms?, r.page_ms_p50?)))
                                .collect();
                            (!points.is_empty()).then(|| Series {
                                name: series_name(inputs, input, srv),
                                points,
                            })
                        })
                        .collect();
                    if series.is_empty() {
                        continue;
                    }
                    let chart = LineChart {
                        id: page.chart_id(),
                        title: format!("{w}{}: page time", if tls { " over TLS" } else { "" }),
                        x: Axis::linear("round trip (ms)"),
                        y: Axis::linear("page time p50 (ms)"),
                        series,
                    };
                    svgs.extend(chart.svg());
                }
            }
        }
        let _ = write!(
            tables,
            r#"<h3>Per page, by server and way: <span class="file">{}</span></h3>{}"#,
            esc(&input.label),
            page_table(&rs)
        );
    }
    if tables.is_empty() {
        return String::new();
    }
    let mut out = figures(
        &svgs,
        "As \"Network Performance Effects of HTTP/1.1, CSS1, and PNG\": the page's time against the round trip, one chart per way of fetching it; the ways that open a connection per file pay for a handshake on every file.",
    );
    out.push_str(&tables);
    out
}

/// One row per server, way and round trip: the page's figures; a way that could not run says
/// why.
fn page_table(rs: &[&LabRow]) -> String {
    let mut sorted: Vec<&LabRow> = rs.to_vec();
    let servers = distinct(rs.iter().map(|r| server(r)));
    sorted.sort_by(|a, b| {
        let key = |r: &LabRow| {
            (
                servers.iter().position(|s| *s == server(r)),
                way_rank(&way(r)),
            )
        };
        key(a)
            .cmp(&key(b))
            .then(a.rtt_ms.unwrap_or(0.0).total_cmp(&b.rtt_ms.unwrap_or(0.0)))
    });
    // Without a tracer (`--no-profile`) no row has syscalls: no column of dashes (the syscalls
    // section says why nothing was traced).
    let traced = rs.iter().any(|r| r.syscalls_per_request.is_some());
    let mut cols = vec![
        Col("Server", false),
        Col("Way", false),
        Col("RTT ms", true),
        Col("RTT measured", true),
        Col("Page p50 ms", true),
        Col("Page p99 ms", true),
        Col("Conns/page", true),
        Col("Pkts → server", true),
        Col("Pkts → client", true),
        Col("KB → server", true),
        Col("KB → client", true),
        Col("Syscalls/page", true),
        Col("CPU µs/page", true),
        Col("Errors", true),
    ];
    if !traced {
        cols.retain(|c| c.0 != "Syscalls/page");
    }
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|r| {
            let mut row = vec![
                esc(server(r)),
                esc(&way(r)),
                text::opt(r.rtt_ms),
                text::opt(r.rtt_measured_ms),
            ];
            match super::lab_rows::no_figures(r) {
                Some(why) => {
                    row.push(why);
                    row.resize(cols.len(), String::new());
                }
                None => {
                    let w = r.wire;
                    row.extend([
                        text::opt(r.page_ms_p50),
                        text::opt(r.page_ms_p99),
                        text::opt(r.connections_per_page),
                        text::opt(w.map(|w| w.packets_to_server)),
                        text::opt(w.map(|w| w.packets_to_client)),
                        text::opt(w.map(|w| w.bytes_to_server / 1024.0)),
                        text::opt(w.map(|w| w.bytes_to_client / 1024.0)),
                    ]);
                    if traced {
                        row.push(text::opt(r.syscalls_per_request.map(|s| s * PAGE_FILES)));
                    }
                    row.extend([
                        text::opt(r.server_cpu_us_per_request.map(|c| c * PAGE_FILES)),
                        text::count(r.errors as f64),
                    ]);
                }
            }
            row
        })
        .collect();
    table(&cols, &rows, "page")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ways_sort_as_the_docs_give_them_cleartext_first() {
        let mut w = vec![
            "h3 tls",
            "h2",
            "keepalive-6 tls",
            "http1.0",
            "keepalive-6",
            "odd",
            "h2 tls",
        ];
        w.sort_by_key(|w| way_rank(w));
        assert_eq!(
            w,
            [
                "http1.0",
                "keepalive-6",
                "keepalive-6 tls",
                "h2",
                "h2 tls",
                "h3 tls",
                "odd"
            ]
        );
    }
}
