//! Exit codes, the same for every command, so that scripts and CI can tell what happened; and
//! the one line an error is printed as.

use std::fmt;
use std::process::ExitCode;

/// How a command ended. `--help` and the README list the codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 0: the run completed (and every `--threshold` held).
    Completed,
    /// 1: the run failed: not one response succeeded (every connect refused, say), or not one
    /// page (every page abandoned), or something broke while it ran.
    Failed,
    /// 2: bad usage or input; nothing was started.
    Usage,
    /// 3: the run completed and a `--threshold` was crossed.
    ThresholdCrossed,
    /// 130: interrupted (Ctrl-C, SIGTERM); what was measured is still reported.
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Completed => 0,
            Status::Failed => 1,
            Status::Usage => 2,
            Status::ThresholdCrossed => 3,
            Status::Interrupted => 130,
        }
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(status.code())
    }
}

/// What `--help` says about exit codes.
pub const HELP: &str = "Exit status (every command): 0 completed; 1 the run failed (not one \
    response succeeded, not one page of an application workload completed, or something broke \
    while it ran); 2 bad usage or input (nothing was \
    started); 3 a --threshold was crossed; 130 interrupted (what was measured is still reported; \
    flint serve, whose stop by SIGINT or SIGTERM is its normal end, exits 0).";

/// An error that happened after the work started: exit 1, where an error before the start is
/// bad usage or input (exit 2).
#[derive(Debug)]
pub struct RunFailed(pub anyhow::Error);

impl fmt::Display for RunFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", one_line(&self.0))
    }
}

impl std::error::Error for RunFailed {}

/// Marks an error as a failure of a started run (exit 1).
pub fn failed(err: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(RunFailed(err.into()))
}

/// The error as one line: its causes joined by `: `, each said once. Libraries often include
/// their source's text in their own message; printing the chain naively then repeats it
/// (`No such file or directory (os error 2): No such file or directory (os error 2)`).
pub fn one_line(err: &anyhow::Error) -> String {
    join_causes(err.chain())
}

/// [`one_line`] for an error that is not the command's own (a warning's).
pub fn error_line(err: &(dyn std::error::Error + 'static)) -> String {
    join_causes(std::iter::successors(Some(err), |e| e.source()))
}

fn join_causes<'a>(chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>) -> String {
    let mut text = String::new();
    for cause in chain {
        let cause = cause.to_string();
        if cause.is_empty() || text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

/// The exit status for an error that reached `main`.
pub fn status_of(err: &anyhow::Error) -> Status {
    if err.chain().any(|c| c.is::<RunFailed>()) {
        Status::Failed
    } else {
        Status::Usage
    }
}

/// Whether the error is the reader of our output going away (`flint bench ... | head`).
pub fn is_closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let text = io.to_string();
        #[derive(Debug)]
        struct Repeats(std::io::Error);
        impl fmt::Display for Repeats {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "w.toml: {}", self.0)
            }
        }
        impl std::error::Error for Repeats {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let err = anyhow::Error::new(Repeats(io)).context("reading the workload");
        assert_eq!(
            one_line(&err),
            format!("reading the workload: w.toml: {text}")
        );
    }

    #[test]
    fn failures_after_the_start_exit_1_and_the_rest_2() {
        let before = anyhow::anyhow!("bad -c");
        assert_eq!(status_of(&before), Status::Usage);
        let during = failed(anyhow::anyhow!("event loop")).context("the run");
        assert_eq!(status_of(&during), Status::Failed);
        assert_eq!(one_line(&during), "the run: event loop");
        let codes: Vec<u8> = [
            Status::Completed,
            Status::Failed,
            Status::Usage,
            Status::ThresholdCrossed,
            Status::Interrupted,
        ]
        .iter()
        .map(|s| s.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 130]);
    }

    #[test]
    fn a_broken_pipe_is_recognised_through_context() {
        let err = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("writing the report");
        assert!(is_closed_pipe(&err));
        assert!(!is_closed_pipe(&anyhow::anyhow!("other")));
    }
}
