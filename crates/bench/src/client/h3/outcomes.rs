//! What becomes of an HTTP/3 connection's streams when things go wrong: a malformed response
//! failed alone, frames out of order closing the connection, the connection's end
//! told by kind (`http3::Closed`: a TLS alert, the idle timeout, a CONNECTION_CLOSE by code),
//! a GOAWAY's unprocessed streams and rejected ones kept to be sent again (what a connection
//! leaves judged by the rule HTTP/2 shares, `client/in_flight/refusals.rs`), stalled streams
//! timed out and cancelled, and everything in flight failed when the connection itself fails.

use super::super::exchange::Exchange;
use super::super::in_flight::{judge_refusals, not_retried, waiting_since, Refusals};
use super::super::page::Child;
use super::super::page_flow;
use super::super::stream_lanes;
use super::super::{ThreadState, Wire};
use super::{State, Stream, H3};
use crate::stats::{ErrorKind, Http3Stats, Stats, TlsFailure};
use http3::Closed;

impl H3 {
    /// The client says the connection has ended: why, counted by name, and its streams failed
    /// by that kind (nothing failed between pages).
    pub(super) fn closed(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let why = self.client.as_ref().and_then(http3::Client::closed);
        let up = self.state == State::Open;
        let in_window = cx.counts(now, now);
        let h = &mut cx.stats.http3;
        let kind = match why {
            Some(Closed::Handshake { alert, by_peer }) => {
                // The reason too, as a TLS handshake over TCP counts it and `--debug` says it:
                // what the run's reports and its last line say is wrong and what to do.
                let tls = &cx.sh.config.tls;
                let reason = tls_failure(self.client.as_mut(), alert, by_peer, tls.insecure);
                if in_window {
                    let name = format!("{} ({alert})", http3::alert_name(alert));
                    Http3Stats::count(&mut h.handshake_alerts, &name);
                }
                if let Some(reason) = reason {
                    cx.tls_failed(reason, None, now, now);
                }
                ErrorKind::H3Handshake
            }
            // Quiche's idle timeout, before the handshake is done, is the server not answering.
            Some(Closed::IdleTimeout) if !up => ErrorKind::ConnectTimeout,
            Some(Closed::IdleTimeout) => ErrorKind::H3IdleTimeout,
            Some(Closed::Error {
                by_peer: true,
                app,
                code,
                ..
            }) => {
                if in_window {
                    let name = match app {
                        true => http3::h3_code_name(code),
                        false => http3::quic_code_name(code),
                    };
                    Http3Stats::count(&mut h.connection_closes, name);
                }
                let clean = why.as_ref().is_some_and(Closed::is_clean);
                match self.goaway {
                    Some(_) if clean => ErrorKind::H3Goaway,
                    _ => ErrorKind::H3ConnectionClosed,
                }
            }
            Some(Closed::Error { by_peer: false, .. }) => ErrorKind::H3Protocol,
            Some(Closed::Quietly) | None => ErrorKind::Reset,
        };
        if cx.sh.config.debug {
            if let Some(why) = &why {
                eprintln!("flint: HTTP/3 connection ended: {why}");
            }
        }
        self.conn_failed(ch, cx, kind, now);
    }

