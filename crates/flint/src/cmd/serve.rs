//! `flint serve`: flags over the config file, bind, serve until SIGINT or SIGTERM.
//!
//! Exit status: 0 after a clean stop, 1 when the server cannot start or fails (a port in use, a
//! missing root, a bad config file), with the reason printed once on stderr, as nginx does; 2
//! stays what clap gives a command line it cannot parse.

use serve::config::{Dotfiles, LogFormat};
use serve::{Config, ServeError, Server, ServerStats};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Document root [default: the config's `root`, or the current directory].
    pub dir: Option<PathBuf>,
    /// Address to listen on: PORT (on 127.0.0.1), HOST:PORT, IPv4:PORT or [IPv6]:PORT
    /// [default: 127.0.0.1:8080].
    #[arg(short, long, value_name = "ADDR", value_parser = serve::config::parse_listen)]
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
    /// Append an access log (Common Log Format) to this file; `-` is standard output.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Use the Combined Log Format (adds Referer and User-Agent).
    #[arg(long, requires = "access_log")]
    pub combined: bool,
    /// List the files of a directory that has no index file (off: 404).
    #[arg(long)]
    pub autoindex: bool,
    /// Serve and list names starting with a dot (`.git`, `.env`); by default they are 404,
    /// except under /.well-known/.
    #[arg(long)]
    pub dotfiles: bool,
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (ECDSA, RSA or Ed25519).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Speak HTTP/1.1 only: no `h2` in ALPN, and the HTTP/2 preface over cleartext is refused
    /// as HTTP/1.1 refuses an unknown version (config key `http2 = false`).
    #[arg(long)]
    pub no_http2: bool,
    /// Require HTTP/3: a UDP port that cannot be bound stops the start (config `http3 = true`).
    /// By default, with TLS, HTTP/3 over QUIC is served on the same address and port number
    /// over UDP and advertised by Alt-Svc; a UDP port that cannot be bound is then a warning
    /// and TCP serves alone.
    #[arg(long, conflicts_with = "no_http3")]
    pub http3: bool,
    /// No HTTP/3: no UDP socket, no Alt-Svc (config `http3 = false`).
    #[arg(long)]
    pub no_http3: bool,
    /// HTTP/2 streams a client may have open at once [default: 100] (`h2_max_concurrent_streams`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_streams: Option<u32>,
    /// A request body is due within this of its start (plus a second per --body-min-rate
    /// bytes), with no longer gap between its bytes [default: 10s].
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub body_timeout: Option<std::time::Duration>,
    /// Bytes a second a request body must average to earn time past --body-timeout; 0 leaves
    /// only the gap [default: 500].
    #[arg(long, value_name = "BYTES")]
    pub body_min_rate: Option<u64>,
    /// Run the CGI programs of DIR for targets under PREFIX (`/cgi-bin/=/srv/cgi`); may repeat
    /// (config key `cgi`).
    #[arg(long, value_name = "PREFIX=DIR")]
    pub cgi: Vec<serve::config::CgiMount>,
    /// Run files of the root ending with this extension (`.cgi`) as CGI programs; may repeat
    /// (config key `cgi_extensions`).
    #[arg(long, value_name = "EXT")]
    pub cgi_ext: Vec<String>,
    /// CGI programs running at once; past it requests get 503 with Retry-After [default: 64]
    /// (`cgi_max_programs`).
    #[arg(long, value_name = "N")]
    pub cgi_max_programs: Option<usize>,
    /// A CGI program's wall time: its process group is killed past it [default: 30s]
    /// (`cgi_timeout_ms`).
    #[arg(long, value_name = "DUR", value_parser = wall_time)]
    pub cgi_timeout: Option<std::time::Duration>,
    /// Bytes a CGI program may write (head and body): past it it is killed and its response
    /// cut [default: 1G] (`cgi_max_output_bytes`).
    #[arg(long, value_name = "SIZE", value_parser = super::discover::parse_size)]
    pub cgi_max_output: Option<u64>,
    /// Ask for a user and password of an Apache htpasswd file (bcrypt, SHA-256/512-crypt) for
    /// targets under PREFIX (`/private/=/etc/flint/htpasswd`); may repeat, the longest prefix
    /// wins (config `[[auth]]`).
    #[arg(long, value_name = "PREFIX=FILE")]
    pub basic_auth: Vec<serve::config::AuthZone>,
    /// The realm --basic-auth's challenges name [default: flint].
    #[arg(long, value_name = "REALM", requires = "basic_auth")]
    pub auth_realm: Option<String>,
    /// Send requests for targets matching PATTERN (`*.php`, or a prefix `/app/`) to the
    /// FastCGI application at ADDR (`unix:PATH` or `HOST:PORT`); may repeat (config key
    /// `fastcgi`). Requests run under the --cgi-* limits.
    #[arg(long, value_name = "PATTERN=ADDR")]
    pub fastcgi: Vec<serve::config::FastCgiMount>,
    /// Idle FastCGI connections kept per application and thread (0: one per request)
    /// [default: 4 divided among the threads, rounded down: fewer than php-fpm's default 5
    /// workers, each of which an idle connection holds] (`fastcgi_pool`).
    #[arg(long, value_name = "N")]
    pub fastcgi_pool: Option<usize>,
    /// Send requests for targets under PREFIX, path unchanged, to the HTTP/1.1 server at URL
    /// (`/api/=http://127.0.0.1:8080`, over TLS: `/api/=https://app.internal:8443`, or a unix
    /// socket: `/api/=unix:/run/app.sock`); may repeat (config `[[proxy]]`, which also takes
    /// several upstreams, timeouts and the pool size).
    #[arg(long, value_name = "PREFIX=URL")]
    pub proxy: Vec<serve::config::ProxyMount>,
    /// PEM certificates that `https://` upstreams of `--proxy` are checked against, beside the
    /// system's roots (a self-signed certificate given here is trusted as the upstream's own)
    /// (config: the `[[proxy]]` table's `cacert`).
    #[arg(long, value_name = "FILE")]
    pub proxy_cacert: Option<std::path::PathBuf>,
}

