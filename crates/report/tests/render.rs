//! The whole page from representative inputs: which sections appear, that input text cannot
//! become markup, that older files without the newer fields still render with blank cells, and
//! that a field of the wrong type is refused in one line naming the file and the field.

mod common;

use serde_json::{json, Value};

#[test]
fn all_sections_appear_for_bench_lab_and_compare() {
    let html = report::render(&common::inputs()).unwrap();
    assert_eq!(
        common::sections(&html),
        [
            "summary",
            "runs",
            "spectrum",
            "timeseries",
            "sizes",
            "syscalls",
            "lab-other",
            "pages",
            "truss",
            "provenance"
        ]
    );
    // compare: 2 bars; spectrum: 2; time: 3 (errors present); sizes: 1; syscalls: 2.
    assert_eq!(html.matches(r#"<svg class="chart""#).count(), 10);
    for needle in [
        "99.9%",             // spectrum ticks
        "200 kB",            // sizes x axis
        "worker_processes",  // a lab server's note, disclosed
        "AMD EPYC 7B13",     // the machine
        "sys totals",        // truss table of the server profile
        "Experiment digest", // the digest experiment, in the other lab results
        "connect refused",   // the failed compare target
        "×",                 // compare ratios
        ">1 file</small>",   // the WebSTONE table's one-file page
        ">4 files</small>",  // and one of four
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
}

#[test]
fn page_is_self_contained() {
    let html = report::render(&common::inputs()).unwrap();
    for external in [
        "<link", "src=", "@import", "url(http", "//fonts.", "https://",
    ] {
        assert!(!html.contains(external), "page refers outside: {external}");
    }
    // Only the SVG namespace URI, which is a name, not a fetch.
    assert_eq!(
        html.matches("http://www.w3.org").count(),
        html.matches("<svg").count()
    );
}

#[test]
fn input_text_cannot_inject_markup() {
    let evil = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
    let mut lab = common::lab();
    for r in lab["results"].as_array_mut().unwrap() {
        r["server"] = json!(evil);
    }
    lab["servers"][0]["note"] = json!(evil);
    let mut bench = common::bench(1000.0, 1.0, 5, 1, true);
    bench["config"]["target"]["url"] = json!(evil);
    bench["pages"][0]["name"] = json!(evil);
    bench["server_profile"]["syscalls"][0]["name"] = json!(evil);
    let mut cmp = common::compare();
    cmp["targets"][1]["name"] = json!(evil);
    cmp["targets"][2]["error"] = json!(evil);
    let html = report::render(&[
        (format!("{evil}.json"), bench),
        (evil.to_string(), lab),
        ("c.json".into(), cmp),
    ])
    .unwrap();
    assert!(!html.contains("<script>alert"), "raw script from input");
    assert!(!html.contains("<img"), "raw img from input");
    assert!(!html.contains("onerror=alert(2)>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // The page's own single script is still the only one.
    assert_eq!(html.matches("<script>").count(), 1);
}

/// A bench file as flint wrote it before kind, environment, spectra and time series existed.
fn old_bench() -> Value {
    let mut v = common::bench(50_000.0, 0.25, 3, 1, false);
    let m = v.as_object_mut().unwrap();
    for k in ["kind", "environment", "timeseries"] {
        m.remove(k);
    }
    let s = m["summary"].as_object_mut().unwrap();
    s.remove("response_spectrum");
    s.remove("page_spectrum");
    v
}

#[test]
fn older_bench_files_render_without_the_newer_sections() {
    let html = report::render(&[("old.json".into(), old_bench())]).unwrap();
    // What every bench file has (its load, statuses, errors, URLs) is shown; the newer charts not.
    assert_eq!(
        common::sections(&html),
        ["summary", "runs", "pages", "provenance"]
    );
    assert!(html.contains("not recorded"));
    assert!(html.contains("50,000"));
}

/// The cells of the first body row of the table of class `class`, as HTML.
fn first_row<'a>(html: &'a str, class: &str) -> Vec<&'a str> {
    let table = &html[html
        .find(&format!(r#"<table class="{class}">"#))
        .unwrap_or_else(|| panic!("no {class} table"))..];
    let body = &table[table.find("<tbody><tr>").expect("a body row") + 11..];
    let row = &body[..body.find("</tr>").expect("the row ends")];
    row.split("</td>")
        .filter_map(|c| c.find('>').map(|i| &c[i + 1..]))
        .collect()
}

#[test]
fn fields_an_older_file_lacks_leave_blank_cells() {
    let mut v = common::bench(50_000.0, 0.25, 3, 1, false);
    v["summary"].as_object_mut().unwrap().remove("response_ms");
    let mut lab = common::lab();
    for r in lab["results"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        r.remove("server_cpu_us_per_request");
        r.remove("experiment");
    }
    lab["experiment"] = json!("digest");
    let html = report::render(&[("old.json".into(), v), ("lab.json".into(), lab)]).unwrap();
    let row = first_row(&html, "summary");
    assert_eq!(row[4], "50,000", "requests/s: {row:?}");
    assert_eq!(
        (row[7], row[8]),
        ("–", "–"),
        "p50, p99 not recorded: {row:?}"
    );
    // The rows take the file's experiment; the CPU they lack is blank, not zero.
    let row = first_row(&html, "lab");
    assert_eq!(row[6], "–", "CPU µs/request: {row:?}");
    assert!(html.contains("Experiment digest"));
}

#[test]
fn a_mistyped_field_is_one_error_naming_the_file_and_the_field() {
    let cases = [
        (
            "summary",
            json!({"requests_per_s": "fast"}),
            "summary.requests_per_s",
        ),
        ("summary", json!({"requests": 12.5}), "summary.requests"),
        ("timeseries", json!({"not": "an array"}), "timeseries"),
        (
            "server_profile",
            json!({"syscalls": [{"name": 5}]}),
            "server_profile.syscalls[0].name",
        ),
    ];
    for (key, value, field) in cases {
        let mut v = common::bench(1000.0, 1.0, 5, 1, true);
        if key == "summary" {
            let (k, x) = value.as_object().unwrap().iter().next().unwrap();
            v["summary"][k] = x.clone();
        } else {
            v[key] = value;
        }
        let err = report::render(&[("a.json".into(), v)]).unwrap_err();
        assert!(matches!(err, report::ReportError::BadField { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("a.json: {field}: ")), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
    }
    let lab = json!({"kind": "lab", "results": [{"experiment": "sizes", "size_bytes": "big"}]});
    let err = report::render(&[("b.json".into(), lab)])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("b.json: results[0].size_bytes: "), "{err}");
    let cmp = json!({"kind": "compare", "targets": [{"name": "x", "rounds": [1]}]});
    let err = report::render(&[("c.json".into(), cmp)])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("c.json: targets[0].rounds[0]: "), "{err}");
}

#[test]
fn render_one_makes_the_same_sections_as_a_single_input() {
    let lab = common::lab();
    let one = report::render_one(&lab).unwrap();
    let many = report::render(&[("x.json".into(), lab)]).unwrap();
    assert_eq!(common::sections(&one), common::sections(&many));
    assert!(one.contains("lab all"));
}

/// The pages table in one unit (ms, not ms beside s), the paper's Thruput named per Webchild
/// beside the aggregate MB/s, and the MB/s note saying what is and is not in it.
#[test]
fn page_times_are_in_ms_and_each_throughput_says_whose() {
    let v = common::bench(50_000.0, 0.25, 3, 1, false);
    let max_ms = v["pages"][0]["max_response_s"].as_f64().unwrap() * 1e3;
    let connect_ms = v["pages"][0]["connect_time_s"].as_f64().unwrap() * 1e3;
    let html = report::render(&[("run.json".into(), v)]).unwrap();
    for head in [
        "<th class=\"n\">Max page ms</th>",
        "<th class=\"n\">Connect ms</th>",
    ] {
        assert!(html.contains(head), "no {head}");
    }
    assert!(!html.contains("Max page s<") && !html.contains("Connect s<"));
    let row = first_row(&html, "pages");
    assert_eq!(row[8], report::text::num(max_ms), "{row:?}");
    assert_eq!(row[9], report::text::num(connect_ms), "{row:?}");
    assert!(html.contains("Thruput MB/s per Webchild"));
    assert!(html.contains("all Webchildren together"));
    assert!(html.contains("HTTP/2 and chunk framing"));
    assert!(!html.contains("counts every byte read"));
}

/// A compare says what every target was asked for: the paths beside the figures, and every page
/// with its files under "What ran where".
#[test]
fn a_compare_names_the_paths_it_fetched() {
    let html = report::render(&[("cmp.json".into(), common::compare())]).unwrap();
    assert!(
        html.contains(
            r#"Fetched from each: <span class="file">home (/index.html + 2 files), /big.bin</span>."#
        ),
        "no paths in the compare's note"
    );
    assert!(html.contains("<h4>Workload</h4>"));
    let row = first_row(&html, "workload");
    assert_eq!(row, ["home", "3", "/index.html /logo.gif /style.css"]);
}

/// One-file pages: page time is response time, and the page chart would draw the response
/// chart again; it is left out then (a run with pages of several files keeps it).
#[test]
fn a_run_whose_pages_are_its_requests_has_no_second_spectrum() {
    let mut v = common::bench(50_000.0, 0.25, 3, 1, false);
    let with_pages = report::render(&[("run.json".into(), v.clone())]).unwrap();
    assert!(with_pages.contains("Page time by percentile"));
    v["summary"]["pages"] = v["summary"]["requests"].clone();
    v["summary"]["page_spectrum"] = v["summary"]["response_spectrum"].clone();
    let html = report::render(&[("run.json".into(), v)]).unwrap();
    assert!(html.contains("Response time by percentile"));
    assert!(!html.contains("Page time by percentile"));
}
