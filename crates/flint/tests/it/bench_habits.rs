//! What users of wrk, wrk2, oha, hey, h2load and k6 type out of habit: accepted as they mean it,
//! or refused in one line naming the flag they probably meant (exit 2), before anything starts.

use crate::common;

use common::{flint, run_bounded, start_server};
use std::process::Output;
use std::time::Duration;

fn bench(args: &[&str]) -> Output {
    run_bounded(flint().arg("bench").args(args), Duration::from_secs(60))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Exit 2 with one line on stderr containing `needle`.
fn refused(out: &Output, needle: &str) {
    let (_, err) = text(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
    // clap's own errors add a pointer to --help after a blank line.
    let said = err
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"));
    assert_eq!(said.count(), 1, "one line: {err}");
}

fn served() -> (tempfile::TempDir, common::Server) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = start_server(dir.path(), 1);
    (dir, server)
}

#[test]
fn a_bare_number_is_not_a_host_and_a_rate_flag_is_pointed_to() {
    refused(&bench(&["100", "-n", "1"]), "`100` is not a server");
    // hey's -q 100 with -c 10 is 1000 requests/s: flint's -q is --quiet.
    let out = bench(&["-c", "10", "-q", "100", "http://127.0.0.1:9/"]);
    refused(&out, "--rate");
}

#[test]
fn rates_and_durations_take_the_units_the_tools_write() {
    let (_dir, server) = served();
    let url = format!("http://{}/a.html", server.addr);
    for (rate, shown) in [
        ("1k", "open loop at 1000 pages/s"),
        ("200/s", "at 200 pages/s"),
    ] {
        let out = bench(&[&url, "--rate", rate, "-n", "20", "-q"]);
        let (stdout, err) = text(&out);
        assert_eq!(out.status.code(), Some(0), "--rate {rate}: {err}");
        assert!(stdout.contains(shown), "{stdout}");
    }
    // wrk's and hey's bare seconds, and k6's compound durations.
    for (d, shown) in [("1", "run of 1.000 s"), ("0m1s500ms", "run of 1.500 s")] {
        let out = bench(&[&url, "-d", d, "-c", "1", "-q"]);
        let (stdout, err) = text(&out);
        assert_eq!(out.status.code(), Some(0), "-d {d}: {err}");
        assert!(stdout.contains(shown), "-d {d}: {stdout}");
    }
    let out = bench(&[&url, "--rate", "1000/d"]);
    refused(&out, "is not a rate");
}

#[test]
fn connections_is_the_clients_flag_and_a_number_is_not_a_method() {
    let (_dir, server) = served();
    let url = format!("http://{}/a.html", server.addr);
    let out = bench(&["--connections", "2", &url, "-n", "4", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(text(&out).0.contains("2 Webchildren"), "{}", text(&out).0);
    refused(&bench(&["-m", "10", &url]), "--http 2 --streams 10");
}

#[test]
fn other_tools_flags_get_flints_own_named_in_one_line() {
    let url = "http://127.0.0.1:9/";
    for (args, says) in [
        (
            &["-m", "100"][..],
            "-m 100: h2load's streams per connection are --http 2 --streams 100",
        ),
        (&["-D", "2"], "h2load's run length is -d 2"),
        (&["-L"], "--redirect N"),
        (&["-v"], "--debug"),
        (&["-j"], "--json FILE"),
        (&["-o", "csv"], "--log FILE"),
        (&["-R", "100"], "--rate 100"),
        (&["-R100"], "--rate 100"),
        (&["--disable-keepalive"], "--http 1.0"),
        // hey's single-dash flags: not -d with a value, not -h (help) with more after it.
        (&["-disable-keepalive"], "-disable-keepalive: --http 1.0"),
        (&["-host", "example.com"], "-H 'Host: example.com'"),
        (&["--data", "a=b"], "--body 'a=b'"),
        (&["--data=a=b"], "--body 'a=b'"),
        (&["--host", "example.com"], "-H 'Host: example.com'"),
        (
            &["-m", "POST", "-d", "a=b"],
            "a request body (oha's and hey's -d) is --body 'a=b'",
        ),
    ] {
        let line = [&[url][..], args].concat();
        refused(&bench(&line), says);
    }
    // The same table for the other commands with the load options.
    let out = run_bounded(flint().args(["run", "-R", "100"]), Duration::from_secs(60));
    refused(&out, "--rate 100");
    // A microsecond knob hints at microseconds.
    refused(&bench(&[url, "--busy-poll", "5"]), "write e.g. `5us`");
}

#[test]
fn other_tools_flags_that_mean_the_same_are_taken() {
    let (_dir, server) = served();
    let url = format!("http://{}/a.html", server.addr);
    // hey's and oha's -z, curl's -X, oha's --no-tui, wrk's --latency.
    let out = bench(&[
        &url,
        "-z",
        "0.5",
        "-X",
        "HEAD",
        "--no-tui",
        "--latency",
        "-c",
        "1",
        "--debug",
    ]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("run of 0.500 s"), "{stdout}");
    assert!(err.contains("HEAD /a.html"), "{err}");
    // oha's --no-tui is flint's -q: both written say the same once.
    let out = bench(&[&url, "-n", "2", "-c", "1", "--no-tui", "-q"]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("Statuses:  200 2"), "{stdout}");
    for flag in ["--http2", "--http2-prior-knowledge", "-h2"] {
        let out = bench(&[&url, flag, "-n", "4", "-c", "1", "-q"]);
        let (stdout, err) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{flag}: {err}");
        assert!(stdout.contains("Mode:      HTTP/2"), "{flag}: {stdout}");
        assert!(stdout.contains("Statuses:  200 4"), "{flag}: {stdout}");
    }
}

#[test]
fn tls_never_takes_the_url_for_its_version_and_is_refused_with_http() {
    // `--tls URL`: the URL stays the URL (here an http:// one, so --tls is refused by name).
    refused(
        &bench(&["--tls", "http://127.0.0.1:9/", "-n", "1"]),
        "--tls: `http://",
    );
    refused(
        &bench(&["--tls", "1.3", "http://127.0.0.1:9/", "-n", "1"]),
        "is http://",
    );
    let out = run_bounded(
        flint().args(["run", "--tls", "--target", "http://127.0.0.1:9/", "-n", "1"]),
        Duration::from_secs(60),
    );
    refused(&out, "--tls: `http://127.0.0.1:9/` is http://");
}

#[test]
fn a_tls_version_flint_does_not_speak_is_refused_as_a_version_however_written() {
    // After a space as after `=`: the version is --tls's, never a path (bench) or a stray
    // argument (run), and the line says which versions are taken. Port 9: nothing starts.
    for version in ["1.0", "1.1", "1.4", "TLSv1.0"] {
        let joined = format!("--tls={version}");
        let url = "https://127.0.0.1:9/";
        for line in [
            vec!["bench", url, "--tls", version, "-n", "1"],
            vec!["bench", "--tls", version, url, "-n", "1"],
            vec!["bench", url, &joined, "-n", "1"],
            vec!["run", "--tls", version, "-d", "1"],
            vec!["run", &joined, "-d", "1"],
        ] {
            let out = run_bounded(flint().args(&line), Duration::from_secs(60));
            refused(&out, &format!("invalid value '{version}' for '--tls"));
            refused(&out, "takes 1.2, 1.3 or any");
        }
    }
    let out = run_bounded(
        flint().args(["run", "--tls", "1.0", "-d", "1"]),
        Duration::from_secs(60),
    );
    refused(&out, "TLS 1.0 and 1.1 are not spoken");
}

#[test]
fn outputs_that_cannot_be_written_are_refused_before_the_run() {
    // Port 9 refuses: had the run started, it would fail with exit 1, not 2.
    for flag in ["--json", "--html", "--log"] {
        let out = bench(&[
            "http://127.0.0.1:9/",
            "-d",
            "10m",
            flag,
            "/nonexistent/dir/out",
        ]);
        refused(
            &out,
            &format!("{flag} /nonexistent/dir/out: cannot write there"),
        );
    }
}

#[test]
fn two_outputs_naming_one_file_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    let same = dir.path().join(".").join("out");
    let (file, same) = (file.to_str().unwrap(), same.to_str().unwrap());
    // Outputs are checked in the order --json, --log, --html: the second of a pair is named
    // with its path as written.
    for (a, b, said) in [
        (
            "--log",
            "--json",
            format!("--json and --log both write {file}"),
        ),
        (
            "--json",
            "--html",
            format!("--json and --html both write {same}"),
        ),
        (
            "--html",
            "--log",
            format!("--log and --html both write {file}"),
        ),
    ] {
        // Port 9 refuses: had the run started, it would fail with exit 1, not 2.
        let out = bench(&["http://127.0.0.1:9/", "-d", "10m", a, file, b, same]);
        refused(&out, &format!("{said}: give each its own file"));
    }
}

#[test]
fn rates_and_depths_the_run_cannot_hold_are_refused_before_it() {
    // Port 9 refuses: had the run started, it would fail with exit 1, not 2 (or, at 1e-300
    // pages/s, wait for its second page for ever).
    let url = "http://127.0.0.1:9/";
    let cases: [(&[&str], &str); 3] = [
        (
            &["-d", "1s", "-c", "4", "--rate", "1e20"],
            "the rate 1e20 pages/s is more than 4 Webchildren (-c) can be given",
        ),
        (
            &["-n", "2", "-c", "1", "--rate", "1e-300"],
            "the rate 1e-300 pages/s for 2 pages over 1 Webchildren is due over more than 1e9 s",
        ),
        (
            &["-n", "1", "--pipeline", "0"],
            "--pipeline 0: requests in flight per connection must be 1 to 1000",
        ),
    ];
    for (args, said) in cases {
        let out = bench(&[&[url], args].concat());
        refused(&out, said);
    }
}

#[test]
fn a_run_length_out_of_range_is_said_to_be_for_d_as_for_duration() {
    for flag in ["-d", "--duration"] {
        let out = bench(&["http://127.0.0.1:9/", flag, "400000h"]);
        refused(&out, "`400000h` is out of range");
        assert!(!text(&out).1.contains("--body"), "{}", text(&out).1);
    }
}

#[test]
fn a_url_prints_the_summary_alone_and_a_workload_the_webstone_report_too() {
    let (dir, server) = served();
    let url = format!("http://{}/a.html", server.addr);
    let out = bench(&[&url, "-n", "10", "-q"]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("Latency (ms)"), "{stdout}");
    assert!(!stdout.contains("WEBSTONE number"), "{stdout}");
    let workload = dir.path().join("w.toml");
    std::fs::write(&workload, "[[page]]\nweight = 1\nfiles = [\"/a.html\"]\n").unwrap();
    let out = bench(&[&url, "-w", workload.to_str().unwrap(), "-n", "10", "-q"]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("WEBSTONE number"), "{stdout}");
    assert!(stdout.contains("Latency (ms)"), "{stdout}");
    assert!(stdout.contains("Average Response time: "), "{stdout}");
    assert!(
        stdout.contains("(per file: cumulative time / files)"),
        "{stdout}"
    );
}

#[test]
fn help_says_the_default_duration() {
    let out = run_bounded(flint().args(["bench", "--help"]), Duration::from_secs(30));
    let (stdout, _) = text(&out);
    assert!(stdout.contains("[default: 10s]"), "{stdout}");
    assert!(stdout.contains("--connections"), "{stdout}");
}

#[test]
fn run_help_says_the_threads_run_uses() {
    // flint run's load shares the machine with the embedded server: its own default.
    let out = run_bounded(flint().args(["run", "--help"]), Duration::from_secs(30));
    let (stdout, _) = text(&out);
    let help: String = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("[default: the cores the embedded server leaves (cores - cores/2)"),
        "{stdout}"
    );
    assert!(
        help.contains("with --target, the cores available"),
        "{stdout}"
    );
    assert!(help.contains("--server-threads"), "{stdout}");
    // bench has no embedded server.
    let out = run_bounded(flint().args(["bench", "--help"]), Duration::from_secs(30));
    let (stdout, _) = text(&out);
    assert!(!stdout.contains("embedded server leaves"), "{stdout}");
}

#[test]
fn a_k6_threshold_without_a_unit_is_milliseconds_and_the_summary_has_p95() {
    let (_dir, server) = served();
    let url = format!("http://{}/a.html", server.addr);
    let out = bench(&[&url, "-n", "20", "-q", "--threshold", "p(95)<60000"]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("ok    p(95)<60000"), "{stdout}");
    let header = stdout
        .lines()
        .find(|l| l.contains("Latency (ms)"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(header.contains(" p90       p95       p99 "), "{header}");
    // 1 ms is far below any response here: crossed, so a bare number was not read as seconds.
    let out = bench(&[&url, "-n", "20", "-q", "--threshold", "p(95)<0.001"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out).0);
}

#[test]
fn connect_to_keeps_the_host_and_dash_a_sends_basic_auth() {
    let (_dir, server) = served();
    let port = server.addr.rsplit_once(':').unwrap().1;
    // A name that does not resolve: --connect-to gives the address, the name stays the Host.
    let url = format!("http://bench.invalid:{port}/a.html");
    for (flag, spec) in [
        ("--connect-to", server.addr.clone()),
        ("--resolve", format!("bench.invalid:{port}:127.0.0.1")),
    ] {
        let out = bench(&[&url, flag, &spec, "-n", "2", "-c", "1", "-q", "--debug"]);
        let (stdout, err) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{flag}: {err}");
        assert!(stdout.contains("Statuses:  200 2"), "{stdout}");
        assert!(
            err.contains(&format!("Host: bench.invalid:{port}")),
            "{err}"
        );
    }
    let url = format!("http://{}/a.html", server.addr);
    let out = bench(&[
        &url,
        "-a",
        "Aladdin:open sesame",
        "-n",
        "1",
        "-c",
        "1",
        "-q",
        "--debug",
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
        "{err}"
    );
    refused(&bench(&[&url, "-a", "nocolon"]), "expected USER:PASSWORD");
}

/// A keep-alive HTTP responder on a Unix socket in this process: `hello` to every request, and
/// the Host header of the first request it saw.
fn unix_responder(path: &std::path::Path) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::{Read, Write};
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    let host = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = host.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let (mut buf, mut have) = ([0u8; 4096], Vec::new());
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..n]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&have[..end]).into_owned();
                        if let Some(h) = head.lines().find_map(|l| l.strip_prefix("Host: ")) {
                            let mut s = seen.lock().unwrap();
                            if s.is_empty() {
                                *s = h.to_owned();
                            }
                        }
                        have.drain(..end + 4);
                        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
                        if conn.write_all(ok).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    host
}

#[test]
fn unix_socket_carries_the_requests_and_the_url_names_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let host = unix_responder(&sock);
    let sock_arg = sock.to_str().unwrap();
    let out = bench(&[
        "http://app.local/x",
        "--unix-socket",
        sock_arg,
        "-n",
        "20",
        "-c",
        "2",
        "-q",
    ]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("Statuses:  200 20"), "{stdout}");
    assert!(stdout.contains(&format!("(unix:{sock_arg})")), "{stdout}");
    assert_eq!(*host.lock().unwrap(), "app.local");
    let missing = dir.path().join("none.sock");
    let out = bench(&[
        "http://app.local/",
        "--unix-socket",
        missing.to_str().unwrap(),
    ]);
    refused(&out, "no such socket");
    refused(
        &bench(&["https://app.local/", "--unix-socket", sock_arg]),
        "https:// over a Unix socket is not supported",
    );
}

