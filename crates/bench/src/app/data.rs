//! Data sets: rows of a CSV file (its first line names the columns) that pages draw from, one
//! row per page fetched, as k6's SharedArray, Gatling's feeders and JMeter's CSV Data Set do.
//!
//! A file is read and checked whole before the run: a column name empty, not a name or given
//! twice, a row with a missing or extra column, or bytes that are not UTF-8, is one error
//! naming the file and its physical line. How rows are drawn
//! ([`Pick`]): `unique` gives each row once per run across every Webchild and thread (a run that
//! runs out says so: the page is not fetched and `data_exhausted` counted), `cycle` goes round
//! in order, `random` draws uniformly.
//!
//! On many hosts ([`DataSet::share`]) a set is split: each worker gets its own run of rows, in
//! proportion to its Webchildren, so that a `unique` row is given once in the run, each host
//! runs out of its rows at the same pace, and no host holds (nor the coordinator sends) the
//! whole file for every host. A host that has given all of its `unique` rows runs out as one
//! host alone does; a `cycle` or `random` set with fewer rows than hosts goes whole to each.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a data set's rows are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pick {
    /// Each row once per run, across every Webchild and thread (on many hosts, each host's
    /// own rows once); then the set has run out and a page needing it is not fetched
    /// (`data_exhausted`).
    Unique,
    /// In order, back to the first row after the last (a workload's default).
    Cycle,
    /// Uniformly at random, from the Webchild's seeded generator: a row may come again at once.
    Random,
}

/// A data set's rows as the hosts protocol carries them to one worker (see
/// [`DataSet::share`]): borrowed from the set as it is sent, owned as it is read.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DataRows<'a> {
    /// The set's name in the workload (`[data.users]`: `users`), as templates use it.
    pub name: Cow<'a, str>,
    /// The file as the workload names it (a worker never reads it: the rows come with it).
    pub file: Cow<'a, str>,
    /// The column names, from the file's first line.
    pub columns: Cow<'a, [String]>,
    /// This worker's rows, each as wide as `columns`; empty only for a `unique` set with more
    /// hosts than rows, which this host then has run out of from the start.
    pub rows: Cow<'a, [Vec<String>]>,
    /// How the worker draws from `rows`.
    pub pick: Pick,
}

/// One data set: its columns and rows, and the run's shared position in them.
#[derive(Debug)]
pub struct DataSet {
    /// The set's name in the workload (`[data.users]`: `users`), as templates use it.
    pub name: String,
    /// The file as the workload names it (what the plan was made from).
    pub file: String,
    /// The column names, from the file's first line (letters, digits and `_`).
    pub columns: Vec<String>,
    rows: Vec<Vec<String>>,
    /// How rows are drawn.
    pub pick: Pick,
    next: AtomicU64,
}

