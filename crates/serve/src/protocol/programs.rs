//! The programs, FastCGI requests and proxied requests (`crate::gateway`, each a [`Source`])
//! answering one side's requests, protocol-neutral: started when the side asks (a program by
//! the loop's spawner thread, handed back when it runs), their bytes moved each time the side
//! is driven (their pipes and pidfds are registered under its token, a pooled socket under a
//! pool slot routed to it), ended when their output is done and they have exited (or the
//! application ended the request), or past their wall time.
//!
//! A side is what a protocol offers its gateway requests ([`Side`]): a TCP connection's
//! session (HTTP/1.1 or HTTP/2, `protocol/gateway_seam.rs`, driven from `conn.rs`) or the
//! thread's HTTP/3 connections (`protocol/h3/gateway.rs`, driven from `udp.rs`). The same
//! code moves the bytes for each: only the side's request body, room and response differ.

use std::io::{self, Write};
use std::time::Instant;

use crate::gateway::head::HeadError;
use crate::gateway::label::RequestLabel;
use crate::gateway::spawner::Spawned;
use crate::gateway::{proxy, Finished, Launch, Source};
use crate::protocol::{GatewayEnd, Worker};

/// What a protocol offers the requests its gateways answer, by request id.
pub(crate) trait Side {
    /// A request's id on this side (an HTTP/2 stream id, 0 on HTTP/1.1; an HTTP/3 request).
    type Id: Copy;
    /// What the side's calls need besides the worker (a connection's buffer pool, or nothing).
    type Ctx;
    /// Whether request `id` still wants its program (false once the client reset it).
    fn gateway_alive(&self, id: Self::Id) -> bool;
    /// Request body bytes received for `id` and not yet handed to its program (the side may
    /// read more from its client here).
    fn gateway_body(&mut self, id: Self::Id) -> &[u8];
    /// The whole request body of `id` has been handed over.
    fn gateway_body_done(&self, id: Self::Id) -> bool;
    /// `n` bytes of [`Side::gateway_body`] were taken, at `now`.
    fn gateway_body_taken(&mut self, id: Self::Id, n: usize, now: Instant);
    /// Whether to read `id`'s program output now (its response has room for it).
    fn gateway_wants_output(&self, id: Self::Id) -> bool;
    /// Output of `id`'s program: its head checked, then its body.
    fn gateway_output(
        &mut self,
        id: Self::Id,
        data: &[u8],
        w: &mut Worker,
        ctx: &mut Self::Ctx,
    ) -> Result<(), HeadError>;
    /// `id`'s program is done: its response finished, cut, or replaced by an error.
    fn gateway_end(&mut self, id: Self::Id, end: GatewayEnd, w: &mut Worker, ctx: &mut Self::Ctx);
}

/// One side's running sources, by request, and the token their events come under.
#[derive(Debug)]
pub(crate) struct Programs<Id> {
    /// Each source with its request's id and label: the label is kept here alone, lent to the
    /// source's calls that may log a failure (a proxied request's own lines name it too).
    pub list: Vec<(Id, Source, RequestLabel)>,
    /// The side's token: a program's pipes are registered under `token | PROGRAM_TOKEN`, a
    /// pooled connection's slot routes to it.
    pub token: usize,
}

