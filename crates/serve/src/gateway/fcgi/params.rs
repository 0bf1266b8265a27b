//! A FastCGI request's first records, BEGIN_REQUEST and its PARAMS, encoded from the request
//! straight into the output buffer its exchange will write (one of the pool's recycled ones):
//! no environment is made first (`cgi::meta_variables` hands each variable over as it goes).
//! The stream stays open until the request starts (`Exchange::start` ends it), so that what is
//! known only later (the user Basic authentication let in) joins it.

use super::record::Encoder;
use crate::gateway::upstream::Buffers;

/// The records of a request not started yet.
#[derive(Debug)]
pub(crate) struct Params {
    /// `out` holds BEGIN_REQUEST and the PARAMS so far.
    pub buffers: Buffers,
    pub encoder: Encoder,
    /// Whether its method is idempotent (RFC 9110 9.2.2): only such a request may be sent
    /// again on a new connection (`Exchange::may_retry`).
    pub idempotent: bool,
}

impl Params {
    /// BEGIN_REQUEST (asking the application to keep the connection if `keep_conn`) into
    /// `buffers`, emptied first.
    pub fn new(mut buffers: Buffers, keep_conn: bool, method: &[u8]) -> Params {
        let mut encoder = Encoder::default();
        buffers.out.clear();
        encoder.begin(&mut buffers.out, keep_conn);
        Params {
            buffers,
            encoder,
            idempotent: matches!(
                method,
                b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE" | b"PUT" | b"DELETE"
            ),
        }
    }

    /// One more name-value pair.
    pub fn param(&mut self, name: &[u8], value: &[u8]) {
        self.encoder.param(&mut self.buffers.out, name, value);
    }
}
