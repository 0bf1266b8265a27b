//! A real peer: the crate's client fetches files from Caddy (Debian's `caddy`, HTTP/3 on by
//! default) over UDP on 127.0.0.1 and checks their bytes; Caddy's access log counts the
//! requests it served over HTTP/3. Caddy comes from scripts/install-peers.sh.

mod common;

use common::caddy;
use common::memory::Certs;
use common::udp::Driver;
use http3::{ClientEvent, Limits};
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[test]
fn files_fetched_from_caddy_over_http3_have_their_bytes() {
    let certs = Certs::new();
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("small.txt", b"hello over HTTP/3\n".to_vec()),
        (
            "large.bin",
            (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        ),
    ];
    for (name, bytes) in &files {
        std::fs::write(www.join(name), bytes).unwrap();
    }
    let log = dir.path().join("access.log");
    let caddy = caddy::start(dir.path(), &www, (&certs.cert, &certs.key), &log);
    let port = caddy.port;
    let server = format!("127.0.0.1:{port}").parse().unwrap();
    let mut config = certs.client(&Limits::default());
    // Caddy takes a moment to listen: a connection is tried again until one is ready, within
    // 20 s (an attempt to a port not yet listening gets nothing, not an error).
    let start = Instant::now();
    let mut d = loop {
        let mut d = Driver::connect(&mut config, "localhost", server);
        let t = Instant::now();
        while !d.client.is_ready() && !d.client.is_closed() && t.elapsed() < Duration::from_secs(1)
        {
            d.turn();
        }
        if d.client.is_ready() {
            break d;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "caddy never answered over HTTP/3: {:?}",
            d.client.closed()
        );
    };
    // Each file three times, all at once on the one connection.
    let mut want = HashMap::new();
    for _ in 0..3 {
        for (name, bytes) in &files {
            // The authority with its port, as a browser sends it (Caddy's access log is kept
            // by it).
            let path = format!("/{name}");
            let authority = format!("localhost:{port}");
            let fields = [
                (&b":method"[..], &b"GET"[..]),
                (b":scheme", b"https"),
                (b":authority", authority.as_bytes()),
                (b":path", path.as_bytes()),
            ];
            let s = d.client.send_request(&fields, true).unwrap();
            want.insert(s, bytes);
        }
    }
    let mut got: HashMap<u64, (u16, Vec<u8>, bool)> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    d.until(Duration::from_secs(20), |d| {
        for ev in d.turn() {
            match ev {
                ClientEvent::Response { stream, status, .. } => {
                    got.entry(stream).or_default().0 = status
                }
                ClientEvent::Data { stream } => loop {
                    let n = d.client.recv_body(stream, &mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.entry(stream)
                        .or_default()
                        .1
                        .extend_from_slice(&buf[..n]);
                },
                ClientEvent::Finished { stream } => got.entry(stream).or_default().2 = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        got.values().filter(|g| g.2).count() == want.len()
    });
    for (s, bytes) in &want {
        let g = &got[s];
        assert_eq!(g.0, 200, "stream {s}");
        assert!(
            g.1 == **bytes,
            "stream {s}: {} bytes, not the file's {}",
            g.1.len(),
            bytes.len()
        );
    }
    // Caddy's access log: one line per request, each over HTTP/3.
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let h3 = text
            .lines()
            .filter(|l| l.contains("\"proto\":\"HTTP/3.0\""))
            .count();
        if h3 == want.len() {
            assert_eq!(text.lines().count(), want.len(), "{text}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{h3} HTTP/3 lines in the log, not {}:\n{text}",
            want.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
