//! FastCGI 1.0 records without I/O, both sides of the responder role.
//!
//! The crate exists so that the two ends of the project's FastCGI connections share one
//! reading of the specification: flint serve writes requests and reads answers with
//! [`record`] from its event loops, and the lab's reference application (`flint-app
//! fastcgi`) reads requests and writes answers with [`responder`]. Neither does I/O: the
//! caller owns its sockets (non-blocking in serve, blocking in the application), so the same
//! code fits both. The FastCGI crates of crates.io bring their own runtime or block, and the
//! layer is small.

#![warn(missing_docs)]

pub mod record;
pub mod responder;
