//! Session ticket key rotation over QUIC (`tls_ticket_key_period_ms`): a ticket resumes in the
//! key period it was issued in and the next, and not once two periods have begun since, so a
//! ticket (and the 0-RTT it allows) is good for at most two periods. Progress is by the
//! periods' count (`http3::ticket_key_epoch`, the server's own reckoning), each wait bounded.

use crate::h3_resume::{fetch, FILE};
use crate::h3_support::{Certs, BOUND};
use std::time::{Duration, Instant};

const PERIOD_MS: u64 = 1_500;

/// Waits (bounded) until the current period is `n` or later; the period then.
fn wait_for_period(n: u64) -> u64 {
    let period = Duration::from_millis(PERIOD_MS);
    let start = Instant::now();
    loop {
        let now = http3::ticket_key_epoch(period);
        if now >= n {
            return now;
        }
        assert!(
            start.elapsed() < BOUND,
            "period {n} not begun within {BOUND:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_ticket_resumes_one_period_on_and_not_two_periods_on() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.tls_ticket_key_period_ms = PERIOD_MS);
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client();
    let epoch = || http3::ticket_key_epoch(Duration::from_millis(PERIOD_MS));
    let mut checked = false;
    // A busy machine may let a period go by mid-step: that round proves nothing and is
    // tried again.
    for _ in 0..5 {
        let issued = epoch();
        let (resumed, status, len, session) = fetch(&mut config, srv.addr, &[]);
        assert_eq!((resumed, status, len), (false, 200, FILE));
        if epoch() != issued {
            continue;
        }
        // The next period: the previous key still opens the ticket.
        if wait_for_period(issued + 1) != issued + 1 {
            continue;
        }
        let (resumed, status, len, _) = fetch(&mut config, srv.addr, &session);
        assert_eq!((status, len), (200, FILE));
        if epoch() != issued + 1 {
            continue;
        }
        assert!(
            resumed,
            "a ticket of period {issued} in period {}",
            issued + 1
        );
        // Two periods on: its key is gone, a full handshake and the right answer.
        wait_for_period(issued + 2);
        let (resumed, status, len, _) = fetch(&mut config, srv.addr, &session);
        assert_eq!((resumed, status, len), (false, 200, FILE), "two periods on");
        checked = true;
        break;
    }
    assert!(checked, "no round kept within its periods");
    let st = srv.stop();
    assert!(st.h3_resumed >= 1, "{st:?}");
}
