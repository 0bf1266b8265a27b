//! What `flint serve` is told: flags for the common options, a TOML file for the rest.
//!
//! Every key of the file is a field here; an unknown key is an error that names it (a misspelt
//! `keepalive_timout_ms` silently ignored would make a benchmark measure the wrong thing).
//!
//! The keys are documented in docs/serve.md; renaming one breaks users' files.
//! `Config::default()` is a working configuration rooted at ".".

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use crate::tls_setup::upstream;

mod forwarding;
mod proxy;
pub use forwarding::{Cidr, Forwarding};
pub use proxy::{parse_upstream, ProxyMount, Upstream};

/// The address a bare port (`--listen 8080`) or a bare host listens on, and the port a bare
/// host gets: loopback, so that exposing files to the network always takes an explicit address.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);
/// What an HTTP/3 client may send on one request stream before the server reads it, bytes.
pub const H3_STREAM_WINDOW: u64 = 64 * 1024;
/// What an HTTP/3 client may send on all streams of a connection before the server reads it,
/// bytes.
pub const H3_CONNECTION_WINDOW: u64 = 256 * 1024;

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
    /// HTTP/3 request streams a client may have open at once (QUIC's initial_max_streams_bidi).
    pub h3_max_streams: u64,
    /// A QUIC connection with no packet for this long ends, ms (max_idle_timeout; the
    /// smaller of both sides' applies). Also what bounds a client that stops reading.
    pub h3_idle_timeout_ms: u64,

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
    #[serde(deserialize_with = "cgi_mounts_from_toml")]
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
    /// past it, credentials not verified already get 429 with `Retry-After: 1` unchecked. What
    /// bounds the loop's time spent hashing when guesses come from more addresses than the
    /// per-address limit can count.
    pub auth_max_checks_per_second: u32,
    /// FastCGI applications, `PATTERN=ADDR` each (`"*.php=unix:/run/php/php-fpm.sock"`,
    /// `"/app/=127.0.0.1:9000"`), as `--fastcgi` does. Requests run under the CGI limits
    /// (`cgi_max_programs`, `cgi_timeout_ms`, `cgi_max_output_bytes`).
    #[serde(deserialize_with = "fastcgi_mounts_from_toml")]
    pub fastcgi: Vec<FastCgiMount>,
    /// Idle connections kept open per application and per thread for the next request
    /// (`FCGI_KEEP_CONN`); 0 opens a connection per request.
    pub fastcgi_pool: usize,
    /// Reverse-proxy mounts, `[[proxy]]` tables (`config/proxy.rs`), as `--proxy` adds.
    pub proxy: Vec<ProxyMount>,
}

/// A protected prefix: targets under `prefix` need a user and password of `file`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthZone {
    /// The URL prefix, normalised as a CGI mount's: starts with `/`, no trailing slash except
    /// for `/` itself (`/private`).
    #[serde(deserialize_with = "auth_prefix_from_toml")]
    pub prefix: String,
    /// An Apache htpasswd file (bcrypt, SHA-256-crypt or SHA-512-crypt entries).
    pub file: PathBuf,
    /// The realm the challenge names (`WWW-Authenticate: Basic realm="..."`).
    #[serde(default = "default_realm")]
    pub realm: String,
}

/// The realm of a zone that names none.
pub const DEFAULT_REALM: &str = "flint";

fn default_realm() -> String {
    DEFAULT_REALM.into()
}

/// A protected prefix as `--basic-auth` and `prefix` take it: a path under `/` without empty,
/// dot or escaped segments, its trailing slash dropped (`/` stays `/`).
pub fn parse_auth_prefix(prefix: &str) -> Result<String, String> {
    if prefix == "/" {
        return Ok(prefix.into());
    }
    let trimmed = prefix.trim_end_matches('/');
    let bad_segment = trimmed
        .split('/')
        .skip(1)
        .any(|seg| seg.is_empty() || seg.starts_with('.'));
    if !prefix.starts_with('/') || trimmed.is_empty() || bad_segment || prefix.contains('%') {
        return Err(format!(
            "`{prefix}`: the prefix must be a path under / without empty, dot or escaped segments"
        ));
    }
    Ok(trimmed.into())
}

