//! The two tracers behind one interface: made ready before the window, started when it opens,
//! stopped when it closes. This module picks; [`super::perf`] and [`super::strace`] run them
//! (they depend on [`super::counted`] and [`lab_process`], never on this module).

use super::counted::Counted;
use super::{perf, strace, Method, ProfileError};

/// A tracer ready to start: perf with its events opened and disabled; strace checked.
pub(crate) enum Pending {
    Strace,
    /// Boxed: a perf run is large, and `Strace` carries nothing.
    Perf(Box<perf::PerfRun>),
}

impl Pending {
    pub fn prepare(method: Method, pids: &[u32]) -> Result<Pending, ProfileError> {
        Ok(match method {
            Method::Strace => {
                strace::check()?;
                Pending::Strace
            }
            Method::Perf => Pending::Perf(Box::new(perf::PerfRun::prepare(
                perf::PerfTarget::Tasks(pids),
            )?)),
        })
    }

    /// Attaches strace, or enables perf's events; returns once the tracer is counting.
    pub fn start(self, pids: &[u32]) -> Result<Run, ProfileError> {
        Ok(match self {
            Pending::Strace => Run::Strace(strace::StraceRun::start(pids, true)?),
            Pending::Perf(mut p) => {
                p.enable()?;
                Run::Perf(p)
            }
        })
    }
}

/// A tracer counting.
pub(crate) enum Run {
    Strace(strace::StraceRun),
    Perf(Box<perf::PerfRun>),
}

impl Run {
    pub fn stop(self) -> Result<Counted, ProfileError> {
        match self {
            Run::Strace(r) => r.stop(),
            Run::Perf(r) => r.stop(),
        }
    }
}
