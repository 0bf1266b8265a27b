//! An nginx serving HTTPS for a test, and its access log read back: certificates made at test
//! time (a CA and a leaf it signs), nginx started through the lab's peers with the lab's TLS
//! config, stopped before its log is read so that every line it will write is written.

#![allow(dead_code)] // each test binary uses its own subset

use lab_peers::{Peer, PeerError, PeerKind, PeerSpec, TlsFiles};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;
use test_support::certs::{KeyKind, TestCa, LOCAL_NAMES};

/// The files of the document root, with their sizes: a small head-sized file, a few kilobytes,
/// and one larger than a TLS record (16 KiB), so that a response spans several records.
pub const FILES: [(&str, usize); 4] = [
    ("/small.txt", 100),
    ("/one.txt", 1024),
    ("/three.txt", 3 * 1024),
    ("/forty.bin", 40 * 1024),
];

/// A test CA, a leaf it signed for `localhost` and 127.0.0.1 (ECDSA P-256), the PEM files nginx
/// and `--cacert` read, the document root and a workload of one page of its [`FILES`].
pub struct Pki {
    /// The CA certificate, for `--cacert`.
    pub ca: PathBuf,
    _issuer: TestCa,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub root: PathBuf,
    pub workload: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        Pki::make(false)
    }

    /// The same with a leaf whose validity ended in 2021 (nginx serves it all the same).
    pub fn expired() -> Pki {
        Pki::make(true)
    }

    fn make(expired: bool) -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = TestCa::new("flint test CA");
        let path = |name: &str| dir.path().join(name);
        // The chain nginx sends: the leaf, then its issuer.
        let leaf = ca.leaf_with(LOCAL_NAMES, KeyKind::EcdsaP256, expired);
        let (cert, key) = leaf.write_pem(dir.path());

        let root = path("root");
        for (name, size) in FILES {
            let file = root.join(name.trim_start_matches('/'));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(file, body).unwrap();
        }
        let files: Vec<String> = FILES.iter().map(|(f, _)| format!("{f:?}")).collect();
        std::fs::write(
            path("workload.toml"),
            format!(
                "[[page]]\nname = \"all\"\nweight = 1\nfiles = [{}]\n",
                files.join(", ")
            ),
        )
        .unwrap();
        Pki {
            ca: ca.pem.clone(),
            _issuer: ca,
            cert,
            key,
            root,
            workload: path("workload.toml"),
            dir,
        }
    }
}

/// A running nginx with an access log of each request's TLS parameters.
pub struct Nginx {
    peer: Peer,
    log: PathBuf,
}

/// One line of the access log (`lab_peers::NGINX_TLS_LOG_FORMAT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The connection's serial: the same for every request of one connection.
    pub connection: u64,
    /// The request's number on its connection, from 1.
    pub request: u64,
    pub pipelined: bool,
    /// OpenSSL's names: `TLSv1.3`, `ECDHE-ECDSA-AES256-GCM-SHA384`.
    pub protocol: String,
    pub cipher: String,
    pub resumed: bool,
    pub status: u16,
    /// Head and body, before encryption.
    pub bytes_sent: u64,
}

impl Nginx {
    /// nginx with the lab's TLS config and `pki`'s certificate; `protocols`: nginx's
    /// `ssl_protocols` and `ssl_ciphers` in place of the lab's. A machine without nginx fails
    /// here, naming the script that installs it.
    pub fn start(pki: &Pki, protocols: Option<(&str, &str)>) -> Nginx {
        // A log per server, in the test's directory: it outlives the peer's own directory.
        let log = tempfile::Builder::new()
            .prefix("access.")
            .suffix(".log")
            .tempfile_in(pki.dir.path())
            .expect("log file")
            .into_temp_path()
            .keep()
            .expect("keep the log file");
        let spec = PeerSpec {
            root: pki.root.clone(),
            digest: false,
            max_clients: 8,
            cpu: None,
            flint_bin: None,
            ready_timeout: Duration::from_secs(30),
            tls: Some(TlsFiles {
                cert: pki.cert.clone(),
                key: pki.key.clone(),
                nginx_protocols: protocols.map(|(p, c)| (p.to_owned(), c.to_owned())),
                nginx_access_log: Some(log.clone()),
                http3: false,
            }),
            http2: false,
            net: None,
        };
        // Stopped by process group when dropped, whatever happens.
        let peer = match Peer::start(PeerKind::Nginx, &spec) {
            Ok(peer) => peer,
            Err(e @ PeerError::NotInstalled { .. }) => {
                panic!("{e}: run scripts/install-peers.sh, which installs every peer")
            }
            Err(e) => panic!("nginx did not start: {e}"),
        };
        Nginx { peer, log }
    }

