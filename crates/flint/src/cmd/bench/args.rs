//! `flint bench`'s arguments; `flint run` and `flint compare` take the load options too.

use bench::thresholds::{Threshold, ThresholdError};
use clap::{Args, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Every duration of the load options: a bare number is seconds (crate::duration's one rule).
fn duration(text: &str) -> Result<Duration, String> {
    crate::duration::parse_or_seconds(text)
}

/// A knob of microseconds (`--busy-poll`): a bare number's hint is `us`, not `s`.
fn microseconds(text: &str) -> Result<Duration, String> {
    crate::duration::parse_hinting(text, "us")
}

/// The run's length and the timeouts: a bare number is seconds, as in wrk and hey; 0 refused.
use crate::duration::positive as positive_duration;

/// Requests in flight per connection (`--streams`): 1 to the engine's bound, a number too
/// large for any type said to be out of that range too.
fn streams(text: &str) -> Result<u32, String> {
    let most = bench::runner::plan::MAX_STREAMS;
    match text.parse::<u64>() {
        Ok(n) if (1..=u64::from(most)).contains(&n) => Ok(n as u32),
        Ok(_) => Err(format!("must be 1 to {most}")),
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("must be 1 to {most}"))
        }
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// A count that must be at least 1 (`-c 0` would measure nothing).
fn at_least_one<T: std::str::FromStr + PartialOrd + From<u8>>(text: &str) -> Result<T, String> {
    match text.parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        Ok(_) => Err("must be at least 1".into()),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// A share in percent, `1%` or `1` (0 to 50), as a fraction.
fn percent(text: &str) -> Result<f64, String> {
    let digits = text.strip_suffix('%').unwrap_or(text);
    match digits.parse::<f64>() {
        Ok(p) if (0.0..=50.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!("`{text}` is not a share from 0% to 50%")),
    }
}

/// An HTTP/2 flow-control window: bytes, or with `k`/`m` KiB/MiB; 1 to 2^31-1 (RFC 9113).
fn window(text: &str) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    let (digits, unit) = match lower.strip_suffix('k') {
        Some(d) => (d, 1024),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 1024 * 1024),
            None => (lower.as_str(), 1),
        },
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a window size in bytes (65535, 64k, 6m)"))?;
    match n.checked_mul(unit) {
        Some(b) if (1..=i32::MAX as u64).contains(&b) => Ok(b as u32),
        _ => Err(format!(
            "`{text}`: a window is 1 byte to 2147483647 (2^31-1)"
        )),
    }
}

/// Pages per second, as the tools write rates: `1000`, `1k` (and `M`), `1000/s`, `600/m`
/// (k6's `rate` and `timeUnit`), `36k/h`.
pub fn rate(text: &str) -> Result<f64, String> {
    let bad =
        || format!("`{text}` is not a rate: pages per second, e.g. 1000, 1k, 1000/s, 600/m, 36k/h");
    let t = text.trim();
    let (count, per) = match t.split_once('/') {
        Some((count, unit)) => {
            let per = match unit.trim() {
                "s" | "sec" | "1s" => 1.0,
                "m" | "min" | "1m" => 60.0,
                "h" | "1h" => 3600.0,
                _ => return Err(bad()),
            };
            (count.trim(), per)
        }
        None => (t, 1.0),
    };
    let (number, scale) = match count.char_indices().last() {
        Some((i, 'k' | 'K')) => (&count[..i], 1e3),
        Some((i, 'M')) => (&count[..i], 1e6),
        _ => (count, 1.0),
    };
    match number.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r * scale / per),
        _ => Err(bad()),
    }
}

/// A request method is an HTTP token with a letter in it. (h2load's `-m 10`, streams per
/// connection, is answered by the table of other tools' flags, `crate::habits`.)
fn method(text: &str) -> Result<String, String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if !text.is_empty() && text.chars().all(tchar) && text.chars().any(|c| c.is_ascii_alphabetic())
    {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not an HTTP method (GET, POST, HEAD, ...)"
        ))
    }
}

/// `--tls-ciphers`' suites, as the report names them.
#[derive(Debug, Clone)]
pub struct CipherList(pub Vec<String>);

fn cipher_list(text: &str) -> Result<CipherList, String> {
    bench::transport::parse_cipher_list(text).map(CipherList)
}

