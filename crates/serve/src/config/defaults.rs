//! The value of every key the file leaves out: `Config::default()`, the values docs/serve.md
//! lists, a working configuration rooted at ".".

use std::path::PathBuf;

use super::{Config, Dotfiles, H3Retry, LogFormat, DEFAULT_LISTEN};

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
