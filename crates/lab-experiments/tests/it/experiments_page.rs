//! The page experiment (`flint lab syscalls`) end to end on the installed peers: every way of
//! fetching the page (HTTP/2 and HTTP/3 included), every peer that can, cleartext and TLS, on the
//! network path; Apache prefork's h2 row and the h3 rows of servers without HTTP/3 saying why they
//! are not there; round trips through the delay line, over TCP and over QUIC; and the path's
//! packet counts held against tcpdump on the same veth.
//!
//! They need root (network namespaces), iproute2 and the peers (scripts/install-peers.sh) and
//! tcpdump (scripts/install-deps.sh), and fail naming what is missing. The namespaces are
//! removed by the path's drop whatever happens, and every process is stopped by its group.

use crate::common;

use common::run_lab;
use lab_experiments::netpath::{NetPath, SERVER_ADDR, SERVER_IF};
use lab_experiments::{
    self as experiments, Experiment, LabOptions, PageMode, MICROSCAPE_GIFS, MICROSCAPE_HTML,
};
use lab_peers::{Peer, PeerKind, PeerNet, PeerSpec};
use lab_process::{Group, StopPolicy};
use results::LabRow;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_support::flint_bin;

/// Pages per measurement: one, the fewest that has a page time and packets per page, and a page
/// count rather than a duration, so a slow (debug, loaded) client still completes it in every
/// way. The matrix's time is then mostly its server and tracer start-ups (perf takes about a
/// second to open its events).
const PAGES: u64 = 1;

fn run(opts: &LabOptions) -> (Vec<LabRow>, String) {
    let (report, text, progress) = run_lab(Experiment::Syscalls, opts, false);
    for s in &report.servers {
        assert_eq!(
            s.status,
            experiments::Status::Ok,
            "{}: {:?} (scripts/install-peers.sh installs every peer)\n{progress}",
            s.name,
            s.note
        );
    }
    let rows = report.results.iter().map(|r| r.record().clone()).collect();
    (rows, text)
}