fn expect_status(text: &str) -> Result<bench::config::ExpectStatus, String> {
    text.parse()
}

fn threshold(text: &str) -> Result<Threshold, String> {
    text.parse().map_err(|e: ThresholdError| e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HttpArg {
    /// A new connection per file, as the 1995 clients did.
    #[value(name = "1.0")]
    Http10,
    /// Persistent connections (keep-alive).
    #[value(name = "1.1")]
    Http11,
    /// HTTP/2: ALPN h2 over https://, prior knowledge (h2c) over http://; a page's files as
    /// concurrent streams of one connection.
    #[value(name = "2")]
    Http2,
    /// HTTP/3 over QUIC (UDP), https:// only: a page's files as concurrent streams of one
    /// connection per Webchild, kept across its pages.
    #[value(name = "3")]
    Http3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TlsArg {
    /// 1.2 or 1.3, as the server prefers (what `--tls` alone means: `flint run --tls`).
    #[value(name = "any")]
    Any,
    #[value(name = "1.2")]
    Tls12,
    #[value(name = "1.3")]
    Tls13,
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
    #[arg(short = 'c', long = "clients", value_name = "N", default_value_t = 16,
          visible_aliases = ["connections", "concurrency"], value_parser = at_least_one::<usize>)]
    pub clients: usize,
    /// Event-loop threads [default: the cores available, at most --clients; more than either is
    /// lowered to it, with a note].
    #[arg(short = 't', long, value_name = "N", value_parser = at_least_one::<usize>)]
    pub threads: Option<usize>,
    /// Measure for this long [default: 10s]: 500ms, 30s, 1m30s, 2m; a bare number is seconds.
    #[arg(short = 'd', long, value_name = "DUR", value_parser = positive_duration,
          conflicts_with = "pages", short_alias = 'z')]
    pub duration: Option<Duration>,
    /// Instead of a duration: fetch this many pages in all, across all Webchildren.
    #[arg(short = 'n', long, value_name = "PAGES", value_parser = at_least_one::<u64>)]
    pub pages: Option<u64>,
    /// Run this long first; nothing from it is counted (a bare number is seconds).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub warmup: Option<Duration>,
    /// Pause after each page (closed loop; the open loop's --rate sets the pace instead; a
    /// bare number is seconds).
    #[arg(long, value_name = "DUR", value_parser = duration, conflicts_with = "rate")]
    pub think: Option<Duration>,
    /// Open loop: start this many pages per second across all Webchildren, each at its intended
    /// time; latency counts from the intended start, so a stalled server cannot hide its stalls.
    /// 1000, 1k, 1000/s, 600/m; at most 1000000/s a Webchild (-c), and with -n its pages due
    /// within 1e9 s (as -d).
    #[arg(long, value_name = "PAGES_PER_S", value_parser = rate)]
    pub rate: Option<f64>,
    /// HTTP version: 1.0 opens a connection per file; 1.1 keeps connections alive; 2 fetches a
    /// page's files as concurrent streams of one connection; 3 does so over QUIC (https://
    /// only; TLS 1.3, sessions resumed with --tls-resume; UDP GSO and GRO where the kernel
    /// has them).
    #[arg(long, value_enum, default_value = "1.1")]
    pub http: HttpArg,
    /// HTTP/1.1 pipelining: write all files of a page at once on one connection, or with N, at
    /// most N requests in flight on it. With one-file pages (a single URL), N pages of it at
    /// once, a new one written as each response ends (h2load's --h1 -m N, wrk's pipeline.lua),
    /// in the closed loop.
    // (`None`: not given; `Some(None)`: given without N, a page's files all at once.)
    #[arg(long, value_name = "N", num_args = 0..=1)]
    pub pipeline: Option<Option<u32>>,
    /// Connections of each Webchild, sharing each page's files as a browser does: each takes
    /// the page's next file when it is free, and the page ends with its last file (HTTP/1.1's
    /// kept alive from page to page, HTTP/1.0's one per file); the page time is then what the
    /// page took. Closed loop, one request at a time each. An application workload's session
    /// (cookies, extracted values, data rows) is the Webchild's, shared by its connections
    /// [default: 1].
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = at_least_one::<usize>)]
    pub connections_per_client: usize,
    /// HTTP/2: requests in flight per connection [default: all of a page's files, never more
    /// than the server allows]. With one-file pages, N pages of it at once (h2load's -m); in
    /// the closed loop those lanes refill in batches of N/8 (docs/bench-http2.md), so that
    /// their HEADERS leave together; with --rate each starts at its slot on a free stream, with
    /// --think each lane thinks after its page. HTTP/3 too. Each connection's table of streams
    /// in flight is made once with 2N slots rounded up to a power of two (256 for 100): a
    /// Webchild's memory grows with N.
    #[arg(long, value_name = "N", value_parser = streams)]
    pub streams: Option<u32>,
    /// HTTP/2: each stream's receive window, and the connection's when above 65535 (it cannot
    /// start lower), in bytes (64k, 1m) [default: a browser's, 6 MiB a stream and 15 MiB the
    /// connection].
    #[arg(long, value_name = "BYTES", value_parser = window)]
    pub h2_window: Option<u32>,
    /// Give up on a response after this long (and on a connect, unless --connect-timeout); a
    /// bare number is seconds, and 0 is refused (there is no "no timeout").
    #[arg(long, value_name = "DUR", value_parser = positive_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Give up on a connect after this long (a bare number is seconds; not 0) [default:
    /// --timeout].
    #[arg(long, value_name = "DUR", value_parser = positive_duration)]
    pub connect_timeout: Option<Duration>,
    /// With nothing to do, poll this long before sleeping; `0us` sleeps at once. A client asleep
    /// makes the server pay to wake it for its next response (on loopback, in the server's own
    /// CPU time), so sleeping at once costs a busy server requests/s; polling costs the client
    /// a little CPU. Polls that keep finding nothing pause by themselves (docs/latency.md).
    #[arg(long, value_name = "DUR", value_parser = microseconds, default_value = "5us")]
    pub busy_poll: Duration,
    /// With more than one request in flight a connection (--streams N), before sleeping nap on
    /// a timer for up to this share of the mean response time, so that responses arriving
    /// meanwhile are read together and the server is spared waking the client for each (a
    /// server-bound run gains requests/s); a response read late by the nap is late by at most
    /// that share (at most 100 µs; no nap under 10 µs). `0` turns it off (docs/latency.md).
    #[arg(long, value_name = "PERCENT", value_parser = percent, default_value = "1%")]
    pub read_slack: f64,
    /// Seed of the Webchildren's random page choices: the same seed, the same sequence.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the whole result as JSON (schema: docs/bench-json.schema.json); `-`: to stdout,
    /// alone (the reports then go to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV line per request (WebSTONE's per-child log); `-`: to stdout, alone (the
    /// reports then go to stderr).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Print each request's and response's head to stderr.
    #[arg(long)]
    pub debug: bool,
    /// No live progress line. (Not a rate, as oha's and hey's -q are: that is --rate; hey's is per
    /// worker, so `hey -c 10 -q 100` is `--rate 1000`.)
    // Overriding itself: `--no-tui -q` (oha's habit and flint's flag, one meaning) is taken.
    #[arg(short, long, alias = "no-tui", overrides_with = "quiet")]
    pub quiet: bool,
    /// Reports to print, comma-separated [default: summary for a URL and paths; webstone,summary
    /// for a workload (-w) and `flint run`].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub report: Option<Vec<ReportArg>>,
    /// Write the result as one self-contained HTML page with charts (as `flint report` does);
    /// `-`: to stdout.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// HTTPS: also trust the CA certificates in this PEM file (beside the system's roots). A
    /// self-signed certificate given here that the server presents as its own is trusted as
    /// itself, as curl trusts it: for the names it carries, within its dates.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// HTTPS: accept any certificate without checking it (the reports say so).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// HTTPS: resume TLS sessions (with `--http 3`, QUIC's: each client's next connection offers
    /// its last session's ticket); by default every new connection is a full handshake, so a
    /// run measures the server's handshake cost.
    #[arg(long)]
    pub tls_resume: bool,
    /// HTTP/3 0-RTT (with `--tls-resume --http 3`): a connection resuming a session whose ticket
    /// allows early data sends its first page's requests before the handshake is done. A server
    /// may answer one 425 Too Early (RFC 8470: not safe to replay): counted as its status, not
    /// sent again. `summary.http3` counts the connections whose 0-RTT was accepted and rejected.
    #[arg(long)]
    pub early_data: bool,
    /// HTTPS: only this TLS version [default: any, 1.2 or 1.3 as the server prefers]: `--tls 1.3`
    /// or `--tls=1.3` (only a version is taken after `--tls`: `--tls https://…` keeps the URL;
    /// TLS 1.0 and 1.1 are refused). In `flint run`, `--tls` (with or without a version) serves
    /// and benchmarks over HTTPS.
    #[arg(long, value_name = "VERSION", num_args = 0..=1, require_equals = true,
          default_missing_value = "any", value_parser = TlsVersions)]
    pub tls: Option<TlsArg>,
    /// HTTPS: offer these cipher suites, in this order (comma-separated; the names the report,
    /// curl and h2load print, OpenSSL's: TLS_AES_256_GCM_SHA384, ECDHE-RSA-AES128-GCM-SHA256; or
    /// rustls's: TLS13_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
    /// [default: browsers' order, AES-128-GCM first: the suite a server then picks is the one it
    /// uses for browsers]
    #[arg(long, value_name = "LIST", value_parser = cipher_list)]
    pub tls_ciphers: Option<CipherList>,
    /// The statuses that count as success, comma-separated: codes, classes, ranges (`200,304`,
    /// `2xx`, `200-299`); any other is an error of its class. [default: 1xx to 3xx are
    /// responses, 4xx and 5xx errors, as wrk counts them]
    #[arg(long, value_name = "LIST", value_parser = expect_status)]
    pub expect_status: Option<bench::config::ExpectStatus>,
    /// Follow up to N (at most 100) redirects (301, 302, 303, 307, 308) of the URL's origin per
    /// file, as hey and oha do (they follow 10) and curl -L: on the same connection while it
    /// stays open (over HTTP/2 and HTTP/3, a new stream). Each one is a request the server counts, and the
    /// file's response time runs from its first request to its final response. A Location of
    /// another origin, a missing or unparsable one are not followed (the 3xx is the response,
    /// counted by why); still a redirect after N is the error too_many_redirects. [default: 0,
    /// a 3xx is a response, as wrk counts it]
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=100), hide_default_value = true)]
    pub redirect: u32,
    /// Go on for the whole run even when every attempt fails the same way. By default a run
    /// stops (exit 1, the results so far reported) once, for a second from its start, every
    /// attempt has failed as one kind (a refused connect, h2_not_negotiated, a 404, ...) and not
    /// one has succeeded; one success turns that off for the run.
    #[arg(long)]
    pub no_fail_fast: bool,
    /// Pass/fail condition on the result, as k6 writes them; repeatable. Any crossed: exit
    /// status 3. Metrics: pN (p50, p99, p99.9), mean, min, max of connect, ttfb, response (the
    /// default) or page, as p99(page); error_rate, errors, errors(KIND) (one error kind, as
    /// check_body), rps, pages_per_s. Examples:
    /// 'p99<50ms' 'p99.9(page)<200ms' 'error_rate<1%' 'rps>10000'.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = threshold)]
    pub thresholds: Vec<Threshold>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The server: http://HOST:PORT or https://HOST:PORT. A path in it is a file fetched as the
    /// first page, before any PATHs (`/` when nothing else is named; with -w the workload names
    /// the files); user:password@ in it is sent as Basic auth. With -w it may be left out when
    /// the workload names its `origin` (flint discover writes the site it crawled there).
    pub url: Option<String>,
    /// Files to fetch: one page each, equal weights.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Workload file: TOML pages, or an original WebSTONE filelist (detected by itself).
    #[arg(short = 'w', long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// An application workload (data, templates, checks, extraction): keep no cookies. By
    /// default each Webchild keeps a cookie jar of its own, as a browser per user.
    #[arg(long)]
    pub no_cookies: bool,
    /// An application workload: forget each Webchild's extracted values and cookies as each of
    /// its pages starts (a new user per page). By default a Webchild is one user for the run.
    #[arg(long)]
    pub reset_session: bool,
    /// Profile the server over the measured window: its syscalls (perf or strace, whichever
    /// works here) and CPU time, as the Jigsaw syscall notes' truss table and in the JSON. A pid,
    /// or `auto` for the local process listening on the target's port; `:perf` or `:strace`
    /// after it picks the tracer (docs/profile.md).
    #[arg(long, value_name = "PID|auto", value_parser = super::profile::parse_arg)]
    pub profile: Option<super::profile::ProfileArg>,
    /// A header field for every request, `Name: value`; repeatable. Replaces flint's own Host
    /// or User-Agent; a workload file's own fields win over it.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// The request method [default: GET]. A HEAD's response is read without a body.
    #[arg(short = 'm', long, value_name = "METHOD", value_parser = method, short_alias = 'X')]
    pub method: Option<String>,
    /// Basic authentication, `USER:PASSWORD` (as oha's and hey's -a; the URL's user:password@
    /// does the same).
    #[arg(short = 'a', long = "basic-auth", value_name = "USER:PASS")]
    pub basic_auth: Option<String>,
    /// Connect to this address instead of the URL's, which stays the Host header and the name
    /// TLS checks: HOST:PORT, or curl's HOST1:PORT1:HOST2:PORT2.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "resolve")]
    pub connect_to: Option<String>,
    /// Connect to this Unix stream socket (http:// only); the URL's host stays the Host header.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["connect_to", "resolve"])]
    pub unix_socket: Option<PathBuf>,
    /// curl's HOST:PORT:ADDRESS: the URL's host and port at ADDRESS (Host and TLS name kept).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Option<String>,
    /// A request body for every request, sent with its Content-Length.
    #[arg(long, value_name = "STRING", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// The request body, read from a file once before the run.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Generate the load from these client hosts (comma-separated): a `flint worker` on each,
    /// started by --launch; -c, --rate and -n are totals, split over the hosts, and so are an
    /// application workload's `unique` data rows, never given to two hosts (docs/hosts.md).
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

