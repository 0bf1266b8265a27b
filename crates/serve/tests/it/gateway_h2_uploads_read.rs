//! HTTP/2 uploads of several windows to a gateway that reads them: each stream's window
//! reopens as its program or application takes the body, so every byte arrives; and one that
//! is slow to start reading holds the client's window without the client's body clock running
//! out meanwhile (the client cannot send: the time is the program's). The late reader is held
//! by a gate the client opens only once it has been unable to send for longer than the body
//! timeout, so the hold outlasts the timeout by construction, whatever the machine's load.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cgi_support::*;
use crate::common::*;
use crate::fcgi_support::{write_file, App, Scripted, Step};
use crate::h2_support::{open_uploads, raw};

/// Streams uploading at once on one connection.
const STREAMS: u32 = 4;
/// Each one's body (said in `content-length`): many windows of it.
const BODY: usize = 1 << 20;
/// How long the whole exchange may take on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(90);
/// The body timeout of the late readers' tests: generous, as the client's thread must read
/// each WINDOW_UPDATE and send the next DATA within it, which a loaded machine may delay for
/// seconds. Their programs are held past it by a gate, not by a timeout shorter than a sleep.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// A stream's answer: its status (200 if its header block starts with the indexed
/// `:status 200`), whether it was reset, and its body.
#[derive(Debug, Default)]
struct Answer {
    ok: bool,
    reset: bool,
    ended: bool,
    body: Vec<u8>,
}

/// Sends `STREAMS` POSTs of `BODY` bytes to `path` on one connection, feeding every window the
/// server opens, until each stream is answered whole or reset (bounded by `DEADLINE`).
fn upload_all(s: &mut TcpStream, path: &str) -> Vec<Answer> {
    upload(s, path, None).0
}

/// As [`upload_all`], calling `open` once the client has been unable to send for longer than
/// `BODY_TIMEOUT`; returns the answers and for how long it had been unable to then. "Unable"
/// counts from the ACK of a PING sent once every stream with bytes left had no window: the
/// server took every DATA frame before it, and no WINDOW_UPDATE came after it.
fn upload_gated(s: &mut TcpStream, path: &str, open: &dyn Fn()) -> (Vec<Answer>, Duration) {
    let (answers, held) = upload(s, path, Some(open));
    let held = held.unwrap_or_else(|| {
        panic!("not unable to send for {BODY_TIMEOUT:?} before the end: {answers:?}")
    });
    (answers, held)
}

