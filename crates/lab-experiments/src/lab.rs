//! What the experiments share while they run ([`Lab`]): the options, the document root, the
//! tracer, the servers' status and the rows so far; the progress and the notes printed; one
//! measurement run, a failure recorded against its server.

use crate::measure::{self, Load, Measurement};
use crate::{table, Experiment, LabOptions, ResultRow, ServerStatus, Status};
use lab_peers::{PeerKind, PeerSpec};
use lab_profile::{Method, Profile};
use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the experiments share while they run.
pub(crate) struct Lab<'a> {
    pub(crate) opts: &'a LabOptions,
    pub(crate) root: tempfile::TempDir,
    pub(crate) method: Option<Method>,
    pub(crate) servers: Vec<ServerStatus>,
    pub(crate) results: Vec<ResultRow>,
    /// The results: tables as they come.
    pub(crate) out: &'a mut dyn Write,
    /// Progress and warnings, so that a terminal is never silent while `out` goes to a file.
    pub(crate) progress: &'a mut dyn Write,
    pub(crate) stop: &'a AtomicBool,
    /// Measurements started, of `planned`.
    pub(crate) started: usize,
    pub(crate) planned: usize,
    /// Long notes and warnings already printed: each is printed once.
    pub(crate) said: HashSet<String>,
}

impl Lab<'_> {
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The servers of `experiment` that are installed.
    pub(crate) fn runnable(&self, experiment: Experiment) -> Vec<PeerKind> {
        self.opts
            .servers_for(experiment)
            .into_iter()
            .filter(|k| {
                self.servers
                    .iter()
                    .any(|s| s.kind == *k && s.status != Status::Missing)
            })
            .collect()
    }

    pub(crate) fn spec(&self, digest: bool, max_clients: usize) -> PeerSpec {
        PeerSpec {
            root: self.root.path().to_owned(),
            digest,
            max_clients,
            cpu: self.opts.server_cpu,
            flint_bin: self.opts.flint_bin.clone(),
            ready_timeout: Duration::from_secs(20),
            tls: None,
            http2: false,
            net: None,
        }
    }

    pub(crate) fn load(&self, clients: usize, http: bench::HttpMode) -> Load {
        Load {
            clients,
            per_client: 1,
            http,
            duration: self.opts.duration,
            warmup: self.opts.warmup,
            cpu: self.opts.client_cpu,
            pages: self.opts.pages,
        }
    }

    /// Records that `kind` failed (the first reason is kept, on one line: [`one_line`]) and says
    /// so on the progress stream. Only the first failure of a server is printed in full (with
    /// the server's log).
    pub(crate) fn failed(&mut self, kind: PeerKind, what: &str, why: &str) -> std::io::Result<()> {
        let first = why.lines().next().unwrap_or(why);
        match self.servers.iter_mut().find(|s| s.kind == kind) {
            Some(s) if s.status == Status::Ok => {
                s.status = Status::Failed;
                s.note = Some(format!("{what}: {}", one_line(why)));
                writeln!(self.progress, "flint lab: {kind}: {what}: {why}")
            }
            _ => writeln!(self.progress, "flint lab: {kind}: {what}: {first}"),
        }
    }

    /// Adds a row. One that ran and has no figures (not one response in its window) is a
    /// measurement that failed, so its server is `failed` with it as the reason unless an
    /// earlier one is there: `ok` is a server that was measured.
    pub(crate) fn push(&mut self, row: ResultRow) {
        if row.measured_nothing() && !row.interrupted {
            if let Some(why) = &row.unavailable {
                let note = format!("{}: {why}", row.what());
                if let Some(s) = (self.servers.iter_mut())
                    .find(|s| s.name == row.server && s.status == Status::Ok)
                {
                    s.status = Status::Failed;
                    s.note = Some(note);
                }
            }
        }
        self.results.push(row);
    }

    /// After Ctrl-C: the servers still `ok` with no row never had their turn, so they are
    /// `not_run`, not servers that were measured.
    pub(crate) fn not_reached(&mut self) {
        for s in &mut self.servers {
            if s.status == Status::Ok && !self.results.iter().any(|r| r.server == s.name) {
                s.status = Status::NotRun;
                s.note =
                    Some("not measured: the run was interrupted (Ctrl-C) before its turn".into());
            }
        }
    }

    /// `note: TEXT` on the results, the first time only.
    pub(crate) fn note(&mut self, text: &str) -> std::io::Result<()> {
        if self.said.insert(text.to_owned()) {
            writeln!(self.out, "note: {text}")?;
        }
        Ok(())
    }

    /// The profile's truss table, its notes printed once per run.
    pub(crate) fn truss(&mut self, p: &Profile, requests: u64, pages: u64) -> std::io::Result<()> {
        write!(self.out, "{}", p.truss_table_body(requests, pages))?;
        for note in &p.notes {
            self.note(note)?;
        }
        Ok(())
    }

    /// The client-limited footnote, under the first table that needs it.
    pub(crate) fn footnote(&mut self, needed: bool) -> std::io::Result<()> {
        if needed && self.said.insert(table::FOOTNOTE.to_owned()) {
            writeln!(self.out, "{}", table::FOOTNOTE)?;
        }
        Ok(())
    }

    /// Runs one measurement; a failure is recorded against the server and gives `None`, and so
    /// does a server that has died (its process has exited), without measuring. A measurement
    /// cut short by Ctrl-C is returned, marked interrupted (`m.run.interrupted`).
    pub(crate) fn measure(
        &mut self,
        peer: &mut lab_peers::Peer,
        workload: &bench::Workload,
        load: Load,
        what: &str,
    ) -> std::io::Result<Option<Measurement>> {
        self.measure_with(peer, load, what, |peer, method, stop| {
            measure::measure(peer, workload, load, method, stop)
        })
    }

    /// [`Lab::measure`] with the measurement itself given (`flint lab tls` measures over HTTPS).
    pub(crate) fn measure_with(
        &mut self,
        peer: &mut lab_peers::Peer,
        load: Load,
        what: &str,
        measure: impl FnOnce(
            &lab_peers::Peer,
            Option<Method>,
            &AtomicBool,
        ) -> Result<Measurement, measure::MeasureError>,
    ) -> std::io::Result<Option<Measurement>> {
        self.started += 1;
        let kind = peer.kind();
        let length = match load.pages {
            Some(n) => format!("{n} pages after {:.1} s warm-up", load.warmup.as_secs_f64()),
            None => format!("{:.1} s", (load.warmup + load.duration).as_secs_f64()),
        };
        writeln!(
            self.progress,
            "flint lab: [{}/{}] {kind} {what} ({length})",
            self.started, self.planned,
        )?;
        if let Some(how) = peer.exited() {
            self.failed(kind, what, &how)?;
            return Ok(None);
        }
        match measure(peer, self.method, self.stop) {
            Ok(m) => {
                if let Some(e) = &m.profile_error {
                    if self.said.insert(e.clone()) {
                        writeln!(self.progress, "flint lab: {kind}: {what}: profile: {e}")?;
                    } else {
                        writeln!(
                            self.progress,
                            "flint lab: {kind}: {what}: no profile (as above)"
                        )?;
                    }
                }
                if m.run.interrupted {
                    writeln!(
                        self.progress,
                        "flint lab: {kind}: {what}: interrupted after {:.1} s; not counted in \
                         the tables",
                        m.run.duration.as_secs_f64()
                    )?;
                }
                Ok(Some(m))
            }
            Err(e) => {
                self.failed(kind, what, &e.to_string())?;
                Ok(None)
            }
        }
    }
}

