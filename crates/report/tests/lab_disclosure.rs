//! What a lab run discloses: every option that shaped it in "What ran where" (the page
//! experiment's pages, round trips and ways beside the duration and servers), and a run whose
//! syscalls were not traced says so, and how to get them, rather than show an almost empty
//! syscall section.

mod common;

use serde_json::{json, Value};

/// A page experiment's run of `flint lab syscalls --pages 3 --rtt 0,20ms --modes persistent,h2`
/// as the lab writes it, traced by `profile` (`off` with `--no-profile`).
fn lab(profile: &str) -> Value {
    let traced = profile == "perf";
    let row = |way: &str, rtt: f64| {
        json!({"experiment": "syscalls", "server": "flint", "mode": "persistent",
            "page_mode": way, "tls": false, "rtt_ms": rtt, "delay": "none", "requests": 132,
            "duration_s": 0.2, "requests_per_s": 660.0, "bytes_per_s": 1e6,
            "syscalls_per_request": if traced { json!(3.5) } else { Value::Null },
            "server_cpu_us_per_request": 48.0, "client_limited": false, "errors": 0,
            "profile_method": if traced { json!("perf") } else { Value::Null },
            "page_ms_p50": 10.0, "page_ms_p99": 20.0})
    };
    json!({
        "kind": "lab", "schema_version": 1, "experiment": "syscalls", "flint_version": "0.1.0",
        "started_at": "2026-11-29T00:50:42.296Z", "environment": common::environment(),
        "options": {"duration_s": 2.0, "warmup_s": 0.5, "pages": 3, "servers": ["flint"],
                    "rtt_ms": [0.0, 20.0], "modes": ["persistent", "h2"], "profile": profile,
                    "server_cpu": 0, "client_cpu": 1},
        "servers": [{"name": "flint", "version": "flint/0.1.0", "status": "ok", "note": null}],
        "results": [row("persistent", 0.0), row("h2", 0.0), row("persistent", 20.0)]
    })
}

/// The HTML of one section, by its id.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!(r#"<section id="{id}""#))
        .unwrap_or_else(|| panic!("no section {id}"));
    let rest = &html[start..];
    &rest[..rest.find("</section>").expect("the section ends")]
}

#[test]
fn what_ran_where_lists_every_option_that_shaped_a_lab_run() {
    let html = report::render(&[("lab.json".into(), lab("off"))]).unwrap();
    let card = section(&html, "provenance");
    for option in [
        r#"<span class="k">duration_s</span> 2.0"#,
        r#"<span class="k">warmup_s</span> 0.5"#,
        r#"<span class="k">pages</span> 3"#,
        r#"<span class="k">rtt_ms</span> 0.0, 20.0"#,
        r#"<span class="k">modes</span> persistent, h2"#,
        r#"<span class="k">profile</span> off"#,
        r#"<span class="k">server_cpu</span> 0"#,
        r#"<span class="k">client_cpu</span> 1"#,
    ] {
        assert!(card.contains(option), "{option} not in {card}");
    }
}

#[test]
fn a_lab_run_without_syscall_counts_says_they_were_not_traced_and_how_to_get_them() {
    let html = report::render(&[("lab.json".into(), lab("off"))]).unwrap();
    let syscalls = section(&html, "syscalls");
    assert!(
        syscalls.contains("System calls were not traced: the run was made with --no-profile"),
        "{syscalls}"
    );
    assert!(syscalls.contains("without --no-profile"), "{syscalls}");
    // Said first, before the CPU chart that is all the section has.
    assert!(
        syscalls.find("not traced") < syscalls.find("<svg"),
        "{syscalls}"
    );
    // No column of dashes, no caption about calls that were not counted.
    assert!(!syscalls.contains("syscalls/req"), "{syscalls}");
    assert!(!syscalls.contains("fewer calls carry"), "{syscalls}");
    assert!(syscalls.contains("CPU µs/req"), "{syscalls}");

    let html = report::render(&[("lab.json".into(), lab("unavailable"))]).unwrap();
    let syscalls = section(&html, "syscalls");
    assert!(
        syscalls.contains("System calls were not traced: no tracer worked"),
        "{syscalls}"
    );

    // Traced: counted, and no such note.
    let html = report::render(&[("lab.json".into(), lab("perf"))]).unwrap();
    let syscalls = section(&html, "syscalls");
    assert!(!syscalls.contains("not traced"), "{syscalls}");
    assert!(syscalls.contains("syscalls/req"), "{syscalls}");
}
