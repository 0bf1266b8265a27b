//! Server side: parsing a request head.
//!
//! CONTRACT (implement; keep the names, add what you need):
//!
//! ```ignore
//! pub enum Method { Get, Head, Other }
//! pub enum Version { Http10, Http11 }
//! pub struct RequestLimits { pub max_request_line: usize /*8192*/, pub max_head_bytes: usize /*16384*/, pub max_headers: usize /*64*/ }
//! pub struct Request<'b> {
//!     pub method: Method, pub target: &'b [u8], pub version: Version,
//!     pub keep_alive: bool,                      // version default + Connection header
//!     pub host: Option<&'b [u8]>, pub if_none_match: Option<&'b [u8]>, pub if_modified_since: Option<&'b [u8]>,
//!     pub range: Option<&'b [u8]>, pub if_range: Option<&'b [u8]>, pub accept_encoding: Option<&'b [u8]>,
//!     pub user_agent: Option<&'b [u8]>, pub referer: Option<&'b [u8]>,
//!     pub content_length: Option<u64>, pub chunked: bool,
//!     pub head_len: usize,                       // bytes of buf consumed by the head
//! }
//! pub enum RequestError {               // each maps to a status via .status()
//!     UriTooLong /*414*/, HeadersTooLarge /*431*/, TooManyHeaders /*431*/, Malformed /*400*/,
//!     BadContentLength /*400: "+5", "5, 6" differing, non-digits*/, AmbiguousFraming /*400: CL and TE both*/,
//!     UnsupportedTransferEncoding /*501*/, VersionNotSupported /*505*/,
//! }
//! /// Ok(None): incomplete, read more (but a buffer already past a limit is an error, not None).
//! pub fn parse_request<'b>(buf: &'b [u8], limits: &RequestLimits) -> Result<Option<Request<'b>>, RequestError>;
//! ```
