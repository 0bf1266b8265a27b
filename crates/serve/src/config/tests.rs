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
fn a_listen_number_out_of_range_or_of_another_type_says_what_listen_takes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    for (text, want) in [
        // As `--listen 70000` and `listen = "70000"` say it.
        (
            "listen = 70000\n",
            "line 1: `listen`: `70000`: the port must be a number from 0 to 65535",
        ),
        (
            "\nlisten = -3\n",
            "line 2: `listen`: `-3`: the port must be a number from 0 to 65535",
        ),
        (
            "listen = 99999999999999999999\n",
            "`listen`: `99999999999999999999`: the port must be a number from 0 to 65535",
        ),
        (
            "listen = true\n",
            "line 1: `listen`: `true`: expected a port",
        ),
        (
            "listen = 80.5\n",
            "line 1: `listen`: `80.5`: expected a port",
        ),
        // A float that is a whole number is still not a port, and is shown as written.
        (
            "listen = 8080.0\n",
            "line 1: `listen`: `8080.0`: expected a port",
        ),
        (
            "listen = [80]\n",
            "line 1: `listen`: invalid type: sequence, expected a port",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let e = Config::from_file(&path).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
        assert!(
            e.contains("or an address as a string") || e.contains("port must be"),
            "{e}"
        );
        assert!(!e.contains("variant"), "{text:?}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    std::fs::write(&path, "listen = 0\n").unwrap();
    let c = Config::from_file(&path).unwrap();
    assert_eq!(c.listen, "127.0.0.1:0".parse().unwrap());
    std::fs::write(&path, "listen = 65535\n").unwrap();
    let c = Config::from_file(&path).unwrap();
    assert_eq!(c.listen, "127.0.0.1:65535".parse().unwrap());
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
