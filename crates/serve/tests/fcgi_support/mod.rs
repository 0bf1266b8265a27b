//! FastCGI applications for the gateway tests, started by the test and stopped by their process
//! group: php-fpm (Debian's `php-fpm`, run in the foreground with a config written here) and
//! fcgiwrap running shell scripts, each listening on a unix socket in a temporary directory; and
//! a relay in front of an application's socket that counts the connections made to it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::common::*;

/// A running application, killed with its process group when dropped.
pub struct App {
    child: Child,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
}

impl App {
    /// php-fpm with one pool of `children` static workers.
    pub fn php_fpm(children: u32) -> App {
        let fpm = std::fs::read_dir("/usr/sbin")
            .ok()
            .and_then(|d| {
                d.filter_map(|e| e.ok()).map(|e| e.path()).find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))
                })
            })
            .expect("php-fpm is not installed (scripts/install-peers.sh installs it)");
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("fpm.sock");
        let conf = dir.path().join("fpm.conf");
        std::fs::write(
            &conf,
            format!(
                "[global]\nerror_log = {log}\ndaemonize = no\n\
                 [app]\nlisten = {sock}\npm = static\npm.max_children = {children}\n\
                 catch_workers_output = yes\n",
                log = dir.path().join("fpm.log").display(),
                sock = socket.display(),
            ),
        )
        .expect("write fpm.conf");
        // -R: the tests may run as root, where php-fpm otherwise wants a pool user; -n: no
        // php.ini, the same PHP whatever the machine's settings.
        let mut cmd = Command::new(fpm);
        cmd.args(["-R", "-n", "-F", "-y"]).arg(&conf);
        App::spawn(cmd, dir, socket)
    }

    /// fcgiwrap, running the scripts the requests name.
    pub fn fcgiwrap() -> App {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("wrap.sock");
        let mut cmd = Command::new("/usr/sbin/fcgiwrap");
        cmd.arg("-s").arg(format!("unix:{}", socket.display()));
        App::spawn(cmd, dir, socket)
    }

    fn spawn(mut cmd: Command, dir: tempfile::TempDir, socket: PathBuf) -> App {
        let child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the FastCGI application");
        let app = App { child, dir, socket };
        assert!(
            eventually(WAIT, || UnixStream::connect(&app.socket).is_ok()),
            "the application never listened on {}",
            app.socket.display()
        );
        app
    }

    /// `unix:PATH` of its socket.
    pub fn addr(&self) -> String {
        format!("unix:{}", self.socket.display())
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // Its workers are in its process group.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// A relay in front of `target` (on its own unix socket, or on 127.0.0.1 over TCP), counting
/// the connections made to it.
pub struct Relay {
    addr: String,
    pub accepted: Arc<AtomicU64>,
    _dir: tempfile::TempDir,
}

impl Relay {
    pub fn new(target: &Path) -> Relay {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("relay.sock");
        let listener = UnixListener::bind(&socket).expect("bind relay");
        let addr = format!("unix:{}", socket.display());
        let incoming = std::iter::from_fn(move || Some(listener.accept().map(|(s, _)| s)));
        Relay::run(incoming, target, addr, dir)
    }

    /// The same over TCP.
    pub fn tcp(target: &Path) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
        let addr = listener.local_addr().unwrap().to_string();
        let dir = tempfile::tempdir().expect("tempdir");
        let incoming = std::iter::from_fn(move || Some(listener.accept().map(|(s, _)| s)));
        Relay::run(incoming, target, addr, dir)
    }

    fn run<S: Duplex>(
        incoming: impl Iterator<Item = std::io::Result<S>> + Send + 'static,
        target: &Path,
        addr: String,
        dir: tempfile::TempDir,
    ) -> Relay {
        let accepted = Arc::new(AtomicU64::new(0));
        let (count, target) = (accepted.clone(), target.to_path_buf());
        // The threads end with the test process; each copy ends when either side closes.
        std::thread::spawn(move || {
            for client in incoming {
                let Ok(client) = client else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(app) = UnixStream::connect(&target) else {
                    continue;
                };
                let (c2, a2) = (client.dup(), app.dup());
                std::thread::spawn(move || copy(client, app));
                std::thread::spawn(move || copy(a2, c2));
            }
        });
        Relay {
            addr,
            accepted,
            _dir: dir,
        }
    }

    /// Its address as `--fastcgi` takes it.
    pub fn addr(&self) -> String {
        self.addr.clone()
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// A stream a relay copies both ways.
trait Duplex: Read + Write + Send + Sized + 'static {
    fn dup(&self) -> Self;
    fn shut_write(&self);
}

impl Duplex for UnixStream {
    fn dup(&self) -> Self {
        self.try_clone().expect("clone")
    }
    fn shut_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl Duplex for TcpStream {
    fn dup(&self) -> Self {
        self.try_clone().expect("clone")
    }
    fn shut_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

fn copy(mut from: impl Duplex, mut to: impl Duplex) {
    let mut buf = [0u8; 16384];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    to.shut_write();
}

/// Writes `text` to `name` under `dir`, executable (fcgiwrap runs it; php-fpm reads it).
pub fn write_file(dir: &Path, name: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A unix socket path nothing listens on any more (its listener closed): connecting is
/// refused.
pub fn refusing_socket(dir: &Path) -> PathBuf {
    let path = dir.join("closed.sock");
    drop(UnixListener::bind(&path).expect("bind"));
    path
}

/// What [`Scripted`] does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Answers it whole.
    Answer,
    /// Closes the connection without a word, as an application closing an idle connection the
    /// moment the server sends on it.
    Close,
    /// Sends a head and part of a body, then closes, as an application that dies mid-response.
    Cut,
    /// Refuses it: END_REQUEST with FCGI_OVERLOADED and nothing else.
    Overloaded,
    /// Writes 800 KB of FCGI_STDERR (100 records of 8,000 bytes), then answers.
    StderrFlood,
    /// Answers as soon as the PARAMS end, before the request's STDIN: the body is left unread
    /// on the connection, as an application that answers an upload before reading it.
    AnswerBeforeBody,
    /// Answers it whole after 5 ms of work, as most applications: its answer is never there
    /// when the request has only just been sent.
    AnswerAfterWork,
    /// Reads the request only once the test opens the gate ([`Scripted::open_gate`]; at once
    /// after that), then answers it, as an application whose workers are all busy: its STDIN
    /// waits on the connection meanwhile. A gate not opened within a minute closes the
    /// connection unanswered.
    ReadLate,
    /// Reads the PARAMS, lets 128 KiB of the body queue up unread (the server's writes then
    /// block), stops reading (`shutdown(SHUT_RD)`: the server's next write fails, as after a
    /// close), answers whole and closes, as an application that rejects an upload unread.
    /// Stopping before the answer puts the failed write before the answer's read, whichever
    /// the server's loop does first.
    AnswerUnreadThenClose,
    /// As [`Step::AnswerUnreadThenClose`], but the connection stays open until the server
    /// closes it (within [`WAIT`]): a server that kept it for its next request would find it
    /// there, idle and quiet, and fail on its first write.
    AnswerUnreadThenWait,
}

/// A FastCGI responder written here, for what a real application does only by chance: on each
/// connection it reads requests and does with each what `plan` says, then closes. Counts its
/// connections.
pub struct Scripted {
    pub socket: PathBuf,
    pub accepted: Arc<AtomicU64>,
    /// Connections it has closed (its plan for them done).
    pub closed: Arc<AtomicU64>,
    /// Opened by the test: [`Step::ReadLate`] waits for it.
    gate: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

impl Scripted {
    pub fn new(plan: Vec<Vec<Step>>) -> Scripted {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("scripted.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let accepted = Arc::new(AtomicU64::new(0));
        let closed = Arc::new(AtomicU64::new(0));
        let gate = Arc::new(AtomicBool::new(false));
        let (count, done, opened) = (accepted.clone(), closed.clone(), gate.clone());
        std::thread::spawn(move || {
            for (conn, steps) in plan.into_iter().enumerate() {
                let Ok((mut s, _)) = listener.accept() else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                for (i, step) in steps.into_iter().enumerate() {
                    let unread = matches!(
                        step,
                        Step::AnswerUnreadThenClose | Step::AnswerUnreadThenWait
                    );
                    let upto = if unread || step == Step::AnswerBeforeBody {
                        4
                    } else {
                        5
                    };
                    let shut = step == Step::ReadLate
                        && !eventually(std::time::Duration::from_secs(60), || {
                            opened.load(Ordering::SeqCst)
                        });
                    if shut || read_request(&mut s, upto).is_none() || step == Step::Close {
                        break;
                    }
                    if unread {
                        if !queued_at_least(&s, 128 << 10) {
                            break;
                        }
                        let _ = s.shutdown(std::net::Shutdown::Read);
                    }
                    if step == Step::StderrFlood {
                        let flood: Vec<u8> =
                            (0..100).flat_map(|_| record(7, &[b'x'; 8000])).collect();
                        if s.write_all(&flood).is_err() {
                            break;
                        }
                    }
                    if step == Step::Overloaded {
                        if s.write_all(&record(3, &[0, 0, 0, 0, 2, 0, 0, 0])).is_err() {
                            break;
                        }
                        continue;
                    }
                    if step == Step::AnswerAfterWork {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    let body =
                        format!("Content-Type: text/plain\r\n\r\nconnection {conn} request {i}");
                    let mut out = record(6, body.as_bytes());
                    if step == Step::Cut {
                        let _ = s.write_all(&out);
                        break;
                    }
                    out.extend(record(6, b""));
                    out.extend(record(3, &[0, 0, 0, 0, 0, 0, 0, 0]));
                    if s.write_all(&out).is_err() || step == Step::AnswerUnreadThenClose {
                        break;
                    }
                    if step == Step::AnswerUnreadThenWait {
                        closed_by_peer(&s);
                        break;
                    }
                }
                drop(s);
                done.fetch_add(1, Ordering::SeqCst);
            }
        });
        Scripted {
            socket,
            accepted,
            closed,
            gate,
            _dir: dir,
        }
    }

    /// Lets [`Step::ReadLate`] read.
    pub fn open_gate(&self) {
        self.gate.store(true, Ordering::SeqCst);
    }

    pub fn addr(&self) -> String {
        format!("unix:{}", self.socket.display())
    }
}

/// Whether `n` bytes came to wait unread in `s`, within [`WAIT`].
fn queued_at_least(s: &UnixStream, n: usize) -> bool {
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); n];
    eventually(WAIT, || {
        socket2::SockRef::from(s)
            .peek(&mut buf)
            .is_ok_and(|got| got >= n)
    })
}

/// Waits, within [`WAIT`], for the other end to close `s`, which was shut for reading (its
/// reads say nothing more): the hang-up `poll` reports once both directions are shut.
fn closed_by_peer(s: &UnixStream) {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        // SAFETY: `p` is one valid pollfd for the call's length, its descriptor `s`'s, open.
        let n = unsafe { libc::poll(&mut p, 1, left.as_millis() as i32) };
        if n > 0 || left.is_zero() {
            return; // the hang-up (or an error: the socket is no use either way)
        }
    }
}

/// A record of request 1 without padding.
fn record(kind: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len() as u16;
    let mut r = vec![1, kind, 0, 1, (len >> 8) as u8, len as u8, 0, 0];
    r.extend_from_slice(content);
    r
}

/// Reads one request's records, up to the end of its stream of type `upto` (5: STDIN, 4:
/// PARAMS).
fn read_request(s: &mut UnixStream, upto: u8) -> Option<()> {
    loop {
        let mut head = [0u8; 8];
        s.read_exact(&mut head).ok()?;
        let len = u16::from_be_bytes([head[4], head[5]]) as usize;
        let mut rest = vec![0; len + head[6] as usize];
        s.read_exact(&mut rest).ok()?;
        if head[1] == upto && len == 0 {
            return Some(());
        }
    }
}