/// `--tls`'s value: a version flint speaks, or what it does speak said in the one line clap
/// prints (its "possible values" list and "similar value" tip would offer 1.3 for 1.0).
#[derive(Debug, Clone, Copy)]
struct TlsVersions;

impl clap::builder::TypedValueParser for TlsVersions {
    type Value = TlsArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<TlsArg, clap::Error> {
        clap::builder::TypedValueParser::parse_ref(&tls_version, cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let values = TlsArg::value_variants().iter();
        Some(Box::new(values.filter_map(ValueEnum::to_possible_value)))
    }
}

fn tls_version(text: &str) -> Result<TlsArg, String> {
    const TAKES: &str = "--tls takes 1.2, 1.3 or any (either, as the server prefers)";
    if let Ok(version) = TlsArg::from_str(text, false) {
        return Ok(version);
    }
    let old = matches!(version_number(text), Some("1.0" | "1.1" | "1"));
    Err(if old {
        format!("{TAKES}; TLS 1.0 and 1.1 are not spoken (deprecated by RFC 8996)")
    } else {
        TAKES.to_owned()
    })
}

/// The number of an argument written as a protocol version (`1.0`, `1.4`, `TLSv1.1`, `v1`),
/// taken for a TLS version however mistyped. A host could be spelt so (`v1`), but a bare host
/// after `--tls` is an http:// URL, refused with it anyway; an address (`10.0.0.1`) has more
/// dots and is not taken.
fn version_number(text: &str) -> Option<&str> {
    let prefix = ["tlsv", "sslv", "tls", "ssl", "v"].into_iter().find(|p| {
        text.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
    });
    let number = &text[prefix.map_or(0, str::len)..];
    let mut parts = number.split('.');
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let shaped = parts.next().is_some_and(digits)
        && parts.next().is_none_or(digits)
        && parts.next().is_none();
    shaped.then_some(number)
}

/// `--tls 1.3` as `--tls=1.3`: `--tls` takes its value only after `=` (so that `--tls
/// https://host/` cannot take the URL for a version), and a version written after a space, as
/// the docs and habit have it, is joined to it here, before clap reads the line: one flint
/// speaks or not (`--tls 1.0` is then refused as a version, not read as a path or a stray
/// argument). Nothing after `--` is touched.
pub fn join_tls_version(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut literal = false;
    for arg in args {
        let text = arg.to_string_lossy();
        let joins = !literal
            && out.last().is_some_and(|prev| prev == "--tls")
            && (TlsArg::from_str(&text, false).is_ok() || version_number(&text).is_some());
        if joins {
            let prev = out.last_mut().expect("checked above");
            prev.push("=");
            prev.push(&arg);
            continue;
        }
        literal |= arg == "--";
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_longer_than_0() {
        assert_eq!(positive_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(positive_duration("1ms"), Ok(Duration::from_millis(1)));
        for zero in ["0", "0s", "0ms", "0us", "0m0s"] {
            assert_eq!(
                positive_duration(zero),
                Err("must be longer than 0".into()),
                "{zero}"
            );
        }
    }

    #[test]
    fn streams_are_1_to_1000_however_large_the_number() {
        assert_eq!(streams("1"), Ok(1));
        assert_eq!(streams("1000"), Ok(1000));
        for out in [
            "0",
            "1001",
            "4294967296",
            "99999999999",
            "99999999999999999999999",
        ] {
            assert_eq!(streams(out), Err("must be 1 to 1000".into()), "{out}");
        }
        for bad in ["", "x", "-1", "1.5"] {
            assert!(
                streams(bad).unwrap_err().contains("is not a whole number"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_read_slack_is_a_percentage() {
        assert_eq!(percent("1%"), Ok(0.01));
        assert_eq!(percent("0"), Ok(0.0));
        assert_eq!(percent("2.5"), Ok(0.025));
        for bad in ["-1%", "51%", "x", "%", "", "NaN"] {
            assert!(
                percent(bad).unwrap_err().contains("is not a share"),
                "{bad}"
            );
        }
    }

    #[test]
    fn rates_take_the_units_the_tools_write() {
        assert_eq!(rate("1000"), Ok(1000.0));
        assert_eq!(rate("1k"), Ok(1000.0));
        assert_eq!(rate("2.5K"), Ok(2500.0));
        assert_eq!(rate("1M"), Ok(1e6));
        assert_eq!(rate("1000/s"), Ok(1000.0));
        assert_eq!(rate("600/m"), Ok(10.0));
        assert_eq!(rate("36k/h"), Ok(10.0));
        for bad in ["0", "-1", "1x", "1000/d", "k", ""] {
            assert!(rate(bad).unwrap_err().contains("is not a rate"), "{bad}");
        }
    }

    #[test]
    fn a_method_is_a_token_with_a_letter() {
        assert_eq!(method("PROPFIND").as_deref(), Ok("PROPFIND"));
        assert!(method("10").unwrap_err().contains("is not an HTTP method"));
        assert!(method("GET /").is_err());
    }

    #[test]
    fn a_tls_version_after_a_space_is_joined_and_a_url_is_not() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            join_tls_version(args(&["flint", "bench", "--tls", "1.3", "https://h/"])),
            args(&["flint", "bench", "--tls=1.3", "https://h/"])
        );
        assert_eq!(
            join_tls_version(args(&["flint", "bench", "--tls", "https://h/"])),
            args(&["flint", "bench", "--tls", "https://h/"])
        );
        assert_eq!(
            join_tls_version(args(&["flint", "--", "--tls", "1.2"])),
            args(&["flint", "--", "--tls", "1.2"])
        );
        // A version flint does not speak is still --tls's, for clap to refuse as one.
        for version in ["1.0", "1.1", "1.4", "2", "TLSv1.0", "tls1.1", "v1"] {
            assert_eq!(
                join_tls_version(args(&["flint", "run", "--tls", version])),
                args(&["flint", "run", &format!("--tls={version}")]),
                "{version}"
            );
        }
        // Neither paths, hosts nor flags.
        for other in ["/1.0", "10.0.0.1", "1.2.3", "v", "1.", "-d", "tlsx"] {
            assert_eq!(
                join_tls_version(args(&["flint", "bench", "--tls", other])),
                args(&["flint", "bench", "--tls", other]),
                "{other}"
            );
        }
    }

    #[test]
    fn a_tls_version_not_spoken_says_which_are() {
        assert_eq!(tls_version("1.3"), Ok(TlsArg::Tls13));
        assert_eq!(tls_version("any"), Ok(TlsArg::Any));
        for old in ["1.0", "1.1", "TLSv1.0"] {
            let e = tls_version(old).unwrap_err();
            assert!(e.contains("takes 1.2, 1.3 or any"), "{e}");
            assert!(e.contains("TLS 1.0 and 1.1 are not spoken"), "{e}");
        }
        let e = tls_version("1.4").unwrap_err();
        assert!(
            e.contains("takes 1.2, 1.3 or any") && !e.contains("1.0"),
            "{e}"
        );
    }
}
