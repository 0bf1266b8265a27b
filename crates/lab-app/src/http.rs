//! The application as an HTTP/1.1 server, for a reverse proxy to stand in front of: a thread per
//! connection (each with its own database connection and prepared statements), keep-alive, and
//! requests answered in the order they came (so pipelining works). Deliberately plain: it is the
//! upstream the lab measures proxies against, not a server to measure. It listens on TCP or on a
//! unix socket (the lab's, as its FastCGI responder does: the proxy and FastCGI deployments then
//! differ by their protocol alone), and may be mounted under a prefix that a proxy passes
//! unchanged (`/proxy/json` is the application's `/json`).

use crate::db::Db;
use crate::handlers::answer;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Largest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// What the application is told at start: its database and the prefix it is mounted under
/// (`""`: at the root).
#[derive(Debug, Clone, Default)]
pub struct Mount {
    /// The database (a SQLite file or a `postgres://` URL), opened once per connection;
    /// `None`, or one that cannot be opened: the test types that need it answer 500.
    pub db: Option<PathBuf>,
    /// The path prefix the proxy passes the application's paths under; a path outside it is
    /// 404.
    pub prefix: String,
}

/// A connection from the proxy: TCP or a unix socket.
trait Stream: Read + Write + Send + 'static {
    fn set_timeouts(&self, read: Duration, write: Duration) -> io::Result<()>;
    fn set_read(&self, read: Duration) -> io::Result<()>;
    fn shutdown_write(&self) -> io::Result<()>;
}

impl Stream for TcpStream {
    fn set_timeouts(&self, read: Duration, write: Duration) -> io::Result<()> {
        let _ = self.set_nodelay(true);
        self.set_read_timeout(Some(read))?;
        self.set_write_timeout(Some(write))
    }
    fn set_read(&self, read: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(read))
    }
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

impl Stream for UnixStream {
    fn set_timeouts(&self, read: Duration, write: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(read))?;
        self.set_write_timeout(Some(write))
    }
    fn set_read(&self, read: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(read))
    }
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

/// Serves `listener` until the process ends.
pub fn serve(listener: TcpListener, mount: Mount) -> io::Result<()> {
    accept(listener.incoming(), mount)
}

/// Serves the unix socket `listener` until the process ends.
pub fn serve_unix(listener: UnixListener, mount: Mount) -> io::Result<()> {
    accept(listener.incoming(), mount)
}

fn accept<S: Stream>(
    incoming: impl Iterator<Item = io::Result<S>>,
    mount: Mount,
) -> io::Result<()> {
    for stream in incoming {
        let stream = match stream {
            Ok(s) => s,
            // Out of descriptors (EMFILE) or memory: retrying at once would spin, and that CPU
            // would be counted in the application's tier. Wait for connections to close.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let mount = mount.clone();
        std::thread::spawn(move || {
            let _ = connection(stream, mount.db.as_deref(), &mount.prefix);
        });
    }
    Ok(())
}

/// How long a connection may be silent (a request's head, a write the client does not take)
/// before its thread and database connection are given back.
const IDLE: Duration = Duration::from_secs(60);

fn connection<S: Stream>(mut stream: S, db_path: Option<&Path>, prefix: &str) -> io::Result<()> {
    stream.set_timeouts(IDLE, IDLE)?;
    let mut db = db_path.and_then(|p| Db::open(p).ok());
    let mut rng = fastrand::Rng::new();
    let mut buf = vec![0u8; MAX_HEAD];
    let mut have = 0;
    let mut out = Vec::with_capacity(4096);
    loop {
        // Every complete request in the buffer is answered, then the answers go in one write.
        let mut at = 0;
        let mut close = false;
        loop {
            let mut fields = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut fields);
            let n = match req.parse(&buf[at..have]) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => break,
                Err(_) => {
                    out.extend_from_slice(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    close = true;
                    break;
                }
            };
            let has_body = req.headers.iter().any(|h| {
                (h.name.eq_ignore_ascii_case("content-length") && h.value != b"0")
                    || h.name.eq_ignore_ascii_case("transfer-encoding")
            });
            close = has_body
                || req.version == Some(0)
                || req.headers.iter().any(|h| {
                    h.name.eq_ignore_ascii_case("connection")
                        && h.value.eq_ignore_ascii_case(b"close")
                });
            let target = req.path.unwrap_or("/");
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            // Outside the mount (or a prefix with no test type after it) nothing matches: 404.
            let path = path.strip_prefix(prefix).unwrap_or("");
            let reply = if has_body {
                // The test types take no body; one is refused rather than read.
                crate::handlers::Reply {
                    status: 413,
                    content_type: "text/plain",
                    body: b"no request body is taken\n".to_vec(),
                }
            } else {
                answer(db.as_mut(), &mut rng, path, query)
            };
            write!(
                out,
                "HTTP/1.1 {} {}\r\nServer: flint-app\r\nDate: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n",
                reply.status,
                reason(reply.status),
                httpdate::fmt_http_date(SystemTime::now()),
                reply.content_type,
                reply.body.len(),
                if close { "Connection: close\r\n" } else { "" },
            )?;
            out.extend_from_slice(&reply.body);
            at += n;
            if close {
                break;
            }
        }
        if !out.is_empty() {
            stream.write_all(&out)?;
            out.clear();
        }
        if close {
            // The client may still be sending (a body refused unread): end our side first and
            // read what comes for a moment, so that the close does not reset the connection
            // before the client has read the answer.
            stream.shutdown_write()?;
            stream.set_read(Duration::from_secs(1))?;
            let mut sink = [0u8; 4096];
            let mut drained = 0usize;
            while drained < 1 << 20 {
                match stream.read(&mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
            return Ok(());
        }
        buf.copy_within(at..have, 0);
        have -= at;
        if have == buf.len() {
            stream.write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
            return Ok(());
        }
        match stream.read(&mut buf[have..])? {
            0 => return Ok(()),
            n => have += n,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        413 => "Content Too Large",
        _ => "Internal Server Error",
    }
}
