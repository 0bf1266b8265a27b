//! One page in a new tab: its network events recorded from before the navigation until the
//! network has been idle for [`IDLE`] after the load event and a scroll to the page's end, all
//! within the page timeout.
//!
//! A worker's requests (what its script fetches or imports, and the end of its own script's
//! request, which the tab's target sees start) are told to the worker's own DevTools target, not
//! the tab's: the tab attaches to its workers as they start (`Target.setAutoAttach`, flattened
//! into the one pipe, each worker held until its network events are on), and a worker to the
//! workers it starts.

use super::cdp::{CdpError, Message, STOP_POLL};
use super::Browser;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The network counts as done once no request has been in flight, and no event has come, for
/// this long.
pub const IDLE: Duration = Duration::from_millis(500);
/// Closing a tab: a browser that does not answer this is not waited on longer.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// Scrolls a window height at a time, so that lazy images and infinite lists between the top
/// and the end are reached as a reader reaches them; ends at the end, when a scroll no longer
/// moves, or after 200 steps.
const SCROLL_TO_END: &str = "new Promise(done => { let steps = 0; const step = () => { \
    const before = window.scrollY; window.scrollBy(0, window.innerHeight); \
    if (window.scrollY === before || ++steps >= 200) { done(steps); return; } \
    setTimeout(step, 50); }; step(); })";

/// One request of the page, as its events told it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Where it ended (after redirects).
    pub url: String,
    /// The URL first requested, when a redirect led elsewhere.
    pub redirected_from: Option<String>,
    /// The frame that asked for it.
    pub frame: String,
    /// DevTools' resource type (Document, Stylesheet, Image, Fetch, Prefetch...).
    pub resource_type: String,
    /// parser, script, preload, prefetch, or other.
    pub initiator: &'static str,
    /// The response's status; `None` when no response came (failed, or still loading).
    pub status: Option<u16>,
    /// The response's `Content-Type` as sent, else the MIME type DevTools gives; `None`
    /// without a response.
    pub content_type: Option<String>,
    /// Body bytes, decoded: what `flint bench`, which asks for no compression, reads. (The
    /// encoded counts DevTools gives are not the body's alone for every resource type: an
    /// image's is its body, a stylesheet's its body and headers.)
    pub bytes: Option<u64>,
    /// Why it failed (`net::ERR_...`), if it did.
    pub failed: Option<String>,
}

/// What a page load recorded.
#[derive(Debug, Clone, Default)]
pub struct Load {
    /// In the order the browser started them.
    pub requests: Vec<Request>,
    /// The main frame's id: requests of other frames belong to those frames' pages.
    pub main_frame: String,
    /// The page timeout passed before the network was idle: the requests without a result were
    /// still loading.
    pub timed_out: bool,
}

/// Why a page gave no record.
#[derive(Debug)]
pub enum LoadError {
    /// The browser failed (exited, stopped answering): the crawl cannot go on with it.
    Browser(String),
    /// The page could not be loaded (its renderer crashed): the browser goes on.
    Page(String),
    /// The stop flag was raised.
    Stopped,
}

/// A request being recorded: its place in `Load::requests`, its body bytes so far, its
/// headers' bytes, whether it counts as in flight until it ends.
struct Pending {
    index: usize,
    /// The session its last event came on: a worker that ends leaves its requests unfinished.
    session: String,
    body: u64,
    headers: u64,
    counted: bool,
    done: bool,
}

/// The targets the tab attaches to: dedicated and shared workers (a service worker outlives
/// the tab, and a frame of another site is a page of its own).
fn auto_attach() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
           "filter": [{"type": "worker"}, {"type": "shared_worker"}]})
}

/// The recorder of one tab's events.
struct Recorder {
    /// The tab's session.
    session: String,
    /// The sessions of its workers, each with the frame its requests belong to (that of the
    /// request for its script; the main frame's, empty here, when none was seen).
    workers: HashMap<String, String>,
    /// Workers attached and waiting for their network events to be turned on.
    starting: Vec<String>,
    load: Load,
    by_id: HashMap<String, Pending>,
    in_flight: usize,
    loaded: bool,
    /// The tab's renderer crashed.
    crashed: bool,
    last_event: Instant,
}

