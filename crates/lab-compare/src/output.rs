//! A comparison as a text table (for people) and as JSON (for `flint report` and scripts).
//!
//! Both are built from the same [`Comparison`] and the same [`Figure`] list, so they cannot
//! disagree. JSON names carry their unit like the bench JSON; the table states units in its labels.

use super::stats::Figure;
use super::{Comparison, Kind};
use bench::config::Stop;
use results::{
    CompareOptions, CompareResult, CompareTarget, CompareWorkload, FigureSpread, TargetKind,
    TargetStatus, WorkloadPage,
};

/// Version of the compare JSON layout (docs/compare.md). Bump on renames or removals.
pub const SCHEMA_VERSION: u64 = 1;

/// The whole comparison, as `--json` writes it and `flint report` reads it.
pub fn record(c: &Comparison) -> CompareResult {
    let cfg = &c.config;
    let (duration_s, pages) = match cfg.stop {
        Stop::Duration(d) => (Some(d.as_secs_f64()), None),
        Stop::Pages(n) => (None, Some(n)),
    };
    let options = CompareOptions {
        rounds: c.rounds as u64,
        clients: cfg.concurrency as u64,
        threads: cfg.threads as u64,
        duration_s,
        pages,
        http: cfg.http,
        warmup_s: cfg.warmup.as_secs_f64(),
        think_s: cfg.think.map(|t| t.as_secs_f64()),
        rate_pages_per_s: cfg.rate,
        seed: cfg.seed,
        connect_timeout_s: cfg.connect_timeout.as_secs_f64(),
        response_timeout_s: cfg.response_timeout.as_secs_f64(),
        serve_ready_timeout_s: c.server.ready_timeout.as_secs_f64(),
    };
    let targets = c
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let figures = Figure::ALL
                .iter()
                .map(|&f| {
                    let s = t.spread(f);
                    let spread = FigureSpread {
                        median: s.map(|s| s.median),
                        min: s.map(|s| s.min),
                        max: s.map(|s| s.max),
                        ratio: c.ratio(i, f),
                    };
                    (f.key().to_owned(), spread)
                })
                .collect();
            CompareTarget {
                name: t.name.clone(),
                url: t.url.clone(),
                kind: match t.kind {
                    Kind::Target => TargetKind::Target,
                    Kind::Serve => TargetKind::Serve,
                },
                command: t.command.clone(),
                status: if t.ok() {
                    TargetStatus::Ok
                } else {
                    TargetStatus::Failed
                },
                error: t.error.clone(),
                rounds: t.rounds.clone(),
                figures,
            }
        })
        .collect();
    CompareResult {
        kind: results::Kind::Compare,
        schema_version: SCHEMA_VERSION,
        flint_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: bench::report::rfc3339(c.started_at),
        environment: bench::report::environment(),
        interrupted: c.interrupted,
        options,
        workload: workload(c),
        targets,
    }
}

/// The pages every target served, their files by URL path.
fn workload(c: &Comparison) -> CompareWorkload {
    let w = &c.workload;
    let pages = w
        .pages
        .iter()
        .map(|p| WorkloadPage {
            name: p.name.clone(),
            weight: p.weight,
            files: p.files.iter().map(|&i| w.urls[i].clone()).collect(),
        })
        .collect();
    CompareWorkload { pages }
}

/// Pages named in the table's header; the JSON has them all.
const PAGES_NAMED: usize = 8;

/// [`record`] as JSON.
pub fn json(c: &Comparison) -> serde_json::Value {
    // Plain numbers, strings and maps with string keys: serialization cannot fail.
    serde_json::to_value(record(c)).unwrap_or(serde_json::Value::Null)
}

/// A line of the table.
enum Line {
    Row([String; 7]),
    /// Name and status, then a reason in place of figures.
    Bare([String; 2], String),
    /// A further line of a reason, under the figures.
    Note(String),
}

/// What the ratios are of: the first target's medians, or, when it failed, why there are none.
fn ratio_text(c: &Comparison) -> String {
    match c.targets.first() {
        Some(t) if t.ok() => format!("ratio = median / {}'s median", t.name),
        Some(t) => format!(
            "no ratios: the baseline, {} (the first target), failed",
            t.name
        ),
        None => "ratio = median / the first target's median".to_owned(),
    }
}

/// The table people read: per target and figure, median, min, max and ratio to the first.
pub fn table(c: &Comparison) -> String {
    let cfg = &c.config;
    let per_round = bench::report::stop_text(cfg.stop);
    let mut out = format!(
        "flint compare: {} targets, {} rounds (A B A B ...), {} clients, {} per round, {}\n\
         Fetched from each: {}\n\
         Median of the rounds, with min and max; {}.\n\n",
        c.targets.len(),
        c.rounds,
        cfg.concurrency,
        per_round,
        bench::report::http_mode_text(cfg.http),
        workload(c).describe(PAGES_NAMED),
        ratio_text(c),
    );
    // Rows of 7 cells; a target without rounds gets its name, status and reason on one line.
    let header = [
        "target", "status", "figure", "median", "min", "max", "ratio",
    ]
    .map(String::from);
    let mut lines: Vec<Line> = vec![Line::Row(header)];
    for (i, t) in c.targets.iter().enumerate() {
        let status = if t.ok() { "ok" } else { "failed" };
        let mut errors = t.error.iter().flat_map(|e| e.lines()).map(str::to_owned);
        if t.rounds.is_empty() {
            let reason = errors.next().unwrap_or_else(|| "not measured".into());
            lines.push(Line::Bare([t.name.clone(), status.into()], reason));
        }
        for (k, f) in Figure::ALL.into_iter().enumerate() {
            let Some(s) = t.spread(f) else { continue };
            let name = if k == 0 {
                [t.name.clone(), status.into()]
            } else {
                Default::default()
            };
            let ratio = c.ratio(i, f).map_or("-".into(), |r| format!("{r:.2}x"));
            let [a, b] = name;
            lines.push(Line::Row([
                a,
                b,
                f.label().into(),
                f.display(s.median),
                f.display(s.min),
                f.display(s.max),
                ratio,
            ]));
        }
        lines.extend(errors.map(Line::Note));
    }
    let mut widths = [0; 7];
    for line in &lines {
        let cells: &[String] = match line {
            Line::Row(cells) => cells,
            Line::Bare(cells, _) => cells,
            Line::Note(_) => &[],
        };
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let indent = widths[0] + widths[1] + 4;
    for line in &lines {
        let text = match line {
            Line::Row(cells) => cells
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(k, (cell, w))| match k {
                    0..=2 => format!("{cell:<w$}  "),
                    _ => format!("{cell:>w$}  "),
                })
                .collect(),
            Line::Bare([name, status], reason) => {
                let (w0, w1) = (widths[0], widths[1]);
                format!("{name:<w0$}  {status:<w1$}  {reason}")
            }
            Line::Note(note) => format!("{:indent$}{note}", ""),
        };
        out.push_str(text.trim_end());
        out.push('\n');
    }
    if c.interrupted {
        out.push_str(
            "\nInterrupted: the figures cover the rounds measured before Ctrl-C \
             (the last one may be shorter than the others).\n",
        );
    }
    out
}