    /// A malformed response on `stream` (RFC 9114 4.1.2): a stream error, H3_MESSAGE_ERROR
    /// both ways; it fails alone (`h3_protocol`) and the connection goes on.
    pub(super) fn malformed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        stream: u64,
        now: u64,
    ) {
        if let Some(client) = &mut self.client {
            let _ = client.reset(stream, http3::H3_MESSAGE_ERROR);
        }
        if let Some(s) = self.take(stream) {
            self.stream_failed(ch, cx, s, ErrorKind::H3Protocol, now);
        }
    }

    /// A frame out of HTTP/3's order on a request stream (RFC 9114 4.1: a HEADERS or DATA
    /// after the trailer section): a connection error, H3_FRAME_UNEXPECTED. This side closes
    /// the connection (`h3_protocol`), failing what is in flight; false: it is gone.
    pub(super) fn frame_unexpected(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        now: u64,
    ) -> bool {
        if let Some(client) = &mut self.client {
            client.close(H3_FRAME_UNEXPECTED, b"a frame after the trailer section");
        }
        self.conn_failed(ch, cx, ErrorKind::H3Protocol, now);
        false
    }

    /// Stream `s`, taken out of the table, failed alone as `kind`; the page goes on.
    pub(super) fn stream_failed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        s: Stream,
        kind: ErrorKind,
        now: u64,
    ) {
        self.processed = true;
        let bytes = s.ex.bytes();
        ch.record_failure(cx, &s.ex, kind, bytes, now);
        self.file_done(cx, &s.ex, false, now);
        self.spare.extend(s.app);
    }

    /// Streams the server's GOAWAY will not process (from its id on) are kept to be sent again
    /// on a new connection (`send_again`). Those rejected before it was read and not sent again
    /// yet go with what it left, judged as that is (`judge_refusals`); on the new connection a
    /// first rejection of each is sent again once more (`connecting.rs`, `start`).
    pub(super) fn take_unprocessed(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let Some(first) = self.goaway else { return };
        while let Some(i) = self.flight.position(|s| s.id >= first) {
            let s = self.flight.take(i);
            self.send_again(cx, s, now);
        }
    }

    /// A stream the server did not process (above its GOAWAY, or rejected) taken out of the
    /// table, its exchange kept to be sent again, counted as retried; its request side is reset
    /// (H3_REQUEST_CANCELLED; RFC 9114 section 5.2 lets the client cancel it): else quiche
    /// would go on sending what it holds of its body on the old connection, a body taken whole
    /// too (quiche takes more than it may send at once).
    pub(super) fn send_again(&mut self, cx: &mut ThreadState<'_>, s: Stream, now: u64) {
        if let Some(client) = &mut self.client {
            let _ = client.reset_request(s.id, http3::H3_REQUEST_CANCELLED);
        }
        let counted = cx.counts(s.ex.file_start_us, now);
        if counted {
            cx.stats.http3.retried += 1;
        }
        // Its buffers back to the pool: the request is built again when it goes.
        self.spare.extend(s.app);
        let mut ex = s.ex;
        ex.retried_on = if counted { self.conn_gen } else { 0 };
        ex.reset_response();
        self.requeue(cx, ex, now);
    }

    /// The timer fired with the connection open: each stream waiting longer than the response
    /// timeout is a `response_timeout` error and is cancelled (H3_REQUEST_CANCELLED); the
    /// others and the page go on. So is the page's next file when the server has allowed no
    /// stream for as long.
    pub(super) fn timed_out(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let timeout = cx.sh.schedule.response_timeout_us;
        // No stream waits from before `oldest_us`: the table is scanned only once that has
        // expired (the timer also wakes lanes and QUIC), and the bound is then made exact.
        if self.oldest_us != super::NONE && self.oldest_us + timeout <= now {
            while let Some(i) = (self.flight).position(|s| waiting_since(&s.ex) + timeout <= now) {
                let s = self.flight.take(i);
                if let Some(client) = &mut self.client {
                    let _ = client.reset(s.id, http3::H3_REQUEST_CANCELLED);
                }
                let bytes = s.ex.bytes();
                ch.record_failure(cx, &s.ex, ErrorKind::ResponseTimeout, bytes, now);
                self.file_done(cx, &s.ex, false, now);
                self.spare.extend(s.app);
            }
            self.oldest_us = self.flight.oldest_written().unwrap_or(super::NONE);
        }
        if self.no_room_since != super::NONE && self.no_room_since + timeout <= now {
            // What waited for a stream fails: those to send again, else the page's next file
            // (the page then ends: no more of its files are opened).
            self.no_room_since = super::NONE;
            // (Lanes: the page picked and not sent, if any, whatever waits to be sent again.)
            let next = match self.lanes {
                true => self.fresh,
                false => self.flight.retry.is_empty(),
            };
            if next {
                let ex = self.first_exchange(ch, cx.sh.workload);
                ch.record_failure(cx, &ex, ErrorKind::ResponseTimeout, 0, now);
                self.file_done(cx, &ex, false, now);
            }
            // A request held back goes with its exchange: its buffers back to the pool.
            self.release_held();
            // (Those the server rejected here are not sent again after all: not retried.)
            for k in 0..self.flight.retry.len() {
                let ex = self.flight.retry[k];
                not_retried(self, &mut cx.stats, &ex);
                ch.record_failure(cx, &ex, ErrorKind::ResponseTimeout, 0, now);
                self.file_done(cx, &ex, false, now);
            }
            self.flight.retry.clear();
            self.page_ok = false;
            self.fresh = false;
        }
    }

    /// The connection failed (or never came up): every stream in flight fails with `kind`, or,
    /// with none, the page's next file does; the connection is dropped and the page ended. A
    /// connection that was up sends what it never processed (what its GOAWAY left, what it
    /// rejected) again on a new one, as HTTP/2 does.
    pub(super) fn conn_failed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        kind: ErrorKind,
        now: u64,
    ) {
        self.take_packets(cx, now);
        if !self.busy {
            // The server closed (or broke) an idle connection between pages: nothing failed.
            return self.close();
        }
        let was_up = self.state == State::Open;
        // Sent in 0-RTT on a connection that never came up: its first stream is the one
        // failure (the page's next file, as without `--early-data`), the others unsent, so
        // error counts do not depend on the flag. Lanes: each stream is a page of its own,
        // failed, so each is a failure (failed pages and errors agree).
        let lanes = self.lanes;
        let first_early = (!was_up && !lanes)
            .then(|| self.flight.iter().map(|(_, s)| s.id).min())
            .flatten();
        let mut any = false;
        // (Failed with the connection, not above its GOAWAY: processed.)
        self.processed |= was_up && !self.flight.is_empty();
        for s in self.flight.drain() {
            if first_early.is_none_or(|first| first == s.id) {
                let bytes = s.ex.bytes();
                ch.record_failure(cx, &s.ex, kind, bytes, now);
            }
            if lanes {
                Child::record_page(cx, s.ex.page, false, now);
            }
            self.spare.extend(s.app);
            any = true;
        }
        // (Not when this side broke the connection over a protocol error without a GOAWAY: a
        // request it could not send is among what waits, and would fail so again.)
        let end = cx.sh.schedule.end_us;
        let broke = kind == ErrorKind::H3Protocol && self.goaway.is_none();
        if was_up && now < end && !broke && !self.flight.retry.is_empty() {
            // What the server never processed (its GOAWAY's, its rejections) is not failed: it
            // goes on a new connection, and the page (not a hit if a file failed) goes on with
            // it; once only from a connection on which the server processed nothing
            // (`judge_refusals`).
            any |= judge_refusals(self, ch, cx, now);
            if !self.flight.retry.is_empty() {
                self.page_ok &= !any;
                return self.connect(ch, cx, now);
            }
        }
        // A request held back goes with its exchange: its buffers back to the pool. (Those the
        // server did not process here are not sent again after all: not retried.)
        self.release_held();
        for k in 0..self.flight.retry.len() {
            let ex = self.flight.retry[k];
            not_retried(self, &mut cx.stats, &ex);
            ch.record_failure(cx, &ex, kind, 0, now);
            if lanes {
                Child::record_page(cx, ex.page, false, now);
            }
            any = true;
        }
        self.flight.retry.clear();
        // Nothing sent yet: the page's next file is what failed. Lanes: the page picked and
        // not sent, if any (with none, the lanes were between pages: its own outcome counted).
        if (!lanes && !any) || (lanes && self.fresh) {
            let ex = self.first_exchange(ch, cx.sh.workload);
            ch.record_failure(cx, &ex, kind, 0, now);
            if lanes {
                Child::record_page(cx, ex.page, false, now);
            }
        }
        self.close();
        self.fresh = false;
        self.busy = false;
        self.page_ok = false;
        // A server that broke HTTP/3 (h3_protocol) breaks it again on the next connection,
        // as one refusing the handshake does.
        let backoff = matches!(
            kind,
            ErrorKind::ConnectRefused
                | ErrorKind::ConnectOther
                | ErrorKind::H3Handshake
                | ErrorKind::H3Protocol
        );
        match lanes {
            true => page_flow::next_page(self, ch, cx, now, backoff),
            false => page_flow::end_page(self, ch, cx, false, now, backoff),
        }
    }
}

