//! HTTP/1.1's held access-log lines against the session's output count: pipelined responses
//! each logged with their own body bytes written, in the order their bodies end.

use super::fixture;
use crate::access_log::{self, AccessLog};
use crate::config::LogFormat;

const LARGE: u64 = 100 * 1024;

#[test]
fn pipelined_held_responses_each_log_their_own_body_bytes_written() {
    let mut f = fixture(1 << 20);
    std::fs::write(f._root.path().join("large.bin"), vec![1u8; LARGE as usize]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let file = access_log::open(&path).unwrap();
    f.worker.log = Some(AccessLog::new(file, LogFormat::Common));
    let get = |p: &str| format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n");
    let batch = [get("/large.bin"), get("/a.txt"), get("/large.bin")].concat();
    assert!(!f.feed(batch.as_bytes()));
    let total = f.session.queued;
    // Everything but the last body's final bytes is written: the first large body is out, the
    // last one 1000 bytes short of whole; then its connection goes.
    let short = LARGE - 1000;
    let written = total - short;
    f.session.queued -= written;
    f.session.written += written;
    f.session.settle_held(&mut f.worker);
    f.session.log_held(&mut f.worker);
    // Counted as they were answered.
    assert_eq!((f.worker.stats.requests, f.worker.stats.status_2xx), (3, 3));
    f.worker.log.as_mut().unwrap().flush();
    let text = std::fs::read_to_string(&path).unwrap();
    let sizes: Vec<&str> = text
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    // The small one at once; the first large whole once written; the last with what was.
    assert_eq!(sizes, ["5", &LARGE.to_string(), "1000"], "{text}");
}

#[test]
fn a_held_response_not_yet_written_whole_stays_held() {
    let mut f = fixture(1 << 20);
    std::fs::write(f._root.path().join("large.bin"), vec![1u8; LARGE as usize]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let file = access_log::open(&path).unwrap();
    f.worker.log = Some(AccessLog::new(file, LogFormat::Common));
    assert!(!f.feed(b"GET /large.bin HTTP/1.1\r\nHost: t\r\n\r\n"));
    let written = f.session.queued - 1;
    f.session.queued -= written;
    f.session.written += written;
    f.session.settle_held(&mut f.worker);
    assert_eq!(
        f.worker.log.as_ref().unwrap().pending(),
        0,
        "logged before its end"
    );
    f.session.queued -= 1;
    f.session.written += 1;
    f.session.settle_held(&mut f.worker);
    f.worker.log.as_mut().unwrap().flush();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with(&format!(" 200 {LARGE}\n")), "{text}");
}
