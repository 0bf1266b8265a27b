//! A small web application for the application workload tests, in threads of the test: a login
//! that sets a session cookie and answers a token, a cookie-protected account page holding a
//! CSRF token, a form that needs it, a JSON endpoint, a page that answers 200 with an error body
//! every third time, a login that succeeds only once, a large page, and redirects that repeat
//! the request (307, 308). It counts every request it receives.
//! Over HTTP/1.x, and over HTTP/2 (`h2.rs`: cleartext, or TLS with ALPN `h2`).

#![allow(dead_code)] // each test binary uses its own subset

mod h2;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The users the application knows, as the tests' data file lists them.
pub const USERS_CSV: &str = "id,name,pass\n1,ann,pa\n2,bo,pb\n3,cy,pc\n4,di,pd\n";

/// The running application: its address, its count of requests received, their paths in
/// the order they came, and each one's method, path and body.
pub struct App {
    pub addr: String,
    pub received: Arc<AtomicU64>,
    pub paths: Arc<Mutex<Vec<String>>>,
    pub requests: Arc<Mutex<Vec<Received>>>,
}

/// A request as the application received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    /// Without its query.
    pub path: String,
    pub body: String,
}

#[derive(Default)]
struct State {
    /// Session id -> user name.
    sessions: HashMap<String, String>,
    next: u64,
    flaky: u64,
    logins_once: u64,
    orders: u64,
}

/// What every connection of one application shares.
struct Shared {
    count: Arc<AtomicU64>,
    log: Arc<Mutex<Vec<String>>>,
    requests: Arc<Mutex<Vec<Received>>>,
    state: Mutex<State>,
}

impl Shared {
    /// A request is complete (`head`: an HTTP/1 head, whatever the protocol): counted, its path
    /// noted, answered (as HTTP/1 bytes).
    fn answer(&self, head: &str, body: &str, http10: bool) -> Vec<u8> {
        self.count.fetch_add(1, Ordering::Relaxed);
        let path = head.split(' ').nth(1).unwrap_or("/");
        let path = path.split('?').next().unwrap_or("/");
        self.log.lock().unwrap().push(path.to_owned());
        self.requests.lock().unwrap().push(Received {
            method: head.split(' ').next().unwrap_or_default().to_owned(),
            path: path.to_owned(),
            body: body.to_owned(),
        });
        answer(head, body, &self.state, http10)
    }
}

/// How the application is spoken to.
#[derive(Clone)]
pub enum Front {
    Http1,
    /// HTTP/2 by prior knowledge.
    H2c,
    /// HTTP/2 over TLS (this configuration, its ALPN set to `h2`).
    H2Tls(Arc<rustls::ServerConfig>),
}

/// The application over HTTP/1.x.
pub fn start() -> App {
    start_with(Front::Http1)
}

pub fn start_with(front: Front) -> App {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let received = Arc::new(AtomicU64::new(0));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::new(Shared {
        count: received.clone(),
        log: paths.clone(),
        requests: requests.clone(),
        state: Mutex::new(State::default()),
    });
    let front = match front {
        Front::H2Tls(config) => {
            let mut config = (*config).clone();
            config.alpn_protocols = vec![b"h2".to_vec()];
            Front::H2Tls(Arc::new(config))
        }
        other => other,
    };
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (shared, front) = (shared.clone(), front.clone());
            std::thread::spawn(move || match front {
                Front::Http1 => serve(conn, &shared),
                Front::H2c => h2::serve(conn, &shared),
                Front::H2Tls(config) => {
                    let Ok(tls) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    h2::serve(rustls::StreamOwned::new(tls, conn), &shared);
                }
            });
        }
    });
    App {
        addr,
        received,
        paths,
        requests,
    }
}

fn serve(mut conn: TcpStream, shared: &Shared) {
    let mut have = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => have.extend_from_slice(&buf[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&have[..end]).into_owned();
        let length: usize = field(&head, "content-length").map_or(0, |v| v.parse().unwrap_or(0));
        while have.len() < end + 4 + length {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => have.extend_from_slice(&buf[..n]),
            }
        }
        let body = String::from_utf8_lossy(&have[end + 4..end + 4 + length]).into_owned();
        have.drain(..end + 4 + length);
        let http10 = head.lines().next().is_some_and(|l| l.ends_with("HTTP/1.0"));
        let response = shared.answer(&head, &body, http10);
        if conn.write_all(&response).is_err() || http10 {
            return;
        }
    }
}

/// A header field's value (the first of that name).
fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A `name=value` of a query or form body.
fn param<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.split('&').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
}

fn respond(status: &str, fields: &[(&str, String)], body: &[u8], http10: bool) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    if http10 {
        r += "Connection: close\r\n";
    }
    for (n, v) in fields {
        r += &format!("{n}: {v}\r\n");
    }
    r += "\r\n";
    let mut r = r.into_bytes();
    r.extend_from_slice(body);
    r
}

