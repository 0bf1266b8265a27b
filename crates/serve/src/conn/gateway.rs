//! A connection's programs and FastCGI requests (`crate::gateway`, each a [`Source`]): started
//! when its session asks (a program by the loop's spawner thread, handed back when it runs),
//! their bytes moved each time the connection is driven (their pipes and pidfds are registered
//! under its token, a FastCGI socket under a pool slot routed to it), ended when their output
//! is done and they have exited (or the application ended the request), or past their wall
//! time.

use std::io::{self, Write};
use std::time::Instant;

use http2::StreamId;

use super::Conn;
use crate::gateway::spawner::Spawned;
use crate::gateway::{proxy, Finished, Launch, Source};
use crate::pool::Pool;
use crate::protocol::{GatewayEnd, Worker};
use crate::transport::Transport;

impl<T: Transport> Conn<T> {
    /// Starts the programs the session asked for; a start that fails answers 500 (503 when
    /// the system is short of processes or memory).
    pub(super) fn start_programs(&mut self, w: &mut Worker, pool: &mut Pool) {
        let mut launches = std::mem::take(&mut self.session.launches);
        for (id, launch) in launches.drain(..) {
            self.start_program(id, launch, w, pool);
        }
        // The list goes back, its room kept for the next requests, unless a start asked for
        // more meanwhile.
        if self.session.launches.is_empty() {
            self.session.launches = launches;
        }
    }

