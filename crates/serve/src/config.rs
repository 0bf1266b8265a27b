//! What `flint serve` is told: flags for the common options, a TOML file for the rest.
//!
//! Every key of the file is a field here; an unknown key is an error that names it (a misspelt
//! `keepalive_timout_ms` silently ignored would make a benchmark measure the wrong thing).
//!
//! The keys are documented in docs/serve.md; renaming one breaks users' files.
//! `Config::default()` is a working configuration rooted at "." (`defaults.rs`). The file is
//! read in `toml_file.rs`, checked in `validate.rs`; the values of a key that has a syntax of
//! its own are parsed beside their types: `listen.rs`, `auth_zone.rs`, `cgi.rs`, `fastcgi.rs`,
//! `proxy.rs` (with `forwarding.rs`), the syntax they share in `text.rs`. `http_limits.rs` turns
//! the protocol keys into what the HTTP/2 and HTTP/3 crates take.

use std::net::SocketAddr;
use std::path::PathBuf;

mod auth_zone;
mod cgi;
mod defaults;
mod fastcgi;
mod forwarding;
mod http_limits;
mod listen;
mod proxy;
mod text;
mod toml_file;
mod validate;
pub use auth_zone::{AuthZone, DEFAULT_REALM};
pub use cgi::CgiMount;
pub use fastcgi::{FastCgiAddr, FastCgiMount, FastCgiPattern};
pub use forwarding::{Cidr, Forwarding};
pub use http_limits::{H3Retry, H3_CONNECTION_WINDOW, H3_STREAM_WINDOW};
use listen::listen_from_toml;
pub use listen::{parse_listen, ListenError, DEFAULT_LISTEN};
pub use proxy::{parse_upstream, ProxyMount, Upstream};
pub use text::parse_auth_prefix;
use text::parsed_list_from_toml;
pub use toml_file::ConfigError;
pub use validate::InvalidConfig;

/// Idle FastCGI connections all threads keep per application by default, at most: fewer than
/// the 5 workers of php-fpm's default pool (Debian's `www.conf`: `pm.max_children = 5`), so
/// one is always free for a request on a new connection.
pub const FASTCGI_POOL_ACROSS_THREADS: usize = 4;

