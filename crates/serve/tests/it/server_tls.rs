//! HTTPS: the same protocol through the TLS transport. Every file and body route, keep-alive and
//! pipelining (one batch of records per write), TLS 1.3 and 1.2 with resumption, ECDSA and RSA
//! keys, bad input closed and counted, bad certificates refused at start, the traversal, limits
//! and shutdown behaviour over TLS, and curl and openssl interop.

use std::io::{BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::common::*;
use crate::tls_support::*;
use rustls::ProtocolVersion;
use serve::{Config, Server};

#[test]
fn https_serves_every_file_keep_alive_and_pipelined() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let client = certs.client(&both_versions());
    let mut r = BufReader::new(tls_connect(srv.addr, &client));
    for (name, len) in FILES {
        r.get_mut()
            .write_all(get(&format!("/{name}")).as_bytes())
            .unwrap();
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, 200, "{name}");
        assert!(resp.body == content(name, *len), "{name} intact");
    }
    assert_eq!(r.get_ref().conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    for _ in 0..3 {
        let before = srv.stats();
        r.get_mut().write_all(get("/1k.bin").as_bytes()).unwrap();
        assert_eq!(read_response(&mut r, false).unwrap().body.len(), 1024);
        let after = srv.stats();
        assert_eq!(
            after.reads - before.reads,
            1,
            "one recv per keep-alive request"
        );
        assert_eq!(
            after.writes - before.writes,
            1,
            "one write per keep-alive request"
        );
    }
    let batch: String = (0..16).map(|_| get("/1k.bin")).collect();
    let before = srv.stats();
    r.get_mut().write_all(batch.as_bytes()).unwrap();
    for resp in read_responses(&mut r, 16, false) {
        assert!(resp.body == content("1k.bin", 1024));
    }
    let after = srv.stats();
    assert_eq!(after.requests - before.requests, 16);
    assert_eq!(
        after.writes - before.writes,
        1,
        "16 responses, one batch of records"
    );
    drop(r);
    let st = srv.stop();
    assert_eq!(st.tls_handshakes, 1);
    assert_eq!(st.tls_errors, 0);
    assert_eq!(st.sendfiles, 0, "no sendfile through user-space TLS");
    assert!(st.file_reads >= 32, "4 MiB in 128 KiB chunks: {st:?}");
}

#[test]
fn tls13_and_tls12_handshake_and_resume_with_ecdsa_and_rsa_keys() {
    let cases = [
        (&rustls::version::TLS13, ProtocolVersion::TLSv1_3, false),
        (&rustls::version::TLS12, ProtocolVersion::TLSv1_2, true),
        (&rustls::version::TLS13, ProtocolVersion::TLSv1_3, true),
        (&rustls::version::TLS12, ProtocolVersion::TLSv1_2, false),
    ];
    for (version, expected, rsa) in cases {
        let certs = Certs::new(rsa);
        let srv = certs.serve(|_| {});
        let client = certs.client(&[version]);
        for _ in 0..2 {
            let mut r = BufReader::new(tls_connect(srv.addr, &client));
            r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
            assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
            assert_eq!(r.get_ref().conn.protocol_version(), Some(expected));
        }
        let st = srv.stop();
        assert_eq!(st.tls_handshakes, 2, "{expected:?} rsa={rsa}");
        assert_eq!(
            st.tls_resumed, 1,
            "the second connection resumed: {expected:?} rsa={rsa}"
        );
    }
}

