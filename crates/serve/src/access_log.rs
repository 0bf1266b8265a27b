//! The access log: Common or Combined Log Format, buffered per thread.
//!
//! Why it is shaped like this: a log written line by line costs one `write` per request, as much
//! as the response itself. Each event-loop thread keeps its own buffer (a `Vec` reused forever),
//! formats the `[10/Oct/2000:13:55:36 +0000]` timestamp once per second, and hands the kernel
//! whole lines in one `write` when the buffer passes 64 KiB, at least once a second (from the
//! loop's timer sweep) and at shutdown. The file is opened `O_APPEND`, so each `write` lands at
//! the end of the file atomically with respect to the other threads' writes: lines from
//! different threads never interleave mid-line.
//!
//! The request line, `Referer` and `User-Agent` come from the client: every byte outside
//! printable ASCII, and `"` and `\`, is written as `\xHH`, so a hostile client cannot end a line
//! early and forge the next one, nor break the quoting.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::LogFormat;

/// The buffer is written out once it holds more than this.
pub const FLUSH_BYTES: usize = 64 * 1024;
/// Buffered lines are written out at least this often.
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// A request line longer than this is cut in the log (a 414's line can be 8 KiB of junk).
const MAX_LOGGED_LINE: usize = 1024;

/// Opens (creating it if needed) the log file for appending; shared by all the threads. `-` is
/// standard output (a duplicate of its descriptor, so the log's writes stay whole-line writes).
///
/// The open does not wait: a FIFO without a reader would hold start-up (a blocking open waits
/// for one) without a word, so it is opened `O_NONBLOCK`, which fails at once there (ENXIO),
/// and the error says so. The flag is cleared after: writes block as a file's do.
pub fn open(path: &Path) -> io::Result<Arc<File>> {
    if path == Path::new("-") {
        let fd = io::stdout().as_fd().try_clone_to_owned()?;
        return Ok(Arc::new(File::from(fd)));
    }
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => explain_enxio(path, e),
            _ => e,
        })?;
    // SAFETY: fcntl on a descriptor this function owns; F_GETFL/F_SETFL read and set its
    // status flags only.
    let cleared = unsafe {
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        return Err(io::Error::last_os_error());
    }
    Ok(Arc::new(file))
}

/// What ENXIO from the open means. A FIFO without a reader gives it, and so does a socket
/// reached through a path (`/dev/stdout` while standard output is the journal's socket, as
/// under systemd): only the first is told to start its reader; the second is told of `-`,
/// which writes to standard output whatever it is.
#[cold]
fn explain_enxio(path: &Path, e: io::Error) -> io::Error {
    use std::os::unix::fs::FileTypeExt;
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if fifo {
        return io::Error::new(
            e.kind(),
            "a FIFO with no reader (start its reader first: the log is not waited for)",
        );
    }
    if path.starts_with("/dev") || path.starts_with("/proc/self/fd") {
        return io::Error::new(
            e.kind(),
            format!("{e} (for standard output, whatever it is, use `--access-log -`)"),
        );
    }
    e
}

/// One line's worth of facts.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The client's address (the first field).
    pub peer: IpAddr,
    /// The first line of the request as received (`GET /a HTTP/1.1`), without CRLF.
    pub request_line: &'a [u8],
    /// The response's status.
    pub status: u16,
    /// Body bytes of the response (`-` in the log when 0).
    pub body_bytes: u64,
    /// The request's `Referer`, written by the Combined format only (`-` when absent).
    pub referer: Option<&'a [u8]>,
    /// The request's `User-Agent`, written by the Combined format only (`-` when absent).
    pub user_agent: Option<&'a [u8]>,
    /// The user Basic authentication let in (the third field, Apache's `%u`; `-` when none).
    pub user: Option<&'a [u8]>,
}

/// A thread's log buffer.
#[derive(Debug)]
pub struct AccessLog {
    file: Arc<File>,
    format: LogFormat,
    buf: Vec<u8>,
    /// Unix second that `stamp` shows.
    stamp_secs: u64,
    stamp: [u8; 28],
    last_flush: Instant,
    /// Failed writes (the lines are dropped: a full disk must not stop the server).
    pub errors: u64,
    /// Writes made to the file.
    pub flushes: u64,
}