fn auth_prefix_from_toml<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    parse_auth_prefix(&text).map_err(serde::de::Error::custom)
}

impl std::str::FromStr for AuthZone {
    type Err = String;

    /// `PREFIX=FILE`: `/private/=/etc/flint/htpasswd`, in the default realm.
    fn from_str(text: &str) -> Result<AuthZone, String> {
        let Some((prefix, file)) = text.split_once('=') else {
            return Err(format!(
                "`{text}`: expected PREFIX=HTPASSWD_FILE (`/private/=/etc/flint/htpasswd`)"
            ));
        };
        if file.is_empty() {
            return Err(format!("`{text}`: the file is empty"));
        }
        Ok(AuthZone {
            prefix: parse_auth_prefix(prefix)?,
            file: PathBuf::from(file),
            realm: default_realm(),
        })
    }
}

/// Which targets a FastCGI application answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastCgiPattern {
    /// Files of the document root whose name ends with this (`.php`, from `*.php`).
    Extension(String),
    /// Targets under this URL prefix, normalised as a CGI mount's (`/app`).
    Prefix(String),
}

/// Where a FastCGI application listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastCgiAddr {
    /// A Unix socket's path (`unix:/run/php/php-fpm.sock`).
    Unix(PathBuf),
    /// A TCP address, resolved once when the mount is read (`127.0.0.1:9000`).
    Tcp(std::net::SocketAddr),
}

impl std::fmt::Display for FastCgiAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FastCgiAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            FastCgiAddr::Tcp(a) => write!(f, "{a}"),
        }
    }
}

/// A FastCGI application and the targets it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastCgiMount {
    /// The targets it answers: an extension or a URL prefix.
    pub pattern: FastCgiPattern,
    /// Where the application listens.
    pub addr: FastCgiAddr,
}

impl std::str::FromStr for FastCgiMount {
    type Err = String;

    /// `PATTERN=ADDR`: `*.php=unix:/run/php/php-fpm.sock`, `/app/=127.0.0.1:9000`.
    fn from_str(text: &str) -> Result<FastCgiMount, String> {
        let Some((pattern, addr)) = text.split_once('=') else {
            return Err(format!(
                "`{text}`: expected PATTERN=ADDR (`*.php=unix:/run/php/php-fpm.sock`)"
            ));
        };
        let pattern = match pattern.strip_prefix('*') {
            Some(ext) => {
                let name = ext.strip_prefix('.').unwrap_or("");
                if name.is_empty() || name.contains(['/', '*', '%']) {
                    return Err(format!(
                        "`{pattern}`: an extension pattern is `*.` and a name (`*.php`)"
                    ));
                }
                FastCgiPattern::Extension(ext.to_string())
            }
            // The same rules as a CGI mount's prefix.
            None => FastCgiPattern::Prefix(format!("{pattern}=-").parse::<CgiMount>()?.prefix),
        };
        let addr = match addr.strip_prefix("unix:") {
            Some("") => return Err(format!("`{text}`: the socket path is empty")),
            Some(path) => FastCgiAddr::Unix(PathBuf::from(path)),
            None => {
                use std::net::ToSocketAddrs;
                let found = addr.to_socket_addrs().ok().and_then(|mut a| a.next());
                match found {
                    Some(a) => FastCgiAddr::Tcp(a),
                    None => {
                        return Err(format!(
                            "`{addr}`: expected unix:PATH or HOST:PORT for the application"
                        ))
                    }
                }
            }
        };
        Ok(FastCgiMount { pattern, addr })
    }
}

