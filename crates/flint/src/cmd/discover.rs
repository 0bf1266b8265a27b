//! `flint discover`: a workload from a site (its pages as a browser fetches them) and from an
//! access log (how often each page is visited). The work is in the `discover` crate; this
//! module turns arguments into its options and writes the workload and the summary.

use crate::exit::{failed, Status};
use crate::output;
use anyhow::Context;
use discover::access_log::Counts;
use discover::workload::{self, Header};
use discover::{Limits, Options, Page, TlsOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).multiple(true).args(["url", "access_log"])))]
pub struct DiscoverArgs {
    /// The page to start from (http:// or https://); its origin is the site crawled.
    pub url: Option<String>,
    /// Where to write the workload TOML (`-`: stdout); checked before the first request.
    #[arg(short = 'o', long, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,
    /// Follow links this many steps from the start page (0: the start page alone).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub depth: u32,
    /// Fetch at most this many pages (HTML documents, iframes included; a link that turns out
    /// not to be HTML counts). Memory is bounded by it: links beyond are counted, not kept.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub max_pages: usize,
    /// List at most this many references of one page (files fetched, and comments for those
    /// not fetched); the rest are counted in a comment, not fetched.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_files: usize,
    /// At most this many requests a second (robots.txt's Crawl-delay may ask for fewer).
    #[arg(long, default_value_t = 10.0, value_name = "PER_SECOND")]
    pub crawl_rate: f64,
    /// Follow links robots.txt disallows (and crawl when it cannot be fetched).
    #[arg(long)]
    pub ignore_robots: bool,
    /// Pick srcset/picture images as a browser this many CSS pixels wide does (device pixel
    /// ratio 1), by default the largest candidate; stylesheets' @media are evaluated at this
    /// width (default 1280) and 800 px high.
    #[arg(long, value_name = "WIDTH")]
    pub viewport: Option<u32>,
    /// The colour scheme stylesheets' `@media (prefers-color-scheme)` are answered for: the
    /// images and fonts of a dark theme's rules, or a light one's.
    #[arg(long, value_name = "SCHEME", default_value = "light", value_parser = ["light", "dark"])]
    pub color_scheme: String,
    /// A resource larger than this (bytes; K, M, G suffixes of 1024) is left out, with a comment.
    #[arg(long, default_value = "32M", value_name = "BYTES", value_parser = parse_size)]
    pub max_size: u64,
    /// Give up on one resource (connect, send, receive) after this long (above 0; a bare
    /// number is seconds).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = crate::duration::positive)]
    pub timeout: Duration,
    /// Weigh pages by this access log (Common or Combined Log Format; gzip accepted): each
    /// page's weight is how often its document was requested (GET, 200 or 304). Without a URL,
    /// the pages are built from the log itself, by Referer.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// HTTP version: 1.1, or 2 (over https:// by ALPN `h2`, over http:// with prior knowledge).
    #[arg(long, value_enum, default_value = "1.1", value_name = "VERSION")]
    pub http: HttpArg,
    /// HTTPS: trust the certificates in this PEM file beside the system's roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// HTTPS: accept any certificate without checking it.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Load each page in headless Chromium (FLINT_CHROMIUM, else `chromium` on PATH) and list
    /// what it fetched: the page scrolled to its end and waited on until its network is idle
    /// for 500 ms, within --page-timeout; each file's initiator (parser, script, preload,
    /// prefetch, other) in its comment. Links, robots.txt and weights are the crawl's as without
    /// it.
    #[arg(long)]
    pub browser: bool,
    /// With --browser: list requests to other origins too (as comments: bench requests one
    /// origin); by default they are counted only.
    #[arg(long, requires = "browser")]
    pub all_origins: bool,
    /// With --browser: one page's load, scroll and wait for an idle network, at most; what is
    /// still loading then is a comment (above 0; a bare number is seconds).
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = crate::duration::positive, requires = "browser")]
    pub page_timeout: Duration,
}

/// `--http`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HttpArg {
    #[value(name = "1.1")]
    Http11,
    #[value(name = "2")]
    Http2,
}

