//! h2o's config: one thread, HTTP/1.1 and HTTP/2 on one listener, the lab's certificate over TLS.

use std::fmt::Write as _;

use super::{ConfigParams, TYPES};

/// h2o, started with `-c CONF`: one thread (`num-threads: 1`), like the other single-process
/// peers. It serves HTTP/1.1 and HTTP/2 on the same listener whatever `http2` says (h2 by ALPN,
/// h2c by upgrade or prior knowledge): that is how Debian's h2o comes. As root it serves as
/// `nobody` (its own default): the error log is opened before it drops privileges, and it has
/// no pid file, which it would open after (the lab holds its pid).
pub fn h2o(p: &ConfigParams) -> String {
    let dir = p.dir.display();
    let ssl = p.tls.map_or(String::new(), |t| {
        format!(
            "
  ssl:
    certificate-file: \"{cert}\"
    key-file: \"{key}\"
    minimum-version: TLSv1.2",
            cert = t.cert.display(),
            key = t.key.display(),
        )
    });
    let mut types = String::new();
    for (ext, mime) in TYPES {
        let _ = write!(types, "\n  {mime}: .{ext}");
    }
    format!(
        "# flint lab: h2o, one thread.
num-threads: 1
error-log: \"{dir}/error.log\"
max-connections: 4096
file.mime.settypes:{types}
listen:
  host: {host}
  port: {port}{ssl}
hosts:
  default:
    paths:
      /:
        file.dir: \"{root}\"
",
        host = p.host,
        port = p.port,
        root = p.root.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_params::{with, with_tls};

    #[test]
    fn h2o_is_one_thread_on_the_root_and_takes_the_certificate_over_tls() {
        let text = with(false, 4, h2o);
        for line in [
            "num-threads: 1\n",
            "error-log: \"/tmp/peer/error.log\"\n",
            "  host: 127.0.0.1\n  port: 18123\n",
            "file.dir: \"/srv/docs\"\n",
            "  image/gif: .gif\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("ssl:"), "{text}");
        let text = with_tls(h2o);
        for line in [
            "  port: 18123\n  ssl:\n",
            "    certificate-file: \"/tmp/peer/cert.pem\"\n",
            "    key-file: \"/tmp/peer/key.pem\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }
}
