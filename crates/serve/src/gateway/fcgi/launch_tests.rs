//! A FastCGI request's buffers from the request's head to its start: a chunked body is read
//! whole before the request has a program slot, and meanwhile the request holds its records
//! alone, none of the pool's buffers.

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Poll, Token, Waker};

use crate::config::Config;
use crate::gateway::upstream::Buffers;
use crate::gateway::{asked, cgi, Gateways, Route};

#[test]
fn a_chunked_request_holds_no_pooled_buffers_until_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.php"), "").unwrap();
    let socket = dir.path().join("app.sock");
    let app = UnixListener::bind(&socket).unwrap();
    let mut config = Config {
        root: dir.path().to_path_buf(),
        ..Config::default()
    };
    let mount = format!("*.php=unix:{}", socket.display());
    config.fastcgi.push(mount.parse().unwrap());
    let poll = Poll::new().unwrap();
    let waker = Arc::new(Waker::new(poll.registry(), Token(0)).unwrap());
    let registry = poll.registry().try_clone().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let mut g = Gateways::new(&config, running, registry, waker, 80)
        .unwrap()
        .unwrap();
    let spare = Buffers::new();
    let spare_out = spare.out.as_ptr();
    g.fcgi_pool().recycle(spare);

    let head = b"POST /app.php HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    let req = wire::parse_request(head, &Default::default())
        .unwrap()
        .unwrap();
    assert!(req.chunked);
    let route = g.route(req.target, Instant::now()).unwrap();
    assert!(matches!(&route, Route::Cgi(s) if s.app == Some(0)));
    let peer = "127.0.0.1:9".parse().unwrap();
    let mut launch = g.launch(&route, &req, asked::asked_h1(&req, head), peer);
    let params = launch.fastcgi.as_ref().unwrap();
    assert!(
        params.buffers.is_records_only(),
        "no input buffer held while the body is read"
    );
    assert_eq!(
        g.fcgi_pool().spare_buffers(),
        1,
        "the pool's buffers stay with the pool"
    );

    // The body read whole, the slot taken: the request starts with the pool's buffers and
    // its records as they were, its length last.
    assert!(g.reserve());
    cgi::set_length(&mut launch, 5);
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut x, reused) = g.start_fastcgi(launch, 0, 1, deadline).unwrap();
    assert!(!reused);
    assert_eq!(g.fcgi_pool().spare_buffers(), 0, "taken as it starts");
    x.send_pending().unwrap();
    x.write_stdin(b"hello").unwrap();
    x.close_stdin();
    let (mut conn, _) = app.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    // Up to the empty STDIN record that ends the request (type 5, length 0).
    while !got.ends_with(&[1, 5, 0, 1, 0, 0, 0, 0]) {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got[1], 1, "BEGIN_REQUEST first");
    let has = |s: &[u8]| got.windows(s.len()).any(|w| w == s);
    assert!(has(b"SCRIPT_FILENAME"));
    assert!(has(b"CONTENT_LENGTH5"));
    assert!(has(b"hello"));
    let (_, buffers) = x.finish();
    assert_eq!(
        buffers.out.as_ptr(),
        spare_out,
        "the records were copied into the pool's buffer, which goes back to the pool"
    );
}
