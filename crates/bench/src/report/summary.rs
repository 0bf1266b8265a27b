//! A modern summary, in the manner of wrk and oha: rates, a latency table, errors by kind.
//!
//! Rates are over the measured window (wall clock), not the paper's cumulative time. Byte rates
//! are printed in MB/s with MB = 10^6 bytes (and MiB/s beside them), because both are in use and
//! a reader should not have to guess. Open loop: latency is measured from each request's
//! intended start (wrk2's correction for coordinated omission); the uncorrected rows, from the
//! actual send, are printed next to them so the difference shows, with the send lag (how late
//! the client itself started each page). docs/latency.md says what each row spans.

use super::{figures, load_shape_text, load_text, run_mode_text, stop_text};
use crate::app::check::CheckKind;
use crate::stats::{ErrorKind, LatencySummary};
use crate::RunResult;
use std::fmt::Write;

fn latency_row(o: &mut String, label: &str, l: &LatencySummary) {
    if l.count == 0 {
        let _ = writeln!(o, "  {label:<22} {:>9}", "-");
        return;
    }
    let _ = writeln!(
        o,
        "  {label:<22} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10}",
        l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max, l.count
    );
}

/// HTTPS: what was agreed, how many handshakes resumed, and whether certificates were checked.
fn tls_line(r: &RunResult) -> String {
    let s = &r.stats;
    let agreed = match &s.tls_session {
        // QUIC's TLS: quiche does not say which suite and group BoringSSL chose.
        Some(t) if r.config.http == crate::HttpMode::Http3 => format!(
            "{} (suite and group not exposed by quiche), ALPN {}",
            results::tls_names::version(&t.version),
            t.alpn.as_deref().unwrap_or("none")
        ),
        // As curl and h2load print them: TLSv1.3 TLS_AES_128_GCM_SHA256.
        Some(t) => format!(
            "{} {} {}, ALPN {}",
            results::tls_names::version(&t.version),
            results::tls_names::cipher(&t.cipher),
            t.kx,
            t.alpn.as_deref().unwrap_or("none")
        ),
        None => "no handshake completed".into(),
    };
    let ratio = if s.tls_handshakes > 0 {
        100.0 * s.tls_resumed as f64 / s.tls_handshakes as f64
    } else {
        0.0
    };
    let verify = if r.config.tls.insecure {
        "certificates NOT verified (--insecure)"
    } else {
        "certificates verified"
    };
    format!(
        "  TLS:       {agreed}; {} handshakes, {} resumed ({ratio:.1}%); {verify}\n\n",
        s.tls_handshakes, s.tls_resumed
    )
}

/// `--http 2`: connections and streams, the server's limit, GOAWAYs and resets, HPACK's saving.
fn http2_line(h: &crate::stats::Http2Stats) -> String {
    let saved = h.header_bytes_saved();
    let plain = h.header_bytes_sent + saved;
    let pct = if plain == 0 {
        0.0
    } else {
        100.0 * saved as f64 / plain as f64
    };
    let resets: Vec<String> = h
        .rst_streams
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(code, n)| format!("{n} {}", crate::stats::error_code_name(code)))
        .collect();
    let resets = match resets.is_empty() {
        true => "none".to_owned(),
        false => resets.join(", "),
    };
    format!(
        "  HTTP/2:    {} connections, {} streams (server allows {} at once); {} GOAWAY, {} streams \
         retried; RST_STREAM {resets}; request headers {} B sent, HPACK saved {pct:.1}% on them \
         (h2load's \"space savings\" is on the responses)\n\n",
        h.connections, h.streams, h.max_concurrent_streams, h.goaways, h.retried, h.header_bytes_sent
    )
}

