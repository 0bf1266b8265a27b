//! The command line, declared once: clap derives the parser and `--help` from these docs.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

fn duration(text: &str) -> Result<Duration, String> {
    crate::duration::parse(text)
}

/// flint: WebSTONE reborn. A load generator, a static server, and the lab around them.
///
/// `flint run` with no arguments writes a standard file set, serves it with the embedded server,
/// runs a WebSTONE benchmark against it, and prints the report.
#[derive(Debug, Parser)]
#[command(
    name = "flint",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark the embedded server (or --target) with a standard file set, and report.
    ///
    /// Writes the chosen mix to a temporary directory, starts `flint serve` on a free loopback
    /// port, runs `flint bench` against it with a live progress line, prints the WebSTONE report
    /// and a modern summary, and removes everything it made.
    Run(RunArgs),
    /// Generate load: WebSTONE Webchildren fetching weighted pages of files.
    ///
    /// Files come from a workload (-w: TOML or an original WebSTONE filelist) or from paths on the
    /// command line (one page each, equal weights). Closed loop by default (each Webchild fetches
    /// its page's files one after another, then picks the next page); open loop with --rate.
    #[command(after_help = "Examples:\n  \
        flint bench http://127.0.0.1:8080 /index.html /logo.gif -c 40 -d 30s\n  \
        flint bench http://127.0.0.1:8080 -w filelist --http 1.0 -n 10000 --json out.json\n  \
        flint bench http://127.0.0.1:8080 -w site.toml --rate 500 -d 1m --html out.html\n  \
        flint bench http://127.0.0.1:8080/1k.bin -c 40 -d 10s --profile auto")]
    Bench(BenchArgs),
    /// Serve a directory: event-driven, one loop per core, cached metadata and checksums.
    Serve(ServeArgs),
    /// Write a document tree and its workload: one of the paper's mixes, or a filelist's files.
    Fileset(FilesetArgs),
    /// Rerun the seeds' experiments on today's servers, with server-side syscall profiles.
    Lab(crate::cmd::lab::LabArgs),
    /// Run the same workload against several servers in turn (A B A B) and compare them.
    Compare(crate::cmd::compare::CompareArgs),
    /// Render results (bench, compare, lab JSON) as one self-contained HTML page.
    Report(crate::cmd::report::ReportArgs),
    /// Run a client host's part of `flint bench --hosts`: orders on stdin, results on stdout.
    ///
    /// Started by the coordinator through its launch template (over ssh by default), never by
    /// hand; the line-delimited protocol is described in docs/hosts.md. Stops within a second
    /// when stdin closes.
    Worker,
}

