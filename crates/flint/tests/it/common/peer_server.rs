//! A peer server (nginx, h2o) for the end-to-end tests, its access log the ground truth: started
//! on a free port in its own process group (`lab_process::Group`, which stops it whatever
//! happens), waited for within a bound, and its log read once it has settled.

use lab_process::procfs::listens_only;
use lab_process::{free_port, Group, StopPolicy};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running peer server and its access log.
pub struct PeerServer {
    _group: Group,
    pub addr: SocketAddr,
    pub log: PathBuf,
}

impl PeerServer {
    /// `name` on a free port of 127.0.0.1: `command(port, log)` is its command line, logging each
    /// request to `log` (in `dir`). A server that exits at once (its port taken meanwhile) is
    /// started again, twice at most; one that does not listen within 20 s fails the test. Ready
    /// once the server's own process tree, and no other, listens on the port.
    pub fn start(
        name: &str,
        dir: &Path,
        mut command: impl FnMut(u16, &Path) -> Command,
    ) -> PeerServer {
        for attempt in 0.. {
            let port = free_port().unwrap();
            let log = dir.join(format!("access-{port}.log"));
            let mut cmd = command(port, &log);
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            let mut group = Group::spawn(
                &mut cmd,
                None,
                StopPolicy::terminate(Duration::from_secs(5)),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}: run scripts/install-peers.sh"));
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline && group.exited().is_none() {
                // The server itself listening, not another test's that took the port first.
                if listens_only(group.pid(), port) {
                    return PeerServer {
                        _group: group,
                        addr,
                        log,
                    };
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(attempt < 2, "{name} did not start on port {port}");
        }
        unreachable!()
    }

    /// Lines of the access log, once every request the client made has been logged (a server
    /// logs a request after its response, so the last ones may lag the client by a moment) and
    /// the log has then stayed unchanged for a while (a line more than expected would show).
    /// Waits 10 s at most.
    pub fn logged(&self, at_least: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let quiet = Duration::from_millis(200);
        let (mut last, mut since) = (usize::MAX, Instant::now());
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            if lines.len() != last {
                (last, since) = (lines.len(), Instant::now());
            }
            let settled = lines.len() >= at_least && since.elapsed() >= quiet;
            if settled || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// nginx in the foreground, one process, its files in `d` (documents in `d/root`), logging to
/// `log`; `http`: more directives for its `http` block; `server`: its `server` block's (its
/// `listen` and more).
pub fn nginx(d: &Path, port: u16, log: &Path, http: &str, server: &str) -> Command {
    let d = d.display();
    let conf = format!(
        "daemon off; master_process off; worker_processes 1;\n\
         pid {d}/nginx-{port}.pid; error_log {d}/error-{port}.log;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n\
           access_log {log} combined; {http}\n\
           client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;\n\
           uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
           server {{ root {d}/root;\n\
             {server}\n\
           }}\n\
         }}\n",
        log = log.display(),
    );
    let path = format!("{d}/nginx-{port}.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.arg("-c")
        .arg(&path)
        .arg("-e")
        .arg(format!("{d}/error.log"));
    cmd
}
