//! A scripted HTTP/1.1 upstream for the proxy tests: it reads each request (head, then a
//! `Content-Length` or chunked body), records what arrived byte for byte, and answers as the
//! test's handler says (bytes, pauses, a close); over TLS too (`start_tls`: rustls in the
//! connection's thread, what it records the plaintext). Its threads stop when it is dropped
//! (the accept loop by a flag, each connection by its read timeout or the server's close).
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A request as the upstream read it.
#[derive(Debug, Clone)]
pub struct Req {
    /// The connection's number (from 0, in accept order) and the request's on it.
    pub conn: usize,
    pub index: usize,
    /// The head, request line and fields, as received.
    pub head: String,
    /// The body, decoded.
    pub body: Vec<u8>,
}

impl Req {
    /// The value of field `name`, if present once or more (the first).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// What the upstream does for a request.
pub enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
    /// Counted in [`Upstream::marks`] once the steps before it are done: a write before it has
    /// returned (on a unix socket its bytes are then in the server's socket).
    Mark,
    /// Closes the connection.
    Close,
}

pub fn reply(text: &str) -> Step {
    Step::Write(text.as_bytes().to_vec())
}

/// `200` with `body` and its length.
pub fn ok(body: &str) -> Vec<Step> {
    vec![reply(&format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))]
}

type Handler = dyn Fn(&Req) -> Vec<Step> + Send + Sync;

pub struct Upstream {
    pub addr: SocketAddr,
    /// Every request read, in order.
    pub requests: Arc<Mutex<Vec<Req>>>,
    /// Every byte received, all connections in order of arrival.
    pub raw: Arc<Mutex<Vec<u8>>>,
    pub accepted: Arc<AtomicUsize>,
    /// Connections open now.
    pub open: Arc<AtomicUsize>,
    /// The most open at once.
    pub most_open: Arc<AtomicUsize>,
    /// Bytes of responses written so far (each `Step::Write` counted once written whole).
    pub written: Arc<AtomicU64>,
    /// `Step::Mark`s passed so far, all connections together: what a test waits for to know
    /// that a given write has returned (`written` would not say: a write is counted after it
    /// returns, and the client may have had its bytes through the proxy before that, so a
    /// target taken from it then misses them).
    pub marks: Arc<AtomicU64>,
    /// The socket's directory of a `unix:` upstream ([`Upstream::start_unix`]).
    unix_dir: Option<tempfile::TempDir>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Where an upstream listens.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A connection an upstream accepted.
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Listener {
    fn accept(&self) -> io::Result<Conn> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Conn::Tcp(s)),
            Listener::Unix(l) => l.accept().map(|(s, _)| Conn::Unix(s)),
        }
    }
}

impl Upstream {
    pub fn start(handler: impl Fn(&Req) -> Vec<Step> + Send + Sync + 'static) -> Upstream {
        Upstream::start_with(None, handler)
    }

    /// An `https://` upstream serving `tls`'s certificate.
    pub fn start_tls(
        tls: Arc<rustls::ServerConfig>,
        handler: impl Fn(&Req) -> Vec<Step> + Send + Sync + 'static,
    ) -> Upstream {
        Upstream::start_with(Some(tls), handler)
    }

    /// An upstream on a unix socket (`url` gives `unix:PATH`). A write on a unix socket is
    /// in the peer's socket when it returns; over loopback TCP the kernel may deliver it
    /// later (its receive processing deferred on a loaded machine), after bytes the test
    /// sends next on another connection.
    pub fn start_unix(handler: impl Fn(&Req) -> Vec<Step> + Send + Sync + 'static) -> Upstream {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("upstream.sock")).unwrap();
        listener.set_nonblocking(true).unwrap();
        let mut up = Upstream::serve(Listener::Unix(listener), None, handler);
        up.unix_dir = Some(dir);
        up
    }

    fn start_with(
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: impl Fn(&Req) -> Vec<Step> + Send + Sync + 'static,
    ) -> Upstream {
        let listener = listen_loopback();
        listener.set_nonblocking(true).unwrap();
        Upstream::serve(Listener::Tcp(listener), tls, handler)
    }