fn upload(
    s: &mut TcpStream,
    path: &str,
    open: Option<&dyn Fn()>,
) -> (Vec<Answer>, Option<Duration>) {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut up = open_uploads(s, path, STREAMS, BODY);
    let mut answers: Vec<Answer> = up.ids.iter().map(|_| Answer::default()).collect();
    let chunk = vec![b'u'; 16_384];
    let mut input = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let start = Instant::now();
    // WINDOW_UPDATEs seen; the count when the PING in flight was sent; since when the client
    // is known unable to send; and for how long it had been when `open` was called.
    let mut updates = 0u64;
    let mut ping: Option<u64> = None;
    let mut unable: Option<Instant> = None;
    let mut held = None;
    while answers.iter().any(|a| !a.ended && !a.reset) {
        assert!(
            start.elapsed() < DEADLINE,
            "not answered in {DEADLINE:?}: sent {:?}, {answers:?}",
            up.sent
        );
        let mut out = Vec::new();
        for (k, answer) in answers.iter().enumerate() {
            if answer.reset {
                continue;
            }
            loop {
                let n = up.take(k, chunk.len());
                if n == 0 {
                    break;
                }
                let last = up.sent[k] == BODY as u64;
                let flags = if last { raw::END_STREAM } else { 0 };
                raw::frame(&mut out, raw::DATA, flags, up.ids[k], &chunk[..n]);
            }
        }
        let left = (0..up.ids.len()).any(|k| !answers[k].reset && up.sent[k] < BODY as u64);
        if let (Some(open), None) = (open, held) {
            if out.is_empty() && left && ping.is_none() && unable.is_none() {
                raw::ping(&mut out, false, updates.to_be_bytes());
                ping = Some(updates);
            }
            if let Some(was) = unable.map(|t| t.elapsed()).filter(|&d| d > BODY_TIMEOUT) {
                held = Some(was);
                open();
            }
        }
        s.write_all(&out).unwrap();
        let n = match s.read(&mut buf) {
            Ok(0) => panic!("closed: sent {:?}, {answers:?}", up.sent),
            Ok(n) => n,
            Err(e) if is_timeout(&e) => continue,
            Err(e) => panic!("read: {e}"),
        };
        input.extend_from_slice(&buf[..n]);
        let mut at = 0;
        while input.len() - at >= 9 {
            let len = u32::from_be_bytes([0, input[at], input[at + 1], input[at + 2]]) as usize;
            if input.len() - at < 9 + len {
                break;
            }
            let (kind, flags) = (input[at + 3], input[at + 4]);
            let id = u32::from_be_bytes(input[at + 5..at + 9].try_into().unwrap()) & 0x7fff_ffff;
            let payload = &input[at + 9..at + 9 + len];
            at += 9 + len;
            let k = up.ids.iter().position(|&i| i == id);
            match (kind, k) {
                (raw::SETTINGS, None) if flags & raw::ACK == 0 => {
                    let mut ack = Vec::new();
                    raw::frame(&mut ack, raw::SETTINGS, raw::ACK, 0, &[]);
                    s.write_all(&ack).unwrap();
                }
                // The PING answered (in the guard); with no WINDOW_UPDATE since it went, the
                // client is still unable to send.
                (raw::PING, None) if flags & raw::ACK != 0 && ping.take() == Some(updates) => {
                    unable = Some(Instant::now());
                }
                (raw::WINDOW_UPDATE, _) => {
                    updates += 1;
                    unable = None;
                    let inc = i64::from(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                    up.window_update(id, inc);
                }
                (raw::GOAWAY, _) => panic!("GOAWAY: sent {:?}, {answers:?}", up.sent),
                (raw::RST_STREAM, Some(k)) => answers[k].reset = true,
                (raw::HEADERS, Some(k)) => {
                    answers[k].ok = payload.first() == Some(&0x88);
                    answers[k].ended |= flags & raw::END_STREAM != 0;
                }
                (raw::DATA, Some(k)) => {
                    answers[k].body.extend_from_slice(payload);
                    answers[k].ended |= flags & raw::END_STREAM != 0;
                }
                _ => {}
            }
        }
        input.drain(..at);
    }
    (answers, held)
}

fn is_timeout(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), WouldBlock | TimedOut | Interrupted)
}

/// Every stream answered 200 with `BODY`, the byte count its program read.
fn assert_all_read(answers: &[Answer]) {
    for (k, a) in answers.iter().enumerate() {
        let said = String::from_utf8_lossy(&a.body);
        assert!(
            a.ok && !a.reset && said.trim() == BODY.to_string(),
            "stream {}: {a:?} ({said:?}); all: {answers:?}",
            1 + 2 * k
        );
    }
}

/// A CGI program printing how many bytes of its body it read.
const COUNTING_CGI: &str =
    "n=$(wc -c)\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s\\n' \"$n\"\n";

/// [`COUNTING_CGI`] reading only once `gate` exists; one that waits for it `DEADLINE` in vain
/// answers that, not a count.
fn gated_counting_cgi(gate: &Path) -> String {
    let (gate, tries) = (gate.display(), DEADLINE.as_secs() * 10);
    format!(
        "i=0\nwhile [ ! -e '{gate}' ] && [ $i -lt {tries} ]; do sleep 0.1; i=$((i+1)); done\n\
         if [ ! -e '{gate}' ]; then printf 'Content-Type: text/plain\\r\\n\\r\\nno gate\\n'; exit; fi\n\
         {COUNTING_CGI}"
    )
}

#[test]
fn over_http2_uploads_of_many_windows_reach_a_reading_program_whole() {
    let scripts = Scripts::new();
    scripts.add("count", COUNTING_CGI);
    let srv = start(&scripts, |c| {
        c.max_body_bytes = 4 * BODY as u64;
        c.cgi_max_programs = STREAMS as usize;
    });
    let mut s = connect(srv.addr);
    assert_all_read(&upload_all(&mut s, "/cgi-bin/count"));
    assert_eq!(srv.stats().body_timeouts, 0);
}

