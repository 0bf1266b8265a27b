//! Each peer server starts from its package with the lab's config, serves the shared document
//! root on loopback, pinned, and is gone (port closed, no process left) once stopped.
//!
//! The peers are installed by scripts/install-peers.sh, which the test command runs: a missing
//! one fails here with the command that installs it, rather than skipping silently.

use lab_peers::{Peer, PeerKind, PeerSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_support::flint_bin;

fn docroot() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    // Apache's children run as www-data under root: the root must be readable by others.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(
        dir.path().join("index.html"),
        b"<p>hello from the lab</p>\n",
    )
    .expect("write");
    dir
}

fn spec(root: &Path, digest: bool) -> PeerSpec {
    PeerSpec {
        root: root.to_owned(),
        digest,
        max_clients: 4,
        cpu: Some(0),
        flint_bin: None,
        ready_timeout: Duration::from_secs(20),
        tls: None,
        http2: false,
        net: None,
    }
}

/// One HTTP/1.0 GET; the whole response as text.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("write");
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

fn cpus_allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_owned()
}

fn start_or_explain(kind: PeerKind, spec: &PeerSpec) -> Peer {
    match Peer::start(kind, spec) {
        Ok(peer) => peer,
        Err(e) => panic!("{kind}: {e}\n(scripts/install-peers.sh installs every peer)"),
    }
}

/// Starts `kind`, checks it serves and is pinned, stops it, checks it is gone.
fn lifecycle(kind: PeerKind, flint_bin: Option<PathBuf>) {
    let root = docroot();
    let mut spec = spec(root.path(), false);
    spec.flint_bin = flint_bin;
    let peer = start_or_explain(kind, &spec);
    let addr = peer.addr();
    assert!(addr.ip().is_loopback());
    assert!(
        peer.version().contains('/') && peer.version().chars().any(|c| c.is_ascii_digit()),
        "{kind}: version {:?}",
        peer.version()
    );
    let response = get(addr, "/index.html");
    assert!(
        response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200"),
        "{kind}: {response}"
    );
    assert!(
        response.ends_with("<p>hello from the lab</p>\n"),
        "{kind}: {response}"
    );
    let pids = lab_process::procfs::process_tree(peer.pid()).expect("the peer runs");
    assert_eq!(pids[0], peer.pid());
    if matches!(kind, PeerKind::ApachePrefork) {
        assert!(pids.len() > 4, "{kind}: prefork children {pids:?}");
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        for &pid in &pids {
            assert_eq!(
                cpus_allowed(pid),
                "0",
                "{kind}: pid {pid} not pinned to core 0"
            );
        }
    }
    peer.stop().expect("stop");
    for pid in pids {
        let alive =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
        assert!(!alive, "{kind}: pid {pid} survived the stop");
    }
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err(),
        "{kind}: {addr} still accepts after the stop"
    );
}

#[test]
fn nginx_starts_serves_pinned_and_stops() {
    lifecycle(PeerKind::Nginx, None);
}

#[test]
fn apache_prefork_starts_its_whole_pool_serves_and_stops_with_its_children() {
    lifecycle(PeerKind::ApachePrefork, None);
}

#[test]
fn apache_event_starts_serves_and_stops_with_its_children() {
    lifecycle(PeerKind::ApacheEvent, None);
}

#[test]
fn lighttpd_starts_serves_pinned_and_stops() {
    lifecycle(PeerKind::Lighttpd, None);
}

#[test]
fn h2o_starts_serves_pinned_and_stops() {
    lifecycle(PeerKind::H2o, None);
}

#[test]
fn caddy_starts_serves_pinned_and_stops() {
    lifecycle(PeerKind::Caddy, None);
}

#[test]
fn apache_with_content_digest_sends_content_md5() {
    let root = docroot();
    let peer = start_or_explain(PeerKind::ApachePrefork, &spec(root.path(), true));
    let response = get(peer.addr(), "/index.html");
    assert!(
        response.to_ascii_lowercase().contains("\r\ncontent-md5: "),
        "{response}"
    );
}

#[test]
fn dropping_a_peer_stops_it() {
    let root = docroot();
    let peer = start_or_explain(PeerKind::Nginx, &spec(root.path(), false));
    let (addr, pid, dir) = (peer.addr(), peer.pid(), peer.dir().to_owned());
    drop(peer);
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(Instant::now() < deadline, "nginx {pid} survived the drop");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err());
    assert!(!dir.exists(), "the peer's directory was not removed");
}

#[test]
fn flint_serve_as_a_peer_starts_serves_pinned_and_stops() {
    lifecycle(PeerKind::Flint, Some(flint_bin()));
}

#[test]
fn flint_serve_with_digest_sends_content_md5() {
    let root = docroot();
    let mut spec = spec(root.path(), true);
    spec.flint_bin = Some(flint_bin());
    let peer = start_or_explain(PeerKind::Flint, &spec);
    let response = get(peer.addr(), "/index.html");
    assert!(
        response.to_ascii_lowercase().contains("\r\ncontent-md5: "),
        "{response}"
    );
}