/// Which of the paper's four workload mixes (WebSTONE section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MixArg {
    /// Small pages (< 20 KB), mostly text: modem users.
    Modem,
    /// Files of 1 to 100 KB.
    General,
    /// Movies, sounds and large images: 20 KB to megabytes.
    Media,
    /// General and media rich: the paper's own sample filelist.
    Mixed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HttpArg {
    /// A new connection per file, as the 1995 clients did.
    #[value(name = "1.0")]
    Http10,
    /// Persistent connections (keep-alive).
    #[value(name = "1.1")]
    Http11,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportArg {
    /// The WebSTONE report of the paper's section 7.
    Webstone,
    /// ptester's per-URL table.
    Ptester,
    /// Requests/s, throughput, latency percentiles, errors by kind.
    Summary,
    /// All three.
    All,
    /// None (use with --json).
    None,
}

/// How load is generated: shared by `bench` and `run`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Webchildren: connections fetching pages at the same time.
    #[arg(short = 'c', long = "clients", value_name = "N", default_value_t = 16)]
    pub clients: usize,
    /// Event-loop threads [default: the cores available, at most --clients].
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<usize>,
    /// Measure for this long (with a unit: 500ms, 30s, 2m).
    #[arg(short = 'd', long, value_name = "DUR", value_parser = duration, conflicts_with = "pages")]
    pub duration: Option<Duration>,
    /// Instead of a duration: fetch this many pages in all, across all Webchildren.
    #[arg(short = 'n', long, value_name = "PAGES")]
    pub pages: Option<u64>,
    /// Run this long first; nothing from it is counted.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub warmup: Option<Duration>,
    /// Pause after each page (closed loop).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub think: Option<Duration>,
    /// Open loop: start this many pages per second across all Webchildren, each at its intended
    /// time; latency counts from the intended start, so a stalled server cannot hide its stalls.
    #[arg(long, value_name = "PAGES_PER_S")]
    pub rate: Option<f64>,
    /// HTTP version: 1.0 opens a connection per file; 1.1 keeps connections alive.
    #[arg(long, value_enum, default_value = "1.1")]
    pub http: HttpArg,
    /// Write all files of a page at once on one connection (HTTP/1.1 pipelining).
    #[arg(long, conflicts_with = "http")]
    pub pipeline: bool,
    /// Give up on a response after this long (and on a connect, unless --connect-timeout).
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "10s")]
    pub timeout: Duration,
    /// Give up on a connect after this long [default: --timeout].
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub connect_timeout: Option<Duration>,
    /// Seed of the Webchildren's random page choices: the same seed, the same sequence.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the whole result as JSON (schema: docs/bench-json.schema.json).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV line per request (WebSTONE's per-child log).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Print each request's and response's head to stderr.
    #[arg(long)]
    pub debug: bool,
    /// No live progress line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Reports to print, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "webstone,summary"
    )]
    pub report: Vec<ReportArg>,
    /// Write the result as one self-contained HTML page with charts (as `flint report` does).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The server: http://HOST:PORT. A path in it is fetched when no other files are named.
    pub url: String,
    /// Files to fetch: one page each, equal weights.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Workload file: TOML pages, or an original WebSTONE filelist (detected by itself).
    #[arg(short = 'w', long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// Profile the server over the measured window: its syscalls (perf or strace, whichever
    /// works here) and CPU time, as the seeds' truss table and in the JSON. A pid, or `auto` for
    /// the local process listening on the target's port; `:perf` or `:strace` after it picks
    /// the tracer (docs/profile.md).
    #[arg(long, value_name = "PID|auto", value_parser = crate::cmd::bench::profile::parse_arg)]
    pub profile: Option<crate::cmd::bench::profile::ProfileArg>,
    /// Generate the load from these client hosts (comma-separated): a `flint worker` on each,
    /// started by --launch; -c, --rate and -n are totals, split over the hosts (docs/hosts.md).
    #[arg(long, value_name = "H1,H2,...", conflicts_with_all = ["hosts_file", "profile"])]
    pub hosts: Option<String>,
    /// Client hosts from a file: one a line, optionally followed by its number of Webchildren.
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub hosts_file: Option<PathBuf>,
    /// How to start a worker on a host, run with `sh -c` after `{host}` is replaced
    /// [default: ssh -o BatchMode=yes {host} flint worker].
    #[arg(long, value_name = "TEMPLATE")]
    pub launch: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Which mix to write and fetch.
    #[arg(long, value_enum, default_value = "general")]
    pub mix: MixArg,
    /// Benchmark this server instead of the embedded one (put the mix's files in place first:
    /// `flint fileset DIR --mix ...`).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Threads of the embedded server [default: half the cores].
    #[arg(long, value_name = "N")]
    pub server_threads: Option<usize>,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Document root [default: the config's `root`, or the current directory].
    pub dir: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(short, long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Event-loop threads, one listening socket each [default: one per core].
    #[arg(short, long, value_name = "N")]
    pub threads: Option<usize>,
    /// TOML file for what the flags do not cover (docs/serve.md lists the keys).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Add Content-MD5 and Repr-Digest (sha-256), computed once per file version.
    #[arg(long)]
    pub digest: bool,
    /// Append an access log (Common Log Format) to this file.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Use the Combined Log Format (adds Referer and User-Agent).
    #[arg(long, requires = "access_log")]
    pub combined: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["mix", "filelist"])))]
pub struct FilesetArgs {
    /// Directory to write (created if missing).
    pub dir: PathBuf,
    /// One of the paper's mixes; also writes DIR/workload.toml.
    #[arg(long, value_enum)]
    pub mix: Option<MixArg>,
    /// Create the files a WebSTONE filelist names, sized by their names (file3k.html: 3 KiB).
    #[arg(long, value_name = "FILE")]
    pub filelist: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
