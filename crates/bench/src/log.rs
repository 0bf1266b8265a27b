//! `--log FILE`: one CSV line per request (the paper's per-Webchild logging, section 4.10).
//!
//! WebSTONE warned that logging every connection costs the client; here each thread formats its
//! lines into its own buffer (no allocation: the buffer is reserved once) and appends it to the
//! shared file in ~64 KiB chunks, so the file's lock is taken once per several hundred requests
//! rather than once per request. Lines from different threads interleave by chunk, not in time
//! order: sort by `start_unix_us` when order matters.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The first line of the file.
/// Columns are documented in docs/latency.md.
pub const HEADER: &str = "thread,child,page,url,start_unix_us,intended_unix_us,connect_us,\
                          ttfb_us,response_us,status,header_bytes,body_bytes,error\n";

/// A thread hands its buffer over once it holds this much.
const CHUNK: usize = 64 * 1024;

/// The shared log file.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: Mutex<File>,
}

impl LogFile {
    /// Creates (truncates) the file and writes the header line; `-` is stdout (a duplicate of
    /// its descriptor, so the log is written as any file is, in chunks, and never interleaves
    /// with the buffered `print!`s of the caller).
    pub fn create(path: &Path) -> io::Result<LogFile> {
        let to_stdout = path.as_os_str() == "-";
        let mut file = if to_stdout {
            File::from(io::stdout().as_fd().try_clone_to_owned()?)
        } else {
            File::create(path)?
        };
        match file.write_all(HEADER.as_bytes()) {
            // A reader gone already: the chunks will meet the same closed pipe and stop.
            Err(e) if to_stdout && e.kind() == io::ErrorKind::BrokenPipe => {}
            other => other?,
        }
        Ok(LogFile {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// The path given (`-` for stdout), for the error that names a failed log.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this log goes to stdout (`-`), where a closed pipe means the reader has seen
    /// enough (`| head`), not that the log failed.
    pub fn is_stdout(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        // A poisoned lock means another thread panicked mid-write; the file is still usable.
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(bytes)
    }
}

/// One line: a request that completed or failed in the measured window.
#[derive(Debug, Clone, Copy)]
pub struct LogRecord<'a> {
    /// The event-loop thread, from 0.
    pub thread: usize,
    /// The Webchild's global number (the same on every host of a run).
    pub child: usize,
    /// The page's name in the workload (CSV-quoted when written).
    pub page: &'a str,
    /// The URL path as the workload names it (a template as written), or the redirect's
    /// target it followed (CSV-quoted when written).
    pub url: &'a str,
    /// When the Webchild began this request (its connect, or its write on an open connection).
    pub start_unix_us: u64,
    /// Open loop: when the request's page was due (empty in the closed loop).
    pub intended_unix_us: Option<u64>,
    /// `None`: no connection was opened (or completed) for this request.
    pub connect_us: Option<u64>,
    /// The request written to its response's first byte (the intended start plays no part
    /// here, unlike in the run's `ttfb`); `None` when no byte came.
    pub ttfb_us: Option<u64>,
    /// `None` for a failed request.
    pub response_us: Option<u64>,
    /// `None` when no status line was read.
    pub status: Option<u16>,
    /// The response head's bytes as read (0 when none was).
    pub header_bytes: u64,
    /// The response body's bytes as read, framing excluded.
    pub body_bytes: u64,
    /// Empty when the request succeeded, else the error kind's name, `unfinished` for a
    /// request sent and not answered when the run ended, or `unsent` for one begun and not
    /// yet sent then.
    pub error: &'a str,
}

/// A thread's buffer in front of the shared file.
#[derive(Debug)]
pub struct LogBuf<'a> {
    file: &'a LogFile,
    buf: Vec<u8>,
    error: Option<io::Error>,
}

impl<'a> LogBuf<'a> {
    /// An empty buffer in front of `file`, its room reserved once for the run.
    pub fn new(file: &'a LogFile) -> Self {
        LogBuf {
            file,
            // Room for the chunk plus one long line: pushing never reallocates in practice.
            buf: Vec::with_capacity(CHUNK + 4096),
            error: None,
        }
    }

    /// Formats one line; hands the buffer to the file once it is full.
    pub fn push(&mut self, r: &LogRecord<'_>) {
        if self.error.is_some() {
            return; // the file failed once: stop logging, report it at the end
        }
        let b = &mut self.buf;
        // Writing into a Vec cannot fail.
        let _ = write!(b, "{},{},", r.thread, r.child);
        csv_field(b, r.page);
        b.push(b',');
        csv_field(b, r.url);
        let _ = write!(b, ",{},", r.start_unix_us);
        opt(b, r.intended_unix_us);
        b.push(b',');
        opt(b, r.connect_us);
        b.push(b',');
        opt(b, r.ttfb_us);
        b.push(b',');
        opt(b, r.response_us);
        b.push(b',');
        opt(b, r.status.map(u64::from));
        let _ = writeln!(b, ",{},{},{}", r.header_bytes, r.body_bytes, r.error);
        if self.buf.len() >= CHUNK {
            self.flush();
        }
    }

    /// Appends what is buffered to the file.
    pub fn flush(&mut self) {
        if self.error.is_none() && !self.buf.is_empty() {
            if let Err(e) = self.file.append(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Flushes and returns the first write error, if any.
    pub fn finish(mut self) -> Option<io::Error> {
        self.flush();
        self.error
    }
}

fn opt(b: &mut Vec<u8>, v: Option<u64>) {
    if let Some(v) = v {
        let _ = write!(b, "{v}");
    }
}

/// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
fn csv_field(b: &mut Vec<u8>, s: &str) {
    if !s.contains([',', '"', '\n', '\r']) {
        b.extend_from_slice(s.as_bytes());
        return;
    }
    b.push(b'"');
    for c in s.bytes() {
        if c == b'"' {
            b.push(b'"');
        }
        b.push(c);
    }
    b.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_with_commas_and_quotes_are_quoted() {
        let mut b = Vec::new();
        csv_field(&mut b, "/a,b\"c");
        assert_eq!(b, b"\"/a,b\"\"c\"");
        b.clear();
        csv_field(&mut b, "/plain");
        assert_eq!(b, b"/plain");
    }
}
