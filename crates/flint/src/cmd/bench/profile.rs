//! `flint bench --profile PID|auto`: the server's syscalls and CPU over the measured window.
//!
//! The window is the lab's ([`lab_profile::Window`], the one the experiments use): the tracer is
//! made ready before the run (perf takes a second or two to open its events), started when the
//! bench's window opens (after warm-up) and stopped when it closes. A server that is not there
//! is an error before the run starts; a profile that cannot be taken (no permission, no tracer)
//! is a one-line warning, and the benchmark still runs.

use anyhow::{bail, Context};
use bench::Target;
use lab_process::procfs::pid_listening_on;
use lab_profile::Window;
use lab_profile::{detect_method, Method, Profile};
use std::net::{IpAddr, UdpSocket};

/// What `--profile` names: a pid or `auto`, and the tracer if forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileArg {
    /// None: `auto`.
    pub pid: Option<u32>,
    pub method: Option<Method>,
}

/// `1234`, `auto`, `1234:strace`, `auto:perf`.
pub fn parse_arg(text: &str) -> Result<ProfileArg, String> {
    let (who, method) = match text.split_once(':') {
        Some((who, m)) => (who, Some(m.parse::<Method>()?)),
        None => (text, None),
    };
    let pid = match who {
        "auto" => None,
        n => Some(
            n.parse::<u32>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("`{n}`: a pid or `auto`"))?,
        ),
    };
    Ok(ProfileArg { pid, method })
}

fn warn(what: impl std::fmt::Display) {
    eprintln!("flint bench: no server profile: {what}");
}

/// An address of this machine: loopback, or one a socket can be bound to.
fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || ip.is_unspecified() || UdpSocket::bind((ip, 0)).is_ok()
}

/// The pid `--profile` names (for `auto`, the local listener of the target's port).
fn server_pid(arg: ProfileArg, target: &Target) -> anyhow::Result<u32> {
    if let Some(pid) = arg.pid {
        return Ok(pid);
    }
    let port = target.addr.port();
    if !is_local(target.addr.ip()) {
        bail!(
            "--profile auto: {} is not an address of this machine; give the server's pid",
            target.addr
        );
    }
    pid_listening_on(port).with_context(|| {
        format!(
            "--profile auto: no process of this user listens on port {port}; give the server's pid"
        )
    })
}

/// Traces and clocks the server over the bench's measured window.
pub struct ServerProfiler {
    window: Window,
}

impl ServerProfiler {
    /// Prepares the tracer; None (after a warning) if it cannot be. Errors when the server is
    /// not there (`auto` finds no listener, the pid names no process): the user asked for
    /// something that is not there, and nothing has started yet.
    pub fn prepare(arg: ProfileArg, target: &Target) -> anyhow::Result<Option<ServerProfiler>> {
        let pid = server_pid(arg, target)?;
        if pid == std::process::id() {
            warn(format!("pid {pid} is this flint bench itself"));
            return Ok(None);
        }
        let method = match arg.method.map_or_else(detect_method, Ok) {
            Ok(m) => m,
            Err(e) => {
                warn(e);
                return Ok(None);
            }
        };
        let window = Window::prepare(pid, Some(method)).context("--profile")?;
        if let Some(why) = window.take_tracer_error() {
            warn(why);
            return Ok(None);
        }
        Ok(Some(ServerProfiler { window }))
    }

    /// The profile of the window, if it was taken (a failure on the way is a warning).
    pub fn finish(self) -> Option<Profile> {
        let seen = self.window.finish();
        for e in &seen.profile_errors {
            warn(e);
        }
        seen.profile
    }
}

impl bench::Observer for ServerProfiler {
    fn window_started(&self) {
        self.window.open();
    }

    fn window_ended(&self) {
        self.window.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_arg_is_a_pid_or_auto_with_an_optional_tracer() {
        assert_eq!(
            parse_arg("1234"),
            Ok(ProfileArg {
                pid: Some(1234),
                method: None
            })
        );
        assert_eq!(
            parse_arg("auto:strace"),
            Ok(ProfileArg {
                pid: None,
                method: Some(Method::Strace)
            })
        );
        assert_eq!(parse_arg("7:perf").unwrap().method, Some(Method::Perf));
        assert!(parse_arg("0").is_err());
        assert!(parse_arg("nginx").unwrap_err().contains("a pid or `auto`"));
        assert!(parse_arg("auto:dtrace").is_err());
    }

    #[test]
    fn auto_refuses_a_remote_target() {
        let target = Target::http("192.0.2.1:80".parse().unwrap());
        let arg = ProfileArg {
            pid: None,
            method: None,
        };
        let err = server_pid(arg, &target).unwrap_err().to_string();
        assert!(err.contains("not an address of this machine"), "{err}");
    }
}
