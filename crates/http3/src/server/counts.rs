//! Counts of what the server met since it started, as `Server::counts` gives them.

/// Counts of what the server met (64-bit, since it started).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Connections accepted: a client's Initial that started one, counted once quiche read a
    /// packet of it (one that does not decrypt is no connection: `unknown`).
    pub accepted: u64,
    /// Handshakes done that resumed a session (the client's ticket opened): the others
    /// were full ones.
    pub resumed: u64,
    /// Datagrams for no connection that were not an Initial (late packets of an ended
    /// connection, or garbage), or were shaped as one and did not decrypt.
    pub unknown: u64,
    /// Datagrams too short or malformed to read a QUIC header from.
    pub malformed: u64,
    /// First datagrams refused: under 1,200 bytes, past the connection limit, after
    /// `go_away`, a version negotiation past the queue's bound, or an Initial with a good
    /// token from an address at its limit whose refused connection still closes.
    pub refused: u64,
    /// Version negotiation packets sent.
    pub version_negotiation: u64,
    /// GOAWAY frames sent ([`Server::go_away`](super::Server::go_away)), and requests refused
    /// after them.
    pub goaways_sent: u64,
    /// Requests refused (H3_REQUEST_REJECTED) because they came after this side's GOAWAY.
    pub refused_after_goaway: u64,
    /// Requests whose header block was malformed (RFC 9114 4.1.2: `server/malformed.rs`),
    /// their streams reset with H3_MESSAGE_ERROR.
    pub malformed_requests: u64,
    /// Connections refused because their address had `max_per_address` connections, each
    /// closed with CONNECTION_REFUSED: an Initial bringing a good Retry token (not counted
    /// in `accepted`; the connection is made to send the close), or a handshake done. (An
    /// Initial without a token at the limit gets a Retry; one with a good token while the
    /// address's refused connection still closes is dropped, in `refused`.)
    pub refused_per_address: u64,
    /// Handshakes not done within the header timeout (the connection closed).
    pub handshake_timeouts: u64,
    /// Request streams whose header block was not whole within the header timeout (reset).
    pub header_timeouts: u64,
    /// Request streams refused (reset with H3_REQUEST_REJECTED) while their header block
    /// arrived, its bytes past the connection's share or the server's budget of bytes held
    /// in unfinished header blocks ([`ServerConfig::header_budget`](crate::ServerConfig::header_budget)).
    pub header_budget_refused: u64,
    /// The most bytes unfinished header blocks held at once (what
    /// [`Server::header_bytes`](super::Server::header_bytes) says), never past the budget.
    pub header_bytes_peak: u64,
    /// Connections closed (GOAWAY, then H3_NO_ERROR) after the keep-alive timeout with no
    /// request stream open.
    pub keep_alive_closes: u64,
    /// Connections closed because their responses made no progress for the send timeout.
    pub send_timeouts: u64,
    /// Request bodies no longer read because they missed their deadline
    /// ([`crate::Timeouts::body`]).
    pub body_timeouts: u64,
    /// Retry packets sent (address validation), and Initials dropped because their token,
    /// of our format, did not open: forged or changed, for another address, or expired (a
    /// token of no format of ours is taken as none).
    pub retries: u64,
    /// Initials dropped because their token, of our format, did not open.
    pub bad_tokens: u64,
    /// Stateless resets sent (short-header packets for a connection not known here).
    pub stateless_resets: u64,
    /// New client addresses a connection moved to (a NAT that rebound its port, a client that
    /// changed networks): a short-header packet from each, decrypted, answered there (a
    /// Handshake or 0-RTT packet from a new address is read on the path quiche has, answered
    /// at the old address, and not counted). Past quiche's
    /// paths (seven changes) a new address of an IP the connection proved takes an old one's
    /// path (`server/paths.rs`).
    pub address_changes: u64,
    /// Datagrams dropped unread because they came from a new client address, past quiche's
    /// paths, whose IP the connection has not proved (the first address's, or one quiche
    /// validated a path to): a client that changed networks more than seven times, or a copy
    /// of a client's packet sent from elsewhere (`server/paths.rs`).
    pub address_changes_refused: u64,
}
