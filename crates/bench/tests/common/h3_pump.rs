//! One turn of an in-test HTTP/3 server's datagrams, for the engine's HTTP/3 tests: what the
//! server has to send sent, then a wait for a datagram no longer than the server's next
//! deadline and never past 20 ms (so a test's stop flag is seen), every datagram waiting
//! handed in, and the deadline run. The caller then polls the server's events and answers.

#![allow(dead_code)] // each test file uses a different part

use http3::{Server, MAX_DATAGRAM};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// A test server's socket and its receive and send buffers.
pub struct Pump {
    sock: UdpSocket,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl Pump {
    pub fn new(sock: UdpSocket) -> Pump {
        Pump {
            sock,
            buf: vec![0u8; 65536],
            out: vec![0u8; MAX_DATAGRAM],
        }
    }

    /// The receive buffer, free between turns: where a request body is read to be dropped.
    pub fn scratch(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Sends, waits, receives and runs the deadline once.
    pub fn turn(&mut self, server: &mut Server) {
        while let Some(d) = server.send(&mut self.out) {
            let _ = self.sock.send_to(&self.out[..d.len], d.to);
        }
        let wait = (server.deadline())
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(20))
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        self.sock.set_read_timeout(Some(wait)).unwrap();
        if let Ok((n, from)) = self.sock.recv_from(&mut self.buf) {
            server.recv(&mut self.buf[..n], from);
            self.sock.set_nonblocking(true).unwrap();
            while let Ok((n, from)) = self.sock.recv_from(&mut self.buf) {
                server.recv(&mut self.buf[..n], from);
            }
            self.sock.set_nonblocking(false).unwrap();
        }
        server.on_deadline(Instant::now());
    }
}