impl DataSet {
    /// Reads CSV `text` (the file's bytes, read once by the caller and not copied here);
    /// `shown` names it in errors, with the file's physical line (counted from the record's
    /// byte offset: the CSV reader's own count is short by one for each `\r\n` and each blank
    /// line before the record). The line is counted only for the one error reported: counting
    /// it for every row would scan the file from its start each time.
    pub fn read(name: &str, shown: &str, text: &[u8], pick: Pick) -> Result<DataSet, String> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(text);
        // A record's position may be the `\n` of the `\r\n` before it, or a blank line: its
        // line is that of its first byte that ends no line.
        let line_of = |p: Option<&csv::Position>| {
            let mut at = p.map_or(0, |p| p.byte() as usize).min(text.len());
            while text.get(at).is_some_and(|b| matches!(b, b'\r' | b'\n')) {
                at += 1;
            }
            1 + text[..at].iter().filter(|&&b| b == b'\n').count()
        };
        let columns: Vec<String> = match reader.headers() {
            Ok(h) => h.iter().map(|c| c.trim().to_owned()).collect(),
            Err(e) => {
                return Err(format!(
                    "{shown}:{}: {}",
                    line_of(e.position()),
                    csv_reason(&e)
                ))
            }
        };
        let head = line_of(reader.headers().ok().and_then(|h| h.position()));
        if columns.iter().all(String::is_empty) {
            return Err(format!(
                "{shown}:{head}: no column names (the first line names the columns)"
            ));
        }
        if let Some(c) = columns.iter().find(|c| !is_name(c)) {
            return Err(format!(
                "{shown}:{head}: column name {c:?}: letters, digits and `_` only (templates name it)"
            ));
        }
        let mut seen = columns.iter().enumerate();
        if let Some((_, c)) = seen.find(|(i, c)| columns[..*i].contains(c)) {
            return Err(format!("{shown}:{head}: column name {c:?} given twice"));
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record
                .map_err(|e| format!("{shown}:{}: {}", line_of(e.position()), csv_reason(&e)))?;
            if record.len() != columns.len() {
                return Err(format!(
                    "{shown}:{}: {} fields where the first line names {} columns",
                    line_of(record.position()),
                    record.len(),
                    columns.len()
                ));
            }
            rows.push(record.iter().map(str::to_owned).collect());
        }
        if rows.is_empty() {
            return Err(format!("{shown}:{head}: no rows after the column names"));
        }
        Ok(DataSet {
            name: name.to_owned(),
            file: shown.to_owned(),
            columns,
            rows,
            pick,
            next: AtomicU64::new(0),
        })
    }

    /// The rows host `host` draws from, of hosts running `weights[k]` Webchildren each: its own
    /// run of the rows, in proportion to its Webchildren (the private `share_bounds`), or every
    /// row of a `cycle` or `random` set with fewer rows than hosts.
    pub fn share(&self, weights: &[usize], host: usize) -> DataRows<'_> {
        let whole = self.pick != Pick::Unique && self.rows.len() < weights.len();
        let rows = match whole {
            true => 0..self.rows.len(),
            false => share_bounds(self.rows.len(), weights, host),
        };
        DataRows {
            name: Cow::Borrowed(&self.name),
            file: Cow::Borrowed(&self.file),
            columns: Cow::Borrowed(&self.columns),
            rows: Cow::Borrowed(&self.rows[rows]),
            pick: self.pick,
        }
    }

    /// A set of the rows a coordinator sent; a row of another width is refused.
    pub fn from_rows(d: DataRows<'_>) -> Result<DataSet, String> {
        if let Some(row) = d.rows.iter().find(|r| r.len() != d.columns.len()) {
            return Err(format!(
                "data set {:?}: a row of {} fields where there are {} columns",
                d.name,
                row.len(),
                d.columns.len()
            ));
        }
        if d.rows.is_empty() && d.pick != Pick::Unique {
            return Err(format!("data set {:?}: no rows", d.name));
        }
        Ok(DataSet {
            name: d.name.into_owned(),
            file: d.file.into_owned(),
            columns: d.columns.into_owned(),
            rows: d.rows.into_owned(),
            pick: d.pick,
            next: AtomicU64::new(0),
        })
    }

    /// The rows held (this host's share on a worker).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is held: a worker's share of a `unique` set with more hosts than rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// Back to the first row: each run draws from the start (a `unique` set gives every row
    /// again; `flint compare` runs one workload round after round).
    pub fn rewind(&self) {
        self.next.store(0, Ordering::Relaxed);
    }

    /// Draws a row for one page: `None` when a `unique` set has given every row.
    pub fn draw(&self, rng: &mut fastrand::Rng) -> Option<usize> {
        let n = self.rows.len() as u64;
        match self.pick {
            Pick::Random => Some(rng.usize(..self.rows.len())),
            Pick::Cycle => Some((self.next.fetch_add(1, Ordering::Relaxed) % n) as usize),
            Pick::Unique => {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                (i < n).then_some(i as usize)
            }
        }
    }

    /// Field `column` of row `row`.
    pub fn field(&self, row: usize, column: usize) -> &str {
        &self.rows[row][column]
    }
}

