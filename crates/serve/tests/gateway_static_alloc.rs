//! With CGI configured (a mount and an extension), a request for a file still allocates
//! nothing in steady state: the gateways' look at the target reuses its own buffer, and no
//! program is involved. Counted with a global allocator over every thread of this binary
//! (alone in it), the client side allocating nothing in the window.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::*;
use serve::config::CgiMount;
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

#[test]
fn files_allocate_nothing_with_gateways_configured() {
    let scripts = tempfile::tempdir().unwrap();
    let dir = scripts.path().to_path_buf();
    let srv = TestServer::start(move |c| {
        c.revalidate_ms = 600_000;
        c.cgi = vec![CgiMount {
            prefix: "/cgi-bin".into(),
            dir,
        }];
        c.cgi_extensions = vec![".cgi".into()];
    });
    let one = get("/1k.bin").into_bytes();
    let sixteen: Vec<u8> = one.repeat(16);
    let len = {
        let mut s = connect(srv.addr);
        s.write_all(&one).unwrap();
        let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
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
    round(&mut s, &mut buf); // warm-up
    assert!(buf[..len].ends_with(&content("1k.bin", 1024)));
    let before = allocations();
    round(&mut s, &mut buf);
    assert_eq!(
        allocations() - before,
        0,
        "allocations during 520 file requests"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!((st.requests, st.cgi_requests), (2 * 520 + 1, 0));
}
