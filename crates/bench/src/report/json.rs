//! The whole result as a typed [`results::BenchResult`], and as JSON (docs/bench-json.schema.json).
//!
//! The document's types live in the `results` crate so that every reader (`flint report`,
//! `flint compare`, the many-hosts coordinator) reads what this writes with the same types.
//! Version 2 added `kind`, `environment`, the time series and the latency spectra, and documents
//! the `server_profile` object that `flint bench --profile` inserts. Version 3: `bytes_total` is
//! the paper's data moved (`bytes_header + bytes_body`, exactly); every byte read is
//! `bytes_read`, and the time series sums to it. Version 3: `bytes_total` is
//! the paper's data moved (`bytes_header + bytes_body`, exactly); every byte read is
//! `bytes_read`, and the time series sums to it.

use super::formulas::secs;
use super::{environment, figures, page_blocks};
use crate::config::HttpMode;
use crate::config::Stop;
use crate::stats::{
    error_code_name, frame_type_name, ErrorKind, Http2Stats, Http3Stats, Latency, SecondStats,
};
use crate::RunResult;
use results::{
    BenchConfigRecord, BenchResult, BytesNotInResponses, Http2Record, Http3Record, Kind,
    MinMeanMax, PageRecord, RedirectsRecord, SecondRecord, SpectrumPoint, StopKind, Summary,
    TargetRecord, TlsConfigRecord, TlsRecord, UrlRecord,
};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

pub use results::SCHEMA_VERSION;

/// The spectrum HdrHistogram plots (see [`Latency::spectrum`]).
fn spectrum(l: &Latency) -> Vec<SpectrumPoint> {
    let points = l.spectrum().into_iter();
    points
        .map(|(percentile, ms)| SpectrumPoint { percentile, ms })
        .collect()
}

/// One entry per second of the window; `t_s` is the end of the second (the window's end for a
/// last, partial one), the latencies `None` in a second without responses.
pub fn timeseries(seconds: &[SecondStats], duration_s: f64) -> Vec<SecondRecord> {
    let quantile = |s: &SecondStats, q: f64| {
        let h = s.response.histogram();
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3)
    };
    let entries = seconds.iter().enumerate().map(|(i, s)| SecondRecord {
        t_s: ((i + 1) as f64).min(duration_s),
        requests: s.requests,
        errors: s.errors,
        bytes: s.bytes,
        p50_ms: quantile(s, 0.50),
        p99_ms: quantile(s, 0.99),
    });
    entries.collect()
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

