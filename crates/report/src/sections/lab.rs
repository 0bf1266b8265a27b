//! The Jigsaw and IO-Lite experiments, as their papers drew them: bandwidth against file size
//! per server (IO-Lite's figure 3), syscalls per request per server and mode (the Jigsaw truss
//! notes), and whatever else a lab file holds (the digest experiment), as a plain table.

use super::{of_kind, series_name, Kind};
use crate::chart::{Axis, BarChart, BarSeries, LineChart, Series, Ticks};
use crate::html::{figures, grouped_table, table, Col, Page};
use crate::input::{arr, f, s, Input};
use crate::text::{self, esc};
use serde_json::Value;
use std::fmt::Write;

/// The results of one experiment in a lab file (a result without its own `experiment` field
/// belongs to the file's), less any measurement cut short by Ctrl-C (`interrupted`): part of a
/// window is not a figure to chart beside the others.
pub(super) fn results<'a>(
    input: &Input<'a>,
    experiment: &'a str,
) -> impl Iterator<Item = &'a Value> {
    let file_exp = s(input.v, &["experiment"]);
    arr(input.v, &["results"])
        .iter()
        .filter(move |r| s(r, &["experiment"]).or(file_exp) == Some(experiment))
        .filter(|r| r.get("interrupted").and_then(Value::as_bool) != Some(true))
}

pub(super) fn server(r: &Value) -> &str {
    s(r, &["server"]).unwrap_or("?")
}
fn mode(r: &Value) -> &str {
    s(r, &["mode"]).unwrap_or("–")
}
pub(super) fn limited(r: &Value) -> bool {
    r.get("client_limited").and_then(Value::as_bool) == Some(true)
}

/// Modes in the Jigsaw syscall notes' order (1.0, then persistent, then pipelined), unknown ones after.
fn mode_rank(m: &str) -> usize {
    ["http1.0", "persistent", "pipelined"]
        .iter()
        .position(|k| *k == m)
        .unwrap_or(3)
}

/// Distinct values in order of first appearance.
pub(super) fn distinct<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

pub(super) const LIMITED_NOTE: &str = r#"<p class="note">† client-limited: the load generator, not the server, ran out of CPU; the server may do more.</p>"#;

pub fn sizes(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut series = Vec::new();
    let mut tables = String::new();
    for input in of_kind(inputs, Kind::Lab) {
        let rs: Vec<&Value> = results(input, "sizes")
            .filter(|r| f(r, &["size_bytes"]).is_some())
            .collect();
        if rs.is_empty() {
            continue;
        }
        let modes = distinct(rs.iter().map(|r| mode(r)));
        let key = |r: &Value| {
            if modes.len() > 1 {
                format!("{} ({})", server(r), mode(r))
            } else {
                server(r).to_owned()
            }
        };
        let keys = distinct(rs.iter().map(|r| server(r)));
        let mut names: Vec<String> = Vec::new();
        for srv in &keys {
            for m in &modes {
                let mut pts: Vec<(f64, f64, bool)> = rs
                    .iter()
                    .filter(|r| server(r) == *srv && mode(r) == *m)
                    .filter_map(|r| {
                        Some((
                            f(r, &["size_bytes"])?,
                            f(r, &["bytes_per_s"])? / 1e6,
                            limited(r),
                        ))
                    })
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let probe = rs.iter().find(|r| server(r) == *srv && mode(r) == *m);
                let name = probe.map(|r| key(r)).unwrap_or_default();
                names.push(name.clone());
                series.push((series_name(inputs, input, &name), pts));
            }
        }
        // The data under the figure: one row per size, one column per line.
        let mut sizes: Vec<f64> = rs.iter().filter_map(|r| f(r, &["size_bytes"])).collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        let first = series.len() - names.len();
        let mut cols = vec![Col("File size", true)];
        cols.extend(names.iter().map(|n| Col(n.as_str(), true)));
        let rows: Vec<Vec<String>> = sizes
            .iter()
            .map(|&size| {
                let mut row = vec![text::bytes(size)];
                for (_, pts) in &series[first..] {
                    row.push(pts.iter().find(|p| p.0 == size).map_or("–".into(), |p| {
                        format!("{}{}", text::num(p.1), if p.2 { "†" } else { "" })
                    }));
                }
                row
            })
            .collect();
        let _ = write!(
            tables,
            r#"<h3>MB/s by file size: <span class="file">{}</span></h3>{}"#,
            esc(&input.label),
            table(&cols, &rows, "sizes")
        );
        if rs.iter().any(|r| limited(r)) {
            tables.push_str(LIMITED_NOTE);
        }
    }
    if series.is_empty() {
        return String::new();
    }
    let chart = LineChart {
        id: page.chart_id(),
        title: "Bandwidth against file size".into(),
        x: Axis::log("requested file size (bytes, log scale)", Ticks::Bytes),
        y: Axis::linear("output bandwidth (MB/s)"),
        series: series
            .into_iter()
            .map(|(name, pts)| Series {
                name,
                points: pts.into_iter().map(|p| (p.0, p.1)).collect(),
            })
            .collect(),
    };
    // The numbers sit beside the figure they draw: the table is narrow, the page is wide.
    let Some(svg) = chart.svg() else {
        return tables;
    };
    format!(
        r#"<div class="figs"><figure>{svg}</figure><div class="side">{tables}</div></div><p class="cap">As IO-Lite's figure 3: every client requests the same file again and again; small files measure per-request overhead, large ones the data path.</p>"#
    )
}

