//! The protocol alone: request bytes in, response segments out, no socket anywhere.
//! HTTP/1.1's here, with the fixture both protocols use; HTTP/2's in `tests/h2_session.rs`.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant, SystemTime};

use wire::RequestLimits;

use super::{Negotiated, Session, Timeouts, Worker};
use crate::config::Config;
use crate::pool::{Pool, Seg};
use crate::respond::{Responder, SMALL_BODY};
use crate::stats::ServerStats;

mod h2_session;
mod held_logs;

struct Fixture {
    _root: tempfile::TempDir,
    worker: Worker,
    pool: Pool,
    session: Session,
}

fn fixture(max_pipeline: usize) -> Fixture {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), b"hello").unwrap();
    std::fs::write(root.path().join("big.bin"), vec![7u8; 4 * SMALL_BODY]).unwrap();
    let config = Config {
        root: root.path().to_path_buf(),
        ..Config::default()
    };
    let now = Instant::now();
    let worker = Worker {
        responder: Responder::new(&config).unwrap(),
        log: None,
        stats: ServerStats::default(),
        limits: RequestLimits {
            max_request_line: config.max_request_line,
            max_head_bytes: config.max_header_bytes,
            max_headers: config.max_headers,
        },
        now,
        wall: SystemTime::now(),
        date: *b"Mon, 23 Nov 2026 14:00:00 GMT",
        max_pipeline: max_pipeline as u64,
        max_body: 100,
        body_min_rate: 500,
        timeouts: Timeouts {
            header: Duration::from_secs(1),
            body: Duration::from_secs(1),
            keepalive: Duration::from_secs(1),
            send: Duration::from_secs(1),
        },
        http2: Some(http2::Config::server()),
        gateways: None,
        auth: None,
        h2_spares: Default::default(),
        held_logs: Default::default(),
    };
    Fixture {
        _root: root,
        worker,
        pool: Pool::new(16 * 1024, 4, max_pipeline),
        session: Session::new(SocketAddr::from(([127, 0, 0, 1], 1)), now),
    }
}

