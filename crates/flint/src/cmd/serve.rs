//! `flint serve`: flags over the config file, bind, serve until SIGINT or SIGTERM.
//!
//! Exit status: 0 after a clean stop, 1 when the server cannot start or fails (a port in use, a
//! missing root, a bad config file), with the reason printed once on stderr, as nginx does; 2
//! stays what clap gives a command line it cannot parse.

use crate::cli::ServeArgs;
use serve::config::{Dotfiles, LogFormat};
use serve::{Config, Server};
use std::io::Write;
use std::process::ExitCode;

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    match run(args) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "flint: error: {e:#}");
            Ok(ExitCode::from(1))
        }
    }
}

fn run(args: ServeArgs) -> anyhow::Result<()> {
    let config = configure(args)?;
    let root = config.root.display().to_string();
    let threads = config.effective_threads();
    let server = Server::bind(config)?;
    let handle = server.handle();
    super::bench::install_stop_handler(move || handle.shutdown())?;
    // Status lines go to stderr, but a closed stderr (a detached server) must not stop serving:
    // `eprintln!` would panic on EPIPE, so write and ignore failures.
    let _ = writeln!(
        std::io::stderr(),
        "flint serve: http://{} from {root} ({threads} thread{})",
        server.local_addr(),
        if threads == 1 { "" } else { "s" }
    );
    let stats = server.run()?;
    let _ = writeln!(
        std::io::stderr(),
        "flint serve: stopped after {} requests on {} connections",
        stats.requests,
        stats.accepted
    );
    Ok(())
}

/// The config file (or the defaults), then the flags over it.
fn configure(args: ServeArgs) -> anyhow::Result<Config> {
    let mut config = match &args.config {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    if let Some(dir) = args.dir {
        config.root = dir;
    }
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(threads) = args.threads {
        config.threads = threads;
    }
    if args.digest {
        config.digest = true;
    }
    if let Some(log) = args.access_log {
        config.access_log = Some(log);
    }
    if args.combined {
        config.access_log_format = LogFormat::Combined;
    }
    if args.autoindex {
        config.autoindex = true;
    }
    if args.dotfiles {
        config.dotfiles = Dotfiles::Allow;
    }
    Ok(config)
}
