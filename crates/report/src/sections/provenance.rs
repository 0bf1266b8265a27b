//! What ran where. WebSTONE (section 4.5): "All hardware and server software configurations
//! should be disclosed when a test is released." So every input gets a card: flint's version, the
//! date, the machine, every option, and the targets' or servers' versions and status.

use crate::html::{table, Col};
use crate::input::{Doc, Input};
use crate::text::{self, esc};
use results::{Environment, PeerStatus, TargetKind, TargetStatus};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

pub fn render(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for i in inputs {
        out.push_str(&card(i));
    }
    out
}

/// A JSON scalar as text; objects and arrays compactly.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        Value::Array(items) if items.is_empty() => "–".into(),
        // A list of names reads as a list, not as JSON.
        Value::Array(items) if items.iter().all(|x| !x.is_object() && !x.is_array()) => {
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        }
        v => v.to_string(),
    }
}

/// Nested options flattened to `a.b = value`, in the order of their type. The options are shown
/// whole, whatever fields they have: serialized from their type and walked generically, so an
/// option added to a writer is disclosed without a change here.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        v => out.push((prefix.to_owned(), show(v))),
    }
}

fn dl(pairs: &[(String, String)]) -> String {
    let mut out = String::from(r#"<dl class="kv">"#);
    for (k, v) in pairs {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    out.push_str("</dl>");
    out
}

fn machine(env: &Environment) -> Vec<(String, String)> {
    if *env == Environment::default() {
        return vec![(
            "machine".into(),
            "not recorded (a result from an older flint)".into(),
        )];
    }
    let mut out = Vec::new();
    let mut push = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_owned(), v));
        }
    };
    push("host", env.hostname.clone());
    push("os", env.os.clone());
    push("kernel", env.kernel.clone());
    let cores = env.cores.map(|c| text::count(c as f64));
    let cpu = match (&env.cpu_model, cores) {
        (Some(m), Some(c)) => Some(format!("{m}, {c} cores")),
        (Some(m), None) => Some(m.clone()),
        (None, Some(c)) => Some(format!("{c} cores")),
        (None, None) => None,
    };
    push("cpu", cpu);
    push(
        "memory",
        env.memory_bytes
            .map(|b| format!("{} GiB", text::num(b as f64 / 1024f64.powi(3)))),
    );
    out
}

/// The options of a run as a JSON tree, for [`flatten`].
fn options_of(doc: &Doc) -> Value {
    fn tree(x: &impl Serialize) -> Value {
        serde_json::to_value(x).unwrap_or(Value::Null)
    }
    match doc {
        Doc::Bench(b) => tree(&b.config),
        Doc::Compare(c) => tree(&c.options),
        Doc::Lab(l) => tree(&l.options),
    }
}

