//! What the workspace's tests share, so that each test binary says only what it tests.
//!
//! - [`alloc::Counting`]: a global allocator that counts allocations, for the tests that prove
//!   a hot path allocates nothing per request (client and server, plain and TLS). Each test
//!   binary installs it with `#[global_allocator]`; a thread that is not under test (a test's
//!   own server or client) leaves itself out with [`alloc::exclude_current_thread`].
//! - [`certs`]: certificates made at test time by rcgen: a test CA and leaves it signs
//!   (expired ones too), self-signed pairs written as PEM files for `--tls-cert`/`--cacert`, and
//!   the rustls server configuration tests serve them with.
//! - [`chromium`]: headless Chromium on a URL (found or named by `FLINT_CHROMIUM`), in its
//!   own process group, bounded in time and stopped by its group, for the browser tests.
//! - [`h2`]: HTTP/2 by hand: the preface, SETTINGS, HEADERS with an HPACK block, CONTINUATION,
//!   DATA, WINDOW_UPDATE, RST_STREAM, GOAWAY and PING frames, and a reader of a peer's frames,
//!   for the tests that misbehave on purpose or look at frames one by one.
//! - [`flint_bin`]: the `flint` executable, for tests outside its crate that start it.
//! - [`module_rings::rings`]: the files of a crate that import each other through a ring, read
//!   from its source as text, for the workspace test that holds every crate to its layers.
//! - [`recording::Recording`]: a server that counts every request it receives, the truth a
//!   client's end-of-run accounting is held to.
//!
//! A dev-dependency only: nothing here is in the `flint` binary.

#![warn(missing_docs)]

pub mod alloc;
pub mod certs;
pub mod chromium;
mod flint_bin;
pub mod h2;
pub mod module_rings;
pub mod recording;

pub use flint_bin::flint_bin;
