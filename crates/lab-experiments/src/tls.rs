//! `flint lab tls`: the papers' measurements again, over HTTPS.
//!
//! The IO-Lite paper's point was that below a few kilobytes a server's cost is per request, above
//! it per byte; the Jigsaw syscall notes counted the per-request cost in system calls. TLS adds
//! to both: a handshake per connection (dominated by the server's signature, so the key matters:
//! ECDSA P-256 against RSA-2048), a record layer on every byte (encryption where sendfile used to
//! hand the page cache to the NIC) and its own reads and writes. For each server with each
//! certificate the lab makes:
//!
//! - handshakes: HTTP/1.0 (a connection, so a handshake, per request) for a small document, with
//!   a full handshake each time and then with sessions resumed: handshakes per second and server
//!   CPU per handshake;
//! - keep-alive: the syscalls experiment's microscape page over one persistent connection, so its
//!   syscalls per request compare with `flint lab syscalls`' persistent row;
//! - the sweep: the IO-Lite sizes (every other one) with 40 persistent clients, ECDSA only: once
//!   the session is up the certificate plays no part, and the sweep is most of the run's time.
//!
//! A server without TLS here (lighttpd's module is a package of its own on Debian) is named with
//! its reason and the others run.

use super::certs::{self, CertKind, SERVER_NAME};
use super::{docroot, measure, table, Experiment, Lab, LabOptions, ResultRow, SIZES_CLIENTS};
use bench::config::TlsOptions;
use bench::HttpMode;
use lab_peers::{Peer, PeerKind, TlsFiles, LIGHTTPD_OPENSSL};
use std::io;
use std::path::Path;

/// The servers measured over TLS: Apache with the event MPM only (prefork's TLS is the same
/// mod_ssl, one process per connection).
pub const SERVERS: [PeerKind; 4] = [
    PeerKind::Flint,
    PeerKind::Nginx,
    PeerKind::Lighttpd,
    PeerKind::ApacheEvent,
];

/// Connections of the handshake measurements: enough to keep a one-core server busy while some
/// wait on the network.
pub const HANDSHAKE_CLIENTS: usize = 16;
/// The keep-alive measurement's: one, as the syscalls experiment.
pub const KEEPALIVE_CLIENTS: usize = 1;

/// Full and resumed handshakes.
const HANDSHAKES: [(&str, bool); 2] = [("full", false), ("resumed", true)];

/// Measurements per server: handshakes for both keys, keep-alive and the sweep with one.
pub(super) fn runs_per_server(opts: &LabOptions) -> usize {
    CertKind::ALL.len() * HANDSHAKES.len() + 1 + opts.tls_sizes().len()
}

/// Why `kind` cannot serve TLS on this machine, if it cannot.
pub fn missing_tls(kind: PeerKind) -> Option<String> {
    let need = |path: &str, package: &str| {
        (!Path::new(path).exists())
            .then(|| format!("no TLS module ({path}; install: apt-get install -y {package})"))
    };
    match kind {
        PeerKind::Lighttpd => need(LIGHTTPD_OPENSSL, "lighttpd-mod-openssl"),
        PeerKind::ApachePrefork | PeerKind::ApacheEvent => need(
            &format!("{}/mod_ssl.so", lab_peers::APACHE_MODULES),
            "apache2",
        ),
        PeerKind::Flint | PeerKind::Nginx | PeerKind::H2o | PeerKind::Caddy => None,
    }
}

