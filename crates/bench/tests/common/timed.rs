//! Timed runs for the tests of a timed end (what a run leaves in flight when its window ends).
//! Such a test needs its window to have held some of the run, which a short window does not
//! promise on a busy machine: the whole of it can pass before the first connect. So a run that
//! did not get far enough is made again with a longer window, up to a generous bound.

use std::time::Duration;

/// The longest window [`until_busy`] tries.
pub const LONGEST: Duration = Duration::from_secs(10);

/// `run(window)`, from a window of `first`, doubled while `busy` says the run did not get far
/// enough to test its end, up to [`LONGEST`]; returns the last run (the caller then asserts
/// `busy` of it). `run` checks what every run must keep, an idle one too.
pub fn until_busy<T>(
    first: Duration,
    mut run: impl FnMut(Duration) -> T,
    busy: impl Fn(&T) -> bool,
) -> T {
    let mut window = first;
    loop {
        let r = run(window);
        if busy(&r) || window >= LONGEST {
            return r;
        }
        println!("nothing to test at the end of a {window:?} window: again, twice as long");
        window = (window * 2).min(LONGEST);
    }
}
