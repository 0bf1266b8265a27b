//! The command line's top level: the program, its subcommands, and which command runs each.
//!
//! Each command owns its arguments (its clap `Args` struct lives in its module under `cmd`), so
//! this file only names the subcommands; clap derives the parser and `--help` from the docs.

use crate::cmd;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// flint: WebSTONE reborn. A load generator, a static server, and the lab around them.
///
/// `flint run` with no arguments writes a standard file set, serves it with the embedded server,
/// runs a WebSTONE benchmark against it, and prints the report.
#[derive(Debug, Parser)]
#[command(
    name = "flint",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = crate::exit::HELP
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
    #[command(mut_arg("threads", |arg| arg.help(
        "Event-loop threads of the load [default: the cores the embedded server leaves \
         (cores - cores/2), at most --clients; with --target, the cores available, at most \
         --clients; more than either is lowered to it, with a note]"
    )))]
    Run(cmd::run::RunArgs),
    /// Generate load: WebSTONE Webchildren fetching weighted pages of files.
    ///
    /// Files come from a workload (-w: TOML or an original WebSTONE filelist) or from paths on the
    /// command line (one page each, equal weights). Closed loop by default (each Webchild fetches
    /// its page's files one after another, then picks the next page); open loop with --rate.
    #[command(after_help = "Examples:\n  \
        flint bench http://127.0.0.1:8080 /index.html /logo.gif -c 40 -d 30s\n  \
        flint bench http://127.0.0.1:8080 -w filelist --http 1.0 -n 10000 --json out.json\n  \
        flint bench http://127.0.0.1:8080 -w site.toml --rate 500 -d 1m --html out.html\n  \
        flint bench http://127.0.0.1:8080/1k.bin -c 40 -d 10s --profile auto\n  \
        flint bench http://127.0.0.1:8080/ -n 1000 --threshold 'p99<50ms' --json - | jq .summary\n\n\
        From wrk, oha, hey, h2load or curl: -c, -d and -t are as in wrk; oha's and hey's -q (a \
        rate) is --rate here, and -q is quiet; h2load's -m N is --http 2 --streams N; -z, -X, \
        --http2 and --no-tui are taken; others are answered with flint's own (docs/coming-from.md).\n\n\
        Exit status: 0 completed; 1 not one response succeeded, or not one page (every page \
        abandoned), or the run broke; 2 bad usage \
        or input, nothing started; 3 a --threshold crossed; 130 interrupted (still reported).")]
    Bench(cmd::bench::BenchArgs),
    /// Serve a directory: event-driven, one loop per core, cached metadata and checksums.
    Serve(cmd::serve::ServeArgs),
    /// Write a document tree and its workload: one of the paper's mixes, or a filelist's files.
    Fileset(cmd::fileset::FilesetArgs),
    /// Write a workload from a site: its pages as a browser fetches them, weighted by an access log.
    ///
    /// Crawls from URL (same origin, to --depth and --max-pages, robots.txt honoured), parses
    /// each page as a browser does (HTML5, srcset, stylesheets and their @imports) and writes one
    /// [[page]] per HTML document that `flint bench -w` runs as it is. With --access-log, each
    /// page's weight is how often it was requested; with the log alone, the pages come from it.
    #[command(after_help = "Examples:\n  \
        flint discover http://127.0.0.1:8080/ -o site.toml\n  \
        flint discover https://example.test/ --depth 2 --max-pages 50 --crawl-rate 5 -o site.toml\n  \
        flint discover http://127.0.0.1:8080/ --access-log /var/log/nginx/access.log -o site.toml\n  \
        flint discover --access-log access.log.gz -o site.toml\n  \
        flint discover http://127.0.0.1:8080/ --browser -o site.toml\n\n\
        Exit status: 0 written; 1 the start page could not be fetched, no crawled page is in \
        the access log, or --browser's Chromium failed; 2 bad usage or input (an access log with no usable line), nothing \
        fetched.")]
    Discover(cmd::discover::DiscoverArgs),
    /// Rerun the Jigsaw, IO-Lite and Content-MD5 experiments on today's servers, with profiles.
    Lab(cmd::lab::LabArgs),
    /// Run the same workload against several servers in turn (A B A B) and compare them.
    Compare(cmd::compare::CompareArgs),
    /// Render results (bench, compare, lab JSON) as one self-contained HTML page.
    Report(cmd::report::ReportArgs),
    /// Run a client host's part of `flint bench --hosts`: orders on stdin, results on stdout.
    ///
    /// Started by the coordinator through its launch template (over ssh by default), never by
    /// hand; the line-delimited protocol is described in docs/hosts.md. Stops within a second
    /// when stdin closes.
    Worker,
}

impl Command {
    /// Runs the command; its exit code, or an error for `main` to print.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Command::Bench(args) => cmd::bench::bench(args),
            Command::Serve(args) => cmd::serve::serve(args),
            Command::Fileset(args) => cmd::fileset::fileset(args),
            Command::Run(args) => cmd::run::run(args),
            Command::Discover(args) => cmd::discover::discover(args),
            Command::Lab(args) => cmd::lab::lab(args),
            Command::Compare(args) => cmd::compare::compare(args),
            Command::Report(args) => cmd::report::report(args),
            Command::Worker => cmd::worker::worker(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn lab_help_names_every_server_the_dynamic_experiment_runs() {
        use lab_experiments::{Experiment, LabOptions};
        use lab_peers::PeerKind;
        let mut cli = Cli::command();
        let lab = cli.find_subcommand_mut("lab").expect("lab");
        let help = lab.render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let dynamic = (help.split("- dynamic:").nth(1))
            .and_then(|rest| rest.split("- all:").next())
            .expect("dynamic's line");
        for kind in PeerKind::ALL {
            let named = match kind {
                PeerKind::Flint => "flint serve",
                PeerKind::Nginx => "nginx",
                PeerKind::ApachePrefork => "prefork",
                PeerKind::ApacheEvent => "Apache (event",
                PeerKind::Lighttpd => "lighttpd",
                PeerKind::H2o => "h2o",
                PeerKind::Caddy => "Caddy",
            };
            let runs = LabOptions::left_out(kind, Experiment::Dynamic).is_none();
            assert_eq!(dynamic.contains(named), runs, "{kind:?} in: {dynamic}");
        }
    }

    #[test]
    fn lab_modes_parse_h3_beside_the_others_and_an_unknown_one_is_refused() {
        use super::Command;
        use clap::Parser;
        use lab_experiments::PageMode;
        let parsed = Cli::try_parse_from(["flint", "lab", "syscalls", "--modes", "h3,h2,h3"])
            .expect("--modes h3,h2,h3 parses");
        let Command::Lab(args) = parsed.command else {
            panic!("not the lab command: {parsed:?}");
        };
        let opts = crate::cmd::lab::options(&args).expect("options");
        assert_eq!(opts.page_modes, [PageMode::H3, PageMode::H2]);
        let refused = Cli::try_parse_from(["flint", "lab", "syscalls", "--modes", "h4"])
            .expect_err("no h4")
            .to_string();
        assert!(refused.contains("unknown mode `h4`"), "{refused}");
        assert!(refused.contains("h2, h3"), "{refused}");
    }
}
