//! The recorder fed DevTools events as Chromium sends them.

use super::*;
use serde_json::json;

#[test]
fn initiators_prefetch_and_preload_before_devtools_own_type() {
    let none = json!({});
    let parser = json!({"type": "parser"});
    let script = json!({"type": "script"});
    assert_eq!(initiator("Prefetch", &parser, &none), "prefetch");
    let purpose = json!({"headers": {"Sec-Purpose": "prefetch"}});
    assert_eq!(initiator("Script", &script, &purpose), "prefetch");
    let preload = json!({"isLinkPreload": true});
    assert_eq!(initiator("Image", &parser, &preload), "preload");
    assert_eq!(initiator("Image", &parser, &none), "parser");
    assert_eq!(initiator("Fetch", &script, &none), "script");
    assert_eq!(
        initiator("Document", &json!({"type": "other"}), &none),
        "other"
    );
    assert_eq!(
        initiator("Image", &json!({"type": "SignedExchange"}), &none),
        "other"
    );
}

#[test]
fn streams_open_by_design_do_not_hold_the_page_from_idle() {
    let mut rec = Recorder::new("s");
    let sent = |id: &str, kind: &str| {
        Message(
            json!({"sessionId": "s", "method": "Network.requestWillBeSent", "params": {
            "requestId": id, "type": kind, "initiator": {"type": "script"},
            "request": {"url": format!("http://t/{id}")}}}),
        )
    };
    rec.event(&sent("1", "EventSource"));
    rec.event(&sent("2", "WebSocket"));
    assert_eq!(rec.in_flight, 0);
    rec.event(&sent("3", "Fetch"));
    assert_eq!(rec.in_flight, 1, "a fetch is waited on");
    assert_eq!(rec.load.requests.len(), 3, "all three are listed");
}

