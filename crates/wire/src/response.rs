//! Client side: parsing a response head and following its body framing.
//!
//! CONTRACT (implement; keep the names, add what you need):
//!
//! ```ignore
//! pub enum Framing { Length(u64), Chunked, Close, Empty /* HEAD, 1xx, 204, 304 */ }
//! pub struct ResponseHead { pub status: u16, pub version: u8, pub head_len: usize, pub framing: Framing, pub keep_alive: bool }
//! pub enum ResponseError { MalformedStatusLine, MalformedHeaders, BadContentLength, BadChunk, TooLarge }
//! /// Ok(None) when incomplete. `head_request`: the request was HEAD, so no body whatever the headers say.
//! pub fn parse_response_head(buf: &[u8], head_request: bool) -> Result<Option<ResponseHead>, ResponseError>;
//! /// Follows one body; no allocation, works on whatever slice arrives.
//! pub struct BodyDecoder { .. }
//! impl BodyDecoder {
//!     pub fn new(framing: Framing) -> Self;
//!     /// Consumes from `input`; returns how many input bytes were consumed, how many of them were
//!     /// body (payload, not chunk framing), and whether the body is complete. Bytes after the end
//!     /// of the body are not consumed (they belong to the next, pipelined, response).
//!     pub fn feed(&mut self, input: &[u8]) -> Result<BodyProgress, ResponseError>;
//!     /// The connection closed: Ok for a close-delimited body, Err(short body) otherwise.
//!     pub fn eof(&self) -> Result<(), ResponseError>;
//! }
//! pub struct BodyProgress { pub consumed: usize, pub body: usize, pub done: bool }
//! ```
