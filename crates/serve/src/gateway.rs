//! Programs that answer requests, run inside the event loop as the Flash server ran its CGI: a
//! program is one more source of events in the thread's epoll instance (its pipes and its pidfd
//! registered under its connection's token), never a thread, never a blocking wait.
//!
//! - [`Gateways`] is one thread's view of the configured gateways: which targets they claim
//!   (one `Option` check on the static path when none is configured), the programs running at
//!   once across the server (one shared count, checked per program start) and the children
//!   whose connection is done with them but which are not reaped yet.
//! - `cgi.rs` is CGI/1.1 (RFC 3875): the script a target names, its meta-variables, the start.
//! - `asked.rs` is what a protocol read of a request beyond `wire::Request` (method, protocol,
//!   fields), read by CGI's meta-variables and the proxy's request head alike.
//! - `spawner.rs` starts programs on a thread of its own, so that the loop never waits for an
//!   `execve`; the loop registers what it started.
//! - `program.rs` is a running program's I/O: body to stdin, stdout read only as fast as the
//!   client takes it, stderr to the error log, the exit seen through a pidfd.
//! - `process_group.rs` kills a program's process group (the spawner's and a program's kill).
//! - `head.rs` checks a program's response head before any of it reaches a client.
//!
//! - `upstream.rs` is the connections of the gateways that speak over a socket: a `Stream`
//!   (unix, TCP, or TLS to an `https://` upstream), the thread's `Pool` of idle ones and their
//!   slot tokens, the request `Buffers` it recycles.
//! - `fcgi.rs` is FastCGI: the same meta-variables sent as records over a pooled socket to an
//!   application, its FCGI_STDOUT read back as a program's stdout. Its sockets' events come
//!   under pool slot tokens (`upstream::POOL_TOKEN`), routed by [`Gateways::pool_event`].
//! - `proxy.rs` is the reverse proxy: the request sent as HTTP/1.1 to an upstream over a
//!   connection of the same pool (a group per upstream address), its response handed out as a
//!   CGI head and the body decoded.
//!
//! The files are layers, none importing a file that imports it: `cgi.rs` (whose [`Launch`]
//! carries a FastCGI or a proxied request) above `fcgi.rs` and `proxy.rs`, both above
//! `upstream.rs` and `asked.rs`; `program.rs` above `spawner.rs`, both above
//! `process_group.rs`; the configuration (`crate::config`) below them all.
//!
//! What a gateway produces is protocol-neutral: a status, checked fields and a body that
//! arrives later ([`Launch`] in, [`head::CgiHead`] and body bytes out); the protocol encodes it.
//! A [`Source`] is where those bytes come from (a program's pipes or a FastCGI connection): the
//! connection moves either the same way.

use std::process::Child;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::resolve::{self, Root};

pub(crate) mod asked;
pub(crate) mod cgi;
#[cfg(test)]
mod drop_tests;
pub mod fcgi;
pub mod head;
mod process_group;
pub(crate) mod program;
pub(crate) mod proxy;
mod scripts;
mod source;
pub(crate) mod spawner;
#[cfg(test)]
mod stray_tests;
pub(crate) mod upstream;

pub(crate) use cgi::Launch;
pub(crate) use program::Program;
pub(crate) use source::{Finished, Source, Starting};

use crate::config::{FastCgiAddr, FastCgiPattern};

/// The token bit that marks a program's pipe or pidfd: `token | PROGRAM_TOKEN` drives the
/// connection `token` without touching its socket's readiness.
pub(crate) const PROGRAM_TOKEN: usize = 1 << (usize::BITS - 2);

/// What a gateway says of a target.
#[derive(Debug)]
pub(crate) enum Route {
    /// A program to run, or a script for a FastCGI application (`Script::app`).
    Cgi(Rc<cgi::Script>),
    /// A request for this proxy mount's upstream.
    Proxy(usize),
    /// Claimed by a gateway but refused: this status (404 no such program, 403 not executable).
    Refused(u16),
}

impl Route {
    /// The proxy mount it names, if a proxy's: the slot its request takes is the mount's
    /// ([`Gateways::reserve_for`]).
    pub fn proxy_mount(&self) -> Option<usize> {
        match self {
            Route::Proxy(mount) => Some(*mount),
            _ => None,
        }
    }
}

/// The limits every program runs under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_programs: usize,
    pub timeout: Duration,
    pub max_output: u64,
}

