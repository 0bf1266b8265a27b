//! FastCGI (the responder role): a request's meta-variables and body sent as records over a
//! socket to a long-running application (php-fpm, fcgiwrap), its FCGI_STDOUT read back as a
//! CGI program's stdout would be: the same head checks, the same response path.
//!
//! - [`record`] is the record layer, sans I/O, in the workspace's `fastcgi` crate (shared with
//!   the lab's FastCGI application): no FastCGI crate of crates.io fits a non-blocking loop that
//!   owns its sockets (they bring their own async runtime or block), and the layer is small.
//! - `params.rs` encodes a request's BEGIN_REQUEST and PARAMS from the request itself into
//!   the buffer its exchange writes.
//! - `exchange.rs` is one request on one connection, registered with the thread's epoll
//!   instance under its client connection's token, as a program's pipes are.
//! - The connections are `upstream.rs`'s, shared with the reverse proxy: its `Pool` keeps a
//!   few idle connections per application and thread (`FCGI_KEEP_CONN`): only a connection
//!   whose request ended cleanly goes back. Each connection is registered once, under a pool
//!   slot's token (`POOL_TOKEN`), and stays registered while idle: an application closing an
//!   idle connection is an event (the connection is then dropped), and a reuse only says which
//!   client connection the slot's events drive now (no `epoll_ctl`, no check per request). It
//!   is registered for reading alone: a unix socket says writable each time the application
//!   reads from it, a wake-up per request for nothing; a write that blocks asks for writability
//!   until its request ends.

pub(crate) mod exchange;
#[cfg(test)]
mod launch_tests;
mod params;
pub use fastcgi::record;

pub(crate) use exchange::{Exchange, Upstream};
pub(crate) use params::Params;
