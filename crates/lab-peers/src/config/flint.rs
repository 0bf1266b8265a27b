//! flint serve's command line as a peer: one thread, `--digest` and TLS when asked.

use super::ConfigParams;

/// flint serve's arguments (after the program): one thread, like the other single-process peers.
pub fn flint_args(p: &ConfigParams) -> Vec<String> {
    let mut args = vec![
        "serve".to_owned(),
        p.root.display().to_string(),
        "--listen".to_owned(),
        std::net::SocketAddr::new(p.host, p.port).to_string(),
        "--threads".to_owned(),
        "1".to_owned(),
    ];
    if p.digest {
        args.push("--digest".to_owned());
    }
    if let Some(t) = p.tls {
        args.push("--tls-cert".to_owned());
        args.push(t.cert.display().to_string());
        args.push("--tls-key".to_owned());
        args.push(t.key.display().to_string());
        // TCP alone unless HTTP/3 is asked, as the peers it is compared with are configured: no
        // UDP sockets, no Alt-Svc line in every response (flint serve speaks HTTP/3 by default
        // with TLS). Asked, it is required: a UDP port that cannot be bound stops the start
        // with one line, where the default would serve TCP alone with a warning and leave
        // every QUIC connect of the h3 rows to time out.
        args.push(if t.http3 { "--http3" } else { "--no-http3" }.to_owned());
    }
    args
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::test_params::{with, with_tls};
    use crate::config::TlsFiles;

    #[test]
    fn flint_tls_passes_the_certificate_and_key_and_serves_tcp_alone() {
        let args = with_tls(flint_args);
        let tail: Vec<&str> = args[args.len() - 5..].iter().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "--tls-cert",
                "/tmp/peer/cert.pem",
                "--tls-key",
                "/tmp/peer/key.pem",
                "--no-http3"
            ]
        );
        // With HTTP/3 asked, the same arguments but `--http3` for `--no-http3`: QUIC on the
        // port's UDP, required.
        let tls = TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            http3: true,
            ..TlsFiles::default()
        };
        let with_h3 = with(false, 4, |p| {
            flint_args(&ConfigParams {
                tls: Some(&tls),
                ..*p
            })
        });
        assert_eq!(with_h3[..args.len() - 1], args[..args.len() - 1]);
        assert_eq!(with_h3.last().map(String::as_str), Some("--http3"));
        assert_eq!(with_h3.len(), args.len());
    }

    #[test]
    fn flint_serve_runs_one_thread_and_adds_digest_only_when_asked() {
        let plain = with(false, 40, flint_args);
        assert_eq!(
            plain,
            [
                "serve",
                "/srv/docs",
                "--listen",
                "127.0.0.1:18123",
                "--threads",
                "1"
            ]
        );
        let digest = with(true, 40, flint_args);
        assert_eq!(digest.last().map(String::as_str), Some("--digest"));
    }
}
