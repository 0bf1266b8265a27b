//! The allocation tests' listener: 127.0.0.1:0, each connection served on its own thread by the
//! test's own server function (one that allocates nothing per request, unlike the shared test
//! server), until the server is stopped. Every wait is bounded: the server function returns
//! once the stop flag is set (its reads time out to look at it), and stopping wakes the accept
//! loop with a connection of its own, then joins every thread.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct PerConnection {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl PerConnection {
    /// Listens and serves every connection with `serve(connection, stop)`.
    pub fn start(serve: fn(TcpStream, &AtomicBool)) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for s in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(s) = s else { continue };
                let st = st.clone();
                conns.push(std::thread::spawn(move || serve(s, &st)));
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

    /// Stops every connection's thread and the accept loop, and waits for them.
    pub fn stop(mut self) {
        let accept = self.wake();
        accept.join().unwrap();
    }

    fn wake(&mut self) -> JoinHandle<()> {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        self.accept.take().expect("the accept loop is joined once")
    }
}

impl Drop for PerConnection {
    fn drop(&mut self) {
        // A test that panics before `stop` still ends its threads.
        if self.accept.is_some() {
            let _ = self.wake().join();
        }
    }
}
