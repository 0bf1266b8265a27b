//! Why a run stopped early (fail fast, `runner/fail_fast.rs`): the kind every attempt failed
//! as, how many, and after how long; kept in `Stats`, merged across hosts, and said in one line
//! with what to do about it.

use super::{ErrorKind, StatusCounts};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Why a run stopped early: every attempt failed as `kind`, `attempts` of them, for `after`
/// (from the run's start, warm-up included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GaveUp {
    /// The one kind every failed attempt was of.
    pub kind: ErrorKind,
    /// The failed attempts, every one of `kind`.
    pub attempts: u64,
    /// When the run stopped, from its start (warm-up included).
    pub after: Duration,
    /// HTTP/3 refused (no QUIC server on the port), yet a TCP connect to the same port was
    /// answered when the run ended: a server with its HTTP/3 off rather than no server (see
    /// [`GaveUp::probed`]). Asked once per run, so that saying why does no I/O.
    #[serde(default)]
    pub tcp_answered: bool,
}

impl GaveUp {
    /// Two parts of a run (hosts) that stopped: of one kind, their attempts add up and the
    /// later stop is the run's; of two kinds, the first says why.
    pub fn merge(a: Option<GaveUp>, b: Option<GaveUp>) -> Option<GaveUp> {
        match (a, b) {
            (Some(a), Some(b)) if a.kind == b.kind => Some(GaveUp {
                kind: a.kind,
                attempts: a.attempts + b.attempts,
                after: a.after.max(b.after),
                tcp_answered: a.tcp_answered || b.tcp_answered,
            }),
            (a, b) => a.or(b),
        }
    }

    /// Whether the 4xx responses counted in `statuses` say files are missing: a 404 or 410 was
    /// seen and no other 4xx (a server refusing the requests, 405, 425, 401..., has its own
    /// reasons). None recorded (a run stopped in its warm-up) says nothing of the files.
    pub fn files_missing(statuses: &StatusCounts) -> bool {
        let mut client_errors = statuses
            .seen()
            .filter(|(code, _)| (400..500).contains(code))
            .peekable();
        client_errors.peek().is_some() && client_errors.all(|(code, _)| matches!(code, 404 | 410))
    }

    /// What to do about it, for the kinds that have a usual cause; the others say only that.
    /// `statuses`: the run's responses by status, for a run of 4xx.
    pub fn hint(&self, config: &crate::BenchConfig, statuses: &StatusCounts) -> Option<String> {
        let target = &config.target;
        let server = match &target.unix_socket {
            Some(path) => path.display().to_string(),
            None => target.addr.to_string(),
        };
        Some(match self.kind {
            ErrorKind::ConnectRefused if self.tcp_answered => format!(
                "nothing answered over UDP (QUIC) on {server}, though a TCP server listens \
                 there: HTTP/3 may be off on it (try without --http 3)"
            ),
            ErrorKind::ConnectRefused => format!("is the server running on {server}?"),
            ErrorKind::ConnectTimeout => format!("is {server} reachable (a firewall dropping the connects)?"),
            ErrorKind::H2NotNegotiated => match target.scheme {
                // What was run was h2c: the port may be an HTTPS one (nginx answers its 400).
                crate::Scheme::Http => "the server does not speak HTTP/2 in cleartext (h2c) on that port (write https:// if it is an HTTPS port, else try without --http 2)".to_owned(),
                crate::Scheme::Https => "the server does not speak HTTP/2 over TLS: it did not choose h2 by ALPN (try without --http 2, or h2c with --http 2 over http:// to a cleartext port)".to_owned(),
            },
            ErrorKind::H3Protocol => "the server agreed to h3 but does not speak HTTP/3 (a QUIC server of another protocol on that port, or one that breaks HTTP/3's framing or sends malformed responses)".to_owned(),
            ErrorKind::TlsHandshake => "is the server speaking TLS on that port (http:// rather than https://)?".to_owned(),
            ErrorKind::Status4xx if Self::files_missing(statuses) => "the server has no such files (check the paths, or put the files in place: flint fileset)".to_owned(),
            ErrorKind::Status4xx => {
                // The 4xx other than 404 and 410 (missing files) say why; none recorded (every
                // one in the warm-up), the line stays neutral.
                let refused: Vec<String> = (statuses.seen())
                    .filter(|(code, _)| (400..500).contains(code) && !matches!(code, 404 | 410))
                    .map(|(code, n)| format!("{code} ({n})"))
                    .collect();
                match refused.as_slice() {
                    [] => "the server answers every request with a 4xx (check the paths, the method and the credentials)".to_owned(),
                    _ => format!("the server answered {}: it refuses these requests (405 the method, 425 in 0-RTT, 401 or 403 the credentials)", refused.join(", ")),
                }
            }
            ErrorKind::Status5xx => "the server fails every request (see its error log)".to_owned(),
            ErrorKind::MissingValueUnsent => "a value the requests need is never extracted (check the page whose file extracts it: does it run, does its extraction match; or --reset-session, which forgets values as each page starts)".to_owned(),
            ErrorKind::UnsafeValueUnsent => "every value put in a header field held a line break or NUL (check what its extraction takes, or send it in a body)".to_owned(),
            _ => return None,
        })
    }

