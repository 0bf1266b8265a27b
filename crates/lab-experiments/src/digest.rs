//! `flint lab digest`: the Content-MD5 measurements, Content-MD5 computed per request or cached.
//!
//! Yves Lafon fetched a 6.5 MB file with ptester (5 clients, HTTP/1.0, 2 minutes) from Apache
//! 1.3.12 with `ContentDigest On`, which computes the MD5 of the whole file for every request,
//! and from Jigsaw, which caches it with the file's metadata: 0.6 against 3 requests per second.
//! Here Apache (prefork and event) with `ContentDigest On` runs against `flint serve --digest`,
//! which computes each digest once per file version. Servers without a Content-MD5 option
//! (nginx, lighttpd) are left out: without the digest they would measure something else.

use super::{docroot, table, Experiment, Lab, ResultRow, DIGEST_CLIENTS};
use lab_peers::Peer;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub(super) fn run(lab: &mut Lab) -> io::Result<()> {
    let mode = bench::HttpMode::Http10;
    writeln!(
        lab.out,
        "\n== digest (the Content-MD5 measurements): {DIGEST_CLIENTS} clients, {} (as ptester), one \
         {:.1} MB file ({} bytes), digest on; {}",
        mode.name(),
        docroot::DIGEST_SIZE as f64 / 1e6,
        docroot::DIGEST_SIZE,
        lab.opts.each()
    )?;
    let skipped: Vec<&str> = lab
        .opts
        .servers
        .iter()
        .filter(|k| !k.supports_digest())
        .map(|k| k.name())
        .collect();
    if !skipped.is_empty() {
        writeln!(
            lab.out,
            "(left out, no Content-MD5 option: {})",
            skipped.join(", ")
        )?;
    }
    let workload = docroot::single_file_workload(docroot::DIGEST_PATH);
    let mut t = table::Table::new([
        "server",
        "Content-MD5",
        "req/s",
        "MB/s",
        "CPU µs/req",
        "syscalls/req",
        "errors",
    ]);
    for kind in lab.runnable(Experiment::Digest) {
        if lab.stopped() {
            break;
        }
        let mut peer = match Peer::start(kind, &lab.spec(true, DIGEST_CLIENTS)) {
            Ok(p) => p,
            Err(e) => {
                lab.failed(kind, "start", &e.to_string())?;
                continue;
            }
        };
        let md5 = match content_md5(peer.addr(), docroot::DIGEST_PATH) {
            Ok(Some(v)) => v,
            Ok(None) => "absent".to_owned(),
            Err(e) => format!("? ({e})"),
        };
        let load = lab.load(DIGEST_CLIENTS, mode);
        if let Some(m) = lab.measure(&mut peer, &workload, load, "digest")? {
            let row = ResultRow::new(
                Experiment::Digest,
                kind,
                mode,
                Some(docroot::DIGEST_SIZE),
                &m,
            );
            if row.interrupted {
                writeln!(
                    lab.out,
                    "{kind}: interrupted after {:.2} s (Ctrl-C)",
                    row.duration_s
                )?;
                lab.push(row);
                continue;
            }
            if let Some(why) = &row.unavailable {
                writeln!(lab.out, "{kind}: {why}")?;
                lab.push(row);
                continue;
            }
            t.row(vec![
                format!("{kind} ({})", peer.version()),
                md5,
                format!(
                    "{}{}",
                    table::num(Some(row.requests_per_s)),
                    table::mark(row.client_limited)
                ),
                format!(
                    "{}{}",
                    table::mb_per_s(row.bytes_per_s),
                    table::mark(row.client_limited)
                ),
                table::num(row.server_cpu_us_per_request),
                table::num(row.syscalls_per_request),
                row.errors.to_string(),
            ]);
            lab.push(row);
        }
        if let Err(e) = peer.stop() {
            lab.failed(kind, "stop", &e.to_string())?;
        }
    }
    let limited = lab
        .results
        .iter()
        .any(|r| r.experiment == "digest" && r.client_limited);
    if !t.is_empty() {
        writeln!(lab.out, "\ndigest: results\n{}", t.render())?;
        lab.footnote(limited)?;
        writeln!(
            lab.out,
            "(measured in 2000, 10 Mb/s: Apache 1.3.12 0.6 req/s, Jigsaw 2.1.0 3 req/s)"
        )?;
    }
    Ok(())
}

/// The Content-MD5 header of `path` (a HEAD request), to show the digest is really on.
pub fn content_md5(addr: SocketAddr, path: &str) -> io::Result<Option<String>> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "HEAD {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: flint-lab\r\n\r\n"
    )?;
    // A HEAD response is a head only; bounded in case a server sends a body anyway.
    let mut head = Vec::new();
    s.take(64 * 1024).read_to_end(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    Ok(text.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-md5")
            .then(|| value.trim().to_owned())
    }))
}
