//! `flint bench --profile PID|auto`: the server's syscalls and CPU over the measured window.
//!
//! The tracer is made ready before the run ([`lab::profile::Profiler::prepare`]: perf takes a
//! second or two to open its events), started when the bench's window starts (after warm-up)
//! and stopped when it ends, through a [`bench::Observer`]. A profile that cannot be taken (no
//! permission, no tracer, the server gone) is a one-line warning: the benchmark still runs.

use anyhow::{bail, Context};
use bench::Target;
use lab::profile::{detect_method, pid_listening_on, Method, Prepared, Profile, Profiler};
use std::net::{IpAddr, UdpSocket};
use std::sync::Mutex;

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

/// Starts and stops the profiler with the bench's measured window.
pub struct ServerProfiler {
    prepared: Mutex<Option<Prepared>>,
    running: Mutex<Option<Profiler>>,
    done: Mutex<Option<Profile>>,
}

impl ServerProfiler {
    /// Prepares the tracer; None (after a warning) if it cannot be. Errors only when `auto`
    /// finds no server: the user asked for something that is not there.
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
        match Profiler::prepare(pid, method) {
            Ok(p) => Ok(Some(ServerProfiler {
                prepared: Mutex::new(Some(p)),
                running: Mutex::new(None),
                done: Mutex::new(None),
            })),
            Err(e) => {
                warn(e);
                Ok(None)
            }
        }
    }

    /// The profile of the window, if it was taken.
    pub fn finish(self) -> Option<Profile> {
        self.done.into_inner().ok().flatten()
    }
}

impl bench::Observer for ServerProfiler {
    fn window_started(&self) {
        let Some(prepared) = self.prepared.lock().ok().and_then(|mut p| p.take()) else {
            return;
        };
        match prepared.start() {
            Ok(p) => {
                if let Ok(mut running) = self.running.lock() {
                    *running = Some(p);
                }
            }
            Err(e) => warn(e),
        }
    }

    fn window_ended(&self) {
        let Some(running) = self.running.lock().ok().and_then(|mut r| r.take()) else {
            return;
        };
        match running.stop() {
            Ok(p) => {
                if let Ok(mut done) = self.done.lock() {
                    *done = Some(p);
                }
            }
            Err(e) => warn(e),
        }
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
