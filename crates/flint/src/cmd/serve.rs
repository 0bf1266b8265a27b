//! `flint serve`: flags over the config file, bind, serve until SIGINT or SIGTERM.

use crate::cli::ServeArgs;
use anyhow::Context;
use serve::config::LogFormat;
use serve::{Config, Server};
use std::io::Write;
use std::process::ExitCode;

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
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
    if let (Some(cert), Some(key)) = (args.tls_cert, args.tls_key) {
        config.tls_cert = Some(cert);
        config.tls_key = Some(key);
    }
    let root = config.root.display().to_string();
    let threads = config.effective_threads();
    let server = Server::bind(config).context("starting the server")?;
    let handle = server.handle();
    super::bench::install_stop_handler(move || handle.shutdown())?;
    // Status lines go to stderr, but a closed stderr (a detached server) must not stop serving:
    // `eprintln!` would panic on EPIPE, so write and ignore failures.
    let _ = writeln!(
        std::io::stderr(),
        "flint serve: {}://{} from {root} ({threads} thread{})",
        server.scheme(),
        server.local_addr(),
        if threads == 1 { "" } else { "s" }
    );
    if let Some(note) = server.tls_note() {
        let _ = writeln!(std::io::stderr(), "flint serve: {note}");
    }
    let stats = server.run()?;
    let _ = writeln!(
        std::io::stderr(),
        "flint serve: stopped after {} requests on {} connections",
        stats.requests,
        stats.accepted
    );
    Ok(ExitCode::SUCCESS)
}
