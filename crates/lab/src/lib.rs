//! The lab around `flint bench` and `flint serve`: what the server did per request, peers started
//! side by side, and the seeds' experiments rerun on today's servers.
//!
//! The seeds are measurements: truss tables of Jigsaw and Apache, IO-Lite's bandwidth against file
//! size, Apache's per-request Content-MD5. No load generator today says what the server did per
//! request; this crate does, by profiling the server process during the measured window, and by
//! starting peers (nginx, Apache, lighttpd, flint serve) with configs it writes itself.
//!
//! Layout, by role:
//! - [`profile`]: a server's syscalls (strace or perf) and CPU time over a window;
//! - [`peers`]: starting and stopping peer servers, pinned, on loopback;
//! - [`experiments`]: `syscalls`, `sizes`, `digest`;
//! - [`compare`]: targets side by side, A B A B, medians and ratios.

pub mod compare;
pub mod experiments;
pub mod peers;
pub mod profile;
