//! `flint compare` end to end: two `flint serve` servers it starts itself and a dead target.

use crate::common;

use common::{flint, run_bounded};
use std::path::Path;
use std::time::Duration;

/// Running: not gone, and not a zombie left for a reaper (a container's init may never reap).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .expect("pid")
}

#[test]
fn compare_runs_serve_targets_in_turn_and_reports_a_dead_one() {
    let exe = env!("CARGO_BIN_EXE_flint");
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("a.html"), vec![b'x'; 2048]).unwrap();
    let refused = common::refused_addr();
    let closed = refused.addr;
    // `echo $$` gives the pid of the shell, which `exec` turns into the server itself.
    let serve = |name: &str| {
        let pidfile = dir.path().join(format!("{name}.pid"));
        let arg = format!(
            "{name}=echo $$ > {}; exec {exe} serve {} --listen 127.0.0.1:{{port}} --threads 1",
            pidfile.display(),
            www.display()
        );
        (arg, pidfile)
    };
    let (a, a_pid) = serve("a");
    let (b, b_pid) = serve("b");
    let json_path = dir.path().join("compare.json");
    let out = run_bounded(
        flint().args([
            "compare",
            "--serve",
            &a,
            "--target",
            &format!("dead=http://{closed}"),
            "--serve",
            &b,
            "/a.html",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "300ms",
            "--rounds",
            "2",
            "--json",
            json_path.to_str().unwrap(),
        ]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A failed target makes the comparison incomplete: exit status 1, after all the output.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("round 2/2  b:"), "{stderr}");
    assert!(stderr.contains("dead failed"), "{stderr}");
    assert!(stdout.contains("requests/s"), "{stdout}");
    assert!(stdout.contains("1.00x"), "{stdout}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(json["kind"], "compare");
    assert_eq!(json["schema_version"], 1);
    assert!(json["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(json["environment"].is_object());
    assert_eq!(json["options"]["rounds"], 2);
    assert_eq!(json["options"]["clients"], 2);
    assert_eq!(json["options"]["duration_s"], 0.3);
    assert!(json["options"]["pages"].is_null());
    assert_eq!(json["options"]["http"], "persistent");
    assert_eq!(json["workload"]["pages"][0]["files"][0], "/a.html");
    let targets = json["targets"].as_array().unwrap();
    let names: Vec<_> = targets
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "dead", "b"], "command-line order");

    for t in [&targets[0], &targets[2]] {
        assert_eq!(t["status"], "ok", "{t}");
        assert_eq!(t["kind"], "serve");
        assert!(t["error"].is_null());
        let command = t["command"].as_str().unwrap();
        assert!(
            command.contains("serve") && !command.contains("{port}"),
            "{command}"
        );
        assert!(t["url"].as_str().unwrap().starts_with("http://127.0.0.1:"));
        let rounds = t["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2);
        for r in rounds {
            assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["errors"], 0, "{r}");
            assert!(r["response_ms"]["p99"].as_f64().is_some(), "{r}");
        }
        for key in [
            "requests_per_s",
            "throughput_bytes_per_s",
            "response_p50_ms",
            "response_p99_ms",
            "errors",
        ] {
            let f = &t["figures"][key];
            for field in ["median", "min", "max"] {
                assert!(f[field].is_number(), "{key}.{field}: {f}");
            }
            assert!(f["min"].as_f64() <= f["median"].as_f64(), "{key}: {f}");
            assert!(f["median"].as_f64() <= f["max"].as_f64(), "{key}: {f}");
        }
        let rps = &t["figures"]["requests_per_s"];
        assert!(rps["ratio"].as_f64().unwrap() > 0.0, "{rps}");
        // The first target had no errors: no ratio to 0.
        assert!(t["figures"]["errors"]["ratio"].is_null());
    }
    assert_eq!(targets[0]["figures"]["requests_per_s"]["ratio"], 1.0);
    assert_eq!(targets[0]["figures"]["response_p99_ms"]["ratio"], 1.0);

    let dead = &targets[1];
    assert_eq!(dead["status"], "failed");
    assert_eq!(dead["kind"], "target");
    assert!(dead["command"].is_null());
    assert!(dead["rounds"].as_array().unwrap().is_empty());
    let error = dead["error"].as_str().unwrap();
    assert!(error.contains(&closed.to_string()), "{error}");
    assert!(dead["figures"]["requests_per_s"]["median"].is_null());
    assert!(dead["figures"]["requests_per_s"]["ratio"].is_null());

    // Both servers were stopped before flint exited: nothing is left running.
    for pid in [read_pid(&a_pid), read_pid(&b_pid)] {
        assert!(!running(pid), "server pid {pid} still runs");
    }
}

#[test]
fn compare_refuses_a_serve_command_without_a_port() {
    let out = run_bounded(
        flint().args([
            "compare",
            "--serve",
            "a=flint serve . --listen 127.0.0.1:8080",
            "/x",
        ]),
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no {port}"), "{stderr}");
}

#[test]
fn a_target_is_a_url_as_bench_takes_it_with_its_path_and_without_a_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = common::start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    let out = run_bounded(
        flint().args([
            "compare", "--target", &url, "--rounds", "1", "-n", "20", "-c", "2", "-q",
        ]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("{}/a.html", server.addr)),
        "{stdout}"
    );
    // Two targets on different files cannot be compared on the same workload.
    let other = format!("b=http://{}/b.html", server.addr);
    let out = run_bounded(
        flint().args(["compare", "--target", &url, "--target", &other, "-n", "1"]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("every target is measured on the same files"),
        "{stderr}"
    );
}

#[test]
fn help_offers_only_what_compare_takes_and_the_refused_flags_say_why() {
    let out = run_bounded(flint().args(["compare", "--help"]), Duration::from_secs(30));
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(help.contains("--rounds"), "{help}");
    for flag in ["--threshold <EXPR>", "--log <FILE>"] {
        assert!(!help.contains(flag), "{flag} listed: {help}");
    }
    for (flag, value, says) in [
        ("--log", "x.csv", "--log is not supported by compare"),
        (
            "--threshold",
            "p99<1s",
            "--threshold is not supported by compare",
        ),
    ] {
        let out = run_bounded(
            flint().args(["compare", "--target", "http://127.0.0.1:9/", flag, value]),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[test]
fn ctrl_c_ends_a_comparison_with_130_and_still_reports_it() {
    use std::sync::atomic::Ordering;
    let (addr, answered) = common::counting_responder();
    let mut compare = flint()
        .args(["compare", "--target", &format!("a=http://{addr}/x")])
        .args(["--rounds", "2", "-c", "2", "-t", "1", "-d", "60s", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn flint compare");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while answered.load(Ordering::Relaxed) < 100 {
        if std::time::Instant::now() > deadline {
            let _ = compare.kill();
            let _ = compare.wait();
            panic!("the comparison never got going");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = rustix::process::Pid::from_child(&compare);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    // Two rounds of 60 s asked for: ending within 30 s shows the interrupt cut them short.
    let Some(status) = common::wait_exit(&mut compare, Duration::from_secs(30)) else {
        let _ = compare.kill();
        let _ = compare.wait();
        panic!("flint compare did not end within 30 s of Ctrl-C");
    };
    let out = compare.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("requests/s"),
        "the table is lost:\n{stdout}"
    );
}