fn duration(text: &str) -> Result<std::time::Duration, String> {
    crate::duration::parse(text)
}

/// A program's wall time (`--cgi-timeout`), kept in whole milliseconds: `0`, `0.0005`, `0s` or
/// `1us` are refused here with the least it takes, not as a hint to write `0.0005s` (itself
/// refused) nor, once rounded down, as `cgi_timeout_ms = 0`.
fn wall_time(text: &str) -> Result<std::time::Duration, String> {
    let too_short = || format!("`{text}`: a program's wall time is at least 1ms (e.g. 30s)");
    // A bare number is refused for its missing unit with a hint to add `s`: not one that would
    // be refused next.
    if text.trim().parse::<f64>().is_ok_and(|secs| secs < 0.001) {
        return Err(too_short());
    }
    let d = duration(text)?;
    if d < std::time::Duration::from_millis(1) {
        return Err(too_short());
    }
    Ok(d)
}

/// Exit status as for every command: a config, root or address that cannot be used is bad
/// input (2, before serving); a port another server holds, or a failure while serving, is 1.
/// `main` prints the error, once, in a way a closed stderr cannot turn into a panic.
pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    run(args)?;
    Ok(ExitCode::SUCCESS)
}

/// A port in use is the machine's state, not a mistake in the input: the server failed.
fn bind_error(err: ServeError) -> anyhow::Error {
    match &err {
        ServeError::Bind { source, .. } | ServeError::BindUdp { source, .. }
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            crate::exit::failed(err)
        }
        _ => err.into(),
    }
}

