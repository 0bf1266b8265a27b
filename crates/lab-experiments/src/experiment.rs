//! Which experiment to run, and the clients of those whose load is one number.

/// Which experiment to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// The page experiment: the microscape page fetched in each way of
    /// [`PageMode`](crate::PageMode), the server's system calls, CPU and packets per page.
    Syscalls,
    /// The response-size sweep (the IO-Lite paper): each size from each server, output
    /// bandwidth and the server's CPU per request.
    Sizes,
    /// Content-MD5 on each response against none: what the digest costs the server.
    Digest,
    /// Handshakes, the sizes sweep and keep-alive syscalls over HTTPS.
    Tls,
    /// CGI and FastCGI against a static file, CPU per tier.
    Dynamic,
    /// All of them in turn.
    All,
}

impl Experiment {
    /// The name on the command line (`flint lab NAME`) and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Syscalls => "syscalls",
            Experiment::Sizes => "sizes",
            Experiment::Digest => "digest",
            Experiment::Tls => "tls",
            Experiment::Dynamic => "dynamic",
            Experiment::All => "all",
        }
    }

    /// The single experiments this one runs, in order.
    pub fn parts(self) -> &'static [Experiment] {
        match self {
            Experiment::Syscalls => &[Experiment::Syscalls],
            Experiment::Sizes => &[Experiment::Sizes],
            Experiment::Digest => &[Experiment::Digest],
            Experiment::Tls => &[Experiment::Tls],
            Experiment::Dynamic => &[Experiment::Dynamic],
            Experiment::All => &[
                Experiment::Syscalls,
                Experiment::Sizes,
                Experiment::Digest,
                Experiment::Tls,
                Experiment::Dynamic,
            ],
        }
    }
}

/// Clients of the page experiment: one, as the notes' one browser or robot.
pub const SYSCALLS_CLIENTS: usize = 1;
/// Clients of the sizes sweep: the IO-Lite paper's number.
pub const SIZES_CLIENTS: usize = 40;
/// Clients of the digest experiment: the Content-MD5 measurements' number.
pub const DIGEST_CLIENTS: usize = 5;
