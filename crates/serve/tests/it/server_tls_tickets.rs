//! Session ticket key rotation over TLS on TCP (`tls_ticket_key_period_ms`, rustls's
//! `TicketRotator`): a ticket issued before two rotations no longer resumes; the client gets
//! a full handshake and its answer. rustls rotates when a ticket is made or opened after the
//! period has passed (in whole seconds): each rotation here is brought about by another
//! client's handshake once more than the period has passed, a wait that only a later start
//! could lengthen.

use std::io::{BufReader, Write};
use std::time::Duration;

use crate::common::*;
use crate::tls_support::*;

/// rustls's shortest period: 1 s (a rotation once more than that has passed, 2 s to be sure
/// of its whole-second clock).
const PERIOD_MS: u64 = 1_000;
const PAST_A_PERIOD: Duration = Duration::from_millis(2_100);

/// One request on a new connection with `client`'s session store: whether it resumed.
fn get_a(srv: &TestServer, client: &std::sync::Arc<rustls::ClientConfig>) -> bool {
    let mut r = BufReader::new(tls_connect(srv.addr, client));
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    r.get_ref().conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

#[test]
fn a_ticket_from_before_two_rotations_does_not_resume() {
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.tls_ticket_key_period_ms = PERIOD_MS);
    let kept = certs.client(&[&rustls::version::TLS13]);
    assert!(
        !get_a(&srv, &kept),
        "a first connection is a full handshake"
    );
    // Two rotations, each by another client's handshake past the period.
    for _ in 0..2 {
        std::thread::sleep(PAST_A_PERIOD);
        let other = certs.client(&[&rustls::version::TLS13]);
        assert!(!get_a(&srv, &other));
    }
    assert!(!get_a(&srv, &kept), "the ticket of two keys ago resumed");
    let st = srv.stop();
    assert_eq!((st.tls_handshakes, st.tls_resumed), (4, 0), "{st:?}");
}
