//! `flint bench --http 3` reads with `recvmmsg` and UDP GRO and sends with UDP GSO (the
//! `http3::udp` module flint serve uses too): a 1 MiB file downloaded from `flint serve`
//! (whose GSO batches the kernel hands a GRO socket as one message on loopback) comes whole,
//! in more datagrams a receive call than one `recvmmsg` has messages (GRO's bursts), and
//! `summary.http3` says GRO ran. With `FLINT_H3_NO_GRO` set in the bench's environment alone
//! (its own process: the switch is read once a thread) the same download comes whole one
//! datagram a message, and the summary says every connection went without GRO. An upload of
//! 1 MiB request bodies (to a CGI program that reads them) goes with UDP GSO, several
//! datagrams a send call, and with `FLINT_H3_NO_GSO` one a call. Every process is stopped by
//! its PID.

use crate::common;

use std::time::Duration;

use common::{flint, run_bounded, serve_tls, started_server, Server};
use serde_json::Value;
use test_support::certs::{KeyKind, SelfSigned};

const MIB: usize = 1 << 20;
/// Pages (one file each) a run fetches.
const PAGES: u64 = 3;
/// Messages one `recvmmsg` reads at most (`http3::udp::recv::SLOTS`).
const SLOTS: u64 = 16;

/// The switches `bench`'s environment may carry; a run has only those it is given (not the
/// test runner's).
const SWITCHES: [&str; 2] = ["FLINT_H3_NO_GRO", "FLINT_H3_NO_GSO"];

/// `flint serve` over HTTPS (HTTP/3 on its UDP port) serving `1m.bin` from `cert`'s directory,
/// and `sink.cgi`, a CGI program that reads the request body whole and answers `read`.
fn serve(cert: &SelfSigned) -> Server {
    let body: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    std::fs::write(cert.dir().join("1m.bin"), &body).unwrap();
    std::fs::write(cert.dir().join("upload.bin"), &body).unwrap();
    let sink = cert.dir().join("sink.cgi");
    let script =
        "#!/bin/sh\ncat >/dev/null\nprintf 'Content-Type: text/plain\\r\\n\\r\\nread\\n'\n";
    std::fs::write(&sink, script).unwrap();
    std::fs::set_permissions(&sink, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let args = ["--listen", "127.0.0.1:0", "--threads", "1", "--http3"];
    let mut cmd = serve_tls(cert, &[&args[..], &["--cgi-ext", ".cgi"]].concat());
    // The server batches whatever the test runner's environment says.
    for name in SWITCHES {
        cmd.env_remove(name);
    }
    let child = cmd.spawn().expect("spawn flint serve");
    started_server(child, "https", true)
}

/// `flint bench --http 3` fetching `/1m.bin` [`PAGES`] times on one connection, with `env`
/// set in its environment: its `summary`.
fn bench(server: &Server, env: &[(&str, &str)]) -> Value {
    bench_with(server, &["/1m.bin"], env)
}

/// `flint bench --http 3` with `args` (the target and its options) [`PAGES`] times on one
/// connection, with `env` (and no other of [`SWITCHES`]) in its environment: its `summary`.
fn bench_with(server: &Server, args: &[&str], env: &[(&str, &str)]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let url = format!("https://{}", server.addr);
    let mut cmd = flint();
    for name in SWITCHES {
        cmd.env_remove(name);
    }
    let out = run_bounded(
        cmd.args(["bench", &url])
            .args(args)
            .args(["--http", "3", "-k"])
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
    // Each datagram read was a QUIC packet the client could open: a burst cut apart at the
    // wrong place would leave datagrams that are no packet (handshake datagrams may hold two).
    assert!(count(h3, "packets_received") >= datagrams, "{h3}");
    // Few of the client's packets lost or sent again (its acknowledgements arrived).
    let sent = count(h3, "packets_sent");
    assert!(10 * count(h3, "packets_lost") <= sent, "{h3}");
    assert!(10 * count(h3, "retransmissions") <= sent, "{h3}");

    let off = bench(&server, &[("FLINT_H3_NO_GRO", "1")]);
    let h3 = whole(&off);
    assert_eq!(count(h3, "gro_off"), count(h3, "connections"), "{h3}");
    // One datagram a message: at most SLOTS a recvmmsg.
    let (datagrams, calls) = (count(h3, "datagrams_received"), count(h3, "recv_calls"));
    assert!(datagrams <= SLOTS * calls, "{h3}");
}

#[test]
fn bench_over_http3_uploads_with_gso_several_datagrams_a_call_and_one_a_call_without() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    let server = serve(&cert);
    let body = cert.dir().join("upload.bin");
    let body = body.to_str().unwrap();
    let upload = ["/sink.cgi", "-m", "POST", "--body-file", body];

    let uploaded = |summary: &Value| -> Value {
        assert_eq!(count(summary, "errors"), 0, "{summary}");
        assert_eq!(count(summary, "requests"), PAGES, "{summary}");
        let h3 = summary["http3"].clone();
        // Hundreds of datagrams a MiB sent, and the socket kept them all (a full buffer
        // would be a blocked send: counted, but no datagram).
        assert!(count(&h3, "datagrams_sent") > PAGES * 500, "{h3}");
        h3
    };

    let on = bench_with(&server, &upload, &[]);
    let h3 = uploaded(&on);
    assert_eq!(count(&h3, "gso_off"), 0, "{h3}");
    // One sendmsg a batch of up to 10 datagrams: more than two a call.
    assert!(
        count(&h3, "datagrams_sent") > 2 * count(&h3, "send_calls"),
        "{h3}"
    );

    let off = bench_with(&server, &upload, &[("FLINT_H3_NO_GSO", "1")]);
    let h3 = uploaded(&off);
    assert_eq!(count(&h3, "gso_off"), count(&h3, "connections"), "{h3}");
    // One datagram a call (a send the full socket buffer refused is a call without one).
    assert!(
        count(&h3, "datagrams_sent") <= count(&h3, "send_calls"),
        "{h3}"
    );
}
