//! flint serve's command line in the dynamic experiment: the static root, CGI, the application
//! over FastCGI, php-fpm and `flint-app http` when their deployments run, one thread (as the
//! other servers run one worker), and the same idle upstream connections nginx's upstreams keep
//! ([`deploy::UPSTREAM_KEEPALIVE`]): without `--fastcgi-pool`, flint serve would keep its
//! default of 4 and connect anew for every few requests of the 8 clients, measuring its pool's
//! size rather than its gateway.

use super::deployment::{FLINT_CGI_MOUNT, FLINT_FASTCGI_MOUNT};
use lab_app::{deploy, php};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;

/// Where flint serve finds what it serves.
#[derive(Debug, Clone, Copy)]
pub struct FlintServe<'a> {
    pub root: &'a Path,
    pub addr: SocketAddr,
    /// The directory holding the CGI programs.
    pub cgi_dir: &'a Path,
    /// `flint-app fastcgi`'s socket.
    pub fastcgi: &'a Path,
    /// php-fpm's socket, when its deployment runs.
    pub php_fpm: Option<&'a Path>,
    /// `flint-app http`'s socket, when the proxy deployment runs.
    pub proxy: Option<&'a Path>,
}

/// The arguments after the flint executable.
pub fn flint_serve_args(f: &FlintServe) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "serve".into(),
        f.root.into(),
        "--listen".into(),
        f.addr.to_string().into(),
        "--threads".into(),
        "1".into(),
        "--cgi".into(),
        format!("{FLINT_CGI_MOUNT}={}", f.cgi_dir.display()).into(),
        "--fastcgi".into(),
        format!("{FLINT_FASTCGI_MOUNT}=unix:{}", f.fastcgi.display()).into(),
        // Per application and thread; one thread, so as many as each nginx upstream keeps.
        "--fastcgi-pool".into(),
        deploy::UPSTREAM_KEEPALIVE.to_string().into(),
    ];
    if let Some(socket) = f.php_fpm {
        args.push("--fastcgi".into());
        args.push(format!("/{}/=unix:{}", php::FPM_DIR, socket.display()).into());
    }
    // The proxy's pool keeps as many idle connections as it has requests in flight (serve's
    // `max_in_flight`, 1024 unless configured): every one of the clients' is kept.
    if let Some(socket) = f.proxy {
        args.push("--proxy".into());
        args.push(format!("{}/=unix:{}", deploy::PROXY_PREFIX, socket.display()).into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamic::DYNAMIC_CLIENTS;

    /// The figure after `keepalive` in each upstream block of nginx's config.
    fn nginx_keepalives(config: &str) -> Vec<usize> {
        config
            .lines()
            .filter_map(|l| l.trim().strip_prefix("keepalive "))
            .map(|n| n.trim_end_matches(';').parse().expect("a keepalive figure"))
            .collect()
    }

    #[test]
    fn flint_keeps_as_many_fastcgi_connections_as_nginx_does() {
        let (root, cgi, fcgi, fpm, http) = (
            Path::new("/r"),
            Path::new("/c"),
            Path::new("/s/app.sock"),
            Path::new("/s/fpm.sock"),
            Path::new("/s/http.sock"),
        );
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let args = flint_serve_args(&FlintServe {
            root,
            addr,
            cgi_dir: cgi,
            fastcgi: fcgi,
            php_fpm: Some(fpm),
            proxy: Some(http),
        });
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        let pool_at = args.iter().position(|a| *a == "--fastcgi-pool");
        let pool: usize = args[pool_at.expect("--fastcgi-pool given") + 1]
            .parse()
            .expect("a number");
        let threads = args[args.iter().position(|a| *a == "--threads").unwrap() + 1];
        assert_eq!(threads, "1", "the pool is per thread: {args:?}");

        let config = deploy::nginx_config(&deploy::Nginx {
            dir: Path::new("/n"),
            root,
            port: 8081,
            fastcgi: Some(fcgi),
            cgi: None,
            php_fpm: Some((fpm, Path::new("/r/php/app.php"))),
            php_cgi: None,
            proxy: Some(http),
        });
        let keepalives = nginx_keepalives(&config);
        assert_eq!(keepalives.len(), 3, "{config}");
        assert!(
            keepalives.iter().all(|&k| k == pool),
            "{keepalives:?} vs {pool}"
        );
        // Every client's request finds a kept connection, in both servers.
        assert!(pool >= DYNAMIC_CLIENTS);
    }
}
