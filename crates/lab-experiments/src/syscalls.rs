//! `flint lab syscalls`: the page experiment, grown from the Jigsaw syscall notes.
//!
//! Henrik Frystyk Nielsen ran truss on Jigsaw while a browser or the Libwww robot fetched the
//! microscape page (1 HTML + 43 GIFs), and found that HTTP/1.1 with pipelining cut the server's
//! system calls; the paper the notes cite ("Network Performance Effects of HTTP/1.1, CSS1, and
//! PNG") counted packets and elapsed time for the same page over a LAN and a WAN. Here one client
//! fetches the same page shape from each peer in each way of [`PageMode`] (HTTP/1.0, persistent,
//! pipelined, four connections at a time, six persistent connections, HTTP/2, HTTP/3 over TLS
//! alone), over cleartext and over TLS, for each round trip asked (`--rtt`): the peer's syscall table, its CPU, the packets
//! and bytes on the wire per page in each direction (counted on the network path, `netpath.rs`),
//! connections and the page time. A way a server (or the client) cannot fetch the page is a row
//! that says why, in every table.

use super::certs::{self, CertKind, SERVER_NAME};
use super::measure::{self, Load};
use super::netpath::{Delay, NetPath};
use super::page::PageMode;
use super::{docroot, table, tls, Experiment, Lab, ResultRow, SYSCALLS_CLIENTS};
use bench::config::TlsOptions;
use lab_peers::{Peer, PeerKind, PeerNet, TlsFiles};
use std::io;
use std::time::Duration;

/// Pages per measurement over a round trip: a page over HTTP/1.0 at 50 ms takes seconds, so a
/// round trip's measurements count pages rather than run for `-d`.
pub const RTT_PAGES: u64 = 5;

/// Why a server has no TLS rows although its TLS works: the lab runs one Apache over TLS.
const PREFORK_TLS: &str = "not run: over TLS the lab runs Apache's event MPM";

/// Measurements the experiment makes per server and round trip.
pub(super) fn runs_per_server(kind: PeerKind, modes: &[PageMode]) -> usize {
    let runs = |tls: bool| {
        modes
            .iter()
            .filter(|m| m.unavailable(kind, tls).is_none())
            .count()
    };
    if kind == PeerKind::ApachePrefork {
        runs(false)
    } else {
        runs(false) + runs(true)
    }
}

/// What a peer is started with for a group of ways: HTTP/2 on, HTTP/3 on (its UDP port open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Protocols {
    http2: bool,
    http3: bool,
}

/// The peers one server is started as, in order: the HTTP/1 ways on one with neither, `h2` on
/// one with HTTP/2, `h3` on one with HTTP/3 (so no other way meets a server with a UDP port
/// open and an Alt-Svc line in every response).
const PEER_PROTOCOLS: [Protocols; 3] = [
    Protocols {
        http2: false,
        http3: false,
    },
    Protocols {
        http2: true,
        http3: false,
    },
    Protocols {
        http2: false,
        http3: true,
    },
];

impl Protocols {
    fn of(mode: PageMode) -> Protocols {
        Protocols {
            http2: mode.needs_http2(),
            http3: mode.needs_http3(),
        }
    }