/// A FastCGI application and the targets it answers.
struct App {
    pattern: FastCgiPattern,
    addr: FastCgiAddr,
    /// `addr` as written, for the error log.
    name: Rc<str>,
}

impl App {
    /// Whether a path segment may name one of its scripts (any segment, under a prefix).
    fn names_script(&self, seg: &[u8]) -> bool {
        match &self.pattern {
            FastCgiPattern::Extension(ext) => {
                seg.ends_with(ext.as_bytes()) && seg.len() > ext.len()
            }
            FastCgiPattern::Prefix(_) => true,
        }
    }

    /// Whether it answers the normalised target `key`.
    fn claims(&self, key: &[u8]) -> bool {
        match &self.pattern {
            FastCgiPattern::Extension(_) => {
                key.split(|&b| b == b'/').any(|seg| self.names_script(seg))
            }
            FastCgiPattern::Prefix(prefix) => key
                .strip_prefix(prefix.as_bytes())
                .is_some_and(|rest| rest.is_empty() || rest[0] == b'/'),
        }
    }
}

/// Bytes of a program's output read at once.
const STDOUT_BUF: usize = 16 * 1024;

/// One thread's gateways.
pub(crate) struct Gateways {
    mounts: Vec<(Box<[u8]>, Root)>,
    extensions: Vec<Box<[u8]>>,
    apps: Vec<App>,
    fcgi_pool: upstream::Pool,
    proxies: proxy::Proxies,
    /// A proxied response's head may take this many bytes (`max_header_bytes`).
    max_head: usize,
    doc_root: Root,
    hide_dotfiles: bool,
    pub limits: Limits,
    /// Programs running across the server (started, not yet reaped).
    running: Arc<AtomicUsize>,
    /// Programs this thread started and no connection holds any more, until reaped (killed
    /// past their deadline).
    retired: Vec<(Child, Instant)>,
    /// Starts this thread's programs (when programs are configured).
    spawner: Option<spawner::Spawner>,
    /// The normalised target, reused.
    key: Vec<u8>,
    /// Scripts found, per normalised target.
    scripts: scripts::Scripts,
    /// Room the meta-variables are made in, reused.
    scratch: cgi::Scratch,
    /// Room a program's (or upstream's) output is read into before it goes to its response:
    /// one per thread, lent to each pass of a connection's programs (`Gateways::lend_stdout`),
    /// so that no pass zeroes 16 KiB of stack.
    stdout_buf: Box<[u8]>,
    pub server_port: u16,
    pub https: bool,
    /// Shared with each FastCGI exchange, which asks for writability only while a write waits.
    pub registry: Rc<mio::Registry>,
}

impl std::fmt::Debug for Gateways {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateways")
            .field("mounts", &self.mounts.len())
            .field("retired", &self.retired.len())
            .finish()
    }
}

impl Gateways {
    /// `None` when no gateway is configured (the static path then checks nothing more). A
    /// mount's directory that cannot be used is an error at start.
    /// `waker` wakes this thread's loop: its spawner does, each time a program it started is
    /// there to take (`take_spawned`).
    pub fn new(
        config: &Config,
        running: Arc<AtomicUsize>,
        registry: mio::Registry,
        waker: Arc<mio::Waker>,
        server_port: u16,
    ) -> std::io::Result<Option<Box<Gateways>>> {
        let none = config.cgi.is_empty() && config.cgi_extensions.is_empty();
        if none && config.fastcgi.is_empty() && config.proxy.is_empty() {
            return Ok(None);
        }
        // Every job holds a program slot: a queue of `cgi_max_programs` never fills (bounded
        // for its memory all the same: past it a start is refused as the system's shortage).
        let spawner = match none {
            true => None,
            false => Some(spawner::Spawner::new(
                config.cgi_max_programs.min(4096),
                waker,
                "flint-spawner".to_string(),
            )?),
        };
        let mut fcgi_pool = upstream::Pool::new(config.fastcgi.len(), config.fastcgi_pool);
        fcgi_pool.cap_idle(config.cgi_max_programs);
        let proxies = proxy::Proxies::new(&config.proxy, &mut fcgi_pool);
        let mut mounts = Vec::with_capacity(config.cgi.len());
        for m in &config.cgi {
            let root = Root::new(&m.dir, config.symlinks_outside_root)?;
            mounts.push((m.prefix.as_bytes().into(), root));
        }
        Ok(Some(Box::new(Gateways {
            mounts,
            extensions: config
                .cgi_extensions
                .iter()
                .map(|e| e.as_bytes().into())
                .collect(),
            apps: (config.fastcgi.iter())
                .map(|m| App {
                    pattern: m.pattern.clone(),
                    addr: m.addr.clone(),
                    name: m.addr.to_string().into(),
                })
                .collect(),
            fcgi_pool,
            proxies,
            max_head: config.max_header_bytes,
            doc_root: Root::new(&config.root, config.symlinks_outside_root)?,
            hide_dotfiles: config.dotfiles == crate::config::Dotfiles::Hide,
            limits: Limits {
                max_programs: config.cgi_max_programs,
                timeout: Duration::from_millis(config.cgi_timeout_ms),
                max_output: config.cgi_max_output_bytes,
            },
            running,
            retired: Vec::new(),
            spawner,
            key: Vec::with_capacity(256),
            scripts: scripts::Scripts::new(Duration::from_millis(config.revalidate_ms)),
            scratch: cgi::Scratch::default(),
            stdout_buf: vec![0; STDOUT_BUF].into_boxed_slice(),
            server_port,
            https: config.tls(),
            registry: Rc::new(registry),
        })))
    }