/// `--http 3`: connections and streams, QUIC's packets, the wire's bytes against the bodies',
/// the handshakes' RTT, and the failures by name.
fn http3_line(h: &crate::stats::Http3Stats, body_bytes: u64) -> String {
    let named = |m: &std::collections::BTreeMap<String, u64>| match m.is_empty() {
        true => "none".to_owned(),
        false => m
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let rtt_ms = match h.handshake_rtts {
        0 => 0.0,
        n => h.handshake_rtt_sum_us as f64 / n as f64 / 1000.0,
    };
    // `--early-data`: said only when a connection sent requests in 0-RTT.
    let early = match h.early_offered {
        0 => String::new(),
        n => format!(
            "; 0-RTT on {n} connections ({} accepted, {} rejected), {} requests",
            h.early_accepted, h.early_rejected, h.early_requests
        ),
    };
    format!(
        "  HTTP/3:    {} connections, {} streams; packets {} sent, {} received, {} lost, {} \
         retransmitted; {} B received on the wire for {body_bytes} B of bodies ({:.3} per body \
         byte), {} B sent; handshake RTT {rtt_ms:.3} ms mean{early}; {} GOAWAY, {} streams retried; \
         alerts {}; stream resets {}; closes {}\n  \
         UDP:       {} datagrams received in {} calls ({:.2} a call), {} sent in {} calls \
         ({:.2} a call); {} messages cut short and dropped; connections without GRO {}, \
         without GSO {}, without recvmmsg {}\n\n",
        h.connections,
        h.streams,
        h.packets_sent,
        h.packets_received,
        h.packets_lost,
        h.retransmissions,
        h.wire_bytes_received,
        h.wire_per_body_byte(body_bytes),
        h.wire_bytes_sent,
        h.goaways,
        h.retried,
        named(&h.handshake_alerts),
        named(&h.stream_resets),
        named(&h.connection_closes),
        h.datagrams_received,
        h.recv_calls,
        per_call(h.datagrams_received, h.recv_calls),
        h.datagrams_sent,
        h.send_calls,
        per_call(h.datagrams_sent, h.send_calls),
        h.dropped,
        h.gro_off,
        h.gso_off,
        h.recvmmsg_off,
    )
}

/// Datagrams a system call (0 without a call).
fn per_call(datagrams: u64, calls: u64) -> f64 {
    match calls {
        0 => 0.0,
        c => datagrams as f64 / c as f64,
    }
}

/// The modern summary of a run, ending with its [`super::end_notes`].
pub fn summary(r: &RunResult) -> String {
    summary_body(r) + &super::end_notes(r, "  ")
}

/// The summary without the end notes.
pub fn summary_body(r: &RunResult) -> String {
    let f = figures(r);
    let s = &r.stats;
    let c = &r.config;
    let mut o = String::with_capacity(2048);
    let warmup = if c.warmup.is_zero() {
        String::new()
    } else {
        format!(", warm-up {:.3} s", c.warmup.as_secs_f64())
    };
    let _ = write!(
        o,
        "Target:    {} ({})\n\
         Mode:      {}, {}\n\
         Load:      {}, run of {}{warmup}; measured {:.3} s\n\n",
        c.target.url,
        c.target.endpoint(),
        run_mode_text(r),
        load_text(r),
        load_shape_text(&f),
        stop_text(c.stop),
        f.duration_s,
    );
    let mb = f.throughput_bytes_per_s / 1e6;
    let mib = f.throughput_bytes_per_s / (1024.0 * 1024.0);
    // One-file pages: the Pages line and the page rows would repeat requests and responses.
    let pages_told = !super::pages_repeat_requests(r);
    let _ = writeln!(
        o,
        "  Requests:  {:>14}   {:>12.2} requests/s",
        f.requests, f.requests_per_s
    );
    if pages_told {
        let _ = writeln!(
            o,
            "  Pages:     {:>14}   {:>12.2} pages/s",
            f.pages, f.pages_per_s
        );
    }
    let _ = write!(
        o,
        "  Data:      {:>14} B {:>12.3} MB/s (MB = 10^6 bytes; {:.3} MiB/s)\n\
         \x20            header {} B + body {} B of the counted responses\n",
        f.data_moved, mb, mib, f.header_bytes, f.body_bytes,
    );
    if s.bytes_not_in_responses() > 0 {
        let kinds = [
            ("chunk framing", s.bytes_chunk_framing),
            ("HTTP/2 framing", s.http2.bytes_framing),
            ("failed", s.bytes_failed),
            ("unfinished", s.bytes_unfinished),
            ("other", s.bytes_other()),
        ];
        let named: Vec<String> = kinds
            .iter()
            .filter(|k| k.1 > 0)
            .map(|(name, n)| format!("{name} {n} B"))
            .collect();
        let _ = writeln!(
            o,
            "             also read {} B in no counted response: {}",
            s.bytes_not_in_responses(),
            named.join(", ")
        );
    }
    let _ = writeln!(o, "  Connects:  {:>14}\n", f.connects);
    let https = c.target.scheme == crate::Scheme::Https;
    // HTTP/3's TLS is inside the QUIC handshake, whose time is the connect row's; its count
    // of handshakes and resumed ones is TCP's.
    if https {
        o.push_str(&tls_line(r));
    }
    if c.http == crate::HttpMode::Http2 {
        o.push_str(&http2_line(&s.http2));
    }
    if c.http == crate::HttpMode::Http3 {
        o.push_str(&http3_line(&s.http3, s.bytes_body));
    }
    let _ = writeln!(
        o,
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "Latency (ms)", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max", "count"
    );
    let connect = match (c.http, https) {
        // No TCP connect: the connect row is the QUIC handshake.
        (crate::HttpMode::Http3, _) => "connect (QUIC)",
        (_, true) => "connect (TCP)",
        _ => "connect",
    };
    latency_row(&mut o, connect, &s.connect.summary());
    if https && c.http != crate::HttpMode::Http3 {
        latency_row(&mut o, "TLS handshake", &s.tls_handshake.summary());
    }
    latency_row(&mut o, "time to first byte", &s.ttfb.summary());
    latency_row(&mut o, "response", &s.response.summary());
    if let Some(u) = &s.response_uncorrected {
        latency_row(&mut o, "response, uncorrected", &u.summary());
    }
    if pages_told {
        latency_row(&mut o, "page", &s.page.summary());
        if let Some(u) = &s.page_uncorrected {
            latency_row(&mut o, "page, uncorrected", &u.summary());
        }
    }
    if let Some(lag) = &s.send_lag {
        latency_row(&mut o, "send lag", &lag.summary());
    }
    let unfinished_told = super::unfinished_tell(r);
    if unfinished_told {
        latency_row(&mut o, "unfinished, waited", &s.unfinished_wait.summary());
    }
    if c.rate.is_some() {
        o.push_str(
            "  (open loop: latency from each request's intended start; \"uncorrected\" from the \
             actual send;\n   \"send lag\": how late each page started against its intended time)\n",
        );
    }
    o.push('\n');
    let errors: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|&&k| s.errors.get(k) > 0)
        .map(|&k| format!("{} {}", k.name(), s.errors.get(k)))
        .collect();
    if errors.is_empty() && !unfinished_told {
        o.push_str("  Errors:    none\n");
    } else if errors.is_empty() {
        o.push_str("  Errors:    none completed in error (see Unfinished)\n");
    } else {
        let _ = writeln!(
            o,
            "  Errors:    {} in all: {}",
            s.errors.total(),
            errors.join(", ")
        );
    }
    for (reason, n) in s.tls_failures.seen() {
        let _ = writeln!(
            o,
            "  TLS failed: {n} {}: {}",
            reason.name(),
            reason.explain_for(&r.config.tls)
        );
    }
    let statuses: Vec<String> = s
        .statuses
        .seen()
        .map(|(code, n)| format!("{code} {n}"))
        .collect();
    if !statuses.is_empty() {
        let _ = writeln!(o, "  Statuses:  {}", statuses.join(", "));
    }
    if r.config.redirect > 0 {
        o.push_str(&redirects_line(&s.redirects));
    }
    o.push_str(&pipeline_resends(s));
    o.push_str(&check_failures(r));
    o
}

