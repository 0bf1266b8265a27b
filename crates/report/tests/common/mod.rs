//! Representative inputs for the report tests, made up but shaped like flint's real output: a
//! bench result of `flint run` (general mix) with the newer fields (environment, percentile
//! spectra, a per-second time series, a server profile), a lab file with the sizes, syscalls and
//! digest experiments, and a compare of two servers plus one that failed.
//!
//! Counts are integers and figures floats, as flint writes them (the `results` types refuse a
//! count with a fraction). Deterministic: the noise comes from a fixed-seed generator, so a
//! failure reproduces.

#![allow(dead_code)] // each test binary uses its own subset

use serde_json::{json, Value};

/// xorshift64*: reproducible noise without a dependency.
pub struct Noise(u64);
impl Noise {
    pub fn new(seed: u64) -> Self {
        Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [-1, 1).
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        x as f64 / (1u64 << 52) as f64 - 1.0
    }
}

pub fn environment() -> Value {
    json!({
        "hostname": "bench-01", "os": "Debian GNU/Linux 12 (bookworm)",
        "kernel": "6.1.0-28-amd64", "cpu_model": "AMD EPYC 7B13", "cores": 2,
        "memory_bytes": 25_769_803_776u64
    })
}

/// HdrHistogram's percentile iteration (5 ticks per half distance) over a latency model:
/// `p50` at the median, a tail that grows with the nines, and a bump of `stall` ms past 99.9 %.
pub fn spectrum(p50: f64, tail: f64, stall: f64) -> Value {
    let mut out = Vec::new();
    for k in 0..=80 {
        let pct = 100.0 * (1.0 - 0.5f64.powf(k as f64 / 5.0));
        let nines = -(1.0 - pct / 100.0).log10();
        let mut ms = p50 * (0.4 + 0.6 * (tail * (nines - 0.3)).exp());
        if nines > 3.0 {
            ms += stall;
        }
        out.push(json!({"percentile": pct, "ms": (ms * 1000.0).round() / 1000.0}));
    }
    out.push(json!({"percentile": 100.0, "ms": p50 * 30.0 + stall}));
    Value::Array(out)
}

