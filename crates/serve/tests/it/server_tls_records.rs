//! Responses over TLS leave in full records: the segments of a batch (an HTTP/2 response's
//! HEADERS frame, its DATA frame's header, the shared body) are sealed together, not a record
//! each, which would cost both sides a seal or an open per segment. Counted by the client, from
//! the record headers of the bytes it reads.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustls::{ClientConnection, StreamOwned};

use crate::common::connect;
use crate::h2_support::Client;
use crate::tls_support::*;

/// Records received so far, shared with the test.
static RECORDS: AtomicU64 = AtomicU64::new(0);

/// The socket, counting the TLS records read through it (5-byte headers: type, version, length).
struct Counting {
    sock: TcpStream,
    /// Bytes of the current record's header seen, and of its body still to come.
    header: Vec<u8>,
    body_left: usize,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            if self.body_left > 0 {
                let take = self.body_left.min(rest.len());
                self.body_left -= take;
                rest = &rest[take..];
                continue;
            }
            self.header.push(rest[0]);
            rest = &rest[1..];
            if self.header.len() == 5 {
                self.body_left = usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
                self.header.clear();
                RECORDS.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(n)
    }
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sock.flush()
    }
}

#[test]
fn a_batch_of_h2_responses_over_tls_leaves_in_full_records() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let mut config = (*certs.client(&both_versions())).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(Arc::new(config), name).unwrap();
    let sock = Counting {
        sock: connect(srv.addr),
        header: Vec::new(),
        body_left: 0,
    };
    let mut c = Client::new(StreamOwned::new(conn, sock), "localhost");
    // The handshake, the settings and one request first: what follows is the batch alone.
    assert_eq!(c.get("/1k.bin", &[]).status, 200);
    assert_eq!(c.io.conn.alpn_protocol(), Some(&b"h2"[..]));
    let before = RECORDS.load(Ordering::Relaxed);
    const BATCH: usize = 20;
    let ids: Vec<_> = (0..BATCH)
        .map(|_| c.submit("GET", "/10k.bin", &[]))
        .collect();
    assert!(c.run_until(|s| ids
        .iter()
        .all(|id| s.responses.get(id).is_some_and(|r| r.done))));
    for id in &ids {
        let r = &c.seen.responses[id];
        assert_eq!((r.status, r.body.len()), (200, 10 * 1024));
    }
    let records = RECORDS.load(Ordering::Relaxed) - before;
    eprintln!("{BATCH} responses of 10 KiB in {records} records");
    // 20 responses of about 10.3 KB fill 13 records of 16 KiB, and each round of writing ends
    // with a partial one; sealed apart they take 2 records each (the frame headers, the body).
    assert!(
        records < BATCH as u64 * 3 / 2,
        "{records} records for {BATCH} responses"
    );
    drop(c);
    srv.stop();
}