impl AccessLog {
    /// A thread's empty buffer over the shared log file (opened once, for appending, by
    /// [`open`]), writing lines in `format`.
    pub fn new(file: Arc<File>, format: LogFormat) -> AccessLog {
        let mut log = AccessLog {
            file,
            format,
            buf: Vec::with_capacity(FLUSH_BYTES + 4096),
            stamp_secs: u64::MAX,
            stamp: [b' '; 28],
            last_flush: Instant::now(),
            errors: 0,
            flushes: 0,
        };
        log.set_stamp(0);
        log
    }

    /// Appends one line; writes the buffer out when it passes [`FLUSH_BYTES`].
    pub fn record(&mut self, e: &Entry<'_>, now: SystemTime) {
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if secs != self.stamp_secs {
            self.set_stamp(secs);
        }
        let b = &mut self.buf;
        // Writing to a Vec cannot fail.
        let _ = write!(b, "{}", e.peer);
        b.extend_from_slice(b" - ");
        match e.user {
            // Escaped as the request line is, and its spaces too: a name in an htpasswd file
            // may hold one, and the field must stay one field.
            Some(user) => {
                for &c in &user[..user.len().min(MAX_LOGGED_LINE)] {
                    match c {
                        b' ' => b.extend_from_slice(b"\\x20"),
                        c => escape_into(b, &[c]),
                    }
                }
            }
            None => b.push(b'-'),
        }
        b.push(b' ');
        b.extend_from_slice(&self.stamp);
        b.extend_from_slice(b" \"");
        let line = &e.request_line[..e.request_line.len().min(MAX_LOGGED_LINE)];
        escape_into(b, line);
        b.extend_from_slice(b"\" ");
        push_u64(b, u64::from(e.status));
        b.push(b' ');
        if e.body_bytes == 0 {
            b.push(b'-');
        } else {
            push_u64(b, e.body_bytes);
        }
        if self.format == LogFormat::Combined {
            for field in [e.referer, e.user_agent] {
                b.extend_from_slice(b" \"");
                match field {
                    Some(v) => escape_into(b, &v[..v.len().min(MAX_LOGGED_LINE)]),
                    None => b.push(b'-'),
                }
                b.push(b'"');
            }
        }
        b.push(b'\n');
        if self.buf.len() > FLUSH_BYTES {
            self.flush();
        }
    }

    /// Writes the buffer out if it holds anything and the last write is [`FLUSH_INTERVAL`] old.
    pub fn flush_if_due(&mut self, now: Instant) {
        if !self.buf.is_empty() && now.saturating_duration_since(self.last_flush) >= FLUSH_INTERVAL
        {
            self.flush();
        }
    }

    /// Writes every buffered line in one `write` (whole lines only, `O_APPEND`).
    pub fn flush(&mut self) {
        self.last_flush = Instant::now();
        if self.buf.is_empty() {
            return;
        }
        self.flushes += 1;
        // A regular file takes the whole buffer in one write; write_all only loops on the
        // (theoretical) short write, which is the one case where lines could interleave.
        if (&*self.file).write_all(&self.buf).is_err() {
            self.errors += 1;
        }
        self.buf.clear();
    }