impl<Id: Copy> Programs<Id> {
    pub fn new(token: usize) -> Programs<Id> {
        Programs {
            list: Vec::new(),
            token,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Shutdown: every running program's process group gets SIGKILL. Each then ends as a
    /// program killed does (its pidfd and pipes say so): its response cut, or a 502 if nothing
    /// of it was sent. FastCGI and proxied requests are left to finish within the grace.
    pub fn kill_all(&mut self) {
        for (_, source, _) in &mut self.list {
            if let Source::Program(p) = source {
                p.kill_at_shutdown();
            }
        }
    }

    /// Starts the programs the side asked for (`launches`, emptied); a start that fails
    /// answers 500 (503 when the system is short of processes or memory).
    pub fn start_all<S: Side<Id = Id>>(
        &mut self,
        launches: &mut Vec<(Id, Launch)>,
        side: &mut S,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) {
        for (id, launch) in launches.drain(..) {
            self.start_program(side, id, launch, w, ctx);
        }
    }

    fn start_program<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        id: Id,
        launch: Launch,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) {
        let Some(g) = w.gateways.as_mut() else {
            return;
        };
        let request = launch.request;
        if let Some(fwd) = launch.proxy {
            let mount = fwd.mount;
            w.stats.proxy_forwarded_malformed += u64::from(fwd.forwarded_malformed);
            let started = g.start_proxy(fwd, launch.body, self.token, w.now);
            // Peeks of pooled connections found closed as they were taken: reads for the proxy
            // too, whether the request started or not.
            w.stats.proxy_reads += g.take_dropped_peeks();
            match started {
                // Connections are counted as they end (`end_program`), once they connected.
                Ok((x, _reused, retried)) => {
                    w.stats.proxy_retries += u64::from(retried);
                    self.list.push((id, Source::Proxy(Box::new(x)), request));
                }
                Err(e) => {
                    g.release_for(Some(mount));
                    w.stats.proxy_refused += 1;
                    let _ = writeln!(
                        io::stderr(),
                        "flint serve: proxy: cannot connect: {e} (502), {request}"
                    );
                    side.gateway_end(id, GatewayEnd::NotStarted(502), w, ctx);
                }
            }
            return;
        }
        let deadline = w.now + g.limits.timeout;
        if let Some(app) = launch.app {
            match g.start_fastcgi(launch, app, self.token, deadline) {
                Ok((x, reused)) => {
                    w.stats.fastcgi_connects += u64::from(!reused);
                    self.list.push((id, Source::FastCgi(Box::new(x)), request));
                }
                Err(e) => {
                    // Down or refusing: nothing of the request reached it.
                    g.release();
                    w.stats.fastcgi_failures += 1;
                    let _ = writeln!(
                        io::stderr(),
                        "flint serve: FastCGI {}: cannot connect: {e} (502), {request}",
                        g.app_name(app)
                    );
                    let end = GatewayEnd::NotStarted(502);
                    side.gateway_end(id, end, w, ctx);
                }
            }
            return;
        }
        // A program starts on the spawner thread: the connection holds its ticket until it
        // runs (`program_spawned`).
        match g.start_program(launch, self.token, deadline) {
            Ok(starting) => self.list.push((id, Source::Starting(starting), request)),
            Err((e, program)) => {
                g.release();
                self.not_started(side, id, (&program, &request), e, w, ctx);
            }
        }
    }

    /// What the spawner thread made of a program this connection asked for: the program, its
    /// pipes registered, now answers the request (or its start failed: 500, 503 when the
    /// system is short of processes or memory). Given back if no request of the connection
    /// waits for it any more (given up meanwhile; the slot may even hold another connection).
    pub fn program_spawned<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        s: Spawned,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) -> Option<Spawned> {
        let ticket = s.ticket;
        let waiting = |(_, src, _): &(Id, Source, RequestLabel)| match src {
            Source::Starting(st) => st.ticket == ticket,
            _ => false,
        };
        let Some(k) = self.list.iter().position(waiting) else {
            return Some(s);
        };
        let Some(g) = w.gateways.as_mut() else {
            return Some(s);
        };
        let deadline = self.list[k].1.deadline();
        let name = match &mut self.list[k].1 {
            Source::Starting(st) => std::mem::take(&mut st.name),
            _ => unreachable!("found as starting"),
        };
        let failed = match s.result {
            Ok(started) => match g.program_ready(started, name, self.token, deadline) {
                Ok(p) => {
                    w.stats.cgi_starts += 1;
                    self.list[k].1 = Source::Program(p);
                    return None;
                }
                // Retired (killed) by `program_ready`: its slot comes back when it is reaped.
                Err(e) => e,
            },
            Err(e) => {
                g.release();
                e
            }
        };
        let (id, _, request) = self.list.swap_remove(k);
        self.not_started(side, id, (&s.program, &request), failed, w, ctx);
        None
    }