pub(super) fn run(lab: &mut Lab) -> Result<(), super::LabError> {
    let sizes = lab.opts.tls_sizes();
    writeln!(
        lab.out,
        "\n== tls: handshakes ({HANDSHAKE_CLIENTS} clients, HTTP/1.0, full and resumed, ECDSA \
         P-256 and RSA-2048), keep-alive syscalls (the microscape page, {KEEPALIVE_CLIENTS} \
         client) and the IO-Lite sweep ({SIZES_CLIENTS} clients, {} sizes, ECDSA); {}",
        sizes.len(),
        lab.opts.each()
    )?;
    let dir = tempfile::Builder::new()
        .prefix("flint-lab-certs.")
        .tempdir()
        .map_err(super::LabError::TempDir)?;
    // Made once for every server: the comparison is of servers, not of keys that differ.
    let mut keys = Vec::new();
    for kind in CertKind::ALL {
        keys.push((kind, certs::write(kind, dir.path())?));
    }
    // The small document of the handshake rows: the sweep's smallest.
    let small = sizes.first().copied().unwrap_or(docroot::IO_LITE_SIZES[0]);
    let mut rows: Vec<ResultRow> = Vec::new();
    for kind in lab.runnable(Experiment::Tls) {
        if let Some(why) = missing_tls(kind) {
            writeln!(lab.out, "{kind:<14} {why}")?;
            lab.failed(kind, "tls", &why)?;
            continue;
        }
        for (cert, files) in &keys {
            if lab.stopped() {
                break;
            }
            let with_sweep = *cert == CertKind::EcdsaP256;
            let clients = if with_sweep {
                SIZES_CLIENTS
            } else {
                HANDSHAKE_CLIENTS
            };
            let spec = lab_peers::PeerSpec {
                tls: Some(files.clone()),
                ..lab.spec(false, clients)
            };
            let mut peer = match Peer::start(kind, &spec) {
                Ok(p) => p,
                Err(e) => {
                    lab.failed(kind, &format!("start with {cert}"), &e.to_string())?;
                    continue;
                }
            };
            let mut plan: Vec<Item> = HANDSHAKES
                .iter()
                .map(|&(name, resume)| Item::Handshake { name, resume })
                .collect();
            if with_sweep {
                plan.push(Item::KeepAlive);
                plan.extend(sizes.iter().map(|&s| Item::Size(s)));
            }
            for item in plan {
                if lab.stopped() {
                    break;
                }
                if let Some(row) = measure_one(lab, &mut peer, *cert, files, item, small)? {
                    print_row(lab, &row)?;
                    if !row.interrupted {
                        rows.push(row.clone());
                    }
                    lab.push(row);
                }
            }
            if let Err(e) = peer.stop() {
                lab.failed(kind, "stop", &e.to_string())?;
            }
        }
    }
    summary(lab, &rows, &sizes)?;
    Ok(())
}

