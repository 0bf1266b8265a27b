//! nginx's config: one process that is the worker, sendfile, an open-file cache, no access log
//! (but the TLS tests' own, when asked).

use std::fmt::Write as _;

use super::{ConfigParams, TlsFiles, TYPES};

/// The fields of each line of [`TlsFiles::nginx_access_log`], space-separated: the connection's
/// serial, the request's number on it, `p` if it was pipelined (else `.`), the TLS version and
/// cipher (OpenSSL's names), `r` if the session was resumed (else `.`), the status, and the bytes
/// sent (head and body, before encryption).
pub const NGINX_TLS_LOG_FORMAT: &str = "$connection $connection_requests $pipe $ssl_protocol \
$ssl_cipher $ssl_session_reused $status $bytes_sent";

/// nginx: `daemon off; master_process off;` makes one process that is the worker, so the pid the
/// lab holds is the one that serves (and the one profiled).
pub fn nginx(p: &ConfigParams) -> String {
    let dir = p.dir.display();
    let mut types = String::new();
    for (ext, mime) in TYPES {
        let _ = write!(types, " {mime} {ext};");
    }
    format!(
        "# flint lab: nginx, one process that is the worker.
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;

events {{
    worker_connections 4096;
}}

http {{
    types {{{types} }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    access_log off;{log_format}
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;

    server {{
        listen {host}:{port}{ssl}{http2};
        root {root};{tls}
        location / {{
        }}
    }}
}}
",
        port = p.port,
        host = p.host,
        http2 = if p.http2 { " http2" } else { "" },
        root = p.root.display(),
        ssl = if p.tls.is_some() { " ssl" } else { "" },
        tls = p.tls.map_or(String::new(), nginx_tls),
        log_format = match p.tls.and_then(|t| t.nginx_access_log.as_ref()) {
            Some(_) => format!("\n    log_format flint_tls '{NGINX_TLS_LOG_FORMAT}';"),
            None => String::new(),
        },
    )
}

/// nginx's TLS: both versions the others serve, a session cache and tickets so that resumed
/// handshakes are possible whichever way the client resumes (one process: the cache needs no
/// sharing, but `shared` is the form every nginx guide uses and costs nothing here).
fn nginx_tls(t: &TlsFiles) -> String {
    let (protocols, ciphers) = match &t.nginx_protocols {
        Some((protocols, ciphers)) => (
            protocols.as_str(),
            format!("\n        ssl_ciphers {ciphers};"),
        ),
        None => ("TLSv1.2 TLSv1.3", String::new()),
    };
    let access_log = t.nginx_access_log.as_ref().map_or(String::new(), |log| {
        format!("\n        access_log {} flint_tls;", log.display())
    });
    format!(
        "
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols {protocols};{ciphers}
        ssl_session_cache shared:flint_lab:10m;
        ssl_session_tickets on;{access_log}",
        cert = t.cert.display(),
        key = t.key.display(),
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::test_params::{with, with_tls};

    #[test]
    fn nginx_tls_listens_with_ssl_the_lab_certificate_and_a_session_cache() {
        let text = with_tls(nginx);
        for line in [
            "listen 127.0.0.1:18123 ssl;",
            "ssl_certificate /tmp/peer/cert.pem;",
            "ssl_certificate_key /tmp/peer/key.pem;",
            "ssl_protocols TLSv1.2 TLSv1.3;",
            "ssl_session_cache shared:",
            "ssl_session_tickets on;",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        assert!(!text.contains("ssl_ciphers"), "OpenSSL's defaults:\n{text}");
        assert!(!text.contains("log_format"), "no access log:\n{text}");
    }

    #[test]
    fn nginx_tls_takes_a_protocol_list_and_an_access_log_of_tls_parameters() {
        let tls = TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            nginx_protocols: Some(("TLSv1".into(), "DEFAULT@SECLEVEL=0".into())),
            nginx_access_log: Some(PathBuf::from("/tmp/peer/access.log")),
            http3: false,
        };
        let text = with(false, 4, |p| {
            nginx(&ConfigParams {
                tls: Some(&tls),
                ..*p
            })
        });
        for line in [
            "ssl_protocols TLSv1;",
            "ssl_ciphers DEFAULT@SECLEVEL=0;",
            "access_log /tmp/peer/access.log flint_tls;",
            "log_format flint_tls '$connection $connection_requests $pipe $ssl_protocol \
             $ssl_cipher $ssl_session_reused $status $bytes_sent';",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        // The format is declared in `http`, before the server that uses it.
        assert!(text.find("log_format") < text.find("access_log /tmp"));
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn nginx_is_one_process_that_serves_from_the_root_on_loopback() {
        let text = with(false, 40, nginx);
        for line in [
            "daemon off;",
            "master_process off;",
            "worker_processes 1;",
            "sendfile on;",
            "tcp_nopush on;",
            "open_file_cache max=1000",
            "access_log off;",
            "keepalive_requests 1000000;",
            "listen 127.0.0.1:18123;",
            "root /srv/docs;",
            "pid /tmp/peer/nginx.pid;",
            "error_log /tmp/peer/error.log",
            "text/html html;",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }
}
