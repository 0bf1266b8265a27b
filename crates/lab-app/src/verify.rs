//! The verifier: a deployment's answers held to TechEmpower's rules before it is measured, as
//! that project's own verifier does: status 200, `Content-Type`, `Server` and `Date` present,
//! the JSON's shape, row counts (with `queries` clamped), the fortunes escaped and sorted with the
//! added one, and updates persisted (when the database is at hand). A deployment that fails is
//! reported as failed with its reasons, never measured.

use crate::db::{Db, World, WORLD_ROWS};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

/// A response as the verifier reads it.
#[derive(Debug)]
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// The header fields, names as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body, its chunked coding undone.
    pub body: Vec<u8>,
}

impl Fetched {
    /// The first field named `name` (compared without case), the rules' required ones
    /// (`Server`, `Date`, `Content-Type`) among them.
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One request (`Connection: close`), read to its end within `timeout`.
pub fn fetch(addr: SocketAddr, target: &str, timeout: Duration) -> Result<Fetched, String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    s.take(64 << 20)
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut fields);
    let n = match resp.parse(&raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("the response head is incomplete".into()),
        Err(e) => return Err(format!("a malformed response head: {e}")),
    };
    let headers: Vec<(String, String)> = (resp.headers.iter())
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let status = resp.code.unwrap_or(0);
    let mut f = Fetched {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &raw[n..];
    f.body = if f
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        dechunk(rest)?
    } else if let Some(len) = f.header("content-length") {
        let len: usize = len.trim().parse().map_err(|_| "a bad Content-Length")?;
        if rest.len() < len {
            return Err(format!(
                "a body of {} B where Content-Length said {len}",
                rest.len()
            ));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(f)
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let eol = (rest.windows(2).position(|w| w == b"\r\n")).ok_or("a chunk size line is cut")?;
        let line = std::str::from_utf8(&rest[..eol]).map_err(|_| "a bad chunk size")?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("a bad chunk size {line:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err("a chunk is cut".into());
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// The `queries` parameters asked of queries and updates, and the rows each must answer: a
/// count clamped to 1..500, and 1 where it is missing or not a number.
const COUNTS: [(&str, usize); 5] = [
    ("", 1),
    ("?queries=foo", 1),
    ("?queries=0", 1),
    ("?queries=20", 20),
    ("?queries=501", 500),
];

/// The requests one `verify` makes: plaintext, json, db and fortunes once, queries and updates
/// once for each of `COUNTS`.
pub const REQUESTS: usize = 4 + 2 * COUNTS.len();

/// One test type's verdict: `Ok` or the reasons it failed.
#[derive(Debug)]
pub struct Verdict {
    /// The test type (`json`, `db`, ...).
    pub test: &'static str,
    /// Each rule the answers broke, in words; empty: the deployment passed this test type.
    pub problems: Vec<String>,
}

/// Verifies every test type at `addr` under `prefix` (`""` for an HTTP deployment,
/// `/cgi-bin/app.cgi` for CGI). With `db`, updates are checked against the database itself.
pub fn verify(addr: SocketAddr, prefix: &str, db: Option<&Path>) -> Vec<Verdict> {
    let timeout = Duration::from_secs(10);
    let get = |path: &str| fetch(addr, &format!("{prefix}{path}"), timeout);
    let mut out = Vec::new();
    let mut check = |test: &'static str, f: &mut dyn FnMut(&mut Vec<String>)| {
        let mut problems = Vec::new();
        f(&mut problems);
        out.push(Verdict { test, problems });
    };
    check("plaintext", &mut |p| {
        if let Some(r) = common(&get("/plaintext"), "text/plain", p) {
            if r.body != b"Hello, World!" {
                p.push(format!("body {:?}", String::from_utf8_lossy(&r.body)));
            }
        }
    });
    check("json", &mut |p| {
        if let Some(r) = common(&get("/json"), "application/json", p) {
            match serde_json::from_slice::<serde_json::Value>(&r.body) {
                Ok(v) if v == serde_json::json!({"message": "Hello, World!"}) => {}
                _ => p.push(format!("body {:?}", String::from_utf8_lossy(&r.body))),
            }
        }
    });
    check("db", &mut |p| {
        if let Some(r) = common(&get("/db"), "application/json", p) {
            worlds(&r.body, None, p);
        }
    });
    check("queries", &mut |p| {
        for (q, n) in COUNTS {
            if let Some(r) = common(&get(&format!("/queries{q}")), "application/json", p) {
                worlds(&r.body, Some(n), p);
            }
        }
    });
    check("fortunes", &mut |p| {
        if let Some(r) = common(&get("/fortunes"), "text/html", p) {
            fortunes(&r.body, p);
        }
    });
    // The rules give updates the same `queries` bounds as queries, and each answer's rows must
    // be in the database as answered.
    check("updates", &mut |p| {
        let mut db = match db.map(Db::open) {
            Some(Ok(db)) => Some(db),
            Some(Err(e)) => {
                p.push(format!("the database: {e}"));
                None
            }
            None => None,
        };
        for (q, n) in COUNTS {
            let answer = get(&format!("/updates{q}"));
            let Some(r) = common(&answer, "application/json", p) else {
                continue;
            };
            let (Some(rows), Some(db)) = (worlds(&r.body, Some(n), p), &mut db) else {
                continue;
            };
            let stale = stale_updates(&rows, |id| db.world(id).ok());
            if stale > 0 {
                p.push(format!(
                    "{stale} of the updated rows' ids not as answered in the database (queries{q})"
                ));
            }
        }
    });
    out
}

/// The ids among `rows` whose row in the database (`stored`) is none of those answered for it.
/// Twenty ids drawn from 10,000 repeat about one time in fifty, and a repeated id is updated
/// twice: the database keeps the write applied last, which the rules do not order, so any of
/// the answered values for that id is right.
fn stale_updates(rows: &[World], mut stored: impl FnMut(u32) -> Option<World>) -> usize {
    let mut ids: Vec<u32> = rows.iter().map(|w| w.id).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter(|&id| {
            let now = stored(id);
            !rows.iter().any(|w| w.id == id && Some(*w) == now)
        })
        .count()
}

/// Status 200, the media type, `Server` and `Date` present.
fn common<'a>(
    r: &'a Result<Fetched, String>,
    media: &str,
    p: &mut Vec<String>,
) -> Option<&'a Fetched> {
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            p.push(e.clone());
            return None;
        }
    };
    if r.status != 200 {
        p.push(format!("status {}", r.status));
        return None;
    }
    let ct = r.header("content-type").unwrap_or("");
    if !ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case(media)
    {
        p.push(format!("Content-Type {ct:?} where {media} was expected"));
    }
    for name in ["server", "date"] {
        if r.header(name).is_none() {
            p.push(format!("no {name} field"));
        }
    }
    Some(r)
}

