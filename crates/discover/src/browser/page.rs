//! One page in a new tab: its network events recorded from before the navigation until the
//! network has been idle for [`IDLE`] after the load event and a scroll to the page's end, all
//! within the page timeout.
//!
//! A worker's requests (what its script fetches or imports, and the end of its own script's
//! request, which the tab's target sees start) are told to the worker's own DevTools target, not
//! the tab's: the tab attaches to its workers as they start (`Target.setAutoAttach`, flattened
//! into the one pipe, each worker held until its network events are on), and a worker to the
//! workers it starts.
//!
//! This file drives the tab (open, navigate, scroll, wait, close); what its events say is
//! recorded in `page/recorder.rs`.

mod recorder;

use super::cdp::{CdpError, Message, STOP_POLL};
use super::Browser;
use recorder::Recorder;
use serde_json::{json, Value};
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
    /// Every URL a redirect led on from, in order, the first the URL first requested: each a
    /// request the server at it received.
    pub redirects: Vec<String>,
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
    /// Its document was replaced (the frame navigated) before it ended: its status and bytes
    /// are what the network service saw (the `Content-Length`), if anything.
    pub cut_by_navigation: bool,
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
    /// JavaScript dialogs the page opened (each answered OK).
    pub dialogs: u64,
}

impl Load {
    /// The requests `origin`'s server received for the page: each redirect a request of its
    /// own, and none that Chromium blocked before it was sent. Its requests to other origins are
    /// the other count.
    pub fn requests_to(&self, origin: &url::Origin) -> (u64, u64) {
        let (mut here, mut elsewhere) = (0, 0);
        let sent = self.requests.iter().flat_map(|r| {
            let blocked = r
                .failed
                .as_deref()
                .is_some_and(|f| f.starts_with("blocked"));
            let last = (!blocked).then_some(r.url.as_str());
            r.redirects.iter().map(String::as_str).chain(last)
        });
        for url in sent {
            match url::Url::parse(url) {
                Ok(u) if u.origin() == *origin => here += 1,
                _ => elsewhere += 1,
            }
        }
        (here, elsewhere)
    }
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

/// The targets the tab attaches to: dedicated and shared workers (a service worker outlives
/// the tab, and a frame of another site is a page of its own).
fn auto_attach() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
           "filter": [{"type": "worker"}, {"type": "shared_worker"}]})
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
        rec.load.dialogs = rec.dialogs;
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

    /// Records one event (a JavaScript dialog it opens answered at once, sent without waiting
    /// for the answer as below), then lets the workers it attached run, their network events on (and
    /// their own workers attached): sent without waiting for the answers, which come as events
    /// of the worker's session and are passed over, so that no wait stops on a worker that ended
    /// meanwhile.
    fn record_event(&mut self, rec: &mut Recorder, m: &Message) -> Result<(), CdpError> {
        rec.event(m);
        if let Some(text) = rec.dialog.take() {
            // Answered as a reader who clicks OK would (a prompt with its default text): the
            // page goes on; a `beforeunload` lets the page go where it was going.
            let session = Some(rec.session.as_str());
            let answer = json!({"accept": true, "promptText": text});
            self.cdp
                .send(session, "Page.handleJavaScriptDialog", answer)?;
        }
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
