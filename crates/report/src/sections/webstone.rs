//! WebSTONE's per-page block (the paper's section 7), one table row per page: how often it was
//! hit, how long it took, how much data it moved. Plus the modern p50/p99 of the page time.

use super::{of_kind, Kind};
use crate::html::{table, Col};
use crate::input::{arr, f, s, Input};
use crate::text::{self, esc};
use std::fmt::Write;

/// A count cell.
fn cnt(x: Option<f64>) -> String {
    x.map_or("–".into(), text::count)
}

pub fn pages(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for input in of_kind(inputs, Kind::Bench) {
        let pages = arr(input.v, &["pages"]);
        if pages.is_empty() {
            continue;
        }
        let total_weight: f64 = pages.iter().filter_map(|p| f(p, &["weight"])).sum();
        let duration = f(input.v, &["summary", "duration_s"]).filter(|d| *d > 0.0);
        let mut rows: Vec<Vec<String>> = pages
            .iter()
            .map(|p| {
                let files = arr(p, &["files"]);
                let files_tip: Vec<&str> = files.iter().filter_map(|f| f.as_str()).collect();
                vec![
                    format!(
                        r#"{}<small class="rng" title="{}">{} files</small>"#,
                        esc(s(p, &["name"]).unwrap_or("?")),
                        esc(&files_tip.join("\n")),
                        files.len()
                    ),
                    text::opt(
                        f(p, &["weight"])
                            .filter(|_| total_weight > 0.0)
                            .map(|w| 100.0 * w / total_weight),
                    ),
                    f(p, &["size_bytes"]).map_or("–".into(), text::bytes),
                    cnt(f(p, &["hits"])),
                    text::opt(f(p, &["hits"]).zip(duration).map(|(h, d)| h / d)),
                    cnt(f(p, &["errors"])),
                    text::opt(f(p, &["time_ms", "p50"])),
                    text::opt(f(p, &["time_ms", "p99"])),
                    text::opt(f(p, &["max_response_s"])),
                    text::opt(f(p, &["connect_time_s"])),
                    f(p, &["data_moved_bytes"]).map_or("–".into(), text::bytes),
                    cnt(f(p, &["connects"])),
                ]
            })
            .collect();
        let sum = |k: &str| pages.iter().filter_map(|p| f(p, &[k])).sum::<f64>();
        let mut total = vec!["total".to_owned(), "100".into(), String::new()];
        total.push(text::count(sum("hits")));
        total.push(text::opt(duration.map(|d| sum("hits") / d)));
        total.push(text::count(sum("errors")));
        total.extend([String::new(), String::new(), String::new()]);
        total.push(text::num(sum("connect_time_s")));
        total.push(text::bytes(sum("data_moved_bytes")));
        total.push(text::count(sum("connects")));
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
            Col("Max page s", true),
            Col("Connect s", true),
            Col("Data moved", true),
            Col("Connects", true),
        ];
        let mut t = table(&cols, &rows, "pages");
        // The totals row is the last one: mark it so it reads as a sum.
        if let Some(pos) = t.rfind("<tr><td>total") {
            t.replace_range(pos..pos + 4, r#"<tr class="total">"#);
        }
        let _ = write!(
            out,
            r#"<h3><span class="file">{}</span></h3>{t}"#,
            esc(&input.label)
        );
    }
    if !out.is_empty() {
        out.push_str(r#"<p class="note">As the WebSTONE report's page blocks: times of a whole page (all its files, one after another, on one Webchild), in seconds where the paper used seconds; connect time is the sum over the page's connects.</p>"#);
    }
    out
}