/// `32M`, `512K`, `1G`, `1000`: bytes.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (number, scale) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    number
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{text}` is not a size in bytes (e.g. 32M, 512K, 1000)"))
}

pub fn discover(args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    if !(args.crawl_rate.is_finite() && args.crawl_rate > 0.0) {
        anyhow::bail!("--crawl-rate must be a positive number of requests a second");
    }
    if args.viewport == Some(0) {
        anyhow::bail!("--viewport must be a width in CSS pixels, above 0");
    }
    if args.max_pages == 0 {
        anyhow::bail!("--max-pages must be at least 1");
    }
    if args.max_files == 0 {
        anyhow::bail!("--max-files must be at least 1");
    }
    if args.browser && args.url.is_none() {
        anyhow::bail!("--browser loads the pages of a crawl: give the URL to start from");
    }
    if args.browser && (args.cacert.is_some() || args.http == HttpArg::Http2) {
        anyhow::bail!(
            "--browser: Chromium speaks HTTP as it chooses and trusts the system's roots: \
             --cacert and --http 2 do not apply (-k does)"
        );
    }
    // Found before the first request: a crawl whose workload cannot be written is lost.
    if !output::is_stdout(&args.output) {
        output::check_writable(&args.output).map_err(|e| anyhow::anyhow!("-o {e}"))?;
    }
    // Found before anything starts: without Chromium, a usage error.
    let browser = if args.browser {
        Some(discover::browser::BrowserOptions {
            chromium: discover::browser::find_chromium().map_err(|e| anyhow::anyhow!(e))?,
            all_origins: args.all_origins,
            page_timeout: args.page_timeout,
            insecure: args.insecure,
        })
    } else {
        None
    };
    let start = args
        .url
        .as_deref()
        .map(|u| {
            let url = url::Url::parse(u).with_context(|| format!("{u}: not a URL"))?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                anyhow::bail!("{u}: an http:// or https:// URL with a host is needed");
            }
            Ok(url)
        })
        .transpose()?;
    // The log is read first: a log with no usable line stops everything before a request.
    let counts = match &args.access_log {
        Some(path) => Some(Counts::read(path)?),
        None => None,
    };
    if let Some(c) = &counts {
        report_log(
            c,
            args.access_log
                .as_deref()
                .unwrap_or(std::path::Path::new("")),
        );
    }
    let mut interrupted = false;
    let mut imports_cut = 0;
    let (pages, notes, source, origin, requests) = match &start {
        Some(start) => {
            // SIGINT and SIGTERM stop the crawl; what it found is still written.
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            crate::cmd::bench::install_stop_handler(move || flag.store(true, Ordering::Relaxed))?;
            let opts = Options {
                depth: args.depth,
                max_pages: args.max_pages,
                max_files: args.max_files,
                ignore_robots: args.ignore_robots,
                viewport: args.viewport,
                dark: args.color_scheme == "dark",
                limits: Limits {
                    max_size: args.max_size,
                    timeout: args.timeout,
                    rate: args.crawl_rate,
                },
                tls: TlsOptions {
                    cacert: args.cacert.clone(),
                    insecure: args.insecure,
                },
                http: match args.http {
                    HttpArg::Http11 => discover::Http::Http11,
                    HttpArg::Http2 => discover::Http::Http2,
                },
                stop: Some(stop),
                browser: browser.clone(),
            };
            let site = match discover::crawl(start, &opts) {
                Ok(site) => site,
                Err(discover::CrawlError::Usage(m)) => anyhow::bail!(m),
                Err(e @ discover::CrawlError::Interrupted) => {
                    output::error_line(&format!("flint discover: {e}"));
                    return Ok(Status::Interrupted.into());
                }
                Err(other) => return Err(failed(other)),
            };
            interrupted = site.interrupted;
            imports_cut = site.imports_cut;
            let mut pages = site.pages;
            if let Some(c) = &counts {
                if c.weigh(&mut pages) == 0 {
                    return Err(failed(anyhow::anyhow!(
                        "none of the {} crawled pages was requested in the access log (GET, 200 or 304)",
                        pages.len()
                    )));
                }
            }
            let origin = start.origin().ascii_serialization();
            (
                pages,
                site.notes,
                start.to_string(),
                Some(origin),
                Some((site.requests, site.requests_elsewhere)),
            )
        }
        None => {
            let c = counts.as_ref().expect("clap requires a URL or a log");
            let source = format!(
                "the access log {}",
                args.access_log.as_ref().expect("log").display()
            );
            (
                discover::log_pages::pages(c),
                Vec::new(),
                source,
                None,
                None,
            )
        }
    };
    let mut notes = notes;
    if start.is_none() {
        notes.push("from an access log alone: sizes and types are unknown (0 bytes)".into());
    }
    // What bench needs to reach the site as the crawl did.
    let mut bench_args = Vec::new();
    if args.http == HttpArg::Http2 {
        bench_args.extend(["--http".to_owned(), "2".to_owned()]);
    }
    if let Some(file) = &args.cacert {
        bench_args.extend(["--cacert".to_owned(), file.display().to_string()]);
    }
    if args.insecure {
        bench_args.push("-k".to_owned());
    }
    let text = workload::to_toml(
        &Header {
            source: &source,
            origin: origin.as_deref(),
            bench_args: &bench_args,
            notes: &notes,
        },
        &pages,
    );
    output::write_file(&args.output, text.as_bytes())
        .with_context(|| format!("writing {}", args.output.display()))?;
    output::error_line(&summary(&pages, requests));
    if imports_cut > 0 {
        // A browser follows such chains: the workload is lighter than the pages, and says where.
        output::error_line(&format!(
            "flint discover: {imports_cut} @imports nested more than {} stylesheets deep not \
             fetched, nor what they reference (a comment in the workload names each)",
            discover::crawl::MAX_IMPORT_DEPTH
        ));
    }
    if interrupted {
        output::error_line(
            "flint discover: interrupted: the workload holds the pages crawled until then",
        );
        return Ok(Status::Interrupted.into());
    }
    Ok(ExitCode::SUCCESS)
}

/// The line on stderr: pages, files, bytes, what was left out, and the requests the site
/// received (and, with `--browser`, those Chromium sent elsewhere).
fn summary(pages: &[Page], requests: Option<(u64, u64)>) -> String {
    let (files, bytes) = workload::totals(pages);
    let skipped: usize = pages
        .iter()
        .flat_map(|p| &p.entries)
        .filter(|e| matches!(e, discover::Entry::Skipped { .. }))
        .count();
    let weighted = pages.iter().filter(|p| p.weight > 0.0).count();
    let mut line = format!(
        "flint discover: {} pages, {files} files, {bytes} bytes ({})",
        pages.len(),
        human(bytes)
    );
    if weighted < pages.len() {
        line += &format!(
            "; {} pages never in the access log, left out",
            pages.len() - weighted
        );
    }
    if skipped > 0 {
        line += &format!("; {skipped} references not fetched (comments in the workload)");
    }
    if let Some((n, elsewhere)) = requests {
        line += &format!("; {n} requests to the site, redirects included");
        if elsewhere > 0 {
            line += &format!(" ({elsewhere} more by the browser to other origins)");
        }
    }
    line
}

/// Bytes in KiB, MiB or GiB, one decimal.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_048_576 => format!("{:.1} KiB", b / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", b / 1_048_576.0),
        _ => format!("{:.1} GiB", b / 1_073_741_824.0),
    }
}

/// What the log gave, and the first lines it could not read.
fn report_log(c: &Counts, path: &std::path::Path) {
    let usable: u64 = c.paths.iter().map(|p| p.count).sum();
    output::error_line(&format!(
        "flint discover: {}: {} lines, {usable} GETs answered 200 or 304, {} other requests, {} unreadable",
        path.display(),
        c.lines,
        c.other,
        c.unreadable
    ));
    for (n, text) in &c.examples {
        output::error_line(&format!("  line {n} not read: {text}"));
    }
}

#[cfg(test)]
mod tests {
    use super::{discover, parse_size, DiscoverArgs};
    use crate::exit::{status_of, Status};
    use clap::Parser;
    use std::net::TcpListener;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: DiscoverArgs,
    }

    /// A site that never answers, and whether anything connected to it.
    fn silent_site() -> (TcpListener, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        (listener, url)
    }

    fn usage_error_before_any_request(argv: &[&str], says: &str) {
        let (site, url) = silent_site();
        let argv = ["discover", url.as_str()]
            .into_iter()
            .chain(argv.iter().copied());
        let err = discover(Cli::parse_from(argv).args).expect_err("refused");
        assert_eq!(status_of(&err), Status::Usage, "{err:#}");
        assert!(format!("{err:#}").contains(says), "{err:#}");
        // Every connection the crawl made is queued on the listener: none was.
        assert!(site.accept().is_err(), "a request was sent");
    }

    #[test]
    fn an_output_that_cannot_be_written_is_refused_before_any_request() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("no-such-dir/w.toml");
        let out = out.to_str().unwrap();
        usage_error_before_any_request(&["-o", out, "--timeout", "1s"], "cannot write there");
    }

    #[test]
    fn a_bare_number_is_seconds_as_in_bench_run_and_lab() {
        let args = Cli::try_parse_from(["discover", "http://h/", "--timeout", "5"])
            .expect("a bare number is taken")
            .args;
        assert_eq!(args.timeout, std::time::Duration::from_secs(5));
        let argv = [
            "discover",
            "http://h/",
            "--browser",
            "--page-timeout",
            "1.5",
        ];
        let args = Cli::try_parse_from(argv).expect("taken").args;
        assert_eq!(args.page_timeout, std::time::Duration::from_millis(1500));
    }

    #[test]
    fn a_zero_timeout_is_refused_however_written() {
        for flag in ["--timeout", "--page-timeout"] {
            for zero in ["0", "0s", "0ms"] {
                let argv = ["discover", "http://h/", "--browser", flag, zero];
                let err = Cli::try_parse_from(argv).err().expect("refused");
                assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{err}");
                assert!(err.to_string().contains("must be longer than 0"), "{err}");
            }
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32M"), Ok(32 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
    }
}
