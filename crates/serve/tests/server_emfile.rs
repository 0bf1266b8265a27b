//! EMFILE on accept must not make the loop spin. Alone in its binary: it lowers the process's
//! RLIMIT_NOFILE and fills the descriptor table, which would break any test running beside it.

mod common;

use std::fs::File;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[test]
fn emfile_pauses_accepting_instead_of_spinning() {
    let srv = TestServer::start(|c| c.defer_accept = false);
    assert_eq!(exchange(srv.addr, &get("/a.txt")).status, 200);

    // A small table: the sockets below and the filler must fit in it.
    let limit = (open_fds() + 64) as libc::rlim_t;
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the rlimit structs we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let new = libc::rlimit {
            rlim_cur: limit,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &new), 0);
    }

    // Client sockets first (descriptors of their own), then fill every remaining slot, then
    // connect: the handshakes complete in the kernel, the server's accept finds no descriptor.
    let clients: Vec<socket2::Socket> = (0..4)
        .map(|_| socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap())
        .collect();
    let mut filler = Vec::new();
    while let Ok(f) = File::open("/dev/null") {
        filler.push(f);
        assert!(filler.len() < 10_000);
    }
    for c in &clients {
        c.connect(&srv.addr.into()).unwrap();
    }
    assert!(
        eventually(WAIT, || srv.stats().accept_errors > 0),
        "accept saw EMFILE"
    );

    // One second of EMFILE: a spinning loop would make millions of accept calls and wake-ups.
    // These are the server's own counts, exact whatever the load; CPU time is not used, as on a
    // loaded machine a spinning thread gets little of it and the other threads of this process
    // add to it.
    let before = srv.stats();
    std::thread::sleep(Duration::from_secs(1));
    let after = srv.stats();
    let calls = after.accept_calls - before.accept_calls;
    assert!(calls <= 30, "{calls} accept calls in one second of EMFILE");
    assert!(after.wakeups - before.wakeups <= 60, "{after:?}");

    // Descriptors free again: the waiting connections are accepted and served.
    drop(filler);
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &old), 0);
    }
    let start = Instant::now();
    for c in clients {
        let mut s: TcpStream = c.into();
        s.set_read_timeout(Some(WAIT)).unwrap();
        s.write_all(get("/a.txt").as_bytes()).unwrap();
        let r = read_response(&mut BufReader::new(s), false).unwrap();
        assert_eq!(r.body, b"hello");
    }
    // Served once descriptors are free (each read is bounded by WAIT); the margin is for a
    // loaded machine.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let st = srv.stop();
    assert_eq!(st.requests, 5);
    assert!(st.accept_pauses >= 1);
}
