//! What ran where. WebSTONE (section 4.5): "All hardware and server software configurations
//! should be disclosed when a test is released." So every input gets a card: flint's version, the
//! date, the machine, every option, and the targets' or servers' versions and status.

use crate::html::{table, Col};
use crate::input::{arr, at, f, s, Input, Kind};
use crate::text::{self, esc};
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
        // A list of names reads as a list, not as JSON.
        Value::Array(items) if items.iter().all(|x| !x.is_object() && !x.is_array()) => {
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        }
        v => v.to_string(),
    }
}

/// Nested options flattened to `a.b = value`, in the file's order.
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

fn machine(env: Option<&Value>) -> Vec<(String, String)> {
    let Some(env) = env.filter(|e| e.is_object()) else {
        return vec![(
            "machine".into(),
            "not recorded (a result from an older flint)".into(),
        )];
    };
    let mut out = Vec::new();
    let mut push = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_owned(), v));
        }
    };
    push("host", s(env, &["hostname"]).map(str::to_owned));
    push("os", s(env, &["os"]).map(str::to_owned));
    push("kernel", s(env, &["kernel"]).map(str::to_owned));
    let cpu = match (s(env, &["cpu_model"]), f(env, &["cores"])) {
        (Some(m), Some(c)) => Some(format!("{m}, {} cores", text::count(c))),
        (Some(m), None) => Some(m.to_owned()),
        (None, Some(c)) => Some(format!("{} cores", text::count(c))),
        _ => None,
    };
    push("cpu", cpu);
    push(
        "memory",
        f(env, &["memory_bytes"]).map(|b| format!("{} GiB", text::num(b / 1024f64.powi(3)))),
    );
    const SHOWN: [&str; 6] = [
        "hostname",
        "os",
        "kernel",
        "cpu_model",
        "cores",
        "memory_bytes",
    ];
    if let Some(m) = env.as_object() {
        for (k, v) in m.iter().filter(|(k, _)| !SHOWN.contains(&k.as_str())) {
            out.push((k.clone(), show(v)));
        }
    }
    out
}

fn card(i: &Input<'_>) -> String {
    let v = i.v;
    let mut facts = vec![
        ("kind".to_owned(), i.kind.name().to_owned()),
        (
            "flint".to_owned(),
            s(v, &["flint_version"])
                .unwrap_or("not recorded")
                .to_owned(),
        ),
        (
            "started".to_owned(),
            s(v, &["started_at"]).unwrap_or("not recorded").to_owned(),
        ),
    ];
    if let Some(e) = s(v, &["experiment"]) {
        facts.push(("experiment".into(), e.to_owned()));
    }
    if v.get("interrupted").and_then(Value::as_bool) == Some(true) {
        facts.push(("interrupted".into(), "yes: ended early by Ctrl-C".into()));
    }
    facts.extend(machine(v.get("environment")));
    let mut out = format!(
        r#"<div class="card"><h3><span class="file">{}</span></h3><div class="prov"><div><h4>Run and machine</h4>{}</div>"#,
        esc(i.file),
        dl(&facts)
    );
    let options = match i.kind {
        Kind::Bench => at(v, &["config"]),
        Kind::Compare | Kind::Lab => at(v, &["options"]),
    };
    let mut pairs = Vec::new();
    if let Some(o) = options {
        flatten("", o, &mut pairs);
    }
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
    match i.kind {
        Kind::Compare => {
            let targets = arr(v, &["targets"]);
            // `--serve` targets are started by flint: their command line is part of the setup.
            let commands = targets.iter().any(|t| s(t, &["command"]).is_some());
            let keys: &[&str] = if commands {
                &["name", "url", "command", "status", "error"]
            } else {
                &["name", "url", "status", "error"]
            };
            let rows: Vec<Vec<String>> = targets
                .iter()
                .map(|t| {
                    keys.iter()
                        .map(|k| esc(&t.get(*k).map(show).unwrap_or_else(|| "–".into())))
                        .collect()
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
        }
        Kind::Lab => {
            let rows: Vec<Vec<String>> = arr(v, &["servers"])
                .iter()
                .map(|t| {
                    ["name", "version", "status", "note"]
                        .iter()
                        .map(|k| esc(&t.get(*k).map(show).unwrap_or_else(|| "–".into())))
                        .collect()
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
        Kind::Bench => {}
    }
    out.push_str("</div>");
    out
}