/// The whole result of a run, typed.
pub fn record(r: &RunResult) -> BenchResult {
    let f = figures(r);
    let s = &r.stats;
    let c = &r.config;

    let https = c.target.scheme == crate::Scheme::Https;
    let summary = Summary {
        webstone_number: f.webstone_number,
        pages: f.pages,
        requests: f.requests,
        connects: f.connects,
        errors: f.errors,
        clients: f.clients,
        clients_lost: f.clients_lost,
        bytes_total: f.data_moved,
        bytes_header: f.header_bytes,
        bytes_body: f.body_bytes,
        bytes_read: f.bytes_read,
        bytes_not_in_responses: BytesNotInResponses {
            total: s.bytes_not_in_responses(),
            chunk_framing: s.bytes_chunk_framing,
            h2_framing: s.http2.bytes_framing,
            failed: s.bytes_failed,
            unfinished: s.bytes_unfinished,
            other: s.bytes_other(),
        },
        status_counts: s
            .statuses
            .seen()
            .map(|(code, n)| (code.to_string(), n))
            .collect(),
        unfinished: s.unfinished,
        unsent_at_end: s.unsent_at_end,
        missing_value_unsent: s.errors.get(ErrorKind::MissingValueUnsent),
        unsafe_value_unsent: s.errors.get(ErrorKind::UnsafeValueUnsent),
        pipeline_resent: s.pipeline_resent,
        pipeline_not_resent: s.pipeline_not_resent,
        unfinished_wait_ms: s.unfinished_wait.summary(),
        duration_s: f.duration_s,
        requests_per_s: f.requests_per_s,
        pages_per_s: f.pages_per_s,
        throughput_bytes_per_s: f.throughput_bytes_per_s,
        webstone_thruput_bytes_per_s: f.thruput,
        cumulative_time_s: f.cumulative_s,
        connect_time_total_s: f.total_connect_s,
        avg_connect_s: f.avg_connect_s,
        max_connect_s: f.max_connect_s,
        avg_response_s: f.avg_response_s,
        max_response_s: f.max_response_s,
        avg_body_bytes: f.avg_body_bytes,
        avg_retrieval_bytes: f.avg_retrieval_bytes,
        connect_ms: s.connect.summary(),
        ttfb_ms: s.ttfb.summary(),
        response_ms: s.response.summary(),
        page_ms: s.page.summary(),
        response_uncorrected_ms: s.response_uncorrected.as_ref().map(Latency::summary),
        page_uncorrected_ms: s.page_uncorrected.as_ref().map(Latency::summary),
        send_lag_ms: s.send_lag.as_ref().map(Latency::summary),
        // HTTPS only: apart from connect_ms (TCP's, as the paper's connect time).
        tls_handshake_ms: https.then(|| s.tls_handshake.summary()),
        tls: https.then(|| TlsRecord {
            version: s.tls_session.as_ref().map(|t| t.version.clone()),
            cipher: s.tls_session.as_ref().map(|t| t.cipher.clone()),
            kx: s.tls_session.as_ref().map(|t| t.kx.clone()),
            alpn: s.tls_session.as_ref().and_then(|t| t.alpn.clone()),
            handshakes: s.tls_handshakes,
            resumed: s.tls_resumed,
            failures: s
                .tls_failures
                .seen()
                .into_iter()
                .map(|(reason, n)| (reason.name().to_owned(), n))
                .collect(),
        }),
        http2: (c.http == HttpMode::Http2).then(|| http2_record(&s.http2)),
        http3: (c.http == HttpMode::Http3).then(|| http3_record(&s.http3, s.bytes_body)),
        redirects: (c.redirect > 0).then(|| RedirectsRecord {
            followed: s.redirects.followed,
            not_followed: s
                .redirects
                .unfollowed_seen()
                .map(|(why, n)| (why.name().to_owned(), n))
                .collect(),
        }),
        pages_scheduled: s.send_lag.as_ref().map(|_| s.pages_scheduled),
        pages_not_sent: s.send_lag.as_ref().map(|_| s.pages_not_sent),
        pages_sent_late: super::late_grace_us(r).map(|_| s.pages_sent_late),
        rate_kept: s.send_lag.as_ref().map(|_| !super::rate_not_kept(r)),
        response_spectrum: spectrum(&s.response),
        page_spectrum: spectrum(&s.page),
    };

    let pages = page_blocks(r)
        .into_iter()
        .zip(&r.workload.pages)
        .zip(&s.pages)
        .map(|((b, page), ps)| PageRecord {
            name: b.name,
            weight: b.weight,
            size_bytes: b.size,
            hits: b.hits,
            errors: b.errors,
            files: page
                .files
                .iter()
                .map(|&i| r.workload.urls[i].clone())
                .collect(),
            total_time_s: b.total_time_s,
            max_response_s: b.max_response_s,
            connect_time_s: b.connect_time_s,
            max_connect_s: b.max_connect_s,
            data_moved_bytes: b.data_moved,
            header_bytes: ps.header_bytes,
            connects: b.connects,
            time_ms: ps.time.summary(),
        })
        .collect();

    let urls = r
        .workload
        .urls
        .iter()
        .zip(&s.urls)
        .enumerate()
        .map(|(i, (url, u))| UrlRecord {
            url: url.clone(),
            method: r.workload.spec(i).method().to_owned(),
            requests: u.requests,
            errors: u.errors,
            connects: u.connects,
            connect_ms: MinMeanMax::from_us(
                u.connects,
                u.connect_us_min,
                u.connect_us_sum,
                u.connect_us_max,
            ),
            transfer_ms: MinMeanMax::from_us(
                u.requests,
                u.transfer_us_min,
                u.transfer_us_sum,
                u.transfer_us_max,
            ),
            header_bytes: u.header_bytes,
            body_bytes: u.body_bytes,
            size_bytes: u.last_body_size,
            response_ms: u.response.summary(),
        })
        .collect();

    let errors_by_kind = ErrorKind::ALL
        .iter()
        .map(|&k| (k.name().to_owned(), s.errors.get(k)))
        .collect();

    let (stop, duration_s, stop_pages) = match c.stop {
        Stop::Duration(d) => (StopKind::Duration, Some(d.as_secs_f64()), None),
        Stop::Pages(n) => (StopKind::Pages, None, Some(n)),
    };
    let config = BenchConfigRecord {
        target: TargetRecord {
            url: c.target.url.clone(),
            addr: c.target.endpoint(),
            host: c.target.host.clone(),
            scheme: c.target.scheme.as_str().to_owned(),
        },
        tls: https.then(|| TlsConfigRecord {
            verify: !c.tls.insecure,
            cacert: c.tls.cacert.as_ref().map(|p| p.display().to_string()),
            resume: c.tls.resume,
            early_data: c.h3_early_data,
            version: c.tls.version.map(|v| v.as_str().to_owned()),
            ciphers: c.tls.ciphers.clone(),
        }),
        http: c.http,
        concurrency: c.concurrency as u64,
        threads: c.threads as u64,
        stop,
        duration_s,
        pages: stop_pages,
        warmup_s: c.warmup.as_secs_f64(),
        rate_pages_per_s: c.rate,
        think_s: c.think.map(|t| t.as_secs_f64()),
        seed: c.seed,
        connect_timeout_s: c.connect_timeout.as_secs_f64(),
        response_timeout_s: c.response_timeout.as_secs_f64(),
        busy_poll_us: Some(c.busy_poll.as_micros() as u64),
        read_slack_percent: Some(c.read_slack * 100.0),
        streams: c.streams.map(u64::from),
        connections_per_client: (c.connections_per_child > 1)
            .then_some(c.connections_per_child as u64),
        h2_window_bytes: c.h2_window.map(u64::from),
        redirect: (c.redirect > 0).then_some(c.redirect),
    };

    let started = r.started_at.duration_since(UNIX_EPOCH).unwrap_or_default();
    BenchResult {
        schema_version: SCHEMA_VERSION,
        kind: Kind::Bench,
        flint_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: rfc3339(r.started_at),
        started_at_unix_s: secs(started.as_micros().min(u128::from(u64::MAX)) as u64),
        interrupted: r.interrupted,
        stopped_early: s.gave_up.map(|g| results::bench::StoppedEarly {
            kind: g.kind.name().to_owned(),
            attempts: g.attempts,
            after_s: g.after.as_secs_f64(),
            reason: g.line(
                &r.config,
                &s.statuses,
                g.tls_hint(&r.config, &s.tls_failures).as_deref(),
            ),
        }),
        incomplete: false,
        environment: environment(),
        config,
        summary,
        pages,
        urls,
        errors_by_kind,
        check_failures: (s.check_failures.iter())
            .map(|f| results::bench::CheckFailureRecord {
                kind: f.kind.clone(),
                url: f.url.clone(),
                detail: f.detail.clone(),
                head: f.head.clone(),
            })
            .collect(),
        timeseries: timeseries(&s.timeseries, f.duration_s),
        server_profile: None,
        hosts: Vec::new(),
    }
}

