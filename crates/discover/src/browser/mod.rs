//! `flint discover --browser`: each page loaded by headless Chromium, its file set what the
//! browser's DevTools network events say it fetched.
//!
//! One Chromium for the whole crawl, started with a profile of its own in a temporary
//! directory, in a process group of its own (`lab_process::Group`: its zygote, renderers and
//! network service are stopped with it on every path out, an error, a panic or Ctrl-C's stop
//! flag included), driven over `--remote-debugging-pipe` ([`cdp`]); one new tab per page
//! ([`page`]), so that no request of one page is counted on another.

pub mod cdp;
mod entries;
pub mod page;

pub use entries::{entries, Recorded};

use cdp::{Cdp, CdpError};
use lab_process::{Group, StopPolicy};
use std::io::{self, PipeWriter};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long Chromium may take to start and answer its first command on a loaded machine.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Chromium's window height (CSS px); its width is `--viewport`, else [`DEFAULT_WIDTH`]. The
/// page is scrolled to its end whatever the height.
pub const WINDOW_HEIGHT: u32 = 800;
/// The window width without `--viewport`.
pub const DEFAULT_WIDTH: u32 = 1280;

/// The flags of every run: headless, none of the browser's own traffic (updates, sync, QUIC,
/// component downloads), no extensions or scroll bars.
const HEADLESS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
];

/// How `--browser` loads pages.
#[derive(Debug, Clone)]
pub struct BrowserOptions {
    /// The Chromium binary ([`find_chromium`]).
    pub chromium: PathBuf,
    /// Keep requests to other origins (as comments: bench requests one origin).
    pub all_origins: bool,
    /// One page's load, scroll and wait for the network to be idle, at most.
    pub page_timeout: Duration,
    /// Accept any certificate (`-k`).
    pub insecure: bool,
}

/// Chromium as `FLINT_CHROMIUM` names it, else `chromium` on PATH; the error is one line
/// saying how to get it.
pub fn find_chromium() -> Result<PathBuf, String> {
    const HOW: &str = "install the Debian package chromium (apt-get install chromium), or set \
                       FLINT_CHROMIUM to a Chromium binary";
    if let Some(p) = std::env::var_os("FLINT_CHROMIUM") {
        let p = PathBuf::from(p);
        return if lab_process::is_executable(&p) {
            Ok(p)
        } else {
            Err(format!(
                "--browser: FLINT_CHROMIUM={} is not an executable file: {HOW}",
                p.display()
            ))
        };
    }
    lab_process::find_program("chromium")
        .ok_or_else(|| format!("--browser needs Chromium, not found on PATH: {HOW}"))
}

/// A running Chromium. Fields drop in order: the pipe closes, then the group is stopped, then
/// its profile removed.
pub struct Browser {
    cdp: Cdp<PipeWriter>,
    group: Group,
    /// The profile (`--user-data-dir`) and Chromium's stderr.
    dir: tempfile::TempDir,
    opts: BrowserOptions,
}

impl Browser {
    /// Starts Chromium with a window `width` CSS px wide and waits (bounded) for it to answer.
    pub fn start(opts: &BrowserOptions, width: u32) -> Result<Browser, String> {
        let dir = tempfile::Builder::new()
            .prefix("flint-chromium-")
            .tempdir()
            .map_err(|e| format!("a temporary profile directory for Chromium: {e}"))?;
        let stderr = std::fs::File::create(dir.path().join("stderr.log"))
            .map_err(|e| format!("Chromium's log file: {e}"))?;
        let (child_reads, to_browser) = io::pipe().map_err(|e| e.to_string())?;
        let (from_browser, child_writes) = io::pipe().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&opts.chromium);
        cmd.args(HEADLESS)
            .arg("--remote-debugging-pipe")
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .arg(format!("--window-size={width},{WINDOW_HEIGHT}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        if opts.insecure {
            cmd.arg("--ignore-certificate-errors");
        }
        cmd.arg("about:blank");
        give_pipe_fds(&mut cmd, child_reads.as_raw_fd(), child_writes.as_raw_fd());
        let group = Group::spawn(
            &mut cmd,
            None,
            StopPolicy::terminate(Duration::from_secs(5)),
        )
        .map_err(|e| format!("starting {}: {e}", opts.chromium.display()))?;
        // The child's ends, closed here: the browser's exit then ends our reads at once.
        drop((child_reads, child_writes));
        let mut browser = Browser {
            cdp: Cdp::new(to_browser, from_browser),
            group,
            dir,
            opts: opts.clone(),
        };
        let deadline = Instant::now() + START_LIMIT;
        browser
            .cdp
            .call(
                None,
                "Browser.getVersion",
                serde_json::json!({}),
                deadline,
                &mut |_| {},
            )
            .map_err(|e| {
                format!(
                    "{} did not start: {e}{}",
                    browser.opts.chromium.display(),
                    browser.last_words()
                )
            })?;
        Ok(browser)
    }