/// `fastcgi` in the file: a list of `PATTERN=ADDR` strings.
fn fastcgi_mounts_from_toml<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<FastCgiMount>, D::Error> {
    let texts = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    texts
        .iter()
        .map(|t| t.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// A CGI mount: targets under `prefix` name programs under `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiMount {
    /// The URL prefix, normalised: starts with `/`, no trailing slash (`/cgi-bin`).
    pub prefix: String,
    /// The directory the programs are in, outside the document root: checked at start (one
    /// that cannot be opened as a directory is `ServeError::CgiDir`); a target naming no executable under it
    /// gets 404.
    pub dir: PathBuf,
}

impl std::str::FromStr for CgiMount {
    type Err = String;

    /// `PREFIX=DIR`: `/cgi-bin/=/srv/cgi`.
    fn from_str(text: &str) -> Result<CgiMount, String> {
        let Some((prefix, dir)) = text.split_once('=') else {
            return Err(format!(
                "`{text}`: expected PREFIX=DIR (`/cgi-bin/=/srv/cgi`)"
            ));
        };
        let trimmed = prefix.trim_end_matches('/');
        let bad_segment = trimmed
            .split('/')
            .skip(1)
            .any(|seg| seg.is_empty() || seg.starts_with('.'));
        if !prefix.starts_with('/') || trimmed.is_empty() || bad_segment || prefix.contains('%') {
            return Err(format!(
                "`{prefix}`: the prefix must be a path under / without empty, dot or escaped segments"
            ));
        }
        if dir.is_empty() {
            return Err(format!("`{text}`: the directory is empty"));
        }
        Ok(CgiMount {
            prefix: trimmed.to_string(),
            dir: PathBuf::from(dir),
        })
    }
}

/// `cgi` in the file: a list of `PREFIX=DIR` strings.
fn cgi_mounts_from_toml<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<CgiMount>, D::Error> {
    let texts = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    texts
        .iter()
        .map(|t| t.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// When an HTTP/3 client's Initial is answered with a Retry (address validation, RFC 9000
/// 8.1.2) before any state is kept for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum H3Retry {
    /// When a thread has [`http3::DEFAULT_RETRY_HANDSHAKES`] handshakes under way (a flood):
    /// otherwise no round trip more for anyone.
    Flood,
    /// Every connection (one round trip more for each).
    Always,
    /// Never.
    Never,
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

impl Default for Config {
    fn default() -> Self {
        Config {
            root: PathBuf::from("."),
            listen: DEFAULT_LISTEN,
            threads: 0,
            max_connections: 16_384,
            header_timeout_ms: 10_000,
            keepalive_timeout_ms: 60_000,
            send_timeout_ms: 60_000,
            body_timeout_ms: 10_000,
            body_min_rate: 500,
            max_request_line: 8192,
            max_header_bytes: 16_384,
            max_headers: 64,
            max_pipeline_bytes: 256 * 1024,
            max_body_bytes: 1 << 20,
            access_log: None,
            access_log_format: LogFormat::Common,
            defer_accept: true,
            tls_cert: None,
            tls_key: None,
            http2: true,
            h2_max_concurrent_streams: 100,
            h2_initial_window_size: 65_535,
            h2_max_header_list_size: 16_384,
            h2_header_table_size: 4_096,
            http3: None,
            h3_max_connections: 10_000,
            h3_max_connections_per_address: 1_000,
            h3_retry: H3Retry::Flood,
            h3_max_streams: 100,
            h3_idle_timeout_ms: 30_000,
            index: "index.html".into(),
            cache_bytes: 64 << 20,
            cache_max_file: 32 << 10,
            revalidate_ms: 1000,
            digest: false,
            precompressed: true,
            symlinks_outside_root: false,
            dotfiles: Dotfiles::Hide,
            autoindex: false,
            autoindex_max_entries: 10_000,
            server_name: "flint".into(),
            cache_entries: 65_536,
            cache_open_files: 256,
            cgi: Vec::new(),
            cgi_extensions: Vec::new(),
            cgi_max_programs: 64,
            cgi_timeout_ms: 30_000,
            cgi_max_output_bytes: 1 << 30,
            auth: Vec::new(),
            auth_cache_ms: 300_000,
            auth_max_failures: 10,
            auth_failure_window_ms: 60_000,
            auth_max_checks_per_second: 50,
            fastcgi: Vec::new(),
            fastcgi_pool: 8,
            proxy: Vec::new(),
        }
    }
}

/// Why a configuration file gave no [`Config`]: one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}")]
    Io {
        /// The file, as given.
        path: String,
        /// What reading it said.
        source: std::io::Error,
    },
    /// Too large, not UTF-8, not TOML, or a key unknown or of the wrong type.
    #[error("{path}: {message}")]
    Parse {
        /// The file, as given.
        path: String,
        /// What is wrong, with its line and key when known.
        message: String,
    },
}

/// A value no server can run with: one line naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` = {value}: {reason}")]
pub struct InvalidConfig {
    /// The key, as the file spells it.
    pub key: &'static str,
    /// The value refused, as the line prints it.
    pub value: String,
    /// What the value must be (`must be at least 1`).
    pub reason: &'static str,
}

impl Config {
    /// Refuses values that would make the server refuse everything, spin or never time out:
    /// checked by `Server::bind` before anything starts.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let checks: [(&'static str, u64, bool, &'static str); 19] = [
            (
                "max_connections",
                self.max_connections as u64,
                self.max_connections >= 1,
                "must be at least 1",
            ),
            (
                "header_timeout_ms",
                self.header_timeout_ms,
                self.header_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "send_timeout_ms",
                self.send_timeout_ms,
                self.send_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "body_timeout_ms",
                self.body_timeout_ms,
                self.body_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "max_request_line",
                self.max_request_line as u64,
                self.max_request_line >= 16,
                "must be at least 16 (`GET / HTTP/1.1` is 14)",
            ),
            (
                "max_header_bytes",
                self.max_header_bytes as u64,
                self.max_header_bytes >= self.max_request_line,
                "must be at least `max_request_line`",
            ),
            (
                "max_headers",
                self.max_headers as u64,
                (1..=wire::request::MAX_HEADERS_CAP).contains(&self.max_headers),
                "must be from 1 to 256",
            ),
            (
                "max_pipeline_bytes",
                self.max_pipeline_bytes as u64,
                self.max_pipeline_bytes >= 1,
                "must be at least 1",
            ),
            (
                "h2_max_concurrent_streams",
                u64::from(self.h2_max_concurrent_streams),
                self.h2_max_concurrent_streams >= 1,
                "must be at least 1",
            ),
            (
                "h2_initial_window_size",
                u64::from(self.h2_initial_window_size),
                self.h2_initial_window_size <= i32::MAX as u32,
                "must be at most 2^31-1 (RFC 9113 6.9.2)",
            ),
            (
                "h3_max_connections",
                self.h3_max_connections as u64,
                self.h3_max_connections >= 1,
                "must be at least 1",
            ),
            (
                "h3_max_connections_per_address",
                self.h3_max_connections_per_address as u64,
                self.h3_max_connections_per_address >= 1,
                "must be at least 1",
            ),
            (
                "h3_max_streams",
                self.h3_max_streams,
                (1..=1 << 60).contains(&self.h3_max_streams),
                "must be from 1 to 2^60 (RFC 9000 4.6)",
            ),
            (
                "h3_idle_timeout_ms",
                self.h3_idle_timeout_ms,
                self.h3_idle_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "cgi_max_programs",
                self.cgi_max_programs as u64,
                self.cgi_max_programs >= 1,
                "must be at least 1",
            ),
            (
                "cgi_timeout_ms",
                self.cgi_timeout_ms,
                self.cgi_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "auth_max_failures",
                u64::from(self.auth_max_failures),
                self.auth_max_failures >= 1,
                "must be at least 1",
            ),
            (
                "auth_failure_window_ms",
                self.auth_failure_window_ms,
                self.auth_failure_window_ms >= 1,
                "must be at least 1",
            ),
            (
                "auth_max_checks_per_second",
                u64::from(self.auth_max_checks_per_second),
                self.auth_max_checks_per_second >= 1,
                "must be at least 1",
            ),
        ];
        // A realm is sent inside a quoted string: no quote, backslash or control byte to
        // escape, and the challenge line stays one line.
        if let Some(zone) = self.auth.iter().find(|z| {
            z.realm.is_empty()
                || z.realm.len() > 256
                || z.realm
                    .chars()
                    .any(|c| c == '"' || c == '\\' || c.is_control())
        }) {
            return Err(InvalidConfig {
                key: "auth.realm",
                value: format!("{:?}", zone.realm),
                reason: "must be 1 to 256 characters without quotes, backslashes or controls",
            });
        }
        if let Some(ext) = self
            .cgi_extensions
            .iter()
            .find(|e| !e.starts_with('.') || e.len() < 2 || e.contains('/'))
        {
            return Err(InvalidConfig {
                key: "cgi_extensions",
                value: format!("{ext:?}"),
                reason: "each must be a dot and a name (`.cgi`)",
            });
        }
        for m in &self.proxy {
            Self::validate_proxy(m)?;
        }
        // Half of TLS is refused whatever `http3` is: the port would otherwise be taken for
        // HTTPS by what reads the predicate wrongly, or served in clear by mistake. The line
        // names the half that is missing.
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), None) => {
                return Err(InvalidConfig {
                    key: "tls_cert",
                    value: format!("{:?}", cert.display().to_string()),
                    reason: "is set without `tls_key`: its private key is missing",
                })
            }
            (None, Some(key)) => {
                return Err(InvalidConfig {
                    key: "tls_key",
                    value: format!("{:?}", key.display().to_string()),
                    reason: "is set without `tls_cert`: the certificate is missing",
                })
            }
            _ => {}
        }
        if self.http3 == Some(true) && !self.tls() {
            return Err(InvalidConfig {
                key: "http3",
                value: "true".into(),
                reason: "needs TLS (`tls_cert` and `tls_key`, or --tls-cert and --tls-key): QUIC is always encrypted",
            });
        }
        match checks.into_iter().find(|c| !c.2) {
            Some((key, value, _, reason)) => Err(InvalidConfig {
                key,
                value: value.to_string(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// A proxy mount as its parser would have made it (a config built in code skips the parser):
    /// a prefix under `/`, an upstream at least, timeouts that end.
    fn validate_proxy(m: &ProxyMount) -> Result<(), InvalidConfig> {
        let invalid = |key, value: String, reason| InvalidConfig { key, value, reason };
        if !m.prefix.starts_with('/') {
            let reason = "must be a path under / (`/api/`)";
            return Err(invalid("proxy.prefix", format!("{:?}", m.prefix), reason));
        }
        if m.upstreams.is_empty() {
            let value = format!("[] (the mount {})", m.prefix);
            return Err(invalid(
                "proxy.upstreams",
                value,
                "must name an upstream at least",
            ));
        }
        let timeouts = [
            ("proxy.connect_timeout_ms", m.connect_timeout_ms),
            ("proxy.first_byte_timeout_ms", m.first_byte_timeout_ms),
            ("proxy.idle_timeout_ms", m.idle_timeout_ms),
        ];
        if let Some((key, _)) = timeouts.into_iter().find(|t| t.1 == 0) {
            let value = format!("0 (the mount {})", m.prefix);
            return Err(invalid(key, value, "must be at least 1"));
        }
        if !(1..=proxy::MAX_IN_FLIGHT).contains(&m.max_in_flight) {
            let value = format!("{} (the mount {})", m.max_in_flight, m.prefix);
            return Err(invalid(
                "proxy.max_in_flight",
                value,
                "must be from 1 to 65536",
            ));
        }
        // Each address's group keeps room for its whole pool from the start.
        if let Some(pool) = m.pool.filter(|&p| p > proxy::MAX_IN_FLIGHT) {
            let value = format!("{pool} (the mount {})", m.prefix);
            return Err(invalid("proxy.pool", value, "must be at most 65536"));
        }
        // The CA file read now, once: a bad one stops the start, not each request.
        if m.upstreams.iter().any(|u| u.tls_name.is_some()) {
            if let Err(e) = upstream::tls_config(m.cacert.as_deref()) {
                let reason = "an https:// upstream's certificates must be checkable (a PEM file of certificates, or the system's roots)";
                let value = upstream::setup_error(&e);
                return Err(invalid("proxy.cacert", value, reason));
            }
        }
        Ok(())
    }

    /// HTTP/2's limits (the `http2` crate's server defaults, with the `h2_*` keys over them).
    pub fn http2_limits(&self) -> http2::Config {
        http2::Config {
            max_concurrent_streams: self.h2_max_concurrent_streams,
            initial_window_size: self.h2_initial_window_size,
            max_header_list_size: self.h2_max_header_list_size,
            max_header_list_decoded: self.max_header_list_decoded(),
            header_table_size: self.h2_header_table_size,
            deflate_table_size: self.h2_header_table_size as usize,
            ..http2::Config::server()
        }
    }

    /// Whether the port serves TLS (a certificate and its key).
    pub fn tls(&self) -> bool {
        self.tls_cert.is_some() && self.tls_key.is_some()
    }

    /// Whether HTTP/3 is served: with TLS, unless turned off. Before `Server::bind` this is
    /// what is asked for; after it, what was done (a UDP port that could not be bound with
    /// `http3` unset left it `Some(false)`).
    pub fn serves_http3(&self) -> bool {
        self.http3 != Some(false) && self.tls()
    }

    /// The `Alt-Svc` value HTTP/1.1 and HTTP/2 responses advertise HTTP/3 with (RFC 7838: the
    /// same host, `listen`'s port number, for a day), when it is served: the responders are
    /// made from the configuration `Server::bind` settled, so nothing advertises a UDP port
    /// nobody listens on.
    pub fn alt_svc(&self) -> Option<String> {
        (self.serves_http3()).then(|| format!("h3=\":{}\"; ma=86400", self.listen.port()))
    }

    /// HTTP/3's limits (the `http3` crate's defaults, with the `h3_*` keys over them). The
    /// largest header block taken is HTTP/1.1's largest request as QPACK counts it (a request
    /// line, a head, 32 bytes a field): within it, wire's checks answer 414 or 431 as they do
    /// over HTTP/1.1. The receive windows are small: a request body is read only to be
    /// dropped, so a client is given no room to send much of one ahead.
    pub fn http3_limits(&self) -> http3::Limits {
        let http11 = (self.max_request_line)
            .saturating_add(self.max_header_bytes)
            .saturating_add(self.max_headers.saturating_mul(32));
        http3::Limits {
            idle_timeout: std::time::Duration::from_millis(self.h3_idle_timeout_ms),
            max_streams: self.h3_max_streams,
            max_field_section: http11 as u64,
            stream_window: H3_STREAM_WINDOW,
            connection_window: H3_CONNECTION_WINDOW,
            ..http3::Limits::default()
        }
    }

    /// HTTP/3's Retry policy (`h3_retry`).
    pub fn http3_retry(&self) -> http3::Retry {
        match self.h3_retry {
            H3Retry::Flood => http3::Retry::Flood(http3::DEFAULT_RETRY_HANDSHAKES),
            H3Retry::Always => http3::Retry::Always,
            H3Retry::Never => http3::Retry::Never,
        }
    }

    /// HTTP/3's deadlines besides QUIC's idle timeout: those of HTTP/1.1 and HTTP/2
    /// (`header_timeout_ms` for the handshake and a request's header block,
    /// `keepalive_timeout_ms` for a connection with no request open, `send_timeout_ms` for
    /// responses that make no progress, `body_timeout_ms` and `body_min_rate` for a request
    /// body).
    pub fn http3_timeouts(&self) -> http3::Timeouts {
        let ms = std::time::Duration::from_millis;
        http3::Timeouts {
            header: ms(self.header_timeout_ms),
            keep_alive: ms(self.keepalive_timeout_ms),
            send: ms(self.send_timeout_ms),
            body: ms(self.body_timeout_ms),
            body_min_rate: self.body_min_rate,
        }
    }

    /// The most of one HTTP/2 header list decoded before the connection ends: four times the
    /// largest request HTTP/1.1 takes, as a header list counts it (a request line, a head, 32
    /// bytes a field), so that no request a client means is near it.
    fn max_header_list_decoded(&self) -> u32 {
        let http11 = (self.max_request_line)
            .saturating_add(self.max_header_bytes)
            .saturating_add(self.max_headers.saturating_mul(32));
        u32::try_from(http11.saturating_mul(4)).unwrap_or(u32::MAX)
    }

    /// Reads a TOML file; unknown keys and wrong types are errors naming the key and line.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        use crate::start_files::{self, StartFileError, MAX_CONFIG_BYTES};
        let name = || path.display().to_string();
        let bytes = start_files::read(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            StartFileError::Io(source) => ConfigError::Io {
                path: name(),
                source,
            },
            e => ConfigError::Parse {
                path: name(),
                message: e.to_string(),
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::Parse {
            path: name(),
            message: "not UTF-8 text".into(),
        })?;
        toml::from_str(&text).map_err(|e| {
            // toml's own rendering spans several lines (a source excerpt and a caret): one line
            // with the line number says the same.
            let message = e.message().trim().replace('\n', " ");
            let message = match e.span() {
                Some(span) => {
                    let start = span.start.min(text.len());
                    let line = text[..start].matches('\n').count() + 1;
                    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                    let whole = text[line_start..].lines().next().unwrap_or("");
                    // Name the key when the message does not (a bad value of a known key).
                    match whole.split_once('=').map(|(k, _)| k.trim()) {
                        Some(key) if !key.is_empty() && !message.contains(key) => {
                            format!("line {line}: `{key}`: {message}")
                        }
                        _ => format!("line {line}: {message}"),
                    }
                }
                None => message,
            };
            ConfigError::Parse {
                path: path.display().to_string(),
                message,
            }
        })
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

/// Why a listen address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenError {
    /// None of the accepted forms; the text as given.
    #[error("`{0}`: expected PORT, HOST:PORT, IPv4:PORT or [IPv6]:PORT")]
    Syntax(String),
    /// A port that is not a number from 0 to 65535; the text as given.
    #[error("`{0}`: the port must be a number from 0 to 65535")]
    Port(String),
    /// A host name the resolver did not turn into an address.
    #[error("`{host}`: cannot resolve: {reason}")]
    Resolve {
        /// The name, as given.
        host: String,
        /// What the resolver said.
        reason: String,
    },
}

/// Parses a listen address: `8080` (a port on [`DEFAULT_LISTEN`]'s address), `127.0.0.1:8080`,
/// `[::1]:8080`, `localhost:8080` (resolved; the first address the resolver gives), or a bare
/// address or name (on [`DEFAULT_LISTEN`]'s port). Port 0 asks the kernel for a free port.
pub fn parse_listen(text: &str) -> Result<SocketAddr, ListenError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let port = text.parse().map_err(|_| ListenError::Port(text.into()))?;
        return Ok(SocketAddr::new(DEFAULT_LISTEN.ip(), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_LISTEN.port()));
    }
    let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
    if let Some(ip) = bare.and_then(|t| t.parse::<IpAddr>().ok()) {
        return Ok(SocketAddr::new(ip, DEFAULT_LISTEN.port()));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => {
            let port = port.parse().map_err(|_| ListenError::Port(text.into()))?;
            (host, port)
        }
        None => (text, DEFAULT_LISTEN.port()),
    };
    let name_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !name_ok {
        return Err(ListenError::Syntax(text.into()));
    }
    let resolve_error = |reason: String| ListenError::Resolve {
        host: host.into(),
        reason,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(|e| resolve_error(e.to_string()))?
        .next()
        .ok_or_else(|| resolve_error("no address".into()))
}

/// `listen` in the file: a string for [`parse_listen`], or a bare port number.
fn listen_from_toml<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Listen {
        Port(u16),
        Text(String),
    }
    match <Listen as serde::Deserialize>::deserialize(d)? {
        Listen::Port(port) => Ok(SocketAddr::new(DEFAULT_LISTEN.ip(), port)),
        Listen::Text(text) => parse_listen(&text).map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests;