/// Everything `flint serve` is told, one field per key of the TOML file (flags set the common
/// ones): read once at start, checked by [`Config::validate`], then each thread takes what it
/// needs (its responder, its protocols' limits). A missing key takes the default of
/// [`Config::default`], the values docs/serve.md lists.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    // ---- listening and the event loops (server.rs)
    /// The directory whose files are served (canonicalised once at start; default `.`): every
    /// target resolves under it, and a symlink leading out of it is followed only with
    /// `symlinks_outside_root`.
    pub root: PathBuf,
    /// `PORT`, `HOST:PORT`, `IPv4:PORT` or `[IPv6]:PORT` in the file (see [`parse_listen`]).
    #[serde(deserialize_with = "listen_from_toml")]
    pub listen: SocketAddr,
    /// Event-loop threads; 0 means one per available core.
    pub threads: usize,
    /// Open connections across all threads (one count the threads share). At the cap a new
    /// connection takes the place of the one that has waited longest for a request (idle
    /// keep-alive, or silent since accept); only when every one of its thread's is busy with a
    /// request is it closed at once.
    pub max_connections: usize,
    /// A request's head must arrive within this (slowloris), ms.
    pub header_timeout_ms: u64,
    /// An idle keep-alive connection is closed after this, ms.
    pub keepalive_timeout_ms: u64,
    /// A response that makes no progress (no byte taken by the kernel) for this long is
    /// abandoned, ms.
    pub send_timeout_ms: u64,
    /// A request body is read within this of its start, plus a second per `body_min_rate`
    /// bytes received, and with no gap longer than this between its bytes, ms (Apache's
    /// mod_reqtimeout `body=10,MinRate=500`; nginx's `client_body_timeout` is the gap).
    pub body_timeout_ms: u64,
    /// Bytes a second a request body must average to earn time past `body_timeout_ms`; 0 leaves
    /// only the gap.
    pub body_min_rate: u64,
    /// Longest request line, bytes without its CRLF (414 beyond; at least 16). Also part of
    /// HTTP/2's and HTTP/3's bound on a decoded field section.
    pub max_request_line: usize,
    /// Largest request head, bytes: request line, fields and the blank line (431 beyond; at
    /// least `max_request_line`). HTTP/2 and HTTP/3 requests store at most this of fields too.
    pub max_header_bytes: usize,
    /// Most fields in a request head, whatever the protocol (431 beyond; 1 to 256).
    pub max_headers: usize,
    /// Responses queued for one connection before it stops reading more pipelined requests.
    pub max_pipeline_bytes: usize,
    /// A request body (a static server has no use for one) is read and dropped up to this many
    /// bytes, so the connection stays usable; a Content-Length above it gets 413 and a close, a
    /// longer chunked body a close (nginx's `client_max_body_size`, with its default).
    pub max_body_bytes: u64,
    /// `Common` or `Combined` access log file (`-`: standard output); none when absent.
    pub access_log: Option<PathBuf>,
    /// The access log's lines: Common Log Format (the default) or Combined (Referer and
    /// User-Agent added).
    pub access_log_format: LogFormat,
    /// `TCP_DEFER_ACCEPT` on the listening sockets: a connection is accepted once its first
    /// request bytes are in, so the read made right after accept finds them (one epoll round
    /// trip and one failed read fewer per connection), and a client that connects and sends
    /// nothing costs no file descriptor until the kernel gives up waiting (about a second).
    pub defer_accept: bool,
    /// HTTPS: a PEM certificate chain (leaf first) and its PEM private key (ECDSA, RSA or
    /// Ed25519); both or neither. The port then serves TLS only (tls_setup.rs).
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of `tls_cert` (PKCS#8, PKCS#1 or SEC1); set with it or not at all.
    pub tls_key: Option<PathBuf>,
    /// HTTP/2: over TLS offered by ALPN (`h2` before `http/1.1`), over cleartext taken when a
    /// connection opens with the client preface (prior knowledge). Off: HTTP/1.1 only.
    pub http2: bool,
    /// HTTP/2 streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); past
    /// it nghttp2 refuses new ones (RST_STREAM REFUSED_STREAM).
    pub h2_max_concurrent_streams: u32,
    /// Each HTTP/2 stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE), bytes: request
    /// bodies are dropped, so RFC 9113's default is plenty.
    pub h2_initial_window_size: u32,
    /// Largest HTTP/2 header list a client may send (SETTINGS_MAX_HEADER_LIST_SIZE: names and
    /// values plus 32 bytes a field), counted as the fields are decoded; a request past it gets
    /// 431, as one past `max_header_bytes` or `max_headers` does. A block decoded past four times
    /// what HTTP/1.1 allows a request (`max_request_line + max_header_bytes + 32 x max_headers`,
    /// or this if larger) ends the connection (GOAWAY ENHANCE_YOUR_CALM: an HPACK bomb).
    pub h2_max_header_list_size: u32,
    /// The HPACK table a client's encoder may use (SETTINGS_HEADER_TABLE_SIZE), and the most
    /// ours uses, bytes.
    pub h2_header_table_size: u32,
    /// HTTP/3 over QUIC when TLS is on: a UDP socket per thread on the TCP port's address and
    /// number (docs/serve.md, "HTTP/3"). Unset (the default): on when TLS is, and a UDP port
    /// that cannot be bound is a warning (TCP alone, nothing advertised); `true`: required (a
    /// UDP port that cannot be bound stops the start, and so does a server without TLS);
    /// `false`: off. `Server::bind` sets it to what it did (`Some(true)` once bound).
    pub http3: Option<bool>,
    /// QUIC connections at once across all threads (each thread takes its share); a client's
    /// first packet past it is dropped.
    pub h3_max_connections: usize,
    /// QUIC connections at once from one IP address or IPv6 /64 (each thread takes its
    /// share, rounded up), counting those whose client is known to be there (a Retry's token
    /// or a completed handshake); past it a first packet gets a Retry and a validated one is
    /// refused, so one address cannot take every connection and spoofed ones cannot shut it
    /// out.
    pub h3_max_connections_per_address: usize,
    /// When a client's first packet is answered with a Retry: under a handshake flood
    /// (default), always, or never.
    pub h3_retry: H3Retry,
    /// 0-RTT (default off): a client resuming a session may send requests in its first
    /// flight, a round trip sooner. Such a request can be replayed by anyone who saw it, so
    /// one that is not safe to run twice (a method but GET, HEAD, OPTIONS; anything a program
    /// or an upstream answers; a path Basic authentication protects) is refused with 425 Too
    /// Early (RFC 8470), and a client may send it again after the handshake (RFC 8470 4.2). Off like TLS over TCP's early data: a replayed
    /// GET still costs the server its work.
    pub h3_early_data: bool,
    /// How often the session ticket key changes, ms, for TLS over TCP (in whole seconds) and
    /// QUIC, 1 s to 3.5 days: a ticket resumes in the period it was issued in and the next
    /// (periods counted on a monotonic clock from the process's start, not the wall clock),
    /// however idle the server was between, so it is good for at most twice
    /// this (RFC 8446 4.6.1 caps a ticket's lifetime at 7 days). Default 6 hours, rustls's
    /// `Ticketer`'s.
    pub tls_ticket_key_period_ms: u64,
    /// HTTP/3 request streams a client may have open at once (QUIC's initial_max_streams_bidi).
    pub h3_max_streams: u64,
    /// Bytes HTTP/3 request header blocks not whole yet may hold at once across all threads
    /// (each thread takes its share; a connection an eighth of its thread's, each at least one
    /// whole block); a stream whose bytes would pass either is refused with
    /// H3_REQUEST_REJECTED (`h3_header_budget_refused`), so clients that open blocks and never
    /// finish them hold at most this for the header timeout.
    pub h3_header_budget: u64,
    /// A QUIC connection with no packet for this long ends, ms (max_idle_timeout; the
    /// smaller of both sides' applies). Also what bounds a client that stops reading.
    pub h3_idle_timeout_ms: u64,
    /// A diagnostic (on by default): the classic BPF program attached to the HTTP/3 sockets'
    /// group, which hands a short-header packet to the thread its connection ID names
    /// (docs/serve.md, "HTTP/3"). Off, the kernel's 4-tuple hash alone picks the thread and a
    /// client whose port changes loses its connection: to compare, or on a kernel whose program
    /// misbehaves. `FLINT_H3_NO_STEER` set in the environment at start (to anything) turns it
    /// off too.
    pub h3_steer: bool,

    // ---- files, cache and responses (files/resolve.rs, files/cache.rs, respond.rs)
    /// Served for a directory.
    pub index: String,
    /// Body bytes kept in memory per thread (Greedy-Dual-Size eviction).
    pub cache_bytes: u64,
    /// Files larger than this are never kept in memory; they go by `sendfile`. Measured on
    /// loopback (docs/serve.md): from about 32 KiB up, `sendfile` costs less server CPU than a
    /// gathered write from memory, because the socket then references page-cache pages instead of
    /// copying the body into its own buffers: the copy IO-Lite set out to avoid.
    pub cache_max_file: u64,
    /// How long a cached file's metadata is trusted before it is checked again, ms.
    pub revalidate_ms: u64,
    /// Add `Content-MD5` and `Repr-Digest: sha-256`, computed once per file version.
    pub digest: bool,
    /// Serve `x.gz` / `x.br` for `x` when `Accept-Encoding` allows.
    pub precompressed: bool,
    /// Follow symlinks that lead outside the root (off: such requests get 404).
    pub symlinks_outside_root: bool,
    /// `Server` header value.
    pub server_name: String,
    /// Names starting with a dot: hidden (404, not listed; `/.well-known/` still served) or
    /// served like any other.
    pub dotfiles: Dotfiles,
    /// An HTML listing for a directory without an index file (off: 404).
    pub autoindex: bool,
    /// Entries a listing shows at most (the first ones the directory yields, then sorted); the
    /// rest are counted, up to a bound, not examined, and a last line says how many there were.
    pub autoindex_max_entries: usize,
    /// Paths cached per thread (metadata and header blocks); past it the least recently used
    /// (clock) entry is dropped. Bounds memory whatever the clients ask for.
    pub cache_entries: usize,
    /// Descriptors of large files (above `cache_max_file`) kept open per thread for `sendfile`;
    /// past it such files are opened for each response.
    pub cache_open_files: usize,

    // ---- programs (gateway.rs, gateway/)
    /// CGI mounts, `PREFIX=DIR` each (`"/cgi-bin/=/srv/cgi"`): a target under PREFIX runs the
    /// executable it names under DIR (outside the document root), as `--cgi` does.
    #[serde(deserialize_with = "parsed_list_from_toml")]
    pub cgi: Vec<CgiMount>,
    /// Files of the document root whose name ends with one of these (`".cgi"`) are run as CGI
    /// programs instead of being served.
    pub cgi_extensions: Vec<String>,
    /// CGI programs running at once across the server; past it a request gets 503 with
    /// `Retry-After`.
    pub cgi_max_programs: usize,
    /// A CGI program's wall time, ms: past it its process group is killed (504 if nothing of
    /// the response was sent, else the connection is closed).
    pub cgi_timeout_ms: u64,
    /// Bytes a CGI program may write to stdout (head and body); past it the program is killed
    /// and the connection closed.
    pub cgi_max_output_bytes: u64,
    /// With `h3_early_data`: a safe request (GET, HEAD, OPTIONS) received in 0-RTT runs its
    /// CGI program or goes to its FastCGI application, told `HTTP_EARLY_DATA=1` (RFC 8470
    /// 5.1), instead of being refused with 425; the program's 425 goes back as it is. Default
    /// off: only programs that look at the mark should be run on what may be a replay.
    pub cgi_early_data: bool,

    // ---- HTTP Basic authentication (auth.rs, auth/)
    /// Protected path prefixes, `[[auth]]` tables of `prefix`, `file` (an Apache htpasswd file,
    /// read at start) and `realm`; the longest matching prefix decides.
    pub auth: Vec<AuthZone>,
    /// How long a password once verified is taken again without a hash check, per thread, ms.
    pub auth_cache_ms: u64,
    /// Wrong credentials one client address may send within `auth_failure_window_ms`; past it
    /// credentials not verified already get 429 with `Retry-After`, without a hash check.
    pub auth_max_failures: u32,
    /// The window `auth_max_failures` are counted in, from a client's first failure, ms.
    pub auth_failure_window_ms: u64,
    /// Password checks (hashes computed) each thread runs per second at most, whoever asks:
    /// past it, credentials not verified already get 429 unchecked, `Retry-After` the whole
    /// seconds until a check could start. What
    /// bounds the loop's time spent hashing when guesses come from more addresses than the
    /// per-address limit can count.
    pub auth_max_checks_per_second: u32,
    /// FastCGI applications, `PATTERN=ADDR` each (`"*.php=unix:/run/php/php-fpm.sock"`,
    /// `"/app/=127.0.0.1:9000"`), as `--fastcgi` does. Requests run under the CGI limits
    /// (`cgi_max_programs`, `cgi_timeout_ms`, `cgi_max_output_bytes`).
    #[serde(deserialize_with = "parsed_list_from_toml")]
    pub fastcgi: Vec<FastCgiMount>,
    /// Idle connections kept open per application and per thread for the next request
    /// (`FCGI_KEEP_CONN`); 0 opens a connection per request. `None` (the default):
    /// [`FASTCGI_POOL_ACROSS_THREADS`] shared by the threads ([`Config::effective_fastcgi_pool`]).
    pub fastcgi_pool: Option<usize>,
    /// Reverse-proxy mounts, `[[proxy]]` tables (`config/proxy.rs`), as `--proxy` adds.
    pub proxy: Vec<ProxyMount>,
}

