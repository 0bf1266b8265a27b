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
//! - `routing.rs` is which gateway claims a target; `launching.rs` a claimed request's start
//!   (its launch made, handed to the spawner or sent on a pooled connection); `retiring.rs`
//!   its end (its source reaped or pooled, its slot given back) and the sweep. They are
//!   [`Gateways`]' methods, apart so that each reads alone.
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
use crate::resolve::Root;

pub(crate) mod asked;
pub(crate) mod cgi;
#[cfg(test)]
mod drop_tests;
pub mod fcgi;
pub mod head;
pub(crate) mod label;
mod launching;
mod process_group;
pub(crate) mod program;
pub(crate) mod proxy;
mod retiring;
mod routing;
mod scripts;
mod source;
pub(crate) mod spawner;
#[cfg(test)]
mod stray_tests;
pub(crate) mod upstream;

pub(crate) use cgi::Launch;
pub(crate) use process_group::kill_group;
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
    /// Programs and FastCGI applications take requests received in 0-RTT (`cgi_early_data`).
    cgi_early_data: bool,
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
        let mut fcgi_pool =
            upstream::Pool::new(config.fastcgi.len(), config.effective_fastcgi_pool());
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
            cgi_early_data: config.cgi_early_data,
            registry: Rc::new(registry),
        })))
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

    /// Whether the gateway `route` names opted in to requests received in 0-RTT (RFC 8470
    /// 5.1: told so by `Early-Data: 1`): a proxy mount's `early_data`, or `cgi_early_data`
    /// for programs and FastCGI applications.
    pub fn takes_early_data(&self, route: &Route) -> bool {
        match route {
            Route::Proxy(mount) => self.proxies.early_data(*mount),
            Route::Cgi(_) => self.cgi_early_data,
            Route::Refused(_) => false,
        }
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
}