impl Browser {
    /// Loads `url` in a new tab, records its requests, and closes the tab.
    pub fn load(&mut self, url: &str, stop: Option<&AtomicBool>) -> Result<Load, LoadError> {
        let deadline = Instant::now() + self.opts.page_timeout;
        let fail = |b: &Browser, e: CdpError| LoadError::Browser(b.error(url, &e));
        let ignore = &mut |_: &Message| {};
        let target = self
            .cdp
            .call(
                None,
                "Target.createTarget",
                json!({"url": "about:blank"}),
                deadline,
                ignore,
            )
            .map_err(|e| fail(self, e))?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_owned();
        let result = self.record(&target_id, url, deadline, stop);
        // Closed whatever happened, unless the browser is gone.
        if !matches!(&result, Err(LoadError::Browser(_))) {
            let close = Instant::now() + CLOSE_LIMIT;
            self.cdp
                .call(
                    None,
                    "Target.closeTarget",
                    json!({"targetId": target_id}),
                    close,
                    ignore,
                )
                .map_err(|e| fail(self, e))?;
        }
        result
    }

    fn record(
        &mut self,
        target_id: &str,
        url: &str,
        deadline: Instant,
        stop: Option<&AtomicBool>,
    ) -> Result<Load, LoadError> {
        let fail = |b: &Browser, e: CdpError| LoadError::Browser(b.error(url, &e));
        let attached = self
            .cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
                deadline,
                &mut |_| {},
            )
            .map_err(|e| fail(self, e))?;
        let mut rec = Recorder::new(attached["sessionId"].as_str().unwrap_or_default());
        let session = rec.session.clone();
        let s = Some(session.as_str());
        // Every page as a first visit: each page's workload lists every file it needs.
        for (method, params) in [
            ("Network.enable", json!({})),
            ("Network.setCacheDisabled", json!({"cacheDisabled": true})),
            ("Page.enable", json!({})),
            ("Inspector.enable", json!({})),
            ("Target.setAutoAttach", auto_attach()),
        ] {
            self.call_recording(&mut rec, s, method, params, deadline, None)
                .map_err(|e| fail(self, e))?;
        }
        let navigated = self.call_recording(
            &mut rec,
            s,
            "Page.navigate",
            json!({"url": url}),
            deadline,
            stop,
        );
        let nav = match navigated {
            Ok(nav) => nav,
            // Answered once the document's response has come: a slow page, not a dead browser.
            Err(CdpError::Timeout(_)) => {
                return Err(LoadError::Page(
                    "no response to the page within --page-timeout".into(),
                ))
            }
            Err(CdpError::Stopped) => return Err(LoadError::Stopped),
            Err(e) => return Err(fail(self, e)),
        };
        rec.load.main_frame = nav["frameId"].as_str().unwrap_or_default().to_owned();
        // The load event (or the timeout), then the scroll, then an idle network.
        self.wait(&mut rec, deadline, stop, |r| r.loaded || r.crashed)
            .map_err(|e| match e {
                Some(e) => fail(self, e),
                None => LoadError::Stopped,
            })?;
        if Instant::now() < deadline && !rec.crashed {
            let scrolled = self.call_recording(
                &mut rec,
                s,
                "Runtime.evaluate",
                json!({"expression": SCROLL_TO_END, "awaitPromise": true}),
                deadline,
                stop,
            );
            match scrolled {
                Ok(_) | Err(CdpError::Timeout(_)) | Err(CdpError::Refused { .. }) => {}
                Err(CdpError::Stopped) => return Err(LoadError::Stopped),
                Err(e) => return Err(fail(self, e)),
            }
        }
        self.wait(&mut rec, deadline, stop, |r| {
            r.crashed || (r.in_flight == 0 && r.last_event.elapsed() >= IDLE)
        })
        .map_err(|e| match e {
            Some(e) => fail(self, e),
            None => LoadError::Stopped,
        })?;
        if rec.crashed {
            return Err(LoadError::Page("the page's renderer crashed".into()));
        }
        rec.load.timed_out = !(rec.in_flight == 0 && rec.last_event.elapsed() >= IDLE);
        Ok(rec.into_load())
    }

    /// Sends a command and waits for its result until `deadline` (or the stop flag), each
    /// event meanwhile recorded, as in [`Browser::wait`].
    fn call_recording(
        &mut self,
        rec: &mut Recorder,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
        stop: Option<&AtomicBool>,
    ) -> Result<Value, CdpError> {
        let id = self.cdp.send(session, method, params)?;
        loop {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(CdpError::Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CdpError::Timeout(method.to_owned()));
            }
            let Some(m) = self.cdp.recv((now + STOP_POLL).min(deadline))? else {
                continue;
            };
            match m.answer(id, method) {
                Some(result) => return result,
                None => self.record_event(rec, &m)?,
            }
        }
    }

    /// Records one event, then lets the workers it attached run, their network events on (and
    /// their own workers attached): sent without waiting for the answers, which come as events
    /// of the worker's session and are passed over, so that no wait stops on a worker that ended
    /// meanwhile.
    fn record_event(&mut self, rec: &mut Recorder, m: &Message) -> Result<(), CdpError> {
        rec.event(m);
        for worker in std::mem::take(&mut rec.starting) {
            let w = Some(worker.as_str());
            self.cdp.send(w, "Network.enable", json!({}))?;
            self.cdp.send(
                w,
                "Network.setCacheDisabled",
                json!({"cacheDisabled": true}),
            )?;
            self.cdp.send(w, "Target.setAutoAttach", auto_attach())?;
            self.cdp
                .send(w, "Runtime.runIfWaitingForDebugger", json!({}))?;
        }
        Ok(())
    }

    /// Feeds events to `rec` until `done` holds, the deadline passes, or the stop flag is up.
    fn wait(
        &mut self,
        rec: &mut Recorder,
        deadline: Instant,
        stop: Option<&AtomicBool>,
        done: impl Fn(&Recorder) -> bool,
    ) -> Result<(), Option<CdpError>> {
        while !done(rec) {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(None);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            let until = (now + STOP_POLL).min(deadline);
            if let Some(m) = self.cdp.recv(until).map_err(Some)? {
                self.record_event(rec, &m).map_err(Some)?;
            }
        }
        Ok(())
    }
}

