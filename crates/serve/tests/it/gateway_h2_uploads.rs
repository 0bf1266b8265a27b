//! HTTP/2 uploads to a gateway that takes nothing: each stream's window is reopened only by
//! what its program or application took, so what the server holds of an upload is bounded by
//! the stream's window (and what the pipe or socket to the program holds), not by the body.

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cgi_support::*;
use crate::common::*;
use crate::fcgi_support::write_file;
use crate::h2_support::{open_uploads, raw};

/// Streams uploading at once on one connection.
const STREAMS: u32 = 8;
/// Each one's body (said in `content-length`).
const BODY: usize = 1 << 20;
/// The most one stream may have had taken from it: its window (65,535) and what a pipe or a
/// unix socket to the program holds (64 KiB, about 200 KiB), with room to spare; far below
/// `BODY`.
const PER_STREAM: u64 = 512 * 1024;
/// How long the programs or the application's connections may take to be there.
const DEADLINE: Duration = Duration::from_secs(60);

/// Sends `STREAMS` POSTs to `path` on one connection, then their bodies as far as the
/// server's windows let a client go; returns the bytes each stream could send. Once `ready`
/// (every program or application connection is there to take what it would), the client
/// stops when a PING round trip after its windows are spent brings no window for any stream,
/// three times running (a round that brings one starts the count again), or once every body
/// is sent. Bounded by `DEADLINE`.
fn upload_until_held(s: &mut TcpStream, path: &str, ready: impl Fn() -> bool) -> Vec<u64> {
    let mut up = open_uploads(s, path, STREAMS, BODY);
    let chunk = vec![b'u'; 16_384];
    let mut idle_rounds = 0;
    let start = Instant::now();
    while idle_rounds < 3 && up.sent.iter().any(|&n| n < BODY as u64) {
        assert!(start.elapsed() < DEADLINE, "not ready in {DEADLINE:?}");
        let mut out = Vec::new();
        let mut moved = true;
        while moved {
            moved = false;
            for k in 0..up.ids.len() {
                let n = up.take(k, chunk.len());
                if n == 0 {
                    continue;
                }
                raw::frame(&mut out, raw::DATA, 0, up.ids[k], &chunk[..n]);
                moved = true;
            }
        }
        raw::ping(&mut out, false, [3; 8]);
        s.write_all(&out).unwrap();
        let ack = |f: &raw::Frame| f.0 == raw::PING && f.1 & raw::ACK != 0;
        let got = raw::read_until(s, |fs| fs.iter().any(ack));
        assert!(got.iter().any(ack), "closed: {got:?}");
        assert!(
            !got.iter()
                .any(|f| f.0 == raw::RST_STREAM || f.0 == raw::GOAWAY),
            "{got:?}"
        );
        let mut opened = false;
        for f in got.iter().filter(|f| f.0 == raw::WINDOW_UPDATE) {
            let inc = i64::from(u32::from_be_bytes(f.3[..4].try_into().unwrap()));
            opened |= up.window_update(f.2, inc);
        }
        // Taken before the programs were all there: they may take more.
        let ready = ready();
        idle_rounds = if opened || !ready { 0 } else { idle_rounds + 1 };
        if !ready {
            // Not a bound: a pause between polls while the programs start.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    up.sent
}

fn assert_held_by_windows(sent: &[u64]) {
    for (k, &n) in sent.iter().enumerate() {
        assert!(
            n <= PER_STREAM,
            "stream {} sent {n} of {BODY} bytes to a gateway that takes nothing: {sent:?}",
            1 + 2 * k
        );
    }
}

#[test]
fn over_http2_uploads_to_a_program_that_reads_nothing_are_held_by_their_windows() {
    let scripts = Scripts::new();
    // Each says it started (the server writes to its stdin from then on).
    let started = tempfile::tempdir().unwrap();
    let marker = started.path().display();
    scripts.add("sit", &format!("touch {marker}/$$\nexec sleep 30\n"));
    let srv = start(&scripts, |c| {
        c.max_body_bytes = 4 * BODY as u64;
        c.cgi_max_programs = STREAMS as usize;
    });
    let mut s = connect(srv.addr);
    let count = || std::fs::read_dir(started.path()).unwrap().count();
    let sent = upload_until_held(&mut s, "/cgi-bin/sit", || count() == STREAMS as usize);
    assert_held_by_windows(&sent);
    drop(s);
}

#[test]
fn over_http2_uploads_to_a_fastcgi_application_that_reads_nothing_are_held_by_their_windows() {
    // An application that takes its connections and never reads them.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("deaf.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    let kept = std::thread::spawn(move || {
        let mut conns = Vec::new();
        while conns.len() < STREAMS as usize {
            match listener.accept() {
                Ok((c, _)) => conns.push(c),
                Err(_) => break,
            }
            counted.store(conns.len(), Ordering::SeqCst);
        }
        conns
    });
    let srv = TestServer::start(|c| {
        let mount = format!("/app/=unix:{}", socket.display());
        c.fastcgi.push(mount.parse().unwrap());
        c.max_body_bytes = 4 * BODY as u64;
        c.cgi_max_programs = STREAMS as usize;
    });
    write_file(srv.root.path(), "app", "");
    let mut s = connect(srv.addr);
    let sent = upload_until_held(&mut s, "/app", || {
        accepted.load(Ordering::SeqCst) == STREAMS as usize
    });
    assert_held_by_windows(&sent);
    drop(s);
    drop(srv);
    drop(kept);
}