/// One row of the syscalls comparison: a server in a mode.
struct Row {
    group: String,
    mode: String,
    syscalls: Option<f64>,
    cpu_us: Option<f64>,
    rps: Option<f64>,
    limited: bool,
}

pub fn syscalls(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut rows: Vec<Row> = Vec::new();
    let mut out = String::new();
    for input in of_kind(inputs, Kind::Lab) {
        let rs: Vec<&Value> = results(input, "syscalls").collect();
        if rs.is_empty() {
            continue;
        }
        let start = rows.len();
        rows.extend(rs.iter().map(|r| Row {
            group: series_name(inputs, input, server(r)),
            mode: mode(r).to_owned(),
            syscalls: f(r, &["syscalls_per_request"]),
            cpu_us: f(r, &["server_cpu_us_per_request"]),
            rps: f(r, &["requests_per_s"]),
            limited: limited(r),
        }));
        let _ = write!(
            out,
            r#"<h3>Per request, by server and mode: <span class="file">{}</span></h3>{}"#,
            esc(&input.label),
            jigsaw_table(&rows[start..])
        );
        if rows[start..].iter().any(|r| r.limited) {
            out.push_str(LIMITED_NOTE);
        }
    }
    let bench: Vec<Row> = of_kind(inputs, Kind::Bench)
        .filter_map(|i| {
            let p = i.v.get("server_profile")?;
            Some(Row {
                group: i.label.clone(),
                mode: s(i.v, &["config", "http"]).unwrap_or("–").to_owned(),
                syscalls: f(p, &["calls_per_request"]),
                cpu_us: f(p, &["cpu_us_per_request"]),
                rps: f(i.v, &["summary", "requests_per_s"]),
                limited: false,
            })
        })
        .collect();
    if !bench.is_empty() {
        out.push_str("<h3>Benchmarks with a server profile</h3>");
        out.push_str(&jigsaw_table(&bench));
        rows.extend(bench);
    }
    if rows.is_empty() {
        return out;
    }
    let groups = distinct(rows.iter().map(|r| r.group.as_str()));
    let mut modes = distinct(rows.iter().map(|r| r.mode.as_str()));
    modes.sort_by_key(|m| mode_rank(m));
    let chart = |id: String, title: &str, y: &str, pick: fn(&Row) -> Option<f64>| {
        BarChart {
            id,
            title: title.into(),
            x_title: "server (bars: HTTP mode)".into(),
            y: Axis::linear(y),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            series: modes
                .iter()
                .map(|m| BarSeries {
                    name: m.to_string(),
                    values: groups
                        .iter()
                        .map(|g| {
                            rows.iter()
                                .find(|r| r.group == *g && r.mode == *m)
                                .and_then(pick)
                        })
                        .collect(),
                    ranges: Vec::new(),
                })
                .collect(),
        }
        .svg()
    };
    let svgs: Vec<String> = [
        chart(
            page.chart_id(),
            "System calls per request",
            "syscalls per request",
            |r| r.syscalls,
        ),
        chart(
            page.chart_id(),
            "Server CPU per request",
            "server CPU time per request (µs)",
            |r| r.cpu_us,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut fig = figures(
        &svgs,
        "As the Jigsaw notes: persistent connections and pipelining let a server batch its work, so fewer calls carry each response.",
    );
    fig.push_str(&out);
    fig
}

/// Servers down, modes across (syscalls/req, CPU µs/req, requests/s under each mode).
fn jigsaw_table(rows: &[Row]) -> String {
    let groups = distinct(rows.iter().map(|r| r.group.as_str()));
    let mut modes = distinct(rows.iter().map(|r| r.mode.as_str()));
    modes.sort_by_key(|m| mode_rank(m));
    let mut heads = vec![("", 1)];
    heads.extend(modes.iter().map(|m| (*m, 3)));
    let mut cols = vec![Col("Server", false)];
    for _ in &modes {
        cols.extend([
            Col("syscalls/req", true),
            Col("CPU µs/req", true),
            Col("req/s", true),
        ]);
    }
    let body: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            let mut row = vec![esc(g)];
            for m in &modes {
                match rows.iter().find(|r| r.group == *g && r.mode == *m) {
                    Some(r) => row.extend([
                        text::opt(r.syscalls),
                        text::opt(r.cpu_us),
                        format!("{}{}", text::opt(r.rps), if r.limited { "†" } else { "" }),
                    ]),
                    None => row.extend(["–".into(), "–".into(), "–".into()]),
                }
            }
            row
        })
        .collect();
    grouped_table(&heads, &cols, &body, "jigsaw")
}

