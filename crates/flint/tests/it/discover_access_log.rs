//! Weights from an access log written by a real server: Debian's nginx serves the generated
//! site with its `combined` log, this test sends a known sequence of requests (pages visited
//! with their files, each with the Referer a browser sends, plus requests that are not visits:
//! a POST, a HEAD, a 404), and `flint discover --access-log` must weigh each page by exactly
//! its count of GETs answered 200 or 304, with a URL (the crawl's pages) and with the log alone
//! (pages built by Referer), gzipped or not. A log with no usable line exits 2.
//!
//! nginx is installed by scripts/install-peers.sh; without it this test fails saying so. It
//! runs as one process (no master, no user switch) in its own process group, stopped by it.

use crate::common;
use crate::discover_site;

use common::{flint, run_bounded};
use lab_process::{Group, StopPolicy};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Nginx {
    _group: Group,
    addr: String,
}

/// Start-up attempts, each on a port found free.
const START_ATTEMPTS: usize = 3;

fn start_nginx(root: &Path, dir: &Path, log: &Path) -> Nginx {
    let nginx = lab_process::find_program("nginx")
        .or_else(|| Some("/usr/sbin/nginx".into()).filter(|p: &std::path::PathBuf| p.is_file()))
        .expect("nginx not found: install it with scripts/install-peers.sh");
    // nginx must be given a port: one found free and released, which another test's server
    // (tests share this process) may take first. nginx then exits: another port is tried.
    let mut attempt = 1;
    loop {
        let port = lab_process::free_port().unwrap();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 64; }}\n\
             http {{\n  types {{ text/html html; text/css css; image/png png; image/webp webp; \
             text/javascript js; }}\n  default_type application/octet-stream;\n  if_modified_since before;\n\
             access_log {} combined;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             server {{ listen 127.0.0.1:{port}; root {}; }}\n}}\n",
            log.display(),
            root.display()
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut cmd = Command::new(&nginx);
        cmd.arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut group = Group::spawn(
            &mut cmd,
            None,
            StopPolicy::terminate(Duration::from_secs(5)),
        )
        .expect("start nginx");
        let error_log = || std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
        // Ready once nginx itself listens on the port (a connect would count anyone's server).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = group.exited() {
                assert!(
                    attempt < START_ATTEMPTS,
                    "nginx exited ({status}): {}",
                    error_log()
                );
                break;
            }
            if lab_process::procfs::listens_only(group.pid(), port) {
                return Nginx {
                    _group: group,
                    addr: format!("127.0.0.1:{port}"),
                };
            }
            assert!(
                Instant::now() < deadline,
                "nginx did not listen within 30 s: {}",
                error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        attempt += 1;
    }
}

/// One request on its own connection; the status.
fn request(addr: &str, method: &str, path: &str, extra: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: test\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response);
    text[9..12].parse().unwrap()
}

/// A browser's visit: the page, then its files with the page (or a stylesheet) as Referer.
fn visit(addr: &str, page: &str, from: Option<&str>, files: &[(&str, &str)]) {
    let referer = |r: &str| format!("Referer: http://{addr}{r}\r\n");
    assert_eq!(
        request(addr, "GET", page, &from.map(referer).unwrap_or_default()),
        200
    );
    for (file, by) in files {
        assert_eq!(request(addr, "GET", file, &referer(by)), 200, "{file}");
    }
}

/// (name, weight, files) of each page of a workload text.
fn pages(text: &str) -> Vec<(String, f64, Vec<String>)> {
    let w = bench::Workload::parse(text, "discovered").expect("a workload bench reads");
    w.pages
        .iter()
        .map(|p| {
            let files = p.files.iter().map(|&i| w.urls[i].clone()).collect();
            (p.name.clone(), p.weight, files)
        })
        .collect()
}

fn discover(args: &[&str]) -> std::process::Output {
    run_bounded(flint().arg("discover").args(args), Duration::from_secs(120))
}

