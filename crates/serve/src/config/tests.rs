use super::*;

/// The serde names of `Config`'s fields, as `deserialize_struct` is told them: the very list
/// a config file is checked against, so a field added to the struct is in it.
fn config_keys() -> &'static [&'static str] {
    struct Capture(Option<&'static [&'static str]>);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("captured")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Stop
        }
    }

    impl<'de> serde::Deserializer<'de> for &mut Capture {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut capture = Capture(None);
    let _ = <Config as serde::Deserialize>::deserialize(&mut capture);
    capture.0.expect("Config deserializes as a struct")
}

#[test]
fn every_config_key_is_documented() {
    let doc = include_str!("../../../../docs/serve.md");
    let keys = config_keys();
    assert!(keys.len() >= 25, "only {} keys found: {keys:?}", keys.len());
    for key in keys {
        // A row of a key table: "| `key` | default | meaning |".
        let row = format!("| `{key}` |");
        assert!(
            doc.lines().any(|line| line.starts_with(&row)),
            "docs/serve.md has no table row for the config key `{key}`"
        );
    }
}

#[test]
fn listen_accepts_a_port_a_name_and_both_address_families() {
    let parse = |s: &str| parse_listen(s).unwrap();
    assert_eq!(parse("8080"), "127.0.0.1:8080".parse().unwrap());
    assert_eq!(parse("0"), "127.0.0.1:0".parse().unwrap());
    assert_eq!(parse("0.0.0.0:80"), "0.0.0.0:80".parse().unwrap());
    assert_eq!(parse("[::1]:8080"), "[::1]:8080".parse().unwrap());
    assert_eq!(parse("[::]:0"), "[::]:0".parse().unwrap());
    assert_eq!(parse("10.1.2.3"), "10.1.2.3:8080".parse().unwrap());
    assert_eq!(parse("[::1]"), "[::1]:8080".parse().unwrap());
    let local = parse("localhost:8081");
    assert!(local.ip().is_loopback(), "{local}");
    assert_eq!(local.port(), 8081);
    assert!(parse("localhost").ip().is_loopback());
}

