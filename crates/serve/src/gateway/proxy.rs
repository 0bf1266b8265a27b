//! The reverse proxy: targets under a mount's prefix sent, path unchanged, to an HTTP/1.1
//! upstream, whatever the client spoke, as nginx's `proxy_pass` without a URI does. It is a
//! gateway like FastCGI: the same [`super::Source`] moved by the connection, the same pool of
//! idle connections and slot tokens (`upstream::Pool`, one group per upstream address), the
//! response handed to the protocols as a checked CGI head and its body, so that every protocol
//! encodes it as it encodes a program's.
//!
//! - `request.rs` builds the request head sent upstream (hop-by-hop fields out, `Via` and
//!   `X-Forwarded-*` in), straight into the exchange's recycled buffer: nothing of it is
//!   allocated per request, nor per field.
//! - `exchange.rs` is one request on one upstream connection: the head and body out, the
//!   response read with `wire`'s parser and body decoder only while the client has room.
//! - `response.rs` turns the upstream's response head into the CGI head the protocols read.
//! - `named.rs` gathers the hop-by-hop names a `Connection` field lists, for both heads.
//! - An `https://` upstream's connection is `upstream/tls.rs`'s: rustls driven by the same
//!   events, its configuration the project's TLS client's (`tls_client`), made at start by
//!   `tls_setup/upstream.rs`. Pooled as a plain one is: its group is its address's, so a kept
//!   TLS connection only ever goes back to its upstream.
//!
//! [`Proxies`] is one thread's view: the mounts, their addresses chosen round robin, and the
//! addresses marked failed (skipped for `fail_timeout_ms` after a refusal, a reset or a
//! timeout before any answer: nginx's `max_fails=1`).

use std::cell::Cell;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::ClientConfig;

use super::label::RequestLabel;
use super::upstream::{Pool, Stream, TlsUpstream};
use crate::config::{Cidr, FastCgiAddr, Forwarding, ProxyMount};
use crate::tls_setup::upstream::{setup_error, tls_config};

pub(crate) mod exchange;
mod forwarded;
mod named;
pub(crate) mod request;
mod response;

pub(crate) use exchange::{Exchange, Failure};
pub(crate) use forwarded::Hop;
pub(crate) use request::Forward;

/// A mount's timeouts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
}

#[derive(Debug)]
struct Mount {
    prefix: Box<[u8]>,
    /// Its addresses: indices into [`Proxies::addrs`].
    first: usize,
    count: usize,
    /// The next address to try (round robin).
    next: usize,
    timeouts: Timeouts,
    fail_timeout: Duration,
    forwarding: Forwarding,
    /// Clients whose forwarding fields are kept (`trusted`).
    trusted: Box<[Cidr]>,
    /// Its requests under way on this thread, from the slot taken ([`Proxies::reserve`]) to
    /// the exchange's end, and how many may be (`max_in_flight`). A cell: a slot is taken
    /// where the protocols hold the gateways shared (a match guard).
    in_flight: Cell<usize>,
    max_in_flight: usize,
    /// Takes requests received in 0-RTT (`early_data`).
    early_data: bool,
}

/// One upstream address.
#[derive(Debug)]
pub(crate) struct Addr {
    /// A TCP address or a unix socket.
    pub sock: FastCgiAddr,
    /// As written, for the error log.
    pub name: Rc<str>,
    /// The `Host` of a request that has none.
    host: Box<str>,
    /// Its idle connections' group in the thread's pool.
    pub group: usize,
    /// Skipped until then: it failed (passive marking).
    down_until: Option<Instant>,
    /// `https://`: the client configuration and the name the certificate is checked for.
    tls: Option<UpstreamTls>,
}

