//! Finding programs, running short ones (`nginx -v`, `perf stat -- true`) to completion in
//! bounded time, and free loopback ports.

use super::{Group, StopPolicy};
use std::io::{self, Read};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A loopback port nothing listens on right now, found by binding port 0 and letting it go.
/// Another process could take it before ours binds it: callers retry or say so.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// `name` on PATH or in the sbin directories (which a non-root PATH often lacks).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// Whether `path` is a regular file with an execute bit set (for anyone: whether this user may
/// run it is left to the spawn).
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs a short command to completion within `timeout` (its group killed past that) and
/// returns what it wrote. Its output must fit in the pipes (a version line, an error message):
/// it is read once the command has exited.
pub fn output_within(cmd: &mut Command, timeout: Duration) -> io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut group = Group::spawn(cmd, None, StopPolicy::terminate(Duration::ZERO))?;
    let Some(status) = group.wait_exit(timeout) else {
        group.stop();
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {timeout:?}"),
        ));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let child = group.child_mut();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut stdout)?;
    }
    if let Some(mut err) = child.stderr.take() {
        err.read_to_end(&mut stderr)?;
    }
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn output_within_kills_what_does_not_answer() {
        let started = Instant::now();
        let err = output_within(Command::new("sleep").arg("30"), Duration::from_millis(100))
            .expect_err("must time out");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        // Not the 30 s of the sleep; the margin is for a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(15));
        let out =
            output_within(Command::new("echo").arg("hi"), Duration::from_secs(10)).expect("echo");
        assert_eq!(out.stdout, b"hi\n");
    }

    #[test]
    fn programs_are_found_on_path_and_ports_are_free() {
        assert!(find_program("sh").is_some());
        assert!(find_program("no-such-program-here").is_none());
        let port = free_port().unwrap();
        assert!(TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok());
    }
}
