//! What a tracer hands back, and the time it gets: shared by the tracers, depending on none.

use super::SyscallRow;
use std::time::Duration;

/// How long a tracer gets to attach, and to write its summary once interrupted.
pub(crate) const TRACER_DEADLINE: Duration = Duration::from_secs(15);

/// What a tracer counted over the window.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    pub rows: Vec<SyscallRow>,
    /// None: the sum of the rows.
    pub total_calls: Option<u64>,
    pub total_errors: Option<u64>,
    pub total_seconds: Option<f64>,
    pub notes: Vec<String>,
}
