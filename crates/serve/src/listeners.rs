//! The listening sockets: one per event-loop thread, in one `SO_REUSEPORT` group that another
//! process cannot join by accident.
//!
//! Why a socket per thread: each thread then has its own accept queue, so `accept4` contends on
//! nothing shared with the other threads and the kernel spreads new connections over the threads
//! by hash. That matters most for HTTP/1.0, where every request is a new connection. The
//! alternative, one socket shared by all threads and registered with `EPOLLEXCLUSIVE`, puts every
//! accept on the one queue's lock and wakes the thread that slept last first, so connections pile
//! onto one thread (the reason nginx added `reuseport`).
//!
//! Why `SO_REUSEPORT` alone is not enough: any process of the same user that sets it on the same
//! address joins the group and takes its share of the connections; a second `flint serve` started
//! by mistake would silently answer half the requests from another root.
//!
//! How: the first socket is bound and set listening *without* `SO_REUSEPORT` (with `SO_REUSEADDR`,
//! so connections of an earlier run in TIME_WAIT do not block a restart). `listen(2)` checks for
//! conflicts again, under the port's lock, against sockets already listening, so of two processes
//! racing for a port at most one gets its first socket listening; the other gets EADDRINUSE, from
//! `bind` or from `listen`. Only then is `SO_REUSEPORT` set on that listening socket, and the
//! other threads' sockets, bound and set listening with it, join its group. A later process's
//! first socket, which does not ask to share, conflicts with it: "Address already in use".
//!
//! Limits: a program of the same user that binds with `SO_REUSEPORT` from the start can still
//! join once the first socket shares (as it could join nginx's `reuseport` listeners); the check
//! holds between `flint serve`s and against every program that does not ask to share. With one
//! thread `SO_REUSEPORT` is never set, and nothing can join.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};

/// Connections the kernel queues per listening socket before accept.
const BACKLOG: i32 = 4096;

/// `n` listening sockets on `addr` (port 0: the kernel picks one, and the others bind it), all
/// non-blocking, `TCP_NODELAY` (inherited by accepted sockets on Linux, so never set per
/// connection), and `TCP_DEFER_ACCEPT` if asked.
pub(crate) fn bind(addr: SocketAddr, n: usize, defer_accept: bool) -> io::Result<Vec<TcpListener>> {
    let first = socket(addr, defer_accept)?;
    first.bind(&addr.into())?;
    first.listen(BACKLOG)?;
    let addr = first
        .local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("listening socket without an IP address"))?;
    let mut all = Vec::with_capacity(n);
    if n > 1 {
        first.set_reuse_port(true)?;
    }
    all.push(first.into());
    for _ in 1..n {
        let s = socket(addr, defer_accept)?;
        s.set_reuse_port(true)?;
        s.bind(&addr.into())?;
        s.listen(BACKLOG)?;
        all.push(s.into());
    }
    Ok(all)
}

fn socket(addr: SocketAddr, defer_accept: bool) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_tcp_nodelay(true)?;
    s.set_nonblocking(true)?;
    if defer_accept {
        // Accept only once the request's first bytes are in: the optimistic read after accept
        // then always finds them, and a connect-only client costs no file descriptor.
        let secs: libc::c_int = 1;
        // SAFETY: a valid socket fd, a pointer to a c_int that outlives the call, and its size.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                (&secs as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    #[test]
    fn a_second_group_on_the_same_port_is_refused() {
        let ours = bind(loopback(), 2, false).unwrap();
        let addr = ours[0].local_addr().unwrap();
        assert_eq!(ours[1].local_addr().unwrap(), addr);
        for n in [1, 2] {
            let e = bind(addr, n, false).expect_err("a second server on the port");
            assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
        }
        let single = bind(loopback(), 1, false).unwrap();
        let e = bind(single[0].local_addr().unwrap(), 2, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
    }

    #[test]
    fn every_socket_of_the_group_receives_connections() {
        let ours = bind(loopback(), 2, false).unwrap();
        let addr = ours[0].local_addr().unwrap();
        let mut clients = Vec::new();
        let mut accepted = [0u32; 2];
        // The kernel spreads by a hash of the client's port: a few dozen connections reach both
        // sockets with a probability of 1 - 2^-63.
        let deadline = Instant::now() + Duration::from_secs(10);
        while clients.len() < 64 && Instant::now() < deadline {
            clients.push(TcpStream::connect(addr).unwrap());
        }
        while accepted.iter().sum::<u32>() < clients.len() as u32 && Instant::now() < deadline {
            for (i, l) in ours.iter().enumerate() {
                while l.accept().is_ok() {
                    accepted[i] += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(accepted.iter().sum::<u32>(), 64, "{accepted:?}");
        assert!(accepted.iter().all(|&a| a > 0), "{accepted:?}");
    }

    #[test]
    fn a_restart_is_not_blocked_by_connections_of_the_last_run() {
        let first = bind(loopback(), 2, false).unwrap();
        let addr = first[0].local_addr().unwrap();
        // A connection closed by the server side leaves a TIME_WAIT socket on the port.
        let client = TcpStream::connect(addr).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let accepted = loop {
            if let Some(s) = first.iter().find_map(|l| l.accept().ok()) {
                break s.0;
            }
            assert!(Instant::now() < deadline, "no connection accepted");
            std::thread::sleep(Duration::from_millis(5));
        };
        drop(accepted);
        drop(client);
        drop(first);
        bind(addr, 2, false).expect("rebinding after a closed run");
    }
}
