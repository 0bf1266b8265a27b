//! A server named by its IP address: the certificate is checked against its addresses (as
//! curl and flint's TCP side do), and no SNI is sent for it (RFC 6066 3).

mod common;

use common::udp::{Driver, UdpServer};
use http3::{ClientConfig, Closed, Limits, ServerConfig, Trust, MAX_DATAGRAM};
use std::net::SocketAddr;
use std::time::Duration;
use test_support::certs::{KeyKind, TestCa};

const BOUND: Duration = Duration::from_secs(20);

/// A server whose leaf names only `names`, and a client trusting its CA.
fn serve(names: &[&str]) -> (TestCa, UdpServer, ClientConfig) {
    let ca = TestCa::new("flint http3 address test CA");
    let (cert, key) = ca
        .leaf_with(names, KeyKind::EcdsaP256, false)
        .write_pem(ca.dir());
    let limits = Limits::default();
    let server = UdpServer::start(ServerConfig::new(&cert, &key, &limits).unwrap());
    let trust = Trust {
        cacert: Some(ca.pem.clone()),
        insecure: false,
    };
    let client = ClientConfig::new(&trust, &limits).unwrap();
    (ca, server, client)
}

/// Turns until the handshake is done or the connection has ended.
fn handshake(d: &mut Driver) {
    d.until(BOUND, |d| {
        d.turn();
        d.client.is_ready() || d.client.is_closed()
    });
}

#[test]
fn a_certificate_naming_only_the_address_is_taken_for_it() {
    let (_ca, server, mut config) = serve(&["127.0.0.1"]);
    let mut d = Driver::connect(&mut config, "127.0.0.1", server.addr);
    handshake(&mut d);
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
}

#[test]
fn a_certificate_naming_another_address_is_refused() {
    let (_ca, server, mut config) = serve(&["127.0.0.2", "localhost"]);
    let mut d = Driver::connect(&mut config, "127.0.0.1", server.addr);
    handshake(&mut d);
    assert_eq!(
        d.client.closed(),
        Some(Closed::Handshake {
            alert: 42,
            by_peer: false
        })
    );
}

#[test]
fn a_certificate_naming_the_address_from_an_unknown_ca_is_refused() {
    // The address matches: only the chain's check can refuse it, so a client that stopped
    // verifying IP-address URLs would take it.
    let (_ca, server, _) = serve(&["127.0.0.1"]);
    let other = TestCa::new("flint http3 address test, another CA");
    let trust = Trust {
        cacert: Some(other.pem.clone()),
        insecure: false,
    };
    let mut config = ClientConfig::new(&trust, &Limits::default()).unwrap();
    let mut d = Driver::connect(&mut config, "127.0.0.1", server.addr);
    handshake(&mut d);
    assert_eq!(
        d.client.closed(),
        Some(Closed::Handshake {
            alert: 48,
            by_peer: false
        })
    );
}

/// The server name a quiche server reads in the client's first flight to `name`.
fn sni_sent(name: &str) -> Option<String> {
    let ca = TestCa::new("flint http3 SNI test CA");
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let mut server_config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    server_config.set_application_protos(&[b"h3"]).unwrap();
    server_config
        .load_cert_chain_from_pem_file(cert.to_str().unwrap())
        .unwrap();
    server_config
        .load_priv_key_from_pem_file(key.to_str().unwrap())
        .unwrap();
    let (client_at, server_at): (SocketAddr, SocketAddr) = (
        "127.0.0.1:40000".parse().unwrap(),
        "127.0.0.1:4433".parse().unwrap(),
    );
    let trust = Trust {
        cacert: Some(ca.pem.clone()),
        insecure: false,
    };
    let mut config = ClientConfig::new(&trust, &Limits::default()).unwrap();
    let mut client = http3::Client::connect(&mut config, name, client_at, server_at).unwrap();
    let scid = quiche::ConnectionId::from_ref(&[7; 16]);
    let mut server = quiche::accept(&scid, None, server_at, client_at, &mut server_config).unwrap();
    let mut out = [0u8; MAX_DATAGRAM];
    // The whole first flight (a ClientHello with a large key share takes two datagrams).
    while let Some(d) = client.send(&mut out) {
        let info = quiche::RecvInfo {
            from: client_at,
            to: server_at,
        };
        server.recv(&mut out[..d.len], info).unwrap();
    }
    assert!(
        server.is_established() || server.is_in_early_data() || server.send(&mut out).is_ok(),
        "the server read the ClientHello"
    );
    server.server_name().map(str::to_owned)
}

#[test]
fn no_sni_is_sent_for_an_address_and_a_name_is_sent_as_itself() {
    assert_eq!(sni_sent("localhost").as_deref(), Some("localhost"));
    assert_eq!(sni_sent("127.0.0.1"), None);
    assert_eq!(sni_sent("::1"), None);
}
