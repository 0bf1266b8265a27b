//! `flint bench --http 2 --redirect N` against Debian's nginx over h2c (prior knowledge), its
//! `return 302` and its directory slash: a redirect is followed as a new stream of the same
//! connection, every hop one line of nginx's access log (its count is flint's requests, as
//! without redirects), a page's files as concurrent streams and one-file pages kept 4 deep.
//!
//! Runs of `-n` pages: every request answered, so nginx's count is exact. (How a timed run's
//! end is counted with redirects is held to a server that reads everything it is sent, in
//! crates/bench/tests/it/engine_redirects.rs: nginx's log was seen to lack, now and then, a
//! request written just before the end, which it had not read when the client closed.)
//!
//! nginx is installed by scripts/install-peers.sh; without it this test fails saying so. It is
//! started in its own process group and stopped by it whatever happens; every wait is bounded.

use crate::common;

use common::peer_server::{nginx, PeerServer};
use common::{flint, run_bounded};
use serde_json::Value;
use std::time::Duration;

/// nginx on a free port over h2c, with redirects, and its directory.
struct Nginx {
    server: PeerServer,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn start() -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::write(root.join("a.txt"), b"hello").unwrap();
        std::fs::write(root.join("dir/index.html"), b"index").unwrap();
        let server = PeerServer::start("nginx", dir.path(), |port, log| {
            let redirects = format!(
                "listen 127.0.0.1:{port} http2;\n\
                 location = /r {{ return 302 /a.txt; }}\n\
                 location = /r2 {{ return 307 r; }}\n\
                 location = /loop {{ return 302 /loop; }}\n\
                 location = /away {{ return 302 http://flint.invalid/a.txt; }}"
            );
            nginx(dir.path(), port, log, "", &redirects)
        });
        Nginx { server, dir }
    }
}

/// `flint bench --http 2` on nginx with `args`: exit code, stdout, JSON.
fn bench(n: &Nginx, path: &str, args: &[&str]) -> (Option<i32>, String, Value) {
    let json = n.dir.path().join("r.json");
    let _ = std::fs::remove_file(&json);
    let out = run_bounded(
        flint()
            .args([
                "bench",
                &format!("http://{}{path}", n.server.addr),
                "--http",
                "2",
            ])
            .args(args)
            .args(["-q", "--report", "summary", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        out.status.code(),
        stdout,
        serde_json::from_str(&text).unwrap(),
    )
}

#[test]
fn http2_follows_redirects_as_new_streams_and_nginx_logs_every_hop() {
    let n = Nginx::start();
    let mut logged = 0;
    // A page's files as concurrent streams: a 302 to an absolute path (nginx makes it an
    // absolute URL of its own origin), a 307 chain through a relative Location, a directory.
    let page =
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [\"/r\", \"/a.txt\", \"/r2\", \"/dir\"]\n";
    let wl = n.dir.path().join("page.toml");
    std::fs::write(&wl, page).unwrap();
    let w = wl.to_str().unwrap();
    let (code, out, doc) = bench(&n, "", &["-w", w, "-n", "20", "-c", "2", "--redirect", "2"]);
    assert_eq!(code, Some(0), "{out}");
    // Per page: /r 2 requests, /a.txt 1, /r2 -> /r -> /a.txt 3, /dir -> /dir/ 2.
    assert_eq!(doc["summary"]["requests"], 20 * 8, "{out}");
    assert_eq!(doc["summary"]["pages"], 20, "{out}");
    assert_eq!(doc["summary"]["redirects"]["followed"], 20 * 4, "{out}");
    assert_eq!(doc["summary"]["status_counts"]["200"], 20 * 4, "{out}");
    assert_eq!(doc["summary"]["http2"]["streams"], 20 * 8, "{out}");
    assert_eq!(doc["summary"]["errors"], 0, "{out}");
    logged += 20 * 8;
    assert_eq!(n.server.logged(logged).len(), logged);

    // One-file pages kept 4 deep: each redirect a stream of its own page.
    let (code, out, doc) = bench(
        &n,
        "/r",
        &["-n", "40", "-c", "1", "--streams", "4", "--redirect", "1"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(doc["summary"]["requests"], 80, "{out}");
    assert_eq!(doc["summary"]["pages"], 40, "{out}");
    assert!(out.contains("Redirects: 40 followed\n"), "{out}");
    logged += 80;
    assert_eq!(n.server.logged(logged).len(), logged);

    // A loop past N, and another origin.
    let (code, out, doc) = bench(&n, "/loop", &["-n", "5", "-c", "1", "--redirect", "3"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(doc["errors_by_kind"]["too_many_redirects"], 5, "{out}");
    assert_eq!(doc["summary"]["requests"], 20, "{out}");
    logged += 20;
    let (code, out, doc) = bench(&n, "/away", &["-n", "5", "-c", "1", "--redirect", "3"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        doc["summary"]["redirects"]["not_followed"]["cross_origin"], 5,
        "{out}"
    );
    logged += 5;
    assert_eq!(n.server.logged(logged).len(), logged);
}
