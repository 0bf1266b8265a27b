//! The event loop's request path: keep-alive, pipelining, HTTP/1.0, bodies by every route, and
//! the syscall shape each costs (from the loop's counters).

use std::io::{BufReader, Read, Write};
use std::net::Shutdown;

use crate::common::*;

#[test]
fn get_returns_the_file() {
    let srv = TestServer::start(|_| {});
    for (name, len) in FILES {
        let r = exchange(srv.addr, &get(&format!("/{name}")));
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.body, content(name, *len), "{name}");
        assert!(r.header("date").is_some_and(|d| d.len() == 29), "{name}");
    }
    let st = srv.stop();
    assert_eq!(st.requests, FILES.len() as u64);
    assert_eq!(st.status_2xx, FILES.len() as u64);
}

#[test]
fn keep_alive_request_costs_one_read_and_one_write() {
    let srv = TestServer::start(|_| {});
    let s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    w.write_all(get("/1k.bin").as_bytes()).unwrap();
    read_response(&mut r, false).unwrap();
    for _ in 0..3 {
        let before = srv.stats();
        w.write_all(get("/1k.bin").as_bytes()).unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.body.len(), 1024);
        let after = srv.stats();
        assert_eq!(
            after.reads - before.reads,
            1,
            "reads per keep-alive request"
        );
        assert_eq!(
            after.writes - before.writes,
            1,
            "writes per keep-alive request"
        );
        assert_eq!(after.sendfiles - before.sendfiles, 0);
        assert_eq!(after.registrations - before.registrations, 0);
    }
}

#[test]
fn pipelined_responses_leave_in_one_write() {
    let srv = TestServer::start(|_| {});
    let s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    w.write_all(get("/a.txt").as_bytes()).unwrap();
    read_response(&mut r, false).unwrap();
    let names = ["1k.bin", "a.txt", "10k.bin", "1k.bin"];
    let batch: String = (0..16)
        .map(|i| get(&format!("/{}", names[i % 4])))
        .collect();
    let before = srv.stats();
    w.write_all(batch.as_bytes()).unwrap();
    let resps = read_responses(&mut r, 16, false);
    for (i, resp) in resps.iter().enumerate() {
        let name = names[i % 4];
        let len = FILES.iter().find(|f| f.0 == name).unwrap().1;
        assert_eq!(resp.body, content(name, len), "response {i} in order");
    }
    let after = srv.stats();
    assert_eq!(after.requests - before.requests, 16);
    assert_eq!(after.reads - before.reads, 1, "one read for the batch");
    assert_eq!(
        after.writes - before.writes,
        1,
        "one gathered write for 16 responses"
    );
}

#[test]
fn pipelined_file_bodies_keep_their_order() {
    let srv = TestServer::start(|_| {});
    let s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    let names = [
        "a.txt", "4m.bin", "1k.bin", "300k.bin", "10k.bin", "4m.bin", "a.txt",
    ];
    let batch: String = names.iter().map(|n| get(&format!("/{n}"))).collect();
    w.write_all(batch.as_bytes()).unwrap();
    for name in names {
        let len = FILES.iter().find(|f| f.0 == name).unwrap().1;
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, 200);
        assert!(
            resp.body == content(name, len),
            "{name} body intact and in order"
        );
    }
    drop((r, w));
    let st = srv.stop();
    assert!(st.sendfiles >= 2, "large files go by sendfile: {st:?}");
    assert!(st.sendfile_bytes >= 8 << 20);
}

#[test]
fn deep_pipeline_past_the_output_limit_is_answered_in_full() {
    // 200 requests of 10 KiB responses against a 32 KiB queue limit: parsing stops and resumes.
    let srv = TestServer::start(|c| c.max_pipeline_bytes = 32 * 1024);
    let s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    let batch: String = (0..200).map(|_| get("/10k.bin")).collect();
    let writer = std::thread::spawn(move || {
        w.write_all(batch.as_bytes()).unwrap();
        w
    });
    let want = content("10k.bin", 10 * 1024);
    for i in 0..200 {
        let resp = read_response(&mut r, false).unwrap();
        assert!(resp.body == want, "response {i}");
    }
    drop(writer.join().unwrap());
    drop(r);
    let st = srv.stop();
    assert_eq!(st.requests, 200);
    assert!(st.writes >= 200 * 10 / 48, "limited batches: {st:?}");
}

