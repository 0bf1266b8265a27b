//! HTTP/3 0-RTT to gateways that opt in (RFC 8470 5.1): with a proxy mount's `early_data` or
//! `cgi_early_data`, a safe request received in 0-RTT goes to its upstream marked
//! `Early-Data: 1` (a program is told `HTTP_EARLY_DATA=1`) instead of getting 425, and the
//! origin's own 425 goes back as it is; an unsafe method, and a gateway that did not opt in,
//! still get the server's 425 and are never forwarded, as does a path Basic authentication
//! protects. A request after the handshake is not marked.

use crate::cgi_support::Scripts;
use crate::h3_early_data::{fetch, fetch_early, first_visit, FILE};
use crate::h3_support::cgi::alice_zone;
use crate::h3_support::Certs;
use crate::proxy_support::{dead_port, mount, Req, Step, Upstream};
use http3::EarlyData;

/// 425 for a request marked early on `/api/later`, else 200 saying whether it was marked.
fn origin(r: &Req) -> Vec<Step> {
    let marked = r.field("early-data").unwrap_or("no");
    let later = r.head.starts_with("GET /api/later ") && marked == "1";
    let status = if later { "425 Too Early" } else { "200 OK" };
    let body = if r.head.starts_with("HEAD ") {
        ""
    } else {
        "ok"
    };
    let reply =
        format!("HTTP/1.1 {status}\r\nX-Marked: {marked}\r\nContent-Length: 2\r\n\r\n{body}");
    vec![Step::Write(reply.into_bytes())]
}

#[test]
fn in_0rtt_a_gateway_that_opts_in_is_told_and_its_425_passes_through() {
    let up = Upstream::start(origin);
    let certs = Certs::new();
    let told = mount("/api/", &[up.url()], "early_data = true");
    // Not opted in, to an address nothing listens on: were it forwarded, a 502.
    let untold = mount("/shut/", &[format!("http://{}", dead_port())], "");
    let scripts = Scripts::new();
    // 425 when told the request may be a replay, else 200: the program decides.
    scripts.add(
        "careful",
        "if [ \"$HTTP_EARLY_DATA\" = 1 ]; then s=425; else s=200; fi\nprintf 'Status: %s\\r\\nContent-Type: text/plain\\r\\n\\r\\nok' \"$s\"\n",
    );
    let zone = alice_zone(certs.ca.dir(), "/api/private");
    let srv = certs.serve(|c| {
        c.h3_early_data = true;
        c.auth.push(zone);
        c.cgi_early_data = true;
        c.proxy.push(told);
        c.proxy.push(untold);
        scripts.mount(c);
    });
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client().early_data();
    // After a full handshake: nothing is early, nothing marked.
    let asked = [("GET", "/api/x"), ("GET", "/cgi-bin/careful")];
    let first = fetch(&mut config, srv.addr, &[], &asked, &|| true);
    assert_eq!(first.statuses, [200, 200]);
    assert_eq!(first.early, EarlyData::NotSent);
    let asked = [
        ("GET", "/api/x"),
        ("HEAD", "/api/x"),
        ("GET", "/api/later"),
        ("GET", "/cgi-bin/careful"),
        ("POST", "/api/x"),
        ("GET", "/shut/x"),
        ("GET", "/api/private/x"),
    ];
    let second = fetch_early(&mut config, &srv, &first.session, &asked, &[]);
    assert_eq!(second.early, EarlyData::Accepted);
    assert_eq!(second.statuses, [200, 200, 425, 425, 425, 425, 425]);
    let seen = up.requests();
    let marks: Vec<(String, Option<&str>)> = (seen.iter())
        .map(|r| {
            let line = r.head.lines().next().unwrap_or("").to_string();
            (line, r.field("early-data"))
        })
        .collect();
    let marked = |line: &str| {
        (marks.iter())
            .filter(|(l, m)| l == line && *m == Some("1"))
            .count()
    };
    assert_eq!(
        marks.len(),
        4,
        "the first GET, then the early GET, HEAD and GET: {marks:?}"
    );
    assert_eq!(marked("GET /api/x HTTP/1.1"), 1, "{marks:?}");
    assert_eq!(marked("HEAD /api/x HTTP/1.1"), 1, "{marks:?}");
    assert_eq!(marked("GET /api/later HTTP/1.1"), 1, "{marks:?}");
    let refused = |(l, _): &(String, _)| l.starts_with("POST") || l.contains("/private/");
    assert!(!marks.iter().any(refused), "{marks:?}");
    let st = srv.stop();
    // The server's own 425s: the POST, the mount that did not opt in, the protected path
    // (its credentials never looked at).
    assert_eq!((st.h3_early_requests, st.h3_too_early), (7, 3), "{st:?}");
    assert_eq!((st.auth_missing, st.auth_failed), (0, 0), "{st:?}");
    assert_eq!((st.proxy_requests, st.cgi_starts), (4, 2), "{st:?}");
}

#[test]
fn in_0rtt_a_clients_own_early_data_field_is_replaced_by_the_servers_mark() {
    let up = Upstream::start(origin);
    let certs = Certs::new();
    let told = mount("/api/", &[up.url()], "early_data = true");
    let srv = certs.serve(|c| {
        c.h3_early_data = true;
        c.proxy.push(told);
    });
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client().early_data();
    let first = first_visit(&mut config, srv.addr);
    assert_eq!(first.statuses, [200]);
    // A client saying its early request is not one: the origin must hear the server's mark.
    let extra = [("early-data", "0")];
    let asked = [("GET", "/api/x")];
    let second = fetch_early(&mut config, &srv, &first.session, &asked, &extra);
    assert_eq!(second.early, EarlyData::Accepted);
    assert_eq!(second.statuses, [200]);
    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    let marks: Vec<&str> = (seen[0].head.lines())
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.eq_ignore_ascii_case("early-data"))
        .map(|(_, v)| v.trim())
        .collect();
    assert_eq!(marks, ["1"], "{}", seen[0].head);
    srv.stop();
}
