//! The proxy in front of nginx (when installed): static files, HEAD, errors, a large body
//! through the output window, and keep-alive: every request over one pooled connection. Over
//! `https://` too, nginx serving a certificate made at test time, the proxy trusting its CA
//! (`cacert`): its access log's connection serial (`$connection`) says the requests shared one
//! connection, and a proxy trusting another CA gets none through (502, a TLS failure).

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::cgi_support::*;
use crate::common::*;
use test_support::certs::TestCa;

/// nginx serving `dir` on a loopback port, its process group killed when dropped.
struct Nginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn start() -> Nginx {
        Nginx::start_with(None)
    }

    /// Over TLS with `tls`'s certificate and key when given, each request logged as its
    /// connection's serial, method, target and status (`Nginx::log`).
    fn start_with(tls: Option<(&std::path::Path, &std::path::Path)>) -> Nginx {
        let bin = std::path::Path::new("/usr/sbin/nginx");
        assert!(
            bin.exists(),
            "nginx is not installed: scripts/install-peers.sh installs it"
        );
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
        let (listen, log) = match tls {
            Some((cert, key)) => (
                format!(
                    "listen 127.0.0.1:{port} ssl; ssl_certificate {}; ssl_certificate_key {};",
                    cert.display(),
                    key.display()
                ),
                format!(
                    "log_format conn '$connection $request_method $request_uri $status';\n\
                     access_log {d}/access.log conn;"
                ),
            ),
            None => (
                format!("listen 127.0.0.1:{port};"),
                "access_log off;".into(),
            ),
        };
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{ {log} client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
             keepalive_requests 10000;\n\
             server {{ {listen} root {d}/www; }} }}\n"
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
        let n = Nginx { child, port, dir };
        let addr = format!("127.0.0.1:{port}");
        let up = eventually(WAIT, || std::net::TcpStream::connect(&addr).is_ok());
        assert!(up, "nginx did not listen within {WAIT:?}");
        n
    }

    /// The access log's lines so far (`start_with` a certificate): connection serial, method,
    /// target, status.
    fn log(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        text.lines().map(str::to_string).collect()
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
    let nginx = Nginx::start();
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

#[test]
fn nginx_over_tls_as_upstream_answers_get_post_and_head_on_one_kept_connection() {
    let ca = TestCa::new("proxy nginx test CA");
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let nginx = Nginx::start_with(Some((&cert, &key)));
    // By address: the leaf carries 127.0.0.1, and `localhost` may resolve to ::1.
    let upstream = format!("https://127.0.0.1:{}", nginx.port);
    let trusting = |pem: &std::path::Path| {
        let mut m: serve::config::ProxyMount = format!("/api/={upstream}").parse().unwrap();
        m.cacert = Some(pem.to_path_buf());
        TestServer::start(|c| c.proxy.push(m))
    };
    let srv = trusting(&ca.pem);
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"GET /api/x.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_reply(&mut rd, false).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"from nginx"[..]));
    // nginx refuses a POST to a static file (405) after reading its body.
    s.write_all(b"POST /api/x.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 405);
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
    assert!(
        r.body == content("big", 3 << 20),
        "the body came back changed"
    );
    drop((s, rd));
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_connects), (4, 1));
    assert_eq!(st.proxy_tls_failures, 0);
    // nginx saw the four requests, in order, on one connection (one serial). It logs a
    // request once it is done with it, maybe a moment after the client had its response.
    assert!(
        eventually(WAIT, || nginx.log().len() >= 4),
        "{:?}",
        nginx.log()
    );
    let log = nginx.log();
    let seen: Vec<Vec<&str>> = log.iter().map(|l| l.split(' ').collect()).collect();
    let asked: Vec<(&str, &str, &str)> = seen.iter().map(|f| (f[1], f[2], f[3])).collect();
    assert_eq!(
        asked,
        [
            ("GET", "/api/x.txt", "200"),
            ("POST", "/api/x.txt", "405"),
            ("HEAD", "/api/big.bin", "200"),
            ("GET", "/api/big.bin", "200"),
        ],
        "{log:?}"
    );
    assert!(
        seen.iter().all(|f| f[0] == seen[0][0]),
        "kept alive: {log:?}"
    );
    // A proxy trusting another CA refuses nginx's certificate: 502, the request never sent.
    let other = TestCa::new("another CA");
    let srv = trusting(&other.pem);
    let r = exchange(srv.addr, "GET /api/x.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_tls_failures), (1, 1));
    assert_eq!(nginx.log().len(), 4, "nothing more reached nginx");
}