#[test]
fn head_has_no_body() {
    let srv = TestServer::start(|_| {});
    let s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    w.write_all(b"HEAD /10k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    w.write_all(get("/a.txt").as_bytes()).unwrap();
    let head = read_response(&mut r, true).unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("10240"));
    // If HEAD had carried a body, this would read its bytes as a status line.
    let next = read_response(&mut r, false).unwrap();
    assert_eq!(next.body, b"hello");
}

#[test]
fn http10_closes_after_the_response_without_epoll() {
    let srv = TestServer::start(|_| {});
    let before = srv.stats();
    let mut s = connect(srv.addr);
    s.write_all(b"GET /1k.bin HTTP/1.0\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap(); // EOF: the server closed
    assert!(all.starts_with(b"HTTP/1.1 200"));
    assert!(all.ends_with(&content("1k.bin", 1024)));
    let after = srv.stats();
    assert_eq!(after.accepted - before.accepted, 1);
    assert_eq!(
        after.reads - before.reads,
        1,
        "the optimistic read found the request"
    );
    assert_eq!(after.writes - before.writes, 1);
    assert_eq!(
        after.registrations - before.registrations,
        0,
        "never registered"
    );
    assert_eq!(after.lingering_closes - before.lingering_closes, 0);
    assert_eq!(after.optimistic_hits - before.optimistic_hits, 1);
}

#[test]
fn without_defer_accept_a_late_request_is_read_after_registration() {
    let srv = TestServer::start(|c| c.defer_accept = false);
    let mut s = connect(srv.addr);
    // Wait until the server has accepted (and found nothing to read), then send.
    assert!(eventually(WAIT, || srv.stats().registrations == 1));
    s.write_all(b"GET /a.txt HTTP/1.0\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert!(all.ends_with(b"hello"));
    let st = srv.stop();
    assert_eq!(st.optimistic_hits, 0);
    assert_eq!(st.requests, 1);
}

#[test]
fn half_closed_client_still_gets_its_responses() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    s.write_all((get("/a.txt") + &get("/300k.bin")).as_bytes())
        .unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    assert_eq!(read_response(&mut r, false).unwrap().body.len(), 300 * 1024);
    assert!(closed_by_peer(&mut r), "closed after the last response");
}

#[test]
fn slow_reader_gets_a_large_body_intact() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    s.write_all(get("/4m.bin").as_bytes()).unwrap();
    // Let the server fill the socket and block, then read it all.
    assert!(eventually(WAIT, || srv.stats().sendfiles > 0));
    let resp = read_response(&mut BufReader::new(s), false).unwrap();
    assert!(resp.body == content("4m.bin", 4 << 20));
}

#[test]
fn buffers_are_reused_across_connections() {
    let srv = TestServer::start(|_| {});
    for _ in 0..50 {
        assert_eq!(exchange(srv.addr, &get("/1k.bin")).status, 200);
    }
    let st = srv.stop();
    assert!(st.buffers_created <= 2, "{st:?}");
}

#[test]
fn several_threads_share_the_port() {
    let srv = TestServer::start(|c| c.threads = 3);
    let mut conns: Vec<_> = (0..24).map(|_| connect(srv.addr)).collect();
    for s in conns.iter_mut() {
        s.write_all(get("/a.txt").as_bytes()).unwrap();
    }
    for s in conns {
        assert_eq!(
            read_response(&mut BufReader::new(s), false).unwrap().body,
            b"hello"
        );
    }
    let st = srv.stop();
    assert_eq!(st.threads, 3);
    assert_eq!(st.requests, 24);
}

/// Closing a socket with unread input makes Linux send RST at once and discard what is still in
/// its send queue: the end of a large response would be lost. The lingering close (FIN, drain,
/// then close) is what makes the whole body arrive here.
#[test]
fn close_with_unread_input_still_delivers_the_whole_response() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    let mut raw = b"GET /4m.bin HTTP/1.0\r\n\r\n".to_vec();
    raw.extend_from_slice(&[b'j'; 64 * 1024]); // more than the server reads before answering
    s.write_all(&raw).unwrap();
    assert!(eventually(WAIT, || srv.stats().sendfiles > 0));
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("no reset");
    let body_at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(
        all[body_at..] == content("4m.bin", 4 << 20)[..],
        "body intact"
    );
    let st = srv.stop();
    assert_eq!(st.lingering_closes, 1);
}
