//! HTTP/3's side of a request a program, a FastCGI application or an upstream answers
//! (`crate::gateway`, moved by `protocol/programs.rs` as HTTP/1.1's and HTTP/2's are), over the
//! protocol-neutral [`Exchange`] (`protocol/gateway.rs`) that HTTP/2 uses too.
//!
//! The request body is read from its stream only as the program takes it (at most
//! [`BODY_PIECE`] bytes held): a program that reads slowly leaves the rest in quiche, whose
//! flow control holds the client. Once the program's head is checked (`gateway/head.rs`) it
//! goes as the response's fields, and the body follows with `send_body` as flow control
//! takes it, from a buffer of at most `OUTPUT_WINDOW` bytes (the program's output is not read
//! past it): a client that reads slowly holds the program, not the server's memory. A
//! program's error before its head is an error page through the files' path (`H3::reply`);
//! one after it cuts the response (the stream reset once what came is sent and acknowledged:
//! a reset before would drop it, quiche's unsent bytes and the client's unread). A reset stream
//! or a closed connection ends the exchange: the program killed, its upstream connection not
//! pooled again, the request logged with 499 unless its status was sent.
//!
//! A connection with an exchange under way is kept from QUIC's idle timeout by a PING now
//! and then (`expire_programs`, the sweep's part): a slow program sends nothing meanwhile.
//!
//! Every HTTP/3 request of the thread shares one token ([`H3_TOKEN`]): an event of any of their
//! programs moves them all, as an HTTP/2 connection's programs are moved together.

use std::net::IpAddr;
use std::time::Instant;

use http3::{Field, RequestId};

use super::{H3, H3_INTERNAL_ERROR};
use crate::gateway::head::{HeadError, Location};
use crate::protocol::gateway::{End, Exchange, State, OUTPUT_WINDOW};
use crate::protocol::gather::Gathered;
use crate::protocol::programs::{Programs, Side};
use crate::protocol::Worker;
use crate::respond::Output;

/// The token the thread's HTTP/3 programs are registered under (no connection slot reaches
/// it, and it has neither `PROGRAM_TOKEN`'s nor `POOL_TOKEN`'s bit).
pub(crate) const H3_TOKEN: usize = crate::gateway::upstream::POOL_TOKEN - 1;
/// Request body bytes read from a stream at once for its program.
const BODY_PIECE: usize = 16 * 1024;

/// A response head kept whole while flow control holds it back: status, fields, and whether
/// it ends the response.
type HeldHead = (u16, Vec<(Vec<u8>, Vec<u8>)>, bool);

/// One HTTP/3 request's exchange with its program.
pub(crate) struct Exchange3 {
    x: Exchange,
    peer: IpAddr,
    /// Request body bytes read from the stream, not yet handed over: `body[at..]`.
    body: Vec<u8>,
    /// The body gathered whole before the program started (empty else): handed over first,
    /// its memory given back as soon as the program has all of it.
    gathered: Gathered,
    at: usize,
    /// The request body is all read.
    body_end: bool,
    /// The program's head, when flow control did not take it at once.
    held: Option<HeldHead>,
    /// The program's head went to quiche: its status is the one logged.
    head_sent: bool,
    /// The program ended with its head still held back: the request is logged once the head
    /// goes (with its status) or the stream is gone (499).
    log_pending: bool,
    /// The response went another way (an error page, a local redirect: `H3::reply`).
    replied: bool,
    /// The stream is ended (its last byte handed to quiche, or reset).
    finished: bool,
}

impl Exchange3 {
    /// What its gathered body still holds of its connection's room (`protocol/gather.rs`):
    /// charged until the program has all of it.
    pub(super) fn gathered_held(&self) -> u64 {
        self.gathered.held()
    }

    /// `body`: the request's body when it was gathered whole before (else empty, read from
    /// the stream as the program takes it).
    pub(super) fn new(
        x: Exchange,
        peer: IpAddr,
        body_end: bool,
        gathered: Gathered,
    ) -> Box<Exchange3> {
        Box::new(Exchange3 {
            x,
            peer,
            body: Vec::new(),
            gathered,
            at: 0,
            body_end,
            held: None,
            head_sent: false,
            log_pending: false,
            replied: false,
            finished: false,
        })
    }
}