/// The last lines of a server's log a note keeps: where a server says why it stopped.
const NOTE_LOG_LINES: usize = 5;

/// A reason on one line, for the JSON's `note` and the report's table of servers: its first
/// line, then the last [`NOTE_LOG_LINES`] lines of what follows (a server's log, whose end says
/// why: nginx's `bind() ... failed (98: Address already in use)`), each trimmed, joined by
/// ` | `, `...` where lines were left out.
fn one_line(why: &str) -> String {
    let mut lines = why.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.collect();
    let tail = &rest[rest.len().saturating_sub(NOTE_LOG_LINES)..];
    match (tail.is_empty(), rest.len() > tail.len()) {
        (true, _) => first.to_owned(),
        (false, false) => format!("{first} {}", tail.join(" | ")),
        (false, true) => format!("{first} ... {}", tail.join(" | ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_failing_at_start_keeps_its_log_in_the_note() {
        let opts = LabOptions::new(None);
        let (mut out, mut progress) = (Vec::new(), Vec::new());
        let stop = AtomicBool::new(false);
        let mut lab = Lab {
            opts: &opts,
            root: tempfile::tempdir().unwrap(),
            method: None,
            servers: vec![ServerStatus {
                name: "nginx".into(),
                version: Some("nginx/1.22.1".into()),
                status: Status::Ok,
                note: None,
                kind: PeerKind::Nginx,
            }],
            results: Vec::new(),
            out: &mut out,
            progress: &mut progress,
            stop: &stop,
            started: 0,
            planned: 1,
            said: HashSet::new(),
        };
        let why = "nginx exited during start-up (exit status: 1); its log:\n\
                   nginx: [emerg] bind() to 127.0.0.1:80 failed (98: Address already in use)\n";
        lab.failed(PeerKind::Nginx, "start", why).unwrap();
        assert_eq!(lab.servers[0].status, Status::Failed);
        assert_eq!(
            lab.servers[0].note.as_deref(),
            Some(
                "start: nginx exited during start-up (exit status: 1); its log: nginx: [emerg] \
                 bind() to 127.0.0.1:80 failed (98: Address already in use)"
            )
        );
        // A later failure keeps the first reason.
        lab.failed(PeerKind::Nginx, "sizes 1 KB", "reset").unwrap();
        assert!(lab.servers[0]
            .note
            .as_deref()
            .unwrap()
            .starts_with("start: "));
    }

    #[test]
    fn a_long_log_leaves_its_last_lines_in_the_note() {
        // Where a server says why, and that some were left out.
        let log: Vec<String> = (1..=20).map(|n| format!("line {n}")).collect();
        let note = one_line(&format!("apache2 exited; its log:\n{}", log.join("\n")));
        assert_eq!(
            note,
            "apache2 exited; its log: ... line 16 | line 17 | line 18 | line 19 | line 20"
        );
        assert_eq!(one_line("reset"), "reset");
    }
}