impl Fixture {
    /// Feeds `bytes` as a driver would (receive into the lent space), then answers.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        let space = self.session.input_space(&mut self.pool);
        space[..bytes.len()].copy_from_slice(bytes);
        self.session.received(bytes.len(), self.worker.now);
        self.session
            .answer(&mut self.worker, &mut self.pool, Negotiated::Nothing)
    }

    /// Everything queued, in order, as the client would receive it.
    fn output(&self) -> Vec<u8> {
        let Some(b) = self.session.bufs.as_ref() else {
            return Vec::new();
        };
        let mut all = Vec::new();
        for seg in &b.segs {
            match seg {
                Seg::Mem { start, end } => all.extend_from_slice(&b.out[*start..*end]),
                Seg::Shared { data, start, len } => {
                    all.extend_from_slice(&data[*start..*start + *len])
                }
                Seg::File { file, offset, len } => {
                    let mut chunk = vec![0; *len as usize];
                    file.read_exact_at(&mut chunk, *offset).unwrap();
                    all.extend_from_slice(&chunk);
                }
            }
        }
        all
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

#[test]
fn a_keep_alive_request_queues_one_segment_and_keeps_the_connection() {
    let mut f = fixture(1 << 20);
    assert!(!f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"));
    let out = f.output();
    assert!(out.starts_with(b"HTTP/1.1 200 OK\r\n"), "{out:?}");
    assert!(out.ends_with(b"\r\n\r\nhello"));
    assert_eq!(f.session.queued, out.len() as u64);
    assert_eq!(f.session.bufs.as_ref().unwrap().segs.len(), 1);
    assert!(!f.session.close_after && !f.session.linger && f.session.served);
    assert!(!f.session.has_input());
    assert_eq!(f.worker.stats.requests, 1);
}

#[test]
fn pipelined_requests_are_all_answered_in_order_and_a_partial_head_waits() {
    let mut f = fixture(1 << 20);
    let batch = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nHEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /a.t";
    f.feed(batch);
    assert_eq!(f.worker.stats.requests, 3);
    let out = f.output();
    assert_eq!(count(&out, b"HTTP/1.1 200 OK\r\n"), 3);
    assert_eq!(count(&out, b"hello"), 1, "no body after the HEAD's head");
    assert!(out.ends_with(&vec![7u8; 4 * SMALL_BODY]));
    let b = f.session.bufs.as_ref().unwrap();
    assert!(matches!(b.segs.back(), Some(Seg::File { .. })));
    assert_eq!(
        &b.input[..b.in_len],
        b"GET /a.t",
        "the partial head is kept"
    );
    assert_eq!(f.session.queued, out.len() as u64);
    f.feed(b"xt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(f.worker.stats.requests, 4);
    assert!(f.output().ends_with(b"hello"));
}

#[test]
fn http_1_0_closes_after_the_response_without_lingering() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.0\r\n\r\n");
    assert!(f.output().starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(f.session.close_after && !f.session.linger);
    assert!(
        !f.session.wants_input(),
        "nothing is parsed after a closing response"
    );
}

fn statuses(out: &[u8]) -> Vec<u16> {
    String::from_utf8_lossy(out)
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| {
            String::from_utf8_lossy(&out[i + 9..i + 12])
                .parse()
                .unwrap()
        })
        .collect()
}

const NEXT: &[u8] = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";

#[test]
fn a_get_with_a_body_is_served_and_the_next_request_answered() {
    let mut f = fixture(1 << 20);
    f.feed(
        &[
            b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde",
            NEXT,
        ]
        .concat(),
    );
    let out = f.output();
    assert_eq!(statuses(&out), [200, 200]);
    assert_eq!(count(&out, b"hello"), 2);
    assert!(!f.session.close_after && !f.session.linger && !f.session.reading_body());
    assert!(
        !f.session.has_input(),
        "the body is not parsed as a request"
    );
}

#[test]
fn a_post_gets_405_and_its_chunked_body_is_dropped_across_reads() {
    let mut f = fixture(1 << 20);
    f.feed(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
    assert_eq!(
        statuses(&f.output()),
        [405],
        "answered before the body is in"
    );
    assert!(f.session.reading_body() && !f.session.has_input());
    f.feed(b"cde\r\n3;ext=1\r\nxyz\r\n0\r\nTrailer: t\r\n");
    assert!(f.session.reading_body());
    f.feed(&[b"\r\n".as_slice(), NEXT].concat());
    assert_eq!(statuses(&f.output()), [405, 200]);
    assert!(!f.session.reading_body() && !f.session.close_after);
    assert_eq!(f.worker.stats.requests, 2);
}

#[test]
fn a_content_length_over_the_limit_gets_413_and_a_lingering_close() {
    let mut f = fixture(1 << 20);
    f.feed(b"PUT /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\nabcde");
    assert_eq!(statuses(&f.output()), [413]);
    assert!(f.session.close_after && f.session.linger);
    assert!(!f.session.has_input() && !f.session.wants_input());
    // At the limit it is read.
    let mut f = fixture(1 << 20);
    let body = vec![b'x'; 100];
    f.feed(
        &[
            b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n".as_slice(),
            &body,
            NEXT,
        ]
        .concat(),
    );
    assert_eq!(statuses(&f.output()), [200, 200]);
}

#[test]
fn malformed_chunked_framing_gets_400_when_seen_before_the_answer() {
    let mut f = fixture(1 << 20);
    f.feed(
        &[
            b"GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
                .as_slice(),
            NEXT,
        ]
        .concat(),
    );
    assert_eq!(statuses(&f.output()), [400]);
    assert!(f.session.close_after && f.session.linger);
}

#[test]
fn a_body_that_goes_wrong_after_its_answer_closes_without_a_second_response() {
    for rest in [
        b"5\r\nabcdeXX".as_slice(),
        &[b"65\r\n".as_slice(), &[b'x'; 101]].concat(),
    ] {
        let mut f = fixture(1 << 20);
        f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(f.session.reading_body());
        f.feed(&[rest, NEXT].concat());
        assert_eq!(
            statuses(&f.output()),
            [200],
            "{:?}",
            String::from_utf8_lossy(rest)
        );
        assert!(f.session.close_after && f.session.linger);
        assert!(!f.session.has_input());
    }
}

#[test]
fn expect_100_continue_gets_its_interim_response_before_the_answer() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    assert!(f
        .output()
        .starts_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    f.feed(&[b"abc".as_slice(), NEXT].concat());
    assert_eq!(statuses(&f.output()), [100, 200, 200]);
    // Not when the body is already here.
    let mut f = fixture(1 << 20);
    f.feed(
        b"GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(statuses(&f.output()), [200]);
}

#[test]
fn a_closing_response_with_its_body_unread_lingers() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.0\r\nContent-Length: 50\r\n\r\nabc");
    assert_eq!(statuses(&f.output()), [200]);
    assert!(f.session.close_after && f.session.linger && !f.session.reading_body());
}

#[test]
fn garbage_gets_one_error_response_and_a_lingering_close() {
    let mut f = fixture(1 << 20);
    f.feed(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n");
    let out = f.output();
    assert!(
        out.starts_with(b"HTTP/1.1 400 "),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    assert!(f.session.close_after && f.session.linger);
    assert_eq!(f.worker.stats.status_4xx, 1);
}

#[test]
fn parsing_pauses_at_the_pipeline_limit_and_resumes() {
    let mut f = fixture(64);
    let one = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
    let limited = f.feed(&one.repeat(3));
    assert!(limited, "stopped at the limit with input left");
    assert_eq!(f.worker.stats.requests, 1);
    // The driver writes the queue, then answers again.
    let b = f.session.bufs.as_mut().unwrap();
    b.segs.clear();
    b.out.clear();
    f.session.queued = 0;
    assert!(f
        .session
        .answer(&mut f.worker, &mut f.pool, Negotiated::Nothing));
    assert_eq!(f.worker.stats.requests, 2);
}

#[test]
fn idle_sessions_give_their_buffers_back() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    f.session.release_idle(&mut f.pool);
    assert!(f.session.bufs.is_some(), "output still queued");
    let b = f.session.bufs.as_mut().unwrap();
    b.segs.clear();
    f.session.queued = 0;
    f.session.release_idle(&mut f.pool);
    assert!(f.session.bufs.is_none());
}

#[test]
fn a_pipeline_limit_of_zero_still_answers_one_request_at_a_time() {
    let mut f = fixture(0);
    let limited = f.feed(&NEXT.repeat(2));
    assert!(
        limited,
        "paused with one answer queued and one request left"
    );
    assert_eq!(f.worker.stats.requests, 1);
}

/// The driver asks the session what it waits for and by when, the same way whatever the
/// protocol: over HTTP/1.1 a head from accept, a body being dropped by its own clock, then
/// nothing (idle); no clock of the protocol's own.
#[test]
fn the_session_says_what_an_http1_connection_waits_for() {
    use super::Wait;
    let mut f = fixture(1 << 20);
    let (w, header) = (&f.worker, f.worker.timeouts.header);
    let clock = f.session.clock(w, false);
    assert_eq!(clock.due, None);
    let wait = f.session.wait(w, false, clock);
    assert_eq!(wait, Wait::Head(f.session.head_since + header));
    f.feed(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    assert_eq!(statuses(&f.output()), [405]);
    let clock = f.session.clock(&f.worker, false);
    assert_eq!(clock.due, None);
    let Wait::Body(due) = f.session.wait(&f.worker, false, clock) else {
        panic!("a body is being read");
    };
    assert!(due > f.worker.now, "due later");
    f.feed(b"defghij");
    assert_eq!(f.session.wait(&f.worker, false, clock), Wait::Idle);
}
