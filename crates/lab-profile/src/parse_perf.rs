//! Reading perf's outputs: `perf stat` counts and `perf trace -s` summaries.
//!
//! `perf stat` prints counts with the locale's thousands separator unless asked for CSV (`-x,`),
//! and `<not counted>` or `<not supported>` instead of a number; `perf trace -s` prints one table
//! per thread. Both parsers accept these and refuse text without a single syscall count.

use super::parse::{merge_row, unparseable};
use super::{ProfileError, SyscallRow};
use std::collections::BTreeMap;

/// Name of the single row [`parse_perf_stat`] returns when perf counted only
/// `raw_syscalls:sys_enter` (no per-syscall tracepoints).
pub const ALL_SYSCALLS: &str = "(all syscalls)";

/// What a `perf stat` output counted, by event kind.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PerfCounts {
    /// `syscalls:sys_enter_NAME`, by NAME.
    pub calls: BTreeMap<String, u64>,
    /// `syscalls:sys_exit_NAME` (counted with the filter `ret < 0`), by NAME.
    pub errors: BTreeMap<String, u64>,
    /// `raw_syscalls:sys_enter`: every syscall.
    pub raw_calls: Option<u64>,
    /// `raw_syscalls:sys_exit` (counted with the filter `ret < 0`).
    pub raw_errors: Option<u64>,
}

/// A count and an event name from one line, CSV (`-x,`) or human; None for other lines.
/// `<not counted>` / `<not supported>` read as 0.
fn perf_line(line: &str) -> Option<(u64, &str)> {
    let t = line.trim();
    let fields: Vec<&str> = t.split(',').collect();
    if fields.len() >= 3 {
        let event = fields[2].trim();
        if !event.is_empty() && !event.contains(char::is_whitespace) {
            let value = fields[0].trim();
            if value.starts_with('<') {
                return Some((0, event));
            }
            if let Ok(n) = value.parse::<u64>() {
                return Some((n, event));
            }
        }
    }
    if let Some(rest) = t.strip_prefix('<') {
        let (_, after) = rest.split_once('>')?;
        return Some((0, after.split_whitespace().next()?));
    }
    // Human: the count may be split by the locale's grouping (`16,165`, `16.165`, `16 165`).
    let mut digits = String::new();
    for word in t.split_whitespace() {
        let is_count = word.chars().any(|c| c.is_ascii_digit())
            && word.chars().all(|c| {
                c.is_ascii_digit() || matches!(c, ',' | '.' | '\'' | '\u{a0}' | '\u{202f}')
            });
        if is_count {
            digits.extend(word.chars().filter(char::is_ascii_digit));
        } else {
            return Some((digits.parse().ok()?, word));
        }
    }
    None
}

/// Every syscall count in a `perf stat` output (CSV or human, any locale).
pub fn perf_counts(text: &str) -> Result<PerfCounts, ProfileError> {
    let mut counts = PerfCounts::default();
    let mut seen = false;
    for (n, event) in text.lines().filter_map(perf_line) {
        let slot = if event == "raw_syscalls:sys_enter" {
            counts.raw_calls.get_or_insert(0)
        } else if event == "raw_syscalls:sys_exit" {
            counts.raw_errors.get_or_insert(0)
        } else if let Some(name) = event.strip_prefix("syscalls:sys_enter_") {
            counts.calls.entry(name.to_string()).or_default()
        } else if let Some(name) = event.strip_prefix("syscalls:sys_exit_") {
            counts.errors.entry(name.to_string()).or_default()
        } else {
            continue;
        };
        *slot += n;
        seen = true;
    }
    if !seen {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(unparseable(
            "perf",
            format!("no syscall event counts (first line: `{}`)", first.trim()),
        ));
    }
    Ok(counts)
}

