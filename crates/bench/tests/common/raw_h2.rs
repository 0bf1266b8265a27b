//! The pieces of a test server that writes HTTP/2 frame by frame (so that it can misbehave as
//! a library would not let it): frame types and flags, a frame's bytes, a `:status: 200`
//! header block, and a listener that hands each connection to the test's own `serve` on a
//! thread of its own until the [`RawServer`] is dropped.

#![allow(dead_code)] // each test binary uses its own subset

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const WINDOW_UPDATE: u8 = 8;
pub const END_STREAM: u8 = 1;
pub const END_HEADERS: u8 = 4;
pub const ACK: u8 = 1;

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

/// Appends one frame to `out`.
pub fn frame(out: &mut Vec<u8>, ty: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.push(ty);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// `:status: 200` (HPACK static index 8) and `content-length: length` (static name 28, a
/// literal).
pub fn head(length: usize) -> Vec<u8> {
    let digits = length.to_string();
    let mut b = vec![0x88, 0x0f, 28 - 15, digits.len() as u8];
    b.extend_from_slice(digits.as_bytes());
    b
}