    /// `self` with [`GaveUp::tcp_answered`] found out: when HTTP/3's datagrams were refused,
    /// whether the same port answers a TCP connect. One connect, made once the run has stopped
    /// (and only then), so that every line saying why reads the answer instead of asking again.
    pub fn probed(self, config: &crate::BenchConfig) -> GaveUp {
        const PROBE: Duration = Duration::from_secs(1);
        let target = &config.target;
        let tcp_answered = self.kind == ErrorKind::ConnectRefused
            && config.http == crate::HttpMode::Http3
            && target.unix_socket.is_none()
            && std::net::TcpStream::connect_timeout(&target.addr, PROBE).is_ok();
        GaveUp {
            tcp_answered,
            ..self
        }
    }

    /// The hint for handshakes that failed though the server answered in TLS (an alert: no
    /// version or suite in common, say), in place of the usual one that asks whether it speaks
    /// TLS at all: what the commonest reason in `failures` means, with the options given.
    pub fn tls_hint(
        &self,
        config: &crate::BenchConfig,
        failures: &super::TlsFailures,
    ) -> Option<String> {
        if self.kind != ErrorKind::TlsHandshake {
            return None;
        }
        let (reason, _) = *failures.seen().first()?;
        reason
            .server_speaks_tls()
            .then(|| format!("the server speaks TLS: {}", reason.explain_for(&config.tls)))
    }