/// What an `https://` upstream's connections are made with.
#[derive(Debug)]
struct UpstreamTls {
    /// The mount's configuration (its CA file read at start-up, checked by
    /// `Config::validate`); an error only if the file changed since, told at each connect.
    /// With the name the certificate is checked for (checked when the configuration was
    /// read, `config::proxy::parse_upstream`).
    config: Result<(Arc<ClientConfig>, ServerName<'static>), String>,
}

impl Addr {
    /// Starts a connection (not waited for), plain or TLS as the upstream's scheme says.
    fn connect(&self) -> std::io::Result<Stream> {
        let (Some(tls), FastCgiAddr::Tcp(addr)) = (&self.tls, &self.sock) else {
            return Stream::connect(&self.sock);
        };
        let (config, name) = (tls.config.as_ref()).map_err(|e| std::io::Error::other(e.clone()))?;
        let up = TlsUpstream::connect(*addr, config, name.clone())?;
        Ok(Stream::Tls(Box::new(up)))
    }
}

/// One thread's proxy mounts.
#[derive(Debug, Default)]
pub(crate) struct Proxies {
    mounts: Vec<Mount>,
    pub addrs: Vec<Addr>,
}

impl Proxies {
    /// The mounts of `config`, their addresses' pool groups added to `pool`.
    pub fn new(config: &[ProxyMount], pool: &mut Pool) -> Proxies {
        let mut p = Proxies::default();
        for m in config {
            let first = p.addrs.len();
            let https = m.upstreams.iter().any(|u| u.tls_name.is_some());
            let tls_config = https.then(|| {
                tls_config(m.cacert.as_deref())
                    .map_err(|e| format!("the TLS configuration: cacert {}", setup_error(&e)))
            });
            for u in &m.upstreams {
                p.addrs.push(Addr {
                    sock: u.addr.clone(),
                    name: u.name.as_str().into(),
                    host: u.host().into(),
                    group: pool.add_group(m.pool_size(), Duration::from_millis(m.idle_timeout_ms)),
                    down_until: None,
                    tls: (u.tls_name.as_deref())
                        .zip(tls_config.clone())
                        .map(|(name, config)| UpstreamTls {
                            config: config.and_then(|c| {
                                let name = ServerName::try_from(name.to_owned())
                                    .map_err(|_| format!("`{name}` is not a host name"))?;
                                Ok((c, name))
                            }),
                        }),
                });
            }
            p.mounts.push(Mount {
                prefix: m.prefix.as_bytes().into(),
                first,
                count: m.upstreams.len(),
                next: 0,
                timeouts: Timeouts {
                    connect: Duration::from_millis(m.connect_timeout_ms),
                    first_byte: Duration::from_millis(m.first_byte_timeout_ms),
                    idle: Duration::from_millis(m.idle_timeout_ms),
                },
                fail_timeout: Duration::from_millis(m.fail_timeout_ms),
                forwarding: m.forwarding,
                trusted: m.trusted.as_slice().into(),
                in_flight: Cell::new(0),
                max_in_flight: m.max_in_flight,
                early_data: m.early_data,
            });
        }
        p
    }

    /// The mount that claims the normalised target `key` (the longest prefix).
    pub fn claims(&self, key: &[u8]) -> Option<usize> {
        let under = |prefix: &[u8]| {
            prefix == b"/"
                || key
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
        };
        (self.mounts.iter().enumerate())
            .filter(|(_, m)| under(&m.prefix))
            .max_by_key(|(_, m)| m.prefix.len())
            .map(|(i, _)| i)
    }

    /// What a request from `peer` to `mount` says of its client: the forwarding fields the
    /// mount writes, whether it keeps the client's own, and the `Host` of a request that has
    /// none (its first address's).
    pub fn hop(&self, mount: usize, peer: IpAddr, https: bool) -> Hop<'_> {
        let m = &self.mounts[mount];
        Hop {
            peer,
            https,
            default_host: &self.addrs[m.first].host,
            send: m.forwarding,
            trusted: m.trusted.iter().any(|c| c.contains(peer)),
        }
    }

    /// Whether `mount` takes requests received in 0-RTT, marked `Early-Data: 1`.
    pub fn early_data(&self, mount: usize) -> bool {
        self.mounts[mount].early_data
    }