#[test]
fn every_way_on_every_peer_over_cleartext_and_tls_counts_packets_and_page_time() {
    let servers = vec![
        PeerKind::Flint,
        PeerKind::Nginx,
        PeerKind::H2o,
        PeerKind::ApacheEvent,
        PeerKind::Lighttpd,
    ];
    let opts = LabOptions {
        warmup: Duration::ZERO,
        servers: servers.clone(),
        pages: Some(PAGES),
        ..LabOptions::new(Some(flint_bin()))
    };
    let (rows, text) = run(&opts);
    assert!(text.contains("syscalls: summary (per page)"), "{text}");
    let page_bytes = (MICROSCAPE_HTML + MICROSCAPE_GIFS.iter().sum::<u64>()) as f64;
    for kind in &servers {
        for tls in [false, true] {
            for mode in PageMode::ALL {
                let row = rows
                    .iter()
                    .find(|r| {
                        r.server == kind.name()
                            && r.tls == Some(tls)
                            && r.page_mode.as_deref() == Some(mode.name())
                    })
                    .unwrap_or_else(|| panic!("no row for {kind} {} tls {tls}", mode.name()));
                let what = format!("{kind} {} tls {tls}: {row:?}", mode.name());
                if mode == PageMode::H3 && !(tls && kind.speaks_http3()) {
                    let why = if tls {
                        experiments::H3_SERVER_MISSING
                    } else {
                        experiments::H3_NEEDS_TLS
                    };
                    assert_eq!(row.unavailable.as_deref(), Some(why), "{what}");
                    assert_eq!(row.requests, 0, "{what}");
                    continue;
                }
                assert_eq!(row.unavailable, None, "{what}");
                assert_eq!(row.errors, 0, "{what}");
                assert_eq!(row.requests, 44 * PAGES, "{what}");
                assert!(row.page_ms_p50.is_some_and(|p| p > 0.0), "{what}");
                assert!(row.page_ms_p99 >= row.page_ms_p50, "{what}");
                assert_eq!(row.delay.as_deref(), Some("none"), "{what}");
                let conns = row.connections_per_page.expect("connections");
                match mode {
                    PageMode::Http10 | PageMode::Http10x4 => assert_eq!(conns, 44.0, "{what}"),
                    PageMode::KeepAlive6 => assert_eq!(conns, 6.0, "{what}"),
                    _ => assert!(conns <= 1.0, "{what}"),
                }
                let wire = row.wire.expect("packets counted on the path");
                assert_eq!(wire.pages, PAGES, "{what}");
                // Every byte of the page went to the client, with heads and TCP/IP/Ethernet
                // headers on top; a full-size segment carries at most 1448 bytes of it.
                assert!(wire.bytes_to_client > page_bytes, "{what}");
                assert!(wire.packets_to_client >= page_bytes / 1448.0, "{what}");
                // To the server, what no coalescing can merge: each connection's SYN (it carries
                // no data without TCP Fast Open) and, over TLS, its ClientHello (sent before
                // the server's reply, the request after it); then each request written only
                // once the response before it on its connection was complete: all 44 when a
                // connection carries one request at a time, at least one packet when the page's
                // requests may share one (pipelined, HTTP/2).
                // Over QUIC the ClientHello is the first packet (no SYN before it), and the
                // requests may share the packet that finishes the handshake.
                let serial = match mode {
                    PageMode::Pipelined | PageMode::H2 | PageMode::H3 => 1.0,
                    _ => 44.0,
                };
                let handshake = conns
                    * match (tls, mode) {
                        (_, PageMode::H3) => 1.0,
                        (true, _) => 2.0,
                        (false, _) => 1.0,
                    };
                assert!(
                    wire.packets_to_server >= handshake + serial,
                    "{what}: fewer than {handshake} handshake and {serial} request packets"
                );
            }
        }
    }
    // The ways a connection per file pays for in packets: more than one persistent connection.
    let pkts = |server: &str, mode: &str| {
        rows.iter()
            .find(|r| {
                r.server == server && r.tls == Some(false) && r.page_mode.as_deref() == Some(mode)
            })
            .and_then(|r| r.wire)
            .map(|w| w.packets_to_server + w.packets_to_client)
            .expect("packets")
    };
    for kind in &servers {
        assert!(
            pkts(kind.name(), "http1.0") > pkts(kind.name(), "persistent"),
            "{kind}: a connection per file sends more packets than one connection"
        );
    }
}

#[test]
fn a_round_trip_through_the_delay_line_is_measured_by_the_connect_time() {
    let rtt = Duration::from_millis(40);
    let opts = LabOptions {
        warmup: Duration::ZERO,
        servers: vec![PeerKind::Flint],
        rtts: vec![rtt],
        page_modes: vec![PageMode::Http10x4, PageMode::KeepAlive6],
        pages: Some(2),
        profile: false,
        ..LabOptions::new(Some(flint_bin()))
    };
    let (rows, text) = run(&opts);
    assert!(text.contains("round trip 40 ms"), "{text}");
    // The probe before the server's runs checks the delay: within 20% of the round trip asked.
    let probes: Vec<f64> = text
        .split("round trip measured ")
        .skip(1)
        .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(!probes.is_empty(), "{text}");
    for probed in probes {
        assert!(
            (32.0..=48.0).contains(&probed),
            "connect {probed} ms is not within 20% of the 40 ms asked: {text}"
        );
    }
    let measured: Vec<&LabRow> = rows.iter().filter(|r| r.unavailable.is_none()).collect();
    assert_eq!(measured.len(), 4, "two ways, cleartext and TLS: {rows:?}");
    for r in measured {
        let delay = r.delay.as_deref().expect("delay");
        assert!(delay == "delay-line" || delay == "netem", "{r:?}");
        assert_eq!(r.rtt_ms, Some(40.0), "{r:?}");
        // The round trip measured is the run's own connects' (under its own load), which
        // cannot beat the round trip.
        let own = r.rtt_measured_ms.expect("the round trip measured");
        assert_eq!(r.connect_ms_p50, Some(own), "{r:?}");
        assert!(own >= 32.0, "{r:?}");
        // Each page pays at least two round trips: a connect and a request, or two requests
        // on a connection kept alive (44 files over 6 connections).
        assert!(r.page_ms_p50.is_some_and(|p| p >= 80.0), "{r:?}");
        assert_eq!(r.errors, 0, "{r:?}");
        assert_eq!(r.requests, 88, "{r:?}");
        // One client's connections: keepalive-6's six kept from the first page to the second,
        // http1.0-4's one a file.
        let conns = r.connections_per_page.expect("connections");
        match r.page_mode.as_deref() {
            Some("keepalive-6") => assert_eq!(conns, 3.0, "{r:?}"),
            _ => assert_eq!(conns, 44.0, "{r:?}"),
        }
    }
}

