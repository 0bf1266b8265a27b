//! The error taxonomy: why a request failed, and the errors counted by kind.

use serde::{Deserialize, Serialize};

/// Why a request failed. Each is counted separately; the JSON key is the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server refused the TCP connect (nothing listening on the port).
    ConnectRefused,
    /// The connect did not complete within the connect timeout.
    ConnectTimeout,
    /// Any other connect failure (unreachable, out of ports, ...).
    ConnectOther,
    /// Connection reset or closed before the response was complete (and not a short body).
    Reset,
    /// The response did not complete within the response timeout.
    ResponseTimeout,
    /// The status line did not parse.
    MalformedStatus,
    /// The header fields did not parse. (A head of well-formed fields that is too large to
    /// read is `HeadTooLarge`.)
    MalformedHeaders,
    /// Fewer body bytes than the framing promised, or a broken chunk.
    ShortBody,
    /// A 1xx status.
    Status1xx,
    /// A 3xx status not followed as a redirect.
    Status3xx,
    /// A 4xx status.
    Status4xx,
    /// A 5xx status.
    Status5xx,
    /// A read or write failed in another way.
    Io,
    /// HTTPS: the server's certificate was refused (untrusted, expired, another name).
    TlsCertificate,
    /// HTTPS: the handshake failed (no common version or cipher, a plaintext server, a
    /// handshake that did not finish in the connect timeout).
    TlsHandshake,
    /// HTTPS: the connection was reset or closed during the handshake.
    TlsReset,
    /// HTTP/2: the server did not choose `h2` by ALPN, or answered HTTP/1 to prior knowledge.
    H2NotNegotiated,
    /// HTTP/2: the server reset the stream (its error code is counted in `Http2Stats`).
    H2RstStream,
    /// HTTP/2: the connection ended by GOAWAY with the stream not done (streams the server
    /// never processed are retried instead, not counted here).
    H2Goaway,
    /// HTTP/2: the server broke the protocol (a malformed frame, HPACK that does not decode,
    /// a flow-control violation); the connection is ended.
    H2Protocol,
    /// HTTP/2: the server's SETTINGS did not arrive within the connect timeout.
    H2SettingsTimeout,
    /// A 2xx status not in `--expect-status`.
    Status2xx,
    /// `--redirect N`: a page entry still redirected after N redirects followed (a loop, or a
    /// chain longer than N), as hey, oha and curl -L count it.
    TooManyRedirects,
    /// Application workloads (`expect`): the status is not one the file expects.
    CheckStatus,
    /// A header field missing, or not the value expected.
    CheckHeader,
    /// The Content-Type is not the one expected.
    CheckContentType,
    /// The body does not hold the text or match the regular expression expected.
    CheckBody,
    /// The body is not JSON, or a pointer is missing or not the value expected.
    CheckJson,
    /// The body's length is outside the range expected.
    CheckLength,
    /// A value to extract was not in the response. (A later request that needs a value never
    /// extracted is not sent: `MissingValueUnsent`.)
    ExtractMissing,
    /// A body a check or an extraction reads is longer than flint keeps.
    BodyTooLarge,
    /// A `unique` data set has given every row: the Webchild stops (its page is not fetched).
    DataExhausted,
    /// HTTP/3: the QUIC handshake failed on a TLS alert (an untrusted certificate, one for
    /// another name, no `h3` by ALPN; the alert is counted by name in `Http3Stats`).
    H3Handshake,
    /// HTTP/3: the connection ended on QUIC's idle timeout (no packet from the server for it).
    H3IdleTimeout,
    /// HTTP/3: the server reset the stream (its code is counted by name in `Http3Stats`; one
    /// rejected with H3_REQUEST_REJECTED, not processed, is sent again first, once a
    /// connection).
    H3StreamReset,
    /// HTTP/3: the server closed the connection with an error (CONNECTION_CLOSE: its code by
    /// name in `Http3Stats`) with the stream not done.
    H3ConnectionClosed,
    /// HTTP/3: the connection ended after the server's GOAWAY with the stream not done
    /// (streams it never processed are retried instead, not counted here).
    H3Goaway,
    /// HTTP/3: the server broke the protocol: a malformed response (its stream alone fails,
    /// reset with H3_MESSAGE_ERROR), or what this side closed the connection over (frames out of
    /// order, a stream ended with no head).
    H3Protocol,
    /// A response head larger than the client reads: more than
    /// `wire::response::MAX_RESPONSE_HEADERS` fields or `wire::response::MAX_RESPONSE_HEAD`
    /// bytes (well formed, but not read whole, so neither judged nor framed).
    HeadTooLarge,
    /// Application workloads: a request not sent because it needs a value never extracted
    /// (the server received nothing; its page ends there, failed).
    MissingValueUnsent,
    /// Application workloads: a request not sent because a header field's value would have had
    /// a line break or NUL, which would split its head (the server received nothing; its page
    /// ends there, failed).
    UnsafeValueUnsent,
}