#[test]
fn page_weights_are_nginx_logged_counts() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let live_log = dir.path().join("access.log");
    let nginx = start_nginx(root.path(), dir.path(), &live_log);
    let addr = nginx.addr.as_str();
    discover_site::write(root.path(), addr);

    let index_files = [
        ("/css/site.css", "/index.html"),
        ("/img/body-bg.png", "/css/site.css"),
        ("/js/app.js", "/index.html"),
    ];
    for _ in 0..3 {
        visit(addr, "/index.html", None, &index_files);
    }
    let about_files = [
        ("/css/site.css", "/about.html"),
        ("/sub/img/b.png", "/about.html"),
    ];
    for _ in 0..2 {
        visit(addr, "/about.html", Some("/index.html"), &about_files);
    }
    // A revalidation answered 304 is a visit too.
    let since = "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n";
    assert_eq!(request(addr, "GET", "/frame.html", since), 304);
    // Not visits: another method, a HEAD, a miss.
    assert_eq!(
        request(addr, "POST", "/index.html", "Content-Length: 0\r\n"),
        405
    );
    assert_eq!(request(addr, "HEAD", "/about.html", ""), 200);
    assert_eq!(request(addr, "GET", "/missing.html", ""), 404);
    // A file fetched on its own.
    assert_eq!(request(addr, "GET", "/img/p.png", ""), 200);

    // nginx writes each line as the request ends; copied now, the crawl's requests are not in it.
    let log = dir.path().join("visits.log");
    std::fs::write(&log, logged(&live_log, 23)).unwrap();

    // With a URL: the crawled pages weighted by their counts.
    let start = format!("http://{addr}/index.html");
    let out = discover(&[
        &start,
        "--access-log",
        log.to_str().unwrap(),
        "--crawl-rate",
        "1000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("23 lines, 20 GETs answered 200 or 304, 3 other requests, 0 unreadable"),
        "{stderr}"
    );
    let weights: Vec<(String, f64)> = pages(&String::from_utf8(out.stdout).unwrap())
        .into_iter()
        .map(|(name, weight, _)| (name, weight))
        .collect();
    assert_eq!(
        weights,
        [
            ("/index.html".to_owned(), 3.0),
            ("/frame.html".to_owned(), 1.0),
            ("/about.html".to_owned(), 2.0)
        ]
    );

    // The log alone, plain and gzipped: pages by Referer.
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let want = vec![
        (
            "/index.html".to_owned(),
            3.0,
            s(&[
                "/index.html",
                "/css/site.css",
                "/img/body-bg.png",
                "/js/app.js",
            ]),
        ),
        (
            "/about.html".to_owned(),
            2.0,
            s(&[
                "/about.html",
                "/css/site.css",
                "/img/body-bg.png",
                "/sub/img/b.png",
            ]),
        ),
        ("/frame.html".to_owned(), 1.0, s(&["/frame.html"])),
        ("/img/p.png".to_owned(), 1.0, s(&["/img/p.png"])),
    ];
    let gz = dir.path().join("visits.log.gz");
    let zipped = Command::new("gzip")
        .arg("-c")
        .arg(&log)
        .output()
        .expect("gzip");
    std::fs::write(&gz, zipped.stdout).unwrap();
    for file in [&log, &gz] {
        let out = discover(&["--access-log", file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            pages(&String::from_utf8(out.stdout).unwrap()),
            want,
            "{}",
            file.display()
        );
    }
}

/// Waits (bounded) until `log` has `lines` lines; their text.
fn logged(log: &Path, lines: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().count() >= lines {
            return text;
        }
        assert!(Instant::now() < deadline, "the server logged only: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn flint_serves_own_combined_log_weighs_its_pages() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let server = discover_site::serve(
        root.path(),
        &["--access-log", log.to_str().unwrap(), "--combined"],
    );
    let addr = server.addr.as_str();
    discover_site::write(root.path(), addr);
    for _ in 0..2 {
        visit(addr, "/index.html", None, &[("/js/app.js", "/index.html")]);
    }
    visit(
        addr,
        "/frame.html",
        Some("/index.html"),
        &[("/img/frame.png", "/frame.html")],
    );
    // The log is written at least once a second.
    let text = logged(&log, 6);
    std::fs::write(dir.path().join("copy.log"), text).unwrap();
    let out = discover(&[
        "--access-log",
        dir.path().join("copy.log").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        pages(&String::from_utf8(out.stdout).unwrap()),
        [
            (
                "/index.html".to_owned(),
                2.0,
                s(&["/index.html", "/js/app.js"])
            ),
            (
                "/frame.html".to_owned(),
                1.0,
                s(&["/frame.html", "/img/frame.png"])
            ),
        ]
    );
}

#[test]
fn a_log_with_no_usable_line_exits_2_showing_what_it_could_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bad.log");
    std::fs::write(
        &log,
        "not a log\n\n127.0.0.1 - - [d] \"GET / HTTP/1.1\" 404 1\nstill not\n",
    )
    .unwrap();
    let out = discover(&["--access-log", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no usable line (3 read, 2 not in Common or Combined Log Format, 1 not a GET answered 200 or 304)"), "{stderr}");
    assert!(
        stderr.contains("line 1: not a log") && stderr.contains("line 4: still not"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