impl Exchange3 {
    /// The request body is all received.
    pub(super) fn body_ended(&mut self) {
        self.body_end = true;
    }
}

impl H3 {
    /// Runs `f` on the thread's HTTP/3 programs and this side (taken out meanwhile).
    fn with_programs(&mut self, f: impl FnOnce(&mut Programs<RequestId>, &mut H3)) {
        let mut programs = std::mem::replace(&mut self.programs, Programs::new(H3_TOKEN));
        f(&mut programs, self);
        self.programs = programs;
    }

    /// Starts the programs requests asked for, then moves every program's bytes as far as
    /// they go.
    pub fn drive_programs(&mut self, w: &mut Worker) {
        if !self.launches.is_empty() {
            let mut launches = std::mem::take(&mut self.launches);
            self.with_programs(|p, h| p.start_all(&mut launches, h, w, &mut ()));
            if self.launches.is_empty() {
                self.launches = launches;
            }
        }
        if !self.programs.is_empty() {
            self.with_programs(|p, h| while p.pump(h, w, &mut ()) {});
        }
    }

    /// Whether `id`'s request body goes to a program still running (else it is read and
    /// dropped as it comes: nobody else would, and the stream would wait for its deadline).
    pub(super) fn body_wanted(&self, id: RequestId) -> bool {
        self.exchanges.get(&id).is_some_and(|e| !e.x.done)
    }

    /// `id`'s program response is not ended yet (nor went another way, `H3::reply`).
    pub(super) fn response_unfinished(&self, id: RequestId) -> bool {
        (self.exchanges.get(&id)).is_some_and(|e| !e.finished && !e.replied)
    }

    pub fn has_programs(&self) -> bool {
        !self.programs.is_empty()
    }

    /// Shutdown: the running programs killed (`Programs::kill_all`).
    pub fn kill_programs(&mut self) {
        self.programs.kill_all();
    }

    /// What the spawner made of a program an HTTP/3 request asked for (given back if none
    /// waits for it any more).
    pub fn program_spawned(
        &mut self,
        s: crate::gateway::spawner::Spawned,
        w: &mut Worker,
    ) -> Option<crate::gateway::spawner::Spawned> {
        let mut left = None;
        self.with_programs(|p, h| left = p.program_spawned(h, s, w, &mut ()));
        self.drive_programs(w);
        left
    }

    /// Kills the programs past their wall time (the sweep's part), and moves the others (how a
    /// program's exit is seen without a pidfd).
    pub fn expire_programs(&mut self, w: &mut Worker) {
        // A program or an upstream at work sends nothing: without a PING now and then, a
        // slow one would lose its request to QUIC's idle timeout.
        for id in self.exchanges.keys() {
            self.server.keep_alive(id.conn);
        }
        self.with_programs(|p, h| p.expire_programs(h, w, &mut ()));
        self.drive_programs(w);
    }

    /// The loop is ending: every program killed, its request logged as abandoned.
    pub fn abandon_programs(&mut self, w: &mut Worker) {
        self.with_programs(|p, h| p.abandon_programs(h, w, &mut ()));
    }

    /// The request's stream is gone (reset, or its connection closed): its exchange ends
    /// (logged with 499 unless its status was sent), and its program, which `alive` now
    /// refuses, is killed by the next pass.
    pub(super) fn gateway_gone(&mut self, id: RequestId, w: &mut Worker) {
        if let Some(mut e) = self.exchanges.remove(&id) {
            // The status logged is the one the client was sent: none (held back, or refused
            // by the stream) is 499.
            if !e.x.done {
                e.x.ended(End::Abandoned, w);
                if !e.head_sent && !e.replied {
                    e.x.rec.status = 499;
                }
                e.x.rec.finish(e.peer, w);
            } else if e.log_pending {
                e.x.rec.status = 499;
                e.x.rec.finish(e.peer, w);
            }
        }
    }