    /// Takes one of `mount`'s request slots on this thread; false at its `max_in_flight`.
    pub fn reserve(&self, mount: usize) -> bool {
        let m = &self.mounts[mount];
        if m.in_flight.get() >= m.max_in_flight {
            return false;
        }
        m.in_flight.set(m.in_flight.get() + 1);
        true
    }

    /// Gives back a slot taken by [`Proxies::reserve`] (an exchange that ended, a start that
    /// failed).
    pub fn release(&self, mount: usize) {
        let m = &self.mounts[mount];
        debug_assert!(m.in_flight.get() > 0, "a proxy slot given back twice");
        m.in_flight.set(m.in_flight.get().saturating_sub(1));
    }

    pub fn timeouts(&self, mount: usize) -> Timeouts {
        self.mounts[mount].timeouts
    }

    /// Whether `mount` has an address other than `addr`.
    pub fn has_other(&self, mount: usize, addr: usize) -> bool {
        self.mounts[mount].count > 1 || self.mounts[mount].first != addr
    }

    /// The next address of `mount` in turn, skipping those marked failed, and `avoid`, while
    /// another is left; when every one is marked, the next in turn all the same (a request
    /// is better tried than refused unasked).
    pub fn pick(&mut self, mount: usize, now: Instant, avoid: Option<usize>) -> usize {
        let m = &mut self.mounts[mount];
        let mut fallback = None;
        for _ in 0..m.count {
            let a = m.first + m.next;
            m.next = (m.next + 1) % m.count;
            if Some(a) == avoid {
                fallback = fallback.or(Some(a));
                continue;
            }
            match self.addrs[a].down_until {
                Some(t) if t > now => fallback = fallback.or(Some(a)),
                _ => return a,
            }
        }
        fallback.unwrap_or(m.first)
    }

    /// `addr` refused, reset or timed out before answering: skipped for a while.
    pub fn mark_failed(&mut self, mount: usize, addr: usize, now: Instant) {
        self.addrs[addr].down_until = Some(now + self.mounts[mount].fail_timeout);
    }
}

impl super::Gateways {
    /// Starts a proxied request on an idle connection to the next address of its mount, or a
    /// new one (not waited for; one refused at once is tried once on another address). An
    /// error means nothing reached the upstream. Returns whether the connection was reused,
    /// and whether another address was tried.
    pub fn start_proxy(
        &mut self,
        fwd: Forward,
        body: u64,
        token: usize,
        now: Instant,
    ) -> std::io::Result<(Exchange, bool, bool)> {
        let mut addr = self.proxies.pick(fwd.mount, now, None);
        let mut retried = false;
        // A pooled connection is peeked as it is taken (one recvfrom): bytes its upstream
        // wrote unasked after the loop's last poll have no event yet, and would be read as
        // this request's answer (`upstream::Pool::take_open` says why no event can stand in).
        let (stream, slot, reused) = loop {
            let group = self.proxies.addrs[addr].group;
            if let Some((s, slot)) = self.fcgi_pool.take_open(group, token) {
                break (s, slot, true);
            }
            match self.proxies.addrs[addr].connect() {
                Ok(s) => break (s, self.fcgi_pool.open_slot(token), false),
                Err(e) => {
                    self.proxies.mark_failed(fwd.mount, addr, now);
                    if retried || !self.proxies.has_other(fwd.mount, addr) {
                        self.fcgi_pool.recycle(fwd.buffers);
                        return Err(e);
                    }
                    retried = true;
                    addr = self.proxies.pick(fwd.mount, now, Some(addr));
                }
            }
        };
        let a = &self.proxies.addrs[addr];
        let up = exchange::Upstream {
            stream,
            slot,
            addr,
            group: a.group,
            reused,
            name: a.name.clone(),
            timeouts: self.proxies.timeouts(fwd.mount),
            max_head: self.max_head,
        };
        match Exchange::start(fwd, body, up, &self.registry, now) {
            Ok(x) => Ok((x, reused, retried)),
            Err((e, buffers)) => {
                // A pooled connection's take-time peek was a read for the proxy that no
                // request now carries into `proxy_reads` (today `start` fails only at the
                // registration of a new connection; this keeps the count true if that
                // changes).
                if reused {
                    self.fcgi_pool.count_unsent_peek();
                }
                self.fcgi_pool.close_slot(slot);
                self.fcgi_pool.recycle(buffers);
                Err(e)
            }
        }
    }

