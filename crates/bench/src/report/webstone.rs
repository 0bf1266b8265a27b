//! The WebSTONE report of the paper's section 7: a block per page, then the run's summary.
//!
//! The labels are the paper's, so a 1995 report and a flint report read side by side; flint
//! adds units to every figure, prints rates with decimals (the paper truncated the WEBSTONE
//! number to an integer), and adds the files retrieved and the aggregate throughput, which the
//! paper's HTTP/1.0 world did not need.

use super::{count_of, figures, load_text, page_blocks, run_mode_text, stop_text};
use crate::RunResult;
use std::fmt::Write;

/// The paper's report for a run, ending with its [`super::end_notes`].
pub fn webstone(r: &RunResult) -> String {
    webstone_body(r) + &super::end_notes(r, "")
}

/// The paper's report without the end notes (for a report printed before another that has them).
pub fn webstone_body(r: &RunResult) -> String {
    let f = figures(r);
    let mut o = String::with_capacity(4096);
    // Writing to a String cannot fail.
    let _ = writeln!(
        o,
        "WebSTONE report: {} ({}, {}), {}, run of {}, measured {:.3} s",
        r.config.target.url,
        run_mode_text(r),
        load_text(r),
        count_of(f.clients, "Webchild", "Webchildren"),
        stop_text(r.config.stop),
        f.duration_s,
    );
    for (i, p) in page_blocks(r).iter().enumerate() {
        let _ = write!(
            o,
            "\nPage # {i} ({name}, weight {weight})\n\
             ________\n\
             Total number of times page was hit {hits}\n\
             Total time {total:.6} seconds\n\
             Maximum Response time {maxr:.6} seconds\n\
             Total connect time for page {ct:.6} seconds\n\
             Maximum time to connect {maxc:.6} seconds\n\
             Total amount of data moved {moved} bytes\n\
             Page size {size} bytes\n\
             Total number of connects {connects}\n",
            name = p.name,
            weight = p.weight,
            hits = p.hits,
            total = p.total_time_s,
            maxr = p.max_response_s,
            ct = p.connect_time_s,
            maxc = p.max_connect_s,
            moved = p.data_moved,
            size = p.size,
            connects = p.connects,
        );
        if p.errors > 0 {
            let _ = writeln!(o, "Total number of errors (pages abandoned) {}", p.errors);
        }
    }
    let _ = write!(
        o,
        "\n________\n\
         WEBSTONE number: {wn:.2} pages/minute\n\
         Total number of clients: {clients}\n\
         Total cumulative time of test for all hosts (sec): {cum:.6}\n\
         Total number of pages retrieved from server: {pages}\n\
         Total number of files retrieved from server: {files}\n\
         Total number of errors to server: {errors}\n\
         Total number of connects to server: {connects}\n\
         Average time per connect: {avgc:.6} seconds\n\
         Maximum time to connect: {maxc:.6} seconds\n\
         Total amount of data moved: {moved} bytes\n\
         Total bytes of body moved: {body} bytes\n\
         Total bytes of header moved: {header} bytes\n\
         Bytes read in no counted response: {other} bytes\n\
         Average body size: {avgb:.0} bytes\n\
         Average retrieval size: {avgr:.0} bytes\n\
         Thruput = {thruput:.2} bytes/sec (per Webchild: data moved / cumulative time)\n\
         Aggregate throughput = {agg:.2} bytes/sec (data moved / {dur:.3} s measured)\n\
         Average Response time: {avgresp:.6} seconds (per file: cumulative time / files)\n\
         Maximum Response time: {maxresp:.6} seconds (the slowest single file)\n",
        wn = f.webstone_number,
        clients = f.clients,
        cum = f.cumulative_s,
        pages = f.pages,
        files = f.requests,
        errors = f.errors,
        connects = f.connects,
        avgc = f.avg_connect_s,
        maxc = f.max_connect_s,
        moved = f.data_moved,
        body = f.body_bytes,
        header = f.header_bytes,
        other = f.bytes_read.saturating_sub(f.data_moved),
        avgb = f.avg_body_bytes,
        avgr = f.avg_retrieval_bytes,
        thruput = f.thruput,
        agg = f.throughput_bytes_per_s,
        dur = f.duration_s,
        avgresp = f.avg_response_s,
        maxresp = f.max_response_s,
    );
    if f.clients_lost > 0 {
        let _ = writeln!(
            o,
            "Clients lost with their hosts: {} (not in these figures)",
            f.clients_lost
        );
    }
    if r.config.target.scheme == crate::Scheme::Https {
        // The paper's connect time stays TCP's; the handshake is beside it. Over QUIC there is
        // no TCP connect: the handshake is the connect, timed from the first Initial.
        let h = r.stats.tls_handshake.summary();
        let when = if r.config.http == crate::HttpMode::Http3 {
            "the QUIC handshake, the connect time above"
        } else {
            "after the connect"
        };
        let _ = writeln!(
            o,
            "Total number of TLS handshakes: {} ({} resumed)\n\
             Average time per TLS handshake: {:.6} seconds ({when})\n\
             Maximum time per TLS handshake: {:.6} seconds",
            r.stats.tls_handshakes,
            r.stats.tls_resumed,
            h.mean / 1000.0,
            h.max / 1000.0,
        );
    }
    o
}
