//! The whole result as JSON, described by docs/bench-json.schema.json.
//!
//! Names carry their unit (`_s`, `_ms`, `_bytes`, `_per_s`) so a consumer never guesses.
//! Latency objects are in milliseconds; per-page and per-URL times in the paper's seconds.
//! Bump [`SCHEMA_VERSION`] when a field is renamed or removed (adding one is compatible).
//!
//! Version 2 added `kind`, `environment`, the time series and the latency spectra, and documents
//! the `server_profile` object that `flint bench --profile` inserts. Version 3: `bytes_total` is
//! the paper's data moved (`bytes_header + bytes_body`, exactly); every byte read is
//! `bytes_read`, and the time series sums to it.

use super::formulas::secs;
use super::{environment, figures, page_blocks};
use crate::config::Stop;
use crate::stats::{ErrorKind, Latency, LatencySummary, SecondStats};
use crate::RunResult;
use serde_json::{json, Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// Version of the JSON layout (docs/bench-json.schema.json).
pub const SCHEMA_VERSION: u64 = 3;

fn latency(l: &LatencySummary) -> Value {
    // LatencySummary is plain numbers: serialisation cannot fail.
    serde_json::to_value(l).unwrap_or(Value::Null)
}

/// `[{percentile, ms}, ...]`: the spectrum HdrHistogram plots (see [`Latency::spectrum`]).
fn spectrum(l: &Latency) -> Value {
    let points = l.spectrum().into_iter();
    Value::Array(
        points
            .map(|(p, ms)| json!({"percentile": p, "ms": ms}))
            .collect(),
    )
}

/// One entry per second of the window; `t_s` is the end of the second (the window's end for a
/// last, partial one), the latencies `null` in a second without responses.
fn timeseries(seconds: &[SecondStats], duration_s: f64) -> Value {
    let quantile = |s: &SecondStats, q: f64| {
        let h = s.response.histogram();
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3)
    };
    let entries = seconds.iter().enumerate().map(|(i, s)| {
        json!({
            "t_s": ((i + 1) as f64).min(duration_s),
            "requests": s.requests,
            "errors": s.errors,
            "bytes": s.bytes,
            "p50_ms": quantile(s, 0.50),
            "p99_ms": quantile(s, 0.99),
        })
    });
    Value::Array(entries.collect())
}

/// `{min, mean, max}` in ms from µs counters over `n` samples, or nulls when there are none.
fn min_mean_max_ms(n: u64, min_us: u64, sum_us: u64, max_us: u64) -> Value {
    if n == 0 {
        return json!({"min": null, "mean": null, "max": null});
    }
    json!({
        "min": min_us as f64 / 1e3,
        "mean": sum_us as f64 / 1e3 / n as f64,
        "max": max_us as f64 / 1e3,
    })
}