/// The access log's line format (`access_log_format`, `--combined`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Common Log Format: host, user, time, request line, status, body bytes.
    Common,
    /// Combined Log Format: Common plus the quoted Referer and User-Agent.
    Combined,
}

/// What to do with names that start with a dot (`.git/config`, `.env`, `.htpasswd`): files that
/// end up in a document root by accident far more often than on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dotfiles {
    /// 404, as if absent, and left out of listings; `/.well-known/` (RFC 8615) is still served.
    Hide,
    /// Served and listed like any other name.
    Allow,
}

impl Config {
    /// The name endings a gateway runs as scripts: the CGI extensions and the FastCGI
    /// extension patterns' (`.cgi`, `.php`). A file so named is never served as a file.
    pub fn script_endings(&self) -> impl Iterator<Item = &str> {
        let fastcgi = self.fastcgi.iter().filter_map(|m| match &m.pattern {
            FastCgiPattern::Extension(ext) => Some(ext.as_str()),
            FastCgiPattern::Prefix(_) => None,
        });
        self.cgi_extensions
            .iter()
            .map(String::as_str)
            .chain(fastcgi)
    }

    /// Whether the port serves TLS (a certificate and its key).
    pub fn tls(&self) -> bool {
        self.tls_cert.is_some() && self.tls_key.is_some()
    }

    /// Idle FastCGI connections each thread keeps per application: `fastcgi_pool`, or
    /// [`FASTCGI_POOL_ACROSS_THREADS`] divided among the threads (rounded down: 0 past four
    /// threads). An idle connection holds one of the application's workers, and a request
    /// queued behind workers held idle by the pools waits until it times out: the default keeps
    /// fewer than php-fpm's default pool has (Debian's `pm.max_children = 5`).
    pub fn effective_fastcgi_pool(&self) -> usize {
        self.fastcgi_pool
            .unwrap_or(FASTCGI_POOL_ACROSS_THREADS / self.effective_threads())
    }

    /// Threads to run: `threads`, or one per available core.
    pub fn effective_threads(&self) -> usize {
        if self.threads > 0 {
            self.threads
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

#[cfg(test)]
mod tests;