/// One measurement of the plan.
#[derive(Debug, Clone, Copy)]
enum Item {
    Handshake { name: &'static str, resume: bool },
    KeepAlive,
    Size(u64),
}

fn measure_one(
    lab: &mut Lab,
    peer: &mut Peer,
    cert: CertKind,
    files: &TlsFiles,
    item: Item,
    small: u64,
) -> io::Result<Option<ResultRow>> {
    let (workload, clients, mode, resume, what, size) = match item {
        Item::Handshake { name, resume } => (
            docroot::single_file_workload(&docroot::size_path(small)),
            HANDSHAKE_CLIENTS,
            HttpMode::Http10,
            resume,
            format!("tls {cert} {name} handshakes"),
            None,
        ),
        Item::KeepAlive => (
            docroot::microscape_workload(),
            KEEPALIVE_CLIENTS,
            HttpMode::KeepAlive,
            false,
            format!("tls {cert} keep-alive"),
            None,
        ),
        Item::Size(size) => (
            docroot::single_file_workload(&docroot::size_path(size)),
            SIZES_CLIENTS,
            HttpMode::KeepAlive,
            false,
            format!("tls {cert} {}", table::size(size)),
            Some(size),
        ),
    };
    let load = lab.load(clients, mode);
    // The client trusts exactly the lab's certificate.
    let tls = TlsOptions {
        cacert: Some(files.cert.clone()),
        insecure: false,
        resume,
        version: None,
        ciphers: None,
    };
    let Some(m) = lab.measure_with(peer, load, &what, |peer, method, stop| {
        measure::measure_tls(peer, SERVER_NAME, tls, &workload, load, method, stop)
    })?
    else {
        return Ok(None);
    };
    let mut row = ResultRow::new(Experiment::Tls, peer.kind(), mode, size, &m);
    row.certificate = Some(cert.name().to_owned());
    row.tls_handshakes = Some(m.run.stats.tls_handshakes);
    row.tls_resumed = Some(m.run.stats.tls_resumed);
    if let Item::Handshake { name, .. } = item {
        row.handshake = Some(name.to_owned());
    }
    Ok(Some(row))
}

fn label(row: &ResultRow) -> String {
    match (row.handshake.as_deref(), row.size_bytes) {
        (Some(h), _) => format!("{h} handshakes"),
        (None, Some(size)) => table::size(size),
        (None, None) => format!("{} page", row.mode.name()),
    }
}

fn print_row(lab: &mut Lab, row: &ResultRow) -> io::Result<()> {
    let cert = row.certificate.as_deref().unwrap_or("-");
    if row.interrupted {
        return writeln!(
            lab.out,
            "{:<14} {cert:<10} {:>18}  interrupted after {:.2} s (Ctrl-C)",
            row.server,
            label(row),
            row.duration_s
        );
    }
    if let Some(why) = &row.unavailable {
        return writeln!(
            lab.out,
            "{:<14} {cert:<10} {:>18}  {why}",
            row.server,
            label(row)
        );
    }
    writeln!(
        lab.out,
        "{:<14} {cert:<10} {:>18}  {:>9} req/s  {:>8} MB/s  CPU {:>6} µs/req  \
         syscalls {:>5}/req  errors {}{}",
        row.server,
        label(row),
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
    )
}

/// The tables: handshakes per server and key; keep-alive syscalls; bandwidth per size.
fn summary(lab: &mut Lab, rows: &[ResultRow], sizes: &[u64]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut servers: Vec<&str> = Vec::new();
    for r in rows {
        if !servers.contains(&r.server.as_str()) {
            servers.push(&r.server);
        }
    }
    let find = |server: &str, pred: &dyn Fn(&ResultRow) -> bool| {
        rows.iter().find(|r| r.server == server && pred(r))
    };
    // A row that measured nothing has no figure to show: `-`, as a row not run.
    let cell = |r: Option<&ResultRow>, f: &dyn Fn(&ResultRow) -> String| {
        r.filter(|r| r.measured()).map_or("-".to_owned(), |r| {
            format!("{}{}", f(r), table::mark(r.client_limited))
        })
    };

    let mut t = table::Table::new([
        "server",
        "certificate",
        "full/s",
        "resumed/s",
        "CPU µs/full",
        "CPU µs/resumed",
    ]);
    for server in &servers {
        for cert in CertKind::ALL {
            let hs = |name: &str| {
                find(server, &|r| {
                    r.certificate.as_deref() == Some(cert.name())
                        && r.handshake.as_deref() == Some(name)
                })
            };
            let (full, resumed) = (hs("full"), hs("resumed"));
            if full.is_none() && resumed.is_none() {
                continue;
            }
            let rate = |r: &ResultRow| table::num(Some(r.requests_per_s));
            let cpu = |r: &ResultRow| table::num(r.server_cpu_us_per_request);
            t.row(vec![
                (*server).to_owned(),
                cert.name().to_owned(),
                cell(full, &rate),
                cell(resumed, &rate),
                cell(full, &cpu),
                cell(resumed, &cpu),
            ]);
        }
    }
    if !t.is_empty() {
        writeln!(
            lab.out,
            "\ntls: handshakes per second (HTTP/1.0, a handshake per request)\n{}",
            t.render()
        )?;
    }

    let mut t = table::Table::new(["server", "req/s", "syscalls/req", "CPU µs/req"]);
    for server in &servers {
        let r = find(server, &|r| r.handshake.is_none() && r.size_bytes.is_none());
        if r.is_none() {
            continue;
        }
        t.row(vec![
            (*server).to_owned(),
            cell(r, &|r| table::num(Some(r.requests_per_s))),
            cell(r, &|r| table::num(r.syscalls_per_request)),
            cell(r, &|r| table::num(r.server_cpu_us_per_request)),
        ]);
    }
    if !t.is_empty() {
        writeln!(
            lab.out,
            "\ntls: keep-alive, the microscape page over one connection\n{}",
            t.render()
        )?;
    }

    let mut t = table::Table::new(
        std::iter::once("size".to_owned()).chain(servers.iter().map(|s| s.to_string())),
    );
    for &size in sizes {
        let mut cells = vec![table::size(size)];
        for server in &servers {
            let r = find(server, &|r| r.size_bytes == Some(size));
            cells.push(cell(r, &|r| table::mb_per_s(r.bytes_per_s)));
        }
        t.row(cells);
    }
    if rows.iter().any(|r| r.size_bytes.is_some()) {
        writeln!(
            lab.out,
            "\ntls: output bandwidth over HTTPS, MB/s (ECDSA P-256)\n{}",
            t.render()
        )?;
    }
    lab.footnote(rows.iter().any(|r| r.client_limited))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flint_and_nginx_always_have_tls_and_lighttpd_needs_its_module() {
        assert_eq!(missing_tls(PeerKind::Flint), None);
        assert_eq!(missing_tls(PeerKind::Nginx), None);
        let lighttpd = missing_tls(PeerKind::Lighttpd);
        assert_eq!(
            lighttpd.is_some(),
            !Path::new(LIGHTTPD_OPENSSL).exists(),
            "{lighttpd:?}"
        );
        if let Some(why) = lighttpd {
            assert!(why.contains("lighttpd-mod-openssl"), "{why}");
        }
    }

    #[test]
    fn the_plan_counts_both_keys_handshakes_and_one_sweep() {
        let mut opts = LabOptions::new(None);
        opts.sizes = vec![500, 1024, 2048];
        assert_eq!(opts.tls_sizes(), [500, 2048]);
        assert_eq!(runs_per_server(&opts), 2 * 2 + 1 + 2);
    }
}
