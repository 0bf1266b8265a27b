//! Debian's Caddy (`/usr/bin/caddy`, from scripts/install-peers.sh) serving a directory over
//! HTTPS with HTTP/3 on 127.0.0.1, its access log as JSON lines: the real peer of this crate's
//! client and of flint bench's `--http 3` (which includes this file by path). Its admin API
//! listens on a Unix socket beside its config, for its metrics: how many requests it has under
//! way ([`Caddy::under_way`]).

#![allow(dead_code)] // each test binary uses its own subset

use lab_process::{Group, StopPolicy, Stopped};
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const CADDY: &str = "/usr/bin/caddy";

/// Caddy, the leader of a process group of its own, stopped (SIGTERM, then SIGKILL past
/// [`GRACE`]) when dropped.
pub struct Caddy {
    group: Group,
    /// The port it listens on, TCP and UDP.
    pub port: u16,
    /// Its admin API's socket.
    admin: PathBuf,
}

/// How long Caddy has to exit on SIGTERM: it closes its listeners and connections, and a
/// request then under way is not logged (see [`Caddy::under_way`]).
pub const GRACE: Duration = Duration::from_secs(20);

impl Caddy {
    /// The requests Caddy's handlers have under way, by its own gauge
    /// (`caddy_http_requests_in_flight`, summed over its handlers). A request is logged as its
    /// handler returns: at 0, every request it took is in its access log or about to be.
    pub fn under_way(&self) -> u64 {
        let mut s = UnixStream::connect(&self.admin).expect("caddy's admin socket");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).expect("caddy's metrics");
        assert!(text.starts_with("HTTP/1.0 200"), "caddy's metrics: {text}");
        (text.lines())
            .filter(|l| l.starts_with("caddy_http_requests_in_flight{"))
            .map(|l| {
                let value = l.rsplit(' ').next().unwrap_or_default();
                value.parse::<f64>().unwrap_or_else(|_| panic!("{l}")) as u64
            })
            .sum()
    }

    /// Stops it (SIGTERM, then SIGKILL past [`GRACE`]): once it has exited, no line can come to
    /// its access log. Stopped with [`Caddy::under_way`] at 0, the log holds every request it
    /// took.
    pub fn stop(mut self) -> Stopped {
        self.group.stop()
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
        // A socket a Caddy that exited left would make this one's admin fail to listen.
        let admin = dir.join("admin.sock");
        let _ = std::fs::remove_file(&admin);
        std::fs::write(
            &caddyfile,
            format!(
                "{{\n  admin unix/{}\n  auto_https off\n  servers {{\n    protocols h1 h2 h3\n    metrics\n  }}\n}}\n\
                 https://localhost:{port} {{\n  bind 127.0.0.1\n  tls {} {}\n  root * {}\n  file_server\n  \
                 log {{\n    output file {}\n    format json\n  }}\n}}\n",
                admin.display(),
                cert.display(),
                key.display(),
                www.display(),
                log.display()
            ),
        )
        .unwrap();
        let group = Group::spawn(
            Command::new(CADDY)
                .args(["run", "--adapter", "caddyfile", "--config"])
                .arg(&caddyfile)
                .env("HOME", dir)
                .env("XDG_DATA_HOME", dir.join("data"))
                .env("XDG_CONFIG_HOME", dir.join("config"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            None,
            StopPolicy::terminate(GRACE),
        )
        .expect("start caddy");
        let mut caddy = Caddy { group, port, admin };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if caddy.group.exited().is_some() {
                break; // exited: its port was taken meanwhile
            }
            // Caddy itself listening, not another test's server that took the port first.
            if lab_process::procfs::listens_only(caddy.group.pid(), port) {
                return caddy;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(attempt < 2, "caddy did not start on port {port}");
    }
    unreachable!()
}
