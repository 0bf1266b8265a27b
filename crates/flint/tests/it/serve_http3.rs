//! `flint serve --tls-cert --tls-key` and HTTP/3 as a user meets it: on by default (one line
//! names its UDP port); a UDP port another program holds is one warning line and TCP serves;
//! `--http3` with that port taken is one error line and status 1; `--http3` without TLS is
//! bad input (status 2); `--no-http3` binds no UDP socket and says nothing of HTTP/3. Every
//! server a test starts is stopped by its PID (SIGTERM, else killed when its guard drops).

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::sync::mpsc;
use std::time::Duration;

use common::{flint, run_bounded, serve_tls, wait_exit, Server};
use test_support::certs::{KeyKind, SelfSigned};

const WAIT: Duration = Duration::from_secs(10);

/// `flint serve` over HTTPS with `args` added; returns, once its banner is out, the server
/// and what reads the rest of its stderr (all of it, once the server has exited).
fn serve(cert: &SelfSigned, args: &[&str]) -> (Server, mpsc::Receiver<String>) {
    try_serve(cert, args).unwrap_or_else(|line| panic!("no https address in {line:?}"))
}

/// As [`serve`]; the first line it printed when that is not its banner (it did not start).
fn try_serve(cert: &SelfSigned, args: &[&str]) -> Result<(Server, mpsc::Receiver<String>), String> {
    let args = [&["--threads", "2"], args].concat();
    let mut child = serve_tls(cert, &args).spawn().expect("spawn flint serve");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (first_tx, first_rx) = mpsc::channel();
    let (rest_tx, rest_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = stderr.read_line(&mut first);
        let _ = first_tx.send(first);
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        let _ = rest_tx.send(rest);
    });
    let mut server = Server {
        child,
        addr: String::new(),
    };
    let line = first_rx.recv_timeout(WAIT).unwrap_or_default();
    server.addr = (line.split("https://").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .ok_or(line.clone())?
        .to_string();
    Ok((server, rest_rx))
}

/// Stops the server by its PID and returns what it printed after its banner.
fn stop(mut server: Server, rest: mpsc::Receiver<String>) -> String {
    let pid = rustix::process::Pid::from_child(&server.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let status = wait_exit(&mut server.child, WAIT).expect("exit on SIGTERM");
    assert!(status.success(), "{status}");
    rest.recv_timeout(WAIT).expect("its stderr")
}

/// A UDP socket on loopback whose port number is free for TCP (checked by binding it, then
/// letting it go: a server started right after binds it; another test's socket may take it
/// in between, and the test then tries another port).
fn taken_udp_port() -> UdpSocket {
    for _ in 0..32 {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        if std::net::TcpListener::bind(udp.local_addr().unwrap()).is_ok() {
            return udp;
        }
    }
    panic!("no UDP port of 32 had its TCP twin free");
}

/// The local port numbers of the UDP sockets process `pid` holds (its descriptors' socket
/// inodes looked up in the kernel's UDP tables).
fn udp_ports_of(pid: u32) -> Vec<u16> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("its descriptors");
    let inodes: Vec<String> = (fds.flatten())
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            let inode = link.strip_prefix("socket:[")?.strip_suffix(']')?;
            Some(inode.to_string())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["/proc/net/udp", "/proc/net/udp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(inode)) = (cols.get(1), cols.get(9)) else {
                continue;
            };
            if inodes.iter().any(|i| i == inode) {
                let port = local.rsplit(':').next().unwrap_or("");
                ports.push(u16::from_str_radix(port, 16).expect("a hex port"));
            }
        }
    }
    ports
}

#[test]
fn http3_is_on_by_default_with_tls_and_off_with_no_http3() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    let (server, rest) = serve(&cert, &["--listen", "127.0.0.1:0"]);
    let addr = server.addr.clone();
    // A UDP socket per thread on the TCP port's number.
    let port = server.port();
    assert_eq!(udp_ports_of(server.child.id()), [port, port]);
    let said = stop(server, rest);
    assert!(
        said.contains(&format!("flint serve: HTTP/3 on UDP {addr}\n")),
        "{said}"
    );
    assert!(!said.contains("warning"), "{said}");

    let (server, rest) = serve(&cert, &["--listen", "127.0.0.1:0", "--no-http3"]);
    assert_eq!(udp_ports_of(server.child.id()), [0u16; 0], "no UDP socket");
    let said = stop(server, rest);
    assert!(!said.contains("HTTP/3 on UDP"), "{said}");
    assert!(!said.contains("warning"), "{said}");
}

#[test]
fn a_taken_udp_port_is_a_warning_by_default_and_an_error_with_http3() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    for attempt in 1..=8 {
        if a_taken_udp_port_attempt(&cert) {
            return;
        }
        eprintln!("attempt {attempt}: the TCP port was taken by another socket first");
    }
    panic!("8 TCP ports taken between their check and the server's bind");
}

/// One try of the test above on a new port: false when the TCP port the server was to
/// listen on was taken first (by another test's socket), before anything was asserted of it.
fn a_taken_udp_port_attempt(cert: &SelfSigned) -> bool {
    let udp = taken_udp_port();
    let addr = udp.local_addr().unwrap().to_string();
    let tcp_taken = format!("cannot listen on {addr}:");
    let (server, rest) = match try_serve(cert, &["--listen", &addr]) {
        Ok(started) => started,
        Err(line) if line.contains(&tcp_taken) => return false,
        Err(line) => panic!("no https address in {line:?}"),
    };
    assert_eq!(server.addr, addr);
    let said = stop(server, rest);
    let warnings: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warnings,
        [format!(
            "flint serve: warning: no HTTP/3: cannot listen on UDP {addr} for HTTP/3: \
             Address already in use (os error 98); serving TCP alone, nothing advertised \
             (--http3 makes this an error, --no-http3 silences it)"
        )],
        "{said}"
    );
    assert!(!said.contains("HTTP/3 on UDP"), "{said}");

    let out = run_bounded(&mut serve_tls(cert, &["--listen", &addr, "--http3"]), WAIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains(&tcp_taken) {
        return false;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "flint: error: cannot listen on UDP {addr} for HTTP/3: Address already in use (os error 98)\n"
        )
    );
    drop(udp);
    true
}

#[test]
fn http3_asked_for_without_tls_is_one_line_and_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bounded(
        flint().args([
            "serve",
            dir.path().to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--http3",
        ]),
        WAIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("flint: error: `http3` = true: needs TLS"),
        "{stderr}"
    );
}
