//! Helpers shared by the binary's end-to-end tests: the executable, bounded runs and waits, and
//! a `flint serve` to run against.

#![allow(dead_code)] // each test binary uses its own subset

pub mod peer_server;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use test_support::certs::SelfSigned;

pub fn flint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flint"))
}

/// A finished command's stdout and stderr, as text.
pub fn texts(out: &Output) -> (std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>) {
    (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    )
}

/// Output of a command that must finish within `limit` (killed and failed otherwise).
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint");
    // Drain both pipes while waiting, so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let Some(status) = wait_exit(&mut child, limit) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("flint did not finish within {limit:?}");
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

/// Waits at most `limit` for `child` to exit; None if it is still running then.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `flint serve` killed when the test ends, passed or not.
pub struct Server {
    pub child: Child,
    pub addr: String,
}

impl Server {
    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        let port = self.addr.rsplit(':').next().and_then(|p| p.parse().ok());
        port.unwrap_or_else(|| panic!("no port in {}", self.addr))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `flint serve` on a kernel-chosen port with `threads` threads; its address is read from the
/// line it prints on stderr, which is then drained.
pub fn start_server(root: &Path, threads: u32) -> Server {
    start_server_with(root, threads, true)
}

/// `drain`: keep reading the server's stderr; otherwise close it once the address is read.
pub fn start_server_with(root: &Path, threads: u32, drain: bool) -> Server {
    let child = flint()
        .args(["serve", root.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--threads", &threads.to_string()])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn flint serve");
    started_server(child, "http", drain)
}

/// `flint serve` of `cert`'s directory over HTTPS with `cert`'s certificate and key, `args`
/// added (the address, threads, HTTP/3, a configuration file...): to spawn, its stdout closed
/// and its stderr piped (for [`started_server`]).
pub fn serve_tls(cert: &SelfSigned, args: &[&str]) -> Command {
    let mut cmd = flint();
    cmd.args(["serve", cert.dir().to_str().unwrap()])
        .args(args)
        .arg("--tls-cert")
        .arg(&cert.cert)
        .arg("--tls-key")
        .arg(&cert.key)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// A `flint serve` just spawned with its stderr piped, killed when the test ends: its address is
/// read from the line it prints there (`SCHEME://ADDR`, `scheme` being `http` or `https`).
/// `drain`: keep reading the server's stderr; otherwise close it once the address is read.
pub fn started_server(mut child: Child, scheme: &str, drain: bool) -> Server {
    // Read stderr on its own thread so the wait for the address line is bounded even if the
    // server starts and prints nothing; then keep draining it (or close it, if asked).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stderr);
        let mut first = String::new();
        let _ = std::io::BufRead::read_line(&mut reader, &mut first);
        if !drain {
            // Closed before the address is handed over, so the test's requests and signals
            // all meet a server whose stderr is already gone.
            drop(reader);
            let _ = tx.send(first);
            return;
        }
        let _ = tx.send(first);
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    // From here a failed wait kills the server (on drop).
    let mut server = Server {
        child,
        addr: String::new(),
    };
    let line = match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(line) if !line.is_empty() => line,
        Ok(_) => panic!("flint serve exited before printing its address"),
        Err(_) => panic!("flint serve printed no address within 10 s"),
    };
    server.addr = line
        .split(&format!("{scheme}://"))
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {scheme} address in {line:?}"))
        .to_string();
    server
}

/// A minimal keep-alive HTTP responder in this process that counts the requests it answers, so
/// the test knows a run is under way without sleeping.
pub fn counting_responder() -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    counting_responder_of(|_| true)
}

/// [`counting_responder`] counting only the requests whose head `counts` holds. A request is
/// counted before its response is written, so the count is complete once the client has its
/// responses.
pub fn counting_responder_of(
    counts: fn(&[u8]) -> bool,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicU64::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let response = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
                let mut buf = [0u8; 4096];
                let mut have = Vec::new();
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..n]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = have.drain(..end + 4).collect();
                        if counts(&head) {
                            seen.fetch_add(1, Ordering::Relaxed);
                        }
                        if conn.write_all(response).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, count)
}

/// A loopback address nothing listens on, for as long as this lives: a TCP socket bound to it,
/// never listening. Connects to it are refused, and no other socket can bind it meanwhile
/// (a port found free and released could go to another test's server: tests share a process).
pub struct RefusedAddr {
    _socket: socket2::Socket,
    pub addr: std::net::SocketAddr,
}

pub fn refused_addr() -> RefusedAddr {
    use socket2::{Domain, Socket, Type};
    // No SO_REUSEADDR: nobody else may bind the port, listening or not.
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let any_port = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    socket.bind(&any_port.into()).unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    RefusedAddr {
        _socket: socket,
        addr,
    }
}
