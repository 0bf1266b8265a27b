//! The text reports: the paper's, ptester's and the modern summary.

use crate::report_support;

use bench::report::{ptester, summary, webstone};
use report_support::{empty, netsite, one_file, small};

#[test]
fn webstone_report_reproduces_the_papers_netsite_summary() {
    let text = webstone(&netsite());
    for line in [
        "WEBSTONE number: 450.57 pages/minute",
        "Total number of clients: 24",
        "Total cumulative time of test for all hosts (sec): 50333.931099",
        "Total number of pages retrieved from server: 15770",
        "Total number of errors to server: 0",
        "Total number of connects to server: 41672",
        "Average time per connect: 0.004304 seconds",
        "Maximum time to connect: 5.782854 seconds",
        "Total amount of data moved: 17409474560 bytes",
        "Total bytes of body moved: 17401507840 bytes",
        "Total bytes of header moved: 7966720 bytes",
        "Average body size: 417583 bytes",
        "Average retrieval size: 417774 bytes",
        "Thruput = 345879.49 bytes/sec",
        // The paper cut this to 1.207859; flint rounds to the microsecond.
        "Average Response time: 1.207860 seconds",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // The histogram holds the maximum to 3 significant figures.
    assert!(text.contains("Maximum Response time: 19.5"), "{text}");
}

#[test]
fn webstone_report_prints_the_papers_page_blocks() {
    let text = webstone(&netsite());
    for line in [
        "Page # 0 (page 0, weight 40)",
        "Total number of times page was hit 6649",
        "Total time 4238.492450 seconds",
        "Maximum Response time 2.071999 seconds",
        "Total connect time for page 77.660191 seconds",
        "Maximum time to connect 0.052151 seconds",
        "Total amount of data moved 81702912 bytes",
        "Page size 12288 bytes",
        "Total number of connects 19947",
        "Page # 2 (page 2, weight 5)",
        "Page size 6291456 bytes",
        "Page size 3167232 bytes",
        "Total amount of data moved 9628385280 bytes",
        "Page # 5 (page 5, weight 10)",
        "Page size 525312 bytes",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn webstone_report_adds_aggregate_throughput() {
    let text = webstone(&netsite());
    assert!(
        text.contains("Aggregate throughput = 8290225.98 bytes/sec"),
        "{text}"
    );
}

#[test]
fn webstone_report_of_a_recorded_run_uses_files_for_per_file_averages() {
    let r = small(false);
    let text = webstone(&r);
    // 100 pages of 2 files; 10 connects (keep-alive).
    assert!(
        text.contains("Total number of files retrieved from server: 200"),
        "{text}"
    );
    assert!(
        text.contains("Total number of connects to server: 10"),
        "{text}"
    );
    // 8 s cumulative / 200 files.
    assert!(
        text.contains("Average Response time: 0.040000 seconds"),
        "{text}"
    );
    assert!(
        text.contains("Total number of errors to server: 3"),
        "{text}"
    );
    assert!(
        text.contains("Total number of errors (pages abandoned) 1"),
        "{text}"
    );
    // home = index2k.html + logo1k.gif as served.
    assert!(text.contains("Page size 3072 bytes"), "{text}");
}

#[test]
fn ptester_table_has_a_row_per_url_and_fractional_totals() {
    let r = small(false);
    let text = ptester(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("URL") && lines[0].contains("Avg Tx"),
        "{text}"
    );
    // /logo1k.gif is fetched by every page: 100 requests.
    let logo = lines.iter().find(|l| l.starts_with("/logo1k.gif")).unwrap();
    let cols: Vec<&str> = logo.split_whitespace().collect();
    assert_eq!(cols[1], "100", "{logo}");
    assert_eq!(
        cols[2..5],
        ["-", "-", "-"],
        "no connects opened for it: {logo}"
    );
    assert_eq!(cols[8], "1224", "200 head + 1024 body: {logo}");
    let index = lines
        .iter()
        .find(|l| l.starts_with("/index2k.html"))
        .unwrap();
    let cols: Vec<&str> = index.split_whitespace().collect();
    assert_eq!(cols[1], "66");
    assert_eq!(cols[2], "0.0002", "min connect 160 us: {index}");
    assert!(text.contains("Actual test time.. 2.000 seconds"), "{text}");
    assert!(
        text.contains("Total requests.... 200 (100.00 requests/sec)"),
        "{text}"
    );
    assert!(
        text.contains("Total failed...... 3 (1.50 requests/sec)"),
        "{text}"
    );
}

#[test]
fn ptester_totals_never_wrap_or_truncate_to_zero() {
    // Jigsaw's run in the note on caching Content-MD5: 392 responses of 6537740 bytes in 122 s, printed as
    // "-1732173216 (-14198141 bytes/sec)" and "3 requests/sec" by ptester.
    let mut r = small(false);
    r.stats.requests = 392;
    r.stats.bytes_header = 0;
    r.stats.bytes_body = 392 * 6_537_740;
    r.duration = std::time::Duration::from_secs(122);
    let text = ptester(&r);
    assert!(
        text.contains("Total bytes....... 2562794080 (21006508.85 bytes/sec)"),
        "{text}"
    );
    assert!(text.contains("(3.21 requests/sec)"), "{text}");
}

#[test]
fn summary_shows_rates_latency_and_errors_by_kind() {
    let text = summary(&small(false));
    assert!(text.contains("100.00 requests/s"), "{text}");
    assert!(text.contains("50.00 pages/s"), "{text}");
    assert!(text.contains("MB = 10^6 bytes"), "{text}");
    for row in ["connect", "time to first byte", "response", "page", "p99.9"] {
        assert!(text.contains(row), "{row}: {text}");
    }
    assert!(
        text.contains("Errors:    3 in all: reset 1, status_5xx 2"),
        "{text}"
    );
    assert!(!text.contains("uncorrected"), "closed loop: {text}");
}

#[test]
fn summary_of_open_loop_shows_uncorrected_beside_corrected() {
    let text = summary(&small(true));
    let lines: Vec<&str> = text.lines().collect();
    let at = |name: &str| {
        lines
            .iter()
            .position(|l| l.trim_start().starts_with(name))
            .unwrap()
    };
    assert_eq!(at("response, uncorrected"), at("response ") + 1, "{text}");
    assert_eq!(at("page, uncorrected"), at("page ") + 1, "{text}");
    assert!(text.contains("open loop at 50 pages/s"), "{text}");
}

#[test]
fn reports_of_an_empty_interrupted_run_print_zeros_and_say_so() {
    let r = empty();
    for text in [webstone(&r), ptester(&r), summary(&r)] {
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(text.contains("Interrupted"), "{text}");
    }
    assert!(summary(&r).contains("Errors:    none"));
    assert!(webstone(&r).contains("WEBSTONE number: 0.00 pages/minute"));
}

#[test]
fn counts_of_one_are_singular_in_the_reports() {
    let mut one = empty();
    one.config.concurrency = 1;
    one.config.threads = 2; // the runner starts no more threads than Webchildren
    one.config.stop = bench::Stop::Pages(1);
    let text = summary(&one);
    assert!(
        text.contains("1 Webchild on 1 thread, run of 1 page,"),
        "{text}"
    );
    assert!(webstone(&one).contains(", 1 Webchild, run of 1 page,"));
    let many = small(false);
    let text = summary(&many);
    assert!(
        text.contains("4 Webchildren on 2 threads, run of 100 pages,"),
        "{text}"
    );
    assert!(webstone(&many).contains(", 4 Webchildren, run of 100 pages,"));
}

/// The notes on what the end of an open-loop run left undone: one sentence per line, spaced as
/// the lines around them (no run of padding inside a sentence); the unfinished line indented like
/// its neighbours in the summary, the warning that the rate was not kept at the margin.
#[test]
fn unfinished_and_rate_not_kept_lines_are_spaced_as_their_neighbours() {
    let mut r = small(true);
    r.stats.unfinished = 3;
    for us in [215, 400, 1200] {
        r.stats.unfinished_wait.record_us(us);
    }
    r.stats.pages_scheduled = 200;
    r.stats.pages_not_sent = 50;
    let text = summary(&r);
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("Unfinished:") || l.contains("RATE NOT KEPT"))
        .collect();
    assert_eq!(notes.len(), 2, "{text}");
    assert!(
        notes[0].starts_with("  Unfinished: ") && !notes[0].starts_with("   "),
        "{:?}",
        notes[0]
    );
    assert!(notes[1].starts_with("RATE NOT KEPT: "), "{:?}", notes[1]);
    for line in &notes {
        assert!(!line.trim_start().contains("  "), "padding inside {line:?}");
    }
    assert!(
        notes[0].contains(
            "3 requests sent and not answered when the run ended, after waiting 0.400 ms \
             (median) to 1.200 ms;"
        ),
        "{text}"
    );
    // Pages of 2.5 ms at 50 pages/s need one Webchild: four were enough, the client was late.
    assert!(
        notes[1].contains(
            "150 of 200 scheduled pages were sent, 0 of them more than 80.000 ms after the last \
             was due (one Webchild's interval, at least 10 ms); 50 never started; at the 2.491 \
             ms a page took, 50 pages/s needs about 1 Webchildren (-c) and this run had 4: the \
             client itself was late."
        ),
        "{text}"
    );
    // The paper's report has no indentation; the same notes start at the margin there.
    let paper = webstone(&r);
    let note = paper.lines().find(|l| l.contains("Unfinished:")).unwrap();
    assert!(
        note.starts_with("Unfinished: 3 requests sent and not answered"),
        "{note:?}"
    );
    assert!(!note.contains("  "), "padding inside {note:?}");
}

/// A clean run of one-file pages says each thing once: no Pages line or page rows repeating the
/// requests and responses, and the requests in flight when a closed loop's time ran out (each
/// waiting no longer than the slowest response) are not told as if they were a problem.
#[test]
fn a_clean_one_file_run_repeats_nothing_and_tells_no_unfinished() {
    let mut r = one_file();
    r.stats.unfinished = 1;
    r.stats.unfinished_wait.record_us(30_000);
    // And one still connecting: the server received nothing, no count has it.
    r.stats.unsent_at_end = 1;
    let text = summary(&r);
    assert!(text.contains("Requests:"), "{text}");
    for absent in [
        "Pages:",
        "  page ",
        "unfinished",
        "Unfinished",
        "see Unfinished",
        "Not sent",
    ] {
        assert!(!text.contains(absent), "`{absent}` in: {text}");
    }
    assert!(text.contains("  Errors:    none\n"), "{text}");
    // One that waited longer than any response completed did (a stalled server) is told.
    r.stats.unfinished_wait.record_us(900_000);
    r.stats.unfinished = 2;
    let text = summary(&r);
    assert!(text.contains("unfinished, waited"), "{text}");
    assert!(text.contains("Unfinished: 2 requests"), "{text}");
    assert!(
        text.contains("none completed in error (see Unfinished)"),
        "{text}"
    );
    // In the open loop the unsent are in the latencies with their wait: told.
    r.config.rate = Some(50.0);
    let text = summary(&r);
    assert!(text.contains("Not sent: 1 request"), "{text}");
    // Pages that differ from requests (two files a page: small) keep their line and rows.
    let text = summary(&small(false));
    assert!(
        text.contains("Pages:") && text.contains("  page "),
        "{text}"
    );
}

/// Requests not sent for a value never extracted are told why; a failed check of any kind is
/// one reason (it forgets its file's values), and only when a check failed.
#[test]
fn the_unsent_for_a_missing_value_are_told_a_failed_check_of_any_kind_forgets_it() {
    use bench::stats::ErrorKind;
    let mut r = one_file();
    r.stats.errors.add(ErrorKind::MissingValueUnsent);
    let text = summary(&r);
    assert!(text.contains("Not sent:  1 request"), "{text}");
    assert!(!text.contains("a failed check forgets"), "{text}");
    let checks = ErrorKind::ALL
        .into_iter()
        .filter(|k| k.name().starts_with("check_"));
    assert_eq!(checks.clone().count(), 6);
    for kind in checks {
        let mut r = r.clone();
        r.stats.errors.add(kind);
        let text = summary(&r);
        assert!(text.contains("a failed check forgets"), "{kind:?}: {text}");
    }
}