/// A `flint run` bench result of `seconds` s at about `rps` requests/s; a stall at second 11.
pub fn bench(rps: f64, p50_ms: f64, seconds: usize, seed: u64, profile: bool) -> Value {
    let mut noise = Noise::new(seed);
    let timeseries: Vec<Value> = (0..seconds)
        .map(|t| {
            let stall = t == 11;
            let warm = if t < 2 { 0.8 + 0.1 * t as f64 } else { 1.0 };
            let r = (rps * warm * (1.0 + 0.03 * noise.next()) * if stall { 0.35 } else { 1.0 })
                .round() as u64;
            let p99 = p50_ms * 7.0 * (1.0 + 0.1 * noise.next()) * if stall { 6.0 } else { 1.0 };
            json!({"t_s": t, "requests": r, "errors": if stall { 3 } else { 0 },
                   "bytes": r * 23_225, "p50_ms": p50_ms * (1.0 + 0.05 * noise.next()),
                   "p99_ms": p99})
        })
        .collect();
    let duration = seconds as f64;
    let requests = (rps * duration).round() as u64;
    let pages_per_s = rps / 3.3;
    let pages = (pages_per_s * duration).round() as u64;
    let page = |name: &str, weight: f64, size: u64, files: &[&str], share: f64| {
        let hits = (pages_per_s * duration * share).round() as u64;
        let hits_f = hits as f64;
        json!({
            "name": name, "weight": weight, "size_bytes": size, "hits": hits, "errors": 0,
            "files": files, "total_time_s": hits_f * p50_ms * 3.0 / 1e3,
            "max_response_s": p50_ms * 14.0 / 1e3, "connect_time_s": 0.004,
            "max_connect_s": 0.0012, "data_moved_bytes": hits * size + hits * 230,
            "header_bytes": hits * 900, "connects": 4,
            "time_ms": {"count": hits, "min": p50_ms * 0.5, "mean": p50_ms * 3.6, "max": p50_ms * 14.0,
                        "p50": p50_ms * 3.3, "p90": p50_ms * 5.9, "p99": p50_ms * 16.0, "p999": p50_ms * 30.0}
        })
    };
    let lat = |m: f64| {
        json!({"count": requests, "min": m * 0.4, "mean": m * 1.24, "max": m * 51.0,
               "p50": m, "p90": m * 1.45, "p99": m * 7.5, "p999": m * 17.5})
    };
    let mut summary = json!({
        "webstone_number": pages_per_s * 60.0, "pages": pages, "requests": requests,
        "connects": 16, "errors": 3, "clients": 16, "bytes_total": requests * 23_225,
        "bytes_header": requests * 229, "bytes_body": requests * 22_996, "duration_s": duration,
        "requests_per_s": rps, "pages_per_s": pages_per_s, "throughput_bytes_per_s": rps * 23_225.0,
        "webstone_thruput_bytes_per_s": rps * 23_225.0 / 16.0, "cumulative_time_s": duration * 16.0,
        "connect_time_total_s": 0.0148, "avg_connect_s": 0.00092, "max_connect_s": 0.00126,
        "avg_response_s": p50_ms * 1.24 / 1e3, "max_response_s": p50_ms * 51.0 / 1e3,
        "avg_body_bytes": 22_996.0, "avg_retrieval_bytes": 23_225.0,
        "connect_ms": lat(0.9), "ttfb_ms": lat(p50_ms), "response_ms": lat(p50_ms),
        "page_ms": lat(p50_ms * 3.6),
        "response_spectrum": spectrum(p50_ms, 0.9, p50_ms * 8.0),
        "page_spectrum": spectrum(p50_ms * 3.6, 0.7, p50_ms * 10.0),
    });
    summary["page_ms"]["count"] = json!(pages);
    let mut v = json!({
        "kind": "bench", "schema_version": 1, "flint_version": "0.1.0",
        "started_at": "2025-03-17T11:23:10.000Z", "started_at_unix_s": 1_742_210_590.0,
        "interrupted": false, "environment": environment(),
        "config": {"target": {"url": "http://127.0.0.1:43055", "addr": "127.0.0.1:43055",
                              "host": "127.0.0.1:43055"},
                   "http": "persistent", "concurrency": 16, "threads": 1, "stop": "duration",
                   "duration_s": duration, "pages": null, "warmup_s": 2.0,
                   "rate_pages_per_s": null, "think_s": null, "seed": 1,
                   "connect_timeout_s": 10.0, "response_timeout_s": 10.0},
        "summary": summary,
        "pages": [
            page("home", 30.0, 40_960, &["/general/index8k.html", "/general/banner24k.gif", "/general/logo6k.gif", "/general/button2k.gif"], 0.30),
            page("article", 25.0, 67_584, &["/general/article50k.html", "/general/photo15k.jpg", "/general/button2k.gif"], 0.25),
            page("product", 15.0, 116_736, &["/general/product40k.html", "/general/shot60k.jpg", "/general/thumb12k.jpg", "/general/button2k.gif"], 0.15),
            page("directory", 15.0, 34_816, &["/general/dir30k.html", "/general/logo6k.gif"], 0.15),
            page("gallery", 10.0, 189_440, &["/general/gallery20k.html", "/general/a60k.jpg", "/general/b60k.jpg", "/general/c45k.jpg"], 0.10),
            page("manual", 5.0, 102_400, &["/general/manual100k.html"], 0.05),
        ],
        "urls": [],
        "errors_by_kind": {"connect_refused": 0, "connect_timeout": 0, "connect_other": 0,
                           "reset": 0, "response_timeout": 3, "malformed_status": 0,
                           "malformed_headers": 0, "short_body": 0, "status_1xx": 0,
                           "status_3xx": 0, "status_4xx": 0, "status_5xx": 0, "io": 0},
        "timeseries": timeseries,
    });
    if profile {
        v["server_profile"] = json!({
            "method": "strace -c -f", "total_calls": requests * 41 / 10, "calls_per_request": 4.1,
            "cpu_us_per_request": 9.8,
            "syscalls": [
                {"name": "writev", "seconds": 1.91, "calls": requests * 3 / 10, "errors": 0},
                {"name": "sendfile", "seconds": 2.44, "calls": requests * 7 / 10, "errors": 0},
                {"name": "recvfrom", "seconds": 0.82, "calls": requests * 13 / 10, "errors": requests * 3 / 10},
                {"name": "epoll_wait", "seconds": 0.51, "calls": requests * 9 / 10, "errors": 0},
                {"name": "openat", "seconds": null, "calls": 230, "errors": 0},
                {"name": "accept4", "seconds": 0.001, "calls": 16, "errors": 16}
            ]
        });
    }
    v
}