/// The whole result of a run as JSON: [`record`], serialized.
pub fn json(r: &RunResult) -> Value {
    // Plain numbers, strings and maps with string keys: serialization cannot fail.
    serde_json::to_value(record(r)).unwrap_or(Value::Null)
}

/// `summary.http3`: QUIC's packets and bytes beside the body bytes, failures by name.
fn http3_record(h: &Http3Stats, body_bytes: u64) -> Http3Record {
    Http3Record {
        connections: h.connections,
        streams: h.streams,
        packets_sent: h.packets_sent,
        packets_received: h.packets_received,
        packets_lost: h.packets_lost,
        retransmissions: h.retransmissions,
        wire_bytes_sent: h.wire_bytes_sent,
        wire_bytes_received: h.wire_bytes_received,
        body_bytes,
        wire_per_body_byte: h.wire_per_body_byte(body_bytes),
        handshake_rtt_ms: MinMeanMax::from_us(
            h.handshake_rtts,
            h.handshake_rtt_min_us,
            h.handshake_rtt_sum_us,
            h.handshake_rtt_max_us,
        ),
        goaways: h.goaways,
        retried: h.retried,
        early_offered: h.early_offered,
        early_accepted: h.early_accepted,
        early_rejected: h.early_rejected,
        early_requests: h.early_requests,
        handshake_alerts: h.handshake_alerts.clone(),
        stream_resets: h.stream_resets.clone(),
        connection_closes: h.connection_closes.clone(),
        datagrams_received: h.datagrams_received,
        recv_calls: h.recv_calls,
        datagrams_sent: h.datagrams_sent,
        send_calls: h.send_calls,
        dropped: h.dropped,
        gro_off: h.gro_off,
        gso_off: h.gso_off,
        recvmmsg_off: h.recvmmsg_off,
    }
}

/// `summary.http2`: the counters with their codes and types named.
fn http2_record(h: &Http2Stats) -> Http2Record {
    let named = |counts: &[u64], name: fn(usize) -> &'static str| {
        counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (name(i).to_owned(), n))
            .collect()
    };
    Http2Record {
        connections: h.connections,
        streams: h.streams,
        max_concurrent_streams: h.max_concurrent_streams,
        rst_streams: named(&h.rst_streams, error_code_name),
        goaways: h.goaways,
        retried: h.retried,
        header_bytes_sent: h.header_bytes_sent,
        header_bytes_saved: h.header_bytes_saved(),
        frames_received: named(&h.frames_received, frame_type_name),
    }
}
