//! A loop's accepting: its listener drained of new connections each time it is readable, each
//! one given its slot and a first optimistic pass, the connection cap kept by closing the one
//! that has waited longest, and a listener that failed for want of descriptors paused a moment
//! and resumed. Apart from `event_loop.rs` because it is the way a connection comes in, as the
//! sweep and the drain are the ways it goes.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use mio::net::TcpStream;
use mio::{Interest, Token};

use super::{Loop, ACCEPT_PAUSE};
use crate::conn::Conn;
use crate::control::LISTENER;
use crate::transport::Transport;

impl<T: Transport> Loop<'_, T> {
    pub(super) fn accept_all(&mut self) {
        if self.accept_paused_until.is_some() || self.draining.is_some() {
            return;
        }
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            self.worker.stats.accept_calls += 1;
            match listener.accept() {
                Ok((sock, peer)) => {
                    self.worker.stats.accepted += 1;
                    let open = self.control.conns.fetch_add(1, Ordering::Relaxed);
                    if open >= self.max_conns && !self.evict_waiting() {
                        // At max_connections and every one of this thread's busy with a
                        // request: closed at once (the client sees a reset).
                        self.control.conns.fetch_sub(1, Ordering::Relaxed);
                        self.worker.stats.rejected += 1;
                        drop(sock);
                        continue;
                    }
                    self.open(sock, peer);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if e.kind() == io::ErrorKind::Interrupted
                        || e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(_) => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays in the backlog and
                    // every retry would fail the same way. Stop listening for a moment.
                    self.worker.stats.accept_errors += 1;
                    self.worker.stats.accept_pauses += 1;
                    if let Some(l) = self.listener.as_mut() {
                        let _ = self.poll.registry().deregister(l);
                    }
                    self.accept_paused_until = Some(self.worker.now + ACCEPT_PAUSE);
                    return;
                }
            }
        }
    }

    /// A new connection: one optimistic pass right away (read, answer, write), which usually
    /// finds the request already there and saves an epoll round trip; registered with epoll only
    /// if it outlives that pass (an HTTP/1.0 exchange never is).
    fn open(&mut self, sock: TcpStream, peer: SocketAddr) {
        let now = self.worker.now;
        let deadline = now + self.worker.timeouts.header;
        // The slot is chosen first: a program started in the first pass registers its pipes
        // under the slot's token.
        let i = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let Ok(mut c) = Conn::<T>::accept(sock, peer, &mut self.env, now, deadline, i) else {
            self.free.push(i);
            self.control.conns.fetch_sub(1, Ordering::Relaxed);
            self.worker.stats.closed += 1;
            return;
        };
        let keep = c.drive(&mut self.worker, &mut self.env, &mut self.pool);
        self.worker.stats.optimistic_hits += u64::from(c.session.served);
        if !keep {
            self.free.push(i);
            self.release(c);
            return;
        }
        self.worker.stats.registrations += 1;
        let interest = Interest::READABLE | Interest::WRITABLE;
        if self
            .poll
            .registry()
            .register(c.io.socket(), Token(i), interest)
            .is_err()
        {
            self.free.push(i);
            self.release(c);
            return;
        }
        self.conns[i] = Some(c);
    }

    /// At the connection cap: closes the connection that has waited longest for a request
    /// (idle since its last response, or silent since accept: [`Conn::waiting_since`]) to admit
    /// a new one, as nginx reuses its keep-alive and not-yet-used connections. A connection
    /// busy with a request is never closed for it. A scan of the slab made only when the cap is
    /// reached: nothing is paid per request. False if every connection of this thread is busy.
    fn evict_waiting(&mut self) -> bool {
        let keepalive = self.worker.timeouts.keepalive;
        let oldest = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.as_ref()?.waiting_since(keepalive)?, i)))
            .min();
        let Some((_, i)) = oldest else {
            return false;
        };
        self.worker.stats.idle_evictions += 1;
        self.close(i);
        true
    }

    pub(super) fn resume_accepting(&mut self) {
        self.accept_paused_until = None;
        if let Some(l) = self.listener.as_mut() {
            // Connections waiting in the backlog make the new registration report at once.
            let _ = self
                .poll
                .registry()
                .register(l, LISTENER, Interest::READABLE);
        }
    }
}