    /// A program that did not start: counted, logged, and its request answered 500 (503 when
    /// the system is short of processes or memory).
    fn not_started<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        id: Id,
        (program, request): (&std::path::Path, &RequestLabel),
        failed: io::Error,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) {
        w.stats.cgi_start_failures += 1;
        let _ = writeln!(
            io::stderr(),
            "flint serve: {}: cannot start: {failed}, {request}",
            program.display()
        );
        let status = crate::resolve::io_status(&failed, 500);
        side.gateway_end(id, GatewayEnd::NotStarted(status), w, ctx);
    }

    /// The earliest wall-time deadline of the connection's programs.
    pub fn programs_due(&self) -> Option<Instant> {
        self.list.iter().map(|(_, p, _)| p.deadline()).min()
    }

    /// Kills the programs past their wall time (the sweep's part).
    pub fn expire_programs<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) {
        let mut k = 0;
        while k < self.list.len() {
            if w.now >= self.list[k].1.deadline() {
                let (id, request) = (self.list[k].0, self.list[k].2);
                let _ = writeln!(
                    io::stderr(),
                    "flint serve: {}: timed out, {request}",
                    Who(&self.list[k].1)
                );
                match (&self.list[k].1, w.gateways.as_mut()) {
                    (Source::Proxy(x), Some(g)) => {
                        w.stats.proxy_timeouts += 1;
                        // Silent on a connection it opened, while the client had room for the
                        // answer: the address is at fault. A pooled connection's slow answer
                        // is its request's (the address answered the one before), and an
                        // answer never read because the client reads nothing is the client's.
                        if x.silent() && !x.reused && side.gateway_wants_output(id) {
                            g.proxy_failed(x, w.now);
                        }
                    }
                    _ => w.stats.cgi_timeouts += 1,
                }
                self.end_program(side, k, GatewayEnd::TimedOut, w, ctx);
            } else {
                k += 1;
            }
        }
    }

    /// Moves every program's bytes as far as they go without blocking; true if anything moved
    /// (the driver loops again).
    pub fn pump<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) -> bool {
        let mut moved = false;
        let mut k = 0;
        while k < self.list.len() {
            let id = self.list[k].0;
            if !side.gateway_alive(id) {
                // Its stream was reset by the client: nobody wants its output.
                let (_, p, _) = self.list.swap_remove(k);
                retire(p, true, w);
                moved = true;
                continue;
            }
            if matches!(self.list[k].1, Source::Starting(_)) {
                // Nothing to move until the spawner has started it.
                k += 1;
                continue;
            }
            let (m, end) = self.pump_one(side, k, w, ctx);
            moved |= m;
            match end {
                Some(end) => self.end_program(side, k, end, w, ctx),
                None => k += 1,
            }
        }
        moved
    }

    /// One program: request body to its stdin, its stdout into the response while the
    /// response has room (`OUTPUT_WINDOW`), its stderr to the log. Returns whether anything
    /// moved, and how its part ended if it did (stdout closed and exited, a bad head, the
    /// output limit).
    fn pump_one<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        k: usize,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) -> (bool, Option<GatewayEnd>) {
        // The thread's buffer, lent for this pass (`w` is needed mutably while it is read).
        let Some(mut buf) = w.gateways.as_mut().map(|g| g.lend_stdout()) else {
            return (false, None);
        };
        let passed = self.pump_one_with(side, k, &mut buf, w, ctx);
        if let Some(g) = w.gateways.as_mut() {
            g.return_stdout(buf);
        }
        passed
    }

    /// [`Conn::pump_one`] with the buffer stdout is read into.
    fn pump_one_with<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        k: usize,
        buf: &mut [u8],
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) -> (bool, Option<GatewayEnd>) {
        let (id, p, request) = &mut self.list[k];
        let (id, request) = (*id, &*request);
        let mut moved = false;
        loop {
            let body = side.gateway_body(id);
            if body.is_empty() {
                if side.gateway_body_done(id) && p.has_stdin() {
                    p.close_stdin();
                }
                break;
            }
            if !p.has_stdin() {
                // The program closed its stdin early: the rest of the body is dropped.
                let n = body.len();
                side.gateway_body_taken(id, n, w.now);
                moved = true;
                continue;
            }
            match p.write_stdin(body, request) {
                Ok(n) => {
                    side.gateway_body_taken(id, n, w.now);
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => p.close_stdin(),
            }
        }
        p.send_pending(request);
        let limit = w
            .gateways
            .as_ref()
            .map_or(u64::MAX, |g| g.limits.max_output);
        while side.gateway_wants_output(id) && !p.stdout_done() {
            match p.read_stdout(buf, request) {
                Ok(0) => moved = true,
                Ok(n) => {
                    moved = true;
                    if p.output() > limit {
                        w.stats.cgi_output_limits += 1;
                        return (true, Some(GatewayEnd::OutputLimit));
                    }
                    if let Err(e) = side.gateway_output(id, &buf[..n], w, ctx) {
                        // A proxied response's head refused here is the upstream's fault, and
                        // counted as its other bad responses are.
                        match p {
                            Source::Proxy(_) => w.stats.proxy_bad_responses += 1,
                            _ => w.stats.cgi_bad_heads += 1,
                        }
                        let _ = writeln!(
                            io::stderr(),
                            "flint serve: {}: a response head: {e} (502), {request}",
                            Who(p)
                        );
                        return (true, Some(GatewayEnd::BadHead));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    match (&mut *p, w.gateways.as_mut()) {
                        (Source::FastCgi(x), Some(g)) => {
                            if x.may_retry() && g.retry_fastcgi(x).is_ok() {
                                w.stats.fastcgi_connects += 1;
                                w.stats.fastcgi_retries += 1;
                                moved = true;
                                continue;
                            }
                            w.stats.fastcgi_failures += 1;
                        }
                        (Source::Proxy(x), Some(g)) => {
                            // The connection given up, counted if it was one (a refused
                            // connect is none); the new one is counted when it ends.
                            let opened = x.opened();
                            if g.retry_proxy(x, request, w.now).is_ok() {
                                w.stats.proxy_connects += u64::from(opened);
                                w.stats.proxy_retries += 1;
                                moved = true;
                                continue;
                            }
                            count_proxy_failure(x, g, w.now, &mut w.stats);
                        }
                        _ => {}
                    }
                    return (true, Some(GatewayEnd::Died));
                }
            }
        }
        p.pass_ended();
        if let Source::Proxy(x) = p {
            x.progress(w.now);
        }
        w.stats.cgi_stderr_bytes += p.drain_stderr();
        if !p.stdout_done() {
            return (moved, None);
        }
        match p.finished() {
            None => (moved, None), // its pidfd (or the sweep) says when it has exited
            Some(Finished::Died) => {
                match p {
                    Source::Program(p) if p.killed_at_shutdown => {
                        w.stats.cgi_killed_at_shutdown += 1;
                    }
                    Source::Program(_) => w.stats.cgi_died += 1,
                    Source::FastCgi(_) => w.stats.fastcgi_failures += 1,
                    // A proxy's failure is counted where it failed; a program being started
                    // never finishes.
                    Source::Proxy(_) | Source::Starting(_) => {}
                }
                (true, Some(GatewayEnd::Died))
            }
            Some(Finished::Complete) => {
                if let Source::Proxy(x) = p {
                    w.stats.proxy_overlong += u64::from(x.overlong);
                }
                (true, Some(GatewayEnd::Complete))
            }
        }
    }

    /// The connection is closing: its programs are killed, their requests logged as
    /// abandoned.
    pub fn abandon_programs<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) {
        while !self.list.is_empty() {
            self.end_program(side, 0, GatewayEnd::Abandoned, w, ctx);
        }
    }

    /// Ends program `k`'s part: its response finished or cut (`Session::gateway_end`), the
    /// program killed unless it ended by itself, and handed to the reaper.
    fn end_program<S: Side<Id = Id>>(
        &mut self,
        side: &mut S,
        k: usize,
        end: GatewayEnd,
        w: &mut Worker,
        ctx: &mut S::Ctx,
    ) {
        let (id, p, _) = self.list.swap_remove(k);
        side.gateway_end(id, end, w, ctx);
        let kill = !matches!(end, GatewayEnd::Complete | GatewayEnd::Died);
        retire(p, kill, w);
    }
}