#[test]
fn over_http2_uploads_of_many_windows_reach_a_reading_fastcgi_application_whole() {
    let fpm = App::php_fpm(STREAMS);
    let srv = TestServer::start(|c| {
        c.fastcgi
            .push(format!("*.php={}", fpm.addr()).parse().unwrap());
        c.max_body_bytes = 4 * BODY as u64;
    });
    write_file(
        srv.root.path(),
        "count.php",
        "<?php echo strlen(file_get_contents('php://input')), \"\\n\";",
    );
    let mut s = connect(srv.addr);
    assert_all_read(&upload_all(&mut s, "/count.php"));
    assert_eq!(srv.stats().body_timeouts, 0);
}

#[test]
fn over_http2_a_program_slow_to_read_its_upload_does_not_run_out_the_clients_body_clock() {
    // The programs read only once the client has been unable to send (their streams' windows
    // spent) for longer than the body timeout.
    let scripts = Scripts::new();
    let gate = scripts.path().join("gate");
    scripts.add("late", &gated_counting_cgi(&gate));
    let srv = start(&scripts, |c| {
        c.max_body_bytes = 4 * BODY as u64;
        c.cgi_max_programs = STREAMS as usize;
        c.body_timeout_ms = BODY_TIMEOUT.as_millis() as u64;
        c.cgi_timeout_ms = 2 * DEADLINE.as_millis() as u64;
    });
    let mut s = connect(srv.addr);
    let open = || std::fs::write(&gate, "").expect("open the gate");
    let (answers, held) = upload_gated(&mut s, "/cgi-bin/late", &open);
    assert_all_read(&answers);
    assert!(held > BODY_TIMEOUT, "held {held:?}");
    assert_eq!(srv.stats().body_timeouts, 0);
}

#[test]
fn over_http2_a_fastcgi_application_slow_to_read_its_upload_does_not_run_out_the_clients_body_clock(
) {
    // One connection at a time, the first read only once the client has been unable to send
    // for longer than the body timeout: the requests wait for the application with their
    // windows spent.
    let app = Scripted::new((0..STREAMS).map(|_| vec![Step::ReadLate]).collect());
    let srv = TestServer::start(|c| {
        c.fastcgi
            .push(format!("/app/={}", app.addr()).parse().unwrap());
        c.max_body_bytes = 4 * BODY as u64;
        c.body_timeout_ms = BODY_TIMEOUT.as_millis() as u64;
        // The last request waits for the gate and the three before it.
        c.cgi_timeout_ms = 2 * DEADLINE.as_millis() as u64;
    });
    write_file(srv.root.path(), "app", "");
    let mut s = connect(srv.addr);
    let (answers, held) = upload_gated(&mut s, "/app", &|| app.open_gate());
    for (k, a) in answers.iter().enumerate() {
        let said = String::from_utf8_lossy(&a.body);
        assert!(
            a.ok && !a.reset && said.starts_with("connection "),
            "stream {}: {a:?} ({said:?}); all: {answers:?}",
            1 + 2 * k
        );
    }
    assert!(held > BODY_TIMEOUT, "held {held:?}");
    assert_eq!(srv.stats().body_timeouts, 0);
}

#[test]
fn over_http2_a_client_that_stops_sending_to_a_reading_program_is_still_timed_out() {
    // The program took what came, so the window is the client's: its body clock runs.
    let scripts = Scripts::new();
    scripts.add("count", COUNTING_CGI);
    let srv = start(&scripts, |c| {
        c.max_body_bytes = 4 * BODY as u64;
        c.body_timeout_ms = 1000;
    });
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
    raw::literal(&mut block, 4, b"/cgi-bin/count");
    raw::literal(&mut block, 1, b"t");
    raw::literal_name(&mut block, b"content-length", BODY.to_string().as_bytes());
    raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, 1, &block);
    raw::frame(&mut out, raw::DATA, 0, 1, &[b'u'; 1000]);
    s.write_all(&out).unwrap();
    let reset = |f: &raw::Frame| f.0 == raw::RST_STREAM && f.2 == 1;
    let got = raw::read_until(&mut s, |fs| fs.iter().any(reset));
    let code = got.iter().find(|f| reset(f)).map(|f| f.3.clone());
    assert_eq!(code, Some(8u32.to_be_bytes().to_vec()), "CANCEL: {got:?}");
    assert!(eventually(WAIT, || srv.stats().body_timeouts == 1));
}
