//! Where each tier's CPU is read ([`Tiers`], one [`Source`] a tier): a process, a process
//! tree, or a cgroup, less flint serve's own process when its CGI programs are the tier.

use super::cgroup::Cgroup;
use lab_process::cpu::{self, CpuTime};
use lab_process::procfs::ProcError;
use std::path::{Path, PathBuf};

/// Where a tier's CPU is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// One process, every thread (the kernel's exact clock).
    Process(u32),
    /// A process tree with its reaped children's times (without a cgroup).
    Tree(u32),
    /// A process tree less its root: flint serve's CGI programs without a cgroup.
    TreeLess(u32),
    /// Everything that ran in a cgroup.
    Cgroup(PathBuf),
    /// A cgroup less one process in it: flint serve's CGI programs.
    CgroupLess(PathBuf, u32),
}

impl Source {
    fn read(&self) -> Result<CpuTime, String> {
        let proc = |e: ProcError| e.to_string();
        let cgroup =
            |dir: &Path| Cgroup::usage_at(dir).map_err(|e| format!("{}: {e}", dir.display()));
        match self {
            Source::Process(pid) => cpu::process(*pid).map_err(proc),
            Source::Tree(pid) => cpu::tree(*pid).map_err(proc),
            Source::TreeLess(pid) => {
                let own = cpu::process(*pid).map_err(proc)?;
                Ok(less(cpu::tree(*pid).map_err(proc)?, own))
            }
            Source::Cgroup(dir) => cgroup(dir),
            Source::CgroupLess(dir, pid) => {
                let own = cpu::process(*pid).map_err(proc)?;
                Ok(less(cgroup(dir)?, own))
            }
        }
    }
}

/// `all` less `part` by their totals: the two are separate estimates of the user/system split
/// (the cgroup's clock, the process's tick ratio), so subtracting field by field, each clamped
/// at zero, could overstate the rest. The total is exact; the split is `all`'s, bounded by it.
fn less(all: CpuTime, part: CpuTime) -> CpuTime {
    let total = all.total().saturating_sub(part.total());
    let sys = all.sys.saturating_sub(part.sys).min(total);
    CpuTime {
        user: total - sys,
        sys,
    }
}

/// Where one deployment's tiers are read: the web server, and the gateway and application
/// when the deployment has them, then the database server's when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiers {
    pub web: Source,
    /// The web server's processes run the application too (mod_php): the first tier is both,
    /// named [`WEB_AND_APP`], and there is no `app` tier.
    pub app_in_web: bool,
    pub app: Option<Source>,
    pub db: Option<Source>,
}

/// The name of the one tier of a web server that runs the application in its own processes.
pub const WEB_AND_APP: &str = "web+app";

impl Tiers {
    /// The tiers' names, in the order [`Tiers::read`] reads them.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = vec![if self.app_in_web { WEB_AND_APP } else { "web" }];
        names.extend(self.app.as_ref().map(|_| "app"));
        names.extend(self.db.as_ref().map(|_| "db"));
        names
    }

    /// One reading: the web tier, then the application tier and the database's when there are.
    pub fn read(&self) -> Result<Vec<CpuTime>, String> {
        let mut out = vec![self.web.read()?];
        for tier in [&self.app, &self.db].into_iter().flatten() {
            out.push(tier.read()?);
        }
        Ok(out)
    }
}
