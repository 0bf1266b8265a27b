//! `flint lab sizes`: the IO-Lite paper's figure 3.
//!
//! Pai, Druschel and Zwaenepoel had 40 clients request the same document over and over, for sizes
//! from 500 bytes to 200 KB, and plotted each server's output bandwidth: below about 5 KB the
//! per-request control overhead dominates, above it the data path (copies, checksums). Here the
//! same 40 clients (persistent connections) fetch each size from each peer; the output is the
//! bandwidth matrix and the server CPU per request.
//!
//! Client and server share this machine. When the client's core was saturated and the server's
//! was not, the figure measures the client, and it is marked so (`*`, `client_limited`).

use super::{docroot, table, Experiment, Lab, ResultRow, SIZES_CLIENTS};
use lab_peers::{Peer, PeerKind};
use std::io;

pub(super) fn run(lab: &mut Lab) -> io::Result<()> {
    let sizes = lab.opts.sizes.clone();
    writeln!(
        lab.out,
        "\n== sizes (the IO-Lite paper): {SIZES_CLIENTS} clients, persistent, one document \
         over and over; {} sizes, {}",
        sizes.len(),
        lab.opts.each()
    )?;
    let mode = bench::HttpMode::KeepAlive;
    let servers = lab.runnable(Experiment::Sizes);
    let mut rows: Vec<ResultRow> = Vec::new();
    for &kind in &servers {
        if lab.stopped() {
            break;
        }
        let mut peer = match Peer::start(kind, &lab.spec(false, SIZES_CLIENTS)) {
            Ok(p) => p,
            Err(e) => {
                lab.failed(kind, "start", &e.to_string())?;
                continue;
            }
        };
        for &size in &sizes {
            if lab.stopped() {
                break;
            }
            let workload = docroot::single_file_workload(&docroot::size_path(size));
            let load = lab.load(SIZES_CLIENTS, mode);
            let what = format!("sizes {}", table::size(size));
            let Some(m) = lab.measure(&mut peer, &workload, load, &what)? else {
                continue;
            };
            let row = ResultRow::new(Experiment::Sizes, kind, mode, Some(size), &m);
            if row.interrupted {
                writeln!(
                    lab.out,
                    "{kind:<14} {:>7}  interrupted after {:.2} s (Ctrl-C)",
                    table::size(size),
                    row.duration_s
                )?;
                lab.push(row);
                continue;
            }
            if let Some(why) = &row.unavailable {
                writeln!(lab.out, "{kind:<14} {:>7}  {why}", table::size(size))?;
                lab.push(row);
                continue;
            }
            writeln!(
                lab.out,
                "{kind:<14} {:>7}  {:>9} req/s  {:>8} MB/s  CPU {:>6} µs/req  \
                 syscalls {:>5}/req  errors {}{}",
                table::size(size),
                table::num(Some(row.requests_per_s)),
                table::mb_per_s(row.bytes_per_s),
                table::num(row.server_cpu_us_per_request),
                table::num(row.syscalls_per_request),
                row.errors,
                if row.client_limited {
                    "  (client-limited)"
                } else {
                    ""
                },
            )?;
            rows.push(row.clone());
            lab.push(row);
        }
        if let Err(e) = peer.stop() {
            lab.failed(kind, "stop", &e.to_string())?;
        }
    }
    if rows.is_empty() {
        return Ok(());
    }
    let ran: Vec<PeerKind> = servers
        .into_iter()
        .filter(|k| rows.iter().any(|r| r.server == k.name()))
        .collect();
    let matrix = |title: &str, cell: &dyn Fn(&ResultRow) -> String| {
        let mut t = table::Table::new(
            std::iter::once("size".to_owned()).chain(ran.iter().map(|k| k.name().to_owned())),
        );
        for &size in &sizes {
            let mut cells = vec![table::size(size)];
            for k in &ran {
                let r = rows
                    .iter()
                    .find(|r| r.server == k.name() && r.size_bytes == Some(size))
                    .filter(|r| r.measured());
                cells.push(r.map_or("-".to_owned(), cell));
            }
            t.row(cells);
        }
        format!("\n{title}\n{}", t.render())
    };
    let mark = |r: &ResultRow| table::mark(r.client_limited);
    let bandwidth = matrix("sizes: output bandwidth, MB/s", &|r| {
        format!("{}{}", table::mb_per_s(r.bytes_per_s), mark(r))
    });
    let cpu = matrix("sizes: server CPU, µs per request", &|r| {
        format!("{}{}", table::num(r.server_cpu_us_per_request), mark(r))
    });
    write!(lab.out, "{bandwidth}{cpu}")?;
    lab.footnote(rows.iter().any(|r| r.client_limited))?;
    Ok(())
}