    /// The process group's id (the browser's pid).
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// The last line Chromium wrote on stderr, as `: LINE`, to explain an exit.
    pub fn last_words(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })
            .map(|l| format!(" (its last line: {})", l.trim()))
            .unwrap_or_default()
    }

    /// Explains a failed conversation, naming the page.
    pub fn error(&self, page: &str, e: &CdpError) -> String {
        let words = if *e == CdpError::Closed {
            self.last_words()
        } else {
            String::new()
        };
        format!("Chromium, loading {page}: {e}{words}")
    }
}

/// Makes `cmd`'s child hold `read` as its fd 3 and `write` as its fd 4, the pipe
/// `--remote-debugging-pipe` talks on.
fn give_pipe_fds(cmd: &mut Command, read: RawFd, write: RawFd) {
    // SAFETY: `pre_exec`'s closure runs in the child between fork and exec, where only
    // async-signal-safe work is sound. `move_to_3_and_4` makes fcntl(2) and dup2(2) calls,
    // async-signal-safe by POSIX, on plain integers: it allocates nothing (an io::Error from
    // errno is not allocated), takes no lock and touches no memory shared with the parent. The
    // fds it reads are the parent's pipe ends, open (owned by `Browser::start`) until the spawn
    // has returned.
    unsafe {
        cmd.pre_exec(move || move_to_3_and_4(read, write));
    }
}

/// In the child: `read` to fd 3, `write` to fd 4, both kept across exec. Each is first copied
/// above 4 (close-on-exec), so that neither dup2 overwrites the other's source, and a source
/// that already is fd 3 or 4 (dup2 to itself would keep its close-on-exec flag) gets a fresh fd.
fn move_to_3_and_4(read: RawFd, write: RawFd) -> io::Result<()> {
    let check = |r: libc::c_int| {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    };
    // SAFETY: fcntl and dup2 on fds: no memory is passed or touched.
    unsafe {
        let r = check(libc::fcntl(read, libc::F_DUPFD_CLOEXEC, 10))?;
        let w = check(libc::fcntl(write, libc::F_DUPFD_CLOEXEC, 10))?;
        check(libc::dup2(r, 3))?;
        check(libc::dup2(w, 4))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// The fds a child gets are the pipe's, whatever numbers the parent's ends had, and the
    /// copies made on the way (at 10 and above) are closed at exec.
    #[test]
    fn a_child_reads_fd_3_and_writes_fd_4() {
        let (child_reads, mut to_child) = io::pipe().unwrap();
        let (mut from_child, child_writes) = io::pipe().unwrap();
        let link = |fd: RawFd| {
            std::fs::read_link(format!("/proc/self/fd/{fd}"))
                .unwrap()
                .display()
                .to_string()
        };
        let (pipe_in, pipe_out) = (
            link(child_reads.as_raw_fd()),
            link(child_writes.as_raw_fd()),
        );
        let mut cmd = Command::new("sh");
        // Echoes a line of fd 3 to fd 4, then lists its own fds and what they are.
        cmd.args([
            "-c",
            "read line <&3; echo \"got $line\" >&4; \
             for f in /proc/$$/fd/*; do echo \"${f##*/} $(readlink $f)\"; done >&4",
        ])
        .stdin(Stdio::null());
        give_pipe_fds(&mut cmd, child_reads.as_raw_fd(), child_writes.as_raw_fd());
        let mut child = Group::spawn(
            &mut cmd,
            None,
            StopPolicy::terminate(Duration::from_secs(5)),
        )
        .unwrap();
        drop((child_reads, child_writes));
        to_child.write_all(b"hello\n").unwrap();
        drop(to_child);
        let mut out = String::new();
        from_child.read_to_string(&mut out).unwrap(); // EOF: every writing copy closed
        assert!(child.wait_exit(Duration::from_secs(30)).is_some());
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("got hello"));
        let fds: Vec<(u32, &str)> = lines
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(fd, what)| Some((fd.parse().ok()?, what)))
            .collect();
        let what = |n: u32| fds.iter().find(|(fd, _)| *fd == n).map(|(_, w)| *w);
        assert_eq!(what(3), Some(pipe_in.as_str()), "{out}");
        assert_eq!(what(4), Some(pipe_out.as_str()), "{out}");
        assert!(
            !fds.iter()
                .any(|(fd, w)| *fd >= 10 && (*w == pipe_in || *w == pipe_out)),
            "{out}"
        );
    }
}
