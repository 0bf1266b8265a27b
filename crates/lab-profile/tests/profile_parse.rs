//! strace's and perf's outputs, recorded on a real machine (tests/fixtures/README.md), read back;
//! and the table and JSON made from a profile.

use lab_profile::{
    parse_perf_stat, parse_perf_trace_summary, parse_strace_summary, Method, Profile, ProfileError,
    SyscallRow, ALL_SYSCALLS,
};
use std::time::Duration;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn row<'a>(rows: &'a [SyscallRow], name: &str) -> &'a SyscallRow {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
}

fn sums(rows: &[SyscallRow]) -> (u64, u64) {
    rows.iter()
        .fold((0, 0), |(c, e), r| (c + r.calls, e + r.errors))
}

#[test]
fn strace_keepalive_table_reads_every_row_with_blank_errors_as_zero() {
    let rows = parse_strace_summary(&fixture("strace_c_f_keepalive.txt")).unwrap();
    assert_eq!(rows.len(), 12);
    let sendmsg = row(&rows, "sendmsg");
    assert_eq!(
        (sendmsg.calls, sendmsg.errors, sendmsg.seconds),
        (16165, 0, Some(0.213674))
    );
    assert_eq!(row(&rows, "statx").errors, 20);
    assert_eq!(row(&rows, "accept4").errors, 2);
    assert_eq!(sums(&rows), (37739, 22), "the fixture's total line");
}

#[test]
fn strace_http10_and_pipelined_tables_show_their_shapes() {
    let http10 = parse_strace_summary(&fixture("strace_c_f_http10.txt")).unwrap();
    assert_eq!(sums(&http10), (34779, 401));
    // A connection per request: an accept4 and a close per request.
    assert_eq!(row(&http10, "close").calls, 6797);
    assert_eq!(
        (
            row(&http10, "accept4").calls,
            row(&http10, "accept4").errors
        ),
        (7190, 393)
    );
    let pipelined = parse_strace_summary(&fixture("strace_c_f_pipelined.txt")).unwrap();
    assert_eq!(sums(&pipelined), (31881, 13));
    let wall = parse_strace_summary(&fixture("strace_c_f_w_http10.txt")).unwrap();
    assert_eq!(row(&wall, "epoll_wait").seconds, Some(1.201065));
    assert_eq!(sums(&wall), (30532, 344));
}

#[test]
fn strace_chosen_columns_are_read_by_their_headers() {
    let no_errors = parse_strace_summary(&fixture("strace_U_no_errors_column.txt")).unwrap();
    assert_eq!(sums(&no_errors), (33067, 0));
    assert_eq!(row(&no_errors, "sendmsg").seconds, Some(0.334814));
    let no_seconds = parse_strace_summary(&fixture("strace_U_no_seconds_column.txt")).unwrap();
    assert_eq!(sums(&no_seconds), (27429, 10));
    assert!(no_seconds.iter().all(|r| r.seconds.is_none()));
    assert_eq!(row(&no_seconds, "statx").errors, 8);
    let all = parse_strace_summary(&fixture("strace_U_all_columns.txt")).unwrap();
    // shortest / longest / usecs/call are not mistaken for seconds or calls.
    assert_eq!(row(&all, "read").calls, 7);
    assert_eq!(row(&all, "close").seconds, Some(0.0));
    assert!(all.iter().all(|r| !r.name.is_empty()));
}

#[test]
fn strace_f_totals_include_child_processes() {
    let rows = parse_strace_summary(&fixture("strace_c_f_children.txt")).unwrap();
    assert_eq!(sums(&rows), (526, 83));
    assert_eq!(
        (row(&rows, "wait4").calls, row(&rows, "wait4").errors),
        (6, 3)
    );
    assert_eq!(row(&rows, "execve").calls, 4);
}

#[test]
fn strace_trace_lines_before_the_summary_are_skipped() {
    let rows = parse_strace_summary(&fixture("strace_C_trace_and_summary.txt")).unwrap();
    assert_eq!(sums(&rows), (231, 38));
    assert_eq!(row(&rows, "openat").calls, 43);
}

