//! The sizes experiment end to end, short: two sizes, two servers, half a second each. Checks the
//! JSON's shape (the HTML report reads it) and that its figures agree with each other.

use crate::common;

use common::{num, run_lab};
use lab_experiments::{self as experiments, Experiment, LabOptions, Status};
use lab_peers::PeerKind;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use test_support::flint_bin;

fn options(servers: Vec<PeerKind>, flint: PathBuf) -> LabOptions {
    let mut opts = LabOptions::new(Some(flint));
    opts.duration = Duration::from_millis(500);
    opts.warmup = Duration::from_millis(100);
    opts.servers = servers;
    opts.sizes = vec![1024, 20 * 1024];
    opts
}

#[test]
fn sizes_end_to_end_gives_consistent_rows_in_the_json_shape() {
    let opts = options(vec![PeerKind::Flint, PeerKind::Nginx], flint_bin());
    let (report, text, progress) = run_lab(Experiment::Sizes, &opts, false);
    assert!(text.contains("sizes: output bandwidth, MB/s"), "{text}");
    assert!(text.contains("20 KB"), "{text}");
    // Progress goes to its own stream, a line as each measurement starts.
    for n in 1..=4 {
        assert!(progress.contains(&format!("[{n}/4] ")), "{progress}");
    }
    assert!(!text.contains("[1/4]"), "{text}");
    // The tracer's long note: once, however many measurements carry it.
    let notes: Vec<&str> = text.lines().filter(|l| l.starts_with("note: ")).collect();
    let mut distinct = notes.clone();
    distinct.dedup();
    assert_eq!(notes.len(), distinct.len(), "{text}");

    let json = report.to_json();
    assert_eq!(json["kind"], "lab");
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["experiment"], "sizes");
    assert!(json["flint_version"].is_string());
    assert!(json["started_at"]
        .as_str()
        .is_some_and(|s| s.ends_with('Z')));
    assert!(json["environment"].is_object());
    assert_eq!(num(&json["options"], "duration_s"), 0.5);
    // Every option that shaped the run, for the report's disclosure.
    assert_eq!(num(&json["options"], "warmup_s"), 0.1);
    assert!(json["options"]["pages"].is_null());
    let profile = json["options"]["profile"].as_str().expect("profile");
    assert!(
        matches!(profile, "perf" | "strace" | "unavailable"),
        "{profile}"
    );
    assert_eq!(
        json["options"]["servers"],
        serde_json::json!(["flint", "nginx"])
    );
    // No option of an experiment that did not run: the page experiment's round trips and ways,
    // the dynamic experiment's test types, database and deployments shaped nothing here.
    for absent in ["rtt_ms", "modes", "tests", "db", "deployments"] {
        assert!(json["options"].get(absent).is_none(), "{}", json["options"]);
    }
    for s in json["servers"].as_array().expect("servers") {
        assert_eq!(s["status"], "ok", "{s}");
        assert!(
            s["version"].as_str().is_some_and(|v| v.contains('/')),
            "{s}"
        );
        assert!(s.get("note").is_some(), "{s}");
    }

    let results = json["results"].as_array().expect("results");
    assert_eq!(results.len(), 4, "2 servers x 2 sizes: {results:?}");
    for r in results {
        assert_eq!(r["experiment"], "sizes");
        assert_eq!(r["mode"], "persistent");
        assert!(matches!(r["server"].as_str(), Some("flint" | "nginx")));
        let size = r["size_bytes"].as_u64().expect("size_bytes") as f64;
        let requests = r["requests"].as_u64().expect("requests") as f64;
        let (duration, rps, bps) = (
            num(r, "duration_s"),
            num(r, "requests_per_s"),
            num(r, "bytes_per_s"),
        );
        assert!(requests > 0.0, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert!((duration - 0.5).abs() < 0.1, "{r}");
        assert!((rps * duration - requests).abs() <= 1.0, "{r}");
        // Each response is the document plus a head of one to a few hundred bytes.
        let per_response = bps / rps;
        assert!(
            per_response > size + 50.0 && per_response < size + 600.0,
            "{per_response} bytes per response for a {size}-byte document: {r}"
        );
        assert!(r["client_limited"].is_boolean());
        assert_eq!(r["interrupted"], false, "{r}");
        let cpu = num(r, "server_cpu_us_per_request");
        assert!(
            cpu > 0.0 && cpu < 1e6 / rps * 1.5,
            "{cpu} µs/request at {rps}/s: {r}"
        );
        // The profile: its calls add up to what syscalls_per_request says.
        assert!(
            matches!(r["profile_method"].as_str(), Some("strace" | "perf")),
            "no profile (strace or perf must work here: scripts/install-peers.sh): {r}"
        );
        let rows = r["syscalls"].as_array().expect("syscalls");
        assert!(!rows.is_empty());
        let total: f64 = rows.iter().map(|s| num(s, "calls")).sum();
        let per_request = num(r, "syscalls_per_request");
        assert!(
            (per_request * requests - total).abs() <= 1e-6 * total.max(1.0),
            "{per_request} x {requests} != {total}"
        );
        // Serving a request takes at least a read and a write of some kind.
        assert!(per_request >= 1.0, "{r}");
        for s in rows {
            assert!(s["name"].is_string() && s["errors"].is_u64() && s.get("seconds").is_some());
        }
    }
}

