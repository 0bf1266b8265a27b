//! A gateway request's end: its source retired (a FastCGI or upstream connection back to the
//! pool, or closed; a program reaped, or kept until it exits and killed past its deadline), its
//! slot given back, and the sweep that reaps what is left. Apart from `gateway.rs` because it
//! is the way out of a gateway's request, as `launching.rs` is the way in.

use std::time::Instant;

use super::{process_group, spawner, Gateways, Program, Source};

impl Gateways {
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