    /// Bytes waiting to be written.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    fn set_stamp(&mut self, secs: u64) {
        const MONTHS: [&[u8; 3]; 12] = [
            b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
            b"Dec",
        ];
        self.stamp_secs = secs;
        let (y, m, d) = wire::date::civil_from_days((secs / 86_400) as i64);
        let t = secs % 86_400;
        // Written in place: a new second comes while requests are served, and the steady
        // state allocates nothing (a `&mut [u8]` writer, not a Vec).
        let mut s = &mut self.stamp[..];
        let _ = write!(
            s,
            "[{:02}/{}/{:04}:{:02}:{:02}:{:02} +0000]",
            d,
            std::str::from_utf8(MONTHS[(m - 1) as usize]).unwrap_or("Jan"),
            y,
            t / 3600,
            t / 60 % 60,
            t % 60
        );
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

fn push_u64(b: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    b.extend_from_slice(&tmp[i..]);
}

/// Copies `s`, writing control bytes, non-ASCII, `"` and `\` as `\xHH`.
pub(crate) fn escape_into(b: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &c in s {
        if (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\' {
            b.push(c);
        } else {
            b.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(c >> 4)],
                HEX[usize::from(c & 15)],
            ]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &[u8]) -> Entry<'_> {
        Entry {
            peer: IpAddr::from([127, 0, 0, 1]),
            request_line: line,
            status: 200,
            body_bytes: 1024,
            referer: Some(b"http://a/"),
            user_agent: Some(b"ua \"x\""),
            user: None,
        }
    }

    fn log_to_string(format: LogFormat, e: &Entry<'_>, at: SystemTime) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let mut log = AccessLog::new(open(&path).unwrap(), format);
        log.record(e, at);
        assert!(
            std::fs::read(&path).unwrap().is_empty(),
            "buffered, not written per line"
        );
        log.flush();
        String::from_utf8(std::fs::read(&path).unwrap()).unwrap()
    }

    #[test]
    fn common_format_has_the_clf_fields() {
        let at = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let s = log_to_string(LogFormat::Common, &entry(b"GET /a HTTP/1.1"), at);
        assert_eq!(
            s,
            "127.0.0.1 - - [06/Nov/1994:08:49:37 +0000] \"GET /a HTTP/1.1\" 200 1024\n"
        );
    }

    #[test]
    fn an_authenticated_user_is_the_third_field_escaped() {
        let at = UNIX_EPOCH + Duration::from_secs(784_111_777);
        let e = Entry {
            user: Some(b"j\"o e"),
            ..entry(b"GET /a HTTP/1.1")
        };
        let s = log_to_string(LogFormat::Common, &e, at);
        assert_eq!(
            s,
            "127.0.0.1 - j\\x22o\\x20e [06/Nov/1994:08:49:37 +0000] \"GET /a HTTP/1.1\" 200 1024\n"
        );
    }

    #[test]
    fn combined_format_adds_escaped_referer_and_user_agent() {
        let at = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29 00:00:00
        let mut e = entry(b"HEAD / HTTP/1.0");
        e.body_bytes = 0;
        e.status = 304;
        let s = log_to_string(LogFormat::Combined, &e, at);
        assert_eq!(
            s,
            "127.0.0.1 - - [29/Feb/2000:00:00:00 +0000] \"HEAD / HTTP/1.0\" 304 - \
             \"http://a/\" \"ua \\x22x\\x22\"\n"
        );
    }

    #[test]
    fn hostile_request_line_cannot_forge_a_log_line() {
        let line = b"GET /x\" 200 5\n1.2.3.4 - - [forged] \"GET / HTTP/1.1\\\xff\x1b";
        let s = log_to_string(LogFormat::Common, &entry(line), UNIX_EPOCH);
        assert_eq!(s.matches('\n').count(), 1, "{s}");
        assert_eq!(s.matches('"').count(), 2, "{s}");
        assert!(s.contains("\\x22 200 5\\x0A1.2.3.4"), "{s}");
        assert!(s.contains("\\x5C\\xFF\\x1B\""), "{s}");
    }

    #[test]
    fn timestamp_matches_httpdate_over_many_days() {
        let mut log = AccessLog::new(Arc::new(tempfile::tempfile().unwrap()), LogFormat::Common);
        let mut secs = 0u64;
        while secs < 4_000_000_000 {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            let http = httpdate::fmt_http_date(t); // "Sun, 06 Nov 1994 08:49:37 GMT"
            log.set_stamp(secs);
            let stamp = std::str::from_utf8(&log.stamp).unwrap();
            let want = format!(
                "[{}/{}/{}:{} +0000]",
                &http[5..7],
                &http[8..11],
                &http[12..16],
                &http[17..25]
            );
            assert_eq!(stamp, want);
            secs += 86_400 * 37 + 3_607;
        }
    }

    #[test]
    fn buffer_is_written_once_it_passes_64_kib() {
        let file = Arc::new(tempfile::tempfile().unwrap());
        let mut log = AccessLog::new(file.clone(), LogFormat::Common);
        let mut n = 0;
        while log.flushes == 0 {
            log.record(&entry(b"GET /some/long/enough/path HTTP/1.1"), UNIX_EPOCH);
            n += 1;
            assert!(n < 10_000, "never flushed");
        }
        let len = file.metadata().unwrap().len() as usize;
        assert!(len > FLUSH_BYTES && len < FLUSH_BYTES + 200, "{len}");
        assert_eq!(log.pending(), 0);
    }
}
