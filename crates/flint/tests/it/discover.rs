//! `flint discover` on a generated site served by `flint serve`: the workload it writes equals
//! the one expected (every reference kind, in document order, with sizes and types; what was
//! not fetched as comments with its reason), `flint bench -w` runs it without an error, and
//! its failures exit as documented.

use crate::common;
use crate::discover_site;

use common::{flint, run_bounded, start_server};
use discover_site::{Site, ELSEWHERE};
use std::time::Duration;

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap() {
        "html" => "text/html",
        "css" => "text/css",
        "js" => "text/javascript",
        "png" => "image/png",
        "webp" => "image/webp",
        "woff2" => "font/woff2",
        other => panic!("no type for .{other}"),
    }
}

/// One line of an expected page: a file, or a comment.
enum Line<'a> {
    File(&'a str),
    Comment(String),
}

/// The workload text flint discover must write for the site.
fn expected(addr: &str, site: &Site, image: &str) -> String {
    use Line::{Comment, File};
    let css = ["/css/site.css", "/css/import1.css", "/css/import2.css"];
    // The stylesheets' images, once every stylesheet is read (a later rule may hide their
    // element): after what the document itself references, as a browser finds them.
    let css_images = ["/img/p.png", "/img/h1.png", "/img/body-bg.png"];
    // Of a rule that matches no element (`.unused`): left out.
    let unmatched = "1 stylesheet url()s not listed: their rules match no element here";
    let mut index = vec![File("/index.html")];
    index.extend(css.iter().map(|p| File(p)));
    index.extend(
        [
            "/css/rules.css",
            "/img/icon.png",
            "/img/preload.png",
            "/js/mod.js",
            "/js/app.js",
            "/img/rel.png",
            "/img/abs.png",
            "/img/full.png",
            image,
            "/img/pic.webp",
            "/img/poster.png",
        ]
        .map(File),
    );
    index.push(Comment("/img/broken.png: 404 Not Found".into()));
    index.push(Comment(format!(
        "{ELSEWHERE}/off.png: another origin: not fetched"
    )));
    index.push(Comment("/frame.html: an iframe: a page of its own".into()));
    index.extend(css_images.map(File));
    index.extend(
        [
            // The rules that apply: not print, not min-width 2000px, not another engine's
            // @supports, not :hover or a selector that matches nothing.
            "/img/screen.png",
            "/img/grid.png",
            "/img/before.png",
            "/img/style-bg.png",
            "/img/inline.png",
        ]
        .map(File),
    );
    // The fonts once every stylesheet is read: the body's, and its bold for the <h1>.
    index.extend(["/fonts/body.woff2", "/fonts/body-bold.woff2"].map(File));
    index.push(Comment(
        "3 stylesheet url()s not listed: their rules match no element here".into(),
    ));
    index.push(Comment(
        "2 font faces not listed: no matched rule's font-family, weight and style uses them".into(),
    ));
    let frame = vec![File("/frame.html"), File("/img/frame.png")];
    let mut about = vec![File("/about.html")];
    about.extend(css.iter().map(|p| File(p)));
    about.push(File("/sub/img/b.png"));
    about.extend(css_images.map(File));
    about.push(Comment(unmatched.into()));
    let pages = [
        ("/index.html", index),
        ("/frame.html", frame),
        ("/about.html", about),
    ];

    let mut distinct = std::collections::BTreeSet::new();
    for (_, lines) in &pages {
        for line in lines {
            if let File(p) = line {
                distinct.insert(*p);
            }
        }
    }
    let bytes: u64 = distinct.iter().map(|p| site.size(p)).sum();
    let mut text = format!(
        "# flint discover: 3 pages, {} files, {bytes} bytes, from http://{addr}/index.html\n\
         # run it: flint bench http://{addr} -w THIS_FILE\n\
         # link not followed: {ELSEWHERE}/elsewhere.html (another origin)\n\
         # link not followed: /private/secret.html (robots.txt disallows it)\n\
         # 1 links beyond --depth 1 not followed\n\
         \n\
         origin = \"http://{addr}\"\n",
        distinct.len()
    );
    for (name, lines) in &pages {
        text += &format!("\n[[page]]\nname = \"{name}\"\nweight = 1\nfiles = [\n");
        for line in lines {
            match line {
                File(p) => {
                    text += &format!(
                        "    \"{p}\", # {} bytes, {}\n",
                        site.size(p),
                        content_type(p)
                    )
                }
                Comment(c) => text += &format!("    # {c}\n"),
            }
        }
        text += "]\n";
    }
    text
}