    /// Sends what `id`'s program response may send now: its head if held back, its body's
    /// buffered bytes, then its end (or its reset, when the program's output was cut). The
    /// exchange is dropped once the stream is ended and the program is done.
    pub(super) fn flush_exchange(&mut self, id: RequestId, w: &mut Worker) {
        let H3 {
            server, exchanges, ..
        } = self;
        let Some(e) = exchanges.get_mut(&id) else {
            return;
        };
        // The stream refused what was sent: the client stopped it, or its connection is gone.
        let mut failed = false;
        if let Some((status, fields, end)) = &e.held {
            // Every field kept (up to what `gateway_output` let through: `http3::MAX_FIELDS`).
            let mut list: [Field<'_>; http3::MAX_FIELDS] = [(b"", b""); http3::MAX_FIELDS];
            let n = fields.len().min(http3::MAX_FIELDS);
            for (field, (name, value)) in list.iter_mut().zip(fields) {
                *field = (&name[..], &value[..]);
            }
            match server.send_response(id, *status, &list[..n], *end) {
                Ok(()) => {
                    e.finished = *end;
                    e.held = None;
                    e.head_sent = true;
                    if e.log_pending {
                        e.log_pending = false;
                        e.x.rec.finish(e.peer, w);
                    }
                }
                Err(http3::Error::Blocked) => return,
                Err(_) => failed = true,
            }
        }
        while !e.finished && !e.replied && !failed {
            let x = &mut e.x;
            let avail = x.buf.len() - x.start;
            if avail > 0 {
                match server.send_body(id, &x.buf[x.start..], x.eof) {
                    Ok(taken) => {
                        x.start += taken;
                        if x.start == x.buf.len() {
                            x.buf.clear();
                            x.start = 0;
                            e.finished = x.eof;
                        }
                        if taken < avail {
                            break; // a Writable event says when more may go
                        }
                    }
                    Err(_) => failed = true,
                }
                continue;
            }
            if x.cut {
                // Once the head and the bytes that came are out: a reset now would drop them.
                let _ = server.reset_when_sent(id, H3_INTERNAL_ERROR);
                e.finished = true;
            } else if x.eof {
                // The end alone (the bytes before it went earlier), once the stream has room
                // for a frame (quiche takes no end without; `capacity` asks for a Writable).
                match server.capacity(id) {
                    Ok(0) => break,
                    Ok(_) => failed = server.send_body(id, &[], true).is_err(),
                    Err(_) => failed = true,
                }
                e.finished = true;
            } else {
                break;
            }
        }
        if failed {
            let _ = server.reset(id, H3_INTERNAL_ERROR);
            self.gateway_gone(id, w);
        } else if (e.finished || e.replied) && e.x.done {
            exchanges.remove(&id);
        }
    }
}

impl Side for H3 {
    type Id = RequestId;
    type Ctx = ();

    fn gateway_alive(&self, id: RequestId) -> bool {
        self.body_wanted(id)
    }

    fn gateway_body(&mut self, id: RequestId) -> &[u8] {
        let H3 {
            server, exchanges, ..
        } = self;
        let Some(e) = exchanges.get_mut(&id) else {
            return &[];
        };
        if !e.gathered.is_empty() {
            return e.gathered.bytes();
        }
        if e.at == e.body.len() && !e.body_end {
            // The next piece, read only now that the program took the last: the rest waits
            // in quiche, under the stream's flow control.
            e.body.resize(BODY_PIECE, 0);
            let n = server.recv_body(id, &mut e.body).unwrap_or(0);
            e.body.truncate(n);
            e.at = 0;
        }
        &e.body[e.at..]
    }

    fn gateway_body_done(&self, id: RequestId) -> bool {
        (self.exchanges.get(&id))
            .is_none_or(|e| e.body_end && e.gathered.is_empty() && e.at == e.body.len())
    }

    fn gateway_body_taken(&mut self, id: RequestId, n: usize, _now: Instant) {
        if let Some(e) = self.exchanges.get_mut(&id) {
            if e.gathered.is_empty() {
                e.at += n;
            } else {
                e.gathered.consume(n);
            }
        }
    }

    fn gateway_wants_output(&self, id: RequestId) -> bool {
        self.exchanges.get(&id).is_some_and(|e| {
            !e.x.done
                && (matches!(e.x.state, State::Discard)
                    || ((e.x.buf.len() - e.x.start) as u64) < OUTPUT_WINDOW)
        })
    }

