//! `flint lab syscalls`: the Jigsaw syscall notes' experiment.
//!
//! Henrik Frystyk Nielsen ran truss on Jigsaw while a browser or the Libwww robot fetched the
//! microscape page (1 HTML + 43 GIFs), and found that HTTP/1.1 with pipelining cut the server's
//! system calls (writes above all: a persistent connection lets the server buffer its output).
//! Here one client fetches the same page shape from each peer over HTTP/1.0 (a connection per
//! file), persistent HTTP/1.1, and pipelined HTTP/1.1, and the peer's syscall table, syscalls per
//! request and CPU per request are reported for each.

use super::{docroot, table, Experiment, Lab, ResultRow, SYSCALLS_CLIENTS, SYSCALL_MODES};
use lab_peers::Peer;
use std::io;

pub(super) fn run(lab: &mut Lab) -> io::Result<()> {
    writeln!(
        lab.out,
        "\n== syscalls (the Jigsaw syscall notes): the microscape page (1 HTML + 43 GIFs, {} KB), \
         {SYSCALLS_CLIENTS} client, HTTP/1.0, persistent, pipelined; {} s each",
        page_bytes() / 1024,
        lab.opts.duration.as_secs_f64()
    )?;
    let workload = docroot::microscape_workload();
    let mut rows: Vec<(ResultRow, u64)> = Vec::new();
    for kind in lab.runnable(Experiment::Syscalls) {
        if lab.stopped() {
            break;
        }
        let mut peer = match Peer::start(kind, &lab.spec(false, SYSCALLS_CLIENTS)) {
            Ok(p) => p,
            Err(e) => {
                lab.failed(kind, "start", &e.to_string())?;
                continue;
            }
        };
        for mode in SYSCALL_MODES {
            if lab.stopped() {
                break;
            }
            let mode_name = mode_json(mode);
            let load = lab.load(SYSCALLS_CLIENTS, mode);
            let Some(m) =
                lab.measure(&mut peer, &workload, load, &format!("syscalls {mode_name}"))?
            else {
                continue;
            };
            let row = ResultRow::new(Experiment::Syscalls, kind, mode, None, &m);
            let pages = m.run.stats.pages_done;
            if row.interrupted {
                writeln!(
                    lab.out,
                    "\n-- {kind} ({}), {}: interrupted after {:.2} s (Ctrl-C)",
                    peer.version(),
                    mode_json(mode),
                    row.duration_s
                )?;
                lab.results.push(row);
                continue;
            }
            writeln!(
                lab.out,
                "\n-- {kind} ({}), {}: {} requests, {pages} pages in {:.2} s; \
                 server CPU {} µs/request",
                peer.version(),
                mode_json(mode),
                row.requests,
                row.duration_s,
                table::num(row.server_cpu_us_per_request),
            )?;
            if let Some(p) = &m.profile {
                lab.truss(p, row.requests, pages)?;
            }
            rows.push((row, pages));
            lab.results.push(rows[rows.len() - 1].0.clone());
        }
        if let Err(e) = peer.stop() {
            lab.failed(kind, "stop", &e.to_string())?;
        }
    }
    let mut t = table::Table::new([
        "server",
        "mode",
        "req/s",
        "pages/s",
        "syscalls/req",
        "syscalls/page",
        "CPU µs/req",
        "errors",
    ]);
    for (r, pages) in &rows {
        let per_page = r
            .syscalls_per_request
            .filter(|_| *pages > 0)
            .map(|s| s * r.requests as f64 / *pages as f64);
        t.row(vec![
            r.server.clone(),
            mode_json(r.mode).to_owned(),
            format!(
                "{}{}",
                table::num(Some(r.requests_per_s)),
                table::mark(r.client_limited)
            ),
            table::num(Some(*pages as f64 / r.duration_s.max(1e-9))),
            table::num(r.syscalls_per_request),
            table::num(per_page),
            table::num(r.server_cpu_us_per_request),
            r.errors.to_string(),
        ]);
    }
    if !t.is_empty() {
        writeln!(lab.out, "\nsyscalls: summary\n{}", t.render())?;
        lab.footnote(rows.iter().any(|(r, _)| r.client_limited))?;
    }
    Ok(())
}

/// The mode as the JSON writes it.
pub(super) fn mode_json(mode: bench::HttpMode) -> &'static str {
    mode.name()
}

fn page_bytes() -> u64 {
    docroot::MICROSCAPE_HTML + docroot::MICROSCAPE_GIFS.iter().sum::<u64>()
}
