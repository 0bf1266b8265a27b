//! Syscall profiles in the shape of the Jigsaw syscall notes' truss tables (syscall, seconds,
//! calls, errors, "sys totals"), with the column the notes leave the reader to work out: calls
//! per request. A lab file's many profiles become one matrix per experiment, a column per server
//! and mode, so that the same call can be read across servers, as the Jigsaw notes compare
//! clients; a matrix wider than a page is split into several tables, a server's columns kept
//! together where they fit.

use super::lab_rows::{experiment_of, server};
use super::{benches, labs};
use crate::html::{grouped_table, table, Col};
use crate::input::Input;
use crate::text::{self, esc};
use results::{BenchResult, LabResult, LabRow, ServerProfile, SyscallRow};
use std::fmt::Write;

/// Value columns per matrix table: wider matrices are split, a server's columns kept together
/// where they fit.
const MAX_COLUMNS: usize = 12;
/// Files per page of the microscape page: per page is per request times this.
const PAGE_FILES: f64 = 44.0;

/// Ranges of `rs` (sorted by server) of at most `max` columns: whole servers while they fit,
/// a server with more columns than `max` cut into slices of `max`.
fn column_slices(
    rs: &[&LabRow],
    max: usize,
    group: impl Fn(&LabRow) -> String,
) -> Vec<std::ops::Range<usize>> {
    let mut slices: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < rs.len() {
        let srv = group(rs[i]);
        let end = (i..rs.len())
            .find(|&j| group(rs[j]) != srv)
            .unwrap_or(rs.len());
        let mut start = i;
        while start < end {
            let take = (end - start).min(max);
            match slices.last_mut() {
                Some(last)
                    if last.end == start && last.len() + take <= max && take == end - start =>
                {
                    last.end = start + take
                }
                _ => slices.push(start..start + take),
            }
            start += take;
        }
        i = end;
    }
    slices
}

/// Modes in the Jigsaw syscall notes' order: HTTP/1.0, persistent, pipelined; the page
/// experiment's other ways after, cleartext before TLS.
fn mode_rank(m: &str) -> (usize, bool) {
    super::page::way_rank(m)
}

pub fn render(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for (input, b) in benches(inputs) {
        if let Some(p) = &b.server_profile {
            out.push_str(&bench_profile(input, b, p));
        }
    }
    for (input, lab) in labs(inputs) {
        out.push_str(&lab_matrix(input, lab));
    }
    out
}

/// `seconds` is `None` when the profiler counted calls without timing them.
fn bench_profile(input: &Input<'_>, b: &BenchResult, p: &ServerProfile) -> String {
    let requests = Some(b.summary.requests as f64).filter(|r| *r > 0.0);
    let mut calls: Vec<&SyscallRow> = p.syscalls.iter().collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.calls));
    let total_calls: f64 = calls.iter().map(|c| c.calls as f64).sum();
    let mut rows: Vec<Vec<String>> = calls
        .iter()
        .map(|c| {
            let n = c.calls as f64;
            vec![
                esc(if c.name.is_empty() { "?" } else { &c.name }),
                text::opt(c.seconds),
                text::count(n),
                if c.errors > 0 {
                    text::count(c.errors as f64)
                } else {
                    String::new()
                },
                text::opt(requests.map(|r| n / r)),
                text::opt((total_calls > 0.0).then(|| 100.0 * n / total_calls)),
            ]
        })
        .collect();
    let secs: Vec<f64> = calls.iter().filter_map(|c| c.seconds).collect();
    let total = if p.total_calls > 0 {
        p.total_calls as f64
    } else {
        total_calls
    };
    rows.push(vec![
        "sys totals".into(),
        if secs.is_empty() {
            "–".into()
        } else {
            text::num(secs.iter().sum())
        },
        text::count(total),
        text::count(calls.iter().map(|c| c.errors as f64).sum()),
        text::opt(p.calls_per_request.or(requests.map(|r| total_calls / r))),
        if total_calls > 0.0 {
            "100".into()
        } else {
            "–".into()
        },
    ]);
    let cols = [
        Col("syscall", false),
        Col("seconds", true),
        Col("calls", true),
        Col("errors", true),
        Col("calls/request", true),
        Col("% of calls", true),
    ];
    let mut t = table(&cols, &rows, "truss");
    if let Some(pos) = t.rfind("<tr><td>sys totals") {
        t.replace_range(pos..pos + 4, r#"<tr class="total">"#);
    }
    let mut facts = Vec::new();
    if !p.method.is_empty() {
        facts.push(format!("measured with {}", esc(&p.method)));
    }
    if let Some(c) = p.cpu_us_per_request {
        facts.push(format!("server CPU {} µs per request", text::num(c)));
    }
    format!(
        r#"<h3>Server profile: <span class="file">{}</span></h3><p class="note">{}</p>{t}"#,
        esc(&input.label),
        facts.join("; ")
    )
}