    fn start_program(&mut self, id: StreamId, launch: Launch, w: &mut Worker, pool: &mut Pool) {
        let Some(g) = w.gateways.as_mut() else {
            return;
        };
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
                    self.programs.push((id, Source::Proxy(Box::new(x))));
                }
                Err(e) => {
                    g.release_for(Some(mount));
                    w.stats.proxy_refused += 1;
                    let _ = writeln!(
                        io::stderr(),
                        "flint serve: proxy: cannot connect: {e} (502)"
                    );
                    self.session
                        .gateway_end(id, GatewayEnd::NotStarted(502), w, pool);
                }
            }
            return;
        }
        let deadline = w.now + g.limits.timeout;
        if let Some(app) = launch.app {
            match g.start_fastcgi(launch, app, self.token, deadline) {
                Ok((x, reused)) => {
                    w.stats.fastcgi_connects += u64::from(!reused);
                    self.programs.push((id, Source::FastCgi(Box::new(x))));
                }
                Err(e) => {
                    // Down or refusing: nothing of the request reached it.
                    g.release();
                    w.stats.fastcgi_failures += 1;
                    let _ = writeln!(
                        io::stderr(),
                        "flint serve: FastCGI {}: cannot connect: {e} (502)",
                        g.app_name(app)
                    );
                    let end = GatewayEnd::NotStarted(502);
                    self.session.gateway_end(id, end, w, pool);
                }
            }
            return;
        }
        // A program starts on the spawner thread: the connection holds its ticket until it
        // runs (`program_spawned`).
        match g.start_program(launch, self.token, deadline) {
            Ok(starting) => self.programs.push((id, Source::Starting(starting))),
            Err((e, program)) => {
                g.release();
                self.not_started(id, &program, e, w, pool);
            }
        }
    }

    /// What the spawner thread made of a program this connection asked for: the program, its
    /// pipes registered, now answers the request (or its start failed: 500, 503 when the
    /// system is short of processes or memory). Given back if no request of the connection
    /// waits for it any more (given up meanwhile; the slot may even hold another connection).
    pub fn program_spawned(
        &mut self,
        s: Spawned,
        w: &mut Worker,
        pool: &mut Pool,
    ) -> Option<Spawned> {
        let ticket = s.ticket;
        let waiting = |(_, src): &(StreamId, Source)| match src {
            Source::Starting(st) => st.ticket == ticket,
            _ => false,
        };
        let Some(k) = self.programs.iter().position(waiting) else {
            return Some(s);
        };
        let Some(g) = w.gateways.as_mut() else {
            return Some(s);
        };
        let deadline = self.programs[k].1.deadline();
        let failed = match s.result {
            Ok(started) => match g.program_ready(started, &s.program, self.token, deadline) {
                Ok(p) => {
                    w.stats.cgi_starts += 1;
                    self.programs[k].1 = Source::Program(p);
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
        let (id, _) = self.programs.swap_remove(k);
        self.not_started(id, &s.program, failed, w, pool);
        None
    }

    /// A program that did not start: counted, logged, and its request answered 500 (503 when
    /// the system is short of processes or memory).
    fn not_started(
        &mut self,
        id: StreamId,
        program: &std::path::Path,
        failed: io::Error,
        w: &mut Worker,
        pool: &mut Pool,
    ) {
        w.stats.cgi_start_failures += 1;
        let _ = writeln!(
            io::stderr(),
            "flint serve: {}: cannot start: {failed}",
            program.display()
        );
        let status = if crate::resolve::is_resource_error(&failed) {
            503
        } else {
            500
        };
        self.session
            .gateway_end(id, GatewayEnd::NotStarted(status), w, pool);
    }

    /// The earliest wall-time deadline of the connection's programs.
    pub(super) fn programs_due(&self) -> Option<Instant> {
        self.programs.iter().map(|(_, p)| p.deadline()).min()
    }

    /// Kills the programs past their wall time (the sweep's part).
    pub fn expire_programs(&mut self, w: &mut Worker, pool: &mut Pool) {
        let mut k = 0;
        while k < self.programs.len() {
            if w.now >= self.programs[k].1.deadline() {
                let id = self.programs[k].0;
                match (&self.programs[k].1, w.gateways.as_mut()) {
                    (Source::Proxy(x), Some(g)) => {
                        w.stats.proxy_timeouts += 1;
                        let _ = writeln!(io::stderr(), "flint serve: proxy {}: timed out", x.name);
                        // Silent on a connection it opened, while the client had room for the
                        // answer: the address is at fault. A pooled connection's slow answer
                        // is its request's (the address answered the one before), and an
                        // answer never read because the client reads nothing is the client's.
                        if x.silent() && !x.reused && self.session.gateway_wants_output(id) {
                            g.proxy_failed(x, w.now);
                        }
                    }
                    _ => w.stats.cgi_timeouts += 1,
                }
                self.end_program(k, GatewayEnd::TimedOut, w, pool);
            } else {
                k += 1;
            }
        }
    }

    /// Moves every program's bytes as far as they go without blocking; true if anything moved
    /// (the driver loops again).
    pub(super) fn pump(&mut self, w: &mut Worker, pool: &mut Pool) -> bool {
        let mut moved = false;
        let mut k = 0;
        while k < self.programs.len() {
            let id = self.programs[k].0;
            if !self.session.gateway_alive(id) {
                // Its stream was reset by the client: nobody wants its output.
                let (_, p) = self.programs.swap_remove(k);
                retire(p, true, w);
                moved = true;
                continue;
            }
            if matches!(self.programs[k].1, Source::Starting(_)) {
                // Nothing to move until the spawner has started it.
                k += 1;
                continue;
            }
            let (m, end) = self.pump_one(k, w, pool);
            moved |= m;
            match end {
                Some(end) => self.end_program(k, end, w, pool),
                None => k += 1,
            }
        }
        moved
    }

    /// One program: request body to its stdin, its stdout into the response while the
    /// response has room (`OUTPUT_WINDOW`), its stderr to the log. Returns whether anything
    /// moved, and how its part ended if it did (stdout closed and exited, a bad head, the
    /// output limit).
    fn pump_one(
        &mut self,
        k: usize,
        w: &mut Worker,
        pool: &mut Pool,
    ) -> (bool, Option<GatewayEnd>) {
        // The thread's buffer, lent for this pass (`w` is needed mutably while it is read).
        let Some(mut buf) = w.gateways.as_mut().map(|g| g.lend_stdout()) else {
            return (false, None);
        };
        let passed = self.pump_one_with(k, &mut buf, w, pool);
        if let Some(g) = w.gateways.as_mut() {
            g.return_stdout(buf);
        }
        passed
    }

    /// [`Conn::pump_one`] with the buffer stdout is read into.
    fn pump_one_with(
        &mut self,
        k: usize,
        buf: &mut [u8],
        w: &mut Worker,
        pool: &mut Pool,
    ) -> (bool, Option<GatewayEnd>) {
        let (id, p) = (self.programs[k].0, &mut self.programs[k].1);
        let mut moved = false;
        loop {
            let body = self.session.gateway_body(id);
            if body.is_empty() {
                if self.session.gateway_body_done(id) && p.has_stdin() {
                    p.close_stdin();
                }
                break;
            }
            if !p.has_stdin() {
                // The program closed its stdin early: the rest of the body is dropped.
                let n = body.len();
                self.session.gateway_body_taken(id, n);
                moved = true;
                continue;
            }
            match p.write_stdin(body) {
                Ok(n) => {
                    self.session.gateway_body_taken(id, n);
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => p.close_stdin(),
            }
        }
        p.send_pending();
        let limit = w
            .gateways
            .as_ref()
            .map_or(u64::MAX, |g| g.limits.max_output);
        while self.session.gateway_wants_output(id) && !p.stdout_done() {
            match p.read_stdout(buf) {
                Ok(0) => moved = true,
                Ok(n) => {
                    moved = true;
                    if p.output() > limit {
                        w.stats.cgi_output_limits += 1;
                        return (true, Some(GatewayEnd::OutputLimit));
                    }
                    if let Err(e) = self.session.gateway_output(id, &buf[..n], w, pool) {
                        // A proxied response's head refused here is the upstream's fault, and
                        // counted as its other bad responses are.
                        if let Source::Proxy(x) = p {
                            w.stats.proxy_bad_responses += 1;
                            let _ = writeln!(
                                io::stderr(),
                                "flint serve: proxy {}: a response head: {e} (502)",
                                x.name
                            );
                        } else {
                            w.stats.cgi_bad_heads += 1;
                            let _ = writeln!(
                                io::stderr(),
                                "flint serve: a CGI response head: {e} (502)"
                            );
                        }
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
                            if g.retry_proxy(x, w.now).is_ok() {
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
    pub fn abandon_programs(&mut self, w: &mut Worker, pool: &mut Pool) {
        while !self.programs.is_empty() {
            self.end_program(0, GatewayEnd::Abandoned, w, pool);
        }
    }

    /// Ends program `k`'s part: its response finished or cut (`Session::gateway_end`), the
    /// program killed unless it ended by itself, and handed to the reaper.
    fn end_program(&mut self, k: usize, end: GatewayEnd, w: &mut Worker, pool: &mut Pool) {
        let (id, p) = self.programs.swap_remove(k);
        self.session.gateway_end(id, end, w, pool);
        let kill = !matches!(end, GatewayEnd::Complete | GatewayEnd::Died);
        retire(p, kill, w);
    }
}

/// Hands a source no request needs any more to the gateways (`Gateways::retire_source`),
/// an upstream or application exchange's connect and reads counted first: however its request ended (its
/// response done, cut, or its HTTP/2 stream reset), they happened.
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