#[test]
fn an_h3_page_crosses_the_delay_line_over_quic_with_every_file_counted() {
    let rtt = Duration::from_millis(20);
    let servers = [PeerKind::Flint, PeerKind::Caddy];
    let opts = LabOptions {
        warmup: Duration::ZERO,
        servers: servers.to_vec(),
        rtts: vec![rtt],
        page_modes: vec![PageMode::H3],
        pages: Some(2),
        profile: false,
        ..LabOptions::new(Some(flint_bin()))
    };
    let (rows, text) = run(&opts);
    assert!(text.contains("(TLS, HTTP/3 on)"), "{text}");
    assert_eq!(rows.len(), 4, "cleartext (not available) and TLS: {rows:?}");
    for kind in servers {
        let of = |tls| {
            rows.iter()
                .find(|r| r.server == kind.name() && r.tls == Some(tls))
                .unwrap_or_else(|| panic!("{kind} tls {tls}: {rows:?}"))
        };
        assert_eq!(
            of(false).unavailable.as_deref(),
            Some(experiments::H3_NEEDS_TLS)
        );
        let r = of(true);
        assert_eq!(r.unavailable, None, "{r:?}");
        assert_eq!(r.page_mode.as_deref(), Some("h3"), "{r:?}");
        assert_eq!(r.errors, 0, "{r:?}");
        // Every file of both pages answered, over one QUIC connection kept from page to page.
        assert_eq!(r.requests, 88, "{r:?}");
        assert_eq!(r.connections_per_page, Some(0.5), "{r:?}");
        let delay = r.delay.as_deref().expect("delay");
        assert!(delay == "delay-line" || delay == "netem", "{r:?}");
        // QUIC's handshake is a round trip at least, and a page a request's round trip more;
        // the round trip measured is the TCP probe's (never below the one asked, less 20%; a
        // loaded machine's delay-line thread may add to it, so no tight upper bound), as the
        // handshake's time holds both ends' TLS work too.
        let connect = r.connect_ms_p50.expect("the QUIC handshake's time");
        assert!(connect >= 16.0, "{r:?}");
        let probed = r.rtt_measured_ms.expect("the round trip measured");
        assert!((16.0..60.0).contains(&probed), "{r:?}");
        assert!(r.page_ms_p50.is_some_and(|p| p >= 16.0), "{r:?}");
        // The page crossed the path as UDP: counted on the server's veth, its bytes and more.
        let wire = r.wire.expect("packets counted on the path");
        let page_bytes = (MICROSCAPE_HTML + MICROSCAPE_GIFS.iter().sum::<u64>()) as f64;
        assert!(wire.bytes_to_client > page_bytes, "{r:?}");
        assert!(wire.packets_to_server >= 1.0, "{r:?}");
    }
}