fn answer(head: &str, body: &str, state: &Mutex<State>, http10: bool) -> Vec<u8> {
    let target = head.split(' ').nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut st = state.lock().unwrap();
    let user = field(head, "cookie")
        .and_then(|c| c.split(';').find_map(|kv| kv.trim().strip_prefix("sid=")))
        .and_then(|sid| st.sessions.get(sid).cloned());
    let html = || ("Content-Type", "text/html; charset=utf-8".to_string());
    match path {
        "/login" => {
            let (name, pass) = (param(body, "user").unwrap_or(""), param(body, "pass"));
            let known = USERS_CSV.lines().skip(1).any(|l| {
                let f: Vec<&str> = l.split(',').collect();
                f[1] == name && Some(f[2]) == pass
            });
            if !known {
                return respond("403 Forbidden", &[html()], b"no such user", http10);
            }
            st.next += 1;
            let sid = format!("s{}", st.next);
            st.sessions.insert(sid.clone(), name.to_owned());
            let fields = [
                ("Set-Cookie", format!("sid={sid}; Path=/; HttpOnly")),
                ("X-Token", format!("tok-{name}")),
                ("Location", "/account".into()),
            ];
            respond("303 See Other", &fields, b"", http10)
        }
        "/account" => match user {
            // The classic false result: a 200 with the login form.
            None => respond("200 OK", &[html()], b"<form>please log in</form>", http10),
            Some(name) => {
                let page = format!("<h1>Hello {name}</h1><input name=\"csrf\" value=\"c-{name}\">");
                respond(
                    "200 OK",
                    &[html(), ("X-User", name)],
                    page.as_bytes(),
                    http10,
                )
            }
        },
        "/transfer" => {
            let ok = user.is_some_and(|u| param(body, "csrf") == Some(&format!("c-{u}")));
            match ok {
                true => respond("200 OK", &[html()], b"done", http10),
                false => respond("403 Forbidden", &[html()], b"bad csrf", http10),
            }
        }
        "/api/me" => {
            // The token must be the session's user's: a value carried by another Webchild
            // would not be.
            let token = field(head, "x-token").unwrap_or("");
            match user.filter(|u| token == format!("tok-{u}")) {
                Some(u) => {
                    let json = format!(
                        "{{\"user\":\"{u}\",\"id\":{}}}",
                        param(query, "n").unwrap_or("0")
                    );
                    respond(
                        "200 OK",
                        &[("Content-Type", "application/json".into())],
                        json.as_bytes(),
                        http10,
                    )
                }
                None => respond("409 Conflict", &[html()], b"token of another user", http10),
            }
        }
        "/flaky" => {
            st.flaky += 1;
            let body: &[u8] = match st.flaky % 3 {
                0 => b"<h1>Internal error</h1>",
                _ => b"<p>fine</p>",
            };
            respond("200 OK", &[html()], body, http10)
        }
        // A login that succeeds once (a token), then fails: the session it gave has ended.
        "/login-once" => {
            st.logins_once += 1;
            match st.logins_once {
                1 => respond("200 OK", &[("X-Token", "t-once".into())], b"", http10),
                _ => respond("403 Forbidden", &[html()], b"session ended", http10),
            }
        }
        "/echo" => respond("200 OK", &[html()], b"ok", http10),
        // A redirect that repeats the request (RFC 9110 15.4.8, 15.4.9): same method, same body.
        "/keep/307" | "/keep/308" => {
            let code = &path[6..];
            let status = if code == "307" {
                "307 Temporary Redirect"
            } else {
                "308 Permanent Redirect"
            };
            respond(
                status,
                &[("Location", format!("/kept/{code}"))],
                b"",
                http10,
            )
        }
        p if p.starts_with("/kept/") => respond("200 OK", &[html()], b"kept", http10),
        // A value with a line break, fine in a body, not in a header field.
        "/crlf" => respond(
            "200 OK",
            &[("Content-Type", "application/json".into())],
            br#"{"v":"a\r\nb"}"#,
            http10,
        ),
        "/big" => respond("200 OK", &[html()], &vec![b'x'; 2 << 20], http10),
        // Post/Redirect/Get: each order placed is sent to a page of its own.
        "/orders" => {
            st.orders += 1;
            let fields = [("Location", format!("/orders/{}", st.orders))];
            respond("303 See Other", &fields, b"", http10)
        }
        p if p.starts_with("/orders/") => respond("200 OK", &[html()], b"order", http10),
        // A relative Location: resolved against the path of the request.
        p if p.starts_with("/users/") && p.ends_with("/edit") => {
            respond("303 See Other", &[("Location", "done".into())], b"", http10)
        }
        p if p.starts_with("/users/") && p.ends_with("/done") => {
            respond("200 OK", &[html()], b"saved", http10)
        }
        _ => respond("404 Not Found", &[html()], b"not found", http10),
    }
}
