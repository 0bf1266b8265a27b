//! A comparison as a text table (for people) and as JSON (for `flint report` and scripts).
//!
//! Both are built from the same [`Comparison`] and the same [`Figure`] list, so they cannot
//! disagree. JSON names carry their unit like the bench JSON; the table states units in its labels.

use super::stats::{Figure, Spread};
use super::{Comparison, Kind};
use bench::config::Stop;
use serde_json::{json, Map, Value};

/// Version of the compare JSON layout (docs/compare.md). Bump on renames or removals.
pub const SCHEMA_VERSION: u64 = 1;

/// The whole comparison as JSON.
pub fn json(c: &Comparison) -> Value {
    let cfg = &c.config;
    let (duration_s, pages) = match cfg.stop {
        Stop::Duration(d) => (json!(d.as_secs_f64()), Value::Null),
        Stop::Pages(n) => (Value::Null, json!(n)),
    };
    let options = json!({
        "rounds": c.rounds,
        "clients": cfg.concurrency,
        "threads": cfg.threads,
        "duration_s": duration_s,
        "pages": pages,
        "http": cfg.http,
        "warmup_s": cfg.warmup.as_secs_f64(),
        "think_s": cfg.think.map(|t| t.as_secs_f64()),
        "rate_pages_per_s": cfg.rate,
        "seed": cfg.seed,
        "connect_timeout_s": cfg.connect_timeout.as_secs_f64(),
        "response_timeout_s": cfg.response_timeout.as_secs_f64(),
        "serve_ready_timeout_s": c.server.ready_timeout.as_secs_f64(),
    });
    let w = &c.workload;
    let pages: Vec<Value> = w
        .pages
        .iter()
        .map(|p| {
            let files: Vec<&str> = p.files.iter().map(|&i| w.urls[i].as_str()).collect();
            json!({"name": p.name, "weight": p.weight, "files": files})
        })
        .collect();
    let targets: Vec<Value> = c
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let figures: Map<String, Value> = Figure::ALL
                .iter()
                .map(|&f| {
                    let s = t.spread(f);
                    let value = json!({
                        "median": s.map(|s| s.median),
                        "min": s.map(|s| s.min),
                        "max": s.map(|s| s.max),
                        "ratio": c.ratio(i, f),
                    });
                    (f.key().to_owned(), value)
                })
                .collect();
            json!({
                "name": t.name,
                "url": t.url,
                "kind": match t.kind { Kind::Target => "target", Kind::Serve => "serve" },
                "command": t.command,
                "status": if t.ok() { "ok" } else { "failed" },
                "error": t.error,
                "rounds": t.rounds,
                "figures": figures,
            })
        })
        .collect();
    json!({
        "kind": "compare",
        "schema_version": SCHEMA_VERSION,
        "flint_version": env!("CARGO_PKG_VERSION"),
        "started_at": bench::report::rfc3339(c.started_at),
        "environment": environment(),
        "interrupted": c.interrupted,
        "options": options,
        "workload": {"pages": pages},
        "targets": targets,
    })
}

/// The machine and software the comparison ran on.
fn environment() -> Value {
    json!({})
}

/// The table people read: per target and figure, median, min, max and ratio to the first.
pub fn table(c: &Comparison) -> String {
    let cfg = &c.config;
    let per_round = bench::report::stop_text(cfg.stop);
    let mut out = format!(
        "flint compare: {} targets, {} rounds (A B A B ...), {} clients, {} per round, {}\n\
         Median of the rounds, with min and max; ratio = median / {}'s median.\n\n",
        c.targets.len(),
        c.rounds,
        cfg.concurrency,
        per_round,
        bench::report::http_mode_text(cfg.http),
        c.targets.first().map_or("the first target", |t| &t.name),
    );
    let mut rows: Vec<[String; 7]> = vec![[
        "target", "status", "figure", "median", "min", "max", "ratio",
    ]
    .map(String::from)];
    let mut notes: Vec<(usize, String)> = Vec::new();
    for (i, t) in c.targets.iter().enumerate() {
        let status = if t.ok() { "ok" } else { "failed" };
        let first_row = rows.len();
        if !t.rounds.is_empty() {
            for f in Figure::ALL {
                let cell = |get: fn(&Spread) -> f64| {
                    t.spread(f).map_or("-".into(), |s| f.display(get(&s)))
                };
                rows.push([
                    String::new(),
                    String::new(),
                    f.label().into(),
                    cell(|s| s.median),
                    cell(|s| s.min),
                    cell(|s| s.max),
                    c.ratio(i, f).map_or("-".into(), |r| format!("{r:.2}x")),
                ]);
            }
        }
        if rows.len() == first_row {
            rows.push(Default::default());
        }
        rows[first_row][0] = t.name.clone();
        rows[first_row][1] = status.into();
        if let Some(e) = &t.error {
            notes.push((rows.len() - 1, e.clone()));
        }
    }
    let mut widths = [0; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let indent = widths[0] + widths[1] + 4;
    for (r, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (k, (cell, w)) in row.iter().zip(widths).enumerate() {
            match k {
                0..=2 => line.push_str(&format!("{cell:<w$}  ")),
                _ => line.push_str(&format!("{cell:>w$}  ")),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        for (_, note) in notes.iter().filter(|(at, _)| *at == r) {
            for text in note.lines() {
                out.push_str(&format!("{:indent$}{text}\n", ""));
            }
        }
    }
    let measured = c.targets.iter().map(|t| t.rounds.len()).max().unwrap_or(0);
    if c.interrupted {
        out.push_str(&format!(
            "\nInterrupted: the figures cover the rounds measured before Ctrl-C ({measured} of {} at most per target).\n",
            c.rounds
        ));
    }
    out
}