impl ErrorKind {
    /// Every kind, in the order of their counters in `ErrorCounts` (and of the reports' error
    /// tables); fail fast reads a failure signature back through it.
    pub const ALL: [ErrorKind; 41] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::ConnectOther,
        ErrorKind::Reset,
        ErrorKind::ResponseTimeout,
        ErrorKind::MalformedStatus,
        ErrorKind::MalformedHeaders,
        ErrorKind::ShortBody,
        ErrorKind::Status1xx,
        ErrorKind::Status3xx,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
        ErrorKind::Io,
        ErrorKind::TlsCertificate,
        ErrorKind::TlsHandshake,
        ErrorKind::TlsReset,
        ErrorKind::H2NotNegotiated,
        ErrorKind::H2RstStream,
        ErrorKind::H2Goaway,
        ErrorKind::H2Protocol,
        ErrorKind::H2SettingsTimeout,
        ErrorKind::Status2xx,
        ErrorKind::TooManyRedirects,
        ErrorKind::CheckStatus,
        ErrorKind::CheckHeader,
        ErrorKind::CheckContentType,
        ErrorKind::CheckBody,
        ErrorKind::CheckJson,
        ErrorKind::CheckLength,
        ErrorKind::ExtractMissing,
        ErrorKind::BodyTooLarge,
        ErrorKind::DataExhausted,
        ErrorKind::H3Handshake,
        ErrorKind::H3IdleTimeout,
        ErrorKind::H3StreamReset,
        ErrorKind::H3ConnectionClosed,
        ErrorKind::H3Goaway,
        ErrorKind::H3Protocol,
        ErrorKind::HeadTooLarge,
        ErrorKind::MissingValueUnsent,
        ErrorKind::UnsafeValueUnsent,
    ];

    /// The kinds that are a complete response counted as an error: its status (by default
    /// 4xx and 5xx; with `--expect-status`, any status not in it), a redirect past
    /// `--redirect N`, or an application workload's response that failed a check or an
    /// extraction.
    pub const STATUSES: [ErrorKind; 14] = [
        ErrorKind::Status1xx,
        ErrorKind::Status2xx,
        ErrorKind::Status3xx,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
        ErrorKind::TooManyRedirects,
        ErrorKind::CheckStatus,
        ErrorKind::CheckHeader,
        ErrorKind::CheckContentType,
        ErrorKind::CheckBody,
        ErrorKind::CheckJson,
        ErrorKind::CheckLength,
        ErrorKind::ExtractMissing,
        ErrorKind::BodyTooLarge,
    ];

    /// The snake_case name: the JSON key, the log's error column and the reports' row label.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::ConnectOther => "connect_other",
            ErrorKind::Reset => "reset",
            ErrorKind::ResponseTimeout => "response_timeout",
            ErrorKind::MalformedStatus => "malformed_status",
            ErrorKind::MalformedHeaders => "malformed_headers",
            ErrorKind::ShortBody => "short_body",
            ErrorKind::Status1xx => "status_1xx",
            ErrorKind::Status3xx => "status_3xx",
            ErrorKind::Status4xx => "status_4xx",
            ErrorKind::Status5xx => "status_5xx",
            ErrorKind::Io => "io",
            ErrorKind::TlsCertificate => "tls_certificate",
            ErrorKind::TlsHandshake => "tls_handshake",
            ErrorKind::TlsReset => "tls_reset",
            ErrorKind::Status2xx => "status_2xx",
            ErrorKind::H2NotNegotiated => "h2_not_negotiated",
            ErrorKind::H2RstStream => "h2_rst_stream",
            ErrorKind::H2Goaway => "h2_goaway",
            ErrorKind::H2Protocol => "h2_protocol",
            ErrorKind::H2SettingsTimeout => "h2_settings_timeout",
            ErrorKind::TooManyRedirects => "too_many_redirects",
            ErrorKind::CheckStatus => "check_status",
            ErrorKind::CheckHeader => "check_header",
            ErrorKind::CheckContentType => "check_content_type",
            ErrorKind::CheckBody => "check_body",
            ErrorKind::CheckJson => "check_json",
            ErrorKind::CheckLength => "check_length",
            ErrorKind::ExtractMissing => "extract_missing",
            ErrorKind::BodyTooLarge => "body_too_large",
            ErrorKind::DataExhausted => "data_exhausted",
            ErrorKind::H3Handshake => "h3_handshake",
            ErrorKind::H3IdleTimeout => "h3_idle_timeout",
            ErrorKind::H3StreamReset => "h3_stream_reset",
            ErrorKind::H3ConnectionClosed => "h3_connection_closed",
            ErrorKind::H3Goaway => "h3_goaway",
            ErrorKind::H3Protocol => "h3_protocol",
            ErrorKind::HeadTooLarge => "head_too_large",
            ErrorKind::MissingValueUnsent => "missing_value_unsent",
            ErrorKind::UnsafeValueUnsent => "unsafe_value_unsent",
        }
    }
}

/// Errors by kind, a fixed array indexed by `ErrorKind as usize`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorCounts(pub [u64; ErrorKind::ALL.len()]);

impl Default for ErrorCounts {
    fn default() -> Self {
        ErrorCounts([0; ErrorKind::ALL.len()])
    }
}

/// A sequence of counts, in `ErrorKind::ALL`'s order (serde derives arrays of 32 at most).
impl Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for ErrorCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = Vec::<u64>::deserialize(d)?;
        let mut c = ErrorCounts::default();
        if v.len() != c.0.len() {
            return Err(D::Error::custom(format!(
                "error counts: {} kinds, expected {}",
                v.len(),
                c.0.len()
            )));
        }
        c.0.copy_from_slice(&v);
        Ok(c)
    }
}

impl ErrorCounts {
    /// One more error of `kind`; on the request path, an index and an add.
    #[inline]
    pub fn add(&mut self, kind: ErrorKind) {
        self.0[kind as usize] += 1;
    }
    /// The errors of `kind`.
    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind as usize]
    }
    /// The errors of every kind: the run's error count.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// Adds another thread's (or host's) counts, kind by kind.
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}
