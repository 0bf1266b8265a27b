//! `flint lab tls`, drawn: handshakes per second and the server's CPU per handshake, full against
//! resumed, for each server and key; and the IO-Lite figure again, bandwidth against file size,
//! over HTTPS. The keep-alive rows (syscalls per request) are in the table under the charts.

use super::lab::LIMITED_NOTE;
use super::lab_rows::{distinct, no_figures_note, results, server};
use super::{labs, series_name};
use crate::chart::{Axis, BarChart, BarSeries, LineChart, Series, Ticks};
use crate::html::{figures, table, Col, Page};
use crate::input::Input;
use crate::text::{self, esc};
use results::LabRow;
use std::fmt::Write;

const HANDSHAKES: [&str; 2] = ["full", "resumed"];

fn certificate(r: &LabRow) -> &str {
    r.certificate.as_deref().unwrap_or("?")
}

fn handshake(r: &LabRow) -> Option<&str> {
    r.handshake.as_deref()
}

pub fn render(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    let mut lines: Vec<Series> = Vec::new();
    for (input, lab) in labs(inputs) {
        let rs: Vec<&LabRow> = results(lab, "tls").collect();
        if rs.is_empty() {
            continue;
        }
        // Handshakes: one group per server and key, a bar each for full and resumed.
        let shakes: Vec<&LabRow> = rs
            .iter()
            .copied()
            .filter(|r| handshake(r).is_some())
            .collect();
        let groups: Vec<(String, String)> = distinct(shakes.iter().map(|r| server(r)))
            .into_iter()
            .flat_map(|srv| {
                distinct(
                    shakes
                        .iter()
                        .filter(|r| server(r) == srv)
                        .map(|r| certificate(r)),
                )
                .into_iter()
                .map(move |c| (srv.to_owned(), c.to_owned()))
            })
            .collect();
        let find = |g: &(String, String), h: &str| {
            shakes
                .iter()
                .copied()
                .find(|r| server(r) == g.0 && certificate(r) == g.1 && handshake(r) == Some(h))
        };
        let bars =
            |page: &mut Page, title: &str, y: &str, pick: &dyn Fn(&LabRow) -> Option<f64>| {
                BarChart {
                    id: page.chart_id(),
                    title: title.into(),
                    x_title: "server, key (bars: handshake)".into(),
                    y: Axis::linear(y),
                    groups: groups
                        .iter()
                        .map(|g| series_name(inputs, input, &format!("{} {}", g.0, g.1)))
                        .collect(),
                    series: HANDSHAKES
                        .iter()
                        .map(|h| BarSeries {
                            name: (*h).to_owned(),
                            values: groups.iter().map(|g| find(g, h).and_then(pick)).collect(),
                            ranges: Vec::new(),
                        })
                        .collect(),
                }
                .svg()
            };
        let svgs: Vec<String> = [
            bars(
                page,
                "TLS handshakes per second",
                "handshakes per second",
                // A row that measured nothing has no rate: no bar, not a bar of 0.
                &|r| r.has_figures().then_some(r.requests_per_s),
            ),
            bars(
                page,
                "Server CPU per handshake",
                "server CPU time per handshake (µs)",
                &|r| r.server_cpu_us_per_request.filter(|_| r.has_figures()),
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        out.push_str(&figures(
            &svgs,
            "HTTP/1.0, a connection and so a handshake per request: a full handshake costs the \
             server its signature (ECDSA P-256 or RSA-2048), a resumed one only a ticket or cache \
             lookup.",
        ));

        // Bandwidth against size over TLS, one line per server.
        for srv in distinct(rs.iter().map(|r| server(r))) {
            let mut pts: Vec<(f64, f64)> = rs
                .iter()
                .filter(|r| server(r) == srv && r.has_figures())
                .filter_map(|r| Some((r.size_bytes? as f64, r.bytes_per_s / 1e6)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            lines.push(Series {
                name: series_name(inputs, input, srv),
                points: pts,
            });
        }

        // Every row, in a table under the charts.
        let cols = [
            Col("Server", false),
            Col("Key", false),
            Col("What", false),
            Col("req/s", true),
            Col("MB/s", true),
            Col("CPU µs/req", true),
            Col("syscalls/req", true),
        ];
        let opt = |x: Option<f64>| x.map_or("–".to_owned(), text::num);
        let what = |r: &LabRow| match (handshake(r), r.size_bytes) {
            (Some(h), _) => format!("{h} handshakes"),
            (None, Some(size)) => text::bytes(size as f64),
            (None, None) => format!("{} page", r.mode.name()),
        };
        let rows: Vec<Vec<String>> = rs
            .iter()
            .map(|r| {
                let mut cells = vec![esc(server(r)), esc(certificate(r)), esc(&what(r))];
                if !r.has_figures() {
                    cells.extend(std::iter::repeat_n("n/a".to_owned(), 4));
                    return cells;
                }
                cells.extend([
                    format!(
                        "{}{}",
                        text::num(r.requests_per_s),
                        if r.client_limited { "†" } else { "" }
                    ),
                    text::num(r.bytes_per_s / 1e6),
                    opt(r.server_cpu_us_per_request),
                    opt(r.syscalls_per_request),
                ]);
                cells
            })
            .collect();
        let _ = write!(
            out,
            r#"<h3>Over HTTPS: <span class="file">{}</span></h3>{}"#,
            esc(&input.label),
            table(&cols, &rows, "tls")
        );
        out.push_str(&no_figures_note(rs.iter().copied(), |r| {
            format!("{} {} {}", server(r), certificate(r), what(r))
        }));
        if rs.iter().any(|r| r.client_limited) {
            out.push_str(LIMITED_NOTE);
        }
    }
    let chart = LineChart {
        id: page.chart_id(),
        title: "Bandwidth against file size, over HTTPS".into(),
        x: Axis::log("requested file size (bytes, log scale)", Ticks::Bytes),
        y: Axis::linear("output bandwidth (MB/s)"),
        series: lines,
    };
    if let Some(svg) = chart.svg() {
        out.push_str(&figures(
            &[svg],
            "As IO-Lite's figure 3, with every byte encrypted: sendfile no longer hands the page \
             cache to the socket unless the kernel does the record layer.",
        ));
    }
    out
}
