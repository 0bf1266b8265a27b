//! ptester's per-URL table (phttpd's test client, as the note on caching Content-MD5 ran it) and its totals.
//!
//! ptester printed a row per client; flint prints a row per URL (the merged figures), with the
//! same columns: requests, min/avg/max connect time, min/avg/max transfer time (seconds), bytes
//! per response (head and body). Its totals printed "0 requests/sec" (integer division) and
//! negative byte counts (a 32-bit int wrapped at 2 GiB); here counters are u64 and rates f64.

use super::formulas::{per_second, ratio, secs};
use crate::stats::UrlStats;
use crate::RunResult;
use std::fmt::Write;

/// `min avg max` in seconds with ptester's four decimals, or dashes when nothing was measured.
fn triple(n: u64, min_us: u64, sum_us: u64, max_us: u64) -> [String; 3] {
    if n == 0 {
        return ["-".into(), "-".into(), "-".into()];
    }
    [
        format!("{:.4}", secs(min_us)),
        format!("{:.4}", secs(sum_us) / n as f64),
        format!("{:.4}", secs(max_us)),
    ]
}

fn bytes_per_response(u: &UrlStats) -> String {
    if u.requests == 0 {
        return "-".into();
    }
    format!(
        "{:.0}",
        ratio((u.header_bytes + u.body_bytes) as f64, u.requests as f64)
    )
}

/// The per-URL table and totals for a run.
pub fn ptester_body(r: &RunResult) -> String {
    let s = &r.stats;
    let width = r
        .workload
        .urls
        .iter()
        .map(|u| u.len())
        .max()
        .unwrap_or(0)
        .max(3);
    let mut o = String::with_capacity(256 + 128 * s.urls.len());
    let _ = writeln!(
        o,
        "{:<width$} {:>10} {:>8} {:>8} {:>8}  {:>8} {:>8} {:>8} {:>10}",
        "URL", "NRq", "Min Ct", "Avg Ct", "Max Ct", "Min Tx", "Avg Tx", "Max Tx", "Bytes"
    );
    let (mut tx_min, mut tx_max) = (u64::MAX, 0u64);
    for (url, u) in r.workload.urls.iter().zip(&s.urls) {
        let ct = triple(
            u.connects,
            u.connect_us_min,
            u.connect_us_sum,
            u.connect_us_max,
        );
        let tx = triple(
            u.requests,
            u.transfer_us_min,
            u.transfer_us_sum,
            u.transfer_us_max,
        );
        if u.requests > 0 {
            tx_min = tx_min.min(u.transfer_us_min);
            tx_max = tx_max.max(u.transfer_us_max);
        }
        let _ = writeln!(
            o,
            "{url:<width$} {:>10} {:>8} {:>8} {:>8}  {:>8} {:>8} {:>8} {:>10}",
            u.requests,
            ct[0],
            ct[1],
            ct[2],
            tx[0],
            tx[1],
            tx[2],
            bytes_per_response(u)
        );
    }
    let d = r.duration.as_secs_f64();
    let failed = s.errors.total();
    let bytes = s.bytes_header + s.bytes_body;
    let _ = write!(
        o,
        "(Ct: connect time, Tx: request written to last byte, both in seconds; Bytes: head and body \
         per response)\n\n\
         Actual test time.. {d:.3} seconds\n\
         Total requests.... {} ({:.2} requests/sec)\n\
         Total failed...... {failed} ({:.2} requests/sec)\n\
         Total bytes....... {bytes} ({:.2} bytes/sec)\n",
        s.requests,
        per_second(s.requests, d),
        per_second(failed, d),
        per_second(bytes, d),
    );
    if tx_min != u64::MAX {
        let _ = write!(
            o,
            "\nMin Tx: {:.4} seconds\nMax Tx: {:.4} seconds\n",
            secs(tx_min),
            secs(tx_max)
        );
    }
    o
}
