//! The application's gateways in h2o, as paths of the lab peers' config for it (one thread, the
//! static files at `/`), listed before `/`:
//!
//! - [`FASTCGI_PREFIX`] and [`PHP_FPM_PREFIX`]: `fastcgi.connect` to `flint-app fastcgi` and to
//!   php-fpm over their unix sockets, connections kept (`fastcgi.timeout.keepalive`: without it
//!   h2o opens one per request), the document root given so that the path is `SCRIPT_NAME`,
//!   the rest `PATH_INFO` and the root's file `SCRIPT_FILENAME`.
//! - [`PROXY_PREFIX`]: `proxy.reverse.url` to `flint-app http` over its unix socket, the path
//!   unchanged, connections kept as long.
//!
//! h2o runs no CGI program itself (its documented way is a FastCGI-to-CGI gateway spawned by
//! it): the CGI deployments are left out of h2o's rows.

use super::{Gateways, FASTCGI_PREFIX, PHP_FPM_PREFIX, PROXY_PREFIX};
use std::fmt::Write as _;

/// How long h2o keeps an idle connection to a gateway, in milliseconds: longer than any pause
/// between the lab's requests.
const KEEPALIVE_MS: u32 = 60_000;

/// The entries of `paths:` (indented for h2o's `hosts: default: paths:`) that mount `g`'s
/// gateways; the CGI directory is not used (see the module's note).
pub fn h2o_paths(g: &Gateways) -> String {
    let mut text = String::new();
    let fastcgi = [(FASTCGI_PREFIX, g.fastcgi), (PHP_FPM_PREFIX, g.php_fpm)];
    for (prefix, socket) in fastcgi {
        let Some(socket) = socket else { continue };
        let _ = write!(
            text,
            "      {prefix}:
        fastcgi.connect:
          port: \"{socket}\"
          type: unix
        fastcgi.document_root: \"{root}\"
        fastcgi.timeout.keepalive: {KEEPALIVE_MS}
",
            socket = socket.display(),
            root = g.root.display(),
        );
    }
    if let Some(socket) = g.proxy {
        let _ = write!(
            text,
            "      {PROXY_PREFIX}:
        proxy.reverse.url: \"http://[unix:{socket}]{PROXY_PREFIX}\"
        proxy.timeout.keepalive: {KEEPALIVE_MS}
",
            socket = socket.display(),
        );
    }
    text
}

/// `config` (the lab peers' h2o config) with `g`'s gateways mounted: their paths first, before
/// the static files' `/`.
pub fn h2o_config(config: &str, g: &Gateways) -> Result<String, String> {
    const PATHS: &str = "    paths:\n";
    let at = config.find(PATHS).ok_or("the h2o config has no `paths:`")? + PATHS.len();
    Ok(format!(
        "{}{}{}",
        &config[..at],
        h2o_paths(g),
        &config[at..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_gateways_come_before_the_static_files_kept_alive() {
        let peer = "hosts:\n  default:\n    paths:\n      /:\n        file.dir: \"/a/root\"\n";
        let text = h2o_config(
            peer,
            &Gateways {
                fastcgi: Some(Path::new("/d/app.sock")),
                php_fpm: Some(Path::new("/d/php-fpm.sock")),
                proxy: Some(Path::new("/d/http.sock")),
                cgi_dir: Some(Path::new("/a/cgi")),
                ..Gateways::new(Path::new("/a/root"))
            },
        )
        .unwrap();
        for entry in [
            "      /fcgi/app:\n        fastcgi.connect:\n          port: \"/d/app.sock\"\n          \
             type: unix\n        fastcgi.document_root: \"/a/root\"\n        \
             fastcgi.timeout.keepalive: 60000\n",
            "      /php/app.php:\n        fastcgi.connect:\n          port: \"/d/php-fpm.sock\"\n",
            "      /proxy:\n        proxy.reverse.url: \"http://[unix:/d/http.sock]/proxy\"\n        \
             proxy.timeout.keepalive: 60000\n",
        ] {
            assert!(text.contains(entry), "missing {entry:?} in:\n{text}");
        }
        assert!(text.find("/proxy:") < text.find("      /:\n"), "{text}");
        assert!(
            text.ends_with("      /:\n        file.dir: \"/a/root\"\n"),
            "{text}"
        );
        assert!(!text.contains("/a/cgi"), "h2o runs no CGI: {text}");
        assert!(h2o_config("listen: 80\n", &Gateways::new(Path::new("/r"))).is_err());
    }
}
