//! The application as a FastCGI responder (persistent, as php-fpm is): a thread per
//! connection from the web server, requests read and answers written with the workspace's
//! sans-I/O record layer (`fastcgi::responder`), one request at a time per connection, the
//! connection kept when the server asks (`FCGI_KEEP_CONN`). One database connection for the
//! process, its statements prepared once (the rules allow either that or a pool), taken in turn
//! by the connections' threads: the database work of a request is short and a
//! connection is not shared between threads at once.

use crate::cgi::{test_type, write_reply};
use crate::db::Db;
use crate::handlers::answer;
use fastcgi::responder::{respond, Decoder, Step, MAX_RECORD};
use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Binds a unix socket at `path`, replacing a socket left there by a previous run (any other
/// file there is an error).
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            std::fs::remove_file(path)?;
        }
    }
    UnixListener::bind(path)
}

/// Serves `listener` until the process ends.
pub fn serve(listener: UnixListener, db: Option<Db>) -> io::Result<()> {
    let db = Arc::new(Mutex::new(db));
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            // Out of descriptors (EMFILE) or memory: retrying at once would spin, and that CPU
            // would be counted in the application's tier. Wait for connections to close.
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let _ = connection(stream, &db);
        });
    }
    Ok(())
}

/// One connection from the web server: its requests in turn, until it closes, breaks the
/// specification, or ends a request without `FCGI_KEEP_CONN`.
fn connection(mut stream: UnixStream, db: &Mutex<Option<Db>>) -> io::Result<()> {
    let mut decoder = Decoder::new();
    let mut rng = fastrand::Rng::new();
    // Room for two whole records: a read never finds the buffer full with no record in it.
    let mut buf = vec![0u8; 2 * MAX_RECORD];
    let mut have = 0;
    let mut answer_bytes = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(4096);
    loop {
        let n = stream.read(&mut buf[have..])?;
        if n == 0 {
            return Ok(());
        }
        have += n;
        let mut at = 0;
        loop {
            let (used, step) = decoder
                .read(&buf[at..have])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            at += used;
            match step {
                None => break,
                Some(Step::Reply(records)) => stream.write_all(&records)?,
                Some(Step::Request(request)) => {
                    let param =
                        |name| (request.param(name)).and_then(|v| std::str::from_utf8(v).ok());
                    let test = test_type(param("PATH_INFO"), param("REQUEST_URI"));
                    let query = param("QUERY_STRING").unwrap_or("");
                    let reply = {
                        let mut db = db.lock().unwrap_or_else(|p| p.into_inner());
                        answer(db.as_mut(), &mut rng, &test, query)
                    };
                    answer_bytes.clear();
                    write_reply(&mut answer_bytes, &reply)?;
                    out.clear();
                    respond(&mut out, request.id, &answer_bytes, 0);
                    stream.write_all(&out)?;
                    if !request.keep_conn {
                        return Ok(());
                    }
                }
            }
        }
        buf.copy_within(at..have, 0);
        have -= at;
    }
}
