//! Caddy's Caddyfile and environment: plain HTTP or the lab's certificate, no admin endpoint,
//! no certificate fetched, its state in the peer's directory.

use std::path::{Path, PathBuf};

use super::ConfigParams;

/// Caddy, started with `caddy run --config CONF --adapter caddyfile` and [`caddy_env`]: plain
/// HTTP on the lab's address (`auto_https off`: no certificate is fetched or made, no redirect
/// listener), no admin endpoint, its storage in the peer's directory; the files served by
/// `file_server`, the site's last directive (the dynamic experiment's gateways go before it).
/// Over TLS, the lab's certificate on a site of any host name bound to the lab's address (the
/// client asks for the certificate's name, which a site named by the address would not match),
/// HTTP/1.1 alone or, with [`TlsFiles::http3`](super::TlsFiles::http3), HTTP/3 on the same port's UDP too: HTTP/2 is
/// off, as [`crate::PeerKind::speaks_http2`] says of Caddy here.
pub fn caddy(p: &ConfigParams) -> String {
    let (protocols, site, tls) = match p.tls {
        None => (
            String::new(),
            format!("http://{}:{}", p.host, p.port),
            String::new(),
        ),
        Some(t) => (
            format!(
                "\tservers {{\n\t\tprotocols h1{}\n\t}}\n",
                if t.http3 { " h3" } else { "" }
            ),
            format!("https://:{}", p.port),
            format!(
                "\tbind {}\n\ttls \"{}\" \"{}\"\n",
                p.host,
                t.cert.display(),
                t.key.display()
            ),
        ),
    };
    format!(
        "# flint lab: Caddy.
{{
\tadmin off
\tauto_https off
\tstorage file_system \"{dir}/data\"
{protocols}}}

{site} {{
{tls}\troot * \"{root}\"
{CADDY_FILE_SERVER}}}
",
        dir = p.dir.display(),
        root = p.root.display(),
    )
}

/// The line of [`caddy`]'s site that serves the files.
pub const CADDY_FILE_SERVER: &str = "\tfile_server\n";

/// Caddy's environment: its config and data homes in the peer's directory (`caddy run` saves
/// the config it ran under its config home; nothing of a run is left in the user's).
pub fn caddy_env(dir: &Path) -> [(&'static str, PathBuf); 2] {
    [
        ("XDG_CONFIG_HOME", dir.join("config")),
        ("XDG_DATA_HOME", dir.join("data")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_params::with;
    use crate::config::TlsFiles;

    #[test]
    fn caddy_serves_plain_http_from_the_root_without_admin_or_certificates() {
        let text = with(false, 4, caddy);
        for line in [
            "\tadmin off\n",
            "\tauto_https off\n",
            "\tstorage file_system \"/tmp/peer/data\"\n",
            "http://127.0.0.1:18123 {\n",
            "\troot * \"/srv/docs\"\n",
            "\tfile_server\n}\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        for (_, home) in caddy_env(Path::new("/tmp/peer")) {
            assert!(home.starts_with("/tmp/peer"), "{}", home.display());
        }
    }

    #[test]
    fn caddy_over_tls_serves_any_host_name_on_the_address_and_http3_only_when_asked() {
        let files = |http3| TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            http3,
            ..TlsFiles::default()
        };
        let text = |http3| {
            let tls = files(http3);
            with(false, 4, |p| {
                caddy(&ConfigParams {
                    tls: Some(&tls),
                    ..*p
                })
            })
        };
        let (tcp, quic) = (text(false), text(true));
        for t in [&tcp, &quic] {
            for line in [
                "\tauto_https off\n",
                "https://:18123 {\n\tbind 127.0.0.1\n",
                "\ttls \"/tmp/peer/cert.pem\" \"/tmp/peer/key.pem\"\n",
                "\tfile_server\n}\n",
            ] {
                assert!(t.contains(line), "missing {line:?} in:\n{t}");
            }
            assert_eq!(t.matches('{').count(), t.matches('}').count(), "{t}");
            assert!(!t.contains("h2"), "HTTP/2 stays off:\n{t}");
        }
        assert!(tcp.contains("\t\tprotocols h1\n"), "{tcp}");
        assert!(quic.contains("\t\tprotocols h1 h3\n"), "{quic}");
    }
}