fn discover(args: &[&str]) -> std::process::Output {
    run_bounded(flint().arg("discover").args(args), Duration::from_secs(120))
}

#[test]
fn the_discovered_workload_is_the_expected_one_and_bench_runs_it() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    let site = discover_site::write(root.path(), &server.addr);
    let start = format!("http://{}/index.html", server.addr);
    let out_dir = tempfile::tempdir().unwrap();

    // The largest srcset candidate by default; a 800 px viewport's pick with --viewport.
    for (viewport, image) in [(None, "/img/s1600.png"), (Some("800"), "/img/s800.png")] {
        let file = out_dir.path().join("site.toml");
        let mut args = vec![start.as_str(), "--crawl-rate", "1000", "-o"];
        args.push(file.to_str().unwrap());
        if let Some(v) = viewport {
            args.extend(["--viewport", v]);
        }
        let out = discover(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "flint discover failed: {stderr}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            text,
            expected(&server.addr, &site, image),
            "viewport {viewport:?}"
        );
        assert!(
            stderr.contains("flint discover: 3 pages, "),
            "the summary: {stderr}"
        );
    }

    // bench runs the last one as it is, at the origin it names (no URL given): every request
    // answered 200.
    let file = out_dir.path().join("site.toml");
    let json = out_dir.path().join("bench.json");
    let out = run_bounded(
        flint()
            .args(["bench", "-w"])
            .arg(&file)
            .args(["-n", "200", "-c", "2", "-q", "--report", "none", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "flint bench -w: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary = &result["summary"];
    assert_eq!(summary["errors"], 0, "{summary}");
    assert!(summary["requests"].as_u64().unwrap() >= 200, "{summary}");
    let statuses = summary["status_counts"].as_object().unwrap();
    assert_eq!(
        statuses.keys().collect::<Vec<_>>(),
        ["200"],
        "only 200s: {statuses:?}"
    );
}

#[test]
fn stdout_by_default_and_failures_exit_as_documented() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);

    // HTTP/2 over cleartext (prior knowledge) finds what HTTP/1.1 finds.
    let start = format!("http://{}/index.html", server.addr);
    let one = discover(&[&start, "--crawl-rate", "1000"]);
    let two = discover(&[&start, "--crawl-rate", "1000", "--http", "2"]);
    assert!(
        two.status.success(),
        "{}",
        String::from_utf8_lossy(&two.stderr)
    );
    assert!(String::from_utf8_lossy(&one.stdout).contains("[[page]]"));
    let (one, two) = (
        String::from_utf8_lossy(&one.stdout),
        String::from_utf8_lossy(&two.stdout),
    );
    assert_eq!(
        two.replace(" -w THIS_FILE --http 2\n", " -w THIS_FILE\n"),
        one,
        "the same but for bench's --http 2"
    );

    // --depth 0: the start page alone, written to stdout.
    let out = discover(&[
        &format!("http://{}/frame.html", server.addr),
        "--depth",
        "0",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("[[page]]").count(), 1, "{text}");
    assert!(text.contains("\"/img/frame.png\", # "), "{text}");

    // A start page that is not there: exit 1, one line saying why.
    let out = discover(&[&format!("http://{}/missing.html", server.addr)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("404 Not Found"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // Bad usage: exit 2, nothing fetched.
    for bad in [
        vec!["ftp://example.test/"],
        vec!["http://127.0.0.1/", "--crawl-rate", "0"],
        vec![],
    ] {
        let out = discover(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn the_color_scheme_decides_which_media_rules_apply() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let start = format!("http://{}/index.html", server.addr);
    let listed = |scheme: &str| {
        let out = discover(&[&start, "--depth", "0", "--color-scheme", scheme]);
        assert!(out.status.success(), "{scheme}");
        String::from_utf8(out.stdout).unwrap()
    };
    let (light, dark) = (listed("light"), listed("dark"));
    assert!(!light.contains("/img/dark.png"), "{light}");
    assert!(dark.contains("\"/img/dark.png\", # "), "{dark}");
    // A @media block that does not apply is not searched: its url() is not in the count of
    // rules that match nothing (`:hover`, `ul.search li`, `.unused`).
    assert!(
        light.contains("# 3 stylesheet url()s not listed"),
        "{light}"
    );
    let out = discover(&[&start, "--color-scheme", "sepia"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_size_limit_and_robots_are_kept() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    let site = discover_site::write(root.path(), &server.addr);
    let start = format!("http://{}/index.html", server.addr);

    // Files over --max-size are listed as comments, not fetched whole.
    let about = format!("http://{}/about.html", server.addr);
    let limit = site.size("/img/p.png") + 1;
    assert!(site.size("/sub/img/b.png") > limit);
    let out = discover(&[&about, "--max-size", &limit.to_string(), "--depth", "0"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "    # /sub/img/b.png: larger than --max-size ({limit} bytes)\n"
        )),
        "{text}"
    );
    assert!(text.contains("\"/img/p.png\", # "), "{text}");

    // --ignore-robots follows the disallowed link.
    let out = discover(&[&start, "--ignore-robots", "--crawl-rate", "1000"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("name = \"/private/secret.html\""), "{text}");
}

#[test]
fn https_with_cacert_or_k_and_a_refused_certificate_otherwise() {
    let root = tempfile::tempdir().unwrap();
    let ca = test_support::certs::TestCa::new("discover test CA");
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let server = discover_site::serve(
        root.path(),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let site = discover_site::write(root.path(), &server.addr);
    let start = format!("https://{}/index.html", server.addr);

    let cacert = ca.pem.to_str().unwrap();
    let mut written = Vec::new();
    for trust in [
        vec!["--cacert", cacert],
        vec!["-k"],
        vec!["--cacert", cacert, "--http", "2"],
    ] {
        let mut args = vec![start.as_str(), "--crawl-rate", "1000"];
        args.extend(&trust);
        let out = discover(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{trust:?}: {stderr}");
        let text = String::from_utf8(out.stdout).unwrap();
        written.push(text.clone());
        assert_eq!(text.matches("[[page]]").count(), 3, "{text}");
        assert!(
            text.contains(&format!(
                "\"/img/s1600.png\", # {} bytes, image/png\n",
                site.size("/img/s1600.png")
            )),
            "{text}"
        );
        // The page's http:// URL is another origin than https://.
        assert!(
            text.contains(&format!(
                "# http://{}/img/full.png: another origin: not fetched",
                server.addr
            )),
            "{text}"
        );
    }

    // HTTP/2 (ALPN h2: flint serve offers it) finds the same workload as HTTP/1.1; the run-it
    // line tells bench to use it.
    assert_eq!(
        written[2].replace(" --http 2 --cacert ", " --cacert "),
        written[0]
    );

    // Neither: the test CA is not trusted, and the start page cannot be had (exit 1).
    let out = discover(&[&start]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
}

#[test]
fn a_pages_form_is_written_as_a_commented_entry_after_its_files() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("login.html"),
        r#"<!doctype html><link rel=stylesheet href="/s.css">
<form method=post action="/session"><input type=hidden name=csrf value="k1">
<input name=user><input type=password name=pass><button>Log in</button></form>"#,
    )
    .unwrap();
    std::fs::write(root.path().join("s.css"), "body{}").unwrap();
    let server = start_server(root.path(), 1);
    let start = format!("http://{}/login.html", server.addr);
    let out = discover(&[&start, "--crawl-rate", "1000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let after_files = text.split("\n]\n").nth(1).expect("a page's file list");
    let lines: Vec<&str> = after_files.lines().collect();
    assert!(
        lines[0].starts_with("# A form (POST /session): to send it"),
        "{text}"
    );
    assert_eq!(
        lines[1..3],
        [
            r#"#   { path = "/session", method = "POST", body = "csrf=k1&user=&pass=","#,
            r#"#     headers = { "Content-Type" = "application/x-www-form-urlencoded" } },"#,
        ],
        "{text}"
    );
    assert!(lines[3].starts_with("# Hidden field `csrf`"), "{text}");
}