    /// ` (TLS, HTTP/2 on)`, or nothing for a cleartext HTTP/1 peer.
    fn label(self, over_tls: bool) -> String {
        let mut parts = Vec::new();
        if over_tls {
            parts.push("TLS");
        }
        if self.http2 {
            parts.push("HTTP/2 on");
        }
        if self.http3 {
            parts.push("HTTP/3 on");
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    }
}

pub(super) fn run(lab: &mut Lab) -> Result<(), super::LabError> {
    let rtts = lab.opts.rtts.clone();
    writeln!(
        lab.out,
        "\n== syscalls (the Jigsaw syscall notes; packets and round trips as in \"Network \
         Performance Effects of HTTP/1.1, CSS1, and PNG\"): the microscape page (1 HTML + 43 \
         GIFs, {} B), {SYSCALLS_CLIENTS} client, {} {}, cleartext and TLS; round trips {}; {}",
        page_bytes(),
        lab.opts.page_modes.len(),
        if lab.opts.page_modes.len() == 1 {
            "way"
        } else {
            "ways"
        },
        rtts.iter()
            .map(|r| table::rtt(*r))
            .collect::<Vec<_>>()
            .join(", "),
        if let Some(n) = lab.opts.pages {
            format!("{n} pages each")
        } else if rtts.iter().any(|r| !r.is_zero()) {
            format!(
                "{} s each at 0, {RTT_PAGES} pages each over a round trip",
                lab.opts.duration.as_secs_f64()
            )
        } else {
            format!("{} s each", lab.opts.duration.as_secs_f64())
        }
    )?;
    let certs_dir = tempfile::Builder::new()
        .prefix("flint-lab-page-certs.")
        .tempdir()
        .map_err(super::LabError::TempDir)?;
    let files = certs::write(CertKind::EcdsaP256, certs_dir.path())?;
    let mut shown: Vec<ResultRow> = Vec::new();
    for rtt in rtts {
        if lab.stopped() {
            break;
        }
        let path = match NetPath::new(rtt) {
            Ok(p) => Some(p),
            Err(e) if rtt.is_zero() => {
                lab.note(&format!(
                    "no network path ({e}; it needs root and iproute2): loopback, without \
                     packet counts"
                ))?;
                None
            }
            Err(e) => {
                lab.note(&format!(
                    "round trip {}: no network path ({e}); not measured",
                    table::rtt(rtt)
                ))?;
                continue;
            }
        };
        let here = path.as_ref().map(|p| (p.rtt(), p.delay()));
        if let Some(p) = &path {
            writeln!(
                lab.out,
                "\n-- round trip {}: client and server in network namespaces joined by veth \
                 pairs; delay: {}",
                table::rtt(rtt),
                match p.delay() {
                    Delay::None => "none".to_owned(),
                    Delay::Netem => "tc netem, half the round trip each way".to_owned(),
                    Delay::DelayLine => "the lab's TUN delay line, half the round trip each way \
                         (this kernel has no netem)"
                        .to_owned(),
                }
            )?;
        }
        // This thread, and the bench threads it starts, in the client's namespace.
        let _inside = match path.as_ref().map(NetPath::enter_client).transpose() {
            Ok(g) => g,
            Err(e) => {
                lab.note(&format!("entering the client namespace: {e}"))?;
                continue;
            }
        };
        for kind in lab.runnable(Experiment::Syscalls) {
            for over_tls in [false, true] {
                if lab.stopped() {
                    break;
                }
                server(lab, kind, over_tls, path.as_ref(), here, &files, &mut shown)?;
            }
        }
        if let Some(p) = &path {
            if p.dropped() > 0 {
                lab.note(&format!(
                    "the delay line dropped {} packets (its queue was full)",
                    p.dropped()
                ))?;
            }
        }
    }
    summary(lab, &shown)?;
    Ok(())
}

/// Every mode against one server, over cleartext or TLS.
fn server(
    lab: &mut Lab,
    kind: PeerKind,
    over_tls: bool,
    path: Option<&NetPath>,
    here: Option<(Duration, Delay)>,
    files: &TlsFiles,
    shown: &mut Vec<ResultRow>,
) -> io::Result<()> {
    let why_not = match (over_tls, kind) {
        (true, PeerKind::ApachePrefork) => Some(PREFORK_TLS.to_owned()),
        (true, _) => tls::missing_tls(kind),
        _ => None,
    };
    let modes = lab.opts.page_modes.clone();
    if let Some(why) = why_not {
        for &mode in &modes {
            unavailable(lab, kind, mode, over_tls, here, &why, shown)?;
        }
        return Ok(());
    }
    for protocols in PEER_PROTOCOLS {
        let group: Vec<PageMode> = modes
            .iter()
            .copied()
            .filter(|&m| Protocols::of(m) == protocols)
            .collect();
        let mut run: Vec<PageMode> = Vec::new();
        for mode in group {
            match mode.unavailable(kind, over_tls) {
                Some(why) => unavailable(lab, kind, mode, over_tls, here, &why, shown)?,
                None => run.push(mode),
            }
        }
        if !run.is_empty() && !lab.stopped() {
            with_peer(
                lab, kind, over_tls, protocols, &run, path, here, files, shown,
            )?;
        }
    }
    Ok(())
}

/// Starts `kind` (with HTTP/2 or HTTP/3 on as `protocols` says) and measures `modes` against it.
#[allow(clippy::too_many_arguments)]
fn with_peer(
    lab: &mut Lab,
    kind: PeerKind,
    over_tls: bool,
    protocols: Protocols,
    modes: &[PageMode],
    path: Option<&NetPath>,
    here: Option<(Duration, Delay)>,
    files: &TlsFiles,
    shown: &mut Vec<ResultRow>,
) -> io::Result<()> {
    let max_clients = modes.iter().map(|m| m.connections()).max();
    let spec = lab_peers::PeerSpec {
        tls: over_tls.then(|| TlsFiles {
            http3: protocols.http3,
            ..files.clone()
        }),
        http2: protocols.http2,
        net: path.map(|p| PeerNet {
            netns: p.server_netns().to_owned(),
            addr: super::netpath::SERVER_ADDR,
        }),
        ..lab.spec(false, max_clients.unwrap_or(1))
    };
    let mut peer = match Peer::start(kind, &spec) {
        Ok(p) => p,
        Err(e) => {
            let what = format!("start{}", protocols.label(over_tls));
            lab.failed(kind, &what, &e.to_string())?;
            return Ok(());
        }
    };
    // The round trip as TCP sees it, before anything else runs: the check on the delay.
    let probed = path
        .filter(|p| !p.rtt().is_zero())
        .and_then(|_| NetPath::probe_rtt(peer.addr(), 5).ok());
    if let (Some(p), Some(probed)) = (path, probed) {
        writeln!(
            lab.out,
            "\n-- {kind}{}: round trip measured {:.1} ms (median of 5 TCP connects; asked {}, \
             {})",
            protocols.label(over_tls),
            probed.as_secs_f64() * 1e3,
            table::rtt(p.rtt()),
            p.delay().name()
        )?;
    }
    let client_tls = TlsOptions {
        cacert: Some(files.cert.clone()),
        insecure: false,
        resume: false,
        version: None,
        ciphers: None,
    };
    let workload = docroot::microscape_workload();
    for &mode in modes {
        if lab.stopped() {
            break;
        }
        // One client; the shared ways give it their 4 or 6 connections, as a browser has them.
        let load = Load {
            pages: lab
                .opts
                .pages
                .or(here.filter(|(r, _)| !r.is_zero()).map(|_| RTT_PAGES)),
            per_client: mode.connections(),
            ..lab.load(1, mode.http())
        };
        let what = format!(
            "syscalls {}{}{}",
            mode.name(),
            if over_tls { " tls" } else { "" },
            here.map_or(String::new(), |(r, _)| format!(" rtt {}", table::rtt(r)))
        );
        let tls_arg = over_tls.then_some((SERVER_NAME, &client_tls));
        let Some(m) =
            lab.measure_with(&mut peer, load, &what, |peer, method, stop| match path {
                Some(path) => {
                    measure::measure_on_path(peer, tls_arg, &workload, load, method, stop, path)
                }
                None => match tls_arg {
                    Some((name, t)) => {
                        measure::measure_tls(peer, name, t.clone(), &workload, load, method, stop)
                    }
                    None => measure::measure(peer, &workload, load, method, stop),
                },
            })?
        else {
            continue;
        };
        let mut row = ResultRow::page(kind, mode, over_tls, here, &m);
        // The round trip the row's own connections met (their median connect, under the run's
        // own load), not the probe taken once before the server's runs; the probe when the
        // run opened none in its window, and for `h3`, whose connect is QUIC's whole handshake
        // (a round trip and both ends' TLS work), not a TCP connect.
        row.rtt_measured_ms = row
            .connect_ms_p50
            .filter(|_| probed.is_some() && mode != PageMode::H3)
            .or(probed.map(|d| d.as_secs_f64() * 1e3));
        print_table(lab, &peer, &row, &m)?;
        if !row.interrupted {
            shown.push(row.clone());
        }
        lab.push(row);
    }
    if let Err(e) = peer.stop() {
        lab.failed(kind, "stop", &e.to_string())?;
    }
    Ok(())
}

fn unavailable(
    lab: &mut Lab,
    kind: PeerKind,
    mode: PageMode,
    over_tls: bool,
    here: Option<(Duration, Delay)>,
    why: &str,
    shown: &mut Vec<ResultRow>,
) -> io::Result<()> {
    let row = ResultRow::unavailable(kind, mode, over_tls, here, why);
    writeln!(
        lab.out,
        "\n-- {kind}, {}: not available: {why}",
        label(&row)
    )?;
    shown.push(row.clone());
    lab.push(row);
    Ok(())
}

/// `keepalive-6 tls rtt 10 ms`.
fn label(r: &ResultRow) -> String {
    format!(
        "{}{}{}",
        r.page_mode.as_deref().unwrap_or(r.mode.name()),
        if r.tls == Some(true) { " tls" } else { "" },
        r.rtt_ms
            .filter(|ms| *ms > 0.0)
            .map_or(String::new(), |ms| format!(" rtt {ms} ms"))
    )
}

/// One measurement's truss table and the page's figures.
fn print_table(
    lab: &mut Lab,
    peer: &Peer,
    row: &ResultRow,
    m: &measure::Measurement,
) -> io::Result<()> {
    let kind = peer.kind();
    let pages = m.run.stats.pages_done;
    if row.interrupted {
        writeln!(
            lab.out,
            "\n-- {kind} ({}), {}: interrupted after {:.2} s (Ctrl-C)",
            peer.version(),
            label(row),
            row.duration_s
        )?;
        return Ok(());
    }
    writeln!(
        lab.out,
        "\n-- {kind} ({}), {}: {} requests, {pages} pages in {:.2} s; server CPU {} µs/request; \
         page {} ms p50, {} ms p99; {} connections/page{}{}",
        peer.version(),
        label(row),
        row.requests,
        row.duration_s,
        table::num(row.server_cpu_us_per_request),
        table::num(row.page_ms_p50),
        table::num(row.page_ms_p99),
        table::num(row.connections_per_page),
        row.wire.map_or(String::new(), |w| format!(
            "; per page {:.0} packets / {} to the server, {:.0} / {} to the client",
            w.packets_to_server,
            table::size(w.bytes_to_server as u64),
            w.packets_to_client,
            table::size(w.bytes_to_client as u64),
        )),
        row.connect_ms_p50
            .filter(|_| row.rtt_ms.is_some_and(|r| r > 0.0))
            .map_or(String::new(), |c| if row.rtt_measured_ms == Some(c) {
                format!("; connect {c:.1} ms p50 (the round trip measured)")
            } else {
                format!("; connect {c:.1} ms p50")
            }),
    )?;
    if let Some(p) = &m.profile {
        lab.truss(p, row.requests, pages)?;
    }
    Ok(())
}

/// The summary: one line per server, mode, TLS and round trip; then page time against round
/// trip per mode.
fn summary(lab: &mut Lab, rows: &[ResultRow]) -> io::Result<()> {
    let mut t = table::Table::new([
        "server",
        "mode",
        "req/s",
        "syscalls/page",
        "CPU µs/page",
        "pkts→srv",
        "pkts→cli",
        "KB→cli",
        "conns",
        "page p50 ms",
        "page p99 ms",
        "errors",
    ]);
    for r in rows {
        if let Some(why) = &r.unavailable {
            t.row_then(
                vec![r.server.clone(), label(r)],
                if r.measured_nothing() {
                    why.clone()
                } else {
                    format!("not available: {why}")
                },
            );
            continue;
        }
        // Every page is the same 44 files: per page is per request times 44.
        let per_page = |x: Option<f64>| x.map(|x| x * PAGE_FILES as f64);
        t.row(vec![
            r.server.clone(),
            label(r),
            format!(
                "{}{}",
                table::num(Some(r.requests_per_s)),
                table::mark(r.client_limited)
            ),
            table::num(per_page(r.syscalls_per_request)),
            table::num(per_page(r.server_cpu_us_per_request)),
            table::num(r.wire.map(|w| w.packets_to_server)),
            table::num(r.wire.map(|w| w.packets_to_client)),
            table::num(r.wire.map(|w| w.bytes_to_client / 1024.0)),
            table::num(r.connections_per_page),
            table::num(r.page_ms_p50),
            table::num(r.page_ms_p99),
            r.errors.to_string(),
        ]);
    }
    if !t.is_empty() {
        writeln!(lab.out, "\nsyscalls: summary (per page)\n{}", t.render())?;
        lab.footnote(rows.iter().any(|r| r.client_limited))?;
    }
    page_time_table(lab, rows)
}

/// Page time (p50) against round trip: a line per server, mode and TLS, a column per round trip.
fn page_time_table(lab: &mut Lab, rows: &[ResultRow]) -> io::Result<()> {
    let mut rtts: Vec<f64> = rows.iter().filter_map(|r| r.rtt_ms).collect();
    rtts.sort_by(f64::total_cmp);
    rtts.dedup();
    if rtts.len() < 2 {
        return Ok(());
    }
    let mut headers = vec!["server".to_owned(), "mode".to_owned()];
    headers.extend(rtts.iter().map(|r| format!("{r} ms")));
    let mut t = table::Table::new(headers);
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let key = (r.server.clone(), label_without_rtt(r));
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (server, mode) in keys {
        let mut cells = vec![server.clone(), mode.clone()];
        for rtt in &rtts {
            let r = rows.iter().find(|r| {
                r.server == server && label_without_rtt(r) == mode && r.rtt_ms == Some(*rtt)
            });
            cells.push(match r {
                Some(r) if r.unavailable.is_some() => "n/a".into(),
                Some(r) => table::num(r.page_ms_p50),
                None => "-".into(),
            });
        }
        t.row(cells);
    }
    writeln!(
        lab.out,
        "\nsyscalls: page time p50 (ms) against round trip\n{}",
        t.render()
    )
}

fn label_without_rtt(r: &ResultRow) -> String {
    format!(
        "{}{}",
        r.page_mode.as_deref().unwrap_or(r.mode.name()),
        if r.tls == Some(true) { " tls" } else { "" }
    )
}

/// Files per page: the HTML and its 43 images.
const PAGE_FILES: usize = docroot::MICROSCAPE_GIFS.len() + 1;

fn page_bytes() -> u64 {
    docroot::MICROSCAPE_HTML + docroot::MICROSCAPE_GIFS.iter().sum::<u64>()
}