    /// A proxied request whose connection failed before the upstream answered
    /// (`Exchange::may_retry`): its address marked failed, the request sent again on a
    /// new connection to another address (the same one when it came from the pool and the
    /// mount has no other: the upstream closed an idle connection as it was taken).
    pub fn retry_proxy(
        &mut self,
        x: &mut Exchange,
        request: &RequestLabel,
        now: Instant,
    ) -> std::io::Result<()> {
        let reused_only = !self.proxies.has_other(x.mount, x.addr);
        if !x.may_retry() || (reused_only && !x.reused) {
            return Err(std::io::Error::other("not retried"));
        }
        if !x.reused {
            // A pooled connection failing says nothing of its address (the upstream may close
            // an idle connection as it is taken); a new one refused or reset does.
            self.proxies.mark_failed(x.mount, x.addr, now);
        }
        let addr = self.proxies.pick(x.mount, now, Some(x.addr));
        let a = &self.proxies.addrs[addr];
        let stream = a.connect()?;
        x.slot = self.fcgi_pool.renew_slot(x.slot);
        let (group, name) = (a.group, a.name.clone());
        x.retry(stream, addr, group, name, &self.registry, now)?;
        x.send_pending(request)
    }

    /// A proxied request failed at its address (refused, reset or silent past a timeout):
    /// the address is skipped for a while.
    pub fn proxy_failed(&mut self, x: &Exchange, now: Instant) {
        self.proxies.mark_failed(x.mount, x.addr, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(text: &str) -> Proxies {
        let c: crate::config::Config = toml::from_str(text).unwrap();
        Proxies::new(&c.proxy, &mut Pool::new(0, 0))
    }

    #[test]
    fn the_longest_prefix_claims_a_whole_segment() {
        let p = proxies(
            "[[proxy]]\nprefix = \"/api\"\nupstreams = [\"http://127.0.0.1:1\"]\n\
             [[proxy]]\nprefix = \"/api/v2/\"\nupstreams = [\"http://127.0.0.1:2\"]\n",
        );
        assert_eq!(p.claims(b"/api"), Some(0));
        assert_eq!(p.claims(b"/api/x"), Some(0));
        assert_eq!(p.claims(b"/api/v2/x"), Some(1));
        assert_eq!(p.claims(b"/apix"), None);
        assert_eq!(p.claims(b"/"), None);
    }

    #[test]
    fn addresses_go_round_robin_and_a_failed_one_is_skipped_for_a_while() {
        let mut p = proxies(
            "[[proxy]]\nprefix = \"/\"\nfail_timeout_ms = 1000\nupstreams = [\"http://127.0.0.1:1\", \"http://127.0.0.1:2\", \"http://127.0.0.1:3\"]\n",
        );
        let now = Instant::now();
        let turns: Vec<usize> = (0..4).map(|_| p.pick(0, now, None)).collect();
        assert_eq!(turns, [0, 1, 2, 0]);
        p.mark_failed(0, 2, now);
        let turns: Vec<usize> = (0..4).map(|_| p.pick(0, now, None)).collect();
        assert_eq!(turns, [1, 0, 1, 0]);
        assert_eq!(
            p.pick(0, now, Some(1)),
            0,
            "another than the one that failed"
        );
        let later = now + Duration::from_millis(1001);
        let turns: Vec<usize> = (0..3).map(|_| p.pick(0, later, None)).collect();
        assert!(turns.contains(&2), "back after fail_timeout_ms: {turns:?}");
        p.mark_failed(0, 0, now);
        p.mark_failed(0, 1, now);
        p.mark_failed(0, 2, now);
        let _ = p.pick(0, now, None); // every one marked: one is tried all the same
    }
}
