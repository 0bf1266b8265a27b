//! The requests out: HTTP/3's events of the connections that received something, as
//! [`ServerEvent`]s (a request after this side's GOAWAY refused there).

use super::{clocks, ConnId, RequestId, Server, ServerEvent};
use crate::fields::Fields;
use crate::{H3_MESSAGE_ERROR, H3_REQUEST_REJECTED};
use quiche::h3;
use quiche::h3::NameValue;

impl Server {
    /// The next event, or None until more datagrams arrive (or a deadline passes).
    pub fn poll(&mut self) -> Option<ServerEvent> {
        loop {
            if let Some(e) = self.events.pop_front() {
                return Some(e);
            }
            let slot = *self.to_poll.front()?;
            self.timers.get_mut().touch(slot);
            let generation = self.slots[slot as usize].generation;
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                self.to_poll.pop_front();
                continue;
            };
            let polled = match conn.h3.as_mut() {
                Some(h3) => h3.poll(&mut conn.quic),
                None => Err(h3::Error::Done),
            };
            let (stream, event) = match polled {
                Ok(e) => e,
                // Done, or an error HTTP/3 has closed the connection for: this connection
                // has nothing more until it receives again.
                Err(_) => {
                    super::head_budget::read_by_http3(conn);
                    conn.polling = false;
                    self.to_poll.pop_front();
                    self.sweep(slot, false);
                    continue;
                }
            };
            let id = RequestId {
                conn: ConnId { slot, generation },
                stream,
            };
            match event {
                h3::Event::Headers { list, more_frames } => {
                    // A block on a stream whose body is under way is its trailer section (RFC
                    // 9114 4.1), not a new request: ignored, as the server reads no trailers.
                    if clocks::body_under_way(conn, stream) {
                        continue;
                    }
                    super::head_budget::whole(conn, stream);
                    // After our GOAWAY a new request is refused (RFC 9114 5.2): the client
                    // may send it again on another connection.
                    if conn.goaway.is_some_and(|g| stream >= g) {
                        let _ = super::resets::shut_stream(conn, stream, H3_REQUEST_REJECTED);
                        self.refused_after_goaway += 1;
                        self.mark_send(slot);
                        continue;
                    }
                    // A malformed request is a stream error (RFC 9114 4.1.2): its stream is
                    // reset, the connection goes on.
                    if super::malformed::malformed(list.iter().map(|h| (h.name(), h.value()))) {
                        let _ = super::resets::shut_stream(conn, stream, H3_MESSAGE_ERROR);
                        self.malformed_requests += 1;
                        self.mark_send(slot);
                        continue;
                    }
                    conn.last_request = Some(conn.last_request.map_or(stream, |l| l.max(stream)));
                    if more_frames {
                        clocks::body_started(conn, stream, self.now);
                    }
                    return Some(ServerEvent::Request {
                        id,
                        fields: Fields(list),
                        end: !more_frames,
                    });
                }
                h3::Event::Data => return Some(ServerEvent::Body { id }),
                h3::Event::Finished => {
                    clocks::body_ended(conn, stream);
                    return Some(ServerEvent::BodyEnd { id });
                }
                h3::Event::Reset(code) => {
                    if super::resets::client_reset(conn, stream) {
                        self.mark_send(slot);
                    }
                    return Some(ServerEvent::Reset { id, code });
                }
                // A client's GOAWAY (it will open no more streams) and priority updates
                // change nothing for a server that answers streams as they come.
                h3::Event::GoAway | h3::Event::PriorityUpdate => continue,
            }
        }
    }
}