/// A lab file with all three experiments: sizes (IO-Lite), syscalls (Jigsaw), digest.
pub fn lab() -> Value {
    let servers: [(&str, f64); 3] = [("flint", 1.0), ("nginx", 0.85), ("lighttpd", 0.7)];
    let sizes = [
        500u64, 1000, 2000, 3000, 5000, 7000, 10_000, 15_000, 20_000, 50_000, 100_000, 200_000,
    ];
    let mut results = Vec::new();
    let mut noise = Noise::new(7);
    for (server, speed) in servers {
        for &size in &sizes {
            // Fixed cost per request plus a cost per byte: the shape of IO-Lite's figure 3.
            let per_req_s = 18e-6 / speed + size as f64 / (2.6e9 * speed.sqrt());
            let rps = 1.0 / per_req_s * (1.0 + 0.02 * noise.next());
            results.push(json!({
                "experiment": "sizes", "server": server, "mode": "persistent", "size_bytes": size,
                "requests": (rps * 5.0).round() as u64, "duration_s": 5.0, "requests_per_s": rps,
                "bytes_per_s": rps * (size as f64 + 230.0), "syscalls_per_request": null,
                "server_cpu_us_per_request": null, "client_limited": size <= 1000 && server == "flint",
                "errors": 0, "profile_method": null, "syscalls": null
            }));
        }
    }
    let modes = [("http1.0", 9.0), ("persistent", 4.2), ("pipelined", 1.6)];
    for (server, speed) in servers {
        for (mode, calls) in modes {
            let per_req = calls / speed.powf(0.5);
            let rps = 52_000.0 * speed / per_req.sqrt();
            let requests = (rps * 5.0).round() as u64;
            let names = [
                ("read", 0.3),
                ("writev", 0.25),
                ("sendfile", 0.15),
                ("epoll_wait", 0.2),
                ("accept4", 0.05),
                ("close", 0.05),
            ];
            let syscalls: Vec<Value> = names
                .iter()
                .map(|(n, share)| {
                    let c = (requests as f64 * per_req * share).round() as u64;
                    json!({"name": n, "calls": c,
                           "errors": if *n == "read" { c / 5 } else { 0 },
                           "seconds": c as f64 * 2e-7})
                })
                .collect();
            results.push(json!({
                "experiment": "syscalls", "server": server, "mode": mode, "requests": requests,
                "duration_s": 5.0, "requests_per_s": rps, "bytes_per_s": rps * 23_000.0,
                "syscalls_per_request": per_req, "server_cpu_us_per_request": 14.0 / speed * per_req / 4.0,
                "client_limited": false, "errors": 0, "profile_method": "strace -c -f",
                "syscalls": syscalls
            }));
        }
    }
    for (server, speed) in servers {
        let rps = 40_000.0 * speed * 0.92;
        results.push(json!({
            "experiment": "digest", "server": server, "mode": "persistent", "size_bytes": 10_000,
            "requests": (rps * 5.0).round() as u64, "duration_s": 5.0, "requests_per_s": rps,
            "bytes_per_s": rps * 10_230.0, "syscalls_per_request": null,
            "server_cpu_us_per_request": 21.5 / speed, "client_limited": false, "errors": 0,
            "profile_method": null, "syscalls": null
        }));
    }
    json!({
        "kind": "lab", "schema_version": 1, "experiment": "all", "flint_version": "0.1.0",
        "started_at": "2025-03-17T12:02:44.000Z", "environment": environment(),
        "options": {"duration_s": 5.0, "servers": ["flint", "nginx", "lighttpd"]},
        "servers": [
            {"name": "flint", "version": "0.1.0", "status": "ok", "note": null},
            {"name": "nginx", "version": "1.22.1", "status": "ok", "note": "worker_processes 1"},
            {"name": "lighttpd", "version": "1.4.69", "status": "ok", "note": null},
            {"name": "apache2", "version": null, "status": "missing", "note": "not installed"}
        ],
        "results": results
    })
}

