//! One complete request answered: its head built for `wire` (HTTP/1.1's limits checked over
//! every field it carried), the Basic auth verdict, the gateway that claims it, and the
//! responder's answer submitted, or the program that will answer it started. Apart from `h2.rs`
//! because it is the one request's path, where `h2.rs` is the connection's.

use http2::StreamId;

use super::logging::log_or_hold;
use super::reply::{head_fields, submit_reply};
use super::{exchange, H2};
use crate::access_log::Entry;
use crate::auth::Verdict;
use crate::gateway::asked::Asked;
use crate::gateway::{cgi, Route};
use crate::protocol::gateway::{body_gate, BodyGate};
use crate::protocol::{request_line, Worker};
use crate::respond::Output;

/// Answers one complete request on `id`: its head built for `wire`, the responder's answer
/// turned into `:status` and fields, the body left to the DATA frames.
pub(super) fn respond(h: &mut H2, id: StreamId, w: &mut Worker, peer: std::net::SocketAddr) {
    let Some(i) = h.streams.index(id) else {
        return;
    };
    // A body refused for want of room is cut short: the reset after the ready streams
    // (`h2.rs`) answers it with REFUSED_STREAM; nothing here may start a program on it, even
    // when its END_STREAM came in the same read.
    if h.streams.slots[i].short_of_room {
        return;
    }
    // The verdict its head had, for a request answered at its END_STREAM.
    let checked = h.streams.slots[i].verdict.take();
    let mut kept = None;
    let st = &h.streams.slots[i];
    let value = |(a, b): (usize, usize)| &st.values[a..b];
    let (method, path) = (value(st.method), value(st.path));
    let too_large = st.content_length.is_some_and(|n| n > w.max_body);
    // HTTP/1.1's limits on the whole request, over every field it carried (wire reads only
    // those the responder uses), and the header list limit the session advertised.
    let head_too_large = st.list_too_large
        || st.head_bytes > w.limits.max_head_bytes
        || st.field_count > w.limits.max_fields();
    let host_differs = st.host_differs;
    // A HEAD answered with an error (400, 413, 431) has no body either.
    let head_method = method == b"HEAD";
    let out = &mut Output::Fields {
        head: head_fields(&mut h.head),
        body: &mut h.response,
    };
    let fields = st.fields.iter().map(|&(name, range)| (name, value(range)));
    let authority = st.authority.map(value);
    let limits = &w.limits;
    let logged = w.log.is_some();
    let passed = &mut h.passed_host;
    // A program's exchange and start, for a request one answers (set where `Err` is returned).
    let mut program = None;
    // The request is read by reference where wire built it (no copy of it).
    let answer =
        wire::Request::with_fields(method, path, authority, fields, limits, passed, |parsed| {
            match parsed {
                _ if head_too_large => Ok((
                    w.responder.error(431, &w.date, false, out),
                    false,
                    None,
                    None,
                    None,
                )),
                _ if host_differs => Ok((
                    w.responder.error(400, &w.date, false, out),
                    false,
                    None,
                    None,
                    None,
                )),
                Ok(r) if !too_large => {
                    // Only when a prefix is protected: before files or programs.
                    let verdict = match (checked, w.auth.as_mut()) {
                        (Some(verdict), _) => verdict,
                        (None, Some(a)) => a.check(r, peer.ip(), w.now, &mut w.stats),
                        (None, None) => Verdict::Open,
                    };
                    // Only when a gateway is configured: the static path checks nothing more.
                    let routed = match (&verdict, w.gateways.as_mut()) {
                        (Verdict::Denied(_), _) | (_, None) => None,
                        (_, Some(g)) => g.route(r.target, w.now),
                    };
                    let reply = match routed {
                        None => match &verdict {
                            Verdict::Denied(d) => {
                                d.count(r.authorization.is_some(), &mut w.stats);
                                w.responder.denied(r, d, &w.date, out)
                            }
                            _ => w.responder.respond(r, &w.date, w.now, out),
                        },
                        Some(Route::Refused(status)) => {
                            w.responder.error_to(r, status, &w.date, out)
                        }
                        // A program is told the body's length up front (RFC 3875 4.1.2): one
                        // that does not say it is answered once it is whole (`answer`); one
                        // already past the limit waits too, for the reset `answer` gives it.
                        Some(Route::Cgi(_) | Route::Proxy(_))
                            if body_gate(st.content_length, st.ended, st.body_in, w.max_body)
                                != BodyGate::Start =>
                        {
                            kept = Some(verdict);
                            return Err(());
                        }
                        Some(route @ (Route::Cgi(_) | Route::Proxy(_))) => {
                            match &route {
                                Route::Cgi(script) => {
                                    w.stats.count_gateway_request(script.app.is_some())
                                }
                                _ => w.stats.proxy_requests += 1,
                            }
                            match w.gateways.as_mut() {
                                None => w.responder.error(500, &w.date, false, out),
                                Some(g) if !g.reserve_for(route.proxy_mount()) => {
                                    w.stats.count_busy(route.proxy_mount());
                                    w.responder.busy(r, &w.date, out)
                                }
                                Some(g) => {
                                    let host = authority.map(|a| (&b"host"[..], a));
                                    let fields = (st.fields.iter())
                                        .map(|&(name, range)| (name, value(range)))
                                        .chain(st.others.iter().map(|&(n, v)| (value(n), value(v))))
                                        .chain(host);
                                    let asked = Asked {
                                        method,
                                        protocol: b"HTTP/2.0",
                                        // A body that arrived whole has its length.
                                        content_length: st
                                            .content_length
                                            .or((st.ended && st.body_in > 0).then_some(st.body_in)),
                                        fields,
                                    };
                                    let mut launch = g.launch(&route, r, asked, peer);
                                    if let Some(user) = verdict.user() {
                                        cgi::set_user(&mut launch, user);
                                    }
                                    let x = exchange::Exchange::new(
                                        r,
                                        method,
                                        b"HTTP/2.0",
                                        verdict.user(),
                                        limits.max_head_bytes,
                                        matches!(route, Route::Proxy(_)),
                                        logged,
                                    );
                                    program = Some((x, launch));
                                    return Err(());
                                }
                            }
                        }
                    };
                    let user = match verdict {
                        Verdict::Allowed(user) => Some(user),
                        _ => None,
                    };
                    Ok((
                        reply,
                        r.method == wire::Method::Head,
                        r.referer,
                        r.user_agent,
                        user,
                    ))
                }
                Ok(r) => {
                    let reply = w.responder.error(413, &w.date, false, out);
                    Ok((reply, false, r.referer, r.user_agent, None))
                }
                Err(e) => Ok((
                    w.responder.error(e.status(), &w.date, false, out),
                    false,
                    None,
                    None,
                    None,
                )),
            }
        });
    let (reply, is_head, referer, user_agent, user) = match answer {
        Ok(answer) => answer,
        Err(()) => match program {
            None => {
                h.streams.slots[i].verdict = kept;
                h.streams.slots[i].awaits_end = true;
                h.awaiting += 1;
                return;
            }
            Some((exchange, launch)) => {
                // A program answers: its head comes later (`gateway.rs`).
                h.launches.push((id, launch));
                let slot = &mut h.streams.slots[i];
                slot.trim();
                slot.answered = true;
                slot.gateway = Some(slot.boxed(exchange));
                return;
            }
        },
    };
    let (status, body_bytes, user) = (reply.status, reply.body_bytes, user.as_deref());
    let no_body = is_head || head_method;
    let line = &mut h.log_line;
    let body = if no_body { 0 } else { body_bytes };
    let held = log_or_hold(w, status, body, &mut h.staged_log, move || Entry {
        peer: peer.ip(),
        request_line: request_line(line, method, path, b"HTTP/2.0"),
        status,
        body_bytes,
        referer,
        user_agent,
        user,
    });
    // Refused for what the request is (the answers wire's checks and these limits give).
    h.streams.refused += u32::from(matches!(reply.status, 400 | 413 | 414 | 431));
    submit_reply(h, i, id, reply, no_body, &w.date);
    if held {
        h.hold_staged(i, id, w);
    }
}
