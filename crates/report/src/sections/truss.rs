//! Syscall profiles in the shape of the Jigsaw syscall notes' truss tables (syscall, seconds,
//! calls, errors, "sys totals"), with the column the notes leave the reader to work out: calls
//! per request. A lab file's many profiles become one matrix per experiment, a column per server
//! and mode, so that the same call can be read across servers, as the Jigsaw notes compare
//! clients; a matrix wider than a page is split into several tables, a server's columns kept
//! together where they fit.

use super::{of_kind, Kind};
use crate::html::{grouped_table, table, Col};
use crate::input::{arr, f, s, Input};
use crate::text::{self, esc};
use serde_json::Value;
use std::fmt::Write;

/// Value columns per matrix table: wider matrices are split, a server's columns kept together
/// where they fit.
const MAX_COLUMNS: usize = 12;

/// Ranges of `rs` (sorted by server) of at most `max` columns: whole servers while they fit,
/// a server with more columns than `max` cut into slices of `max`.
fn column_slices(rs: &[&Value], max: usize) -> Vec<std::ops::Range<usize>> {
    let mut slices: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < rs.len() {
        let srv = s(rs[i], &["server"]);
        let end = (i..rs.len())
            .find(|&j| s(rs[j], &["server"]) != srv)
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

/// Modes in the Jigsaw syscall notes' order: HTTP/1.0, persistent, pipelined; others after.
fn mode_rank(m: &str) -> usize {
    ["http1.0", "persistent", "pipelined"]
        .iter()
        .position(|k| *k == m)
        .unwrap_or(3)
}

pub fn render(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for input in of_kind(inputs, Kind::Bench) {
        if let Some(p) = input.v.get("server_profile") {
            out.push_str(&bench_profile(input, p));
        }
    }
    for input in of_kind(inputs, Kind::Lab) {
        out.push_str(&lab_matrix(input));
    }
    out
}

/// `seconds` is null when the profiler counted calls without timing them.
fn bench_profile(input: &Input<'_>, p: &Value) -> String {
    let requests = f(input.v, &["summary", "requests"]).filter(|r| *r > 0.0);
    let mut calls: Vec<&Value> = arr(p, &["syscalls"]).iter().collect();
    calls.sort_by(|a, b| {
        let c = |v: &Value| f(v, &["calls"]).unwrap_or(0.0);
        c(b).total_cmp(&c(a))
    });
    let total_calls: f64 = calls.iter().filter_map(|c| f(c, &["calls"])).sum();
    let mut rows: Vec<Vec<String>> = calls
        .iter()
        .map(|c| {
            let n = f(c, &["calls"]);
            vec![
                esc(s(c, &["name"]).unwrap_or("?")),
                text::opt(f(c, &["seconds"])),
                n.map_or("–".into(), text::count),
                match f(c, &["errors"]) {
                    Some(e) if e > 0.0 => text::count(e),
                    _ => String::new(),
                },
                text::opt(n.zip(requests).map(|(n, r)| n / r)),
                text::opt(
                    n.filter(|_| total_calls > 0.0)
                        .map(|n| 100.0 * n / total_calls),
                ),
            ]
        })
        .collect();
    let secs: Vec<f64> = calls.iter().filter_map(|c| f(c, &["seconds"])).collect();
    rows.push(vec![
        "sys totals".into(),
        if secs.is_empty() {
            "–".into()
        } else {
            text::num(secs.iter().sum())
        },
        text::count(f(p, &["total_calls"]).unwrap_or(total_calls)),
        text::count(calls.iter().filter_map(|c| f(c, &["errors"])).sum()),
        text::opt(f(p, &["calls_per_request"]).or(requests.map(|r| total_calls / r))),
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
    if let Some(m) = s(p, &["method"]) {
        facts.push(format!("measured with {}", esc(m)));
    }
    if let Some(c) = f(p, &["cpu_us_per_request"]) {
        facts.push(format!("server CPU {} µs per request", text::num(c)));
    }
    format!(
        r#"<h3>Server profile: <span class="file">{}</span></h3><p class="note">{}</p>{t}"#,
        esc(&input.label),
        facts.join("; ")
    )
}

fn lab_matrix(input: &Input<'_>) -> String {
    let file_exp = s(input.v, &["experiment"]);
    let with: Vec<&Value> = arr(input.v, &["results"])
        .iter()
        .filter(|r| !arr(r, &["syscalls"]).is_empty())
        // Cut short by Ctrl-C: part of a window, not a figure to compare.
        .filter(|r| r.get("interrupted").and_then(Value::as_bool) != Some(true))
        .collect();
    let mut exps: Vec<&str> = Vec::new();
    for r in &with {
        let e = s(r, &["experiment"]).or(file_exp).unwrap_or("?");
        if !exps.contains(&e) {
            exps.push(e);
        }
    }
    let mut out = String::new();
    for exp in exps {
        let mut rs: Vec<&Value> = with
            .iter()
            .copied()
            .filter(|r| s(r, &["experiment"]).or(file_exp).unwrap_or("?") == exp)
            .collect();
        // A server's columns side by side (in the order servers first appear), modes in the
        // Jigsaw notes' order, then sizes: the heading groups them under the server's name.
        let servers: Vec<&str> = rs.iter().fold(Vec::new(), |mut acc, r| {
            let srv = s(r, &["server"]).unwrap_or("?");
            if !acc.contains(&srv) {
                acc.push(srv);
            }
            acc
        });
        rs.sort_by(|a, b| {
            let key = |r: &Value| {
                let srv = s(r, &["server"]).unwrap_or("?");
                (
                    servers.iter().position(|x| *x == srv),
                    mode_rank(s(r, &["mode"]).unwrap_or("")),
                    f(r, &["size_bytes"]).unwrap_or(0.0),
                )
            };
            let (ka, kb) = (key(a), key(b));
            (ka.0, ka.1).cmp(&(kb.0, kb.1)).then(ka.2.total_cmp(&kb.2))
        });
        let heads: Vec<String> = rs
            .iter()
            .map(|r| {
                let mut h = s(r, &["mode"]).unwrap_or("").to_owned();
                if let Some(b) = f(r, &["size_bytes"]) {
                    let _ = write!(h, " {}", text::bytes(b));
                }
                match h.trim() {
                    "" => "–".to_owned(),
                    t => t.to_owned(),
                }
            })
            .collect();
        // Calls per request by (syscall, column); syscalls ordered by their largest value.
        let mut names: Vec<(String, f64)> = Vec::new();
        let per_req = |r: &Value, name: &str| -> Option<(f64, f64)> {
            let req = f(r, &["requests"]).filter(|n| *n > 0.0)?;
            let c = arr(r, &["syscalls"])
                .iter()
                .find(|c| s(c, &["name"]) == Some(name))?;
            Some((
                f(c, &["calls"])? / req,
                f(c, &["errors"]).unwrap_or(0.0) / req,
            ))
        };
        for r in &rs {
            for c in arr(r, &["syscalls"]) {
                let Some(n) = s(c, &["name"]) else { continue };
                let v = per_req(r, n).map_or(0.0, |x| x.0);
                match names.iter_mut().find(|x| x.0 == n) {
                    Some(x) => x.1 = x.1.max(v),
                    None => names.push((n.to_owned(), v)),
                }
            }
        }
        names.sort_by(|a, b| b.1.total_cmp(&a.1));
        // One table per slice of columns: the sizes experiment has a column per server and
        // size (sixty with every server), which no page can show without scrolling sideways.
        let mut tables = String::new();
        for cut in column_slices(&rs, MAX_COLUMNS) {
            let part = &rs[cut.clone()];
            let mut groups: Vec<(&str, usize)> = vec![("", 1)];
            for r in part {
                let srv = s(r, &["server"]).unwrap_or("?");
                let n = groups.len();
                match groups.last_mut() {
                    Some(g) if n > 1 && g.0 == srv => g.1 += 1,
                    _ => groups.push((srv, 1)),
                }
            }
            let mut rows: Vec<Vec<String>> = names
                .iter()
                // A syscall none of these columns made is left to the tables that have it.
                .filter(|(n, _)| part.iter().any(|r| per_req(r, n).is_some()))
                .map(|(n, _)| {
                    let mut row = vec![esc(n)];
                    for r in part {
                        row.push(per_req(r, n).map_or("–".into(), |(c, e)| {
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
            total.extend(
                part.iter()
                    .map(|r| text::opt(f(r, &["syscalls_per_request"]))),
            );
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
        let method = rs.iter().find_map(|r| s(r, &["profile_method"]));
        let _ = write!(
            out,
            r#"<h3>Calls per request, experiment {}: <span class="file">{}</span></h3><p class="note">Each cell: calls of that syscall divided by the requests served in the window{}; errors are calls that returned an error.</p>{t}"#,
            esc(exp),
            esc(&input.label),
            method.map_or(String::new(), |m| format!(", profiled with {}", esc(m)))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wide_matrices_split_keeping_servers_together_where_they_fit() {
        let row = |srv: &str| json!({"server": srv});
        let servers = [("a", 3), ("b", 4), ("c", 7), ("d", 2)];
        let values: Vec<Value> = servers
            .iter()
            .flat_map(|(srv, n)| (0..*n).map(move |_| row(srv)))
            .collect();
        let rs: Vec<&Value> = values.iter().collect();
        // a+b fit in 8; c (7) alone; d joins c's slice? 7 + 2 > 8: a slice of its own.
        assert_eq!(column_slices(&rs, 8), [0..7, 7..14, 14..16]);
        // c cut in two: 5 then 2; d then fits beside c's remainder.
        assert_eq!(column_slices(&rs, 5), [0..3, 3..7, 7..12, 12..16]);
        assert!(column_slices(&[], 5).is_empty());
    }
}
