//! The DevTools protocol over `--remote-debugging-pipe`: Chromium reads commands from its fd 3
//! and writes responses and events to its fd 4, each a JSON object ended by a NUL byte.
//!
//! A thread reads the browser's messages and hands them over a channel, so that every wait here
//! is a `recv_timeout` with a deadline: a browser that stops answering is a timeout, and one that
//! exits (its end of the pipe closed) is [`CdpError::Closed`] at once, never a hang.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How often a stoppable wait looks at its stop flag.
pub const STOP_POLL: Duration = Duration::from_millis(100);

/// One message from the browser: a command's response (`id`), or an event (`method`); with the
/// `sessionId` of the target it came from, if any.
#[derive(Debug, Clone)]
pub struct Message(pub Value);

impl Message {
    /// The id of the command this responds to; `None` for an event.
    pub fn id(&self) -> Option<u64> {
        self.0.get("id").and_then(Value::as_u64)
    }

    /// The event's name (`Network.requestWillBeSent`, ...); `None` for a response.
    pub fn method(&self) -> Option<&str> {
        self.0.get("method").and_then(Value::as_str)
    }

    /// The session of the target (a tab, a worker) it came from; `None` for the browser's own.
    pub fn session(&self) -> Option<&str> {
        self.0.get("sessionId").and_then(Value::as_str)
    }

    /// The event's parameters; `Null` when it has none (and for a response).
    pub fn params(&self) -> &Value {
        self.0.get("params").unwrap_or(&Value::Null)
    }
}

/// Why a conversation with the browser ended.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CdpError {
    /// The browser's end of the pipe closed: it exited or crashed.
    #[error("Chromium closed its DevTools pipe (it exited or crashed)")]
    Closed,
    /// No response to the command (the value: its method) before the deadline.
    #[error("Chromium did not answer {0} in time")]
    Timeout(String),
    /// The browser answered the command with an error.
    #[error("Chromium refused {method}: {message}")]
    Refused {
        /// The command's method.
        method: String,
        /// The error's message, as the browser gave it.
        message: String,
    },
    /// The command could not be written to the pipe (the value: the I/O error).
    #[error("writing to Chromium's DevTools pipe: {0}")]
    Write(String),
    /// The caller's stop flag was raised while waiting (`Cdp::call_until`).
    #[error("stopped")]
    Stopped,
}

/// A client of one browser's pipe.
pub struct Cdp<W: Write> {
    to_browser: W,
    from_browser: Receiver<Message>,
    next_id: u64,
}

impl<W: Write> Cdp<W> {
    /// Talks over `to_browser` (the browser's fd 3) and `from_browser` (its fd 4).
    pub fn new(to_browser: W, from_browser: impl Read + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from_browser);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return, // the sender drops: Closed
                    Ok(_) => {}
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                // A message that is not JSON is not one of the protocol's: skipped.
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(Message(v)).is_err() {
                        return;
                    }
                }
            }
        });
        Cdp {
            to_browser,
            from_browser: rx,
            next_id: 1,
        }
    }

    /// Sends a command (to the target of `session`, or the browser) and returns its id.
    pub fn send(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<u64, CdpError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s.to_owned());
        }
        let mut bytes = serde_json::to_vec(&msg).expect("a JSON value serializes");
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .and_then(|()| self.to_browser.flush())
            .map_err(|e| CdpError::Write(e.to_string()))?;
        Ok(id)
    }

    /// The next message, waiting until `deadline` at most: `Ok(None)` when it passed.
    pub fn recv(&mut self, deadline: Instant) -> Result<Option<Message>, CdpError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.from_browser.recv_timeout(wait) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(CdpError::Closed),
        }
    }

    /// Sends a command and waits for its result until `deadline`; events that come meanwhile
    /// go to `on_event`.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
        on_event: &mut dyn FnMut(&Message),
    ) -> Result<Value, CdpError> {
        self.call_until(session, method, params, deadline, None, on_event)
    }

    /// [`Cdp::call`], waiting in slices of `STOP_POLL` so that a raised `stop` ends the wait
    /// (`CdpError::Stopped`): a command such as a navigation may take the whole page timeout.
    pub fn call_until(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
        stop: Option<&AtomicBool>,
        on_event: &mut dyn FnMut(&Message),
    ) -> Result<Value, CdpError> {
        let id = self.send(session, method, params)?;
        loop {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(CdpError::Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CdpError::Timeout(method.to_owned()));
            }
            let until = if stop.is_some() {
                (now + STOP_POLL).min(deadline)
            } else {
                deadline
            };
            let Some(m) = self.recv(until)? else {
                continue;
            };
            match m.answer(id, method) {
                Some(result) => return result,
                None => on_event(&m),
            }
        }
    }
}

impl Message {
    /// The result of command `id` (named `method`, for the error) if this is its response;
    /// `None` for any other message.
    pub fn answer(&self, id: u64, method: &str) -> Option<Result<Value, CdpError>> {
        if self.id() != Some(id) {
            return None;
        }
        if let Some(err) = self.0.get("error") {
            return Some(Err(CdpError::Refused {
                method: method.to_owned(),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error")
                    .to_owned(),
            }));
        }
        Some(Ok(self.0.get("result").cloned().unwrap_or(Value::Null)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn messages_are_nul_delimited_and_a_closed_pipe_is_an_error_not_a_hang() {
        let (from_browser, mut browser_out) = std::io::pipe().unwrap();
        let mut sent = Vec::new();
        {
            let mut cdp = Cdp::new(&mut sent, from_browser);
            let soon = || Instant::now() + Duration::from_secs(10);
            browser_out
                .write_all(b"{\"method\":\"E\",\"params\":{\"a\":1}}\0not json\0{\"id\":1,\"result\":{\"ok\":true}}\0")
                .unwrap();
            let mut events = Vec::new();
            let result = cdp
                .call(Some("S"), "M", json!({}), soon(), &mut |m| {
                    events.push(m.method().unwrap_or("").to_owned())
                })
                .unwrap();
            assert_eq!(result, json!({"ok": true}));
            assert_eq!(events, ["E"]);
            // Nothing more comes: the deadline ends the wait.
            let past = Instant::now() + Duration::from_millis(20);
            assert!(cdp.recv(past).unwrap().is_none());
            drop(browser_out);
            let err = cdp.call(None, "N", json!({}), soon(), &mut |_| {});
            assert_eq!(err.unwrap_err(), CdpError::Closed);
        }
        let text = String::from_utf8(sent).unwrap();
        let msgs: Vec<&str> = text.split_terminator('\0').collect();
        assert_eq!(msgs.len(), 2, "{text}");
        let first: Value = serde_json::from_str(msgs[0]).unwrap();
        assert_eq!(first["sessionId"], "S");
        assert_eq!(first["method"], "M");
        assert_eq!(first["id"], 1);
    }

    #[test]
    fn a_raised_stop_flag_ends_a_call_the_browser_does_not_answer() {
        let (from_browser, _browser_out) = std::io::pipe().unwrap();
        let mut sent = Vec::new();
        let mut cdp = Cdp::new(&mut sent, from_browser);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let raise = stop.clone();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            raise.store(true, Ordering::Relaxed);
        });
        let far = Instant::now() + Duration::from_secs(60);
        let started = Instant::now();
        let err = cdp.call_until(
            None,
            "Page.navigate",
            json!({}),
            far,
            Some(&stop),
            &mut |_| {},
        );
        raiser.join().unwrap();
        assert_eq!(err.unwrap_err(), CdpError::Stopped);
        // Well before the deadline: the flag, not the minute, ended it.
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
