//! Reading strace's `-c` summary table.
//!
//! A human-oriented format that varies: the columns can be chosen (`-U`), blank cells mean 0 (no
//! errors), a process with two personalities gets two tables, `-C` puts trace lines before it.
//! The parser accepts all of these, checks each table against its `total` line, and refuses,
//! with a reason, text that holds no table at all, so a truncated output is never read as
//! "0 calls".

use super::{ProfileError, SyscallRow};

pub(super) fn unparseable(tool: &'static str, detail: impl Into<String>) -> ProfileError {
    ProfileError::Unparseable {
        tool,
        detail: detail.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Seconds,
    Calls,
    Errors,
    Name,
    Other,
}

/// A column of a strace table: its kind and its character span, from the `----` rule under the
/// header (numbers are right-aligned in it, names left-aligned).
#[derive(Debug, Clone, Copy)]
struct Column {
    kind: Col,
    start: usize,
    end: usize,
}

/// `(start, end)` of each run of `-` in a rule line, or None if the line is not a rule.
fn rule_spans(line: &str) -> Option<Vec<(usize, usize)>> {
    let t = line.trim_end();
    if t.is_empty() || !t.bytes().all(|b| b == b'-' || b == b' ') || !t.contains('-') {
        return None;
    }
    let mut spans = Vec::new();
    let mut start = None;
    for (i, b) in t.bytes().enumerate() {
        match (b, start) {
            (b'-', None) => start = Some(i),
            (b' ', Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, t.len()));
    }
    Some(spans)
}

/// The columns of a header line over a rule, if it is a strace summary header.
fn header_columns(header: &str, spans: &[(usize, usize)]) -> Option<Vec<Column>> {
    let columns: Vec<Column> = spans
        .iter()
        .map(|&(start, end)| {
            let label = header
                .get(start.min(header.len())..end.min(header.len()))
                .unwrap_or("")
                .trim();
            let kind = match label {
                "seconds" => Col::Seconds,
                "calls" => Col::Calls,
                "errors" => Col::Errors,
                "syscall" => Col::Name,
                _ => Col::Other,
            };
            Column { kind, start, end }
        })
        .collect();
    let has = |k| columns.iter().any(|c| c.kind == k);
    (has(Col::Calls) && has(Col::Name)).then_some(columns)
}

/// Words of a line with their byte spans.
fn tokens(line: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, i, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, line.len(), &line[s..]));
    }
    out
}

/// The column a word belongs to: the one it overlaps most, else the nearest.
fn column_of(columns: &[Column], start: usize, end: usize) -> usize {
    let score = |c: &Column| {
        let overlap = end.min(c.end).saturating_sub(start.max(c.start));
        let distance = if end <= c.start {
            c.start - end
        } else {
            start.saturating_sub(c.end)
        };
        (overlap, std::cmp::Reverse(distance))
    };
    (0..columns.len())
        .max_by_key(|&i| score(&columns[i]))
        .unwrap_or(0)
}

/// One body line of a strace table.
fn strace_row(columns: &[Column], line: &str) -> Result<SyscallRow, ProfileError> {
    let mut row = SyscallRow {
        name: String::new(),
        seconds: None,
        calls: 0,
        errors: 0,
    };
    let mut filled = vec![false; columns.len()];
    for (start, end, word) in tokens(line) {
        let i = column_of(columns, start, end);
        if std::mem::replace(&mut filled[i], true) {
            return Err(unparseable(
                "strace",
                format!("two values in one column: `{line}`"),
            ));
        }
        let bad = || unparseable("strace", format!("`{word}` in `{line}`"));
        match columns[i].kind {
            Col::Name => row.name = word.to_string(),
            Col::Calls => row.calls = word.parse().map_err(|_| bad())?,
            Col::Errors => row.errors = word.parse().map_err(|_| bad())?,
            Col::Seconds => row.seconds = Some(word.parse().map_err(|_| bad())?),
            Col::Other => {}
        }
    }
    if row.name.is_empty() {
        return Err(unparseable("strace", format!("no syscall name: `{line}`")));
    }
    Ok(row)
}

/// Rows of the summary tables in strace's `-c` output (`-o FILE` of `strace -c -f`, or the end of
/// `strace -C`): any columns (`-U`), blank errors, several tables (personalities) merged by name.
/// Each table's `total` line is checked against its rows. Empty text (strace saw no completed
/// syscall) gives no rows; other text without a table is an error.
pub fn parse_strace_summary(text: &str) -> Result<Vec<SyscallRow>, ProfileError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rows: Vec<SyscallRow> = Vec::new();
    let mut tables = 0;
    let mut i = 0;
    while i + 1 < lines.len() {
        let columns = match rule_spans(lines[i + 1]).and_then(|s| header_columns(lines[i], &s)) {
            Some(c) => c,
            None => {
                i += 1;
                continue;
            }
        };
        tables += 1;
        i += 2;
        let mut sum_calls = 0u64;
        while i < lines.len() && !lines[i].trim().is_empty() && rule_spans(lines[i]).is_none() {
            let row = strace_row(&columns, lines[i])?;
            sum_calls += row.calls;
            merge_row(&mut rows, row);
            i += 1;
        }
        // The rule, then the `total` line.
        if i + 1 < lines.len() && rule_spans(lines[i]).is_some() {
            let total = strace_row(&columns, lines[i + 1])?;
            if total.name != "total" || total.calls != sum_calls {
                return Err(unparseable(
                    "strace",
                    format!(
                        "the total line `{}` does not match the {sum_calls} calls above it",
                        lines[i + 1].trim()
                    ),
                ));
            }
            i += 2;
        }
    }
    if tables == 0 && !text.trim().is_empty() {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(unparseable(
            "strace",
            format!("no summary table (first line: `{}`)", first.trim()),
        ));
    }
    Ok(rows)
}

pub(super) fn merge_row(rows: &mut Vec<SyscallRow>, row: SyscallRow) {
    match rows.iter_mut().find(|r| r.name == row.name) {
        Some(r) => {
            r.calls += row.calls;
            r.errors += row.errors;
            r.seconds = match (r.seconds, row.seconds) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        None => rows.push(row),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_with_blank_errors_reads_as_zero_errors() {
        let text = "% time     seconds  usecs/call     calls    errors syscall\n\
------ ----------- ----------- --------- --------- ----------------\n \
53.59    0.213674          13     16165           sendmsg\n  \
0.03    0.000122          12        10         2 accept4\n\
------ ----------- ----------- --------- --------- ----------------\n\
100.00    0.213796          13     16175         2 total\n";
        let rows = parse_strace_summary(text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].calls, rows[0].errors), (16165, 0));
        assert_eq!((rows[1].calls, rows[1].errors), (10, 2));
        assert_eq!(rows[1].seconds, Some(0.000122));
    }
}
