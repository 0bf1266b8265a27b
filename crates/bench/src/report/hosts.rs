//! The per-host table of a run on many client hosts (the WebSTONE paper's "Client: gateweb-indy9
//! Number of Clients: 6" lines, with what each host measured).

use results::{HostRecord, HostStatus};
use std::fmt::Write;

/// One line per host: its Webchildren, status, what it fetched, its clock offset and start skew,
/// its own CPU per request and its response percentiles; a lost or failed host's reason.
pub fn hosts_table(hosts: &[HostRecord]) -> String {
    let ok = hosts.iter().filter(|h| h.status == HostStatus::Ok).count();
    let mut out = format!("Client hosts: {} ({ok} ok)\n\n", hosts.len());
    let width = hosts.iter().map(|h| h.name.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        out,
        "  {:<width$} {:>6} {:>6} {:>10} {:>9} {:>7} {:>11} {:>10} {:>8} {:>10} {:>8} {:>8} {:>8}",
        "host",
        "Webch.",
        "status",
        "requests",
        "pages",
        "errors",
        "MB moved",
        "offset ms",
        "skew ms",
        "cpu µs/req",
        "p50 ms",
        "p99 ms",
        "max ms"
    );
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("–".to_owned(), |x| format!("{x:.digits$}"));
    for h in hosts {
        if let (HostStatus::Lost, Some(at)) = (h.status, h.known_until_s) {
            // What its live figures said it had done: not measured, not in the merge.
            let _ = writeln!(
                out,
                "  {:<width$} {:>6} {:>6} {:>10} {:>9} {:>7} {:>11} {:>10}  as last heard, {at:.1} s \
                 into the window, {} MB read: {}",
                h.name,
                h.webchildren,
                h.status.name(),
                h.requests,
                "–",
                h.errors,
                "–",
                opt(h.clock_offset_ms, 3),
                opt(h.bytes_read.map(|b| b as f64 / 1e6), 3),
                h.reason.as_deref().unwrap_or("")
            );
            continue;
        }
        if h.status != HostStatus::Ok {
            let _ = writeln!(
                out,
                "  {:<width$} {:>6} {:>6}  {}",
                h.name,
                h.webchildren,
                h.status.name(),
                h.reason.as_deref().unwrap_or("")
            );
            continue;
        }
        let r = &h.response_ms;
        let _ = writeln!(
            out,
            "  {:<width$} {:>6} {:>6} {:>10} {:>9} {:>7} {:>11.3} {:>10} {:>8} {:>10} {:>8.3} {:>8.3} {:>8.3}",
            h.name,
            h.webchildren,
            h.status.name(),
            h.requests,
            h.pages,
            h.errors,
            h.bytes_total as f64 / 1e6,
            opt(h.clock_offset_ms, 3),
            opt(h.start_skew_ms, 3),
            opt(h.client_cpu_us_per_request, 1),
            r.p50,
            r.p99,
            r.max
        );
    }
    for h in hosts {
        if let Some(warning) = &h.warning {
            let _ = writeln!(out, "\nWarning: {}: {warning}", h.name);
        }
    }
    if ok < hosts.len() {
        out.push_str(
            "\nIncomplete: the figures above the table are the merge of the hosts that finished; a lost \
             host's row is what it said it had done when last heard.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_hosts_show_their_reason_and_mark_the_run_incomplete() {
        let hosts = [
            HostRecord {
                name: "indy9".into(),
                webchildren: 6,
                requests: 120,
                clock_offset_ms: Some(0.25),
                ..HostRecord::default()
            },
            HostRecord {
                name: "indy10".into(),
                webchildren: 2,
                status: HostStatus::Lost,
                reason: Some("no heartbeat for 3 s".into()),
                ..HostRecord::default()
            },
        ];
        let t = hosts_table(&hosts);
        assert!(t.starts_with("Client hosts: 2 (1 ok)"), "{t}");
        assert!(
            t.contains("indy10      2   lost  no heartbeat for 3 s"),
            "{t}"
        );
        assert!(t.contains("0.250"), "{t}");
        assert!(t.contains("Incomplete"), "{t}");
        let known = HostRecord {
            requests: 1578,
            bytes_read: Some(2_500_000),
            known_until_s: Some(2.0),
            ..hosts[1].clone()
        };
        let t = hosts_table(&[hosts[0].clone(), known]);
        assert!(t.contains("1578"), "{t}");
        assert!(t.contains("2.500 MB read"), "{t}");
        assert!(
            t.contains("as last heard, 2.0 s into the window, 2.500 MB read: no heartbeat"),
            "{t}"
        );
    }
}
