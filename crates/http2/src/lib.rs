//! HTTP/2 framing for flint: [`Session`], one connection's HTTP/2 state (client or server) over
//! nghttp2, driven by the caller's event loop with bytes in ([`Session::recv`]) and frames out
//! ([`Session::send`]) and no I/O of its own; a [`Handler`] the caller implements, which
//! receives headers, bodies and stream events and takes the bytes to write; [`Config`], the
//! limits a session advertises and enforces; [`frame`], the wire format's fixed parts (the
//! preface, frame types and flags, the 9-byte frame header) and [`frame::FrameScanner`], which
//! follows a byte stream's frame boundaries (bench counts what it reads with it; tests write raw
//! frames with these).
//!
//! Why nghttp2 (through `libnghttp2-sys`, its C built from vendored sources): its session is
//! sans-I/O, which fits flint's two mio loops (serve's connections, bench's Webchildren) with
//! no async runtime; it is the HTTP/2 of h2load, nghttpd, Apache's mod_http2 and curl; and 1.68
//! carries the mitigations a server facing hostile clients needs: the rapid-reset limit
//! (CVE-2023-44487), the CONTINUATION limit (CVE-2024-27316), a glitch rate limit, a bound on
//! queued PING/SETTINGS acknowledgements, and HPACK table limits (see [`Config`]). hyperium's
//! `h2` would need tokio's `AsyncRead`/`AsyncWrite` and a waker, and builds an `http::Request`
//! and a `HeaderMap` per request. docs/http2.md has the measurement.
//!
//! Bodies are never copied by this crate or by nghttp2: [`Handler::body_ready`] says how many
//! bytes of a stream are ready, and [`Handler::write_data`] writes the 9-byte DATA frame header
//! and then those bytes from wherever the caller keeps them (NGHTTP2_DATA_FLAG_NO_COPY). The
//! caller owns the output queue and bounds it: [`Handler::write`] may take less than offered
//! or nothing, and nghttp2 keeps the rest.
//!
//! nghttp2 calls the handler only from inside `recv` and `send`, with the `&mut H` passed to
//! them (the trampolines are generic over `H`: static dispatch, no allocation); in between, the
//! caller submits requests or responses. The wrapper allocates nothing per call or per stream
//! (nghttp2 allocates its own stream state with the C library's malloc, through a per-thread
//! cache of the small blocks it frees: see `mem.rs`); `tests/alloc.rs` pins that.
//!
//! ```
//! use http2::{Body, Config, Handler, Header, Session, StreamId};
//!
//! /// Collects what the session writes (a real caller writes to its socket's queue).
//! #[derive(Default)]
//! struct Wire(Vec<u8>);
//!
//! impl Handler for Wire {
//!     fn write(&mut self, bytes: &[u8]) -> usize {
//!         self.0.extend_from_slice(bytes);
//!         bytes.len()
//!     }
//! }
//!
//! let mut client = Session::<Wire>::client(&Config::client()).unwrap();
//! let mut wire = Wire::default();
//! let request = [
//!     Header::new(b":method", b"GET"),
//!     Header::new(b":scheme", b"http"),
//!     Header::new(b":authority", b"localhost"),
//!     Header::new(b":path", b"/"),
//! ];
//! let stream: StreamId = client.submit_request(&request, false).unwrap();
//! client.send(&mut wire).unwrap();
//! assert_eq!(stream, 1);
//! assert!(wire.0.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
//! # let _ = Body::Deferred;
//! ```

#![warn(missing_docs)]

mod callbacks;
mod checks;
mod config;
mod error;
pub mod frame;
mod handler;
mod header;
mod mem;
mod messaging;
mod session;

#[cfg(any(test, feature = "test-support"))]
pub use callbacks::stray_callbacks;
pub use config::{Config, DEFAULT_WINDOW};
pub use error::{error_code, lib_error, Error};
pub use frame::frame_type;
pub use handler::{Body, FrameVerdict, Handler, HeaderVerdict, HeadersKind, StreamId};
pub use header::Header;
pub use session::Session;
