//! What the protocol crates are given from the keys: HTTP/2's settings, HTTP/3's limits,
//! deadlines and Retry policy, and whether HTTP/3 is served and advertised.

use super::Config;

/// What an HTTP/3 client may send on one request stream before the server reads it, bytes.
pub const H3_STREAM_WINDOW: u64 = 64 * 1024;
/// What an HTTP/3 client may send on all streams of a connection before the server reads it,
/// bytes.
pub const H3_CONNECTION_WINDOW: u64 = 256 * 1024;

/// When an HTTP/3 client's Initial is answered with a Retry (address validation, RFC 9000
/// 8.1.2) before any state is kept for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum H3Retry {
    /// When a thread has [`http3::DEFAULT_RETRY_HANDSHAKES`] handshakes under way (a flood),
    /// or once its connections hold half its share of `h3_max_connections`: otherwise no
    /// round trip more for anyone.
    Flood,
    /// Every connection (one round trip more for each).
    Always,
    /// Never.
    Never,
}

impl Config {
    /// HTTP/2's limits (the `http2` crate's server defaults, with the `h2_*` keys over them).
    pub fn http2_limits(&self) -> http2::Config {
        http2::Config {
            max_concurrent_streams: self.h2_max_concurrent_streams,
            initial_window_size: self.h2_initial_window_size,
            max_header_list_size: self.h2_max_header_list_size,
            max_header_list_decoded: self.max_header_list_decoded(),
            header_table_size: self.h2_header_table_size,
            deflate_table_size: self.h2_header_table_size as usize,
            ..http2::Config::server()
        }
    }

    /// Whether HTTP/3 is served: with TLS, unless turned off. Before `Server::bind` this is
    /// what is asked for; after it, what was done (a UDP port that could not be bound with
    /// `http3` unset left it `Some(false)`).
    pub fn serves_http3(&self) -> bool {
        self.http3 != Some(false) && self.tls()
    }

    /// The `Alt-Svc` value HTTP/1.1 and HTTP/2 responses advertise HTTP/3 with (RFC 7838: the
    /// same host, `listen`'s port number, for a day), when it is served: the responders are
    /// made from the configuration `Server::bind` settled, so nothing advertises a UDP port
    /// nobody listens on.
    pub fn alt_svc(&self) -> Option<String> {
        (self.serves_http3()).then(|| format!("h3=\":{}\"; ma=86400", self.listen.port()))
    }

    /// HTTP/3's limits (the `http3` crate's defaults, with the `h3_*` keys over them). The
    /// largest header block taken is HTTP/1.1's largest request as QPACK counts it (a request
    /// line, a head, 32 bytes a field): within it, wire's checks answer 414 or 431 for that
    /// request alone, as over HTTP/1.1. Past it quiche closes the connection
    /// (H3_EXCESSIVE_LOAD): the bound is kept this low because quiche buffers up to one and a
    /// half times it of each stream's encoded block while it arrives (what all of a thread's
    /// unfinished blocks hold is bounded by its share of `h3_header_budget`). The receive windows are small: a request body is read only to be dropped, so a
    /// client is given no room to send much of one ahead.
    pub fn http3_limits(&self) -> http3::Limits {
        let http11 = (self.max_request_line)
            .saturating_add(self.max_header_bytes)
            .saturating_add(self.max_headers.saturating_mul(32));
        http3::Limits {
            idle_timeout: std::time::Duration::from_millis(self.h3_idle_timeout_ms),
            max_streams: self.h3_max_streams,
            max_field_section: http11 as u64,
            stream_window: H3_STREAM_WINDOW,
            connection_window: H3_CONNECTION_WINDOW,
            ..http3::Limits::default()
        }
    }

    /// HTTP/3's Retry policy (`h3_retry`).
    pub fn http3_retry(&self) -> http3::Retry {
        match self.h3_retry {
            H3Retry::Flood => http3::Retry::Flood(http3::DEFAULT_RETRY_HANDSHAKES),
            H3Retry::Always => http3::Retry::Always,
            H3Retry::Never => http3::Retry::Never,
        }
    }

    /// HTTP/3's deadlines besides QUIC's idle timeout: those of HTTP/1.1 and HTTP/2
    /// (`header_timeout_ms` for the handshake and a request's header block,
    /// `keepalive_timeout_ms` for a connection with no request open, `send_timeout_ms` for
    /// responses that make no progress, `body_timeout_ms` and `body_min_rate` for a request
    /// body).
    pub fn http3_timeouts(&self) -> http3::Timeouts {
        let ms = std::time::Duration::from_millis;
        http3::Timeouts {
            header: ms(self.header_timeout_ms),
            keep_alive: ms(self.keepalive_timeout_ms),
            send: ms(self.send_timeout_ms),
            body: ms(self.body_timeout_ms),
            body_min_rate: self.body_min_rate,
        }
    }

