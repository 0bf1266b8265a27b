//! The pieces of a test server that writes HTTP/2 frame by frame (so that it can misbehave as
//! a library would not let it): frame types and flags, a frame's bytes, a `:status: 200`
//! header block, and a listener that hands each connection to the test's own `serve` on a
//! thread of its own until the [`RawServer`] is dropped.

#![allow(dead_code)] // each test binary uses its own subset

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

/// Frame types and flags, a frame's bytes (the workspace's raw HTTP/2 writer), and a
/// `:status: 200` header block with a `content-length`.
#[allow(unused_imports)] // each test binary uses its own subset
pub use test_support::h2::{
    frame, status_200_block as head, ACK, DATA, END_HEADERS, END_STREAM, HEADERS, PING, RST_STREAM,
    SETTINGS, WINDOW_UPDATE,
};

/// A listening test server; dropping it stops the accepting thread (and tells each
/// connection's `serve` by its `stop` flag).
pub struct RawServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

/// Listens on 127.0.0.1:0 and runs `serve(connection, stop)` for each connection.
pub fn start(serve: impl Fn(TcpStream, &AtomicBool) + Clone + Send + 'static) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            if stop2.load(Ordering::Relaxed) {
                return;
            }
            let Ok(conn) = conn else { continue };
            let (stop, serve) = (stop2.clone(), serve.clone());
            thread::spawn(move || serve(conn, &stop));
        }
    });
    RawServer { addr, stop }
}