/// `t` as RFC 3339 UTC with milliseconds (`2025-03-17T11:23:10.000Z`); times before 1970 clamp.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let rem = secs % 86_400;
    let (year, month, day) = wire::date::civil_from_days((secs / 86_400) as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// The whole result of a run.
pub fn json(r: &RunResult) -> Value {
    let f = figures(r);
    let s = &r.stats;
    let c = &r.config;

    let mut summary = json!({
        "webstone_number": f.webstone_number,
        "pages": f.pages,
        "requests": f.requests,
        "connects": f.connects,
        "errors": f.errors,
        "clients": f.clients,
        "bytes_total": f.data_moved,
        "bytes_header": f.header_bytes,
        "bytes_body": f.body_bytes,
        "bytes_read": f.bytes_read,
        "bytes_not_in_responses": {
            "total": s.bytes_not_in_responses(),
            "chunk_framing": s.bytes_chunk_framing,
            "failed": s.bytes_failed,
            "unfinished": s.bytes_unfinished,
            "other": s.bytes_other(),
        },
        "status_counts": s
            .statuses
            .seen()
            .map(|(code, n)| (code.to_string(), json!(n)))
            .collect::<Map<String, Value>>(),
        "unfinished": s.unfinished,
        "unfinished_wait_ms": latency(&s.unfinished_wait.summary()),
        "duration_s": f.duration_s,
        "requests_per_s": f.requests_per_s,
        "pages_per_s": f.pages_per_s,
        "throughput_bytes_per_s": f.throughput_bytes_per_s,
        "webstone_thruput_bytes_per_s": f.thruput,
        "cumulative_time_s": f.cumulative_s,
        "connect_time_total_s": f.total_connect_s,
        "avg_connect_s": f.avg_connect_s,
        "max_connect_s": f.max_connect_s,
        "avg_response_s": f.avg_response_s,
        "max_response_s": f.max_response_s,
        "avg_body_bytes": f.avg_body_bytes,
        "avg_retrieval_bytes": f.avg_retrieval_bytes,
        "connect_ms": latency(&s.connect.summary()),
        "ttfb_ms": latency(&s.ttfb.summary()),
        "response_ms": latency(&s.response.summary()),
        "page_ms": latency(&s.page.summary()),
        "response_spectrum": spectrum(&s.response),
        "page_spectrum": spectrum(&s.page),
    });
    if let Some(m) = summary.as_object_mut() {
        if let Some(u) = &s.response_uncorrected {
            m.insert("response_uncorrected_ms".into(), latency(&u.summary()));
        }
        if let Some(u) = &s.page_uncorrected {
            m.insert("page_uncorrected_ms".into(), latency(&u.summary()));
        }
        if let Some(lag) = &s.send_lag {
            m.insert("send_lag_ms".into(), latency(&lag.summary()));
            m.insert("pages_scheduled".into(), json!(s.pages_scheduled));
            m.insert("pages_not_sent".into(), json!(s.pages_not_sent));
            m.insert("rate_kept".into(), json!(!super::rate_not_kept(r)));
        }
        if c.target.scheme == crate::Scheme::Https {
            // Apart from connect_ms (TCP's, as the paper's connect time), count = handshakes.
            m.insert(
                "tls_handshake_ms".into(),
                latency(&s.tls_handshake.summary()),
            );
            let session = s.tls_session;
            m.insert(
                "tls".into(),
                json!({
                    "version": session.map(|t| t.version),
                    "cipher": session.map(|t| t.cipher),
                    "alpn": session.and_then(|t| t.alpn),
                    "handshakes": s.tls_handshakes,
                    "resumed": s.tls_resumed,
                }),
            );
        }
    }

    let pages: Vec<Value> = page_blocks(r)
        .into_iter()
        .zip(&r.workload.pages)
        .zip(&s.pages)
        .map(|((b, page), ps)| {
            json!({
                "name": b.name,
                "weight": b.weight,
                "size_bytes": b.size,
                "hits": b.hits,
                "errors": b.errors,
                "files": page.files.iter().map(|&i| r.workload.urls[i].as_str()).collect::<Vec<_>>(),
                "total_time_s": b.total_time_s,
                "max_response_s": b.max_response_s,
                "connect_time_s": b.connect_time_s,
                "max_connect_s": b.max_connect_s,
                "data_moved_bytes": b.data_moved,
                "header_bytes": ps.header_bytes,
                "connects": b.connects,
                "time_ms": latency(&ps.time.summary()),
            })
        })
        .collect();

    let urls: Vec<Value> = r
        .workload
        .urls
        .iter()
        .zip(&s.urls)
        .enumerate()
        .map(|(i, (url, u))| {
            json!({
                "url": url,
                "method": r.workload.spec(i).method(),
                "requests": u.requests,
                "errors": u.errors,
                "connects": u.connects,
                "connect_ms": min_mean_max_ms(u.connects, u.connect_us_min, u.connect_us_sum, u.connect_us_max),
                "transfer_ms": min_mean_max_ms(u.requests, u.transfer_us_min, u.transfer_us_sum, u.transfer_us_max),
                "header_bytes": u.header_bytes,
                "body_bytes": u.body_bytes,
                "size_bytes": u.last_body_size,
                "response_ms": latency(&u.response.summary()),
            })
        })
        .collect();

    let errors_by_kind: Map<String, Value> = ErrorKind::ALL
        .iter()
        .map(|&k| (k.name().to_owned(), json!(s.errors.get(k))))
        .collect();

    let (stop, duration_s, stop_pages) = match c.stop {
        Stop::Duration(d) => ("duration", json!(d.as_secs_f64()), Value::Null),
        Stop::Pages(n) => ("pages", Value::Null, json!(n)),
    };
    let config = json!({
        "target": {"url": c.target.url, "addr": c.target.addr.to_string(), "host": c.target.host, "scheme": c.target.scheme},
        "tls": (c.target.scheme == crate::Scheme::Https).then(|| json!({
            "verify": !c.tls.insecure,
            "cacert": c.tls.cacert.as_ref().map(|p| p.display().to_string()),
            "resume": c.tls.resume,
            "version": c.tls.version,
        })),
        "http": c.http,
        "concurrency": c.concurrency,
        "threads": c.threads,
        "stop": stop,
        "duration_s": duration_s,
        "pages": stop_pages,
        "warmup_s": c.warmup.as_secs_f64(),
        "rate_pages_per_s": c.rate,
        "think_s": c.think.map(|t| t.as_secs_f64()),
        "seed": c.seed,
        "connect_timeout_s": c.connect_timeout.as_secs_f64(),
        "response_timeout_s": c.response_timeout.as_secs_f64(),
    });

    let started = r.started_at.duration_since(UNIX_EPOCH).unwrap_or_default();
    json!({
        "schema_version": SCHEMA_VERSION,
        "kind": "bench",
        "flint_version": env!("CARGO_PKG_VERSION"),
        "started_at": rfc3339(r.started_at),
        "started_at_unix_s": secs(started.as_micros().min(u128::from(u64::MAX)) as u64),
        "interrupted": r.interrupted,
        "environment": environment(),
        "config": config,
        "summary": summary,
        "pages": pages,
        "urls": urls,
        "errors_by_kind": errors_by_kind,
        "timeseries": timeseries(&s.timeseries, f.duration_s),
    })
}