    /// The most of one HTTP/2 header list decoded before the connection ends: four times the
    /// largest request HTTP/1.1 takes, as a header list counts it (a request line, a head, 32
    /// bytes a field), so that no request a client means is near it.
    fn max_header_list_decoded(&self) -> u32 {
        let http11 = (self.max_request_line)
            .saturating_add(self.max_header_bytes)
            .saturating_add(self.max_headers.saturating_mul(32));
        u32::try_from(http11.saturating_mul(4)).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn http3_keys_are_checked_and_alt_svc_names_the_port_only_with_tls() {
        let refused = |tweak: fn(&mut Config)| {
            let mut c = Config::default();
            tweak(&mut c);
            c.validate().unwrap_err().key
        };
        assert_eq!(refused(|c| c.h3_max_connections = 0), "h3_max_connections");
        assert_eq!(refused(|c| c.h3_max_streams = 0), "h3_max_streams");
        assert_eq!(refused(|c| c.h3_max_streams = 1 << 61), "h3_max_streams");
        assert_eq!(refused(|c| c.h3_idle_timeout_ms = 0), "h3_idle_timeout_ms");
        assert_eq!(refused(|c| c.h3_header_budget = 0), "h3_header_budget");
        let period = "tls_ticket_key_period_ms";
        assert_eq!(refused(|c| c.tls_ticket_key_period_ms = 999), period);
        assert_eq!(refused(|c| c.tls_ticket_key_period_ms = u64::MAX), period);
        // A ticket lives two periods, at most 7 days (RFC 8446 4.6.1): 3.5 days at most.
        assert_eq!(
            refused(|c| c.tls_ticket_key_period_ms = 302_400_001),
            period
        );
        let longest = Config {
            tls_ticket_key_period_ms: 302_400_000,
            ..Config::default()
        };
        assert!(longest.validate().is_ok());
        assert_eq!(
            refused(|c| c.h3_max_connections_per_address = 0),
            "h3_max_connections_per_address"
        );
        let tls = Config {
            listen: "127.0.0.1:8443".parse().unwrap(),
            tls_cert: Some("cert.pem".into()),
            tls_key: Some("key.pem".into()),
            h3_max_streams: 7,
            h3_idle_timeout_ms: 1500,
            ..Config::default()
        };
        // On by default with TLS (unset: `Server::bind` settles it), and when required.
        assert_eq!(Config::default().http3, None);
        assert!(tls.serves_http3(), "HTTP/3 is the default with TLS");
        assert_eq!(tls.alt_svc().as_deref(), Some("h3=\":8443\"; ma=86400"));
        let required = Config {
            http3: Some(true),
            ..tls.clone()
        };
        assert!(required.serves_http3() && required.validate().is_ok());
        // Required without TLS: refused at start, naming the key.
        let no_tls = Config {
            http3: Some(true),
            ..Config::default()
        };
        let e = no_tls.validate().unwrap_err();
        assert_eq!((e.key, e.value.as_str()), ("http3", "true"));
        assert!(e.reason.contains("needs TLS"), "{e}");
        // The file's key: absent, true or false.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        for (text, want) in [
            ("", None),
            ("http3 = true\n", Some(true)),
            ("http3 = false\n", Some(false)),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(Config::from_file(&path).unwrap().http3, want, "{text:?}");
        }
        let limits = tls.http3_limits();
        assert_eq!(limits.max_streams, 7);
        assert_eq!(
            (limits.stream_window, limits.connection_window),
            (64 * 1024, 256 * 1024)
        );
        assert_eq!(limits.idle_timeout, std::time::Duration::from_millis(1500));
        // HTTP/1.1's largest request, as QPACK counts it: the hard bound of a header block.
        assert_eq!(limits.max_field_section, 8192 + 16_384 + 64 * 32);
        // HTTP/1.1's and HTTP/2's deadlines are HTTP/3's.
        let timeouts = Config {
            header_timeout_ms: 11,
            keepalive_timeout_ms: 12,
            send_timeout_ms: 13,
            body_timeout_ms: 14,
            body_min_rate: 15,
            ..Config::default()
        }
        .http3_timeouts();
        let ms = std::time::Duration::from_millis;
        assert_eq!(
            (
                timeouts.header,
                timeouts.keep_alive,
                timeouts.send,
                timeouts.body
            ),
            (ms(11), ms(12), ms(13), ms(14))
        );
        assert_eq!(timeouts.body_min_rate, 15);
        assert_eq!(
            Config {
                http3: Some(false),
                ..tls
            }
            .alt_svc(),
            None
        );
        assert_eq!(Config::default().alt_svc(), None, "no TLS, no HTTP/3");
    }
}
