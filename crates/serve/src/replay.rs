//! One connection's protocol driven from memory, without a socket or an event loop: the bytes
//! a client sent, in the pieces given, and everything the server queued in answer, written out
//! as a transport would write it (file ranges read). For the fuzz targets, which feed it what
//! no test would think of; the connection loop, the timeouts and the transports are not in it.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant, SystemTime};

use wire::RequestLimits;

use crate::config::Config;
use crate::pool::{Pool, Seg};
use crate::protocol::{Negotiated, Session, Timeouts, Worker};
use crate::respond::{RespondError, Responder};
use crate::stats::ServerStats;

/// A server with one connection, over `config`'s root and limits.
pub struct Replay {
    worker: Worker,
    pool: Pool,
    session: Session,
}

impl Replay {
    pub fn new(config: &Config) -> Result<Replay, RespondError> {
        let now = Instant::now();
        Ok(Replay {
            worker: Worker {
                responder: Responder::new(config)?,
                log: None,
                stats: ServerStats::default(),
                limits: RequestLimits {
                    max_request_line: config.max_request_line,
                    max_head_bytes: config.max_header_bytes,
                    max_headers: config.max_headers,
                },
                now,
                wall: SystemTime::now(),
                date: *b"Wed, 25 Nov 2026 20:00:00 GMT",
                max_pipeline: config.max_pipeline_bytes as u64,
                max_body: config.max_body_bytes,
                body_min_rate: config.body_min_rate,
                timeouts: Timeouts {
                    header: Duration::from_millis(config.header_timeout_ms),
                    keepalive: Duration::from_millis(config.keepalive_timeout_ms),
                    send: Duration::from_millis(config.send_timeout_ms),
                    body: Duration::from_millis(config.body_timeout_ms),
                },
                http2: config.http2.then(|| config.http2_limits()),
                gateways: None,
                auth: None,
                h2_spares: Default::default(),
                held_logs: Default::default(),
            },
            pool: Pool::new(
                config.max_header_bytes.max(16 * 1024),
                4,
                config.max_pipeline_bytes,
            ),
            session: Session::new(SocketAddr::from(([127, 0, 0, 1], 1)), now),
        })
    }

    /// Receives `bytes` (as many reads as the input buffer needs) and appends what the server
    /// writes in answer to `out`. Returns false once the server closes the connection.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<u8>) -> bool {
        loop {
            if !bytes.is_empty() && self.session.wants_input() {
                let space = self.session.input_space(&mut self.pool);
                let n = space.len().min(bytes.len());
                space[..n].copy_from_slice(&bytes[..n]);
                self.session.received(n, self.worker.now);
                bytes = &bytes[n..];
            }
            let limited =
                self.session
                    .answer(&mut self.worker, &mut self.pool, Negotiated::Nothing);
            self.write_out(out);
            if self.session.close_after {
                return false;
            }
            if bytes.is_empty() && !limited {
                self.session.release_idle(&mut self.pool);
                return true;
            }
            if !limited && !self.session.wants_input() {
                // Input left that the session will not take (a partial head at its limit).
                return true;
            }
        }
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.worker.stats.requests
    }

    fn write_out(&mut self, out: &mut Vec<u8>) {
        let Some(b) = self.session.bufs.as_mut() else {
            return;
        };
        while let Some(seg) = b.segs.pop_front() {
            match &seg {
                Seg::Mem { start, end } => out.extend_from_slice(&b.out[*start..*end]),
                Seg::Shared { data, start, len } => {
                    out.extend_from_slice(&data[*start..*start + *len])
                }
                Seg::File { file, offset, len } => {
                    let at = out.len();
                    out.resize(at + *len as usize, 0);
                    file.read_exact_at(&mut out[at..], *offset)
                        .expect("a file range the responder gave");
                }
            }
        }
        b.out.clear();
        self.session.queued = 0;
    }
}