/// A status line on stderr, after `flint serve: `, through `output::error_line` (a closed
/// stderr, a detached server, must not stop serving).
macro_rules! status {
    ($($arg:tt)*) => {{
        crate::output::error_line(&format!("flint serve: {}", format_args!($($arg)*)));
    }};
}

fn run(args: ServeArgs) -> anyhow::Result<()> {
    let config = configure(args)?;
    let root = config.root.display().to_string();
    let threads = config.effective_threads();
    let server = Server::bind(config).map_err(bind_error)?;
    let handle = server.handle();
    super::bench::install_stop_handler(move || handle.shutdown())?;
    status!(
        "{}://{} from {root} ({threads} thread{})",
        server.scheme(),
        server.local_addr(),
        if threads == 1 { "" } else { "s" }
    );
    if let Some(note) = server.tls_note() {
        status!("{note}");
    }
    if server.http3() {
        status!("HTTP/3 on UDP {}", server.local_addr());
    }
    if let Some(why) = server.http3_warning() {
        let why = crate::exit::error_line(why);
        status!("warning: no HTTP/3: {why}; serving TCP alone, nothing advertised (--http3 makes this an error, --no-http3 silences it)");
    }
    let stats = server.run().map_err(crate::exit::failed)?;
    print_stopped(&stats);
    Ok(())
}

/// The TCP connections by protocol, adding up to the accepted: a connection closed before it
/// chose one (it sent nothing, or too little to tell, or its TLS handshake did not finish) is
/// in neither protocol and named apart when there are any.
fn by_protocol(stats: &ServerStats) -> String {
    let (h1, h2) = (stats.http1_connections, stats.http2_connections);
    let mut s = format!("{h1} HTTP/1.x, {h2} HTTP/2");
    // A connection refused at max_connections was accepted and closed at once: in no
    // protocol, and not among those that closed before choosing one.
    let undecided = stats.accepted.saturating_sub(h1 + h2 + stats.rejected);
    if undecided > 0 {
        s += &format!(", {undecided} closed before choosing one");
    }
    if stats.rejected > 0 {
        s += &format!(", {} refused at max_connections", stats.rejected);
    }
    s
}