/// HTTP/1.1 pipelining: the requests the server never processed behind a response after which
/// it closed: the re-sends (a request re-sent twice counts twice), and those not sent again.
fn pipeline_resends(s: &crate::Stats) -> String {
    let mut o = String::new();
    if s.pipeline_resent > 0 {
        let _ = writeln!(
            o,
            "  Re-sent:   {} (of requests pipelined behind a response after which the server closed: never processed, sent again on a new connection; a request re-sent twice counts twice)",
            super::count_of(s.pipeline_resent, "re-send", "re-sends")
        );
    }
    if s.pipeline_not_resent > 0 {
        let _ = writeln!(
            o,
            "  Not sent:  {} (pipelined behind a response after which the server closed, not idempotent or in a batch with one that is: never processed, not sent again)",
            super::count_of(s.pipeline_not_resent, "request", "requests")
        );
    }
    o
}

/// Application workloads: why requests were not sent (errors of their own kinds, counted in
/// the errors above: a value never extracted, or one that would split a header field), and
/// the first responses that failed a check or an extraction, with their heads.
fn check_failures(r: &RunResult) -> String {
    let s = &r.stats;
    let mut o = String::new();
    let missing = s.errors.get(ErrorKind::MissingValueUnsent);
    if missing > 0 {
        // Where the values went: an extraction that found none, a failed check (which forgets
        // its file's values), or the session forgotten as each page starts.
        let mut why = Vec::new();
        if s.errors.get(ErrorKind::ExtractMissing) > 0 {
            why.push("see extract_missing");
        }
        if CheckKind::ALL.iter().any(|&k| s.errors.get(k.into()) > 0) {
            why.push("a failed check forgets its file's values");
        }
        if r.workload.plan().is_some_and(|p| p.options.reset_per_page) {
            why.push("--reset-session forgets them as each page starts");
        }
        let why = match why.is_empty() {
            true => String::new(),
            false => format!(": {}", why.join("; ")),
        };
        let _ = writeln!(
            o,
            "  Not sent:  {} (missing_value_unsent: they need a value their session never extracted{why}; the server received none, their pages failed)",
            super::count_of(missing, "request", "requests")
        );
    }
    let unsafe_ = s.errors.get(ErrorKind::UnsafeValueUnsent);
    if unsafe_ > 0 {
        let _ = writeln!(
            o,
            "  Not sent:  {} (unsafe_value_unsent: a header field's value had a line break or NUL; the server received none, their pages failed)",
            super::count_of(unsafe_, "request", "requests")
        );
    }
    for f in &s.check_failures {
        let _ = writeln!(o, "  Failed:    {} {}: {}", f.kind, f.url, f.detail);
        for line in f.head.lines() {
            let _ = writeln!(o, "             | {line}");
        }
    }
    o
}

/// `--redirect N`: redirects followed (requests in the counts above, their time in their
/// entry's response time) and those whose 3xx stood as the response, by why.
fn redirects_line(rs: &crate::stats::RedirectStats) -> String {
    let not: Vec<String> = rs
        .unfollowed_seen()
        .map(|(why, n)| format!("{} {n}", why.name()))
        .collect();
    let not = match not.is_empty() {
        true => String::new(),
        false => format!("; not followed: {}", not.join(", ")),
    };
    format!("  Redirects: {} followed{not}\n", rs.followed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hpack_saving_says_its_direction() {
        let h = crate::stats::Http2Stats {
            header_bytes_sent: 20,
            header_bytes_plain: 100,
            ..Default::default()
        };
        let line = super::http2_line(&h);
        assert!(
            line.contains("request headers 20 B sent, HPACK saved 80.0% on them"),
            "{line}"
        );
        assert!(
            line.contains("h2load's \"space savings\" is on the responses"),
            "{line}"
        );
    }
}