impl Recorder {
    fn new(session: &str) -> Recorder {
        Recorder {
            session: session.to_owned(),
            workers: HashMap::new(),
            starting: Vec::new(),
            load: Load::default(),
            by_id: HashMap::new(),
            in_flight: 0,
            loaded: false,
            crashed: false,
            last_event: Instant::now(),
        }
    }

    /// The record, a worker's requests whose frame was not known given to the page.
    fn into_load(mut self) -> Load {
        let main = self.load.main_frame.clone();
        for r in self.load.requests.iter_mut().filter(|r| r.frame.is_empty()) {
            r.frame.clone_from(&main);
        }
        self.load
    }

    fn event(&mut self, m: &Message) {
        let Some(session) = m.session() else {
            return;
        };
        let tab = session == self.session;
        if !tab && !self.workers.contains_key(session) {
            return;
        }
        self.last_event = Instant::now();
        let p = m.params();
        let id = p["requestId"].as_str().unwrap_or_default();
        if let Some(r) = self.by_id.get_mut(id) {
            r.session = session.to_owned();
        }
        match m.method().unwrap_or_default() {
            "Page.loadEventFired" if tab => self.loaded = true,
            "Inspector.targetCrashed" if tab => self.crashed = true,
            "Target.attachedToTarget" => self.attached(p),
            "Target.detachedFromTarget" => self.detached(p),
            "Network.requestWillBeSent" => self.will_be_sent(session, id, p),
            "Network.responseReceived" => {
                if let Some(r) = self.by_id.get_mut(id) {
                    let response = &p["response"];
                    r.headers = count(&response["encodedDataLength"]);
                    let req = &mut self.load.requests[r.index];
                    req.status = response["status"]
                        .as_u64()
                        .and_then(|s| u16::try_from(s).ok());
                    req.content_type = content_type(response);
                }
            }
            "Network.dataReceived" => {
                if let Some(r) = self.by_id.get_mut(id).filter(|r| !r.done) {
                    r.body += count(&p["dataLength"]);
                }
            }
            "Network.loadingFinished" => {
                if let Some(r) = self.by_id.get_mut(id).filter(|r| !r.done) {
                    r.done = true;
                    self.in_flight -= usize::from(r.counted);
                    // A prefetch's body is kept for later, never read by the page: no data
                    // events. Its count is then the encoded one, less the headers.
                    let bytes = match r.body {
                        0 => count(&p["encodedDataLength"]).saturating_sub(r.headers),
                        n => n,
                    };
                    self.load.requests[r.index].bytes = Some(bytes);
                }
            }
            "Network.loadingFailed" => {
                if let Some(r) = self.by_id.get_mut(id).filter(|r| !r.done) {
                    r.done = true;
                    self.in_flight -= usize::from(r.counted);
                    let why = p["blockedReason"]
                        .as_str()
                        .map(|b| format!("blocked ({b})"))
                        .or_else(|| p["errorText"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| "failed".into());
                    self.load.requests[r.index].failed = Some(why);
                }
            }
            _ => {}
        }
    }

    /// A worker started: its requests are recorded from now on, in the frame of its script's.
    fn attached(&mut self, p: &Value) {
        let Some(session) = p["sessionId"].as_str() else {
            return;
        };
        let script = p["targetInfo"]["url"].as_str().unwrap_or_default();
        let frame = self
            .load
            .requests
            .iter()
            .rev()
            .find(|r| r.url == script)
            .map(|r| r.frame.clone())
            .unwrap_or_default();
        self.workers.insert(session.to_owned(), frame);
        self.starting.push(session.to_owned());
    }

    /// A worker ended: what it had in flight will not finish (nor be told to have failed).
    fn detached(&mut self, p: &Value) {
        let Some(session) = p["sessionId"].as_str() else {
            return;
        };
        if self.workers.remove(session).is_none() {
            return;
        }
        for r in self.by_id.values_mut() {
            if r.session == session && !r.done {
                r.done = true;
                self.in_flight -= usize::from(r.counted);
                self.load.requests[r.index].failed = Some("its worker ended first".into());
            }
        }
    }

    fn will_be_sent(&mut self, session: &str, id: &str, p: &Value) {
        let url = p["request"]["url"].as_str().unwrap_or_default();
        if let Some(r) = self.by_id.get(id).filter(|r| !r.done) {
            // A redirect: the same request goes on at another URL.
            if p.get("redirectResponse").is_some() {
                let req = &mut self.load.requests[r.index];
                let from = std::mem::replace(&mut req.url, url.to_owned());
                req.redirected_from.get_or_insert(from);
            }
            return;
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return; // data:, blob: and the like cost no request
        }
        let resource_type = p["type"].as_str().unwrap_or("Other").to_owned();
        let initiator = initiator(&resource_type, &p["initiator"], &p["request"]);
        // A document's end is not waited on: the main frame's is the load event's, and a
        // cross-site frame's (a process of its own) is told to the frame's target, not this
        // one, so it would hold every such page to the page timeout. What a frame loads
        // afterwards is counted as it comes. Nor are streams that are open by design (an
        // EventSource, a WebSocket): they never finish, and would hold every page of a site
        // that opens one to the page timeout; they are listed as requested.
        let counted = !matches!(
            resource_type.as_str(),
            "Document" | "EventSource" | "WebSocket"
        );
        let frame = match p["frameId"].as_str() {
            Some(f) => f.to_owned(),
            None => self.workers.get(session).cloned().unwrap_or_default(),
        };
        self.by_id.insert(
            id.to_owned(),
            Pending {
                index: self.load.requests.len(),
                session: session.to_owned(),
                body: 0,
                headers: 0,
                counted,
                done: false,
            },
        );
        self.in_flight += usize::from(counted);
        self.load.requests.push(Request {
            url: url.to_owned(),
            redirected_from: None,
            frame,
            resource_type,
            initiator,
            status: None,
            content_type: None,
            bytes: None,
            failed: None,
        });
    }
}

/// What started a request: a prefetch (by its resource type or its `Purpose` header, whoever
/// asked for it), a preload (`<link rel=preload>` or `modulepreload`, which DevTools' initiator
/// calls the parser's), else DevTools' initiator type: parser, script, preload, or other.
fn initiator(resource_type: &str, initiator: &Value, request: &Value) -> &'static str {
    let purpose = request["headers"]
        .as_object()
        .into_iter()
        .flatten()
        .any(|(k, v)| {
            matches!(k.to_ascii_lowercase().as_str(), "purpose" | "sec-purpose")
                && v.as_str().is_some_and(|v| v.contains("prefetch"))
        });
    if resource_type == "Prefetch" || purpose {
        return "prefetch";
    }
    if request["isLinkPreload"].as_bool() == Some(true) {
        return "preload";
    }
    match initiator["type"].as_str() {
        Some("parser") => "parser",
        Some("script") => "script",
        Some("preload") => "preload",
        _ => "other",
    }
}

/// The response's Content-Type header as sent, else the MIME type Chromium took from it.
fn content_type(response: &Value) -> Option<String> {
    let header = response["headers"].as_object().and_then(|h| {
        h.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .and_then(|(_, v)| v.as_str())
    });
    header
        .or_else(|| response["mimeType"].as_str().filter(|m| !m.is_empty()))
        .map(str::to_owned)
}

/// A byte count as DevTools writes it (a JSON number, at times with a fraction).
fn count(v: &Value) -> u64 {
    v.as_f64().map_or(0, |n| n.max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn byte_counts_may_have_a_fraction() {
        assert_eq!(count(&json!(253)), 253);
        assert_eq!(count(&json!(253.0)), 253);
        assert_eq!(count(&json!(null)), 0);
        assert_eq!(count(&json!(-1)), 0);
    }
}