    /// Whether a gateway claims `target`, and with what. `None`: not a gateway's (or a target
    /// the static path refuses anyway: it answers as for any file). A script found is kept
    /// for the next requests (`scripts.rs`).
    pub fn route(&mut self, target: &[u8], now: Instant) -> Option<Route> {
        resolve::normalise(target, &mut self.key).ok()?;
        if let Some(mount) = self.proxies.claims(&self.key) {
            return Some(Route::Proxy(mount));
        }
        if let Some(script) = self.scripts.get(&self.key, now) {
            return Some(Route::Cgi(script));
        }
        let route = self.find();
        if let Some(Route::Cgi(script)) = &route {
            self.scripts.insert(&self.key, script, now);
        }
        route
    }

    /// [`Gateways::route`] from the filesystem.
    fn find(&self) -> Option<Route> {
        let key = &self.key[..];
        for (prefix, root) in &self.mounts {
            let Some(rest) = key.strip_prefix(&prefix[..]) else {
                continue;
            };
            if !(rest.is_empty() || rest[0] == b'/') {
                continue;
            }
            if self.hide_dotfiles && resolve::is_hidden(key) {
                return Some(Route::Refused(404));
            }
            let any = |_: &[u8]| true;
            return Some(cgi::find(root, prefix, rest, &self.doc_root, any, None));
        }
        if let Some(route) = self.route_fastcgi() {
            return Some(route);
        }
        if self.extensions.is_empty() || !self.names_extension(key) {
            return None;
        }
        if self.hide_dotfiles && resolve::is_hidden(key) {
            return Some(Route::Refused(404));
        }
        let exts = &self.extensions;
        let is_script = |seg: &[u8]| exts.iter().any(|e| seg.ends_with(e) && seg.len() > e.len());
        Some(cgi::find(
            &self.doc_root,
            b"",
            key,
            &self.doc_root,
            is_script,
            None,
        ))
    }

    /// The FastCGI application that claims the normalised target in `self.key`, if one does:
    /// its script found under the document root by the same rules as a file (an extension
    /// pattern: the first segment with that extension; a prefix: the shortest leading file).
    fn route_fastcgi(&self) -> Option<Route> {
        let key = &self.key[..];
        let (i, app) = self.apps.iter().enumerate().find(|(_, a)| a.claims(key))?;
        if self.hide_dotfiles && resolve::is_hidden(key) {
            return Some(Route::Refused(404));
        }
        let is_script = |seg: &[u8]| app.names_script(seg);
        Some(cgi::find(
            &self.doc_root,
            b"",
            key,
            &self.doc_root,
            is_script,
            Some(i),
        ))
    }

