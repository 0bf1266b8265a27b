//! lighttpd's config: one process, sendfile, mod_openssl over TLS, h2 and h2c when asked.

use super::{ConfigParams, TlsFiles, TYPES};

/// lighttpd's TLS module: Debian ships it apart, in lighttpd-mod-openssl.
pub const LIGHTTPD_OPENSSL: &str = "/usr/lib/lighttpd/mod_openssl.so";

/// lighttpd, started with `-D -f CONF`: one process (no `server.max-worker`), sendfile by default.
pub fn lighttpd(p: &ConfigParams) -> String {
    let types: Vec<String> = TYPES
        .iter()
        .map(|(ext, mime)| format!("\".{ext}\" => \"{mime}\""))
        .collect();
    format!(
        "# flint lab: lighttpd, one process.
server.document-root = \"{root}\"
server.bind = \"{host}\"
server.port = {port}
server.errorlog = \"{dir}/error.log\"
server.pid-file = \"{dir}/lighttpd.pid\"
server.max-keep-alive-requests = 65535
server.max-keep-alive-idle = 60
server.max-connections = 4096
server.max-fds = 8192
index-file.names = (\"index.html\")
mimetype.assign = ({types}, \"\" => \"application/octet-stream\")
{tls}{http2}",
        root = p.root.display(),
        dir = p.dir.display(),
        host = p.host,
        port = p.port,
        http2 = if p.http2 {
            "server.feature-flags += (\"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\")\n"
        } else {
            ""
        },
        types = types.join(", "),
        tls = p.tls.map_or(String::new(), lighttpd_tls),
    )
}

/// mod_openssl on the one socket (lighttpd resumes by ticket and by its cache by default).
fn lighttpd_tls(t: &TlsFiles) -> String {
    format!(
        "server.modules += (\"mod_openssl\")
ssl.engine = \"enable\"
ssl.pemfile = \"{cert}\"
ssl.privkey = \"{key}\"
ssl.openssl.ssl-conf-cmd = (\"MinProtocol\" => \"TLSv1.2\")
",
        cert = t.cert.display(),
        key = t.key.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_params::{with, with_tls};

    #[test]
    fn lighttpd_tls_loads_mod_openssl_with_the_pem_files() {
        let text = with_tls(lighttpd);
        for line in [
            "server.modules += (\"mod_openssl\")\n",
            "ssl.engine = \"enable\"\n",
            "ssl.pemfile = \"/tmp/peer/cert.pem\"\n",
            "ssl.privkey = \"/tmp/peer/key.pem\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn lighttpd_binds_loopback_and_keeps_connections() {
        let text = with(false, 40, lighttpd);
        for line in [
            "server.document-root = \"/srv/docs\"",
            "server.bind = \"127.0.0.1\"",
            "server.port = 18123",
            "server.max-keep-alive-requests = 65535",
            "\".gif\" => \"image/gif\"",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }
}
