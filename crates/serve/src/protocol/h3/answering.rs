//! One HTTP/3 request answered: the responder's reply or a gateway's exchange, by the rules
//! the protocol's module doc gives (0-RTT, bodies of unknown length gathered first).

use std::net::Ipv4Addr;

use http3::{Fields, RequestId};

use super::gateway::Exchange3;
use super::logging::Line;
use super::sending::Sent;
use super::{Deferred, H3};
use crate::access_log::Entry;
use crate::auth::Verdict;
use crate::gateway::asked::Asked;
use crate::gateway::{cgi, Route};
use crate::protocol::gateway::{body_gate, BodyGate, Exchange};
use crate::protocol::gather::{Gathered, OverBudget};
use crate::protocol::{count_status, finish, request_line, Worker};
use crate::respond::Output;

impl H3 {
    /// Answers one request: the responder's reply, its access-log line, then its head and as
    /// much of its body as flow control takes; or, for a gateway's target, its exchange kept
    /// and its program asked for (`h3/gateway.rs`). `end`: the request has no body. `early`:
    /// handed out in 0-RTT (`h3_early_data`), possibly a replay (RFC 8470). `gathered`: its
    /// body, gathered whole (or past the limit), or refused for want of room (503), with the
    /// verdict its head had. The verdict when its body is to be gathered first (nothing was
    /// answered, logged or counted).
    pub(super) fn answer(
        &mut self,
        id: RequestId,
        fields: &Fields,
        end: bool,
        early: bool,
        gathered: Option<(Result<Gathered, OverBudget>, Verdict)>,
        w: &mut Worker,
    ) -> Option<Verdict> {
        let peer = (self.server.peer(id.conn)).unwrap_or((Ipv4Addr::UNSPECIFIED, 0).into());
        let ended = end || gathered.is_some();
        let (gathered, mut checked) = match gathered {
            Some((body, verdict)) => (Some(body), Some(verdict)),
            None => (None, None),
        };
        let over_budget = matches!(gathered, Some(Err(OverBudget)));
        let received = match &gathered {
            Some(Ok(b)) => b.len() as u64,
            _ => 0,
        };
        let mut too_early = false;
        let method = fields.method().unwrap_or_default();
        let path = fields.path().unwrap_or_default();
        let authority = fields.authority();
        // The pseudo-fields stand for the request line and Host; wire reads the others.
        let others = fields.iter().filter(|(name, _)| !name.starts_with(b":"));
        let out = &mut Output::Fields {
            head: &mut self.head,
            body: &mut self.response,
        };
        let date = &w.date;
        let limits = &w.limits;
        let max_body = w.max_body;
        let passed = &mut self.passed_host;
        let answer = wire::Request::with_fields(method, path, authority, others, limits, passed, {
            let (responder, auth, gateways, stats) =
                (&mut w.responder, &mut w.auth, &mut w.gateways, &mut w.stats);
            let too_early = &mut too_early;
            let now = w.now;
            let logged = w.log.is_some();
            move |parsed| match parsed {
                Ok(r) => {
                    let gate = body_gate(r.content_length, ended, received, max_body);
                    // A protected path in 0-RTT is refused before its credentials are looked
                    // at: checking them counts failures against the peer's address, spends the
                    // hash budget and fills the verified cache, for an address the handshake
                    // has not proven (a spoofed 0-RTT could lock its owner out).
                    let guarded = early && auth.as_mut().is_some_and(|a| a.protects(r.target));
                    // A gathered request's was had at its head: not checked (nor counted) again.
                    let verdict = match (checked.take(), auth.as_mut()) {
                        (Some(verdict), _) => verdict,
                        (None, Some(a)) if !guarded => a.check(r, peer.ip(), now, stats),
                        _ => Verdict::Open,
                    };
                    let routed = match (&verdict, gateways.as_mut()) {
                        (Verdict::Denied(_), _) | (_, None) => None,
                        (_, Some(g)) => g.route(r.target, now),
                    };
                    // In 0-RTT only what is safe to run twice is served (RFC 8470 5.2, RFC
                    // 9114 10.9): a safe method on a path no program or upstream answers,
                    // or one whose program or upstream opted in to be told (RFC 8470 5.1:
                    // `Early-Data: 1`; it may answer 425 itself); others are refused.
                    let safe = matches!(r.method, wire::Method::Get | wire::Method::Head)
                        || method == b"OPTIONS";
                    let untold = match &routed {
                        Some(route @ (Route::Cgi(_) | Route::Proxy(_))) => {
                            !gateways.as_ref().is_some_and(|g| g.takes_early_data(route))
                        }
                        _ => false,
                    };
                    *too_early = guarded || early && (!safe || untold);
                    let reply = match routed {
                        _ if *too_early => responder.error_to(r, 425, date, out),
                        None => match &verdict {
                            Verdict::Denied(d) => {
                                d.count(r.authorization.is_some(), stats);
                                responder.denied(r, d, date, out)
                            }
                            _ => responder.respond(r, date, now, out),
                        },
                        Some(Route::Refused(status)) => responder.error_to(r, status, date, out),
                        // A program is told the body's length up front (RFC 3875 4.1.2): a body
                        // that does not say it is gathered whole first.
                        // No room left to gather its body: the server is short, the request
                        // is not at fault (503, as for a program slot; it may come again).
                        Some(Route::Cgi(_) | Route::Proxy(_)) if over_budget => {
                            responder.busy(r, date, out)
                        }
                        Some(Route::Cgi(_) | Route::Proxy(_)) if gate == BodyGate::Gather => {
                            return Err(Deferred::Gather(verdict))
                        }
                        Some(Route::Cgi(_) | Route::Proxy(_)) if gate == BodyGate::TooLarge => {
                            responder.error_to(r, 413, date, out)
                        }
                        Some(route @ (Route::Cgi(_) | Route::Proxy(_))) => {
                            match &route {
                                Route::Cgi(script) => {
                                    stats.count_gateway_request(script.app.is_some())
                                }
                                _ => stats.proxy_requests += 1,
                            }
                            match gateways.as_mut() {
                                None => responder.error(500, date, false, out),
                                Some(g) if !g.reserve_for(route.proxy_mount()) => {
                                    stats.count_busy(route.proxy_mount());
                                    responder.busy(r, date, out)
                                }
                                Some(g) => {
                                    let host = authority.map(|a| (&b"host"[..], a));
                                    // Possibly a replay: said so by the server alone, a
                                    // client's own `early-data` (any case) dropped.
                                    let mark = early.then_some((&b"early-data"[..], &b"1"[..]));
                                    let dropped = |name: &[u8]| {
                                        name.starts_with(b":")
                                            || early && name.eq_ignore_ascii_case(b"early-data")
                                    };
                                    let asked = Asked {
                                        method,
                                        protocol: b"HTTP/3.0",
                                        // A body that arrived whole has its length; an
                                        // empty one says none, as over HTTP/1.1 and HTTP/2.
                                        content_length: r
                                            .content_length
                                            .or((ended && received > 0).then_some(received)),
                                        fields: (fields.iter())
                                            .filter(|(name, _)| !dropped(name))
                                            .chain(host)
                                            .chain(mark),
                                    };
                                    let mut launch = g.launch(&route, r, asked, peer);
                                    if let Some(user) = verdict.user() {
                                        cgi::set_user(&mut launch, user);
                                    }
                                    let proxied = matches!(route, Route::Proxy(_));
                                    let x = Exchange::new(
                                        r,
                                        method,
                                        b"HTTP/3.0",
                                        verdict.user(),
                                        limits.max_head_bytes,
                                        proxied,
                                        logged,
                                    );
                                    return Err(Deferred::Program(Box::new(x), Box::new(launch)));
                                }
                            }
                        }
                    };
                    let user = match verdict {
                        Verdict::Allowed(user) => Some(user),
                        _ => None,
                    };
                    let head = r.method == wire::Method::Head;
                    Ok((reply, head, r.referer, r.user_agent, user))
                }
                Err(e) => {
                    let reply = responder.error(e.status(), date, false, out);
                    Ok((reply, false, None, None, None))
                }
            }
        });
        // A request whose body is gathered is counted once, when it is answered.
        if !matches!(answer, Err(Deferred::Gather(_))) {
            w.stats.http3_requests += 1;
            w.stats.h3_early_requests += u64::from(early);
            w.stats.h3_too_early += u64::from(too_early);
        }
        let (reply, head, referer, user_agent, user) = match answer {
            Ok(answer) => answer,
            Err(Deferred::Gather(verdict)) => return Some(verdict),
            Err(Deferred::Program(x, launch)) => {
                // A program answers: its head comes later (`h3/gateway.rs`).
                let body = gathered.and_then(Result::ok).unwrap_or_default();
                (self.exchanges).insert(id, Exchange3::new(*x, peer.ip(), ended, body));
                self.launches.push((id, *launch));
                return None;
            }
        };
        let (status, body_bytes, user) = (reply.status, reply.body_bytes, user.as_deref());
        // A HEAD answered with an error page has no body either.
        let sent = self.reply(id, reply, head || method == b"HEAD", w);
        if sent == Sent::Held && w.log.is_some() {
            // Counted now, as every response is (the counts do not hang on the access log);
            // logged when it ends, with the bytes it sent (`h3/logging.rs`).
            count_status(&mut w.stats, status);
            let line = Line {
                peer: peer.ip(),
                method,
                path,
                status,
                body_bytes,
                referer,
                user_agent,
                user,
            };
            self.log_when_done(id, line, w);
            return None;
        }
        let body_bytes = if sent == Sent::Failed { 0 } else { body_bytes };
        let line = &mut self.log_line;
        finish(w, status, move || Entry {
            peer: peer.ip(),
            request_line: request_line(line, method, path, b"HTTP/3.0"),
            status,
            body_bytes,
            referer,
            user_agent,
            user,
        });
        None
    }
}