    /// Starts `launch` (its records made by [`Gateways::launch`]) on application `app`: an
    /// idle connection of the pool if one is open, else a new one (not waited for). An error
    /// means nothing reached the application. Returns whether the connection was reused.
    pub fn start_fastcgi(
        &mut self,
        launch: Launch,
        app: usize,
        token: usize,
        deadline: Instant,
    ) -> std::io::Result<(fcgi::Exchange, bool)> {
        let Some(mut params) = launch.fastcgi else {
            return Err(std::io::Error::other(
                "a FastCGI request without its records",
            ));
        };
        if params.buffers.is_records_only() {
            // Copied into the pool's buffer, which stays the pool's (its capacity kept).
            let mut pooled = self.fcgi_pool.buffers();
            pooled.out.clear();
            pooled.out.extend_from_slice(&params.buffers.out);
            params.buffers = pooled;
        }
        let a = &self.apps[app];
        let taken = match self.fcgi_pool.take(app, token) {
            Some((s, slot)) => Ok((s, slot, true)),
            None => upstream::Stream::connect(&a.addr)
                .map(|s| (s, self.fcgi_pool.open_slot(token), false)),
        };
        let (stream, slot, reused) = match taken {
            Ok(t) => t,
            Err(e) => {
                self.fcgi_pool.recycle(params.buffers);
                return Err(e);
            }
        };
        let up = fcgi::Upstream {
            stream,
            slot,
            app,
            reused,
            keep_conn: self.fcgi_pool.keeps(app),
            name: a.name.clone(),
            buffers: params.buffers,
        };
        let max_output = self.limits.max_output;
        let (encoder, idempotent) = (params.encoder, params.idempotent);
        let registry = &self.registry;
        match fcgi::Exchange::start(
            encoder,
            idempotent,
            launch.body,
            up,
            registry,
            deadline,
            max_output,
        ) {
            Ok(x) => Ok((x, reused)),
            Err((e, buffers)) => {
                self.fcgi_pool.close_slot(slot);
                self.fcgi_pool.recycle(buffers);
                Err(e)
            }
        }
    }

