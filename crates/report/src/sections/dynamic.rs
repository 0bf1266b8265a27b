//! `flint lab dynamic`: each server's deployments (static file, CGI, FastCGI) per test type,
//! with the CPU per request of each tier the request crossed, side by side; a deployment that
//! failed the verifier shows why in place of figures.

use super::lab_rows::{results, server};
use super::labs;
use crate::html::{table, Col};
use crate::input::Input;
use crate::text::{self, esc};
use results::LabRow;
use std::fmt::Write as _;

/// Each tier's system calls per request (`web / app / db`), when a traced run counted them; a
/// `web+app` tier (mod_php) fills the web slot, and the app slot says so, as the CPU columns do.
fn syscalls(r: &LabRow) -> String {
    let counted = (r.tiers.iter().flatten()).any(|t| t.syscalls_per_request.is_some());
    if !counted {
        return "–".to_owned();
    }
    let mut cells: Vec<String> = Vec::new();
    for t in r.tiers.iter().flatten() {
        cells.push(text::opt(t.syscalls_per_request));
        if t.tier == WEB_AND_APP {
            cells.push("in web".to_owned());
        }
    }
    cells.join(" / ")
}

fn tier(r: &LabRow, name: &str) -> Option<f64> {
    (r.tiers.iter().flatten())
        .find(|t| t.tier == name)
        .map(|t| t.cpu_us_per_request)
}

/// The tier of a web server that runs the application in its own processes (mod_php).
const WEB_AND_APP: &str = "web+app";

/// The web and app cells: a `web+app` tier is the web column's, and the app column says so.
fn web_and_app(r: &LabRow) -> [String; 2] {
    match tier(r, WEB_AND_APP) {
        Some(both) => [text::opt(Some(both)), "in web".to_owned()],
        None => [text::opt(tier(r, "web")), text::opt(tier(r, "app"))],
    }
}

pub fn render(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    for (input, lab) in labs(inputs) {
        let rows: Vec<Vec<String>> = results(lab, "dynamic")
            .map(|r| {
                let mut cells = vec![
                    esc(server(r)),
                    esc(r.deployment.as_deref().unwrap_or("?")),
                    esc(r.test_type.as_deref().unwrap_or("?")),
                    esc(r.database.as_deref().unwrap_or("–")),
                ];
                if let Some(why) = &r.unavailable {
                    cells.extend(std::iter::repeat_n("–".to_owned(), 9));
                    cells.push(format!(r#"<span class="bad">{}</span>"#, esc(why)));
                    return cells;
                }
                cells.extend([
                    text::num(r.requests_per_s),
                    text::opt(r.latency_ms_p50),
                    text::opt(r.latency_ms_p99),
                ]);
                cells.extend(web_and_app(r));
                cells.extend([
                    text::opt(tier(r, "db")),
                    text::opt(r.server_cpu_us_per_request),
                    syscalls(r),
                    text::count(r.errors as f64),
                    if r.client_limited {
                        "client-limited".to_owned()
                    } else {
                        String::new()
                    },
                ]);
                cells
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let cols = [
            Col("Server", false),
            Col("Deployment", false),
            Col("Test", false),
            Col("Database", false),
            Col("Requests/s", true),
            Col("p50 ms", true),
            Col("p99 ms", true),
            Col("Web µs/req", true),
            Col("App µs/req", true),
            Col("DB µs/req", true),
            Col("Total µs/req", true),
            Col("Syscalls/req (web / app / db)", true),
            Col("Errors", true),
            Col("Notes", false),
        ];
        let _ = write!(
            out,
            r#"<h3><span class="file">{}</span></h3>{}"#,
            esc(&input.label),
            table(&cols, &rows, "lab")
        );
    }
    if !out.is_empty() {
        out.push_str(r#"<p class="note">CPU (user and system) per request over the measured window, by tier: web, the web server's processes; app, the gateway and application processes (CGI programs included as they come and go: read from a cgroup per process group where the lab can make one, as root; otherwise from /proc's times of reaped children, which miss fcgiwrap's programs, and the run's text output says so; SQLite runs inside the application); web+app, both at once, for a web server that runs the application in its own processes (mod_php in Apache prefork: its figure in the web column, "in web" in the app column); db, PostgreSQL's server with every backend it forked, when the database is postgres. System calls per request, by tier in the same order, come from a second run traced on its own (perf or strace), so that tracing slows none of the other figures. The static deployment is a file of the same bytes as /plaintext. Each deployment passed the verifier before it was measured.</p>"#);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_deployment_shows_its_tiers_and_a_failed_one_why() {
        let lab = json!({"kind": "lab", "experiment": "dynamic", "results": [
            {"experiment": "dynamic", "server": "nginx", "mode": "persistent",
             "deployment": "cgi", "test_type": "db", "database": "sqlite",
             "requests": 700, "requests_per_s": 350.0, "latency_ms_p50": 20.0,
             "latency_ms_p99": 45.0, "server_cpu_us_per_request": 2193.0,
             "tiers": [{"tier": "web", "cpu_us_per_request": 101.0,
                        "syscalls_per_request": 31.0},
                       {"tier": "app", "cpu_us_per_request": 2092.0,
                        "syscalls_per_request": 412.5}]},
            {"experiment": "dynamic", "server": "flint", "mode": "persistent",
             "deployment": "cgi", "test_type": "fortunes", "database": "postgres",
             "requests": 200, "requests_per_s": 100.0, "latency_ms_p50": 70.0,
             "latency_ms_p99": 150.0, "server_cpu_us_per_request": 9841.0,
             "tiers": [{"tier": "web", "cpu_us_per_request": 462.0},
                       {"tier": "app", "cpu_us_per_request": 2961.0},
                       {"tier": "db", "cpu_us_per_request": 6418.0}]},
            {"experiment": "dynamic", "server": "apache-prefork", "mode": "persistent",
             "deployment": "mod-php", "test_type": "json", "database": "sqlite",
             "requests": 300, "requests_per_s": 150.0, "server_cpu_us_per_request": 377.0,
             "tiers": [{"tier": "web+app", "cpu_us_per_request": 377.0},
                       {"tier": "db", "cpu_us_per_request": 90.0,
                        "syscalls_per_request": 12.0}]},
            {"experiment": "dynamic", "server": "flint", "mode": "persistent",
             "deployment": "fastcgi", "test_type": "queries",
             "unavailable": "failed the verifier: 1 rows where 20 were expected"}
        ]});
        let html = crate::render(&[("lab.json".into(), lab)]).unwrap();
        let at = html.find(r#"id="dynamic""#).expect("the section");
        let section = &html[at..];
        for cell in [
            "<td>cgi</td><td>db</td><td>sqlite</td>",
            "2,092",
            "2,193",
            "31.0 / 413",
            "45.0",
            "<td>fortunes</td><td>postgres</td>",
            "6,418",
            "9,841",
            "<td>mod-php</td><td>json</td><td>sqlite</td>",
            r#"<td class="n">377</td><td class="n">in web</td>"#,
            // Its system calls by tier in the header's order: the app slot is the web's.
            "– / in web / 12.0",
        ] {
            assert!(section.contains(cell), "{cell} in {section}");
        }
        assert!(section.contains("failed the verifier: 1 rows where 20 were expected"));
        // Not repeated among the other lab results.
        assert!(!html.contains("Experiment dynamic"));
    }
}
