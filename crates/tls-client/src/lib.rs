//! How flint's HTTPS clients set up TLS, once for all of them: `flint bench`'s connections,
//! `flint discover`'s crawl and `flint serve`'s proxy to `https://` upstreams.
//!
//! Three clients that each built their own rustls configuration would trust, pin and refuse
//! certificates each a little differently, and tell a failed handshake each in its own words.
//! Here is what they share: the [`ClientConfig`](rustls::ClientConfig) made from
//! [`TlsOptions`] (the system's roots plus a CA file, a self-signed certificate given there
//! accepted as the server's own, or no verification; TLS versions; cipher suites in browsers'
//! order; one ALPN protocol; resumption on or off), the reasons it cannot be made
//! ([`TlsSetupError`]), and the reasons a handshake fails ([`TlsFailure`]) with their one-line
//! explanations; and what the non-blocking connections driven by each client's event loop do
//! alike (records written until the socket is full, the handshake moved on: [`handshake`]). The
//! rest of a connection stays with each client: they differ in what they read, when and into
//! what.

#![warn(missing_docs)]

mod ciphers;
mod config;
mod failure;
mod options;
mod setup_error;
mod stream;

pub use ciphers::{cipher_suite_names, parse_cipher_list};
pub use config::client_config;
pub use failure::{ca_used_as_end_entity, TlsFailure};
pub use options::{TlsOptions, TlsVersion};
pub use setup_error::TlsSetupError;
pub use stream::{handshake, send_pending, tls_error, ClientStream};
