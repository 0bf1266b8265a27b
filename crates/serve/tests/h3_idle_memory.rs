//! What HTTP/3 on by default costs a TLS server that no HTTP/3 client talks to: the heap its
//! threads' HTTP/3 state holds (each thread's UDP socket buffers, quiche's configuration with
//! the certificate loaded, the connection tables), read as the bytes the C heap has in use
//! (Rust's allocations and BoringSSL's both come from it) once every loop runs, with HTTP/3 on
//! and then off, per thread. By count, not time: every loop has published its counters (so
//! it is built and running) before the heap is read.

// For h3_support/cgi.rs (the CGI fixture, which these tests do not use).
mod cgi_support;
mod common;
mod h3_support;

use common::TestServer;
use h3_support::Certs;

/// Event-loop threads of each server.
const THREADS: usize = 4;

/// Heap bytes a thread's idle HTTP/3 state may hold. Measured (debug build, 4 threads, two
/// rounds): 143,124 and 148,820 bytes a thread when a socket read into one 64 KiB datagram
/// buffer, nearly all of it flint's buffers (that one, the 64 KiB file-chunk buffer, the
/// 1,500-byte send buffer, the thread's reused head and log buffers); quiche's configuration
/// holds the certificate and key. Reading with `recvmmsg` and GRO takes 16 buffers of 64 KiB a
/// socket: they are made at its first read, so they are not held here (made at start, they
/// held 1,199,016 bytes a thread, which this bound refuses). Built with quiche's `Config::new`
/// the configuration held the system's CA bundle too (`SSL_CTX_set_default_verify_paths`,
/// about 1,015,000 bytes, never read by a server that asks no client certificate): 1,163,736
/// and 1,164,288 bytes a thread, which this bound refuses.
const PER_THREAD_BOUND: usize = 256 << 10;

/// Bytes the C heap has handed out and not taken back (arenas and mmap'd blocks, all threads).
fn heap_in_use() -> usize {
    // SAFETY: mallinfo2 only reads glibc's counters; it takes no pointer and has no precondition.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

/// The heap a running TLS server on `THREADS` threads holds, `http3` on or off (its files
/// and certificates made before the first reading, so only the server is counted).
fn server_heap(certs: &Certs, http3: bool) -> usize {
    let before = heap_in_use();
    let srv = TestServer::start(|c| {
        c.tls_cert = Some(certs.cert.clone());
        c.tls_key = Some(certs.key.clone());
        c.threads = THREADS;
        c.http3 = (!http3).then_some(false);
    });
    let st = srv.stats();
    assert_eq!(st.threads, THREADS as u64, "every loop running: {st:?}");
    let held = heap_in_use().saturating_sub(before);
    drop(srv);
    held
}

#[test]
fn http3_idle_state_costs_a_bounded_heap_per_thread() {
    let certs = Certs::new();
    // Warm-up: the process's own one-time allocations (rustls' provider, the test harness).
    server_heap(&certs, true);
    let mut per_thread = Vec::new();
    for _ in 0..2 {
        let on = server_heap(&certs, true);
        let off = server_heap(&certs, false);
        per_thread.push(on.saturating_sub(off) / THREADS);
        eprintln!("server heap on {THREADS} threads: HTTP/3 on {on} B, off {off} B");
    }
    let least = *per_thread.iter().min().unwrap();
    eprintln!("HTTP/3 idle state: {per_thread:?} B a thread");
    assert!(
        least > 64 * 1024,
        "the file-chunk buffer alone is 64 KiB: {per_thread:?}"
    );
    assert!(
        least <= PER_THREAD_BOUND,
        "{least} B a thread for idle HTTP/3, bound {PER_THREAD_BOUND}"
    );
}