    /// The one line that says why the run stopped: `stopped early: every attempt failed as
    /// connect_refused (120 in 1.0 s): is the server running on 127.0.0.1:8080?`, with `hint`
    /// in place of the usual one when given.
    pub fn line(
        &self,
        config: &crate::BenchConfig,
        statuses: &StatusCounts,
        hint: Option<&str>,
    ) -> String {
        let head = format!(
            "stopped early: every attempt failed as {} ({} in {:.1} s)",
            self.kind.name(),
            self.attempts,
            self.after.as_secs_f64()
        );
        match hint
            .map(str::to_owned)
            .or_else(|| self.hint(config, statuses))
        {
            Some(hint) => format!("{head}: {hint}"),
            None => head,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BenchConfig, Target};

    fn hint(codes: &[(u16, u64)]) -> String {
        hint_for(ErrorKind::Status4xx, codes)
    }

    fn hint_for(kind: ErrorKind, codes: &[(u16, u64)]) -> String {
        let mut statuses = StatusCounts::new();
        for &(code, n) in codes {
            (0..n).for_each(|_| statuses.add(code));
        }
        let config = BenchConfig::new(Target::http("127.0.0.1:8080".parse().unwrap()));
        let gave_up = GaveUp {
            kind,
            attempts: 8,
            after: Duration::from_secs(1),
            tcp_answered: false,
        };
        gave_up.hint(&config, &statuses).unwrap()
    }

    #[test]
    fn files_are_missing_only_when_a_404_or_410_was_seen_alone() {
        assert!(hint(&[(404, 3)]).contains("no such files"));
        assert!(hint(&[(410, 1), (200, 4)]).contains("no such files"));
    }

    #[test]
    fn no_4xx_recorded_is_not_missing_files() {
        // Fail fast in the warm-up: nothing recorded.
        let h = hint(&[]);
        assert!(!h.contains("no such files"), "{h}");
        assert!(h.contains("every request with a 4xx"), "{h}");
    }

    #[test]
    fn other_4xx_are_named_without_404() {
        let h = hint(&[(404, 3), (405, 5)]);
        assert!(h.contains("answered 405 (5):"), "{h}");
        assert!(!h.contains("404"), "{h}");
        assert!(!h.contains("no such files"), "{h}");
    }

    #[test]
    fn h2_not_negotiated_suggests_what_was_not_run() {
        // Over http:// it was h2c that was run: an HTTPS port wants https://.
        let h = hint_for(ErrorKind::H2NotNegotiated, &[]);
        assert!(h.contains("write https://"), "{h}");
        assert!(!h.contains("h2c with --http 2 over http://"), "{h}");
        let mut config = BenchConfig::new(Target::https(
            "127.0.0.1:8443".parse().unwrap(),
            "localhost",
        ));
        let gave_up = GaveUp {
            kind: ErrorKind::H2NotNegotiated,
            attempts: 8,
            after: Duration::from_secs(1),
            tcp_answered: false,
        };
        let h = gave_up.hint(&config, &StatusCounts::new()).unwrap();
        assert!(h.contains("did not choose h2 by ALPN"), "{h}");
        assert!(!h.contains("write https://"), "{h}");
        // A handshake the server refused in TLS is not asked whether it speaks TLS.
        let tls = GaveUp {
            kind: ErrorKind::TlsHandshake,
            ..gave_up
        };
        let mut failures = super::super::TlsFailures::default();
        failures.add(super::super::TlsFailure::ProtocolVersion);
        config.tls.version = Some(tls_client::TlsVersion::Tls13);
        let line = tls.line(
            &config,
            &StatusCounts::new(),
            tls.tls_hint(&config, &failures).as_deref(),
        );
        assert!(line.ends_with("the server speaks TLS: no TLS version or cipher suite in common with what --tls 1.3 allows"), "{line}");
        assert!(!line.contains("http:// rather than https://"), "{line}");
        // Nothing in TLS back (not a TLS port): the usual hint.
        let mut failures = super::super::TlsFailures::default();
        failures.add(super::super::TlsFailure::NotTls);
        assert_eq!(tls.tls_hint(&config, &failures), None);
        assert!(tls
            .line(&config, &StatusCounts::new(), None)
            .contains("http:// rather than https://"));
    }

    #[test]
    fn requests_an_application_could_not_send_say_where_to_look() {
        let h = hint_for(ErrorKind::MissingValueUnsent, &[]);
        assert!(h.contains("never extracted"), "{h}");
        assert!(h.contains("--reset-session"), "{h}");
        let h = hint_for(ErrorKind::UnsafeValueUnsent, &[]);
        assert!(h.contains("line break"), "{h}");
    }

    #[test]
    fn http3_refused_where_tcp_answers_says_udp_is_not_served() {
        let probed_at = |addr: std::net::SocketAddr| {
            let mut config = BenchConfig::new(Target::https(addr, "localhost"));
            config.http = crate::HttpMode::Http3;
            let gave_up = GaveUp {
                kind: ErrorKind::ConnectRefused,
                attempts: 8,
                after: Duration::from_secs(1),
                tcp_answered: false,
            }
            .probed(&config);
            (
                gave_up,
                gave_up.hint(&config, &StatusCounts::new()).unwrap(),
            )
        };
        // A TCP server (one with HTTP/3 off) on the port: nothing answered over UDP.
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (gave_up, h) = probed_at(tcp.local_addr().unwrap());
        assert!(gave_up.tcp_answered);
        assert!(h.contains("nothing answered over UDP (QUIC)"), "{h}");
        assert!(h.contains("HTTP/3 may be off"), "{h}");
        assert!(!h.contains("is the server running"), "{h}");
        // Nothing on TCP either: the usual question, said for both. The port is held bound,
        // never listening, so that no other server can take it meanwhile.
        let refused =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        refused
            .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        let addr = refused.local_addr().unwrap().as_socket().unwrap();
        let (gave_up, h) = probed_at(addr);
        assert!(!gave_up.tcp_answered);
        assert!(
            h.contains(&format!("is the server running on {addr}?")),
            "{h}"
        );
    }

    #[test]
    fn a_server_breaking_http3_is_named() {
        let h = hint_for(ErrorKind::H3Protocol, &[]);
        assert!(h.contains("does not speak HTTP/3"), "{h}");
    }
}
