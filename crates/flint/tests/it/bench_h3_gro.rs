//! `flint bench --http 3` reads with `recvmmsg` and UDP GRO and sends with UDP GSO (the
//! `http3::udp` module flint serve uses too): a 1 MiB file downloaded from `flint serve`
//! (whose GSO batches the kernel hands a GRO socket as one message on loopback) comes whole,
//! in more datagrams a receive call than one `recvmmsg` has messages (GRO's bursts), and
//! `summary.http3` says GRO ran. With `FLINT_H3_NO_GRO` set in the bench's environment alone
//! (its own process: the switch is read once a thread) the same download comes whole one
//! datagram a message, and the summary says every connection went without GRO. Every
//! process is stopped by its PID.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{flint, run_bounded, started_server, Server};
use serde_json::Value;
use test_support::certs::{KeyKind, SelfSigned};

const MIB: usize = 1 << 20;
/// Pages (one file each) a run fetches.
const PAGES: u64 = 3;
/// Messages one `recvmmsg` reads at most (`http3::udp::recv::SLOTS`).
const SLOTS: u64 = 16;

/// `flint serve` over HTTPS (HTTP/3 on its UDP port) serving `1m.bin` from `cert`'s directory.
fn serve(cert: &SelfSigned) -> Server {
    let body: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    std::fs::write(cert.dir().join("1m.bin"), body).unwrap();
    let child = flint()
        .args([
            "serve",
            cert.dir().to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--threads", "1", "--http3", "--tls-cert"])
        .arg(&cert.cert)
        .arg("--tls-key")
        .arg(&cert.key)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint serve");
    started_server(child, "https", true)
}

/// `flint bench --http 3` fetching `/1m.bin` [`PAGES`] times on one connection, with `env`
/// set in its environment: its `summary`.
fn bench(server: &Server, env: &[(&str, &str)]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let url = format!("https://{}", server.addr);
    let out = run_bounded(
        flint()
            .args(["bench", &url, "/1m.bin", "--http", "3", "-k"])
            .args(["-c", "1", "-t", "1", "-n", &PAGES.to_string()])
            .args(["-q", "--report", "none", "--timeout", "30s", "--json"])
            .arg(&json)
            .envs(env.iter().copied()),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["summary"].clone()
}

fn count(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {key} in {v}"))
}

/// The downloads came whole and without error; `summary.http3`.
fn whole(summary: &Value) -> &Value {
    assert_eq!(count(summary, "errors"), 0, "{summary}");
    assert_eq!(count(summary, "requests"), PAGES, "{summary}");
    assert_eq!(
        count(summary, "bytes_body"),
        PAGES * MIB as u64,
        "{summary}"
    );
    let h3 = &summary["http3"];
    assert!(count(h3, "connections") >= 1, "{h3}");
    // Hundreds of datagrams a MiB.
    assert!(count(h3, "datagrams_received") > PAGES * 500, "{h3}");
    assert!(count(h3, "send_calls") >= 1, "{h3}");
    assert!(
        count(h3, "datagrams_sent") >= count(h3, "send_calls"),
        "{h3}"
    );
    assert_eq!(count(h3, "recvmmsg_off"), 0, "{h3}");
    h3
}

#[test]
fn bench_over_http3_reads_coalesced_bursts_with_gro_and_one_datagram_a_message_without() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    let server = serve(&cert);

    let on = bench(&server, &[]);
    let h3 = whole(&on);
    let (datagrams, calls) = (count(h3, "datagrams_received"), count(h3, "recv_calls"));
    // More datagrams a call than one `recvmmsg` has messages: only GRO's bursts give that
    // (one `recv` a datagram gave fewer than one a call; about 80 a call here, at load 12).
    assert!(datagrams > SLOTS * calls, "{h3}");
    assert_eq!(count(h3, "gro_off"), 0, "{h3}");

    let off = bench(&server, &[("FLINT_H3_NO_GRO", "1")]);
    let h3 = whole(&off);
    assert_eq!(count(h3, "gro_off"), count(h3, "connections"), "{h3}");
    // One datagram a message: at most SLOTS a recvmmsg.
    let (datagrams, calls) = (count(h3, "datagrams_received"), count(h3, "recv_calls"));
    assert!(datagrams <= SLOTS * calls, "{h3}");
}
