//! What the CGI tests share: a directory of real `#!/bin/sh` programs mounted at `/cgi-bin/`,
//! a reader for responses framed as a program's are (chunked, `Content-Length`, or up to the
//! close), and a wait for a program that has stopped making progress.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::common::*;
use serve::config::CgiMount;
use serve::Config;

/// A directory of scripts, mounted at `/cgi-bin/`.
pub struct Scripts {
    dir: tempfile::TempDir,
}

impl Scripts {
    pub fn new() -> Scripts {
        Scripts {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Writes an executable `#!/bin/sh` script.
    pub fn add(&self, name: &str, body: &str) -> &Scripts {
        write_script(&self.dir.path().join(name), body);
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn mount(&self, c: &mut Config) {
        c.cgi.push(CgiMount {
            prefix: "/cgi-bin".into(),
            dir: self.dir.path().to_path_buf(),
        });
    }
}

pub fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A response as a CGI answer frames it: `Content-Length`, chunked, or up to the close.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body was framed and arrived whole (a chunked one with its last chunk).
    pub complete: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub fn read_reply(r: &mut impl BufRead, head: bool) -> io::Result<Reply> {
    let (status, headers) = read_head(r)?;
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
        complete: true,
    };
    if head || status == 204 || status == 304 {
        return Ok(reply);
    }
    if let Some(len) = reply.header("content-length") {
        reply.body = vec![0; len.parse().expect("length")];
        r.read_exact(&mut reply.body)?;
    } else if reply.header("transfer-encoding") == Some("chunked") {
        reply.complete = false;
        loop {
            let mut size = String::new();
            if r.read_line(&mut size)? == 0 {
                return Ok(reply); // cut: no last chunk
            }
            let n = usize::from_str_radix(size.trim_end(), 16).expect("chunk size");
            let mut chunk = vec![0; n + 2];
            if n == 0 {
                r.read_exact(&mut chunk)?;
                reply.complete = true;
                return Ok(reply);
            }
            if r.read_exact(&mut chunk).is_err() {
                return Ok(reply);
            }
            reply.body.extend_from_slice(&chunk[..n]);
        }
    } else {
        r.read_to_end(&mut reply.body)?;
    }
    Ok(reply)
}

pub fn ask(srv: &TestServer, request: &str) -> Reply {
    let mut s = connect(srv.addr);
    s.write_all(request.as_bytes()).unwrap();
    read_reply(&mut BufReader::new(s), request.starts_with("HEAD ")).expect("response")
}

pub fn start(scripts: &Scripts, tweak: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::start(|c| {
        scripts.mount(c);
        tweak(c);
    })
}

pub const HELLO: &str = "printf 'Content-Type: text/plain\\r\\nX-Test: yes\\r\\n\\r\\nhello\\n'\n";

/// The state letter of a process in /proc (`None` once it is gone).
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.trim_start().chars().next()
}

pub fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Waits (bounded) until the count a program writes to `path` stops growing: its value then,
/// or `None` if it kept growing. A count that has not moved for half a second is taken as
/// stopped; a program merely descheduled that long is stopped too, for the bound checked after.
pub fn stalled_count(path: &Path) -> Option<u64> {
    stalled_count_within(path, WAIT)
}

/// [`stalled_count`] with its own bound, for a pipeline whose buffers take long to fill.
pub fn stalled_count_within(path: &Path, limit: Duration) -> Option<u64> {
    let read = || {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let mut last = None;
    let stalled = eventually(limit, || {
        let now = read();
        let same = now.is_some() && now == last;
        last = now;
        if !same {
            std::thread::sleep(Duration::from_millis(500));
        }
        same
    });
    stalled.then_some(last).flatten()
}

/// A program that writes 64 KiB blocks for ever, counting them into `count`.
pub fn flood_script(count: &Path) -> String {
    format!(
        "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\ni=0\nwhile :; do head -c 65536 /dev/zero || exit; i=$((i+1)); echo $i > {c}; done\n",
        c = count.display()
    )
}

/// A POST of `body` to `path` framed in chunks of `size` bytes, each with an extension, and a
/// trailer field after the last.
pub fn chunked_post(path: &str, body: &[u8], size: usize) -> Vec<u8> {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for chunk in body.chunks(size) {
        req.extend_from_slice(format!("{:x};part=1\r\n", chunk.len()).as_bytes());
        req.extend_from_slice(chunk);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\nX-Trailer: dropped\r\n\r\n");
    req
}

/// Sends `req` from another thread (its answer may come while it is still going out; a server
/// that refuses it may close first: the write's result is not asked for) and reads the answer.
pub fn send_and_read(w: &TcpStream, r: &mut impl BufRead, req: Vec<u8>) -> Reply {
    let mut w = w.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&req);
    });
    let reply = read_reply(r, false).expect("response");
    writer.join().unwrap();
    reply
}