/// What the server did, told once it stopped: the totals, then a line for each part that ran.
fn print_stopped(stats: &ServerStats) {
    status!(
        "stopped after {} requests on {} connections ({}) and {} QUIC connections ({} HTTP/3 requests)",
        stats.requests,
        stats.accepted,
        by_protocol(stats),
        stats.http3_connections,
        stats.http3_requests,
    );
    if stats.http3_connections > 0 {
        // What each system call carried: GSO batches sent, recvmmsg and GRO read.
        status!(
            "HTTP/3 datagrams: {} received in {} calls, {} sent in {} calls",
            stats.h3_datagrams_received,
            stats.h3_recv_calls,
            stats.h3_datagrams_sent,
            stats.h3_send_calls,
        );
    }
    if stats.cgi_requests > 0 || stats.fastcgi_requests > 0 {
        status!(
            "gateways: CGI {} requests, {} programs started; FastCGI {} requests on {} new connections ({} sent again); failures: {} busy (503), {} not started, {} at the FastCGI application (502), {} timed out, {} bad heads (502), {} died, {} over the output limit; {} killed at shutdown",
            stats.cgi_requests,
            stats.cgi_starts,
            stats.fastcgi_requests,
            stats.fastcgi_connects,
            stats.fastcgi_retries,
            stats.cgi_busy,
            stats.cgi_start_failures,
            stats.fastcgi_failures,
            stats.cgi_timeouts,
            stats.cgi_bad_heads,
            stats.cgi_died,
            stats.cgi_output_limits,
            stats.cgi_killed_at_shutdown,
        );
    }
    if stats.proxy_requests > 0 {
        status!(
            "proxy: {} requests on {} new upstream connections ({} sent again, {} upstream reads), {} refused at max_in_flight (503); failures: {} refused (502), {} reset or cut, {} timed out, {} bad responses, {} longer than their length, {} TLS handshakes failed; {} trusted clients' malformed Forwarded dropped",
            stats.proxy_requests,
            stats.proxy_connects,
            stats.proxy_retries,
            stats.proxy_reads,
            stats.proxy_busy,
            stats.proxy_refused,
            stats.proxy_resets,
            stats.proxy_timeouts,
            stats.proxy_bad_responses,
            stats.proxy_overlong,
            stats.proxy_tls_failures,
            stats.proxy_forwarded_malformed,
        );
    }
    if stats.auth_ok + stats.auth_missing + stats.auth_failed + stats.auth_limited > 0 {
        status!(
            "Basic authentication: {} requests let in ({} of them without a hash check), {} without credentials (401), {} with wrong ones (401), {} refused unchecked (429)",
            stats.auth_ok,
            stats.auth_cached,
            stats.auth_missing,
            stats.auth_failed,
            stats.auth_limited,
        );
    }
    if stats.http2_connections > 0 {
        status!(
            "HTTP/2: {} streams, {} resets received, {} sent, {} GOAWAYs sent, {} received",
            stats.h2_streams,
            stats.h2_resets_received,
            stats.h2_resets_sent,
            stats.h2_goaways_sent,
            stats.h2_goaways_received,
        );
    }
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
    if let Some(t) = args.body_timeout {
        config.body_timeout_ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
    }
    if let Some(rate) = args.body_min_rate {
        config.body_min_rate = rate;
    }
    if let (Some(cert), Some(key)) = (args.tls_cert, args.tls_key) {
        config.tls_cert = Some(cert);
        config.tls_key = Some(key);
    }
    if args.no_http2 {
        config.http2 = false;
    }
    if args.http3 {
        config.http3 = Some(true);
    }
    if args.no_http3 {
        config.http3 = Some(false);
    }
    if let Some(n) = args.h2_max_streams {
        config.h2_max_concurrent_streams = n;
    }
    config.cgi.extend(args.cgi);
    config.cgi_extensions.extend(args.cgi_ext);
    if let Some(n) = args.cgi_max_programs {
        config.cgi_max_programs = n;
    }
    if let Some(t) = args.cgi_timeout {
        config.cgi_timeout_ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
    }
    config.fastcgi.extend(args.fastcgi);
    let https = |m: &serve::config::ProxyMount| m.upstreams.iter().any(|u| u.tls_name.is_some());
    if args.proxy_cacert.is_some() && !args.proxy.iter().any(https) {
        anyhow::bail!("--proxy-cacert: no --proxy mount has an https:// upstream to check with it");
    }
    config.proxy.extend(args.proxy.into_iter().map(|mut m| {
        m.cacert = args.proxy_cacert.clone();
        m
    }));
    if let Some(n) = args.fastcgi_pool {
        config.fastcgi_pool = Some(n);
    }
    if let Some(n) = args.cgi_max_output {
        config.cgi_max_output_bytes = n;
    }
    let realm = args.auth_realm;
    config
        .auth
        .extend(args.basic_auth.into_iter().map(|zone| match &realm {
            Some(realm) => serve::config::AuthZone {
                realm: realm.clone(),
                ..zone
            },
            None => zone,
        }));
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::wall_time;
    use std::time::Duration;

    #[test]
    fn a_wall_time_under_a_millisecond_is_refused_with_the_least_it_takes() {
        for text in [
            "0",
            "0s",
            "1us",
            "999us",
            "0.0005",
            " 0.00099",
            "0.0000001",
            "-1",
        ] {
            let e = wall_time(text).unwrap_err();
            assert!(e.contains("at least 1ms"), "{text}: {e}");
            assert!(!e.contains("write e.g."), "{text}: {e}");
        }
        assert_eq!(wall_time("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(wall_time("20s"), Ok(Duration::from_secs(20)));
        assert!(wall_time("5").unwrap_err().contains("`5s`"));
    }
}
