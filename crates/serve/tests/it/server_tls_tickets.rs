//! Session ticket keys over TLS on TCP (`tls_ticket_key_period_ms`, `tls_setup/tickets.rs`):
//! a key a period of the wall clock, so a ticket resumes in the period it was issued in and
//! the next, and not after, however idle the server was in between (no other handshake
//! needed to roll the key). The client that is refused gets a full handshake and its answer.

use std::io::{BufReader, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::*;
use crate::tls_support::*;

/// One request on a new connection with `client`'s session store: whether it resumed.
fn get_a(srv: &TestServer, client: &std::sync::Arc<rustls::ClientConfig>) -> bool {
    let mut r = BufReader::new(tls_connect(srv.addr, client));
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    r.get_ref().conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

/// The period the server's wall clock is in (seconds since the epoch / period).
fn period_now(period_secs: u64) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    now.as_secs() / period_secs
}

#[test]
fn a_ticket_does_not_resume_after_two_idle_periods() {
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.tls_ticket_key_period_ms = 1_000);
    let kept = certs.client(&[&rustls::version::TLS13]);
    assert!(
        !get_a(&srv, &kept),
        "a first connection is a full handshake"
    );
    // No handshake at all for more than two periods: the ticket's period is two behind at
    // least (it began at most a period before the ticket was made). A later wake only adds.
    std::thread::sleep(Duration::from_millis(2_100));
    assert!(!get_a(&srv, &kept), "a ticket of two periods ago resumed");
    let st = srv.stop();
    assert_eq!((st.tls_handshakes, st.tls_resumed), (2, 0), "{st:?}");
}

#[test]
fn a_ticket_one_period_old_resumes() {
    // Periods of 4 s: an attempt counts only if its ticket was made within one period and
    // its resumption within the next (read from the clock before and after each), so a slow
    // machine costs attempts, not the result.
    const PERIOD_SECS: u64 = 4;
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.tls_ticket_key_period_ms = PERIOD_SECS * 1000);
    let (mut counted, mut resumed_seen) = (false, 0);
    for _ in 0..6 {
        let client = certs.client(&[&rustls::version::TLS13]);
        let issued = period_now(PERIOD_SECS);
        assert!(!get_a(&srv, &client));
        if period_now(PERIOD_SECS) != issued {
            continue;
        }
        while period_now(PERIOD_SECS) == issued {
            std::thread::sleep(Duration::from_millis(50));
        }
        let resumed = get_a(&srv, &client);
        resumed_seen += u64::from(resumed);
        if period_now(PERIOD_SECS) == issued + 1 {
            assert!(resumed, "a ticket of the period before did not resume");
            counted = true;
            break;
        }
    }
    assert!(counted, "no attempt fit its periods");
    let st = srv.stop();
    assert!(resumed_seen >= 1);
    assert_eq!(st.tls_resumed, resumed_seen, "{st:?}");
}
