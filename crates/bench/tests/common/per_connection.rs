//! A listener on 127.0.0.1:0 whose every connection is handled on its own thread by the test's
//! own handler, until stopped: the allocation tests' servers (which allocate nothing per
//! request, unlike the shared test server) and the TLS tests' rustls servers. Every wait is
//! bounded: each connection reads with a 20 ms timeout, so that its handler can look at the
//! stop flag and return once it is set, and stopping (or dropping) wakes the accept loop with a
//! connection of its own, then joins every thread.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct PerConnection {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl PerConnection {
    /// Listens and handles every connection with `handle(connection, stop)`.
    pub fn start(handle: impl Fn(TcpStream, &AtomicBool) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let handle = Arc::new(handle);
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for s in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(s) = s else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
                let (h, st) = (handle.clone(), st.clone());
                conns.push(std::thread::spawn(move || h(s, &st)));
            }
            for c in conns {
                let _ = c.join();
            }
        });
        PerConnection {
            addr,
            stop,
            accept: Some(accept),
        }
    }

    /// Stops every connection's thread and the accept loop, and waits for them; a panic of the
    /// accept loop is the test's.
    pub fn stop(mut self) {
        self.wake().join().unwrap();
    }

    fn wake(&mut self) -> JoinHandle<()> {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        self.accept.take().expect("the accept loop is joined once")
    }
}

impl Drop for PerConnection {
    fn drop(&mut self) {
        // A test that ends (or panics) without `stop` still ends its threads.
        if self.accept.is_some() {
            let _ = self.wake().join();
        }
    }
}

/// Reads `s` until the peer closes, a read fails, `on_read` says to stop (false) or `stop` is
/// set, handing it each read's bytes. A read that times out (the 20 ms set on every connection
/// here) only looks at `stop` again. `buf` is the caller's: nothing is allocated per read.
pub fn read_until_stopped<S: Read>(
    s: &mut S,
    stop: &AtomicBool,
    buf: &mut [u8],
    mut on_read: impl FnMut(&mut S, &[u8]) -> bool,
) {
    while !stop.load(Ordering::Relaxed) {
        let n = match s.read(buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        };
        if !on_read(s, &buf[..n]) {
            return;
        }
    }
}

/// Where request heads end (their CRLFCRLF, which may straddle reads), byte by byte and without
/// a buffer.
#[derive(Debug, Default)]
pub struct HeadEnds {
    /// Bytes of "\r\n\r\n" matched so far.
    matched: usize,
}

impl HeadEnds {
    /// Whether `b` ends a request head.
    pub fn at(&mut self, b: u8) -> bool {
        let want = b"\r\n\r\n"[self.matched];
        self.matched = if b == want {
            self.matched + 1
        } else {
            usize::from(b == b'\r')
        };
        let ended = self.matched == 4;
        if ended {
            self.matched = 0;
        }
        ended
    }
}
