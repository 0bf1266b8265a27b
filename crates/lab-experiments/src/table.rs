//! Plain-text tables, columns aligned: text to the left, numbers to the right.

use std::fmt::Write as _;

pub struct Table {
    headers: Vec<String>,
    /// Each row's cells, and the text that runs on past them ([`Table::row_then`]).
    rows: Vec<(Vec<String>, Option<String>)>,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push((cells, None));
    }

    /// A row of `cells` (the first columns, aligned) and then `text` in place of the rest,
    /// running on past the columns: a reason a row has no figures, which, however long, widens
    /// no column of the other rows.
    pub fn row_then(&mut self, cells: Vec<String>, text: String) {
        self.rows.push((cells, Some(text)));
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The first column is left-aligned (names); the others right-aligned (figures).
    pub fn render(&self) -> String {
        let cols = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for (row, _) in &self.rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[String], then: Option<&str>| {
            let mut text = String::new();
            // A row that runs on has its own cells only; the others fill every column.
            let upto = if then.is_some() { cells.len() } else { cols };
            for (i, w) in width.iter().enumerate().take(upto.min(cols)) {
                let cell = cells.get(i).map_or("", String::as_str);
                let pad = w.saturating_sub(cell.chars().count());
                if i == 0 {
                    let _ = write!(text, "{cell}{}", " ".repeat(pad));
                } else {
                    let _ = write!(text, "  {}{cell}", " ".repeat(pad));
                }
            }
            if let Some(then) = then {
                let _ = write!(text, "  {then}");
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&self.headers, None);
        for (row, then) in &self.rows {
            line(row, then.as_deref());
        }
        out
    }
}

/// `500 B`, `1 KB`, `6.2 MB` (powers of 1024, as the papers' sizes).
pub fn size(bytes: u64) -> String {
    const KB: u64 = 1024;
    if bytes < KB {
        format!("{bytes} B")
    } else if bytes < KB * KB {
        let kb = bytes as f64 / KB as f64;
        if kb.fract() == 0.0 {
            format!("{kb} KB")
        } else {
            format!("{kb:.1} KB")
        }
    } else {
        format!("{:.1} MB", bytes as f64 / (KB * KB) as f64)
    }
}

/// A rate with at most one decimal, or `-` when there is none.
pub fn num(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "-".to_owned(),
    }
}

/// `*` after a client-limited figure ([`FOOTNOTE`] says what it means).
pub fn mark(client_limited: bool) -> &'static str {
    if client_limited {
        "*"
    } else {
        ""
    }
}

pub const FOOTNOTE: &str = "* client-limited: the load generator's core was saturated and the \
server's was not; that figure is the client's limit, not the server's";

/// A round trip: `0`, `10 ms`, `0.5 ms`.
pub fn rtt(d: std::time::Duration) -> String {
    if d.is_zero() {
        return "0".to_owned();
    }
    let ms = d.as_secs_f64() * 1e3;
    if ms.fract() == 0.0 {
        format!("{ms} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// Bytes per second as MB/s (10^6, as network bandwidth is quoted).
pub fn mb_per_s(bytes_per_s: f64) -> String {
    format!("{:.1}", bytes_per_s / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_with_names_left_and_numbers_right() {
        let mut t = Table::new(["server", "req/s"]);
        t.row(vec!["nginx".into(), "12345".into()]);
        t.row(vec!["apache-prefork".into(), "7".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "server          req/s");
        assert_eq!(lines[1], "nginx           12345");
        assert_eq!(lines[2], "apache-prefork      7");
    }

    #[test]
    fn a_row_that_runs_on_widens_no_column() {
        let mut t = Table::new(["server", "test", "req/s", "errors"]);
        t.row(vec!["nginx".into(), "db".into(), "3806".into(), "0".into()]);
        t.row_then(
            vec!["apache-prefork".into(), "fortunes".into()],
            "has no cgi deployment in the lab (a reason of many words)".into(),
        );
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "server              test  req/s  errors");
        assert_eq!(lines[1], "nginx                 db   3806       0");
        assert_eq!(
            lines[2],
            "apache-prefork  fortunes  has no cgi deployment in the lab (a reason of many words)"
        );
    }

    #[test]
    fn sizes_read_as_the_papers_write_them() {
        assert_eq!(size(500), "500 B");
        assert_eq!(size(1024), "1 KB");
        assert_eq!(size(200 * 1024), "200 KB");
        assert_eq!(size(6_537_455), "6.2 MB");
        assert_eq!(num(None), "-");
        assert_eq!(num(Some(2.345)), "2.3");
        assert_eq!(num(Some(1234.5)), "1234");
    }
}
