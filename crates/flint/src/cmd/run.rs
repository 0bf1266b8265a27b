//! `flint run`: the main job. A standard file set, the embedded server, a WebSTONE run, the report.
//! `--tls` runs it over HTTPS with a certificate made for the run (the lab's, see
//! [`lab_experiments::certs`]).
//!
//! The server runs in this process on its own threads, on a port the kernel picks, so that
//! `flint run` needs nothing installed and cannot collide with anything else on the machine.

use super::bench::{
    check_outputs, check_pipeline, check_tls_options, default_threads, finish,
    install_stop_handler, prepare, run_error, HttpArg, LoadArgs, ReportArg,
};
use super::fileset::MixArg;
use anyhow::Context;
use bench::fileset;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Which mix to write and fetch.
    #[arg(long, value_enum, default_value = "general")]
    pub mix: MixArg,
    /// Benchmark this server instead of the embedded one (put the mix's files in place first:
    /// `flint fileset DIR --mix ...`).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Threads of the embedded server [default: half the cores, cores/2 and at least 1].
    #[arg(long, value_name = "N")]
    pub server_threads: Option<usize>,
    #[command(flatten)]
    pub load: LoadArgs,
}

static STOP: AtomicBool = AtomicBool::new(false);

pub fn run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    let mix: fileset::Mix = args.mix.into();
    // A WebSTONE run of a WebSTONE mix: the paper's report first.
    args.load
        .report
        .get_or_insert_with(|| vec![ReportArg::Webstone, ReportArg::Summary]);
    check_outputs(&args.load)?;
    check_pipeline(&args.load)?;
    // Ctrl-C ends the benchmark early (it still reports); the server is stopped after it.
    install_stop_handler(|| STOP.store(true, Ordering::Relaxed))?;

    if let Some(url) = &args.target {
        let target = bench::Target::parse(url)?;
        // `--tls` serves the embedded server over HTTPS; against --target the URL's scheme
        // says, and `--tls` with http:// would be silently ignored.
        check_tls_options(&target, &args.load)?;
        let workload = fileset::mix_workload(mix);
        let config = prepare(target, &args.load, 0)?;
        eprintln!("flint run: {mix} mix against {url}");
        let result = bench::run(&config, &workload, &STOP).map_err(run_error)?;
        // Every response a 4xx: most likely the server lacks the mix's files.
        let missing_files = format!(
            "the server does not have the {mix} mix's files: put them in its document root \
             with `flint fileset DIR --mix {mix}`"
        );
        return finish(&result, &args.load, None, Some(&missing_files));
    }

    let mut load = args.load;
    // The embedded server serves what `--tls` says; refused here, before it starts.
    if load.http == HttpArg::Http3 && load.tls.is_none() {
        anyhow::bail!(
            "--http 3 needs --tls: HTTP/3 runs over QUIC, which is always encrypted \
             (`flint run --tls --http 3` serves it with a throwaway certificate)"
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if load.threads.is_none() {
        load.threads = Some(run_threads(cores, load.clients));
    }
    // The embedded server holds the other end of every connection, in this process.
    let target = bench::Target::http(std::net::SocketAddr::from(([127, 0, 0, 1], 1)));
    let config = prepare(target, &load, load.clients as u64)?;
    let dir = tempfile::Builder::new()
        .prefix("flint-run-")
        .tempdir()
        .context("creating a temporary directory")?;
    let workload_path = fileset::write_mix(dir.path(), mix)?;
    let workload = bench::Workload::load(&workload_path)?;

    // The certificate and key live beside the document root, never in it: the server must not
    // serve its own key.
    let certs_dir = tempfile::Builder::new()
        .prefix("flint-run-tls-")
        .tempdir()
        .context("creating a temporary directory")?;
    // `--tls [VERSION]` (the load options'): the embedded server gets a throwaway ECDSA P-256
    // certificate made for this run, and the client trusts exactly that certificate.
    let tls = if load.tls.is_some() {
        Some(
            lab_experiments::certs::write(
                lab_experiments::certs::CertKind::EcdsaP256,
                certs_dir.path(),
            )
            .context("making the throwaway certificate")?,
        )
    } else {
        None
    };
    let server_config = serve::Config {
        root: dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().expect("literal address"),
        threads: args.server_threads.unwrap_or((cores / 2).max(1)),
        tls_cert: tls.as_ref().map(|t| t.cert.clone()),
        tls_key: tls.as_ref().map(|t| t.key.clone()),
        ..serve::Config::default()
    };
    let server = serve::Server::bind(server_config).context("starting the embedded server")?;
    let addr = server.local_addr();
    let handle = server.handle();
    let server_thread = std::thread::Builder::new()
        .name("flint-serve".into())
        .spawn(move || server.run())
        .context("starting the server thread")?;

    let (target, tls_options) = match &tls {
        Some(files) => (
            bench::Target::https(addr, lab_experiments::certs::SERVER_NAME),
            bench::config::TlsOptions {
                // Exactly the certificate made above: verified, not skipped.
                cacert: Some(files.cert.clone()),
                insecure: false,
                ..config.tls.clone()
            },
        ),
        None => (bench::Target::http(addr), config.tls.clone()),
    };
    eprintln!(
        "flint run: {mix} mix served by flint serve at {}{}",
        target.url,
        if tls.is_some() {
            " (a throwaway ECDSA P-256 certificate)"
        } else {
            ""
        }
    );
    let config = bench::BenchConfig {
        target,
        tls: tls_options,
        ..config
    };
    let result = bench::run(&config, &workload, &STOP);

    handle.shutdown();
    let served = server_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the server thread panicked"))?;
    let result = result.map_err(run_error)?;
    served
        .context("the embedded server failed")
        .map_err(crate::exit::failed)?;
    let status = finish(&result, &load, None, None);
    drop(dir);
    drop(certs_dir);
    status
}

/// The load's threads when `-t` is not given: bench's default on the cores the server leaves
/// (the help says so: `-t` in `flint run --help`), so that no note is printed for a default.
fn run_threads(cores: usize, clients: usize) -> usize {
    default_threads(clients, cores - cores / 2)
}

#[cfg(test)]
mod tests {
    use super::run_threads;

    #[test]
    fn the_load_takes_the_cores_the_server_leaves_at_most_one_a_client() {
        assert_eq!(run_threads(8, 1), 1);
        assert_eq!(run_threads(8, 16), 4);
        assert_eq!(run_threads(2, 16), 1);
        assert_eq!(run_threads(1, 16), 1);
    }
}
