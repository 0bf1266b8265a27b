//! The experiment's load, below everything that sizes a pool for it: the measurement's
//! clients, fcgiwrap's children and Apache's workers are one number.

/// Clients of each measurement, keep-alive: as many CGI programs at once as fcgiwrap has
/// children for.
pub const DYNAMIC_CLIENTS: usize = 8;