/// One syscall's calls and errors per request in a row; `None` when the row did not make it
/// or served nothing.
fn per_request(r: &LabRow, name: &str) -> Option<(f64, f64)> {
    let req = Some(r.requests as f64).filter(|n| *n > 0.0)?;
    let c = r.syscalls.as_deref()?.iter().find(|c| c.name == name)?;
    Some((c.calls as f64 / req, c.errors as f64 / req))
}

/// A column's heading: the row's mode and, where it has one, its size.
fn heading(r: &LabRow) -> String {
    let mut h = super::page::way(r);
    if let Some(b) = r.size_bytes {
        let _ = write!(h, " {}", text::bytes(b as f64));
    }
    h
}

fn lab_matrix(input: &Input<'_>, lab: &LabResult) -> String {
    let with: Vec<&LabRow> = lab
        .results
        .iter()
        // A way that could not run is a column saying so (the page experiment).
        .filter(|r| r.syscalls.as_ref().is_some_and(|c| !c.is_empty()) || r.unavailable.is_some())
        // Cut short by Ctrl-C: part of a window, not a figure to compare.
        .filter(|r| !r.interrupted)
        .collect();
    let mut exps: Vec<&str> = Vec::new();
    for r in &with {
        let e = experiment_of(lab, r);
        if !exps.contains(&e) {
            exps.push(e);
        }
    }
    let mut out = String::new();
    for exp in exps {
        // The page experiment: the shortest round trip only (syscalls hardly depend on it), and
        // its tables side by side per way of fetching, a column per server, calls per page, as
        // the Jigsaw notes printed one truss table per client.
        let by_way = exp == "syscalls";
        let rtt = with
            .iter()
            .filter(|r| experiment_of(lab, r) == exp)
            .filter_map(|r| r.rtt_ms)
            .min_by(f64::total_cmp);
        let mut rs: Vec<&LabRow> = with
            .iter()
            .copied()
            .filter(|r| experiment_of(lab, r) == exp)
            .filter(|r| !by_way || r.rtt_ms == rtt)
            .collect();
        let scale = if by_way { PAGE_FILES } else { 1.0 };
        let group = |r: &LabRow| {
            if by_way {
                super::page::way(r)
            } else {
                server(r).to_owned()
            }
        };
        let column = |r: &LabRow| {
            if by_way {
                server(r).to_owned()
            } else {
                heading(r)
            }
        };
        // A server's columns side by side (in the order servers first appear), modes in the
        // Jigsaw notes' order, then sizes: the heading groups them under the server's name.
        let servers: Vec<&str> = rs.iter().fold(Vec::new(), |mut acc, r| {
            if !acc.contains(&r.server.as_str()) {
                acc.push(&r.server);
            }
            acc
        });
        rs.sort_by_key(|r| {
            let srv = servers.iter().position(|x| *x == r.server);
            let way = mode_rank(&super::page::way(r));
            if by_way {
                (way, srv, 0)
            } else {
                (way, srv, r.size_bytes.unwrap_or(0))
            }
        });
        if !by_way {
            rs.sort_by_key(|r| servers.iter().position(|x| *x == r.server));
        }
        let heads: Vec<String> = rs.iter().map(|r| column(r)).collect();
        // Calls per request by (syscall, column); syscalls ordered by their largest value.
        let mut names: Vec<(String, f64)> = Vec::new();
        for r in &rs {
            for c in r.syscalls.iter().flatten() {
                let v = per_request(r, &c.name).map_or(0.0, |x| x.0);
                match names.iter_mut().find(|x| x.0 == c.name) {
                    Some(x) => x.1 = x.1.max(v),
                    None => names.push((c.name.clone(), v)),
                }
            }
        }
        names.sort_by(|a, b| b.1.total_cmp(&a.1));
        // One table per slice of columns: the sizes experiment has a column per server and
        // size (sixty with every server), which no page can show without scrolling sideways.
        let mut tables = String::new();
        for cut in column_slices(&rs, MAX_COLUMNS, group) {
            let part = &rs[cut.clone()];
            let names_of: Vec<String> = part.iter().map(|r| group(r)).collect();
            let mut groups: Vec<(&str, usize)> = vec![("", 1)];
            for srv in &names_of {
                let n = groups.len();
                match groups.last_mut() {
                    Some(g) if n > 1 && g.0 == srv => g.1 += 1,
                    _ => groups.push((srv.as_str(), 1)),
                }
            }
            let mut rows: Vec<Vec<String>> = names
                .iter()
                // A syscall none of these columns made is left to the tables that have it.
                .filter(|(n, _)| part.iter().any(|r| per_request(r, n).is_some()))
                .map(|(n, _)| {
                    let mut row = vec![esc(n)];
                    for r in part {
                        if r.unavailable.is_some() {
                            row.push("n/a".into());
                            continue;
                        }
                        row.push(per_request(r, n).map_or("–".into(), |(c, e)| {
                            let (c, e) = (c * scale, e * scale);
                            if e > 0.0 {
                                format!(
                                    r#"{}<span class="rng">{} err</span>"#,
                                    text::num(c),
                                    text::num(e)
                                )
                            } else {
                                text::num(c)
                            }
                        }));
                    }
                    row
                })
                .collect();
            let mut total = vec!["all calls".to_owned()];
            total.extend(part.iter().map(|r| match super::lab_rows::no_figures(r) {
                Some(why) => why,
                None => text::opt(r.syscalls_per_request.map(|s| s * scale)),
            }));
            rows.push(total);
            let mut cols = vec![Col("syscall", false)];
            cols.extend(heads[cut].iter().map(|h| Col(h.as_str(), true)));
            let mut t = grouped_table(&groups, &cols, &rows, "truss");
            if let Some(pos) = t.rfind("<tr><td>all calls") {
                t.replace_range(pos..pos + 4, r#"<tr class="total">"#);
            }
            tables.push_str(&t);
        }
        let t = tables;
        let method = rs.iter().find_map(|r| r.profile_method.as_deref());
        let _ = write!(
            out,
            r#"<h3>Calls per {}, experiment {}: <span class="file">{}</span></h3><p class="note">Each cell: calls of that syscall divided by the {} in the window{}; errors are calls that returned an error.</p>{t}"#,
            if by_way { "page" } else { "request" },
            esc(if exp.is_empty() { "?" } else { exp }),
            esc(&input.label),
            if by_way {
                "pages fetched (requests served / 44), a table per way of fetching the page, a column per server"
            } else {
                "requests served"
            },
            method.map_or(String::new(), |m| format!(", profiled with {}", esc(m)))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_matrices_split_keeping_servers_together_where_they_fit() {
        let row = |srv: &str| LabRow {
            server: srv.into(),
            ..LabRow::default()
        };
        let servers = [("a", 3), ("b", 4), ("c", 7), ("d", 2)];
        let values: Vec<LabRow> = servers
            .iter()
            .flat_map(|(srv, n)| (0..*n).map(move |_| row(srv)))
            .collect();
        let rs: Vec<&LabRow> = values.iter().collect();
        // a+b fit in 8; c (7) alone; d joins c's slice? 7 + 2 > 8: a slice of its own.
        let by_server = |r: &LabRow| r.server.clone();
        assert_eq!(column_slices(&rs, 8, by_server), [0..7, 7..14, 14..16]);
        // c cut in two: 5 then 2; d then fits beside c's remainder.
        assert_eq!(
            column_slices(&rs, 5, by_server),
            [0..3, 3..7, 7..12, 12..16]
        );
        assert!(column_slices(&[], 5, by_server).is_empty());
    }
}