/// Host `host`'s rows of `rows`, split in runs over hosts of `weights` (their Webchildren) in
/// proportion to them: host k's run starts at row `rows * (w0 + .. + w(k-1)) / W`. With at
/// least as many rows as hosts every host gets one at least (one of few Webchildren would
/// else get none); with fewer, a host whose run is empty gets none.
fn share_bounds(rows: usize, weights: &[usize], host: usize) -> std::ops::Range<usize> {
    let n = weights.len().max(1);
    let total: usize = weights.iter().sum();
    // Webchildren before host k, and in all (hosts counted as one each if none has any).
    let before = |k: usize| match total {
        0 => k,
        _ => weights[..k].iter().sum(),
    };
    let all = if total == 0 { n } else { total };
    // u128: rows times Webchildren does not overflow.
    let proportional = |k: usize| (rows as u128 * before(k) as u128 / all as u128) as usize;
    let (mut start, mut end) = (0, 0);
    for k in 1..=host + 1 {
        let bound = match k {
            k if k >= n => rows,
            // One more than the host before's start at least, leaving one for each after.
            k if rows >= n => proportional(k).max(end + 1).min(rows - (n - k)),
            k => proportional(k),
        };
        (start, end) = (end, bound);
    }
    start..end
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn csv_reason(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_owned(),
        csv::ErrorKind::Io(e) => e.to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8], pick: Pick) -> Result<DataSet, String> {
        DataSet::read("users", "users.csv", text, pick)
    }

    #[test]
    fn rows_are_read_with_quoting_and_columns_found_by_name() {
        let d = read(b"id,name\n1,\"Lee, Ann\"\n2,Bo\n", Pick::Cycle).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d.column("name"), Some(1));
        assert_eq!(d.field(0, 1), "Lee, Ann");
        assert_eq!(d.column("email"), None);
    }

    #[test]
    fn bad_rows_name_their_line() {
        let e = read(b"id,name\n1,Ann\n2\n", Pick::Cycle).unwrap_err();
        assert_eq!(
            e,
            "users.csv:3: 1 fields where the first line names 2 columns"
        );
        let e = read(b"id,name\n1,Ann\n2,Bo,x\n", Pick::Cycle).unwrap_err();
        assert!(e.starts_with("users.csv:3: 3 fields"), "{e}");
        let e = read(b"id,name\n1,Ann\n2,B\xffo\n", Pick::Cycle).unwrap_err();
        assert_eq!(e, "users.csv:3: not UTF-8");
        let e = read(b"id,na me\n1,Ann\n", Pick::Cycle).unwrap_err();
        assert!(e.starts_with("users.csv:1: column name \"na me\""), "{e}");
        let e = read(b"id,name\n", Pick::Cycle).unwrap_err();
        assert!(e.contains("no rows"), "{e}");
    }

    /// The line reported is the file's physical line, whatever the line endings and the
    /// blank lines before it.
    #[test]
    fn lines_are_counted_with_crlf_and_blank_lines() {
        for (text, line) in [
            (b"id,name,pass\r\n1,a,b\r\n2,b\r\n".as_slice(), 3),
            (b"id,name,pass\n1,a,b\n\n2,b\n", 4),
            (b"id,name,pass\r\n\r\n1,a,b\r\n\r\n\r\n2,b\r\n", 6),
            (b"\nid,name,pass\n1,a,b\n2,b\n", 4),
            (b"id,name,pass\n1,\"a\nb\",c\n2,b\n", 4),
        ] {
            let e = read(text, Pick::Cycle).unwrap_err();
            let want = format!("users.csv:{line}: 2 fields where the first line names 3 columns");
            assert_eq!(e, want, "{:?}", String::from_utf8_lossy(text));
        }
        let e = read(b"id,name\r\n1,Ann\r\n\r\n2,B\xffo\r\n", Pick::Cycle).unwrap_err();
        assert_eq!(e, "users.csv:4: not UTF-8");
    }

    /// A bad row at the end of a long file is found with its line, and the file read in one
    /// pass: were each row's line counted from the file's start, 200,000 rows would take
    /// minutes, not a fraction of a second.
    #[test]
    fn a_long_file_is_read_in_one_pass_and_its_last_bad_row_named() {
        let rows = 200_000;
        let mut text = String::from("id,name\r\n");
        for i in 0..rows {
            text.push_str(&format!("{i},user{i}\r\n"));
            if i % 1000 == 0 {
                text.push_str("\r\n");
            }
        }
        text.push_str("200000\r\n");
        // The column names, the rows, one blank line every thousand rows, then the bad row.
        let line = 1 + rows + rows / 1000 + 1;
        let e = read(text.as_bytes(), Pick::Cycle).unwrap_err();
        assert_eq!(
            e,
            format!("users.csv:{line}: 1 fields where the first line names 2 columns")
        );
    }

    #[test]
    fn duplicate_column_names_are_refused() {
        let e = read(b"id,name,name\n1,a,b\n", Pick::Cycle).unwrap_err();
        assert_eq!(e, "users.csv:1: column name \"name\" given twice");
    }

    #[test]
    fn unique_gives_each_row_once_cycle_goes_round() {
        let mut rng = fastrand::Rng::with_seed(1);
        let d = read(b"id\n1\n2\n3\n", Pick::Unique).unwrap();
        let drawn: Vec<_> = (0..5).map(|_| d.draw(&mut rng)).collect();
        assert_eq!(drawn, [Some(0), Some(1), Some(2), None, None]);
        let d = read(b"id\n1\n2\n", Pick::Cycle).unwrap();
        let drawn: Vec<_> = (0..5).map(|_| d.draw(&mut rng).unwrap()).collect();
        assert_eq!(drawn, [0, 1, 0, 1, 0]);
        let d = read(b"id\n1\n2\n3\n", Pick::Random).unwrap();
        assert!((0..100).all(|_| d.draw(&mut rng).unwrap() < 3));
    }

    #[test]
    fn hosts_share_rows_in_runs_without_overlap_in_proportion_to_their_webchildren() {
        let ids = |r: DataRows| -> Vec<String> { r.rows.iter().map(|r| r[0].clone()).collect() };
        let d = read(b"id\n0\n1\n2\n3\n4\n", Pick::Unique).unwrap();
        assert_eq!(ids(d.share(&[1, 1], 0)), ["0", "1"]);
        assert_eq!(ids(d.share(&[1, 1], 1)), ["2", "3", "4"]);
        let six = [1; 6];
        assert!(d.share(&six, 0).rows.is_empty(), "more hosts than rows");
        let empty = DataSet::from_rows(d.share(&six, 0)).unwrap();
        assert_eq!(empty.draw(&mut fastrand::Rng::with_seed(1)), None);
        let c = read(b"id\n0\n1\n2\n", Pick::Cycle).unwrap();
        assert_eq!(
            ids(c.share(&[1, 1], 1)),
            ["1", "2"],
            "a cycled set is split too"
        );
        assert_eq!(
            ids(c.share(&[1; 4], 3)),
            ["0", "1", "2"],
            "fewer rows than hosts"
        );
        let back = DataSet::from_rows(c.share(&[1], 0)).unwrap();
        assert_eq!((back.len(), back.field(2, 0)), (3, "2"));
        let mut bad = c.share(&[1], 0);
        bad.rows.to_mut()[1].push("x".into());
        assert!(DataSet::from_rows(bad).unwrap_err().contains("2 fields"));
    }

    #[test]
    fn every_row_goes_to_one_host_in_proportion_to_its_webchildren() {
        for (rows, weights) in [
            (40, vec![30, 10]),
            (1000, vec![30, 10]),
            (7, vec![100, 1, 1]),
            (3, vec![5, 0, 5, 5]),
            (10, vec![0, 0]),
            (2, vec![1, 1, 1]),
        ] {
            let shares: Vec<_> = (0..weights.len())
                .map(|h| share_bounds(rows, &weights, h))
                .collect();
            let mut next = 0;
            for s in &shares {
                assert_eq!(s.start, next, "{rows} rows, {weights:?}: {shares:?}");
                next = s.end;
            }
            assert_eq!(next, rows, "{rows} rows, {weights:?}: {shares:?}");
            if rows >= weights.len() {
                assert!(shares.iter().all(|s| !s.is_empty()), "{shares:?}");
            }
        }
        // Host a of `a:30,b:10` takes three rows for each of b's, so both run out together.
        let lens = |rows, w: &[usize]| -> Vec<usize> {
            (0..w.len())
                .map(|h| share_bounds(rows, w, h).len())
                .collect()
        };
        assert_eq!(lens(1000, &[30, 10]), [750, 250]);
        assert_eq!(lens(7, &[100, 1, 1]), [5, 1, 1]);
    }

    #[test]
    fn unique_rows_are_never_given_twice_across_threads() {
        let text: String = std::iter::once("id\n".to_owned())
            .chain((0..10_000).map(|i| format!("{i}\n")))
            .collect();
        let d = read(text.as_bytes(), Pick::Unique).unwrap();
        let mut all: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let d = &d;
                    s.spawn(move || {
                        let mut rng = fastrand::Rng::with_seed(t);
                        std::iter::from_fn(|| d.draw(&mut rng)).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        all.sort_unstable();
        assert_eq!(all, (0..10_000).collect::<Vec<_>>());
    }
}
