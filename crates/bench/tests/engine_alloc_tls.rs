//! What HTTPS keep-alive allocates per request, on the client's side only: a short run and a
//! run with many times its requests, the difference divided by the extra requests.
//!
//! The counting allocator skips the server's threads (each marks itself in a thread-local
//! flag, which is const-initialised and so allocates nothing), so what is counted is the
//! client's. rustls 0.23 encrypts each record into a fresh buffer and queues each decrypted
//! record in another, so the bound here is those two per request, not zero: the test holds that
//! figure (and fails if the client adds its own).

use bench::config::TlsOptions;
use bench::{BenchConfig, Stop, Target, Workload};
use rcgen::{CertificateParams, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static NOT_COUNTED: Cell<bool> = const { Cell::new(false) };
}

struct Counting;

// SAFETY: every method forwards its arguments unchanged to the system allocator, which upholds
// GlobalAlloc's contract; counting touches only an atomic and a const thread-local Cell, and
// allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's layout, passed on as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for alloc.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: ptr was allocated by System (every allocation here goes there) with layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for realloc.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn count() {
    // try_with: a thread being torn down has no thread-locals left; count it then.
    if !NOT_COUNTED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn serve(tcp: TcpStream, config: Arc<rustls::ServerConfig>, stop: &AtomicBool) {
    NOT_COUNTED.with(|c| c.set(true));
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

fn measure(config: &BenchConfig, w: &Workload) -> (u64, u64) {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let r = bench::run(config, w, &AtomicBool::new(false)).unwrap();
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    (allocations, r.stats.requests)
}

#[test]
fn https_keep_alive_allocates_only_rustls_records_per_request() {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let server_config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let accept = std::thread::spawn(move || {
        NOT_COUNTED.with(|c| c.set(true));
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
    let short = measure(&config(200), &w);
    let long = measure(&config(800), &w);
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
