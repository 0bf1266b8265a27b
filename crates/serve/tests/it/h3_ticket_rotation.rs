//! Session ticket key rotation over QUIC (`tls_ticket_key_period_ms`): a ticket resumes in the
//! key period it was issued in and the next, and not once two periods have begun since, so a
//! ticket is good for at most two periods. Progress is by the periods' count: the test moves
//! its server's ticket clock on by whole periods (`http3::TicketClock::shift`, the
//! `test-hooks` feature) rather than waiting for them, and the period is an hour, so no real
//! time that passes between the steps (a busy machine's) moves a step into another period.
//! The clock is the server's own: another server of the process, whose clock is left alone,
//! keeps resuming its tickets meanwhile (a clock of the whole process would refuse them, and
//! the tickets of any test running beside this one with a period of two hours or less).

use crate::h3_resume::{fetch, FILE};
use crate::h3_support::Certs;
use std::time::Duration;

const PERIOD: Duration = Duration::from_secs(3_600);

#[test]
fn a_ticket_resumes_one_period_on_and_not_two_periods_on() {
    let certs = Certs::new();
    let period_ms = PERIOD.as_millis() as u64;
    let srv = certs.serve(|c| c.tls_ticket_key_period_ms = period_ms);
    let other = certs.serve(|c| c.tls_ticket_key_period_ms = period_ms);
    for s in [&srv, &other] {
        std::fs::write(s.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    }
    let mut config = certs.client();
    let clock = srv.handle.ticket_clock();
    let epoch = || clock.epoch(PERIOD);

    let issued = epoch();
    let (resumed, status, len, session) = fetch(&mut config, srv.addr, &[]);
    assert_eq!((resumed, status, len), (false, 200, FILE));
    let (_, _, _, other_session) = fetch(&mut config, other.addr, &[]);
    assert_eq!(epoch(), issued, "an hour went by in two fetches");

    // The next period: the previous key still opens the ticket.
    clock.shift(PERIOD);
    assert_eq!(epoch(), issued + 1);
    let (resumed, status, len, _) = fetch(&mut config, srv.addr, &session);
    assert_eq!((resumed, status, len), (true, 200, FILE), "one period on");

    // Two periods on: its key is gone, a full handshake and the right answer.
    clock.shift(PERIOD);
    assert_eq!(epoch(), issued + 2);
    let (resumed, status, len, _) = fetch(&mut config, srv.addr, &session);
    assert_eq!((resumed, status, len), (false, 200, FILE), "two periods on");
    let st = srv.stop();
    assert_eq!(st.h3_resumed, 1, "{st:?}");

    // The other server's clock did not move: its ticket, as old as the refused one, resumes.
    assert_eq!(other.handle.ticket_clock().epoch(PERIOD), issued);
    let (resumed, status, len, _) = fetch(&mut config, other.addr, &other_session);
    assert_eq!(
        (resumed, status, len),
        (true, 200, FILE),
        "the other server"
    );
    let st = other.stop();
    assert_eq!(st.h3_resumed, 1, "{st:?}");
}
