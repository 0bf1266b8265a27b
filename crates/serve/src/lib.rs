//! `flint serve`: a static server built on what the Jigsaw syscall notes and the IO-Lite paper
//! measured.
//!
//! They measured what makes web servers slow: mutexes on every request, reading files
//! instead of mapping or sending them, opening a file to answer a 304, gratuitous failing reads
//! and socket-option calls, a Content-MD5 recomputed on every request. This server is built so that
//! none of these happen: one event loop per core, each with its own listening socket
//! (`SO_REUSEPORT`), its own file cache and its own buffers, so nothing is locked or shared on the
//! hot path; metadata, response heads and checksums are computed once per file version; pipelined
//! responses leave in one gathered write per batch; bodies above 32 KiB go by `sendfile`.
//!
//! Layout, by role:
//! - [`config`]: the options (flags and a TOML file);
//! - [`server`]: binding (`listeners`: a socket per thread, one group no other server joins),
//!   threads, shutdown; `event_loop` (per thread: accept, the connection slab, timers, the
//!   connection cap), `conn` (one connection's driver loop: read, answer every complete request,
//!   write, close), `protocol` (the session, no I/O: bytes in, response segments out; `h1` is
//!   HTTP/1.1, the protocol chosen per connection by ALPN or the first bytes),
//!   `transport` (the seam between the two) and `plain` (its plain-TCP side: `recv`, `send`, a
//!   gathered `sendmsg`, `sendfile`), with `pool` recycling their buffers and [`stats`] counting;
//!   `tls` is the TLS transport beside `plain`, configured by [`tls_setup`];
//!   `start_files` reads what is read whole at start (config, certificate, key) within bounds;
//! - [`files`] (each module also at the root): [`resolve`], the one place that decides which
//!   file a request target names, and whether it may be served; [`cache`]: metadata, prebuilt
//!   heads, checksums ([`digest`]), small bodies under Greedy-Dual-Size ([`gds`]), Content-Type
//!   by extension ([`mime`]);
//! - [`respond`]: from a parsed request and the cache to a response, with [`conditional`]
//!   (304), [`range`] (206/416) and [`negotiate`] (precompressed siblings), all in [`files`];
//!   [`response`]: the response as no protocol writes it (a cached file's head prebuilt as
//!   text and as fields);
//! - [`autoindex`] (in [`files`]): directory listings, when asked for;
//! - `gateway`: programs (CGI/1.1) and FastCGI applications that answer requests, run inside
//!   the event loop: their pipes, pidfd or socket are events of the connection they answer;
//! - [`auth`]: HTTP Basic authentication by path prefix (htpasswd files read at start, the
//!   credentials each thread verified, failures limited per client address), checked by the
//!   protocols before files or programs;
//! - [`access_log`]: Common/Combined Log Format, buffered;
//! - `replay`: one connection's protocol driven from memory, for the fuzz targets.

#![warn(missing_docs)]

pub mod access_log;
pub mod auth;
pub mod config;
mod conn;
mod control;
mod event_loop;
pub mod files;
mod gateway;
mod listeners;
mod plain;
mod pool;
mod protocol;
#[doc(hidden)]
pub mod replay;
pub mod respond;
pub mod response;
pub mod server;
mod start_files;
pub mod stats;
mod tls;
pub mod tls_setup;
mod transport;
mod udp;

/// The FastCGI record layer, for its fuzz target.
#[doc(hidden)]
pub use gateway::fcgi::record as fcgi_record;

/// The reader of a CGI program's response head, for its fuzz target.
#[doc(hidden)]
pub use gateway::head as cgi_head;

pub use files::{autoindex, cache, conditional, digest, gds, mime, negotiate, range, resolve};

pub use config::Config;
pub use server::{ServeError, Server, ShutdownHandle};
pub use stats::ServerStats;