/// HTTP/3's code for a frame not permitted where it came (RFC 9114 8.1).
const H3_FRAME_UNEXPECTED: u64 = 0x105;

/// Why a QUIC handshake failed on TLS `alert`, by the reasons TLS over TCP counts: the
/// verifier's refusal of the certificate when this side sent the alert (none with `insecure`,
/// which refuses nothing), the server's alert when it sent one (40 handshake_failure and 70
/// protocol_version: nothing in common, `TlsFailure::of_alert`). None for an alert of
/// this side's for another reason (no `h3` by ALPN): the `HTTP/3:` line names it.
fn tls_failure(
    client: Option<&mut http3::Client>,
    alert: u8,
    by_peer: bool,
    insecure: bool,
) -> Option<TlsFailure> {
    use http3::CertificateRefusal as R;
    if by_peer {
        return Some(TlsFailure::of_alert(alert));
    }
    if insecure {
        return None;
    }
    Some(match client?.certificate_refusal()? {
        R::UnknownIssuer => TlsFailure::UnknownIssuer,
        R::NameMismatch => TlsFailure::NameMismatch,
        R::Expired => TlsFailure::Expired,
        R::NotYetValid => TlsFailure::NotYetValid,
        R::Other => TlsFailure::OtherCertificate,
    })
}

