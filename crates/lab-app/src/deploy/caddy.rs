//! The application's gateways in Caddy, `handle` blocks of the lab peers' site for it, before
//! its `file_server`:
//!
//! - [`PHP_FPM_PREFIX`]: `php_fastcgi` to php-fpm's socket, as Caddy's documentation deploys
//!   PHP (its `try_files` finds the script by splitting the path at `.php`, so `/json` after
//!   it is `PATH_INFO`).
//! - [`FASTCGI_PREFIX`]: `reverse_proxy` with Caddy's FastCGI transport to `flint-app
//!   fastcgi`'s socket, the path split after the prefix (`SCRIPT_NAME`, then `PATH_INFO`), as
//!   `php_fastcgi` does for PHP.
//! - [`PROXY_PREFIX`]: `reverse_proxy` to `flint-app http`'s socket, the path unchanged
//!   (Caddy keeps its connections to a backend by default).
//!
//! Caddy runs no CGI program (only with a plugin Debian's package does not have): the CGI
//! deployments are left out of Caddy's rows.

use super::{Gateways, FASTCGI_PREFIX, PHP_FPM_PREFIX, PROXY_PREFIX};
use std::fmt::Write as _;

/// The `handle` blocks (indented for the site block) that mount `g`'s gateways; the CGI
/// directory is not used (see the module's note).
pub fn caddy_handles(g: &Gateways) -> String {
    let mut text = String::new();
    if let Some(socket) = g.fastcgi {
        let _ = write!(
            text,
            "\thandle {FASTCGI_PREFIX}/* {{
\t\treverse_proxy unix/{socket} {{
\t\t\ttransport fastcgi {{
\t\t\t\tsplit {FASTCGI_PREFIX}
\t\t\t}}
\t\t}}
\t}}
",
            socket = socket.display()
        );
    }
    if let Some(socket) = g.php_fpm {
        let _ = write!(
            text,
            "\thandle {PHP_FPM_PREFIX}/* {{
\t\tphp_fastcgi unix/{socket}
\t}}
",
            socket = socket.display()
        );
    }
    if let Some(socket) = g.proxy {
        let _ = write!(
            text,
            "\thandle {PROXY_PREFIX}/* {{
\t\treverse_proxy unix/{socket}
\t}}
",
            socket = socket.display()
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn each_gateway_is_a_handle_block_of_its_prefix() {
        let text = caddy_handles(&Gateways {
            fastcgi: Some(Path::new("/d/app.sock")),
            php_fpm: Some(Path::new("/d/php-fpm.sock")),
            proxy: Some(Path::new("/d/http.sock")),
            cgi_dir: Some(Path::new("/a/cgi")),
            ..Gateways::new(Path::new("/a/root"))
        });
        for block in [
            "\thandle /fcgi/app/* {\n\t\treverse_proxy unix//d/app.sock {\n\t\t\ttransport \
             fastcgi {\n\t\t\t\tsplit /fcgi/app\n\t\t\t}\n\t\t}\n\t}\n",
            "\thandle /php/app.php/* {\n\t\tphp_fastcgi unix//d/php-fpm.sock\n\t}\n",
            "\thandle /proxy/* {\n\t\treverse_proxy unix//d/http.sock\n\t}\n",
        ] {
            assert!(text.contains(block), "missing {block:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        assert!(!text.contains("/a/cgi"), "Caddy runs no CGI: {text}");
        assert_eq!(caddy_handles(&Gateways::new(Path::new("/a/root"))), "");
    }
}
