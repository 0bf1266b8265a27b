//! A tab's DevTools events turned into its requests: each request from `requestWillBeSent` to
//! its end (finished, failed, or its worker gone), its redirects, status, type, bytes and what
//! started it; the workers the tab and its workers attach to, their requests given to the frame
//! that started them; and what `page.rs` waits on (in flight, the load event, a crash, the time
//! of the last event).

use super::{Load, Request};
use crate::browser::cdp::Message;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Instant;

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
    /// The document (DevTools' loader) it was made for: when its frame commits another, its
    /// events stop coming.
    loader: String,
    /// What the network service saw of its response, which comes even when the document's own
    /// events do not.
    said: Said,
}

/// The status and `Content-Length` the network service saw (`responseReceivedExtraInfo`).
#[derive(Clone, Copy, Default)]
struct Said {
    status: Option<u16>,
    length: Option<u64>,
}

impl Said {
    fn of(p: &Value) -> Said {
        let header = |name: &str| {
            p["headers"]
                .as_object()
                .into_iter()
                .flatten()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.as_str())
                .map(str::trim)
        };
        // A compressed body's length is not the size bench reads (it sends no
        // Accept-Encoding): no size is known then.
        let encoded = header("content-encoding")
            .is_some_and(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"));
        Said {
            status: p["statusCode"].as_u64().and_then(|s| u16::try_from(s).ok()),
            length: header("content-length")
                .and_then(|v| v.parse().ok())
                .filter(|_| !encoded),
        }
    }
}

/// The recorder of one tab's events.
pub(super) struct Recorder {
    /// The tab's session.
    pub(super) session: String,
    /// The sessions of its workers, each with the frame its requests belong to (that of the
    /// request for its script; the main frame's, empty here, when none was seen).
    workers: HashMap<String, String>,
    /// Workers attached and waiting for their network events to be turned on.
    pub(super) starting: Vec<String>,
    pub(super) load: Load,
    by_id: HashMap<String, Pending>,
    /// What the network service saw of responses whose requests are not yet told: its events
    /// come by another way than the renderer's, in no set order with them, so a response's can
    /// come before its request's `requestWillBeSent`. Kept for the page, as `by_id` is.
    said_early: HashMap<String, Said>,
    /// Each frame's parent (`Page.frameAttached`): a frame whose document is replaced takes
    /// its child frames with it.
    parents: HashMap<String, String>,
    /// The document (loader) each frame last committed.
    committed: HashMap<String, String>,
    pub(super) in_flight: usize,
    pub(super) loaded: bool,
    /// The tab's renderer crashed.
    pub(super) crashed: bool,
    /// A JavaScript dialog (alert, confirm, prompt, beforeunload) opened and not yet answered:
    /// the text a prompt is answered with (its default).
    pub(super) dialog: Option<String>,
    /// Dialogs the page opened.
    pub(super) dialogs: u64,
    pub(super) last_event: Instant,
}

impl Recorder {
    pub(super) fn new(session: &str) -> Recorder {
        Recorder {
            session: session.to_owned(),
            workers: HashMap::new(),
            starting: Vec::new(),
            load: Load::default(),
            by_id: HashMap::new(),
            said_early: HashMap::new(),
            parents: HashMap::new(),
            committed: HashMap::new(),
            in_flight: 0,
            loaded: false,
            crashed: false,
            dialog: None,
            dialogs: 0,
            last_event: Instant::now(),
        }
    }

    /// The record, a worker's requests whose frame was not known given to the page.
    pub(super) fn into_load(mut self) -> Load {
        let main = self.load.main_frame.clone();
        for r in self.load.requests.iter_mut().filter(|r| r.frame.is_empty()) {
            r.frame.clone_from(&main);
        }
        self.load
    }

    pub(super) fn event(&mut self, m: &Message) {
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
            // Its page's parser, script and load event wait on the answer.
            "Page.javascriptDialogOpening" if tab => {
                self.dialogs += 1;
                self.dialog = Some(p["defaultPrompt"].as_str().unwrap_or_default().to_owned());
            }
            "Page.frameAttached" if tab => {
                if let (Some(f), Some(parent)) =
                    (p["frameId"].as_str(), p["parentFrameId"].as_str())
                {
                    self.parents.insert(f.to_owned(), parent.to_owned());
                }
            }
            "Page.frameNavigated" if tab => self.navigated(&p["frame"]),
            "Network.responseReceivedExtraInfo" => {
                let said = Said::of(p);
                let Some(r) = self.by_id.get_mut(id) else {
                    // Before its request: given to it when it is told.
                    if !id.is_empty() {
                        self.said_early.insert(id.to_owned(), said);
                    }
                    return;
                };
                r.said = said;
                // Told after its document was replaced: what the cut request lacked.
                let req = &mut self.load.requests[r.index];
                if req.cut_by_navigation && req.bytes.is_none() {
                    req.status = req.status.or(said.status);
                    req.bytes = said.length;
                    if req.bytes.is_some() {
                        req.failed = None;
                    }
                }
            }
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

    /// A frame committed a document: the requests its previous document had in flight, and
    /// those of the frames within that document, get no more events (the documents, and their
    /// end and data events, are gone with it), though the server may have answered them. Each
    /// is ended here, with the status and `Content-Length` the network service saw, if it saw
    /// them; a body that had begun to come with no length to tell its size is no file.
    fn navigated(&mut self, frame: &Value) {
        let (Some(id), Some(loader)) = (frame["id"].as_str(), frame["loaderId"].as_str()) else {
            return;
        };
        if let Some(parent) = frame["parentId"].as_str() {
            self.parents.insert(id.to_owned(), parent.to_owned());
        }
        // The frames within are those of a document this one replaces: none at a frame's
        // first commit, nor when the same document is told again.
        let previous = self.committed.insert(id.to_owned(), loader.to_owned());
        let replaces = previous.is_some_and(|p| p != loader);
        for r in self.by_id.values_mut() {
            let req = &mut self.load.requests[r.index];
            let replaced = req.frame == id && !r.loader.is_empty() && r.loader != loader;
            if r.done || !(replaced || (replaces && within(&self.parents, &req.frame, id))) {
                continue;
            }
            r.done = true;
            self.in_flight -= usize::from(r.counted);
            req.cut_by_navigation = true;
            req.status = req.status.or(r.said.status);
            req.bytes = r.said.length;
            if req.bytes.is_none() && r.body > 0 {
                req.failed = Some(format!(
                    "cut off when the page navigated away, {} bytes of its body come and no \
                     Content-Length to tell its size",
                    r.body
                ));
            }
        }
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
                // Each hop was a request of its own (Chromium follows 20 at most).
                req.redirects.push(from);
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
                loader: p["loaderId"].as_str().unwrap_or_default().to_owned(),
                said: self.said_early.remove(id).unwrap_or_default(),
            },
        );
        self.in_flight += usize::from(counted);
        self.load.requests.push(Request {
            url: url.to_owned(),
            redirects: Vec::new(),
            frame,
            resource_type,
            initiator,
            status: None,
            content_type: None,
            bytes: None,
            failed: None,
            cut_by_navigation: false,
        });
    }
}

/// Whether `frame` lies within `ancestor` (its child, or a child's child...).
fn within(parents: &HashMap<String, String>, frame: &str, ancestor: &str) -> bool {
    let mut f = frame;
    // Bounded: a malformed chain of parents cannot loop.
    for _ in 0..=parents.len() {
        match parents.get(f) {
            Some(parent) if parent == ancestor => return true,
            Some(parent) => f = parent,
            None => return false,
        }
    }
    false
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
mod tests;