#[test]
fn the_path_counts_the_packets_tcpdump_sees_on_the_same_veth() {
    let tcpdump = lab_process::find_program("tcpdump")
        .expect("tcpdump (scripts/install-deps.sh installs it)");
    let path = NetPath::new(Duration::ZERO).expect("the network path (root, iproute2)");
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("index.html"), vec![b'x'; 100_000]).expect("write");
    let spec = PeerSpec {
        root: root.path().to_owned(),
        digest: false,
        max_clients: 2,
        cpu: None,
        flint_bin: Some(flint_bin()),
        ready_timeout: Duration::from_secs(20),
        tls: None,
        http2: false,
        net: Some(PeerNet {
            netns: path.server_netns().to_owned(),
            addr: SERVER_ADDR,
        }),
    };
    let inside = path.enter_client().expect("client namespace");
    let peer = Peer::start(PeerKind::Flint, &spec).expect("flint serve on the path");
    let pcap = root.path().join("s0.pcap");
    let mut capture = Group::spawn(
        Command::new("ip")
            .args(["netns", "exec", path.server_netns()])
            .arg(&tcpdump)
            .args([
                "-i",
                SERVER_IF,
                "-n",
                "--immediate-mode",
                "-U",
                "-B",
                "16384",
                "-w",
            ])
            .arg(&pcap)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
        None,
        StopPolicy::interrupt(Duration::from_secs(5)),
    )
    .expect("tcpdump");
    // tcpdump says "listening on s0" once its socket is open.
    let stderr = capture.child_mut().stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("tcpdump did not say it was listening");
        if line.contains("listening on") {
            break;
        }
    }
    let before = path.counters().expect("counters");
    for _ in 0..5 {
        let mut s = std::net::TcpStream::connect_timeout(&peer.addr(), Duration::from_secs(5))
            .expect("connect");
        use std::io::{Read, Write};
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET /index.html HTTP/1.0\r\n\r\n").unwrap();
        let mut body = Vec::new();
        s.read_to_end(&mut body).expect("read");
        assert!(body.len() > 100_000);
    }
    // The path quiet (the last FINs arrived): then the counters, then tcpdump's flush.
    let mut after = path.counters().expect("counters");
    let settle = Instant::now() + Duration::from_secs(5);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = path.counters().expect("counters");
        if now == after || Instant::now() > settle {
            break;
        }
        after = now;
    }
    let counted = after.since(&before);
    // tcpdump writes each packet as it reads it (-U, immediate mode): give it until its file
    // holds as many as the counters say (bounded), then stop it; its own count is then final.
    let written = Instant::now() + Duration::from_secs(10);
    while pcap_records(&std::fs::read(&pcap).unwrap_or_default())
        < counted.rx_packets + counted.tx_packets
        && Instant::now() < written
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = capture.stop();
    assert!(!stopped.killed, "tcpdump stops on SIGINT");
    // Its last words: how many it captured and whether the kernel dropped any.
    let mut said = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(2)) {
        said.push(line);
    }
    drop(peer);
    drop(inside);
    let netns = format!("/run/netns/{}", path.server_netns());
    drop(path);
    assert!(
        !std::path::Path::new(&netns).exists(),
        "{netns} removed with the path"
    );
    let seen = pcap_records(&std::fs::read(&pcap).expect("the capture"));
    assert!(counted.tx_packets > 5 * 100_000 / 1500, "{counted:?}");
    assert_eq!(
        counted.rx_packets + counted.tx_packets,
        seen,
        "the veth's counters against tcpdump's capture ({counted:?}; tcpdump: {said:?})"
    );
}

/// Packets in a classic pcap file (tcpdump -w): a 24-byte header, then per packet a 16-byte
/// header whose third word is the captured length, then that many bytes.
fn pcap_records(bytes: &[u8]) -> u64 {
    if bytes.len() < 24 {
        return 0;
    }
    let little = bytes[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || bytes[..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let word = |at: usize| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
        if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let (mut at, mut n) = (24usize, 0u64);
    // A record still being written is not counted.
    while at + 16 <= bytes.len() && at + 16 + word(at + 8) as usize <= bytes.len() {
        at += 16 + word(at + 8) as usize;
        n += 1;
    }
    n
}

#[test]
fn a_way_a_server_cannot_serve_is_a_row_saying_why() {
    let opts = LabOptions {
        servers: vec![PeerKind::ApachePrefork],
        page_modes: vec![PageMode::H2],
        ..LabOptions::new(Some(flint_bin()))
    };
    let (rows, text) = run(&opts);
    assert_eq!(rows.len(), 2, "cleartext and TLS: {rows:?}");
    for r in &rows {
        let why = r.unavailable.as_deref().expect("not available");
        assert_eq!(r.page_mode.as_deref(), Some("h2"));
        assert_eq!(r.requests, 0);
        assert!(r.wire.is_none() && r.page_ms_p50.is_none(), "{r:?}");
        assert!(text.contains(&format!("not available: {why}")), "{text}");
    }
    assert_eq!(
        rows[0].unavailable.as_deref(),
        Some(lab_experiments::H2_SERVER_MISSING)
    );
    assert!(text.contains("syscalls: summary (per page)"), "{text}");
}
