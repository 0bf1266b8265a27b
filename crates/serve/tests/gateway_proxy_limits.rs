//! The proxy's own bound on requests in flight: a proxied request runs no program, so it takes
//! none of `cgi_max_programs`' slots, but one of its mount's `max_in_flight` (per thread, 503
//! past it, counted in `proxy_busy`). An HTTP/2 client in front puts its 100 streams in flight
//! at once.

mod common;
mod h2_support;
mod proxy_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use proxy_support::*;

/// An upstream that answers no request before `hold` of them have arrived (or a few seconds
/// have passed: a server that lets fewer through still gets its answers, and the test fails
/// on what it counts, not on a hang).
fn holding_upstream(hold: usize) -> Upstream {
    let arrived = Arc::new(AtomicUsize::new(0));
    Upstream::start(move |_| {
        arrived.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while arrived.load(Ordering::SeqCst) < hold && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        ok("held")
    })
}

/// Submits `n` GETs on one HTTP/2 connection at once and returns each stream's status.
fn statuses(addr: std::net::SocketAddr, n: usize) -> Vec<u16> {
    let mut h2 = h2_support::Client::new(connect(addr), "example.com");
    let ids: Vec<_> = (0..n)
        .map(|k| h2.submit("GET", &format!("/api/{k}"), &[]))
        .collect();
    let all_done =
        |s: &h2_support::Seen| (ids.iter()).all(|id| s.responses.get(id).is_some_and(|r| r.done));
    assert!(h2.run_until(all_done), "the connection closed");
    ids.iter().map(|id| h2.seen.responses[id].status).collect()
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

#[test]
fn an_http2_client_s_hundred_streams_are_proxied_at_once_whatever_cgi_max_programs_says() {
    const STREAMS: usize = 100;
    let up = holding_upstream(STREAMS);
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| {
        c.proxy.push(m);
        c.cgi_max_programs = 4;
    });
    let got = statuses(srv.addr, STREAMS);
    assert_eq!(
        (count(&got, 200), count(&got, 503)),
        (STREAMS, 0),
        "statuses: {got:?}"
    );
    assert_eq!(
        up.most_open.load(Ordering::SeqCst),
        STREAMS,
        "every stream in flight at once, each on its upstream connection"
    );
    let st = srv.stop();
    assert_eq!(
        (st.proxy_requests, st.proxy_busy, st.cgi_busy),
        (STREAMS as u64, 0, 0)
    );
}

#[test]
fn requests_past_a_mount_s_max_in_flight_get_503_and_the_rest_go_through() {
    const STREAMS: usize = 100;
    const LIMIT: usize = 40;
    // Held until the mount's 40 are in: the other 60 are refused while they wait.
    let up = holding_upstream(LIMIT);
    let m = mount("/api/", &[up.url()], &format!("max_in_flight = {LIMIT}"));
    let srv = TestServer::start(|c| c.proxy.push(m));
    let got = statuses(srv.addr, STREAMS);
    assert_eq!(
        (count(&got, 200), count(&got, 503)),
        (LIMIT, STREAMS - LIMIT),
        "statuses: {got:?}"
    );
    assert_eq!(
        up.requests().len(),
        LIMIT,
        "a refused request never reaches the upstream"
    );
    // The slots come back as the exchanges end: the next burst goes through as the first did.
    let again = statuses(srv.addr, LIMIT);
    assert_eq!(count(&again, 200), LIMIT, "statuses: {again:?}");
    let st = srv.stop();
    assert_eq!(
        (st.proxy_requests, st.proxy_busy, st.cgi_busy),
        ((STREAMS + LIMIT) as u64, (STREAMS - LIMIT) as u64, 0)
    );
}
