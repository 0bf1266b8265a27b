//! The files layer: from a request target to a file's response parts, protocol aside.
//!
//! [`resolve`] decides which file a target names and whether it may be served; [`cache`] keeps
//! per file version its metadata, prebuilt heads, checksums ([`digest`]) and small bodies under
//! Greedy-Dual-Size ([`gds`]), its Content-Type by extension ([`mime`]); [`conditional`] (304,
//! 412), [`range`] (206, 416) and [`negotiate`] (precompressed siblings) read the request's
//! fields against it; [`autoindex`] lists a directory. `crate::respond` puts them together.
//! Each module is also reachable at the crate's root (`serve::cache`, ...), the paths the tests
//! and the fuzz targets use.

pub mod autoindex;
pub mod cache;
pub mod conditional;
pub mod digest;
pub mod gds;
pub mod mime;
pub mod negotiate;
pub mod range;
pub mod resolve;
