//! The application's gateways in lighttpd, appended to the lab peers' config for it (one
//! process, the static files as every other experiment serves them):
//!
//! - [`FASTCGI_PREFIX`] and [`PHP_FPM_PREFIX`]: mod_fastcgi to `flint-app fastcgi` and to
//!   php-fpm over their unix sockets, each a URL prefix (`check-local` off: the prefix is the
//!   script's name, the rest `PATH_INFO`; php-fpm's script is the root's `php/app.php`, where
//!   lighttpd's document root puts `SCRIPT_FILENAME`). lighttpd's gateway opens a connection
//!   per request and never asks a responder to keep one (no `FCGI_KEEP_CONN`): that is part of
//!   what its rows measure.
//! - [`CGI_PREFIX`] and [`PHP_CGI_PREFIX`]: mod_cgi, the CGI directory aliased under
//!   `/cgi-bin/`, each file run as a program (`app.php` by its interpreter line): lighttpd
//!   forks and execs each itself, so the programs are its children.
//! - [`PROXY_PREFIX`]: mod_proxy to `flint-app http` over its unix socket, the path unchanged;
//!   lighttpd asks the backend to close each connection (`Connection: close`).

use super::{Gateways, CGI_PREFIX, FASTCGI_PREFIX, PHP_FPM_PREFIX, PROXY_PREFIX};
use std::fmt::Write as _;

/// The lines that mount `g`'s gateways in lighttpd.
pub fn lighttpd_gateways(g: &Gateways) -> String {
    let mut modules = Vec::new();
    let mut text = String::new();
    let mut fastcgi = Vec::new();
    if let Some(socket) = g.fastcgi {
        fastcgi.push((FASTCGI_PREFIX, socket));
    }
    if let Some(socket) = g.php_fpm {
        fastcgi.push((PHP_FPM_PREFIX, socket));
    }
    if !fastcgi.is_empty() {
        modules.push("mod_fastcgi");
        text.push_str("fastcgi.server = (\n");
        for (prefix, socket) in fastcgi {
            let _ = writeln!(
                text,
                "    \"{prefix}\" => ((\"socket\" => \"{}\", \"check-local\" => \"disable\")),",
                socket.display()
            );
        }
        text.push_str(")\n");
    }
    if let Some(cgi_dir) = g.cgi_dir {
        modules.extend(["mod_alias", "mod_cgi"]);
        let mount = cgi_mount();
        let _ = write!(
            text,
            "alias.url += (\"{mount}/\" => \"{dir}/\")
$HTTP[\"url\"] =~ \"^{mount}/\" {{
    cgi.assign = (\"\" => \"\")
}}
",
            dir = cgi_dir.display()
        );
    }
    if let Some(socket) = g.proxy {
        modules.push("mod_proxy");
        let _ = writeln!(
            text,
            "proxy.server = (\"{PROXY_PREFIX}/\" => ((\"host\" => \"{}\")))",
            socket.display()
        );
    }
    if modules.is_empty() {
        return text;
    }
    let modules: Vec<String> = modules.iter().map(|m| format!("\"{m}\"")).collect();
    format!(
        "# flint lab dynamic: the application's gateways.\nserver.modules += ({})\n{text}",
        modules.join(", ")
    )
}

/// `/cgi-bin`: where the CGI directory is mounted (the programs are [`CGI_PREFIX`] and
/// [`super::PHP_CGI_PREFIX`] under it).
pub(super) fn cgi_mount() -> &'static str {
    CGI_PREFIX
        .rsplit_once('/')
        .map_or(CGI_PREFIX, |(dir, _)| dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn each_gateway_is_mounted_with_its_module_and_only_when_given() {
        let all = lighttpd_gateways(&Gateways {
            fastcgi: Some(Path::new("/d/app.sock")),
            cgi_dir: Some(Path::new("/a/cgi")),
            php_fpm: Some(Path::new("/d/php-fpm.sock")),
            proxy: Some(Path::new("/d/http.sock")),
            ..Gateways::new(Path::new("/a/root"))
        });
        for line in [
            "server.modules += (\"mod_fastcgi\", \"mod_alias\", \"mod_cgi\", \"mod_proxy\")\n",
            "    \"/fcgi/app\" => ((\"socket\" => \"/d/app.sock\", \"check-local\" => \"disable\")),\n",
            "    \"/php/app.php\" => ((\"socket\" => \"/d/php-fpm.sock\", \"check-local\" => \
             \"disable\")),\n",
            "alias.url += (\"/cgi-bin/\" => \"/a/cgi/\")\n",
            "$HTTP[\"url\"] =~ \"^/cgi-bin/\" {\n    cgi.assign = (\"\" => \"\")\n}\n",
            "proxy.server = (\"/proxy/\" => ((\"host\" => \"/d/http.sock\")))\n",
        ] {
            assert!(all.contains(line), "missing {line:?} in:\n{all}");
        }
        let fastcgi_only = lighttpd_gateways(&Gateways {
            fastcgi: Some(Path::new("/d/app.sock")),
            ..Gateways::new(Path::new("/a/root"))
        });
        assert!(fastcgi_only.contains("server.modules += (\"mod_fastcgi\")\n"));
        for absent in ["php-fpm", "cgi.assign", "proxy.server"] {
            assert!(!fastcgi_only.contains(absent), "{absent}: {fastcgi_only}");
        }
        assert_eq!(lighttpd_gateways(&Gateways::new(Path::new("/a/root"))), "");
    }
}
