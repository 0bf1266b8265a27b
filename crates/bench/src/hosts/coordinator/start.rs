//! Bringing the workers up: each one's hello answered with its orders (its slice of the run),
//! READY awaited from every one, then the clock probes that give each one's offset
//! ([`crate::hosts::clock`]).

use super::host::{mismatch, refused, with_last_words, with_stderr, Host, State};
use super::HostsRun;
use crate::hosts::clock::{self, Probe};
use crate::hosts::launch::{Event, Said};
use crate::hosts::protocol::{
    self, Orders, RunOrders, ToCoordinator, ToWorker, FLINT_VERSION, PROTOCOL_VERSION,
};
use crate::{BenchConfig, Stop, Workload};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a host may take to say hello and READY (an ssh login included).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Clock probes per host; the one with the least round trip counts.
const PROBES: u32 = 8;

/// Host `h`'s orders: the run's options, its Webchildren's numbers, where it writes its log,
/// and `workload`, its share of the workload.
pub(super) fn orders(
    config: &BenchConfig,
    r: &HostsRun<'_>,
    h: &Host,
    workload: Workload,
) -> ToWorker {
    let c = config;
    let us = |d: Duration| d.as_micros() as u64;
    let connect_to = match c.target.host.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() && !c.target.host.ends_with(']') => {
            c.target.host.clone()
        }
        _ => format!("{}:{}", c.target.host, c.target.addr.port()),
    };
    ToWorker::Orders(Box::new(Orders {
        protocol: PROTOCOL_VERSION,
        flint_version: FLINT_VERSION.to_owned(),
        host: h.name.clone(),
        url: c.target.url.clone(),
        connect_to,
        host_header: c.target.host.clone(),
        scheme: c.target.scheme,
        server_name: c.target.server_name.clone(),
        authorization: c.target.authorization.clone(),
        tls: c.tls.clone(),
        first_child: h.children.start,
        end_child: h.children.end,
        run: RunOrders {
            concurrency: c.concurrency,
            threads: r.threads,
            duration_us: match c.stop {
                Stop::Duration(d) => Some(us(d)),
                Stop::Pages(_) => None,
            },
            pages: match c.stop {
                Stop::Pages(n) => Some(n),
                Stop::Duration(_) => None,
            },
            warmup_us: us(c.warmup),
            think_us: c.think.map(us),
            rate: c.rate,
            http: c.http,
            connections_per_child: c.connections_per_child,
            streams: c.streams,
            h2_window: c.h2_window,
            connect_timeout_us: us(c.connect_timeout),
            response_timeout_us: us(c.response_timeout),
            busy_poll_us: us(c.busy_poll),
            read_slack: c.read_slack,
            seed: c.seed,
            expect_status: c.expect_status.clone(),
            redirect: c.redirect,
            fail_fast: c.fail_fast,
            early_data: c.h3_early_data,
            log: h.log.clone(),
        },
        workload,
    }))
}

/// Hello, orders, READY from every host, or a reason for each that did not.
pub(super) fn start(
    hosts: &mut [Host],
    events: &Receiver<Event>,
    orders: impl Fn(&Host) -> Result<ToWorker, String>,
    stop: &AtomicBool,
) {
    let deadline = Instant::now() + START_TIMEOUT;
    while hosts.iter().any(|h| matches!(h.state, State::Starting)) {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let ev = match events.recv_timeout(wait.min(Duration::from_millis(100))) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => continue,
            Err(_) => {
                for h in hosts.iter_mut() {
                    if matches!(h.state, State::Starting) {
                        let secs = START_TIMEOUT.as_secs();
                        // Orders still unwritten: the worker (or its channel) stopped reading.
                        let why = match h.process.all_written() {
                            true => format!("no READY within {secs} s"),
                            false => format!("orders not delivered within {secs} s"),
                        };
                        h.state = State::Failed(with_stderr(why, &h.process));
                    }
                }
                return;
            }
        };
        let h = &mut hosts[ev.host];
        match h.state {
            State::Starting => {}
            // A host READY while others start may still fail, end or say what is not a
            // message: the run must not start with it.
            State::Ready => {
                before_go(h, ev.what, "while the other hosts started");
                continue;
            }
            _ => continue,
        }
        match ev.what {
            Said::Message(ToCoordinator::Hello {
                protocol,
                flint_version,
            }) => {
                if protocol != PROTOCOL_VERSION {
                    h.state = State::Failed(mismatch(protocol, &flint_version));
                } else {
                    h.flint_version = Some(flint_version);
                    match orders(h) {
                        Ok(o) => h.process.send(&o),
                        Err(why) => h.state = State::Failed(why),
                    }
                }
            }
            Said::Message(ToCoordinator::Ready { .. }) => h.state = State::Ready,
            Said::Message(ToCoordinator::Failed { reason }) => h.state = State::Failed(reason),
            Said::Message(other) => {
                h.state = State::Failed(format!("unexpected {other:?} before READY"))
            }
            Said::Bad(line) => {
                h.state = State::Failed(format!("not a flint worker: it said {line}"))
            }
            Said::Refused { kind, why, peer } => {
                h.state = State::Failed(refused(h, &kind, &why, peer))
            }
            Said::Closed => {
                let why = "exited before READY".to_owned();
                h.state = State::Failed(with_last_words(why, &h.process));
            }
        }
    }
}

