//! The values no server can run with, refused at start with one line naming the key.

use crate::tls_setup::upstream;

use super::proxy;
use super::{Config, ProxyMount};

/// A value no server can run with: one line naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` = {value}: {reason}")]
pub struct InvalidConfig {
    /// The key, as the file spells it.
    pub key: &'static str,
    /// The value refused, as the line prints it.
    pub value: String,
    /// What the value must be (`must be at least 1`).
    pub reason: &'static str,
}

impl Config {
    /// Refuses values that would make the server refuse everything, spin or never time out:
    /// checked by `Server::bind` before anything starts.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let checks: [(&'static str, u64, bool, &'static str); 21] = [
            (
                "max_connections",
                self.max_connections as u64,
                self.max_connections >= 1,
                "must be at least 1",
            ),
            (
                "header_timeout_ms",
                self.header_timeout_ms,
                self.header_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "send_timeout_ms",
                self.send_timeout_ms,
                self.send_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "body_timeout_ms",
                self.body_timeout_ms,
                self.body_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "max_request_line",
                self.max_request_line as u64,
                self.max_request_line >= 16,
                "must be at least 16 (`GET / HTTP/1.1` is 14)",
            ),
            (
                "max_header_bytes",
                self.max_header_bytes as u64,
                self.max_header_bytes >= self.max_request_line,
                "must be at least `max_request_line`",
            ),
            (
                "max_headers",
                self.max_headers as u64,
                (1..=wire::request::MAX_HEADERS_CAP).contains(&self.max_headers),
                "must be from 1 to 256",
            ),
            (
                "max_pipeline_bytes",
                self.max_pipeline_bytes as u64,
                self.max_pipeline_bytes >= 1,
                "must be at least 1",
            ),
            (
                "h2_max_concurrent_streams",
                u64::from(self.h2_max_concurrent_streams),
                self.h2_max_concurrent_streams >= 1,
                "must be at least 1",
            ),
            (
                "h2_initial_window_size",
                u64::from(self.h2_initial_window_size),
                self.h2_initial_window_size <= i32::MAX as u32,
                "must be at most 2^31-1 (RFC 9113 6.9.2)",
            ),
            (
                "h3_max_connections",
                self.h3_max_connections as u64,
                self.h3_max_connections >= 1,
                "must be at least 1",
            ),
            (
                "h3_max_connections_per_address",
                self.h3_max_connections_per_address as u64,
                self.h3_max_connections_per_address >= 1,
                "must be at least 1",
            ),
            (
                "h3_max_streams",
                self.h3_max_streams,
                (1..=1 << 60).contains(&self.h3_max_streams),
                "must be from 1 to 2^60 (RFC 9000 4.6)",
            ),
            (
                "h3_header_budget",
                self.h3_header_budget,
                self.h3_header_budget >= 1,
                "must be at least 1",
            ),
            (
                "h3_idle_timeout_ms",
                self.h3_idle_timeout_ms,
                self.h3_idle_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "tls_ticket_key_period_ms",
                self.tls_ticket_key_period_ms,
                // Whole seconds over TCP; a ticket lives two periods, and RFC 8446 4.6.1 caps a
                // ticket's lifetime at 7 days.
                (1000..=302_400_000).contains(&self.tls_ticket_key_period_ms),
                "must be from 1000 (1 s) to 302400000 (3.5 days: a ticket lives two periods, at most 7 days, RFC 8446 4.6.1)",
            ),
            (
                "cgi_max_programs",
                self.cgi_max_programs as u64,
                self.cgi_max_programs >= 1,
                "must be at least 1",
            ),
            (
                "cgi_timeout_ms",
                self.cgi_timeout_ms,
                self.cgi_timeout_ms >= 1,
                "must be at least 1",
            ),
            (
                "auth_max_failures",
                u64::from(self.auth_max_failures),
                self.auth_max_failures >= 1,
                "must be at least 1",
            ),
            (
                "auth_failure_window_ms",
                self.auth_failure_window_ms,
                self.auth_failure_window_ms >= 1,
                "must be at least 1",
            ),
            (
                "auth_max_checks_per_second",
                u64::from(self.auth_max_checks_per_second),
                self.auth_max_checks_per_second >= 1,
                "must be at least 1",
            ),
        ];
        // A realm is sent inside a quoted string: no quote, backslash or control byte to
        // escape, and the challenge line stays one line.
        if let Some(zone) = self.auth.iter().find(|z| {
            z.realm.is_empty()
                || z.realm.len() > 256
                || z.realm
                    .chars()
                    .any(|c| c == '"' || c == '\\' || c.is_control())
        }) {
            return Err(InvalidConfig {
                key: "auth.realm",
                value: format!("{:?}", zone.realm),
                reason: "must be 1 to 256 characters without quotes, backslashes or controls",
            });
        }
        if let Some(ext) = self
            .cgi_extensions
            .iter()
            .find(|e| !e.starts_with('.') || e.len() < 2 || e.contains('/'))
        {
            return Err(InvalidConfig {
                key: "cgi_extensions",
                value: format!("{ext:?}"),
                reason: "each must be a dot and a name (`.cgi`)",
            });
        }
        // A directory's index is opened from the files: one a gateway would run (`index.php`
        // beside `*.php`) would go out as its source at `GET /`.
        if self.script_endings().any(|e| self.index.ends_with(e)) {
            return Err(InvalidConfig {
                key: "index",
                value: format!("{:?}", self.index),
                reason: "names a script (a CGI extension or a FastCGI pattern claims it): a directory's index is served as a file, so its source would go out",
            });
        }
        for m in &self.proxy {
            Self::validate_proxy(m)?;
        }
        // Half of TLS is refused whatever `http3` is: the port would otherwise be taken for
        // HTTPS by what reads the predicate wrongly, or served in clear by mistake. The line
        // names the half that is missing.
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), None) => {
                return Err(InvalidConfig {
                    key: "tls_cert",
                    value: format!("{:?}", cert.display().to_string()),
                    reason: "is set without `tls_key`: its private key is missing",
                })
            }
            (None, Some(key)) => {
                return Err(InvalidConfig {
                    key: "tls_key",
                    value: format!("{:?}", key.display().to_string()),
                    reason: "is set without `tls_cert`: the certificate is missing",
                })
            }
            _ => {}
        }
        if self.http3 == Some(true) && !self.tls() {
            return Err(InvalidConfig {
                key: "http3",
                value: "true".into(),
                reason: "needs TLS (`tls_cert` and `tls_key`, or --tls-cert and --tls-key): QUIC is always encrypted",
            });
        }
        match checks.into_iter().find(|c| !c.2) {
            Some((key, value, _, reason)) => Err(InvalidConfig {
                key,
                value: value.to_string(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// A proxy mount as its parser would have made it (a config built in code skips the parser):
    /// a prefix under `/`, an upstream at least, timeouts that end.
    fn validate_proxy(m: &ProxyMount) -> Result<(), InvalidConfig> {
        let invalid = |key, value: String, reason| InvalidConfig { key, value, reason };
        if !m.prefix.starts_with('/') {
            let reason = "must be a path under / (`/api/`)";
            return Err(invalid("proxy.prefix", format!("{:?}", m.prefix), reason));
        }
        if m.upstreams.is_empty() {
            let value = format!("[] (the mount {})", m.prefix);
            return Err(invalid(
                "proxy.upstreams",
                value,
                "must name an upstream at least",
            ));
        }
        let timeouts = [
            ("proxy.connect_timeout_ms", m.connect_timeout_ms),
            ("proxy.first_byte_timeout_ms", m.first_byte_timeout_ms),
            ("proxy.idle_timeout_ms", m.idle_timeout_ms),
        ];
        if let Some((key, _)) = timeouts.into_iter().find(|t| t.1 == 0) {
            let value = format!("0 (the mount {})", m.prefix);
            return Err(invalid(key, value, "must be at least 1"));
        }
        if !(1..=proxy::MAX_IN_FLIGHT).contains(&m.max_in_flight) {
            let value = format!("{} (the mount {})", m.max_in_flight, m.prefix);
            return Err(invalid(
                "proxy.max_in_flight",
                value,
                "must be from 1 to 65536",
            ));
        }
        // Each address's group keeps room for its whole pool from the start.
        if let Some(pool) = m.pool.filter(|&p| p > proxy::MAX_IN_FLIGHT) {
            let value = format!("{pool} (the mount {})", m.prefix);
            return Err(invalid("proxy.pool", value, "must be at most 65536"));
        }
        // The CA file read now, once: a bad one stops the start, not each request.
        if m.upstreams.iter().any(|u| u.tls_name.is_some()) {
            if let Err(e) = upstream::tls_config(m.cacert.as_deref()) {
                let reason = "an https:// upstream's certificates must be checkable (a PEM file of certificates, or the system's roots)";
                let value = upstream::setup_error(&e);
                return Err(invalid("proxy.cacert", value, reason));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn values_no_server_can_run_with_are_refused_naming_the_key() {
        assert_eq!(Config::default().validate(), Ok(()));
        let refused = |tweak: fn(&mut Config)| {
            let mut c = Config::default();
            tweak(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert_eq!(
            refused(|c| c.max_pipeline_bytes = 0),
            "`max_pipeline_bytes` = 0: must be at least 1"
        );
        assert!(refused(|c| c.max_headers = 300).starts_with("`max_headers` = 300:"));
        assert!(refused(|c| c.header_timeout_ms = 0).starts_with("`header_timeout_ms`"));
        assert!(refused(|c| c.max_connections = 0).starts_with("`max_connections`"));
        assert!(refused(|c| c.max_header_bytes = 100).starts_with("`max_header_bytes` = 100"));
        assert!(refused(|c| c.max_request_line = 3).starts_with("`max_request_line` = 3"));
    }

    #[test]
    fn an_index_a_gateway_claims_is_refused() {
        // Served from the files, `GET /` would send the script's source.
        let with = |index: &str, tweak: fn(&mut Config)| {
            let mut c = Config {
                index: index.into(),
                ..Config::default()
            };
            tweak(&mut c);
            c.validate().map_err(|e| e.to_string())
        };
        let php = |c: &mut Config| {
            c.fastcgi
                .push("*.php=unix:/nonexistent/php.sock".parse().unwrap())
        };
        let cgi = |c: &mut Config| c.cgi_extensions = vec![".cgi".into()];
        let err = with("index.php", php).unwrap_err();
        assert!(err.starts_with("`index` = \"index.php\": "), "{err}");
        assert_eq!(err.lines().count(), 1);
        assert!(with("index.cgi", cgi).unwrap_err().starts_with("`index`"));
        assert_eq!(with("index.html", php), Ok(()));
        assert_eq!(with("index.html", cgi), Ok(()));
        assert_eq!(with("index.php", cgi), Ok(()));
        // A prefix application claims the directory itself, not its index.
        let app = |c: &mut Config| c.fastcgi.push("/app=127.0.0.1:9000".parse().unwrap());
        assert_eq!(with("index.php", app), Ok(()));
    }
}