fn card(i: &Input<'_>) -> String {
    let (flint, started, environment, interrupted) = match &i.doc {
        Doc::Bench(b) => (
            &b.flint_version,
            &b.started_at,
            &b.environment,
            b.interrupted,
        ),
        Doc::Compare(c) => (
            &c.flint_version,
            &c.started_at,
            &c.environment,
            c.interrupted,
        ),
        // A file older than the top-level flag says it only on the row cut short.
        Doc::Lab(l) => (
            &l.flint_version,
            &l.started_at,
            &l.environment,
            l.interrupted || l.results.iter().any(|r| r.interrupted),
        ),
    };
    let recorded = |x: &String| {
        if x.is_empty() {
            "not recorded".to_owned()
        } else {
            x.clone()
        }
    };
    let mut facts = vec![
        ("kind".to_owned(), i.kind().name().to_owned()),
        ("flint".to_owned(), recorded(flint)),
        ("started".to_owned(), recorded(started)),
    ];
    if let Doc::Lab(l) = &i.doc {
        if !l.experiment.is_empty() {
            facts.push(("experiment".into(), l.experiment.clone()));
        }
    }
    if interrupted {
        let mut said = "yes: ended early by Ctrl-C".to_owned();
        if let Doc::Lab(l) = &i.doc {
            said.push_str(&super::lab_rows::partial(l));
        }
        facts.push(("interrupted".into(), said));
    }
    if let Doc::Bench(b) = &i.doc {
        if let Some(stopped) = &b.stopped_early {
            facts.push(("stopped early".into(), stopped.reason.clone()));
        }
    }
    facts.extend(machine(environment));
    let mut out = format!(
        r#"<div class="card"><h3><span class="file">{}</span></h3><div class="prov"><div><h4>Run and machine</h4>{}</div>"#,
        esc(i.file),
        dl(&facts)
    );
    let mut pairs = Vec::new();
    flatten("", &options_of(&i.doc), &mut pairs);
    if !pairs.is_empty() {
        // Options are many and short: a list that flows into columns keeps the card compact.
        out.push_str(r#"<div><h4>Options</h4><ul class="opts">"#);
        for (k, v) in &pairs {
            let _ = write!(
                out,
                r#"<li><span class="k">{}</span> {}</li>"#,
                esc(k),
                esc(v)
            );
        }
        out.push_str("</ul></div>");
    }
    out.push_str("</div>");
    let or_dash = |x: Option<&str>| esc(x.unwrap_or("–"));
    match &i.doc {
        Doc::Compare(c) => {
            // `--serve` targets are started by flint: their command line is part of the setup.
            let commands = c.targets.iter().any(|t| t.command.is_some());
            let rows: Vec<Vec<String>> = c
                .targets
                .iter()
                .map(|t| {
                    let mut row = vec![esc(&t.name), or_dash(t.url.as_deref())];
                    if commands {
                        row.push(or_dash(t.command.as_deref()));
                    }
                    let status = match t.status {
                        TargetStatus::Ok => "ok",
                        TargetStatus::Failed => "failed",
                    };
                    let kind = match t.kind {
                        TargetKind::Target => "",
                        TargetKind::Serve => " (started by compare)",
                    };
                    row.push(format!("{status}{kind}"));
                    row.push(or_dash(t.error.as_deref()));
                    row
                })
                .collect();
            if !rows.is_empty() {
                let mut cols = vec![Col("Target", false), Col("URL", false)];
                if commands {
                    cols.push(Col("Command", false));
                }
                cols.extend([Col("Status", false), Col("Error", false)]);
                let _ = write!(out, "<h4>Targets</h4>{}", table(&cols, &rows, "targets"));
            }
            // What every target was asked for, page by page.
            let rows: Vec<Vec<String>> = c
                .workload
                .pages
                .iter()
                .map(|p| {
                    vec![
                        esc(&p.name),
                        text::trim(&text::num(p.weight)),
                        esc(&p.files.join(" ")),
                    ]
                })
                .collect();
            if !rows.is_empty() {
                let cols = [
                    Col("Page", false),
                    Col("Weight", true),
                    Col("Files (URL paths)", false),
                ];
                let _ = write!(out, "<h4>Workload</h4>{}", table(&cols, &rows, "workload"));
            }
        }
        Doc::Lab(l) => {
            let rows: Vec<Vec<String>> = l
                .servers
                .iter()
                .map(|t| {
                    let status = match t.status {
                        PeerStatus::Ok => "ok",
                        PeerStatus::Missing => "missing",
                        PeerStatus::Failed => "failed",
                        PeerStatus::NotRun => "not run",
                    };
                    vec![
                        esc(&t.name),
                        or_dash(t.version.as_deref()),
                        status.to_owned(),
                        or_dash(t.note.as_deref()),
                    ]
                })
                .collect();
            if !rows.is_empty() {
                let cols = [
                    Col("Server", false),
                    Col("Version", false),
                    Col("Status", false),
                    Col("Note", false),
                ];
                let _ = write!(out, "<h4>Servers</h4>{}", table(&cols, &rows, "servers"));
            }
        }
        Doc::Bench(_) => {}
    }
    out.push_str("</div>");
    out
}