#[test]
fn plain_http_garbage_records_and_stalled_handshakes_are_closed_and_counted() {
    let certs = Certs::new(false);
    // Short enough to wait out, long enough that a loaded machine completes the good
    // handshakes (both sides' crypto) within it, so that only the stalled one is cut.
    let srv = certs.serve(|c| c.header_timeout_ms = 2000);
    let client = certs.client(&both_versions());

    // Plain HTTP gets nginx's answer, unencrypted, from a raw TCP client's point of view.
    let mut plain = BufReader::new(connect(srv.addr));
    plain.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    let resp = read_response(&mut plain, false).expect("a plain HTTP answer");
    assert_eq!(resp.status, 400);
    assert_eq!(resp.header("Connection"), Some("close"));
    assert_eq!(
        resp.body,
        b"The plain HTTP request was sent to HTTPS port\n"
    );
    assert!(
        closed_by_peer(&mut plain),
        "plain HTTP to the TLS port is closed after its 400"
    );
    assert_eq!(srv.stats().tls_plain_http, 1);

    let mut t = tls_connect(srv.addr, &client);
    t.write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(
        read_response(&mut BufReader::new(&mut t), false)
            .unwrap()
            .body,
        b"hello"
    );
    let mut garbage = b"\x17\x03\x03\x00\x20".to_vec();
    garbage.extend_from_slice(&[0x5a; 32]);
    t.sock.write_all(&garbage).unwrap();
    assert!(
        closed_by_peer(&mut t.sock),
        "an undecryptable record ends the connection"
    );

    let mut stalled = connect(srv.addr);
    stalled
        .write_all(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        .unwrap();
    assert!(closed_by_peer(&mut stalled), "a stalled handshake is cut");

    // None of it disturbed the server.
    let mut r = BufReader::new(tls_connect(srv.addr, &client));
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    drop(r);
    let st = srv.stop();
    assert_eq!((st.tls_errors, st.tls_plain_http), (1, 1), "{st:?}");
    assert_eq!(st.tls_handshake_timeouts, 1, "{st:?}");
    assert_eq!(st.tls_handshakes, 2);
}

#[test]
fn bad_certificates_and_keys_fail_at_start_with_one_clear_error() {
    let a = Certs::new(false);
    let b = Certs::new(true);
    let bind = |cert: Option<std::path::PathBuf>, key: Option<std::path::PathBuf>| {
        let config = Config {
            root: a.dir().to_path_buf(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 1,
            tls_cert: cert,
            tls_key: key,
            ..Config::default()
        };
        match Server::bind(config) {
            Ok(_) => panic!("served with a bad certificate or key"),
            Err(e) => e.to_string(),
        }
    };
    let garbage = a.dir().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let missing = a.dir().join("missing.pem");
    let cases = [
        (
            Some(a.cert.clone()),
            Some(b.key.clone()),
            "does not belong to the certificate",
        ),
        (Some(missing.clone()), Some(a.key.clone()), "missing.pem"),
        (Some(a.cert.clone()), Some(missing), "missing.pem"),
        (
            Some(garbage.clone()),
            Some(a.key.clone()),
            "no PEM CERTIFICATE block",
        ),
        (
            Some(a.cert.clone()),
            Some(garbage),
            "no PEM PRIVATE KEY block",
        ),
        (
            Some(a.key.clone()),
            Some(a.key.clone()),
            "no PEM CERTIFICATE block",
        ),
        (Some(a.cert.clone()), None, "its private key is missing"),
        (None, Some(a.key.clone()), "the certificate is missing"),
    ];
    for (cert, key, want) in cases {
        let msg = bind(cert.clone(), key.clone());
        assert!(msg.contains(want), "{cert:?} {key:?}: {msg}");
        assert_eq!(msg.lines().count(), 1, "one line: {msg}");
    }
}

#[test]
fn traversal_limits_and_shutdown_hold_over_tls() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let client = certs.client(&both_versions());
    let exchange_tls = |raw: &[u8]| {
        let mut r = BufReader::new(tls_connect(srv.addr, &client));
        r.get_mut().write_all(raw).unwrap();
        let resp = read_response(&mut r, false).unwrap();
        (resp, r)
    };
    for target in [
        "/../a.txt",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/a.txt%00",
        "/%2fetc/passwd",
    ] {
        let (resp, _) = exchange_tls(get(target).as_bytes());
        assert_eq!(resp.status, 400, "{target}");
    }
    let exchange_tls = |raw: &[u8]| {
        let (resp, mut r) = exchange_tls(raw);
        (resp, closed_by_peer(&mut r))
    };
    let huge = format!(
        "GET /a.txt HTTP/1.1\r\nHost: t\r\nX: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let (resp, closed) = exchange_tls(huge.as_bytes());
    assert_eq!((resp.status, closed), (431, true));
    let (resp, closed) =
        exchange_tls(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\nabcde");
    assert_eq!(
        (resp.status, closed),
        (413, true),
        "lingering close over TLS"
    );

    // A large response under way when shutdown begins is finished, even when all of it has
    // been handed to rustls and only sealed records wait for a client that reads slowly (a small
    // receive buffer keeps them waiting).
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(16 * 1024).unwrap();
    sock.connect_timeout(&srv.addr.into(), WAIT).unwrap();
    let sock = std::net::TcpStream::from(sock);
    sock.set_read_timeout(Some(WAIT)).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(client.clone(), name).unwrap();
    let mut r = BufReader::new(rustls::StreamOwned::new(conn, sock));
    r.get_mut().write_all(get("/4m.bin").as_bytes()).unwrap();
    // Read until the server has read the whole file (the last of it then sealed or waiting to
    // be), then stop reading and shut down.
    let mut first = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let read_all = Instant::now() + WAIT;
    while srv.stats().file_read_bytes < 4 << 20 && Instant::now() < read_all {
        let n = r.read(&mut chunk).unwrap();
        assert!(n > 0, "the response ended early");
        first.extend_from_slice(&chunk[..n]);
    }
    let sealed_all = srv.stats().file_read_bytes >= 4 << 20;
    srv.handle.shutdown();
    let mut rest = Vec::new();
    let _ = r.read_to_end(&mut rest); // ends at the server's close (with or without close_notify)
    let all = [&first[..], &rest].concat();
    assert!(
        all.ends_with(&content("4m.bin", 4 << 20)),
        "got {} bytes (the file all read before the shutdown: {sealed_all})",
        all.len()
    );
    let st = srv.stop();
    assert_eq!(st.status_4xx, 6);
}

#[test]
fn request_bodies_are_dropped_over_tls_and_the_connection_goes_on() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let client = certs.client(&both_versions());
    let mut r = BufReader::new(tls_connect(srv.addr, &client));
    r.get_mut()
        .write_all(
            b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
              3\r\nabc\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nxy",
        )
        .unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().status, 405);
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    let st = srv.stats();
    assert_eq!(
        (st.requests, st.tls_handshakes, st.closed),
        (3, 1, 0),
        "{st:?}"
    );
}

/// Runs `program args` with `stdin`, killed after 10 s by coreutils' timeout; None if the
/// program is not installed.
fn run(program: &str, args: &[&str], stdin: &[u8]) -> Option<(bool, String, String)> {
    if Command::new(program).arg("--version").output().is_err()
        && Command::new(program).arg("version").output().is_err()
    {
        eprintln!("{program} is not installed: skipping its interop check");
        return None;
    }
    let mut child = Command::new("timeout")
        .arg("10")
        .arg(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().expect("wait");
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn curl_and_openssl_speak_tls13_and_tls12_and_tls11_is_refused() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let port = srv.addr.port();
    let cafile = certs.cert.to_str().unwrap();
    let url = format!("https://localhost:{port}/a.txt");
    let resolve = format!("localhost:{port}:127.0.0.1");
    for versions in [&["--tlsv1.3"][..], &["--tlsv1.2", "--tls-max", "1.2"]] {
        let mut args = vec!["-sS", "--cacert", cafile, "--resolve", &resolve];
        args.extend_from_slice(versions);
        args.push(&url);
        if let Some((ok, out, err)) = run("curl", &args, b"") {
            assert!(ok && out == "hello", "curl {versions:?}: {out} {err}");
        }
    }
    let connect_to = format!("127.0.0.1:{port}");
    let request = b"GET /a.txt HTTP/1.0\r\n\r\n";
    for version in ["-tls1_3", "-tls1_2"] {
        let args = [
            "s_client",
            "-connect",
            &connect_to,
            "-servername",
            "localhost",
            "-CAfile",
            cafile,
            "-verify_return_error",
            "-quiet",
            version,
        ];
        if let Some((ok, out, err)) = run("openssl", &args, request) {
            assert!(
                ok && out.ends_with("hello"),
                "openssl {version}: {out} {err}"
            );
        }
    }
    let before = srv.stats();
    let args = [
        "s_client",
        "-connect",
        &connect_to,
        "-tls1_1",
        "-cipher",
        "DEFAULT@SECLEVEL=0",
        "-quiet",
    ];
    if let Some((ok, out, err)) = run("openssl", &args, request) {
        assert!(
            !ok && !out.contains("hello"),
            "TLS 1.1 refused: {out} {err}"
        );
        let refused_here = srv.stats().tls_errors - before.tls_errors;
        assert!(
            refused_here == 1 || err.contains("no protocols available"),
            "the server refused the TLS 1.1 hello (or openssl would not send one): {err}"
        );
    }
}