    pub fn port(&self) -> u16 {
        self.peer.addr().port()
    }

    pub fn addr(&self) -> SocketAddr {
        self.peer.addr()
    }

    pub fn version(&self) -> String {
        self.peer.version().to_owned()
    }

    /// Stops nginx and reads its access log: once the process has exited, every line it was
    /// going to write is in the file (nginx writes a request's line after sending its response,
    /// so a client can finish before the line is there).
    pub fn stop_and_read_log(self) -> Vec<Logged> {
        let Nginx { peer, log } = self;
        // Killed after the grace or not, its lines were written as each request ended.
        let _ = peer.stop();
        let text = std::fs::read_to_string(&log).expect("nginx's access log");
        text.lines().map(parse_line).collect()
    }
}

fn parse_line(line: &str) -> Logged {
    let f: Vec<&str> = line.split(' ').collect();
    assert_eq!(f.len(), 8, "an access log line of 8 fields: {line:?}");
    let num = |i: usize| -> u64 {
        f[i].parse()
            .unwrap_or_else(|_| panic!("field {i} of {line:?}"))
    };
    Logged {
        connection: num(0),
        request: num(1),
        pipelined: f[2] == "p",
        protocol: f[3].to_owned(),
        cipher: f[4].to_owned(),
        resumed: f[5] == "r",
        status: num(6) as u16,
        bytes_sent: num(7),
    }
}

/// rustls's names (flint's JSON) to OpenSSL's (nginx's log): `TLSv1_3` to `TLSv1.3`.
pub fn openssl_version(rustls: &str) -> String {
    rustls.replace('_', ".")
}

/// rustls's cipher-suite names (IANA's, with `TLS13_` for TLS 1.3) to OpenSSL's, for the suites
/// rustls offers. A table, not a rule: OpenSSL's names follow none.
pub fn openssl_cipher(rustls: &str) -> &'static str {
    match rustls {
        "TLS13_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
        "TLS13_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-RSA-CHACHA20-POLY1305",
        other => panic!("a cipher suite rustls does not offer: {other}"),
    }
}

/// The version of the ServerHello that answers a TLS 1.0 ClientHello (`[3, 1]` for TLS 1.0),
/// or `None` when the server answers with an alert or closes. Written by hand because no TLS
/// library the workspace has still speaks TLS 1.0: it proves the server a test calls
/// "TLS 1.0-only" really serves TLS 1.0, so a failed handshake is the client's refusal.
pub fn server_hello_version_for_tls10(addr: SocketAddr) -> Option<[u8; 2]> {
    let mut body = Vec::new();
    body.extend_from_slice(&[3, 1]); // client_version: TLS 1.0
    body.extend_from_slice(&[0x5a; 32]); // random
    body.push(0); // no session id
                  // ECDHE-ECDSA with AES-256-CBC and AES-128-CBC, SHA-1: what a P-256 certificate serves
                  // TLS 1.0 with.
    body.extend_from_slice(&[0, 4, 0xc0, 0x0a, 0xc0, 0x09]);
    body.extend_from_slice(&[1, 0]); // compression: null only
    let extensions: &[u8] = &[
        0x00, 0x0a, 0, 4, 0, 2, 0x00, 0x17, // supported_groups: secp256r1
        0x00, 0x0b, 0, 2, 1, 0, // ec_point_formats: uncompressed
    ];
    body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    body.extend_from_slice(extensions);
    let mut handshake = vec![1]; // ClientHello
    handshake.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend_from_slice(&body);
    let mut record = vec![0x16, 3, 1];
    record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
    record.extend_from_slice(&handshake);

    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&record).expect("send the ClientHello");
    // Record header (5), handshake type and length (4), server_version (2).
    let mut head = [0u8; 11];
    s.read_exact(&mut head).ok()?;
    (head[0] == 0x16 && head[5] == 2).then_some([head[9], head[10]])
}