#[test]
fn strace_empty_output_is_no_calls_but_text_without_a_table_is_an_error() {
    assert!(parse_strace_summary(&fixture("strace_c_f_idle_empty.txt"))
        .unwrap()
        .is_empty());
    let err = parse_strace_summary("strace: Process 12 attached\nstrace: Process 12 detached\n")
        .unwrap_err();
    assert!(
        matches!(err, ProfileError::Unparseable { tool: "strace", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("no summary table"), "{err}");
}

#[test]
fn strace_table_missing_a_row_fails_its_total_check() {
    let text = fixture("strace_c_f_keepalive.txt");
    let cut: String = text
        .lines()
        .filter(|l| !l.ends_with(" recvfrom"))
        .map(|l| format!("{l}\n"))
        .collect();
    let err = parse_strace_summary(&cut).unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
}

#[test]
fn strace_two_personality_tables_are_merged_by_name() {
    // strace prints one table per personality; made here from two recorded tables.
    let text = format!(
        "{}System call usage summary for 32 bit mode:\n{}",
        fixture("strace_c_f_keepalive.txt"),
        fixture("strace_c_f_pipelined.txt")
    );
    let rows = parse_strace_summary(&text).unwrap();
    assert_eq!(sums(&rows), (37739 + 31881, 22 + 13));
    assert_eq!(row(&rows, "sendmsg").calls, 16165 + 14088);
}

#[test]
fn perf_trace_summary_sums_the_threads_tables_with_times_in_seconds() {
    let rows = parse_perf_trace_summary(&fixture("perf_trace_i_summary.txt")).unwrap();
    assert_eq!(rows.len(), 8, "{rows:?}");
    // flint (20379) + flint-serve-1 (20382).
    let sendmsg = row(&rows, "sendmsg");
    assert_eq!((sendmsg.calls, sendmsg.errors), (11855 + 11521, 0));
    assert!((sendmsg.seconds.unwrap() - (121.311 + 97.772) / 1e3).abs() < 1e-9);
    assert_eq!(row(&rows, "recvfrom").errors, 1);
    assert_eq!(
        (row(&rows, "statx").calls, row(&rows, "statx").errors),
        (12, 8)
    );
    assert_eq!(sums(&rows), (63108 / 2 + 55652 / 2, 2 + 1 + 8));
}

#[test]
fn perf_trace_summary_of_a_live_run_and_of_child_processes() {
    let live = parse_perf_trace_summary(&fixture("perf_trace_s_live.txt")).unwrap();
    assert_eq!(row(&live, "sendmsg").calls, 18514 + 16646);
    assert_eq!(row(&live, "accept4").errors, 1 + 5);
    let kids = parse_perf_trace_summary(&fixture("perf_trace_s_children.txt")).unwrap();
    // sh, and the two ls it ran.
    assert_eq!(row(&kids, "execve").calls, 3);
    assert_eq!(
        (row(&kids, "openat").calls, row(&kids, "openat").errors),
        (4 + 34 + 39, 13 + 19)
    );
    assert_eq!(
        (row(&kids, "wait4").calls, row(&kids, "wait4").errors),
        (4, 2)
    );
}

#[test]
fn perf_trace_summary_rows_are_read_by_their_header() {
    // perf before 5.x printed no errors column.
    let old = "\n Summary of events:\n\n ls (7), 10 events, 100.0%\n\n   \
syscall            calls    total       min       avg       max      stddev\n   \
                           (msec)    (msec)    (msec)    (msec)        (%)\n   \
--------------- -------- --------- --------- --------- ---------     ------\n   \
read                   4     0.040     0.010     0.010     0.010      1.00%\n   \
openat                 1     0.020     0.020     0.020     0.020      0.00%\n\n";
    let rows = parse_perf_trace_summary(old).unwrap();
    assert_eq!(
        (row(&rows, "read").calls, row(&rows, "read").errors),
        (4, 0)
    );
    assert_eq!(row(&rows, "read").seconds, Some(0.00004));
    let broken = old.replace("0.020      0.00%", "0.020");
    assert!(parse_perf_trace_summary(&broken).is_err());
    let err = parse_perf_trace_summary("LOST 12 events!\n").unwrap_err();
    assert!(
        matches!(err, ProfileError::Unparseable { tool: "perf", .. }),
        "{err}"
    );
}

#[test]
fn perf_totals_alone_give_one_row_of_all_syscalls() {
    let rows = parse_perf_stat(&fixture("perf_totals_csv.txt")).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].name.as_str(), rows[0].calls, rows[0].errors),
        (ALL_SYSCALLS, 95301, 12)
    );
    let human = parse_perf_stat(&fixture("perf_raw_only_human_en_US.txt")).unwrap();
    assert_eq!((human[0].calls, human[0].errors), (31588, 4025));
}

#[test]
fn perf_human_counts_read_through_the_locale_thousands_separator() {
    let en = parse_perf_stat(&fixture("perf_human_en_US.txt")).unwrap();
    assert_eq!(row(&en, "sendmsg").calls, 47404);
    assert_eq!(row(&en, "recvfrom").calls, 47412);
    assert_eq!(row(&en, "epoll_wait").calls, 36789);
    assert!(en.iter().all(|r| r.name != "read"), "0 calls: left out");
    let de = parse_perf_stat(&fixture("perf_human_de_DE.txt")).unwrap();
    assert_eq!(row(&de, "sendmsg").calls, 11901);
    assert_eq!(row(&de, "recvfrom").calls, 11905);
}

#[test]
fn perf_not_supported_and_not_counted_read_as_zero() {
    for name in ["perf_not_supported_human.txt", "perf_not_supported_csv.txt"] {
        let rows = parse_perf_stat(&fixture(name)).unwrap();
        assert_eq!(rows.len(), 1, "{name}: {rows:?}");
        assert_eq!(row(&rows, "openat").calls, 34, "{name}");
    }
    let idle = parse_perf_stat(&fixture("perf_not_counted_csv.txt")).unwrap();
    assert_eq!((idle[0].calls, idle[0].errors), (0, 0));
}

