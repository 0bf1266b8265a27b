//! A tiny declarative HTTP/1.x test client and a server fixture for the server tests.
//!
//! `TestServer::start` binds port 0 on 127.0.0.1 over a temporary root holding the files below,
//! runs the server in a thread, and stops it (bounded) when dropped. `exchange` sends raw bytes
//! and reads one response; `read_response` reads one from a stream (call it N times for a
//! pipelined batch). Every read has a timeout, so a server bug fails a test instead of hanging it.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serve::{Config, ServeError, Server, ServerStats, ShutdownHandle};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

/// Files in the test root: name and size (content: see [`content`]).
pub const FILES: &[(&str, usize)] = &[
    ("a.txt", 5),
    ("1k.bin", 1024),
    ("10k.bin", 10 * 1024),
    ("300k.bin", 300 * 1024),
    ("4m.bin", 4 << 20),
];

/// The deterministic content of a test file of `len` bytes.
pub fn content(name: &str, len: usize) -> Vec<u8> {
    if name == "a.txt" {
        return b"hello".to_vec();
    }
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub handle: ShutdownHandle,
    pub root: tempfile::TempDir,
    done: Option<mpsc::Receiver<Result<ServerStats, ServeError>>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// One event-loop thread (so counters describe one loop), short timeouts; `tweak` adjusts.
    pub fn start(tweak: impl FnOnce(&mut Config)) -> TestServer {
        TestServer::try_start(tweak, |_| {}).expect("bind")
    }

    /// [`TestServer::start`] that hands back `bind`'s error, and shows the bound server to
    /// `inspect` before it runs.
    pub fn try_start(
        tweak: impl FnOnce(&mut Config),
        inspect: impl FnOnce(&Server),
    ) -> Result<TestServer, ServeError> {
        let root = tempfile::tempdir().expect("tempdir");
        for (name, len) in FILES {
            std::fs::write(root.path().join(name), content(name, *len)).expect("write fixture");
        }
        let mut config = Config {
            root: root.path().to_path_buf(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 1,
            ..Config::default()
        };
        tweak(&mut config);
        let server = Server::bind(config)?;
        inspect(&server);
        let addr = server.local_addr();
        let handle = server.handle();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let _ = tx.send(server.run());
        });
        Ok(TestServer {
            addr,
            handle,
            root,
            done: Some(rx),
            thread: Some(thread),
        })
    }

    /// The live counters of every loop.
    pub fn stats(&self) -> ServerStats {
        self.handle.stats(WAIT)
    }

    /// Calls shutdown and waits (bounded) for `run` to return its counters.
    pub fn stop(mut self) -> ServerStats {
        self.handle.shutdown();
        self.wait_exit().expect("run returned an error")
    }

    /// Waits (bounded) for `run` to return, without calling shutdown.
    pub fn wait_exit(&mut self) -> Result<ServerStats, ServeError> {
        let rx = self.done.take().expect("already waited");
        let r = rx.recv_timeout(WAIT).expect("server did not stop in time");
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        r
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(rx) = self.done.take() {
            let _ = rx.recv_timeout(WAIT);
        }
    }
}

/// A connection with read and write timeouts.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.set_write_timeout(Some(WAIT)).unwrap();
    s
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `request` on a new connection and reads one response.
pub fn exchange(addr: SocketAddr, request: &str) -> Response {
    let mut s = connect(addr);
    s.write_all(request.as_bytes()).unwrap();
    let head = request.starts_with("HEAD ");
    read_response(&mut BufReader::new(s), head).expect("response")
}

/// Reads one response (body framed by Content-Length; none for HEAD, 1xx, 204, 304).
pub fn read_response(r: &mut impl BufRead, head: bool) -> io::Result<Response> {
    let (status, headers) = read_head(r)?;
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let no_body = head || status < 200 || status == 204 || status == 304;
    if !no_body {
        let len: usize = resp
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body)?;
    }
    Ok(resp)
}

/// A response's status line and fields (names as sent, values trimmed), up to its blank line.
pub fn read_head(r: &mut impl BufRead) -> io::Result<(u16, Vec<(String, String)>)> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, line.clone()))?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let h = h.trim_end();
        if h.is_empty() {
            return Ok((status, headers));
        }
        let (n, v) = h.split_once(':').unwrap_or((h, ""));
        headers.push((n.to_string(), v.trim().to_string()));
    }
}

/// Reads `n` pipelined responses.
pub fn read_responses(r: &mut impl BufRead, n: usize, head: bool) -> Vec<Response> {
    (0..n)
        .map(|i| read_response(r, head).unwrap_or_else(|e| panic!("response {i}: {e}")))
        .collect()
}

/// True once the peer has closed: a read returns EOF or a reset (not a timeout).
pub fn closed_by_peer(s: &mut impl Read) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Polls `f` until it returns true, for at most `limit`.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}
