//! System calls per request by tier: the truss table of the Jigsaw notes and of the Apache
//! profile, with a column for each tier a dynamic request crosses (web server, gateway and
//! application, database).
//!
//! A tier is traced where its CPU is read ([`Source`]): a cgroup (every task that ran in it,
//! CGI programs that came and went included: perf counts a cgroup's tasks on every CPU, strace
//! attaches to its processes and follows what they start), a process tree, or a server's own
//! threads. flint serve's CGI programs share its cgroup, so its programs' tier is the cgroup
//! less flint serve's own threads, syscall by syscall, as its CPU is.
//!
//! Tracing slows a tier (strace stops it at every syscall; perf's table costs 10-30% of a
//! syscall-bound process), so the counts come from a run of their own, made after the untraced
//! run that gives the row's rate, latency and CPU; the traced run's rate is kept beside it
//! (`traced_requests_per_s`), which shows what the tracing cost.

use super::tiers::{Source, Tiers};
use crate::{table, ResultRow};
use bench::Observer;
use lab_profile::{Counts, Method, Scope, ScopeTracer};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Where a tier's syscalls are counted: a scope, less another (flint serve's own threads out
/// of its cgroup or tree, for its CGI programs).
pub(super) fn scopes(source: &Source) -> (Scope, Option<Scope>) {
    match source {
        Source::Process(pid) => (Scope::Threads(*pid), None),
        Source::Tree(pid) => (Scope::Tree(*pid), None),
        Source::TreeLess(pid) => (Scope::Tree(*pid), Some(Scope::Threads(*pid))),
        Source::Cgroup(dir) => (Scope::Cgroup(dir.clone()), None),
        Source::CgroupLess(dir, pid) => (Scope::Cgroup(dir.clone()), Some(Scope::Threads(*pid))),
    }
}

/// One tier's tracers.
struct TierTracer {
    all: ScopeTracer,
    less: Option<ScopeTracer>,
}

impl TierTracer {
    fn prepare(source: &Source, method: Method) -> Result<TierTracer, String> {
        let (all, less) = scopes(source);
        if less.is_some() && method == Method::Strace {
            // The server would need two tracers, and a process has one.
            return Err(
                "strace cannot count flint serve's CGI programs apart from flint serve \
                        (a process has one tracer): --profile-method perf counts them"
                    .to_owned(),
            );
        }
        Ok(TierTracer {
            all: ScopeTracer::prepare(all, method).map_err(|e| e.to_string())?,
            less: (less.map(|s| ScopeTracer::prepare(s, method)))
                .transpose()
                .map_err(|e| e.to_string())?,
        })
    }