impl PerfCounts {
    /// Per-syscall rows (no time), syscalls neither called nor failed left out.
    pub fn rows(&self) -> Vec<SyscallRow> {
        let mut names: Vec<&String> = self.calls.keys().chain(self.errors.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| SyscallRow {
                name: name.clone(),
                seconds: None,
                calls: self.calls.get(name).copied().unwrap_or(0),
                errors: self.errors.get(name).copied().unwrap_or(0),
            })
            .filter(|r| r.calls > 0 || r.errors > 0)
            .collect()
    }
}

/// Rows of a `perf stat` output that counted `syscalls:sys_enter_*` (calls) and, optionally,
/// `syscalls:sys_exit_*` with the filter `ret < 0` (errors); most calls first. When perf counted
/// only `raw_syscalls:sys_enter` (and `raw_syscalls:sys_exit` with `ret < 0`), one row named
/// [`ALL_SYSCALLS`]. Seconds are always None: perf stat counts, it does not time.
pub fn parse_perf_stat(text: &str) -> Result<Vec<SyscallRow>, ProfileError> {
    let counts = perf_counts(text)?;
    let has_breakdown = !counts.calls.is_empty() || !counts.errors.is_empty();
    let mut rows = counts.rows();
    if !has_breakdown {
        if let Some(calls) = counts.raw_calls {
            rows.push(SyscallRow {
                name: ALL_SYSCALLS.to_string(),
                seconds: None,
                calls,
                errors: counts.raw_errors.unwrap_or(0),
            });
        }
    }
    rows.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.name.cmp(&b.name)));
    Ok(rows)
}

/// Rows of a `perf trace -s` summary (live, or `perf trace -i FILE -s` of a recording): the
/// per-thread tables summed by syscall, read by their header (older perfs have no `errors`
/// column: 0). `total` is in milliseconds of wall time inside the calls, blocking included (like
/// `strace -w`); it becomes seconds. Text with no table is an error.
pub fn parse_perf_trace_summary(text: &str) -> Result<Vec<SyscallRow>, ProfileError> {
    let mut rows = Vec::new();
    let mut tables = 0;
    let mut header: Option<Vec<&str>> = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"syscall") && words.contains(&"calls") {
            header = Some(words);
            tables += 1;
            continue;
        }
        let Some(cols) = &header else { continue };
        match words.first() {
            // A blank line ends a thread's table.
            None => header = None,
            // The units line and the rule.
            Some(w) if w.starts_with('(') || w.starts_with('-') => {}
            Some(_) => {
                if words.len() != cols.len() {
                    return Err(unparseable(
                        "perf",
                        format!("`{}` does not fit its header", line.trim()),
                    ));
                }
                let field = |name: &str| cols.iter().position(|c| *c == name).map(|i| words[i]);
                let bad = || unparseable("perf", format!("`{}`", line.trim()));
                let number = |name: &str| -> Result<Option<f64>, ProfileError> {
                    field(name)
                        .map(|w| w.parse::<f64>().map_err(|_| bad()))
                        .transpose()
                };
                let count = |name: &str| -> Result<u64, ProfileError> {
                    field(name).map_or(Ok(0), |w| w.parse().map_err(|_| bad()))
                };
                merge_row(
                    &mut rows,
                    SyscallRow {
                        name: words[0].to_string(),
                        seconds: number("total")?.map(|ms| ms / 1e3),
                        calls: count("calls")?,
                        errors: count("errors")?,
                    },
                );
            }
        }
    }
    if tables == 0 {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(unparseable(
            "perf",
            format!("no `perf trace -s` table (first line: `{}`)", first.trim()),
        ));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_human_counts_ignore_the_locale_grouping() {
        assert_eq!(
            perf_line("     16,165      raw_syscalls:sys_enter   "),
            Some((16165, "raw_syscalls:sys_enter"))
        );
        assert_eq!(
            perf_line("  1.216.165      syscalls:sys_enter_read"),
            Some((1216165, "syscalls:sys_enter_read"))
        );
        assert_eq!(
            perf_line("   <not supported>      cycles"),
            Some((0, "cycles"))
        );
        assert_eq!(perf_line(" Performance counter stats for 'true':"), None);
    }
}
