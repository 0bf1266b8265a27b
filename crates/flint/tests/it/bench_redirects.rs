//! `flint bench --redirect N`: a redirect of the URL's origin is followed, each hop a request
//! the server logs; what cannot be followed is the response, counted by why; a loop past N is
//! the error too_many_redirects; without the option a 3xx is a response, as before.

use crate::common;
use crate::hosts_support;

use common::{flint, run_bounded};
use hosts_support::{read_json, serve_logged, served, LIMIT};
use test_support::recording::Recording;

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = run_bounded(flint().arg("bench").args(args), LIMIT);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `flint serve` answers a directory without its slash with a 301 to the slash: a redirect of
/// the same origin, relative to nothing, that every browser follows.
#[test]
fn a_directory_without_its_slash_is_followed_to_its_index_and_the_access_log_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::write(root.join("dir/index.html"), b"hello").unwrap();
    let log = dir.path().join("access.log");
    let server = serve_logged(&root, &log, "127.0.0.1:0");
    let url = format!("http://{}/dir", server.addr);
    let json = dir.path().join("r.json");
    let (code, out, err) = bench(&[
        &url,
        "-n",
        "30",
        "-c",
        "3",
        "-q",
        "--redirect",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Statuses:  200 30, 301 30"), "{out}");
    assert!(out.contains("Redirects: 30 followed\n"), "{out}");
    assert!(out.contains("Errors:    none"), "{out}");
    let doc = read_json(&json);
    assert_eq!(doc["summary"]["requests"], 60);
    assert_eq!(doc["summary"]["pages"], 30);
    assert_eq!(doc["summary"]["redirects"]["followed"], 30);
    assert_eq!(doc["summary"]["response_ms"]["count"], 30, "one per entry");
    assert_eq!(doc["config"]["redirect"], 1);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(served(dir.path(), 60), 60, "the access log has every hop");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("\"GET /dir/ HTTP/1.1\" 200").count(),
        30,
        "{text}"
    );

    // Without --redirect the 301 is the response, as wrk counts it.
    let (code, out, err) = bench(&[&url, "-n", "10", "-c", "1", "-q"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Statuses:  301 10"), "{out}");
    assert!(!out.contains("Redirects:"), "{out}");
    assert_eq!(served(dir.path(), 70), 70);
}

#[test]
fn a_chain_is_followed_up_to_n_and_a_loop_past_n_is_an_error() {
    let srv = Recording::start(std::time::Duration::ZERO);
    let base = format!("http://{}", srv.addr);
    let (code, out, err) = bench(&[
        &format!("{base}/hop/3/307/x"),
        "-n",
        "10",
        "-c",
        "2",
        "-q",
        "--redirect",
        "3",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Statuses:  200 10, 307 30"), "{out}");
    assert!(out.contains("Redirects: 30 followed\n"), "{out}");

    // One hop short: the last redirect is past N.
    let (code, out, err) = bench(&[
        &format!("{base}/hop/3/302/x"),
        "-n",
        "10",
        "-q",
        "--redirect",
        "2",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("too_many_redirects 10"), "{out}");
    assert!(
        err.contains("not one response succeeded (too_many_redirects 10)"),
        "{err}"
    );

    let (code, out, _) = bench(&[&format!("{base}/loop"), "-n", "5", "-q", "--redirect", "4"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("Statuses:  302 25"), "{out}");
    assert!(out.contains("Redirects: 20 followed\n"), "{out}");
    // Every hop reached the server: 4 requests an entry, then 3 (the third redirect past N),
    // then 5 (the fifth).
    assert_eq!(srv.settled(LIMIT), Some(10 * 4 + 10 * 3 + 5 * 5));
}

#[test]
fn what_cannot_be_followed_is_the_response_counted_by_why() {
    let srv = Recording::start(std::time::Duration::ZERO);
    let base = format!("http://{}", srv.addr);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [\"/away\", \"/nowhere\", \"/bad\"]\n",
    )
    .unwrap();
    let (code, out, err) = bench(&[
        &base,
        "-w",
        wl.to_str().unwrap(),
        "-n",
        "4",
        "-q",
        "--report",
        "summary",
        "--redirect",
        "5",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Statuses:  302 12"), "{out}");
    assert!(
        out.contains(
            "Redirects: 0 followed; not followed: cross_origin 4, no_location 4, bad_location 4"
        ),
        "{out}"
    );
    let doc = read_json(&json);
    let not = &doc["summary"]["redirects"]["not_followed"];
    assert_eq!(not["cross_origin"], 4, "{doc}");
    assert_eq!(not["no_location"], 4);
    assert_eq!(not["bad_location"], 4);
    // With --expect-status 2xx a redirect that stood is an error of its class.
    let (code, out, _) = bench(&[
        &format!("{base}/away"),
        "-n",
        "3",
        "-q",
        "--redirect",
        "5",
        "--expect-status",
        "2xx",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("status_3xx 3"), "{out}");
}

#[test]
fn bad_redirect_values_are_one_clear_line() {
    let (code, _, err) = bench(&["http://127.0.0.1:1/", "--redirect", "x"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--redirect"), "{err}");
    let (code, _, err) = bench(&["http://127.0.0.1:1/", "--redirect", "101"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("101 is not in 0..=100"), "{err}");
}
