//! `flint bench --hosts` with network namespaces as hosts: each namespace has its own address on
//! a bridge the test creates, and the server's access log shows every worker's connections
//! coming from its own namespace's address. The namespaces, veths and bridge are removed whatever
//! happens.

use crate::common;
use crate::hosts_support;

use common::run_bounded;
use hosts_support::{bench, exe, read_json, served, served_by, server_on, LIMIT};
use std::process::Command;

const HOSTS: usize = 3;

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bridge with `HOSTS` namespaces on it, each behind a veth pair; torn down on drop.
struct Lab {
    bridge: String,
    namespaces: Vec<String>,
    /// `10.213.N.` : the bridge is .1, namespace i is .(10 + i).
    prefix: String,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            // Deleting the namespace deletes its end of the veth, and so the pair.
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .status();
    }
}

fn lab() -> Lab {
    let id = std::process::id();
    let mut lab = Lab {
        bridge: format!("fb{id}"),
        namespaces: Vec::new(),
        prefix: format!("10.213.{}.", id % 250 + 1),
    };
    ip(&["link", "add", &lab.bridge, "type", "bridge"]);
    ip(&[
        "addr",
        "add",
        &format!("{}1/24", lab.prefix),
        "dev",
        &lab.bridge,
    ]);
    ip(&["link", "set", &lab.bridge, "up"]);
    for i in 0..HOSTS {
        let ns = format!("flint-{id}-{i}");
        let (outer, inner) = (format!("fh{id}_{i}"), format!("fn{id}_{i}"));
        ip(&["netns", "add", &ns]);
        lab.namespaces.push(ns.clone());
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner,
        ]);
        ip(&["link", "set", &inner, "netns", &ns]);
        ip(&["link", "set", &outer, "master", &lab.bridge]);
        ip(&["link", "set", &outer, "up"]);
        let addr = format!("{}{}/24", lab.prefix, 10 + i);
        ip(&["-n", &ns, "addr", "add", &addr, "dev", &inner]);
        ip(&["-n", &ns, "link", "set", &inner, "up"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
    }
    lab
}

#[test]
fn each_namespace_connects_from_its_own_address() {
    let lab = lab();
    let (dir, server) = server_on(&format!("{}1:0", lab.prefix));
    let json = dir.path().join("r.json");
    let template = format!("ip netns exec {{host}} {} worker", exe());
    let out = run_bounded(
        bench(&server, &["-c", "6", "-n", "600", "-t", "1"])
            .args(["--hosts", &lab.namespaces.join(","), "--launch", &template])
            .args(["--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = read_json(&json);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(doc["summary"]["requests"], 600);
    assert_eq!(served(dir.path(), 600), 600);
    let by_client = served_by(dir.path());
    assert_eq!(by_client.len(), HOSTS, "{by_client:?}");
    for (i, h) in hosts.iter().enumerate() {
        let addr = format!("{}{}", lab.prefix, 10 + i);
        assert_eq!(
            by_client.get(&addr).copied(),
            h["requests"].as_u64(),
            "{addr}: {by_client:?}"
        );
        println!(
            "{}: clock offset {} ms, start skew {} ms",
            h["name"], h["clock_offset_ms"], h["start_skew_ms"]
        );
    }
}