/// A `World` object (`count` None) or an array of `count` of them, each in range.
fn worlds(body: &[u8], count: Option<usize>, p: &mut Vec<String>) -> Option<Vec<World>> {
    let rows: Vec<World> = match count {
        None => match serde_json::from_slice::<World>(body) {
            Ok(w) => vec![w],
            Err(e) => {
                p.push(format!("not a World object: {e}"));
                return None;
            }
        },
        Some(n) => match serde_json::from_slice::<Vec<World>>(body) {
            Ok(rows) if rows.len() == n => rows,
            Ok(rows) => {
                p.push(format!("{} rows where {n} were expected", rows.len()));
                return None;
            }
            Err(e) => {
                p.push(format!("not an array of World objects: {e}"));
                return None;
            }
        },
    };
    let range = 1..=WORLD_ROWS;
    if let Some(w) = rows
        .iter()
        .find(|w| !range.contains(&w.id) || !range.contains(&w.random_number))
    {
        p.push(format!("a row out of range: {w:?}"));
    }
    Some(rows)
}

/// Thirteen rows, the added one among them, sorted by message, the markup escaped.
fn fortunes(body: &[u8], p: &mut Vec<String>) {
    let Ok(html) = std::str::from_utf8(body) else {
        p.push("the page is not UTF-8".into());
        return;
    };
    let messages: Vec<&str> = html
        .split("<tr>")
        .skip(2)
        .filter_map(|row| row.split("<td>").nth(2)?.split("</td>").next())
        .collect();
    if messages.len() != 13 {
        p.push(format!(
            "{} fortunes where 13 were expected",
            messages.len()
        ));
    }
    if !messages
        .windows(2)
        .all(|w| unescape(w[0]) <= unescape(w[1]))
    {
        p.push("the fortunes are not sorted by message".into());
    }
    if !messages.contains(&"Additional fortune added at request time.") {
        p.push("the fortune added at request time is missing".into());
    }
    if html.contains("<script>") {
        p.push("a message's markup is not escaped".into());
    }
    if !html.contains("フレームワークのベンチマーク") {
        p.push("the Japanese fortune is not UTF-8 as stored".into());
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&#039;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(id: u32, random_number: u32) -> World {
        World { id, random_number }
    }

    #[test]
    fn every_escaping_of_an_apostrophe_is_read_back() {
        // Rust's escaping, PHP's htmlspecialchars with ENT_QUOTES, and the short decimal form.
        for escaped in ["aren&#x27;t", "aren&#039;t", "aren&#39;t"] {
            assert_eq!(unescape(escaped), "aren't", "{escaped}");
        }
    }

    #[test]
    fn a_repeated_id_is_right_with_either_of_its_answers_and_a_lost_update_is_stale() {
        let rows = [w(7, 1), w(9, 2), w(7, 3)];
        // The second write to 7 applied last, or the first: both right.
        for kept in [3, 1] {
            let db = |id| Some(if id == 7 { w(7, kept) } else { w(9, 2) });
            assert_eq!(stale_updates(&rows, db), 0, "kept {kept}");
        }
        // 7 holds neither answer, 9 is missing: two ids stale.
        assert_eq!(stale_updates(&rows, |id| (id == 7).then(|| w(7, 5))), 2);
    }
}