/// Hands a source no request needs any more to the gateways (`Gateways::retire_source`), an
/// upstream or application exchange's connect and reads counted first: however its request
/// ended (its response done, cut, or its HTTP/2 or HTTP/3 stream reset), they happened.
fn retire(p: Source, kill: bool, w: &mut Worker) {
    match &p {
        Source::Proxy(x) => {
            w.stats.proxy_connects += u64::from(x.opened());
            w.stats.proxy_reads += x.reads;
        }
        Source::FastCgi(x) => w.stats.fastcgi_reads += x.reads,
        Source::Program(_) | Source::Starting(_) => {}
    }
    if let Some(g) = w.gateways.as_mut() {
        g.retire_source(p, kill, w.now);
    }
}

/// A proxied request that failed, counted by kind; an address that refused or reset a new
/// connection before answering is marked failed.
fn count_proxy_failure(
    x: &proxy::Exchange,
    g: &mut crate::gateway::Gateways,
    now: Instant,
    stats: &mut crate::stats::ServerStats,
) {
    match x.failure {
        Some(proxy::Failure::Refused) => stats.proxy_refused += 1,
        Some(proxy::Failure::Reset) => stats.proxy_resets += 1,
        Some(proxy::Failure::BadResponse) => stats.proxy_bad_responses += 1,
        Some(proxy::Failure::Tls) => stats.proxy_tls_failures += 1,
        None => {}
    }
    let refused = matches!(
        x.failure,
        Some(proxy::Failure::Refused | proxy::Failure::Reset)
    );
    // A pooled connection failing says nothing of its address; a new one refused or reset does.
    if refused && x.silent() && !x.reused {
        g.proxy_failed(x, now);
    }
}

/// What answers a request, as its failure's error-log line names it: the program's path, the
/// FastCGI application, or the proxy's upstream.
struct Who<'a>(&'a Source);

impl std::fmt::Display for Who<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Source::Program(p) => f.write_str(p.name()),
            Source::Starting(st) => write!(f, "{} (starting)", st.name),
            Source::FastCgi(x) => write!(f, "FastCGI {}", x.name),
            Source::Proxy(x) => write!(f, "proxy {}", x.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::Starting;

    #[test]
    fn a_program_still_starting_is_named_by_its_path() {
        let starting = Source::Starting(Starting {
            ticket: 7,
            deadline: Instant::now(),
            name: "/srv/cgi-bin/report".into(),
        });
        assert_eq!(Who(&starting).to_string(), "/srv/cgi-bin/report (starting)");
    }
}
