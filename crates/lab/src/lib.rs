//! The lab around `flint bench` and `flint serve`: what the server did per request, peers started
//! side by side, and the measurements of the papers rerun on today's servers.
//!
//! Those papers measured: truss tables of Jigsaw and Apache (the Jigsaw syscall notes), the
//! IO-Lite paper's bandwidth against file size, Apache's per-request Content-MD5. No load
//! generator today says what the server did per request; this crate does, by profiling the
//! server process during the measured window, and by starting peers (nginx, Apache, lighttpd,
//! flint serve) with configs it writes itself.
//!
//! Layout, by role:
//! - plumbing, one of each: [`process`] (start, pin, process group, bounded wait, stop),
//!   [`procfs`] (the one /proc reader), [`cpu`] (the one CPU clock), [`window`] (the one
//!   window profiler: a bench observer that traces and clocks the server over the window);
//! - [`profile`]: a server's syscalls (strace or perf) and the truss table;
//! - [`peers`]: starting and stopping peer servers, pinned, on loopback;
//! - [`experiments`]: `syscalls`, `sizes`, `digest`;
//! - [`compare`]: targets side by side, A B A B, medians and ratios.

pub mod compare;
pub mod cpu;
pub mod experiments;
pub mod peers;
pub mod process;
pub mod procfs;
pub mod profile;
pub mod window;