/// As Chromium tells a worker's requests (seen by hand on a page whose worker imports a
/// script, fetches a file and starts a worker that fetches another): its script's request
/// starts on the tab's session and ends on the worker's; what the worker asks for is all
/// on its own session, with no frame.
#[test]
fn a_workers_requests_are_recorded_from_its_own_session() {
    let mut rec = Recorder::new("tab");
    rec.load.main_frame = "F".into();
    let msg = |session: &str, method: &str, params: Value| {
        Message(json!({"sessionId": session, "method": method, "params": params}))
    };
    let sent = |session: &str, id: &str, url: &str, frame: Option<&str>| {
        let mut p = json!({"requestId": id, "type": "Script", "initiator": {"type": "other"},
                           "request": {"url": url}});
        if let Some(f) = frame {
            p["frameId"] = json!(f);
        }
        msg(session, "Network.requestWillBeSent", p)
    };
    let finished = |session: &str, id: &str, bytes: u64| {
        msg(
            session,
            "Network.loadingFinished",
            json!({"requestId": id, "encodedDataLength": bytes}),
        )
    };
    let attached = |parent: &str, child: &str, url: &str| {
        msg(
            parent,
            "Target.attachedToTarget",
            json!({"sessionId": child, "waitingForDebugger": true,
                   "targetInfo": {"type": "worker", "url": url}}),
        )
    };
    // The script of a worker the page's frame `F` starts (a frame has its own id).
    rec.event(&sent("tab", "w", "http://t/worker.js", Some("F")));
    // Another tab's worker: not this page's.
    rec.event(&sent("other", "x", "http://t/x.js", Some("G")));
    rec.event(&attached("tab", "W", "http://t/worker.js"));
    assert_eq!(rec.starting, ["W"], "held until its network events are on");
    rec.event(&finished("W", "w", 120));
    rec.event(&sent("W", "f", "http://t/data.json", None));
    rec.event(&finished("W", "f", 30));
    // A worker it starts, whose own fetch never ends: the worker ends first.
    rec.event(&sent("W", "n", "http://t/nested.js", Some("F")));
    rec.event(&attached("W", "N", "http://t/nested.js"));
    assert_eq!(rec.starting, ["W", "N"]);
    rec.event(&finished("N", "n", 10));
    rec.event(&sent("N", "g", "http://t/never.json", None));
    assert_eq!(rec.in_flight, 1);
    rec.event(&msg(
        "W",
        "Target.detachedFromTarget",
        json!({"sessionId": "N"}),
    ));
    assert_eq!(rec.in_flight, 0, "nothing left to wait on");
    rec.event(&sent("N", "late", "http://t/late.json", None));
    let load = rec.into_load();
    let got: Vec<(&str, &str, Option<u64>, Option<&str>)> = load
        .requests
        .iter()
        .map(|r| {
            (
                r.url.as_str(),
                r.frame.as_str(),
                r.bytes,
                r.failed.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("http://t/worker.js", "F", Some(120), None),
            ("http://t/data.json", "F", Some(30), None),
            ("http://t/nested.js", "F", Some(10), None),
            (
                "http://t/never.json",
                "F",
                None,
                Some("its worker ended first")
            ),
        ]
    );
}

/// The main frame commits another document while its old one and a frame within it have
/// requests in flight: all end there; a body with no length to tell its size is no file.
#[test]
fn a_navigation_cuts_the_replaced_document_s_frames_too() {
    let mut rec = Recorder::new("tab");
    rec.load.main_frame = "M".into();
    let msg = |method: &str, params: Value| {
        Message(json!({"sessionId": "tab", "method": method, "params": params}))
    };
    let sent = |id: &str, frame: &str| {
        msg(
            "Network.requestWillBeSent",
            json!({"requestId": id, "type": "Image", "frameId": frame, "loaderId": "L1",
                   "initiator": {"type": "parser"}, "request": {"url": format!("http://t/{id}")}}),
        )
    };
    let said = |id: &str, headers: Value| {
        msg(
            "Network.responseReceivedExtraInfo",
            json!({"requestId": id, "statusCode": 200, "headers": headers}),
        )
    };
    rec.event(&msg(
        "Page.frameAttached",
        json!({"frameId": "C", "parentFrameId": "M"}),
    ));
    rec.event(&msg(
        "Page.frameAttached",
        json!({"frameId": "G", "parentFrameId": "C"}),
    ));
    rec.event(&msg(
        "Page.frameNavigated",
        json!({"frame": {"id": "M", "loaderId": "L1"}}),
    ));
    rec.event(&sent("sized", "M"));
    rec.event(&said("sized", json!({"Content-Length": "3"})));
    rec.event(&sent("partial", "M"));
    rec.event(&said("partial", json!({})));
    rec.event(&msg(
        "Network.dataReceived",
        json!({"requestId": "partial", "dataLength": 5}),
    ));
    rec.event(&sent("gzipped", "M"));
    rec.event(&said(
        "gzipped",
        json!({"Content-Length": "9", "Content-Encoding": "gzip"}),
    ));
    rec.event(&sent("child", "C"));
    rec.event(&sent("grandchild", "G"));
    assert_eq!(rec.in_flight, 5);
    // The same document told again replaces nothing.
    rec.event(&msg(
        "Page.frameNavigated",
        json!({"frame": {"id": "M", "loaderId": "L1"}}),
    ));
    assert_eq!(rec.in_flight, 5);
    rec.event(&msg(
        "Page.frameNavigated",
        json!({"frame": {"id": "M", "loaderId": "L2"}}),
    ));
    assert_eq!(rec.in_flight, 0, "nothing of the old document waited on");
    let got: Vec<(&str, bool, Option<u64>, bool)> = rec
        .load
        .requests
        .iter()
        .map(|r| {
            (
                r.url.as_str(),
                r.cut_by_navigation,
                r.bytes,
                r.failed.is_some(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("http://t/sized", true, Some(3), false),
            ("http://t/partial", true, None, true),
            ("http://t/gzipped", true, None, false),
            ("http://t/child", true, None, false),
            ("http://t/grandchild", true, None, false),
        ]
    );
}

/// The network service's word on a response (`responseReceivedExtraInfo`) comes by another
/// way than the renderer's events and may come before the request is told at all (seen with a
/// script's fetch on a loaded machine); kept until then, it still gives the size of a file whose
/// document is replaced while its body is coming.
#[test]
fn what_the_network_service_saw_first_is_kept_for_its_request() {
    let mut rec = Recorder::new("tab");
    rec.load.main_frame = "M".into();
    let msg = |method: &str, params: Value| {
        Message(json!({"sessionId": "tab", "method": method, "params": params}))
    };
    rec.event(&msg(
        "Page.frameNavigated",
        json!({"frame": {"id": "M", "loaderId": "L1"}}),
    ));
    rec.event(&msg(
        "Network.responseReceivedExtraInfo",
        json!({"requestId": "f", "statusCode": 200, "headers": {"Content-Length": "3"}}),
    ));
    rec.event(&msg(
        "Network.requestWillBeSent",
        json!({"requestId": "f", "type": "Fetch", "frameId": "M", "loaderId": "L1",
               "initiator": {"type": "script"}, "request": {"url": "http://t/slow/c.png"}}),
    ));
    rec.event(&msg(
        "Network.responseReceived",
        json!({"requestId": "f", "response": {"status": 200, "mimeType": "image/png"}}),
    ));
    rec.event(&msg(
        "Page.frameNavigated",
        json!({"frame": {"id": "M", "loaderId": "L2"}}),
    ));
    assert_eq!(rec.in_flight, 0);
    let r = &rec.load.requests[0];
    assert!(r.cut_by_navigation);
    assert_eq!(
        (r.status, r.bytes, r.failed.as_deref()),
        (Some(200), Some(3), None)
    );
}

#[test]
fn byte_counts_may_have_a_fraction() {
    assert_eq!(count(&json!(253)), 253);
    assert_eq!(count(&json!(253.0)), 253);
    assert_eq!(count(&json!(null)), 0);
    assert_eq!(count(&json!(-1)), 0);
}