/// Fields every lab result has, shown in their own columns.
const KNOWN: [&str; 15] = [
    "experiment",
    "server",
    "mode",
    "size_bytes",
    "requests",
    "duration_s",
    "requests_per_s",
    "bytes_per_s",
    "syscalls_per_request",
    "server_cpu_us_per_request",
    "client_limited",
    "interrupted",
    "errors",
    "profile_method",
    "syscalls",
];

pub fn others(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for input in of_kind(inputs, Kind::Lab) {
        let file_exp = s(input.v, &["experiment"]);
        let all = arr(input.v, &["results"]);
        let exps = distinct(
            all.iter()
                .filter_map(|r| s(r, &["experiment"]).or(file_exp)),
        );
        for exp in exps
            .into_iter()
            .filter(|e| !matches!(*e, "sizes" | "syscalls" | "tls"))
        {
            let rows: Vec<Vec<String>> = results(input, exp)
                .map(|r| {
                    let extra: Vec<String> = r
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, v)| {
                            !KNOWN.contains(&k.as_str()) && !v.is_object() && !v.is_array()
                        })
                        .map(|(k, v)| match v {
                            Value::String(s) => format!("{}: {}", esc(k), esc(s)),
                            v => format!("{}: {}", esc(k), esc(&v.to_string())),
                        })
                        .collect();
                    vec![
                        esc(server(r)),
                        esc(mode(r)),
                        f(r, &["size_bytes"]).map_or("–".into(), text::bytes),
                        text::opt(f(r, &["requests_per_s"])),
                        text::opt(f(r, &["bytes_per_s"]).map(|b| b / 1e6)),
                        text::opt(f(r, &["syscalls_per_request"])),
                        text::opt(f(r, &["server_cpu_us_per_request"])),
                        text::opt(f(r, &["errors"])),
                        format!(
                            "{}{}",
                            if limited(r) { "client-limited " } else { "" },
                            extra.join(" ")
                        ),
                    ]
                })
                .collect();
            let cols = [
                Col("Server", false),
                Col("Mode", false),
                Col("Size", true),
                Col("Requests/s", true),
                Col("MB/s", true),
                Col("Syscalls/req", true),
                Col("CPU µs/req", true),
                Col("Errors", true),
                Col("Notes", false),
            ];
            let _ = write!(
                out,
                r#"<h3>Experiment {}: <span class="file">{}</span></h3>{}"#,
                esc(exp),
                esc(&input.label),
                table(&cols, &rows, "lab")
            );
        }
    }
    out
}