    fn serve(
        listener: Listener,
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: impl Fn(&Req) -> Vec<Step> + Send + Sync + 'static,
    ) -> Upstream {
        let addr = match &listener {
            Listener::Tcp(l) => l.local_addr().unwrap(),
            Listener::Unix(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        };
        let handler: Arc<Handler> = Arc::new(handler);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let most_open = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let marks = Arc::new(AtomicU64::new(0));
        let thread = {
            let (written, marks) = (written.clone(), marks.clone());
            let (requests, raw, accepted, stop) = (
                requests.clone(),
                raw.clone(),
                accepted.clone(),
                stop.clone(),
            );
            let (open, most_open) = (open.clone(), most_open.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let s = match listener.accept() {
                        Ok(x) => x,
                        Err(_) => {
                            std::thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                    };
                    let conn = accepted.fetch_add(1, Ordering::SeqCst);
                    let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                    most_open.fetch_max(now, Ordering::SeqCst);
                    let (handler, requests, raw, open) =
                        (handler.clone(), requests.clone(), raw.clone(), open.clone());
                    let (written, marks) = (written.clone(), marks.clone());
                    let tls = tls.clone();
                    std::thread::spawn(move || {
                        let _ = (|| {
                            let s = match s {
                                Conn::Unix(s) => {
                                    s.set_nonblocking(false)?;
                                    s.set_read_timeout(Some(Duration::from_secs(10)))?;
                                    return serve_conn(
                                        s,
                                        conn,
                                        &*handler,
                                        &requests,
                                        &raw,
                                        (&written, &marks),
                                    );
                                }
                                Conn::Tcp(s) => s,
                            };
                            s.set_nonblocking(false)?;
                            s.set_read_timeout(Some(Duration::from_secs(10)))?;
                            let Some(tls) = tls else {
                                return serve_conn(
                                    s,
                                    conn,
                                    &*handler,
                                    &requests,
                                    &raw,
                                    (&written, &marks),
                                );
                            };
                            let c = rustls::ServerConnection::new(tls).map_err(io::Error::other)?;
                            let s = rustls::StreamOwned::new(c, s);
                            serve_conn(s, conn, &*handler, &requests, &raw, (&written, &marks))
                        })();
                        open.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            })
        };
        Upstream {
            addr,
            requests,
            raw,
            accepted,
            open,
            most_open,
            written,
            marks,
            unix_dir: None,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        match &self.unix_dir {
            Some(dir) => format!("unix:{}", dir.path().join("upstream.sock").display()),
            None => format!("http://{}", self.addr),
        }
    }

    /// The `https://` URL of a TLS upstream, by `host` (a name its certificate may lack).
    pub fn https_url(&self, host: &str) -> String {
        format!("https://{host}:{}", self.addr.port())
    }

    pub fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }

    pub fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_conn<S: Read + Write>(
    mut s: S,
    conn: usize,
    handler: &Handler,
    requests: &Mutex<Vec<Req>>,
    raw: &Mutex<Vec<u8>>,
    (written, marks): (&AtomicU64, &AtomicU64),
) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut fill = |s: &mut S, buf: &mut Vec<u8>| -> io::Result<bool> {
        let n = s.read(&mut chunk)?;
        raw.lock().unwrap().extend_from_slice(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    };
    for index in 0.. {
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            if !fill(&mut s, &mut buf)? {
                return Ok(());
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end - 4]).into_owned();
        buf.drain(..head_end);
        let mut req = Req {
            conn,
            index,
            head,
            body: Vec::new(),
        };
        if req
            .field("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
        {
            loop {
                let line_end = loop {
                    if let Some(i) = find(&buf, b"\r\n") {
                        break i;
                    }
                    if !fill(&mut s, &mut buf)? {
                        return Ok(());
                    }
                };
                let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
                let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                    .unwrap_or(0);
                while buf.len() < line_end + 2 + size + 2 {
                    if !fill(&mut s, &mut buf)? {
                        return Ok(());
                    }
                }
                req.body
                    .extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
                buf.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(n) = req.field("content-length").and_then(|v| v.parse().ok()) {
            while buf.len() < n {
                if !fill(&mut s, &mut buf)? {
                    return Ok(());
                }
            }
            req.body = buf.drain(..n).collect();
        }
        requests.lock().unwrap().push(req.clone());
        for step in handler(&req) {
            match step {
                Step::Write(b) => {
                    s.write_all(&b)?;
                    written.fetch_add(b.len() as u64, Ordering::SeqCst);
                }
                Step::Sleep(d) => std::thread::sleep(d),
                Step::Mark => {
                    marks.fetch_add(1, Ordering::SeqCst);
                }
                Step::Close => return Ok(()),
            }
        }
    }
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A port nothing listens on (bound, then closed).
pub fn dead_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// `[[proxy]]` for `prefix` and `upstreams`, parsed as the config file would be.
pub fn mount(prefix: &str, upstreams: &[String], extra: &str) -> serve::config::ProxyMount {
    let list: Vec<String> = upstreams.iter().map(|u| format!("{u:?}")).collect();
    let text = format!(
        "[[proxy]]\nprefix = {prefix:?}\nupstreams = [{}]\n{extra}\n",
        list.join(", ")
    );
    let mut c: serve::Config = toml::from_str(&text).unwrap();
    c.proxy.remove(0)
}

/// A loopback listener whose accept queue holds every connection a test opens at once (300
/// through the proxy's pool). std's backlog is 128: on a loaded machine this upstream's accept
/// loop falls behind, the kernel drops the SYNs past the queue, and a dropped SYN is sent again
/// only after 1 s and 3 s more, past the proxy's 5 s connect timeout (a 504 the proxy did not
/// cause).
fn listen_loopback() -> TcpListener {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.set_reuse_address(true).unwrap();
    s.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    s.listen(1024).unwrap();
    s.into()
}
