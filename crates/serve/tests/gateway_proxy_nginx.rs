//! The proxy in front of nginx (when installed): static files, HEAD, errors, a large body
//! through the output window, and keep-alive: every request over one pooled connection.

mod cgi_support;
mod common;

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use cgi_support::*;
use common::*;

/// nginx serving `dir` on a loopback port, its process group killed when dropped.
struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start() -> Option<Nginx> {
        let bin = std::path::Path::new("/usr/sbin/nginx");
        if !bin.exists() {
            eprintln!("nginx is not installed: skipped (scripts/install-peers.sh installs it)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("www");
        std::fs::create_dir_all(root.join("api")).unwrap();
        std::fs::write(root.join("api/x.txt"), b"from nginx").unwrap();
        std::fs::write(root.join("api/big.bin"), content("big", 3 << 20)).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
             keepalive_requests 10000;\n\
             server {{ listen 127.0.0.1:{port}; root {d}/www; }} }}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(dir.path())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let n = Nginx {
            child,
            port,
            _dir: dir,
        };
        let addr = format!("127.0.0.1:{port}");
        let up = eventually(WAIT, || std::net::TcpStream::connect(&addr).is_ok());
        assert!(up, "nginx did not listen within {WAIT:?}");
        Some(n)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

#[test]
fn nginx_as_upstream_answers_through_one_pooled_connection() {
    let Some(nginx) = Nginx::start() else {
        return;
    };
    let url = format!("/api/=http://127.0.0.1:{}", nginx.port);
    let srv = TestServer::start(|c| c.proxy.push(url.parse().unwrap()));
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"GET /api/x.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_reply(&mut rd, false).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"from nginx"[..]));
    assert!(r.header("last-modified").is_some());
    s.write_all(b"HEAD /api/big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_reply(&mut rd, true).unwrap();
    assert_eq!(
        (r.status, r.header("content-length")),
        (200, Some("3145728"))
    );
    s.write_all(b"GET /api/big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_reply(&mut rd, false).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == content("big", 3 << 20));
    s.write_all(b"GET /api/nope HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 404);
    // nginx refuses a POST to a static file (405) after reading its body.
    s.write_all(b"POST /api/x.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        .unwrap();
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 405);
    drop((s, rd));
    let st = srv.stop();
    assert_eq!(st.proxy_requests, 5);
    assert_eq!(st.proxy_connects, 1);
}
