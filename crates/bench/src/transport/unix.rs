//! `--unix-socket PATH` (oha's, curl's): HTTP over a Unix stream socket, for a server behind a
//! local proxy's socket or one that listens on no port. The URL still gives the Host header.

use mio::net::UnixStream;
use socket2::{Domain, SockAddr, Socket, Type};
use std::io;
use std::path::Path;

/// A nonblocking Unix stream socket, its connect started (a full listen backlog is EAGAIN,
/// which the connect's writable event then settles, as EINPROGRESS does for TCP).
pub(super) fn open(path: &Path) -> io::Result<UnixStream> {
    let s = Socket::new(Domain::UNIX, Type::STREAM.nonblocking(), None)?;
    match s.connect(&SockAddr::unix(path)?) {
        Ok(()) => {}
        Err(e)
            if e.raw_os_error() == Some(libc::EINPROGRESS)
                || e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    Ok(UnixStream::from_std(s.into()))
}