    fn start(&mut self) -> Result<(), String> {
        self.all.start().map_err(|e| e.to_string())?;
        if let Some(l) = &mut self.less {
            l.start().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn stop(self) -> Result<Counts, String> {
        let all = self.all.stop().map_err(|e| e.to_string());
        let less = self.less.map(|l| l.stop().map_err(|e| e.to_string()));
        match less {
            None => all,
            Some(less) => Ok(all?.less(&less?)),
        }
    }
}

/// The bench observer of a traced run: starts every tier's tracers when the window opens,
/// stops them when it closes.
pub(super) struct SyscallWindow {
    tracers: Mutex<Vec<Result<TierTracer, String>>>,
    counted: Mutex<Vec<Result<Counts, String>>>,
}

impl SyscallWindow {
    /// Every tier of `tiers` (web, app, db, as [`Tiers::read`] orders them) made ready.
    pub fn prepare(tiers: &Tiers, method: Method) -> SyscallWindow {
        let sources = std::iter::once(&tiers.web).chain(tiers.app.iter().chain(&tiers.db));
        SyscallWindow {
            tracers: Mutex::new(sources.map(|s| TierTracer::prepare(s, method)).collect()),
            counted: Mutex::new(Vec::new()),
        }
    }

    /// Each tier's counts, or why it has none.
    pub fn finish(self) -> Vec<Result<Counts, String>> {
        let counted = self.counted.into_inner().unwrap_or_else(|p| p.into_inner());
        if !counted.is_empty() {
            return counted;
        }
        // The window never closed: each tracer is dropped (detached, bounded) unread.
        let tracers = self.tracers.into_inner().unwrap_or_else(|p| p.into_inner());
        (tracers.into_iter())
            .map(|t| t.and(Err("the window never closed".to_owned())))
            .collect()
    }
}

impl Observer for SyscallWindow {
    fn window_started(&self) {
        let mut tracers = self.tracers.lock().unwrap_or_else(|p| p.into_inner());
        for t in tracers.iter_mut() {
            if let Ok(tracer) = t {
                if let Err(e) = tracer.start() {
                    *t = Err(e);
                }
            }
        }
    }

    fn window_ended(&self) {
        let tracers = std::mem::take(&mut *self.tracers.lock().unwrap_or_else(|p| p.into_inner()));
        let counted = tracers.into_iter().map(|t| t?.stop()).collect();
        *self.counted.lock().unwrap_or_else(|p| p.into_inner()) = counted;
    }
}

/// Puts the traced run's counts on `row`: its requests and rate, and each tier's syscalls (per
/// request, and by syscall). The row's syscalls per request are the tiers' sum, when every
/// tier was counted. Returns why tiers were not counted.
pub(super) fn set_syscalls(
    row: &mut ResultRow,
    method: Method,
    run: &bench::RunResult,
    counted: Vec<Result<Counts, String>>,
) -> Vec<String> {
    let requests = run.stats.requests;
    row.profile_method = Some(method.to_string());
    row.traced_requests = Some(requests);
    let secs = run.duration.as_secs_f64();
    row.traced_requests_per_s = (secs > 0.0).then(|| requests as f64 / secs);
    let mut why = Vec::new();
    let Some(tiers) = row.tiers.as_mut().filter(|_| requests > 0) else {
        return why;
    };
    let mut all = Some(0.0);
    for (tier, counts) in tiers.iter_mut().zip(counted) {
        match counts {
            Ok(c) => {
                let per = c.total_calls as f64 / requests as f64;
                tier.syscalls_per_request = Some(per);
                all = all.map(|a| a + per);
                tier.syscalls = Some(
                    (c.rows.iter())
                        .map(|r| results::SyscallCount {
                            name: r.name.clone(),
                            calls: r.calls,
                            errors: r.errors,
                            seconds: r.seconds,
                        })
                        .collect(),
                );
                why.extend(c.notes);
            }
            Err(e) => {
                all = None;
                why.push(format!("{} tier: {e}", tier.tier));
            }
        }
    }
    row.syscalls_per_request = all;
    why
}

/// Rows of the truss table before the rest is summed as `(others)`.
const TABLE_ROWS: usize = 16;

/// The truss table by tier: per syscall, calls per request in each tier and in all, most
/// first; `None` when no tier was counted.
pub(super) fn truss_by_tier(row: &ResultRow) -> Option<String> {
    let requests = row.traced_requests.filter(|n| *n > 0)? as f64;
    let tiers: Vec<_> = row.tiers.iter().flatten().collect();
    if tiers.iter().all(|t| t.syscalls.is_none()) {
        return None;
    }
    let mut by_name: BTreeMap<&str, Vec<Option<u64>>> = BTreeMap::new();
    for (i, t) in tiers.iter().enumerate() {
        for s in t.syscalls.iter().flatten() {
            let cells = by_name
                .entry(s.name.as_str())
                .or_insert_with(|| vec![None; tiers.len()]);
            cells[i] = Some(s.calls);
        }
    }
    let total = |cells: &[Option<u64>]| cells.iter().flatten().sum::<u64>();
    let mut names: Vec<(&str, Vec<Option<u64>>)> = by_name.into_iter().collect();
    names.sort_by(|a, b| total(&b.1).cmp(&total(&a.1)).then(a.0.cmp(b.0)));
    let mut headers = vec!["syscall".to_owned()];
    headers.extend(tiers.iter().map(|t| format!("{} /req", t.tier)));
    headers.push("all /req".to_owned());
    let mut t = table::Table::new(headers);
    let per = |n: Option<u64>| table::num(n.map(|n| n as f64 / requests));
    let mut others = vec![None; tiers.len()];
    for (i, (name, cells)) in names.iter().enumerate() {
        if i < TABLE_ROWS {
            let mut line = vec![(*name).to_owned()];
            line.extend(cells.iter().map(|c| per(*c)));
            line.push(per(Some(total(cells))));
            t.row(line);
        } else {
            for (o, c) in others.iter_mut().zip(cells) {
                if let Some(c) = c {
                    *o = Some(o.unwrap_or(0) + c);
                }
            }
        }
    }
    if names.len() > TABLE_ROWS {
        let mut line = vec![format!("({} others)", names.len() - TABLE_ROWS)];
        line.extend(others.iter().map(|c| per(*c)));
        line.push(per(Some(total(&others))));
        t.row(line);
    }
    let mut line = vec!["total".to_owned()];
    line.extend(tiers.iter().map(|t| table::num(t.syscalls_per_request)));
    line.push(table::num(row.syscalls_per_request));
    t.row(line);
    Some(t.render())
}
