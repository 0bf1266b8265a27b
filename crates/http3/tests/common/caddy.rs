//! Debian's Caddy (`/usr/bin/caddy`, from scripts/install-peers.sh) serving a directory over
//! HTTPS with HTTP/3 on 127.0.0.1, its access log as JSON lines: the real peer of this crate's
//! client and of flint bench's `--http 3` (which includes this file by path).

#![allow(dead_code)] // each test binary uses its own subset

use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const CADDY: &str = "/usr/bin/caddy";

/// Caddy, stopped by its pid when dropped.
pub struct Caddy {
    child: Child,
    /// The port it listens on, TCP and UDP.
    pub port: u16,
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1 for both TCP and UDP now (Caddy cannot be told port 0).
fn free_port() -> u16 {
    for _ in 0..50 {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both TCP and UDP");
}

/// Caddy serving `www` as `localhost` with `cert` and `key`, its config and state under `dir`,
/// each request a line of `log`, listening on TCP when this returns (HTTP/3's UDP socket is bound
/// in the same start). The port is chosen free, then handed to Caddy: another test of the same
/// process may bind it in between, and Caddy then exits at once; it is started again on another
/// port, twice at most. One that does not listen (itself: its pid holds the listening socket)
/// within 20 s fails the test.
pub fn start(dir: &Path, www: &Path, (cert, key): (&Path, &Path), log: &Path) -> Caddy {
    assert!(
        Path::new(CADDY).exists(),
        "{CADDY} is missing: run scripts/install-peers.sh"
    );
    for attempt in 0.. {
        let port = free_port();
        let caddyfile = dir.join("Caddyfile");
        std::fs::write(
            &caddyfile,
            format!(
                "{{\n  admin off\n  auto_https off\n  servers {{\n    protocols h1 h2 h3\n  }}\n}}\n\
                 https://localhost:{port} {{\n  bind 127.0.0.1\n  tls {} {}\n  root * {}\n  file_server\n  \
                 log {{\n    output file {}\n    format json\n  }}\n}}\n",
                cert.display(),
                key.display(),
                www.display(),
                log.display()
            ),
        )
        .unwrap();
        let child = Command::new(CADDY)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&caddyfile)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start caddy");
        let mut caddy = Caddy { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = caddy.child.try_wait() {
                break; // exited: its port was taken meanwhile
            }
            // Caddy itself listening, not another test's server that took the port first.
            if lab_process::procfs::listens_only(caddy.child.id(), port) {
                return caddy;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(attempt < 2, "caddy did not start on port {port}");
    }
    unreachable!()
}
