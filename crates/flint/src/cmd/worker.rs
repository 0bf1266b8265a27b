//! `flint worker`: a client host's part of a run on many hosts, over stdin and stdout.

use bench::hosts::worker::{self, WorkerError};
use std::process::ExitCode;

pub fn worker() -> anyhow::Result<ExitCode> {
    let input = Box::new(std::io::BufReader::new(std::io::stdin()));
    let output = Box::new(std::io::stdout());
    match worker::serve(input, output) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // Nobody is left to tell: stop quietly.
        Err(WorkerError::CoordinatorGone) => Ok(ExitCode::from(1)),
        Err(e) => {
            eprintln!("flint worker: {e}");
            Ok(ExitCode::from(2))
        }
    }
}
