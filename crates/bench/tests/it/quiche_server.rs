//! What the quiche test servers (h3_goaway_server's, engine_h3_not_h3's) share: a server
//! config on a test CA's leaf, and the thread running a server's loop on a UDP socket bound to
//! 127.0.0.1:0, stopped and joined when dropped. Each server keeps its own loop.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use test_support::certs::TestCa;

/// A server config offering ALPN h3 with the CA's leaf, windows far above what a test sends,
/// and `max_data` for a connection's data limit.
pub fn config(ca: &TestCa, max_data: u64) -> quiche::Config {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config
        .set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .unwrap();
    config
        .load_cert_chain_from_pem_file(cert.to_str().unwrap())
        .unwrap();
    config
        .load_priv_key_from_pem_file(key.to_str().unwrap())
        .unwrap();
    config.set_max_idle_timeout(30_000);
    config.set_initial_max_data(max_data);
    config.set_initial_max_stream_data_bidi_remote(1 << 16);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(3);
    config.set_initial_max_stream_data_uni(1 << 16);
    config
}

/// A server's loop on a thread of its own; dropping this stops and joins it.
pub struct ServerThread {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Binds 127.0.0.1:0 and runs `serve` on the socket; `serve` returns once the flag it is
    /// given is set (every wait in it bounded, so that it sees the flag).
    pub fn spawn(serve: impl FnOnce(UdpSocket, Arc<AtomicBool>) + Send + 'static) -> ServerThread {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || serve(sock, s));
        ServerThread {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