#[test]
fn the_urls_path_is_fetched_beside_the_paths_named_after_it() {
    let (dir, server) = served();
    std::fs::write(dir.path().join("b.html"), b"world").unwrap();
    let url = format!("http://{}/a.html", server.addr);
    let out = bench(&[&url, "/b.html", "-n", "40", "-c", "1", "-q", "--debug"]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("Statuses:  200 40"), "{stdout}");
    for path in ["/a.html", "/b.html"] {
        assert!(
            err.contains(&format!("GET {path} HTTP/1.1")),
            "{path}: {err}"
        );
    }
    // A workload names its own files: the URL's path is not fetched, and that is said.
    let workload = dir.path().join("w.toml");
    std::fs::write(&workload, "[[page]]\nweight = 1\nfiles = [\"/b.html\"]\n").unwrap();
    let out = bench(&[
        &url,
        "-w",
        workload.to_str().unwrap(),
        "-n",
        "4",
        "-c",
        "1",
        "-q",
        "--debug",
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("the URL's path `/a.html` is not fetched"),
        "{err}"
    );
    assert!(!err.contains("GET /a.html"), "{err}");
}

#[test]
fn every_result_file_written_is_announced() {
    let (dir, server) = served();
    let url = format!("http://{}/a.html", server.addr);
    let (json, html) = (dir.path().join("r.json"), dir.path().join("r.html"));
    let out = bench(&[
        &url,
        "-n",
        "4",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for file in [&json, &html] {
        assert!(file.exists(), "{}", file.display());
        assert!(
            err.contains(&format!("flint: wrote {}", file.display())),
            "{err}"
        );
    }
}

#[test]
fn a_workload_naming_its_origin_needs_no_url_and_one_without_is_told_so() {
    let (dir, server) = served();
    let workload = dir.path().join("site.toml");
    std::fs::write(
        &workload,
        format!(
            "origin = \"http://{}\"\n[[page]]\nweight = 1\nfiles = [\"/a.html\"]\n",
            server.addr
        ),
    )
    .unwrap();
    let out = bench(&["-w", workload.to_str().unwrap(), "-n", "4", "-c", "1", "-q"]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        stdout.contains(&format!("Target:    http://{}", server.addr)),
        "{stdout}"
    );
    assert!(stdout.contains("Statuses:  200 4"), "{stdout}");
    // No URL and nothing naming one: a line each, before anything starts.
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, "[[page]]\nweight = 1\nfiles = [\"/a.html\"]\n").unwrap();
    refused(
        &bench(&["-w", plain.to_str().unwrap(), "-n", "4"]),
        "plain.toml names no origin",
    );
    refused(&bench(&["-n", "4"]), "give the server's URL");
}
