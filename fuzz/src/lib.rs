//! Coverage-guided fuzzing of flint's HTTP/1.x parsers, run by AFL++ through the `afl` crate on
//! the stable toolchain (`scripts/fuzz`, docs/fuzzing.md).
//!
//! Five targets, two for the two sides of HTTP/1.x, one for the server's HTTP/2 and two for
//! what its programs and FastCGI applications send:
//! - [`request`]: the server reading a connection: `wire::parse_request`, pipelining, limits, and
//!   flint serve's answer to each accepted head ([`answer`], over [`docroot`]);
//! - [`response`]: the load generator reading a connection: `wire::parse_response_head` and
//!   `wire::BodyDecoder` (Content-Length, chunked with extensions and trailers, close-delimited),
//!   checked against an independent reader of the chunked coding ([`chunked`]);
//! - [`h2`]: the server reading an HTTP/2 connection: its session on nghttp2 and the frames it
//!   writes in answer;
//! - [`fcgi`]: flint serve reading a FastCGI application's records, against a reference reader;
//! - [`cgihead`]: flint serve reading a CGI program's response head, before any of it reaches a
//!   client.
//!
//! Each target asserts properties, not only the absence of panics: nothing is read past the input
//! ([`guard`]), parts of a parse are sub-slices of the input, a body's length is the framed one,
//! and a connection read in arbitrary pieces ([`split`]) gives the same result as read at once.
//! The checks are plain functions, so `tests/corpus.rs` replays the corpus without AFL.

pub mod answer;
pub mod cgihead;
pub mod chunked;
pub mod docroot;
pub mod fcgi;
pub mod guard;
pub mod h2;
pub mod request;
pub mod response;
pub mod split;