    fn gateway_output(
        &mut self,
        id: RequestId,
        data: &[u8],
        w: &mut Worker,
        _: &mut (),
    ) -> Result<(), HeadError> {
        let Some(e) = self.exchanges.get_mut(&id) else {
            return Ok(());
        };
        if !matches!(e.x.state, State::Head) {
            if e.x.take_body(data) > 0 {
                self.flush_exchange(id, w);
            }
            return Ok(());
        }
        let Some((parsed, rest)) = e.x.head.feed(data)? else {
            return Ok(());
        };
        if let Some(Location::Local(path)) = &parsed.location {
            let out = Output::Fields {
                head: &mut self.head,
                body: &mut self.response,
            };
            let reply = e.x.answer_local(path, w, out);
            let is_head = e.x.is_head;
            e.replied = true;
            self.reply(id, reply, is_head, w);
            return Ok(());
        }
        // `date`, `server`, `alt-svc`, the program's, the length (`:status` besides): past
        // what the http3 crate takes, a 502 (nothing of the head has gone yet).
        let ours = 2 + usize::from(w.responder.alt_svc().is_some());
        let length_field = usize::from(parsed.content_length.is_some());
        if ours + parsed.fields.len() + length_field >= http3::MAX_FIELDS {
            return Err(HeadError::TooManyFields);
        }
        let (no_body, length) = e.x.head_taken(&parsed);
        // The program's head as it was checked: `date`, `server`, `alt-svc`, its fields
        // (lowercase), then its length.
        let mut digits = [0u8; 20];
        let length = length.map(|n| wire::head::format_u64(n, &mut digits));
        let date: &[u8] = &w.date;
        // Fewer than the http3 crate's limit, checked above: the array holds them all.
        let mut list: [Field<'_>; http3::MAX_FIELDS] = [(b"", b""); http3::MAX_FIELDS];
        list[0] = (b"date", date);
        list[1] = (b"server", w.responder.server_name());
        let mut n = 2;
        if let Some(alt_svc) = w.responder.alt_svc() {
            list[n] = (b"alt-svc", alt_svc);
            n += 1;
        }
        let program = parsed
            .fields
            .iter()
            .map(|(name, value)| (name.lower(), value));
        let all = program.chain(length.map(|l| (&b"content-length"[..], l)));
        for field in all {
            list[n] = field;
            n += 1;
        }
        let fields: &[Field<'_>] = &list[..n];
        match self
            .server
            .send_response(id, parsed.status, fields, no_body)
        {
            Ok(()) => {
                e.finished = no_body;
                e.head_sent = true;
            }
            Err(http3::Error::Blocked) => {
                w.stats.h3_heads_held += 1;
                let owned = (fields.iter())
                    .map(|(name, value)| (name.to_vec(), value.to_vec()))
                    .collect();
                e.held = Some((parsed.status, owned, no_body));
            }
            // The stream cannot take a response (the client stopped it, or its connection is
            // gone): the exchange ends as a reset one does, its program killed.
            Err(_) => {
                let _ = self.server.reset(id, H3_INTERNAL_ERROR);
                self.gateway_gone(id, w);
                return Ok(());
            }
        }
        if e.x.take_body(&rest) > 0 || no_body {
            self.flush_exchange(id, w);
        }
        Ok(())
    }

    fn gateway_end(&mut self, id: RequestId, end: End, w: &mut Worker, _: &mut ()) {
        let Some(e) = self.exchanges.get_mut(&id) else {
            return;
        };
        if let Some(status) = e.x.ended(end, w) {
            let out = Output::Fields {
                head: &mut self.head,
                body: &mut self.response,
            };
            let reply = w.responder.error(status, &w.date, false, out);
            e.x.rec.status = reply.status;
            e.x.rec.body_bytes = reply.body_bytes;
            e.replied = true;
            e.x.rec.finish(e.peer, w);
            let is_head = e.x.is_head;
            self.exchanges.remove(&id);
            self.reply(id, reply, is_head, w);
            return;
        }
        // Logged with the status the client gets: a held-back head's once it goes.
        match e.held.is_some() {
            true => e.log_pending = true,
            false => e.x.rec.finish(e.peer, w),
        }
        self.flush_exchange(id, w);
    }
}