    /// The launch for a request `route` claims (`Route::Cgi` or `Route::Proxy`).
    pub fn launch<'a>(
        &mut self,
        route: &Route,
        req: &wire::Request<'_>,
        asked: asked::Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone>,
        peer: std::net::SocketAddr,
    ) -> Launch {
        match route {
            Route::Proxy(mount) => {
                let body = asked.content_length.unwrap_or(0);
                let buffers = self.fcgi_pool.buffers();
                let hop = self.proxies.hop(*mount, peer.ip(), self.https);
                let fwd = proxy::request::forward(*mount, req, asked, &hop, buffers);
                Launch {
                    program: Default::default(),
                    dir: Default::default(),
                    env: Vec::new(),
                    body,
                    app: None,
                    proxy: Some(fwd),
                    fastcgi: None,
                }
            }
            Route::Cgi(script) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                let launch = match script.app {
                    Some(app) => self.launch_fastcgi(script, app, req, asked, peer, &mut scratch),
                    None => cgi::launch(script, req, asked, peer, self, &mut scratch),
                };
                self.scratch = scratch;
                launch
            }
            Route::Refused(_) => unreachable!("a refused route has no launch"),
        }
    }

    /// The launch of a request for FastCGI application `app`: its BEGIN_REQUEST and PARAMS
    /// encoded into a recycled buffer as the meta-variables come, with no environment made.
    fn launch_fastcgi<'a>(
        &mut self,
        script: &cgi::Script,
        app: usize,
        req: &wire::Request<'_>,
        asked: asked::Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone>,
        peer: std::net::SocketAddr,
        scratch: &mut cgi::Scratch,
    ) -> Launch {
        // A chunked body is read whole before the request has a program slot (it may never
        // get one): until it starts, the request holds its records alone, not the pool's
        // buffers (`start_fastcgi` takes them).
        let buffers = match req.chunked {
            true => upstream::Buffers::records_only(),
            false => self.fcgi_pool.buffers(),
        };
        let keep_conn = self.fcgi_pool.keeps(app);
        let mut params = fcgi::Params::new(buffers, keep_conn, asked.method);
        let mut set = |k: &[u8], v: &[u8]| params.param(k, v);
        cgi::meta_variables(script, req, &asked, peer, self, scratch, &mut set);
        Launch {
            program: Default::default(),
            dir: Default::default(),
            env: Vec::new(),
            body: asked.content_length.unwrap_or(0),
            app: Some(app),
            proxy: None,
            fastcgi: Some(params),
        }
    }

    /// Sends a request that failed on a pooled connection before reaching the application
    /// again, on a new connection (`Exchange::may_retry`).
    pub fn retry_fastcgi(&mut self, x: &mut fcgi::Exchange) -> std::io::Result<()> {
        let stream = upstream::Stream::connect(&self.apps[x.app].addr)?;
        x.slot = self.fcgi_pool.renew_slot(x.slot);
        x.retry(stream)
    }

    /// An event of a FastCGI connection's pool slot: the client connection to drive, if the
    /// connection carries a request (an idle one the application closed is dropped).
    pub fn pool_event(&mut self, slot: usize, readable: bool, closed: bool) -> Option<usize> {
        self.fcgi_pool.event(slot, readable, closed)
    }

    /// The end of a wake-up of the event loop: the FastCGI pool's surplus that no request of
    /// this wake-up took is closed ([`upstream::Pool::end_wake`]).
    pub fn end_wake(&mut self) {
        self.fcgi_pool.end_wake();
    }

    /// The thread's output buffer, lent for one pass of a connection's programs (an empty one
    /// stays in its place: taking it allocates nothing) and given back by
    /// [`Gateways::return_stdout`].
    pub fn lend_stdout(&mut self) -> Box<[u8]> {
        std::mem::take(&mut self.stdout_buf)
    }

    /// The buffer [`Gateways::lend_stdout`] lent.
    pub fn return_stdout(&mut self, buf: Box<[u8]>) {
        self.stdout_buf = buf;
    }

    /// The FastCGI pool, for the tests.
    #[cfg(test)]
    pub(crate) fn fcgi_pool(&mut self) -> &mut upstream::Pool {
        &mut self.fcgi_pool
    }

    /// Pooled connections dropped because their application or upstream closed them.
    pub fn pool_peer_closed(&self) -> u64 {
        self.fcgi_pool.peer_closed
    }

    /// Reads of pooled upstream connections that the take's peek dropped since the last call
    /// (`upstream::Pool::take_open`): they belong in `proxy_reads`, though no request used
    /// those connections.
    pub fn take_dropped_peeks(&mut self) -> u64 {
        self.fcgi_pool.take_dropped_peeks()
    }

    /// The application `launch` names, for the error log.
    pub fn app_name(&self, app: usize) -> &str {
        &self.apps[app].name
    }

    /// Whether a segment of `key` ends with a CGI extension.
    fn names_extension(&self, key: &[u8]) -> bool {
        key.split(|&b| b == b'/')
            .any(|seg| self.extensions.iter().any(|e| seg.ends_with(e)))
    }

    /// Takes the slot a gateway request holds while it runs: for a request to proxy mount
    /// `proxy_mount`, one of the mount's own on this thread (`max_in_flight`: a proxied
    /// request runs no program, so it does not take one of `cgi_max_programs`); else one of
    /// the server's program slots. False when none is left (503).
    pub fn reserve_for(&self, proxy_mount: Option<usize>) -> bool {
        match proxy_mount {
            Some(mount) => self.proxies.reserve(mount),
            None => self.reserve(),
        }
    }

    /// Gives back a slot taken by [`Gateways::reserve_for`] for the same request.
    pub fn release_for(&self, proxy_mount: Option<usize>) {
        match proxy_mount {
            Some(mount) => self.proxies.release(mount),
            None => self.release(),
        }
    }

    /// Takes one of the server's program slots; false at `cgi_max_programs`.
    pub fn reserve(&self) -> bool {
        let before = self.running.fetch_add(1, Ordering::AcqRel);
        if before >= self.limits.max_programs {
            self.running.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Gives back a slot taken by [`Gateways::reserve`] (a start that failed, a reaped child).
    pub fn release(&self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }

    /// Hands `launch` (a program's) to the spawner thread for connection `token`: what the
    /// connection holds until it runs. An error means nothing starts (its slot is the caller's
    /// to give back); the program's path comes back with it, for the log.
    pub fn start_program(
        &mut self,
        launch: Launch,
        token: usize,
        deadline: Instant,
    ) -> Result<Starting, (std::io::Error, std::path::PathBuf)> {
        let job = spawner::Job {
            ticket: 0,
            token,
            stdin: launch.body > 0,
            program: launch.program,
            dir: launch.dir,
            env: launch.env,
        };
        let Some(spawner) = self.spawner.as_mut() else {
            let e = std::io::Error::other("no programs are configured");
            return Err((e, job.program));
        };
        let ticket = spawner.send(job).map_err(|(e, job)| (e, job.program))?;
        Ok(Starting { ticket, deadline })
    }

    /// A program the spawner thread is done with, if one is there (the loop's waker said so).
    pub fn take_spawned(&mut self) -> Option<spawner::Spawned> {
        self.spawner.as_mut()?.take()
    }

    /// A started program, its pipes registered for connection `token`; an error if they could
    /// not be (the program is then retired, killed).
    pub fn program_ready(
        &mut self,
        started: spawner::Started,
        name: &std::path::Path,
        token: usize,
        deadline: Instant,
    ) -> std::io::Result<Program> {
        match program::registered(started, name, token, &self.registry, deadline) {
            Ok(p) => Ok(p),
            Err(p) => {
                self.retire(*p, true);
                Err(std::io::Error::other("cannot register its pipes"))
            }
        }
    }

    /// A program whose request was given up while it was being started (its client gone, its
    /// wall time past): killed and reaped as a retired one; a start that failed gives its slot
    /// back. Returns whether it had started (it counts as a start).
    pub fn orphan(&mut self, s: spawner::Spawned) -> bool {
        match s.result {
            Ok(started) => {
                process_group::kill_group(started.child.id());
                self.retired.push((started.child, Instant::now()));
                true
            }
            Err(_) => {
                self.release();
                false
            }
        }
    }

    /// A source no connection needs any more, at `now`: a program as [`Gateways::retire`]; a
    /// FastCGI or upstream connection back to the pool if its request ended cleanly and `kill`
    /// is false, else closed (which aborts the request).
    pub fn retire_source(&mut self, s: Source, kill: bool, now: Instant) {
        match s {
            // Its child, once started, finds no request to answer: `orphan`.
            Source::Starting(_) => {}
            Source::Program(p) => self.retire(p, kill),
            Source::FastCgi(x) => {
                self.release();
                let slot = x.slot;
                let (reusable, buffers) = x.finish();
                // The connection first: its buffers are kept as spares for it (`recycle`).
                match reusable.filter(|_| !kill) {
                    Some((app, stream)) => self.fcgi_pool.put(app, stream, slot, now),
                    None => self.fcgi_pool.close_slot(slot),
                }
                self.fcgi_pool.recycle(buffers);
            }
            Source::Proxy(x) => {
                self.proxies.release(x.mount);
                let slot = x.slot;
                let (reusable, buffers) = x.finish();
                // The connection first: its buffers are kept as spares for it (`recycle`).
                match reusable.filter(|_| !kill) {
                    Some((group, stream)) => self.fcgi_pool.put(group, stream, slot, now),
                    None => self.fcgi_pool.close_slot(slot),
                }
                self.fcgi_pool.recycle(buffers);
            }
        }
    }

    /// A program no connection needs any more: reaped now if it has exited, else (killed if
    /// `kill`) kept until it is, and killed past its deadline (`sweep`).
    pub fn retire(&mut self, mut p: Program, kill: bool) {
        if kill {
            p.kill();
        }
        let deadline = p.deadline;
        match p.into_child() {
            Some(mut child) => match child.try_wait() {
                Ok(None) => self.retired.push((child, deadline)),
                _ => self.release(),
            },
            None => self.release(),
        }
    }

    /// Reaps retired programs that exited, kills those past their deadline, closes upstream
    /// connections idle past their mount's `idle_timeout_ms`. Called by the event loop's
    /// sweep; `final_` (at shutdown) kills every one and waits for it (SIGKILL cannot be
    /// ignored: the wait is short).
    pub fn sweep(&mut self, now: Instant, final_: bool) {
        if final_ {
            // The programs still being started are killed and reaped as they come, those
            // still queued refused; no connection waits for any of them now: their slots
            // come back.
            if let Some(spawner) = self.spawner.as_mut() {
                let stopped = spawner.finish();
                for _ in 0..stopped.slots {
                    self.release();
                }
            }
        }
        self.fcgi_pool.trim(now);
        let mut i = 0;
        while i < self.retired.len() {
            let (child, deadline) = &mut self.retired[i];
            if final_ || now >= *deadline {
                process_group::kill_group(child.id());
            }
            let done = if final_ {
                child.wait().is_ok()
            } else {
                !matches!(child.try_wait(), Ok(None))
            };
            if done {
                self.retired.swap_remove(i);
                self.release();
            } else {
                i += 1;
            }
        }
    }

    /// When the sweep has work next: `now` while retired programs wait to be reaped (their
    /// exit is checked at each sweep), else when the pool has connections to close
    /// ([`upstream::Pool::next_trim`]); `None`: the gateways need no sweep.
    pub fn sweep_due(&self, now: Instant) -> Option<Instant> {
        if !self.retired.is_empty() {
            return Some(now);
        }
        self.fcgi_pool.next_trim(now)
    }
}

/// A loop that ends without its final sweep (its poll failed, or it unwinds) still gives back
/// the program slots its spawner's jobs held, and kills and reaps its programs: the count of
/// running programs is shared with the other loops, which would otherwise lose those slots
/// for good. After the final sweep there is nothing left to do.
impl Drop for Gateways {
    fn drop(&mut self) {
        self.sweep(Instant::now(), true);
    }
}
