//! `flint bench --connections-per-client 6` against nginx, whose access log names each
//! request's connection (`$connection`): a page of 7 files fetched by one Webchild's six
//! connections, kept alive from page to page, and a page time no longer than its files' times
//! summed. nginx is installed by scripts/install-peers.sh; without it the test fails saying so.
//! nginx is stopped by its process group whatever happens; every wait is bounded.

use crate::common;

use common::peer_server::{nginx, PeerServer};
use common::run_bounded;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

const FILES: usize = 7;
const PAGES: u64 = 20;

#[test]
fn six_connections_of_one_webchild_share_a_page_of_seven_files_at_nginx() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let mut files = Vec::new();
    for i in 0..FILES {
        std::fs::write(root.join(format!("f{i}.bin")), vec![b'x'; 2048 << i]).unwrap();
        files.push(format!("\"/f{i}.bin\""));
    }
    let toml = format!(
        "[[page]]\nname = \"page\"\nweight = 1\nfiles = [{}]\n",
        files.join(", ")
    );
    std::fs::write(dir.path().join("page.toml"), toml).unwrap();
    // One line a request: its connection's serial number, the request line, the status (the
    // helper's config logs in the combined format: this test's format replaces it).
    let server = PeerServer::start("nginx", dir.path(), |port, log| {
        let cmd = nginx(
            dir.path(),
            port,
            log,
            "",
            &format!("listen 127.0.0.1:{port};"),
        );
        let conf = dir.path().join(format!("nginx-{port}.conf"));
        let text = std::fs::read_to_string(&conf).unwrap();
        let format = "log_format conn '$connection \"$request\" $status'; access_log";
        let text = text.replacen("access_log", format, 1);
        std::fs::write(&conf, text.replace(" combined;", " conn;")).unwrap();
        cmd
    });
    let json = dir.path().join("bench.json");
    let out = run_bounded(
        common::flint()
            .args(["bench", &format!("http://127.0.0.1:{}", server.addr.port())])
            .arg("-w")
            .arg(dir.path().join("page.toml"))
            .args([
                "-c",
                "1",
                "--connections-per-client",
                "6",
                "-n",
                &PAGES.to_string(),
            ])
            .args(["-q", "--report", "none", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(json["config"]["connections_per_client"], 6);
    let summary = &json["summary"];
    let requests = PAGES * FILES as u64;
    assert_eq!(summary["requests"], requests, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    let lines = server.logged(requests as usize);
    assert_eq!(lines.len() as u64, requests);
    assert!(lines.iter().all(|l| l.ends_with(" 200")), "{lines:?}");
    let connections: BTreeSet<&str> = lines.iter().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(connections.len(), 6, "{connections:?}");
    // The page's files overlap: a page takes at most its files' times summed.
    let mean = |name: &str| {
        summary[name]["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("summary.{name}.mean in {summary}"))
    };
    let page = mean("page_ms");
    let files_time = mean("response_ms") * FILES as f64;
    assert!(page <= files_time, "page {page} ms, files {files_time} ms");
}
