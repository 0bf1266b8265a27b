//! What HTTPS keep-alive allocates per request, on the client's side only: a short run and a
//! run with many times its requests, the difference divided by the extra requests.
//!
//! The counting allocator skips the server's threads (each marks itself in a thread-local
//! flag, which is const-initialised and so allocates nothing), so what is counted is the
//! client's. rustls 0.23 encrypts each record into a fresh buffer and queues each decrypted
//! record in another, so the bound here is those two per request, not zero: the test holds that
//! figure (and fails if the client adds its own).

#[path = "common/steady_state.rs"]
mod steady_state;

use bench::config::TlsOptions;
use bench::{BenchConfig, Stop, Target, Workload};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use steady_state::{measure, short_and_long};
use test_support::alloc::{exclude_current_thread, Counting};
use test_support::certs::{KeyKind, SelfSigned};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn serve(tcp: TcpStream, config: Arc<rustls::ServerConfig>, stop: &AtomicBool) {
    exclude_current_thread();
    let _ = tcp.set_read_timeout(Some(Duration::from_millis(20)));
    let conn = rustls::ServerConnection::new(config).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    let mut buf = [0u8; 4096];
    let mut matched = 0;
    while !stop.load(Ordering::Relaxed) {
        let n = match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        };
        for &b in &buf[..n] {
            matched = if b == b"\r\n\r\n"[matched] {
                matched + 1
            } else {
                usize::from(b == b'\r')
            };
            if matched == 4 {
                matched = 0;
                let response = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n\
                    0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";
                if s.write_all(response).is_err() {
                    return;
                }
            }
        }
    }
}

#[test]
fn https_keep_alive_allocates_only_rustls_records_per_request() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    let server_config = cert.server_config();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let accept = std::thread::spawn(move || {
        exclude_current_thread();
        let mut conns = Vec::new();
        for s in listener.incoming() {
            if st.load(Ordering::SeqCst) {
                break;
            }
            let Ok(s) = s else { continue };
            let (st, sc) = (st.clone(), server_config.clone());
            conns.push(std::thread::spawn(move || serve(s, sc, &st)));
        }
        for c in conns {
            let _ = c.join();
        }
    });
    let w = Workload::from_paths(&["/a".to_string()]).unwrap();
    let config = |ms| BenchConfig {
        concurrency: 4,
        threads: 2,
        stop: Stop::Duration(Duration::from_millis(ms)),
        connect_timeout: Duration::from_secs(2),
        response_timeout: Duration::from_secs(2),
        tls: TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(addr, "localhost"))
    };
    let (short, long) = short_and_long(|ms| measure(&config(ms), &w));
    stop.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(addr);
    accept.join().unwrap();
    println!("short: {short:?}, long: {long:?} (allocations, requests)");
    assert!(
        long.1 >= short.1 + 1000,
        "too few requests to tell: {short:?} {long:?}"
    );
    let extra = long.0.saturating_sub(short.0) as f64;
    let per_request = extra / (long.1 - short.1) as f64;
    println!("{per_request:.3} allocations per request over TLS");
    assert!(
        per_request <= 2.05,
        "{per_request:.3} allocations per request: more than rustls's two record buffers"
    );
}