/// What a GOAWAY leaves for a new connection, judged by the rule HTTP/2 shares
/// (`in_flight/refusals.rs`).
impl Refusals for H3 {
    const REFUSED_AGAIN: ErrorKind = ErrorKind::H3Goaway;

    fn retry(&mut self) -> &mut Vec<Exchange> {
        &mut self.flight.retry
    }

    fn processed(&self) -> bool {
        self.processed
    }

    fn refused_at_once(&self) -> bool {
        !self.opened_any && self.goaway.is_some()
    }

    fn conn_gen(&self) -> u64 {
        self.conn_gen
    }

    fn retried(stats: &mut Stats) -> &mut u64 {
        &mut stats.http3.retried
    }

    fn refuse_waiting(&mut self, ch: &Child, cx: &mut ThreadState<'_>, now: u64) {
        // What waited for the connection: the lane's page picked, or the page's next file (by
        // what is left of the page, not `fresh`, which its first file sent clears: a page part
        // served on a connection before is refused here too).
        let files = ch.files(cx.sh.workload);
        let waiting = match self.lanes {
            true => self.fresh,
            false => {
                self.page_ok && self.next_file < files && !self.waits_for_values(cx.sh.workload)
            }
        };
        if !waiting {
            return;
        }
        let ex = match self.lanes {
            true => stream_lanes::lane_exchange(ch),
            false => {
                self.next_file += 1;
                Exchange {
                    file: self.next_file - 1,
                    file_start_us: match self.waited_from {
                        super::NONE => now,
                        t => t,
                    },
                    ..Exchange::new(ch.page)
                }
            }
        };
        self.fresh = false;
        self.requeue(cx, ex, now);
    }

    fn refused_failed(&mut self, cx: &mut ThreadState<'_>, at: usize, ex: &Exchange, now: u64) {
        match &mut self.held {
            Some((held, _)) if *held > at => *held -= 1,
            Some((held, _)) if *held == at => self.release_held(),
            _ => {}
        }
        self.file_done(cx, ex, false, now);
    }
}
