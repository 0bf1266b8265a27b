//! A listener on 127.0.0.1:0 whose every connection is handled on its own thread by the test's
//! own handler, until stopped: the allocation tests' servers (which allocate nothing per
//! request, unlike the shared test server) and the TLS tests' rustls servers. Every wait is
//! bounded: each connection reads with a 20 ms timeout, so that its handler can look at the
//! stop flag and return once it is set, and stopping (or dropping) wakes the accept loop with a
//! connection of its own, then joins every thread.

#![allow(dead_code)] // each test binary uses its own subset

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