#[test]
fn a_missing_peer_is_named_with_its_install_command_and_the_others_still_run() {
    let mut opts = options(
        vec![PeerKind::Flint, PeerKind::Nginx],
        PathBuf::from("/nonexistent/flint"),
    );
    opts.sizes = vec![1024];
    opts.profile = false;
    let (report, _, warnings) = run_lab(Experiment::Sizes, &opts, false);
    let flint = &report.servers[0];
    assert_eq!(flint.name, "flint");
    assert_eq!(flint.status, Status::Missing);
    assert!(
        flint
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("install: ")),
        "{flint:?}"
    );
    assert_eq!(report.servers[1].status, Status::Ok);
    assert_eq!(report.results.len(), 1);
    assert_eq!(report.results[0].server, "nginx");
    assert_eq!(report.results[0].syscalls_per_request, None);
    assert_eq!(report.results[0].profile_method, None);
    assert!(warnings.contains("flint is not installed"), "{warnings}");
    // The count and the estimate are of the measurements made: nginx's one, not flint's too.
    let header = (warnings.lines())
        .find(|l| l.starts_with("flint lab sizes: "))
        .unwrap_or_else(|| panic!("no first line: {warnings}"));
    assert!(header.contains(": 1 measurement of "), "{header}");
    assert!(warnings.contains("[1/1] nginx sizes"), "{warnings}");
}

#[test]
fn a_stop_before_the_start_measures_nothing_and_says_interrupted() {
    let opts = options(vec![PeerKind::Nginx], flint_bin());
    let (report, _, _) = run_lab(Experiment::All, &opts, true);
    assert!(report.interrupted);
    assert!(report.results.is_empty());
    // Never reached: not a server that was measured.
    let json = report.to_json();
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["servers"][0]["status"], "not_run", "{json}");
    assert!(
        (json["servers"][0]["note"].as_str()).is_some_and(|n| n.contains("interrupted")),
        "{json}"
    );
}

/// The progress stream that presses Ctrl-C as the first measurement starts.
struct StopAtFirst<'a>(&'a AtomicBool, Vec<u8>);

impl Write for StopAtFirst<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        if String::from_utf8_lossy(&self.1).contains("[1/") {
            self.0.store(true, Ordering::Relaxed);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_measurement_cut_short_is_marked_interrupted_not_client_limited() {
    let mut opts = options(vec![PeerKind::Flint, PeerKind::Nginx], flint_bin());
    opts.profile = false;
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    let mut progress = StopAtFirst(&stop, Vec::new());
    let report = experiments::run(Experiment::Sizes, &opts, &mut out, &mut progress, &stop)
        .expect("lab run");
    assert!(report.interrupted);
    assert_eq!(report.results.len(), 1, "{:?}", report.results);
    let row = &report.results[0];
    assert!(row.interrupted && !row.client_limited, "{row:?}");
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("interrupted after"), "{text}");
    assert!(
        !text.contains("req/s"),
        "an interrupted run has no rate: {text}"
    );
    assert!(!text.contains("sizes: output bandwidth"), "{text}");
    // The server measured keeps its status; the one never reached is not run.
    let json = report.to_json();
    assert_eq!(json["interrupted"], true, "{json}");
    let status = |name: &str| {
        let servers = json["servers"].as_array().expect("servers");
        (servers.iter().find(|s| s["name"] == name)).map(|s| s["status"].clone())
    };
    assert_eq!(status("flint"), Some("ok".into()));
    assert_eq!(status("nginx"), Some("not_run".into()));
}

#[test]
fn a_server_whose_measurements_got_no_response_is_failed_with_the_first_reason() {
    // A window of a microsecond with no warm-up: no 4 MiB response can be asked for and read
    // in it, however fast the machine.
    let mut opts = options(vec![PeerKind::Flint], flint_bin());
    opts.duration = Duration::from_micros(1);
    opts.warmup = Duration::ZERO;
    opts.sizes = vec![4 << 20];
    opts.profile = false;
    let (report, _, progress) = run_lab(Experiment::Sizes, &opts, false);
    assert_eq!(report.results.len(), 1, "{progress}");
    let row = &report.results[0];
    assert!(row.measured_nothing(), "{row:?}");
    let json = report.to_json();
    let server = &json["servers"][0];
    assert_eq!(server["status"], "failed", "{json}");
    let note = server["note"].as_str().expect("the reason");
    assert!(
        note.starts_with("sizes 4194304 B: measured nothing: not one response in"),
        "{note}"
    );
}
