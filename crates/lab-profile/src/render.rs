//! The profile as the Jigsaw syscall notes printed it (truss -c), and as JSON.
//!
//! Their table is kept line for line (syscall, seconds, calls, errors; a `----` rule;
//! `sys totals:`, `usr time:`, `elapsed:`), with two changes today's numbers need: three decimals
//! (a 2001 syscall took 1 ms, today's take 1 µs) and a `sys time:` line (the server's kernel CPU
//! from the CPU clock, which truss folded into `sys totals`). The per-request figures the notes worked
//! out by hand follow it. The JSON is [`ServerProfile`], the bench result's `server_profile`.

use super::{Method, Profile};
use results::ServerProfile;
use std::fmt::Write;

fn seconds(s: Option<f64>) -> String {
    s.map_or_else(|| "-".to_string(), |s| format!("{s:.3}"))
}

pub(super) fn truss_table(p: &Profile, requests: u64, pages: u64) -> String {
    let mut out = truss_table_body(p, requests, pages);
    for note in &p.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

pub(super) fn truss_table_body(p: &Profile, requests: u64, pages: u64) -> String {
    let name_w = p
        .syscalls
        .iter()
        .map(|r| r.name.len())
        .chain([12])
        .max()
        .unwrap_or(12);
    let mut out = String::new();
    let threads = if p.pids.len() > 1 {
        format!(" and {} child processes", p.pids.len() - 1)
    } else {
        String::new()
    };
    let how = match p.method {
        Method::Strace => "strace -c -f",
        Method::Perf => "perf stat + perf record of raw_syscalls",
    };
    let _ = writeln!(out, "Server profile: pid {}{threads}, {how}", p.pid);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<name_w$} {:>10} {:>10} {:>8}",
        "syscall", "seconds", "calls", "errors"
    );
    for r in &p.syscalls {
        let errors = if r.errors > 0 {
            r.errors.to_string()
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<name_w$} {:>10} {:>10} {:>8}",
            r.name,
            seconds(r.seconds),
            r.calls,
            errors
        );
    }
    let _ = writeln!(
        out,
        "{:<name_w$} {:>10} {:>10} {:>8}",
        "", "----", "---", "---"
    );
    let _ = writeln!(
        out,
        "{:<name_w$} {:>10} {:>10} {:>8}",
        "sys totals:",
        seconds(p.total_seconds),
        p.total_calls,
        p.total_errors
    );
    let _ = writeln!(
        out,
        "{:<name_w$} {:>10.3}",
        "usr time:",
        p.cpu_user.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "{:<name_w$} {:>10.3}",
        "sys time:",
        p.cpu_sys.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "{:<name_w$} {:>10.3}",
        "elapsed:",
        p.window.as_secs_f64()
    );
    let mut per = Vec::new();
    if let Some(c) = p.calls_per(requests) {
        per.push(format!("{c:.2} syscalls per request"));
    }
    if let Some(c) = p.calls_per(pages) {
        per.push(format!("{c:.2} per page"));
    }
    if let Some(us) = p.cpu_us_per_request(requests) {
        per.push(format!("{us:.1} µs server CPU per request"));
    }
    if !per.is_empty() {
        let _ = writeln!(
            out,
            "\n{} ({requests} requests, {pages} pages)",
            per.join(", ")
        );
    }
    out
}

pub(super) fn record(p: &Profile, requests: u64, pages: u64) -> ServerProfile {
    ServerProfile {
        pid: p.pid,
        pids: p.pids.clone(),
        method: p.method.to_string(),
        window_s: p.window.as_secs_f64(),
        cpu_user_s: p.cpu_user.as_secs_f64(),
        cpu_sys_s: p.cpu_sys.as_secs_f64(),
        cpu_us_per_request: p.cpu_us_per_request(requests),
        syscalls: p
            .syscalls
            .iter()
            .map(|r| results::SyscallRow {
                name: r.name.clone(),
                seconds: r.seconds,
                calls: r.calls,
                errors: r.errors,
            })
            .collect(),
        total_calls: p.total_calls,
        total_errors: p.total_errors,
        total_seconds: p.total_seconds,
        calls_per_request: p.calls_per(requests),
        calls_per_page: p.calls_per(pages),
        note: p.notes.join("; "),
    }
}
