//! The server's counters: plain `u64`s each event-loop thread bumps for itself, merged when asked.
//!
//! Their own module so that everything that counts (the event loop, the protocol, the I/O
//! drivers) depends on them, and they on nothing.

macro_rules! counters {
    ($(#[$sm:meta])* pub struct $name:ident { $($(#[$m:meta])* $f:ident,)* }) => {
        $(#[$sm])*
        pub struct $name { $($(#[$m])* pub $f: u64,)* }
        impl $name {
            /// Adds `o`'s counters to these.
            pub fn merge(&mut self, o: &$name) { $(self.$f += o.$f;)* }
        }
    };
}

counters! {
    /// Per-thread counters, plain `u64`s bumped by their own thread and merged when `run` returns
    /// (or on a [`crate::ShutdownHandle::stats`] request): no atomic per request.
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct ServerStats {
        /// Event-loop threads.
        threads,
        /// `epoll_wait` calls.
        wakeups,
        /// `accept4` calls, failed ones included.
        accept_calls,
        /// Connections accepted.
        accepted,
        /// Accepted past `max_connections` with every held connection busy, and closed at once.
        rejected,
        /// Connections waiting for a request (idle keep-alive, or silent since accept) closed to
        /// admit a new one at `max_connections`.
        idle_evictions,
        /// `accept4` failures other than EAGAIN (EMFILE, ENFILE...).
        accept_errors,
        /// Times accepting paused after such a failure.
        accept_pauses,
        /// Connections whose first request was answered by the read made right after accept.
        optimistic_hits,
        /// `epoll_ctl(ADD)` calls for connections.
        registrations,
        /// Connections closed, whatever the reason.
        closed,
        /// Closes that sent FIN and drained the client's input first.
        lingering_closes,
        /// Connections closed at `header_timeout_ms` still waiting for a whole request head (a
        /// TLS handshake's wait included).
        header_timeouts,
        /// Request bodies cut at their deadline (`body_timeout_ms`, `body_min_rate`).
        body_timeouts,
        /// Idle keep-alive connections closed after `keepalive_timeout_ms`.
        idle_timeouts,
        /// Connections abandoned because a response made no progress for `send_timeout_ms`.
        send_timeouts,
        /// Requests answered (error responses to unparsable ones included).
        requests,
        /// Responses by status class: 1xx.
        status_1xx,
        /// Responses with a 2xx status.
        status_2xx,
        /// Responses with a 3xx status (304 included).
        status_3xx,
        /// Responses with a 4xx status.
        status_4xx,
        /// Responses with a 5xx status.
        status_5xx,
        /// `recv` calls on connections (failed ones included), and the bytes they returned.
        reads,
        /// Bytes those `recv` calls returned (over TLS: ciphertext).
        read_bytes,
        /// Writes of in-memory output (`send` for one segment, a gathered `sendmsg` for more;
        /// over TLS a `writev` of sealed records), and their bytes (over TLS: ciphertext).
        writes,
        /// Bytes those writes took.
        written_bytes,
        /// `sendfile` calls, and their bytes.
        sendfiles,
        /// Bytes those `sendfile` calls sent.
        sendfile_bytes,
        /// `pread` calls that fetch a file body's next chunk for the TLS writer, and their bytes.
        file_reads,
        /// Bytes those `pread` calls read.
        file_read_bytes,
        /// Input buffers created because the pool was empty (flat in steady state).
        buffers_created,
        /// Access-log writes, and failed ones.
        log_flushes,
        /// Access-log writes that failed (their lines dropped).
        log_errors,
        /// TLS handshakes completed.
        tls_handshakes,
        /// Of those, resumed ones (session ticket or session cache).
        tls_resumed,
        /// TLS connections closed for a protocol error: a failed handshake, a garbage or
        /// undecryptable record.
        tls_errors,
        /// Connections to the TLS port that began with a plain HTTP request instead of a TLS
        /// record: answered with an unencrypted 400 saying so, then closed (not in `tls_errors`).
        tls_plain_http,
        /// Of the header timeouts, those that struck before the handshake was done.
        tls_handshake_timeouts,
        /// Connections by the protocol they spoke, counted when it was decided (by ALPN or by
        /// the first bytes); a connection closed before that is in neither.
        http1_connections,
        /// Connections that spoke HTTP/2.
        http2_connections,
        /// HTTP/2 streams the clients opened (requests, refused ones included).
        h2_streams,
        /// RST_STREAM frames received from clients, and sent to them (a refused or failed
        /// stream, a flow-control error).
        h2_resets_received,
        /// RST_STREAM frames sent to clients.
        h2_resets_sent,
        /// GOAWAY frames sent (graceful shutdown, a protocol error, a flood cut) and received.
        h2_goaways_sent,
        /// GOAWAY frames received from clients.
        h2_goaways_received,
        /// HTTP/3: QUIC connections accepted (their client's Initial read: one that does
        /// not decrypt is none, and is in `h3_dropped`).
        http3_connections,
        /// HTTP/3 requests answered (also in `requests`).
        http3_requests,
        /// QUIC handshakes that resumed a session (the client's ticket opened; the others
        /// were full handshakes).
        h3_resumed,
        /// UDP datagrams received and sent by the HTTP/3 sockets, and sends put off because
        /// the socket's buffer was full (the datagram waits for it to be writable).
        h3_datagrams_received,
        /// UDP datagrams the HTTP/3 sockets sent.
        h3_datagrams_sent,
        /// System calls that sent them: with UDP GSO one `sendmsg` carries up to 64 datagrams
        /// of one size to one peer, which the kernel cuts.
        h3_send_calls,
        /// HTTP/3 sends put off because the socket's buffer was full.
        h3_send_blocked,
        /// HTTP/3 sockets (one a thread) sending one datagram a call: the kernel lacks UDP GSO
        /// (`UDP_SEGMENT`) or refused it 8 times in a row, or `FLINT_H3_NO_GSO` was set (to
        /// anything) at start.
        h3_gso_off,
        /// System calls that read the HTTP/3 sockets (`recvmmsg`, or `recvmsg` where that is
        /// refused), every one counted: a call that got fewer messages than it asked for
        /// ends the reading (the socket is empty), so one that hears `EAGAIN` is made only
        /// after a call that got all it asked for. With `h3_datagrams_received`, datagrams
        /// per call.
        h3_recv_calls,
        /// HTTP/3 sockets (one a thread) reading one datagram a message: the kernel refused
        /// UDP GRO (`UDP_GRO`, before Linux 5.0), or `FLINT_H3_NO_GRO` was set (to anything)
        /// at start.
        h3_gro_off,
        /// HTTP/3 sockets reading one message a call (`recvmsg`): the kernel or a sandbox
        /// refused `recvmmsg`.
        h3_recvmmsg_off,
        /// HTTP/3 sockets sharing their port (two threads or more) whose datagrams the kernel
        /// hands out by the hash of their 4-tuple alone: it refused the program that steers a
        /// packet to the thread its connection ID names (before Linux 4.5, a sandbox), or
        /// `h3_steer` is false, or `FLINT_H3_NO_STEER` was set (to anything) at start. A
        /// client whose port changes then loses its connection.
        h3_steer_off,
        /// Datagrams dropped unread: malformed, for no connection, a first packet refused
        /// (too short, past `h3_max_connections`, after the shutdown began, or from an
        /// address at `h3_max_connections_per_address` whose refused connection still
        /// closes), a bad Retry token (`h3_bad_tokens`), or from a new client address not
        /// followed (`h3_address_changes_refused`); and messages the kernel cut short on the
        /// HTTP/3 sockets (`MSG_TRUNC`, `MSG_CTRUNC`).
        h3_dropped,
        /// QUIC connections refused at `h3_max_connections_per_address`, closed with
        /// CONNECTION_REFUSED: a first packet bringing a Retry's token back (a connection made
        /// to send the close, not in `http3_connections`), or a handshake completing past the
        /// limit. Not in `h3_dropped`. (A first packet without a token at the limit gets a
        /// Retry, `h3_retries`.)
        h3_refused_per_address,
        /// HTTP/3 requests whose header block was malformed (RFC 9114 4.1.2: a pseudo-header
        /// missing, repeated or late, an uppercase name, a connection-specific field): the
        /// stream reset with H3_MESSAGE_ERROR, the connection kept.
        h3_malformed_requests,
        /// QUIC handshakes not done within `header_timeout_ms` (closed), and HTTP/3 request
        /// streams whose header block was not whole within it (reset).
        h3_handshake_timeouts,
        /// HTTP/3 request streams reset because their header block was not whole within
        /// `header_timeout_ms`.
        h3_header_timeouts,
        /// HTTP/3 request streams refused (reset with H3_REQUEST_REJECTED) while their header
        /// block arrived: its bytes would have passed the connection's share or the thread's
        /// share of `h3_header_budget`.
        h3_header_budget_refused,
        /// The most bytes HTTP/3 request header blocks not whole yet held at once on a thread
        /// (summed over the threads: at most `h3_header_budget`).
        h3_header_bytes_peak,
        /// HTTP/3 connections closed after `keepalive_timeout_ms` with no request open
        /// (GOAWAY, then H3_NO_ERROR), PINGs or not.
        h3_keepalive_closes,
        /// HTTP/3 connections closed because their responses made no progress for
        /// `send_timeout_ms` (streams reset).
        h3_send_timeouts,
        /// HTTP/3 request bodies no longer read past `body_timeout_ms` and `body_min_rate`
        /// (STOP_SENDING, or the stream reset while its response was held back); not in
        /// `body_timeouts`, which counts HTTP/1.1's and HTTP/2's.
        h3_body_timeouts,
        /// HTTP/3 response heads (a file's, an error page's, a gateway's) flow control had no
        /// room for when they were ready (the connection's window full): kept whole and sent
        /// once the client opened its windows, or dropped with their stream.
        h3_heads_held,
        /// Retry packets sent (address validation: `h3_retry`), and first packets dropped
        /// because their token was forged, for another address, or expired (also in
        /// `h3_dropped`).
        h3_retries,
        /// First packets dropped because their token was forged, for another address, or expired
        /// (also in `h3_dropped`).
        h3_bad_tokens,
        /// Stateless resets sent: packets for a connection this thread does not know.
        h3_stateless_resets,
        /// New client addresses HTTP/3 connections moved to (a NAT that rebound the client's
        /// port, a client that changed networks): any number a connection, its memory bounded
        /// (the `http3` crate's `server/paths.rs`).
        h3_address_changes,
        /// Datagrams of a connection from a new client address dropped unread: past the
        /// seven changes quiche keeps paths for, an address whose IP the connection has not
        /// proved (its first, or one quiche validated) is not followed, so that a copy of a
        /// client's packet cannot point its traffic at another host (also in `h3_dropped`).
        h3_address_changes_refused,
        /// HTTP/3 GOAWAY frames sent (graceful shutdown).
        h3_goaways_sent,
        /// HTTP/3 requests handed out while their connection was in 0-RTT (`h3_early_data`):
        /// its handshake not done, so possibly a replay; also in `http3_requests`.
        h3_early_requests,
        /// Of those, the ones refused with 425 Too Early: not safe to run twice (a method but
        /// GET, HEAD, OPTIONS, or a program's or an upstream's path).
        h3_too_early,
        /// Requests a CGI program was to answer (the refused ones included: 413, 503).
        cgi_requests,
        /// CGI programs started.
        cgi_starts,
        /// CGI requests refused with 503 at `cgi_max_programs`.
        cgi_busy,
        /// Programs that could not be started (the request got 500, or 503 when short of
        /// processes or memory).
        cgi_start_failures,
        /// Programs killed at `cgi_timeout_ms`.
        cgi_timeouts,
        /// Programs whose response head was refused (502).
        cgi_bad_heads,
        /// Programs killed by a signal before they finished (crashed mid-response), but those
        /// the server killed at shutdown.
        cgi_died,
        /// Programs still running at shutdown, killed by the server (their responses cut, or
        /// 502).
        cgi_killed_at_shutdown,
        /// Programs killed past `cgi_max_output_bytes`.
        cgi_output_limits,
        /// Bytes programs (and FastCGI applications) wrote to stderr (their lines go to the
        /// error log, bounded).
        cgi_stderr_bytes,
        /// Requests under a protected prefix let through (Basic authentication), and of those
        /// the ones whose credentials the thread had verified already (no hash check).
        auth_ok,
        /// Of `auth_ok`, requests whose credentials the thread had verified already (no hash
        /// check).
        auth_cached,
        /// Requests under a protected prefix without credentials (401: the challenge).
        auth_missing,
        /// Requests whose credentials were wrong or malformed (401).
        auth_failed,
        /// Requests refused unchecked (429) because their client address failed too often.
        auth_limited,
        /// Requests a FastCGI application was to answer (the refused ones included).
        fastcgi_requests,
        /// Connections opened to FastCGI applications (the other requests reused one).
        fastcgi_connects,
        /// FastCGI requests sent again on a new connection: the pooled one they were sent on
        /// failed before the application said anything (it had closed it).
        fastcgi_retries,
        /// FastCGI requests that failed at the application: no connection (502), the
        /// connection broken or a malformed record, the request refused by END_REQUEST.
        fastcgi_failures,
        /// Reads of FastCGI connections, counted as their request ends: one per response
        /// that fits a read (none is made before the application can have answered).
        fastcgi_reads,
        /// Requests a proxy mount was to answer (the refused ones included).
        proxy_requests,
        /// Proxied requests refused with 503 at their mount's `max_in_flight`.
        proxy_busy,
        /// Connections opened to upstreams (the other requests reused one), counted as their
        /// request ends; a connect refused is none.
        proxy_connects,
        /// Proxied requests sent again on a new connection (nothing of them had reached the
        /// upstream, or idempotent with nothing back).
        proxy_retries,
        /// Proxied requests whose upstream refused the connection (502).
        proxy_refused,
        /// Proxied requests whose connection was reset or closed before the response's end
        /// (502, or the client's response cut).
        proxy_resets,
        /// Proxied requests past a timeout (504, or the client's response cut).
        proxy_timeouts,
        /// Upstream responses with a malformed or oversized head, a 101, or a malformed chunk.
        proxy_bad_responses,
        /// Upstream responses followed by bytes past their length (dropped with the connection).
        proxy_overlong,
        /// Reads of upstream connections (peeks included, those of pooled connections a take
        /// dropped too), counted as their request ends (a dropping peek as its take is made):
        /// one per proxied response that fits a read, on a kept connection.
        proxy_reads,
        /// Proxied requests from a trusted client whose `Forwarded` broke RFC 7239's grammar:
        /// dropped, the server's element sent alone.
        proxy_forwarded_malformed,
        /// Proxied requests whose `https://` upstream's TLS handshake failed: a certificate
        /// refused (its reason in the error log), no version in common, not TLS (502).
        proxy_tls_failures,
        /// Pooled connections (FastCGI or upstream) dropped because the other side closed them
        /// (or wrote unasked) while idle, as their request ended, or as a request took them
        /// (an upstream's, found by the take's peek): never used for a request.
        pool_peer_closed,
    }
}

impl ServerStats {
    /// A request a gateway is to answer: a FastCGI application's, or a CGI program's.
    pub(crate) fn count_gateway_request(&mut self, fastcgi: bool) {
        if fastcgi {
            self.fastcgi_requests += 1;
        } else {
            self.cgi_requests += 1;
        }
    }

    /// A gateway request refused with 503, no slot left: a proxy mount's (`max_in_flight`),
    /// else a program's (`cgi_max_programs`).
    pub(crate) fn count_busy(&mut self, proxy_mount: Option<usize>) {
        match proxy_mount {
            Some(_) => self.proxy_busy += 1,
            None => self.cgi_busy += 1,
        }
    }

    /// The connection syscalls counted here: `epoll_wait`, `accept4`, `epoll_ctl`, `recv`,
    /// `send`/`sendmsg`, `sendfile`, `pread`, `close` (and `shutdown` for lingering closes).
    pub fn syscalls(&self) -> u64 {
        self.wakeups
            + self.accept_calls
            + self.registrations
            + self.reads
            + self.writes
            + self.sendfiles
            + self.file_reads
            + self.closed
            + self.rejected
            + self.lingering_closes
    }
}
