//! Peer servers: a [`Peer`] is one of nginx, Apache httpd (prefork and event), lighttpd, h2o,
//! Caddy and flint serve (a [`PeerKind`]), started as a [`PeerSpec`] says from its installed
//! binary with a config written here (`config.rs`, [`ConfigParams`], a file per server in
//! `config/`), on loopback, pinned to one core, and stopped with its process group; what goes
//! wrong is a [`PeerError`].
//!
//! It exists so that every user of a peer (the experiments, the tests that hold flint against
//! nginx) starts it the same way, with the same config, and never leaves one running.
//!
//! The papers compared servers on one machine at a time (Jigsaw against Apache, Flash against
//! Apache, prefork against threaded); a comparison is only fair when every server gets the same
//! document root, the same core and a config that does not handicap it. So each peer is started
//! here the same way: a private temp directory for its config, logs and pid file; a free loopback
//! port; pinned to one core (children inherit it); readiness polled, never slept for; and a
//! stop that takes the whole process group down, SIGTERM then SIGKILL, from `Drop` too, so a
//! failed or interrupted experiment leaves no server behind.
//!
//! A server that is not installed is a [`PeerError::NotInstalled`] naming the command that
//! installs it (scripts/install-peers.sh installs them all); callers go on with the others.

#![warn(missing_docs)]

mod config;
mod error;
mod installed;
mod kind;
mod peer;

pub use config::{TlsFiles, APACHE_MODULES, LIGHTTPD_OPENSSL, NGINX_TLS_LOG_FORMAT};
// For an experiment that adds to Apache's config what its peers serve beside static files (the
// dynamic experiment's gateways): the same config, the same pool, the same user.
pub use config::{apache as apache_config, apache_mime_types, apache_workers, ConfigParams, Mpm};
// And for lighttpd and h2o, whose gateways the dynamic experiment mounts the same way.
pub use config::{caddy as caddy_config, caddy_env, CADDY_FILE_SERVER};
pub use config::{h2o as h2o_config, lighttpd as lighttpd_config};
pub use error::PeerError;
pub use installed::Installed;
pub use kind::PeerKind;
pub use peer::apache_user;
pub use peer::{Peer, PeerNet, PeerSpec, PEER_NET_PORT};