/// What a READY host said before GO other than a pong, `when` (the words after "it said" and
/// "its channel closed"): a line that is not a message, a message refused, its failure or its
/// channel closed fails it, and the run does not start; a heartbeat is nothing to act on.
fn before_go(h: &mut Host, what: Said, when: &str) {
    match what {
        Said::Refused { kind, why, peer } => {
            h.state = State::Failed(refused(h, &kind, &why, peer));
        }
        Said::Bad(line) => h.state = State::Failed(format!("{when} it said {line}")),
        Said::Message(ToCoordinator::Failed { reason }) => h.state = State::Failed(reason),
        Said::Closed => {
            let why = format!("its channel closed {when}");
            h.state = State::Failed(with_last_words(why, &h.process));
        }
        Said::Message(_) => {}
    }
}

/// How long a host has to answer a clock probe before it fails.
const PONG_TIMEOUT: Duration = Duration::from_secs(5);

/// [`PROBES`] ping-pong rounds with every host at once; each host's offset from its least
/// round trip. A host that says anything else than its pongs then (a line that is not a
/// message, a message refused, its failure, its channel closed), or has not answered a round
/// within [`PONG_TIMEOUT`], fails, and the probes end: the run does not start.
pub(super) fn measure_clocks(hosts: &mut [Host], events: &Receiver<Event>) {
    for seq in 0..PROBES {
        if hosts.iter().any(|h| matches!(h.state, State::Failed(_))) {
            return;
        }
        for h in hosts.iter_mut() {
            h.ping_sent_unix_us = protocol::unix_us();
            h.process.send(&ToWorker::Ping { seq });
        }
        let deadline = Instant::now() + PONG_TIMEOUT;
        let mut answered = vec![false; hosts.len()];
        let mut waiting = hosts.len();
        while waiting > 0 {
            let Ok(ev) = events.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            else {
                break;
            };
            let h = &mut hosts[ev.host];
            match ev.what {
                Said::Message(ToCoordinator::Pong {
                    seq: s,
                    clock_unix_us,
                }) if s == seq && !answered[ev.host] => {
                    h.probes.push(Probe {
                        // As the writer began writing it (the ping is the last line
                        // sent this host), not as it was handed to the writer thread.
                        sent: h.ping_sent_unix_us.max(h.process.last_write_unix_us()),
                        remote: clock_unix_us,
                        received: ev.at_unix_us,
                    });
                    answered[ev.host] = true;
                    waiting -= 1;
                }
                _ if !matches!(h.state, State::Ready) => {}
                // A late pong of an earlier round, or a heartbeat: nothing to act on.
                what => before_go(h, what, "during the clock probes"),
            }
            if matches!(h.state, State::Failed(_)) {
                // The run will not start: no need to wait for the others' pongs.
                return;
            }
        }
        for (h, _) in hosts.iter_mut().zip(&answered).filter(|(_, a)| !**a) {
            let secs = PONG_TIMEOUT.as_secs();
            let why = format!(
                "no answer to clock probe {} of {PROBES} within {secs} s",
                seq + 1
            );
            h.state = State::Failed(with_stderr(why, &h.process));
        }
    }
    for h in hosts {
        h.offset = clock::estimate(&h.probes);
    }
}
