//! Basic authentication keeps the steady state free of allocations: a request whose
//! credentials the thread verified already costs a hash of the header and a lookup, nothing
//! allocated, as an unprotected request, and its access-log line none either. Counted with a global allocator over every thread of
//! this binary (alone in it), the client side allocating nothing in the window either.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use base64::Engine;
use common::*;
use serve::config::AuthZone;
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn fill(s: &mut TcpStream, buf: &mut [u8]) {
    let mut got = 0;
    while got < buf.len() {
        let n = s.read(&mut buf[got..]).expect("read");
        assert!(n > 0, "early EOF");
        got += n;
    }
}

/// Sleeps into the next wall-clock second (at most a second; no allocation).
fn next_second() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_nanos(
        1_000_000_000 - u64::from(now.subsec_nanos()) + 1_000_000,
    ));
}

#[test]
fn verified_credentials_cost_no_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("htpasswd");
    let hash = bcrypt::hash_with_salt("pw", 4, *b"0123456789abcdef")
        .unwrap()
        .format_for_version(bcrypt::Version::TwoY);
    std::fs::write(&file, format!("alice:{hash}\n")).unwrap();
    let log = dir.path().join("access.log");
    let srv = TestServer::start(|c| {
        c.revalidate_ms = 600_000;
        c.access_log = Some(log);
        c.auth.push(AuthZone {
            prefix: "/".into(),
            file,
            realm: "flint".into(),
        });
    });
    let token = base64::engine::general_purpose::STANDARD.encode("alice:pw");
    let request =
        format!("GET /1k.bin HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {token}\r\n\r\n");
    let one = request.into_bytes();
    let sixteen = one.repeat(16);
    let len = {
        let mut s = connect(srv.addr);
        s.write_all(&one).unwrap();
        let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
        assert_eq!(r.status, 200);
        let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        "HTTP/1.1 200 OK\r\n".len() + head + 2 + r.body.len()
    };
    let mut s = connect(srv.addr);
    let mut buf = vec![0u8; len * 16];
    let round = |s: &mut TcpStream, buf: &mut [u8]| {
        for _ in 0..200 {
            s.write_all(&one).unwrap();
            fill(s, &mut buf[..len]);
        }
        for _ in 0..20 {
            s.write_all(&sixteen).unwrap();
            fill(s, &mut buf[..len * 16]);
        }
    };
    round(&mut s, &mut buf);
    assert!(buf[..len].ends_with(&content("1k.bin", 1024)));
    let before = allocations();
    round(&mut s, &mut buf);
    // The window crosses a wall-clock second on purpose: the access log's timestamp is rebuilt
    // then, and that must not allocate either (on a loaded machine any window may cross one).
    next_second();
    round(&mut s, &mut buf);
    let allocated = allocations() - before;
    assert_eq!(
        allocated, 0,
        "allocations during 1,040 authenticated requests across a second"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!((st.auth_ok, st.auth_cached), (1561, 1560));
}
