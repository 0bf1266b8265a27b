//! What each bench run did and met, beside its figures: closed or open loop (and the rate
//! asked for, with the open loop's latencies corrected and not, and its send lag), the statuses the server answered, the errors by kind, why handshakes failed, and
//! ptester's per-URL table (requests, errors, latency and bytes of each file).

use super::benches;
use crate::html::{table, Col};
use crate::input::{latency, Input};
use crate::text::{self, esc};
use results::{BenchResult, LatencySummary};

fn cnt(x: u64) -> String {
    text::count(x as f64)
}

/// `name n, name n`, or `none`.
fn counts<'a>(items: impl Iterator<Item = (&'a str, u64)>, bad: bool) -> String {
    let seen: Vec<String> = items
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{} {}", esc(name), cnt(n)))
        .collect();
    match (seen.is_empty(), bad) {
        (true, _) => "none".into(),
        (false, true) => format!(r#"<span class="bad">{}</span>"#, seen.join(", ")),
        (false, false) => seen.join(", "),
    }
}

/// Closed loop (with its think time) or open loop at its rate.
pub fn load_text(b: &BenchResult) -> String {
    match (b.config.rate_pages_per_s, b.config.think_s) {
        (Some(rate), _) => format!("open loop at {} pages/s", text::num(rate)),
        (None, Some(think)) => format!("closed loop, think {} s", text::num(think)),
        (None, None) => "closed loop".into(),
    }
}

fn details(inputs: &[Input<'_>]) -> String {
    let rows: Vec<Vec<String>> = benches(inputs)
        .map(|(i, b)| {
            let s = &b.summary;
            let failures = s.tls.as_ref().map(|t| &t.failures);
            vec![
                format!(r#"<span class="file">{}</span>"#, esc(&i.label)),
                esc(&load_text(b)),
                counts(s.status_counts.iter().map(|(k, n)| (k.as_str(), *n)), false),
                counts(b.errors_by_kind.iter().map(|(k, n)| (k.as_str(), *n)), true),
                match failures {
                    Some(f) => counts(f.iter().map(|(k, n)| (k.as_str(), *n)), true),
                    None => "–".into(),
                },
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let cols = [
        Col("Result", false),
        Col("Load", false),
        Col("Statuses", false),
        Col("Errors by kind", false),
        Col("TLS failures", false),
    ];
    let mut out = table(&cols, &rows, "details");
    out.push_str(r#"<p class="note">Statuses: every complete response by its code. Errors: 4xx and 5xx (1xx to 3xx are responses), or with --expect-status every status not in its list; the rest are failures of the connection or the framing.</p>"#);
    out
}

fn urls(label: &str, b: &BenchResult) -> String {
    if b.urls.is_empty() {
        return String::new();
    }
    let window = b.summary.duration_s;
    let rows: Vec<Vec<String>> = b
        .urls
        .iter()
        .map(|u| {
            let r = &u.response_ms;
            vec![
                format!(r#"<span class="file">{}</span>"#, esc(&u.url)),
                esc(&u.method),
                cnt(u.requests),
                text::opt((window > 0.0).then(|| u.requests as f64 / window)),
                if u.errors > 0 {
                    format!(r#"<span class="bad">{}</span>"#, cnt(u.errors))
                } else {
                    cnt(0)
                },
                text::opt(latency(r, |l| l.p50)),
                text::opt(latency(r, |l| l.p95)),
                text::opt(latency(r, |l| l.p99)),
                text::opt(latency(r, |l| l.max)),
                text::bytes(u.size_bytes as f64),
                text::bytes((u.header_bytes + u.body_bytes) as f64),
            ]
        })
        .collect();
    let cols = [
        Col("URL", false),
        Col("Method", false),
        Col("Requests", true),
        Col("Requests/s", true),
        Col("Errors", true),
        Col("p50 ms", true),
        Col("p95 ms", true),
        Col("p99 ms", true),
        Col("max ms", true),
        Col("Size", true),
        Col("Read", true),
    ];
    format!(
        r#"<h3>Per URL: <span class="file">{}</span></h3>{}"#,
        esc(label),
        table(&cols, &rows, "urls")
    )
}

/// An open-loop run's latencies both ways, as wrk2 and the text summary give them: from each
/// request's intended start (the headline: a late send is the server's delay too), from its
/// actual send (uncorrected), and the send lag between the two, with the pages due and those
/// never sent. Empty for a closed loop.
fn open_loop(label: &str, b: &BenchResult) -> String {
    let s = &b.summary;
    let Some(lag) = &s.send_lag_ms else {
        return String::new();
    };
    let mut rows: Vec<(&str, &LatencySummary)> = vec![("response", &s.response_ms)];
    if let Some(u) = &s.response_uncorrected_ms {
        rows.push(("response, uncorrected", u));
    }
    // A page of one file is its response: its rows would repeat those above.
    if s.page_ms.count > 0 && s.page_ms != s.response_ms {
        rows.push(("page", &s.page_ms));
        if let Some(u) = &s.page_uncorrected_ms {
            rows.push(("page, uncorrected", u));
        }
    }
    rows.push(("send lag", lag));
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, l)| {
            let mut row = vec![esc(name)];
            for pick in [
                (|l: &LatencySummary| l.p50) as fn(&LatencySummary) -> f64,
                |l| l.p90,
                |l| l.p99,
                |l| l.p999,
                |l| l.max,
            ] {
                row.push(text::opt(latency(l, pick)));
            }
            row.push(cnt(l.count));
            row
        })
        .collect();
    let cols = [
        Col("", false),
        Col("p50 ms", true),
        Col("p90 ms", true),
        Col("p99 ms", true),
        Col("p99.9 ms", true),
        Col("max ms", true),
        Col("Count", true),
    ];
    let mut schedule = String::new();
    if let (Some(due), Some(not_sent)) = (s.pages_scheduled, s.pages_not_sent) {
        // Only a page count (-n) has a late count (a timed run's lateness is its pages never
        // sent), and a result written before it existed has none: then nothing is said of it.
        let late = s
            .pages_sent_late
            .map_or(String::new(), |n| format!(", sent late: {}", cnt(n)));
        schedule = format!(
            " Pages due in the window: {}, never sent: {}{late}{}.",
            cnt(due),
            cnt(not_sent),
            match s.rate_kept {
                Some(false) => r#"; <span class="bad">the rate was not kept</span>"#,
                _ => "",
            }
        );
    }
    format!(
        r#"<h3>Open loop: <span class="file">{}</span></h3>{}<p class="note">Latency from each request's intended start on the schedule (the headline, corrected for coordinated omission as wrk2 does); uncorrected from its actual send; send lag: how late each page was sent against its schedule.{schedule}</p>"#,
        esc(label),
        table(&cols, &body, "openloop")
    )
}

pub fn render(inputs: &[Input<'_>]) -> String {
    let mut out = details(inputs);
    for (i, b) in benches(inputs) {
        out.push_str(&open_loop(&i.label, b));
        out.push_str(&urls(&i.label, b));
    }
    out
}