/// A compare of flint and nginx over 3 rounds, and a target that failed to start.
pub fn compare() -> Value {
    let round = |rps: f64, p50: f64, seed: u64| {
        let b = bench(rps, p50, 3, seed, false);
        b["summary"].clone()
    };
    let target = |name: &str, url: &str, rounds: Vec<Value>| json!({"name": name, "url": url, "status": "ok", "error": null, "rounds": rounds});
    let mut flint = target(
        "flint",
        "http://127.0.0.1:41001",
        vec![
            round(50_900.0, 0.254, 1),
            round(49_700.0, 0.262, 2),
            round(51_300.0, 0.251, 3),
        ],
    );
    let nginx = target(
        "nginx",
        "http://127.0.0.1:41002",
        vec![
            round(43_800.0, 0.301, 4),
            round(44_900.0, 0.296, 5),
            round(42_100.0, 0.317, 6),
        ],
    );
    // Figures as flint compare writes them for the first target; the others are left to be
    // computed from the rounds, as for a file that lacks them.
    flint["figures"] = json!({
        "requests_per_s": {"median": 50_900.0, "min": 49_700.0, "max": 51_300.0, "ratio": 1.0},
        "throughput_bytes_per_s": {"median": 1.182e9, "min": 1.154e9, "max": 1.191e9, "ratio": 1.0},
        "response_p50_ms": {"median": 0.254, "min": 0.251, "max": 0.262, "ratio": 1.0},
        "response_p99_ms": {"median": 1.905, "min": 1.88, "max": 1.965, "ratio": 1.0},
        "errors": {"median": 3.0, "min": 3.0, "max": 3.0, "ratio": 1.0}
    });
    json!({
        "kind": "compare", "schema_version": 1, "flint_version": "0.1.0",
        "started_at": "2025-03-17T12:30:00.000Z", "environment": environment(),
        "options": {"rounds": 3, "duration_s": 3.0, "clients": 16, "http": "persistent"},
        "workload": {"pages": [
            {"name": "home", "weight": 3.0, "files": ["/index.html", "/logo.gif", "/style.css"]},
            {"name": "/big.bin", "weight": 1.0, "files": ["/big.bin"]}
        ]},
        "targets": [flint, nginx, {"name": "apache2", "url": "http://127.0.0.1:41003",
                                   "status": "failed", "error": "connect refused: is it running?",
                                   "rounds": [], "figures": {}}]
    })
}

/// The standard mix of the tests and the README screenshot.
pub fn inputs() -> Vec<(String, Value)> {
    vec![
        (
            "flint-serve.json".into(),
            bench(50_900.0, 0.254, 30, 1, true),
        ),
        ("nginx.json".into(), bench(44_100.0, 0.297, 30, 2, false)),
        ("lab-all.json".into(), lab()),
        ("compare.json".into(), compare()),
    ]
}

/// The ids of the page's sections, in order.
pub fn sections(html: &str) -> Vec<&str> {
    html.match_indices(r#"<section id=""#)
        .map(|(i, m)| {
            let rest = &html[i + m.len()..];
            &rest[..rest.find('"').unwrap_or(0)]
        })
        .collect()
}
