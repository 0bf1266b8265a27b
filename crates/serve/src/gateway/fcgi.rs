//! FastCGI (the responder role): a request's meta-variables and body sent as records over a
//! socket to a long-running application (php-fpm, fcgiwrap), its FCGI_STDOUT read back as a
//! CGI program's stdout would be.
//!
//! - `record.rs` is the record layer, sans I/O: no FastCGI crate fits a non-blocking loop that
//!   owns its sockets (they bring their own async runtime or block), and the layer is small.

pub mod record;
