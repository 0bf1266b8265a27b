//! The HTML report of real runs in Chromium: a 1.5 s run (a last, half second) and a `-n` run
//! (shorter than a second), whose throughput charts must agree with their summaries, every chart
//! drawn, and no table cut off at a desktop width.

use crate::common;

use common::{flint, run_bounded, start_server};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium from `FLINT_CHROMIUM`, else `chromium` on PATH (scripts/install-browser.sh).
fn chromium() -> PathBuf {
    std::env::var_os("FLINT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| "chromium".into())
}

/// The DOM after load, from headless Chromium at 1280 px, bounded in time.
fn dump_dom(page: &Path, scratch: &Path) -> String {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.join("profile").display()
        ))
        .args(["--window-size=1280,3000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("chromium (install it with scripts/install-browser.sh)");
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            // The process group this test started (process_group(0) above).
            let group = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

fn body_attr<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    let body = &dom[dom.find("<body")?..];
    let tag = &body[..body.find('>')?];
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// The throughput chart's points of `run`, as its tooltips give them: (t_s, requests/s).
fn throughput_points(dom: &str, run: &str) -> Vec<(f64, f64)> {
    let prefix = format!("<title>{run}: time into the measured window = ");
    let num = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
    dom.match_indices(&prefix)
        .filter_map(|(i, m)| {
            let rest = &dom[i + m.len()..];
            let text = &rest[..rest.find("</title>")?];
            let (t, rate) = text.split_once(", requests per second = ")?;
            Some((num(t), num(rate)))
        })
        .collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn charts_of_a_short_and_a_counted_run_agree_with_their_summaries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), vec![b'a'; 512]).unwrap();
    let server = start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    let (timed, counted) = (
        dir.path().join("timed.json"),
        dir.path().join("counted.json"),
    );
    for (args, out) in [(["-d", "1.5s"], &timed), (["-n", "300"], &counted)] {
        let run = run_bounded(
            flint()
                .args(["bench", &url, "-c", "2", "-q", "--report", "none"])
                .args(args)
                .arg("--json")
                .arg(out),
            Duration::from_secs(60),
        );
        assert_eq!(run.status.code(), Some(0), "{args:?}");
    }
    let page = dir.path().join("report.html");
    let made = run_bounded(
        flint()
            .arg("report")
            .arg(&timed)
            .arg(&counted)
            .arg("-o")
            .arg(&page),
        Duration::from_secs(60),
    );
    assert_eq!(made.status.code(), Some(0));
    let dom = dump_dom(&page, dir.path());
    assert_eq!(body_attr(&dom, "data-ok"), Some("ok"), "the page's check");
    assert_eq!(
        body_attr(&dom, "data-cut-tables"),
        Some("0"),
        "a table is cut off"
    );
    for needle in [
        "closed loop",
        "Statuses",
        "Errors by kind",
        "Per URL",
        "/a.html",
    ] {
        assert!(dom.contains(needle), "the page lacks {needle}");
    }

    // The 1.5 s run: a point per second's end, the last at 1.5; each second's rate times its
    // length adds up to the requests, so their mean over the window is the summary's rate.
    let points = throughput_points(&dom, "timed");
    assert_eq!(points.len(), 2, "{points:?}");
    assert!((points[1].0 - 1.5).abs() < 0.01, "{points:?}");
    assert_chart_is_the_summary(&points, &json(&timed));

    // The -n run: its own length decides its points (one if it took under a second, as on
    // an idle machine; more on a loaded one), each at the rate of its second (not its count).
    assert_chart_is_the_summary(&throughput_points(&dom, "counted"), &json(&counted));
}

/// A run's throughput chart against its summary: a point at each whole second of the run
/// and one at its end, whose rates times their spans add up to the summary's rate over its
/// duration.
fn assert_chart_is_the_summary(points: &[(f64, f64)], doc: &serde_json::Value) {
    let duration = doc["summary"]["duration_s"].as_f64().unwrap();
    let rps = doc["summary"]["requests_per_s"].as_f64().unwrap();
    assert_eq!(
        points.len(),
        (duration.ceil() as usize).max(1),
        "a point a second over {duration} s: {points:?}"
    );
    let last = points.last().unwrap().0;
    assert!(
        (last - duration).abs() < 0.01,
        "the last at {duration} s: {points:?}"
    );
    let (mut prev, mut requests) = (0.0, 0.0);
    for &(t, rate) in points {
        requests += rate * (t - prev);
        prev = t;
    }
    let charted = requests / duration;
    assert!(
        (charted - rps).abs() <= 0.01 * rps,
        "chart {charted:.0}/s, summary {rps:.0}/s: {points:?}"
    );
}
