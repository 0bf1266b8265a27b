//! What every peer's config does alike: nothing of TLS when plain, HTTP/2 by each server's own
//! switch, the address of the lab's network path.

use std::net::IpAddr;

use super::test_params::{with, with_tls};
use super::*;

#[test]
fn plain_configs_say_nothing_of_tls() {
    assert!(!with(false, 40, nginx).contains("ssl"));
    assert!(!with(false, 40, |p| apache(p, Mpm::Event, None)).contains("SSL"));
    assert!(!with(false, 40, lighttpd).contains("ssl."));
    assert!(!with(false, 40, flint_args)
        .iter()
        .any(|a| a.starts_with("--tls")));
}

#[test]
fn http2_turns_on_each_servers_own_switch_and_only_when_asked() {
    fn h2<'a>(p: &ConfigParams<'a>) -> ConfigParams<'a> {
        ConfigParams { http2: true, ..*p }
    }
    assert!(with(false, 4, |p| nginx(&h2(p))).contains("listen 127.0.0.1:18123 http2;"));
    assert!(with_tls(|p| nginx(&h2(p))).contains("listen 127.0.0.1:18123 ssl http2;"));
    let apache_h2 = with(false, 4, |p| apache(&h2(p), Mpm::Event, None));
    assert!(apache_h2.contains("mod_http2.so\nProtocols h2 h2c http/1.1\n"));
    assert!(with(false, 4, |p| lighttpd(&h2(p))).contains("\"server.h2c\" => \"enable\""));
    assert!(!with(false, 4, nginx).contains("http2"));
    assert!(!with(false, 4, |p| apache(p, Mpm::Event, None)).contains("http2"));
    assert!(!with(false, 4, lighttpd).contains("h2"));
}

#[test]
fn a_peer_on_the_network_path_listens_on_its_address() {
    fn on<'a>(p: &ConfigParams<'a>) -> ConfigParams<'a> {
        ConfigParams {
            host: IpAddr::from([10, 77, 0, 2]),
            ..*p
        }
    }
    assert!(with(false, 4, |p| nginx(&on(p))).contains("listen 10.77.0.2:18123;"));
    assert!(
        with(false, 4, |p| apache(&on(p), Mpm::Event, None)).contains("Listen 10.77.0.2:18123\n")
    );
    assert!(with(false, 4, |p| lighttpd(&on(p))).contains("server.bind = \"10.77.0.2\""));
    assert!(with(false, 4, |p| h2o(&on(p))).contains("host: 10.77.0.2\n"));
    assert!(with(false, 4, |p| flint_args(&on(p))).contains(&"10.77.0.2:18123".to_owned()));
}