#[test]
fn bad_listen_addresses_say_what_is_expected() {
    for (text, want) in [
        ("", "expected PORT"),
        ("a b:80", "expected PORT"),
        ("http://x:80", "expected PORT"),
        ("70000", "port must be"),
        ("localhost:http", "port must be"),
        ("[::1]:99999", "port must be"),
        ("no-such-host.invalid:80", "cannot resolve"),
    ] {
        let e = parse_listen(text).expect_err(text).to_string();
        assert!(e.contains(want), "{text:?}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn the_file_takes_listen_dotfiles_and_autoindex() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(
        &path,
        "listen = 9000\ndotfiles = \"allow\"\nautoindex = true\n",
    )
    .unwrap();
    let c = Config::from_file(&path).unwrap();
    assert_eq!(c.listen, "127.0.0.1:9000".parse().unwrap());
    assert_eq!((c.dotfiles, c.autoindex), (Dotfiles::Allow, true));
    std::fs::write(&path, "listen = \"[::1]:9001\"\n").unwrap();
    let c = Config::from_file(&path).unwrap();
    assert_eq!(c.listen, "[::1]:9001".parse().unwrap());
    assert_eq!((c.dotfiles, c.autoindex), (Dotfiles::Hide, false));
    for (text, want) in [
        ("listen = \"a b\"\n", "expected PORT"),
        ("dotfiles = \"show\"\n", "dotfiles"),
        ("autoindx = true\n", "autoindx"),
        ("\n\nthreads = \"two\"\n", "line 3: `threads`: invalid type"),
    ] {
        std::fs::write(&path, text).unwrap();
        let e = Config::from_file(&path).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn the_file_takes_cgi_mounts_and_extensions_and_refuses_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(
        &path,
        "cgi = [\"/cgi-bin/=/srv/cgi\", \"/a/b=/x\"]\ncgi_extensions = [\".cgi\"]\ncgi_max_programs = 3\n",
    )
    .unwrap();
    let c = Config::from_file(&path).unwrap();
    let mounts: Vec<_> = c
        .cgi
        .iter()
        .map(|m| (m.prefix.as_str(), m.dir.clone()))
        .collect();
    assert_eq!(
        mounts,
        [
            ("/cgi-bin", "/srv/cgi".into()),
            ("/a/b", std::path::PathBuf::from("/x"))
        ]
    );
    assert_eq!((c.cgi_extensions.len(), c.cgi_max_programs), (1, 3));
    c.validate().unwrap();
    for text in [
        "cgi = [\"cgi-bin=/x\"]\n",
        "cgi = [\"/=/x\"]\n",
        "cgi = [\"/../x=/y\"]\n",
        "cgi = [\"/x\"]\n",
    ] {
        std::fs::write(&path, text).unwrap();
        let e = Config::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("cgi"), "{text:?}: {e}");
    }
    let bad = Config {
        cgi_extensions: vec!["cgi".into()],
        ..Config::default()
    };
    assert_eq!(bad.validate().unwrap_err().key, "cgi_extensions");
}

#[test]
fn a_missing_file_is_named_once_and_the_cause_is_its_source() {
    let e = Config::from_file(Path::new("/nonexistent/serve.toml")).unwrap_err();
    assert_eq!(e.to_string(), "/nonexistent/serve.toml");
    let source = std::error::Error::source(&e)
        .expect("the io error")
        .to_string();
    assert!(source.contains("No such file"), "{source}");
}

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

#[test]
fn fastcgi_mounts_take_an_extension_or_a_prefix_and_a_socket() {
    use crate::config::{FastCgiAddr, FastCgiMount, FastCgiPattern};
    let php: FastCgiMount = "*.php=unix:/run/php/php-fpm.sock".parse().unwrap();
    assert_eq!(php.pattern, FastCgiPattern::Extension(".php".into()));
    assert_eq!(php.addr, FastCgiAddr::Unix("/run/php/php-fpm.sock".into()));
    let app: FastCgiMount = "/app/=127.0.0.1:9000".parse().unwrap();
    assert_eq!(app.pattern, FastCgiPattern::Prefix("/app".into()));
    assert_eq!(app.addr.to_string(), "127.0.0.1:9000");
    for bad in [
        "*.php",
        "*php=unix:/x",
        "*.=unix:/x",
        "*.p/q=unix:/x",
        "app=unix:/x",
        "/=unix:/x",
        "/../x=unix:/x",
        "*.php=unix:",
        "*.php=nowhere",
    ] {
        let e = bad.parse::<FastCgiMount>().unwrap_err();
        assert!(!e.contains('\n') && !e.is_empty(), "{bad}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(
        &path,
        "fastcgi = [\"*.php=unix:/s\", \"/a/=[::1]:9000\"]\nfastcgi_pool = 2\n",
    )
    .unwrap();
    let c = Config::from_file(&path).unwrap();
    assert_eq!((c.fastcgi.len(), c.fastcgi_pool), (2, 2));
    std::fs::write(&path, "fastcgi = [\"*.php\"]\n").unwrap();
    let e = Config::from_file(&path).unwrap_err().to_string();
    assert!(e.contains("PATTERN=ADDR"), "{e}");
}

#[test]
fn the_file_takes_auth_zones_and_refuses_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(
        &path,
        "auth_max_failures = 5\n[[auth]]\nprefix = \"/private/\"\nfile = \"/etc/pw\"\n\
         [[auth]]\nprefix = \"/\"\nfile = \"/etc/all\"\nrealm = \"everyone\"\n",
    )
    .unwrap();
    let c = Config::from_file(&path).unwrap();
    let zones: Vec<_> = (c.auth.iter())
        .map(|z| {
            (
                z.prefix.as_str(),
                z.file.to_str().unwrap(),
                z.realm.as_str(),
            )
        })
        .collect();
    assert_eq!(
        zones,
        [
            ("/private", "/etc/pw", "flint"),
            ("/", "/etc/all", "everyone")
        ]
    );
    assert_eq!(c.auth_max_failures, 5);
    c.validate().unwrap();
    for (text, says) in [
        ("[[auth]]\nprefix = \"private\"\nfile = \"/x\"\n", "prefix"),
        ("[[auth]]\nprefix = \"/a/../b\"\nfile = \"/x\"\n", "prefix"),
        ("[[auth]]\nprefix = \"/a\"\n", "file"),
        (
            "[[auth]]\nprefix = \"/a\"\nfile = \"/x\"\nrelm = \"r\"\n",
            "relm",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let e = Config::from_file(&path).unwrap_err().to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
    }
    let zone: AuthZone = "/p/=/etc/pw".parse().unwrap();
    assert_eq!(
        (zone.prefix.as_str(), zone.realm.as_str()),
        ("/p", DEFAULT_REALM)
    );
    assert!("/p/".parse::<AuthZone>().is_err() && "/p/=".parse::<AuthZone>().is_err());
    for realm in ["a\"b", "a\\b", "a\nb", ""] {
        let bad = Config {
            auth: vec![AuthZone {
                realm: realm.into(),
                ..zone.clone()
            }],
            ..Config::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "auth.realm", "{realm:?}");
    }
    let bad = Config {
        auth_max_failures: 0,
        ..Config::default()
    };
    assert_eq!(bad.validate().unwrap_err().key, "auth_max_failures");
}
