//! The comparison runner against tiny in-test servers: rounds in turn, failures reported while
//! the others still run, figures and ratios in the JSON.

use bench::{BenchConfig, Stop, Target, Workload};
use lab_compare::{self as compare, Endpoint, Event, Plan, ServerOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A keep-alive HTTP server answering every request with a 2-byte body. Its threads end when
/// the test process does; each connection read is bounded by a timeout.
fn tiny_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || answer(conn));
        }
    });
    addr
}

fn answer(mut conn: TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 4096];
    let mut pending = Vec::new();
    while let Ok(n) = conn.read(&mut buf) {
        if n == 0 {
            return;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if conn.write_all(reply).is_err() {
                return;
            }
        }
    }
}

fn closed_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn target(addr: SocketAddr) -> Target {
    Target::http(addr)
}

fn config() -> BenchConfig {
    BenchConfig {
        concurrency: 2,
        stop: Stop::Duration(Duration::from_millis(150)),
        connect_timeout: Duration::from_secs(1),
        response_timeout: Duration::from_secs(2),
        ..BenchConfig::new(target(closed_port()))
    }
}

fn url(name: &str, addr: SocketAddr) -> Endpoint {
    Endpoint::Url {
        name: name.into(),
        target: target(addr),
    }
}

#[test]
fn rounds_alternate_and_a_failed_target_leaves_the_others_running() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        endpoints: vec![
            url("a", tiny_server()),
            url("dead", closed_port()),
            Endpoint::Serve {
                name: "broken".into(),
                command: "echo 'no such option' >&2; exit 2 # {port}".into(),
            },
            url("b", tiny_server()),
        ],
        rounds: 2,
        config: config(),
        workload: Workload::from_paths(&["/x".to_string()]).unwrap(),
        server: ServerOptions::default(),
        log_dir: dir.path().to_owned(),
        hosts: None,
    };
    let mut order = Vec::new();
    let mut failed = Vec::new();
    let start = Instant::now();
    let result = compare::run(&plan, &AtomicBool::new(false), &mut |e| match e {
        Event::Round { round, name, .. } => order.push(format!("{name}{round}")),
        Event::Failed { name, .. } => failed.push(name.to_owned()),
        _ => {}
    })
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(order, ["a1", "b1", "a2", "b2"]);
    assert_eq!(failed, ["dead", "broken"]);
    assert!(!result.interrupted);

    let json = compare::json(&result);
    let back: results::CompareResult = serde_json::from_value(json.clone()).expect("reads back");
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        json,
        "the reader's type loses nothing the writer wrote"
    );
    assert_eq!(json["kind"], "compare");
    assert_eq!(json["options"]["rounds"], 2);
    assert_eq!(json["options"]["duration_s"], 0.15);
    assert!(json["options"]["pages"].is_null());
    assert_eq!(json["workload"]["pages"][0]["files"][0], "/x");
    let t = json["targets"].as_array().unwrap();
    let names: Vec<_> = t.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "dead", "broken", "b"]);

    for ok in [&t[0], &t[3]] {
        assert_eq!(ok["status"], "ok");
        assert_eq!(ok["kind"], "target");
        assert!(ok["error"].is_null());
        assert_eq!(ok["rounds"].as_array().unwrap().len(), 2);
        let rps = &ok["figures"]["requests_per_s"];
        assert!(rps["median"].as_f64().unwrap() > 0.0, "{rps}");
        assert!(rps["min"].as_f64() <= rps["median"].as_f64());
        assert!(rps["median"].as_f64() <= rps["max"].as_f64());
        assert!(rps["ratio"].as_f64().unwrap() > 0.0);
        // 0 errors on the baseline: no ratio.
        assert!(ok["figures"]["errors"]["ratio"].is_null());
    }
    assert_eq!(t[0]["figures"]["requests_per_s"]["ratio"], 1.0);

    assert_eq!(t[1]["status"], "failed");
    let err = t[1]["error"].as_str().unwrap();
    assert!(err.contains("cannot connect"), "{err}");
    assert!(t[1]["rounds"].as_array().unwrap().is_empty());
    assert!(t[1]["figures"]["requests_per_s"]["median"].is_null());

    assert_eq!(t[2]["status"], "failed");
    assert_eq!(t[2]["kind"], "serve");
    assert!(t[2]["url"].is_null());
    let err = t[2]["error"].as_str().unwrap();
    assert!(err.contains("no such option"), "{err}");

    let table = compare::table(&result);
    assert!(table.contains("\nFetched from each: /x\n"), "{table}");
    assert!(table.contains("requests/s"), "{table}");
    assert!(table.contains("1.00x"), "{table}");
    assert!(table.contains("dead"), "{table}");
    assert!(table.contains("failed"), "{table}");
}

#[test]
fn a_failed_first_target_gives_no_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        endpoints: vec![url("dead", closed_port()), url("a", tiny_server())],
        rounds: 1,
        config: config(),
        workload: Workload::from_paths(&["/x".to_string()]).unwrap(),
        server: ServerOptions::default(),
        log_dir: dir.path().to_owned(),
        hosts: None,
    };
    let result = compare::run(&plan, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let json = compare::json(&result);
    let a = &json["targets"][1];
    assert_eq!(a["status"], "ok");
    assert!(a["figures"]["requests_per_s"]["median"].as_f64().unwrap() > 0.0);
    assert!(a["figures"]["requests_per_s"]["ratio"].is_null());
    // The table says why there are none, rather than name a dead baseline's median.
    let table = compare::table(&result);
    assert!(
        table.contains("no ratios: the baseline, dead (the first target), failed"),
        "{table}"
    );
    assert!(!table.contains("ratio = median / dead's median"), "{table}");
}

#[test]
fn stop_before_the_first_round_measures_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        endpoints: vec![url("a", tiny_server())],
        rounds: 3,
        config: config(),
        workload: Workload::from_paths(&["/x".to_string()]).unwrap(),
        server: ServerOptions::default(),
        log_dir: dir.path().to_owned(),
        hosts: None,
    };
    let result = compare::run(&plan, &AtomicBool::new(true), &mut |_| {}).unwrap();
    assert!(result.interrupted);
    assert!(result.targets[0].rounds.is_empty());
    assert!(result.targets[0].ok());
    assert!(compare::table(&result).contains("Interrupted"));
}