#[test]
fn perf_text_without_syscall_counts_is_an_error() {
    for text in [
        "",
        "Error:\nNo permission to enable raw_syscalls:sys_enter event.\n",
    ] {
        let err = parse_perf_stat(text).unwrap_err();
        assert!(
            matches!(err, ProfileError::Unparseable { tool: "perf", .. }),
            "{err}"
        );
    }
}

fn strace_profile() -> Profile {
    let syscalls = parse_strace_summary(&fixture("strace_c_f_keepalive.txt")).unwrap();
    Profile {
        pid: 20379,
        method: Method::Strace,
        window: Duration::from_millis(2000),
        cpu_user: Duration::from_millis(1230),
        cpu_sys: Duration::from_millis(770),
        total_calls: 37739,
        total_errors: 22,
        total_seconds: Some(syscalls.iter().filter_map(|r| r.seconds).sum()),
        syscalls,
        pids: vec![20379],
        notes: vec!["strace slows the server".into()],
    }
}

#[test]
fn truss_table_has_truss_lines_and_the_per_request_figures() {
    let table = strace_profile().truss_table(16165, 8000);
    let lines: Vec<&str> = table.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("syscall"))
        .expect("header");
    let cols: Vec<&str> = lines[header].split_whitespace().collect();
    assert_eq!(cols, ["syscall", "seconds", "calls", "errors"]);
    let sendmsg: Vec<&str> = lines[header + 1].split_whitespace().collect();
    assert_eq!(
        sendmsg,
        ["sendmsg", "0.214", "16165"],
        "no errors: blank cell"
    );
    let statx = lines.iter().find(|l| l.starts_with("statx")).unwrap();
    assert!(statx.trim_end().ends_with("20"), "{statx}");
    let rule = lines.iter().position(|l| l.contains("----")).expect("rule");
    assert_eq!(
        lines[rule].split_whitespace().collect::<Vec<_>>(),
        ["----", "---", "---"]
    );
    let totals: Vec<&str> = lines[rule + 1].split_whitespace().collect();
    assert_eq!(totals, ["sys", "totals:", "0.399", "37739", "22"]);
    assert!(lines[rule + 2].starts_with("usr time:") && lines[rule + 2].ends_with("1.230"));
    assert!(lines[rule + 3].starts_with("sys time:") && lines[rule + 3].ends_with("0.770"));
    assert!(lines[rule + 4].starts_with("elapsed:") && lines[rule + 4].ends_with("2.000"));
    // 37739 / 16165 = 2.33; 37739 / 8000 = 4.72; 2 s of CPU / 16165 = 123.7 µs.
    assert!(table.contains("2.33 syscalls per request"), "{table}");
    assert!(table.contains("4.72 per page"), "{table}");
    assert!(table.contains("123.7 µs server CPU per request"), "{table}");
    assert!(table.contains("note: strace slows the server"), "{table}");
}

#[test]
fn truss_table_of_perf_shows_no_seconds_and_no_per_request_line_without_requests() {
    let mut p = strace_profile();
    p.method = Method::Perf;
    p.total_seconds = None;
    for r in &mut p.syscalls {
        r.seconds = None;
    }
    let table = p.truss_table(0, 0);
    let sendmsg = table.lines().find(|l| l.starts_with("sendmsg")).unwrap();
    assert_eq!(
        sendmsg.split_whitespace().collect::<Vec<_>>(),
        ["sendmsg", "-", "16165"]
    );
    assert!(table.contains("perf stat"), "{table}");
    assert!(!table.contains("per request"), "{table}");
}

#[test]
fn json_per_request_figures_multiply_back_to_the_totals() {
    let p = strace_profile();
    let j = p.to_json(16165, 8000);
    assert_eq!(j["method"], "strace");
    assert_eq!(j["pid"], 20379);
    assert_eq!(j["total_calls"], 37739);
    assert_eq!(j["total_errors"], 22);
    assert_eq!(j["syscalls"].as_array().unwrap().len(), 12);
    assert_eq!(j["syscalls"][0]["name"], "sendmsg");
    let per_request = j["calls_per_request"].as_f64().unwrap();
    assert!((per_request * 16165.0 - 37739.0).abs() < 1e-6);
    let per_page = j["calls_per_page"].as_f64().unwrap();
    assert!((per_page * 8000.0 - 37739.0).abs() < 1e-6);
    let cpu = j["cpu_us_per_request"].as_f64().unwrap();
    assert!((cpu * 16165.0 - 2_000_000.0).abs() < 1e-3, "{cpu}");
    assert_eq!(j["window_s"], 2.0);
    assert!(j["note"].as_str().unwrap().contains("slows"));
    let none = p.to_json(0, 0);
    assert!(none["calls_per_request"].is_null() && none["cpu_us_per_request"].is_null());
    let mut perf = p.clone();
    perf.total_seconds = None;
    assert!(perf.to_json(1, 1)["total_seconds"].is_null());
}
