//! The Jigsaw and IO-Lite experiments, as their papers drew them: bandwidth against file size
//! per server (IO-Lite's figure 3), syscalls per request per server and mode (the Jigsaw truss
//! notes), and whatever else a lab file holds (the digest experiment), as a plain table.

use super::lab_rows::{distinct, experiment_of, no_figures, no_figures_note, results, server};
use super::{benches, labs, series_name};
use crate::chart::{Axis, BarChart, BarSeries, LineChart, Series, Ticks};
use crate::html::{figures, grouped_table, table, Col, Page};
use crate::input::Input;
use crate::text::{self, esc};
use results::{LabOptionsRecord, LabRow};
use std::fmt::Write;

fn mode(r: &LabRow) -> &'static str {
    r.mode.name()
}

/// Modes in the Jigsaw syscall notes' order (1.0, then persistent, then pipelined), then the
/// page experiment's other ways, cleartext before TLS; unknown ones after.
fn mode_rank(m: &str) -> (usize, bool) {
    super::page::way_rank(m)
}

/// Distinct values in order of first appearance.
pub(super) const LIMITED_NOTE: &str = r#"<p class="note">† client-limited: the load generator, not the server, ran out of CPU; the server may do more.</p>"#;

pub fn sizes(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut series = Vec::new();
    let mut tables = String::new();
    for (input, lab) in labs(inputs) {
        let rs: Vec<&LabRow> = results(lab, "sizes")
            .filter(|r| r.size_bytes.is_some())
            .collect();
        if rs.is_empty() {
            continue;
        }
        let modes = distinct(rs.iter().map(|r| mode(r)));
        let key = |r: &LabRow| {
            if modes.len() > 1 {
                format!("{} ({})", server(r), mode(r))
            } else {
                server(r).to_owned()
            }
        };
        let keys = distinct(rs.iter().map(|r| server(r)));
        let mut names: Vec<String> = Vec::new();
        // Each line's server and mode, for the sizes it has a row without figures at (n/a).
        let mut lines: Vec<(&str, &str)> = Vec::new();
        for srv in &keys {
            for m in &modes {
                let mut pts: Vec<(f64, f64, bool)> = rs
                    .iter()
                    .filter(|r| server(r) == *srv && mode(r) == *m && r.has_figures())
                    .filter_map(|r| {
                        Some((r.size_bytes? as f64, r.bytes_per_s / 1e6, r.client_limited))
                    })
                    .collect();
                let Some(probe) = rs.iter().find(|r| server(r) == *srv && mode(r) == *m) else {
                    continue;
                };
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let name = key(probe);
                names.push(name.clone());
                lines.push((srv, m));
                series.push((series_name(inputs, input, &name), pts));
            }
        }
        // The data under the figure: one row per size, one column per line.
        let mut sizes: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.size_bytes)
            .map(|b| b as f64)
            .collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        let first = series.len() - names.len();
        let mut cols = vec![Col("File size", true)];
        cols.extend(names.iter().map(|n| Col(n.as_str(), true)));
        let rows: Vec<Vec<String>> = sizes
            .iter()
            .map(|&size| {
                let mut row = vec![text::bytes(size)];
                for ((_, pts), (srv, m)) in series[first..].iter().zip(&lines) {
                    let without = || {
                        rs.iter().any(|r| {
                            server(r) == *srv
                                && mode(r) == *m
                                && r.size_bytes == Some(size as u64)
                                && !r.has_figures()
                        })
                    };
                    row.push(match pts.iter().find(|p| p.0 == size) {
                        Some(p) => format!("{}{}", text::num(p.1), if p.2 { "†" } else { "" }),
                        None if without() => "n/a".into(),
                        None => "–".into(),
                    });
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
        tables.push_str(&no_figures_note(rs.iter().copied(), |r| {
            format!(
                "{} {}",
                key(r),
                text::bytes(r.size_bytes.unwrap_or(0) as f64)
            )
        }));
        if rs.iter().any(|r| r.client_limited) {
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
    /// Why this way could not run (the page experiment): shown in place of figures.
    unavailable: bool,
}

pub fn syscalls(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut rows: Vec<Row> = Vec::new();
    let mut out = String::new();
    // Said first: why the section has no syscall counts.
    let mut untraced_notes = String::new();
    for (input, lab) in labs(inputs) {
        // Syscalls hardly depend on the round trip: the shortest one measured stands for all.
        let rtt = results(lab, "syscalls")
            .filter_map(|r| r.rtt_ms)
            .min_by(f64::total_cmp);
        let rs: Vec<&LabRow> = results(lab, "syscalls")
            .filter(|r| r.rtt_ms == rtt)
            .collect();
        if rs.is_empty() {
            continue;
        }
        let measured = rs.iter().any(|r| r.unavailable.is_none());
        if measured && rs.iter().all(|r| r.syscalls_per_request.is_none()) {
            let _ = write!(
                untraced_notes,
                r#"<p class="note untraced">{} (<span class="file">{}</span>).</p>"#,
                esc(&untraced(&lab.options.profile)),
                esc(&input.label)
            );
        }
        let start = rows.len();
        rows.extend(rs.iter().map(|r| Row {
            group: series_name(inputs, input, server(r)),
            mode: super::page::way(r),
            syscalls: r.syscalls_per_request,
            cpu_us: r.server_cpu_us_per_request,
            rps: Some(r.requests_per_s),
            limited: r.client_limited,
            unavailable: r.unavailable.is_some(),
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
    let bench: Vec<Row> = benches(inputs)
        .filter_map(|(i, b)| {
            let p = b.server_profile.as_ref()?;
            Some(Row {
                group: i.label.clone(),
                mode: b.config.http.name().to_owned(),
                syscalls: p.calls_per_request,
                cpu_us: p.cpu_us_per_request,
                rps: Some(b.summary.requests_per_s),
                limited: false,
                unavailable: false,
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
    let caption = if rows.iter().any(|r| r.syscalls.is_some()) {
        "As the Jigsaw notes: persistent connections and pipelining let a server batch its work, so fewer calls carry each response."
    } else {
        "The servers' CPU time per request, read from /proc: no syscalls were traced."
    };
    let mut section = untraced_notes;
    section.push_str(&figures(&svgs, caption));
    section.push_str(&out);
    section
}

/// Why a lab run has no syscall counts, from its `options.profile`, and how to get them.
fn untraced(profile: &str) -> String {
    let why = match profile {
        LabOptionsRecord::PROFILE_OFF => "the run was made with --no-profile",
        LabOptionsRecord::PROFILE_UNAVAILABLE => {
            "no tracer worked on that machine (perf not permitted or missing, strace missing)"
        }
        _ => "the run was made with --no-profile, or no tracer worked",
    };
    format!(
        "System calls were not traced: {why}; only the servers' CPU time was read. To count \
         them, run the lab again without --no-profile where perf (counting in the kernel) or \
         strace works (--profile-method picks one; docs/lab.md)"
    )
}

/// Modes across a page's width: three columns each, so more would push the table past it.
const MODES_ACROSS: usize = 3;

/// One measurement's cells: syscalls/req (when `traced`), CPU µs/req, requests/s.
fn jigsaw_cells(r: Option<&Row>, traced: bool) -> Vec<String> {
    let mut cells: Vec<String> = match r {
        Some(r) if r.unavailable => vec!["n/a".into(), "n/a".into(), "n/a".into()],
        Some(r) => vec![
            text::opt(r.syscalls),
            text::opt(r.cpu_us),
            format!("{}{}", text::opt(r.rps), if r.limited { "†" } else { "" }),
        ],
        None => vec!["–".into(), "–".into(), "–".into()],
    };
    if !traced {
        cells.remove(0);
    }
    cells
}

/// A measurement's columns: syscalls/req only when some row has a count (a column of dashes
/// says less than the note on why nothing was traced).
fn jigsaw_cols(traced: bool) -> Vec<Col<'static>> {
    let mut cols = vec![
        Col("syscalls/req", true),
        Col("CPU µs/req", true),
        Col("req/s", true),
    ];
    if !traced {
        cols.remove(0);
    }
    cols
}

/// Servers down, modes across (syscalls/req, CPU µs/req, requests/s under each mode); with more
/// modes than fit across the page (the syscalls experiment's ways over cleartext and TLS),
/// a row per server and mode.
fn jigsaw_table(rows: &[Row]) -> String {
    let groups = distinct(rows.iter().map(|r| r.group.as_str()));
    let mut modes = distinct(rows.iter().map(|r| r.mode.as_str()));
    modes.sort_by_key(|m| mode_rank(m));
    let traced = rows.iter().any(|r| r.syscalls.is_some());
    if modes.len() > MODES_ACROSS {
        let mut cols = vec![Col("Server", false), Col("Mode", false)];
        cols.extend(jigsaw_cols(traced));
        let body: Vec<Vec<String>> = groups
            .iter()
            .flat_map(|g| modes.iter().map(move |m| (g, m)))
            .filter_map(|(g, m)| {
                let r = rows.iter().find(|r| r.group == *g && r.mode == *m)?;
                let mut row = vec![esc(g), esc(m)];
                row.extend(jigsaw_cells(Some(r), traced));
                Some(row)
            })
            .collect();
        return table(&cols, &body, "jigsaw");
    }
    let mut heads = vec![("", 1)];
    let span = jigsaw_cols(traced).len();
    heads.extend(modes.iter().map(|m| (*m, span)));
    let mut cols = vec![Col("Server", false)];
    for _ in &modes {
        cols.extend(jigsaw_cols(traced));
    }
    let body: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            let mut row = vec![esc(g)];
            for m in &modes {
                row.extend(jigsaw_cells(
                    rows.iter().find(|r| r.group == *g && r.mode == *m),
                    traced,
                ));
            }
            row
        })
        .collect();
    grouped_table(&heads, &cols, &body, "jigsaw")
}

/// What a row says beside its figures: client-limited, and the TLS experiment's key, handshake
/// and handshake counts where it has them.
fn notes(r: &LabRow) -> String {
    let mut notes: Vec<String> = Vec::new();
    if r.client_limited {
        notes.push("client-limited".into());
    }
    if let Some(c) = &r.certificate {
        notes.push(format!("certificate: {}", esc(c)));
    }
    if let Some(h) = &r.handshake {
        notes.push(format!("handshake: {}", esc(h)));
    }
    if let Some(n) = r.tls_handshakes {
        notes.push(format!("TLS handshakes: {}", text::count(n as f64)));
    }
    if let Some(n) = r.tls_resumed {
        notes.push(format!("resumed: {}", text::count(n as f64)));
    }
    notes.join(" ")
}

pub fn others(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for (input, lab) in labs(inputs) {
        let exps = distinct(lab.results.iter().map(|r| experiment_of(lab, r)));
        for exp in exps
            .into_iter()
            .filter(|e| !matches!(*e, "sizes" | "syscalls" | "tls" | "dynamic"))
        {
            let rows: Vec<Vec<String>> = results(lab, exp)
                .map(|r| {
                    let mut cells = vec![
                        esc(server(r)),
                        esc(mode(r)),
                        r.size_bytes.map_or("–".into(), |b| text::bytes(b as f64)),
                    ];
                    if let Some(why) = no_figures(r) {
                        cells.extend(std::iter::repeat_n("n/a".to_owned(), 4));
                        cells.extend([text::count(r.errors as f64), why]);
                        return cells;
                    }
                    cells.extend([
                        text::num(r.requests_per_s),
                        text::num(r.bytes_per_s / 1e6),
                        text::opt(r.syscalls_per_request),
                        text::opt(r.server_cpu_us_per_request),
                        text::count(r.errors as f64),
                        notes(r),
                    ]);
                    cells
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
                esc(if exp.is_empty() { "?" } else { exp }),
                esc(&input.label),
                table(&cols, &rows, "lab")
            );
        }
    }
    out
}
