//! The test types, as TechEmpower's rules (Round 23) describe them: a request's path and query
//! in, a [`Reply`] out. No I/O but the database's, so the CGI program and the HTTP server answer
//! with the same code.

use crate::db::{Db, World, WORLD_ROWS};
use std::fmt::Write as _;

/// An answer: status, media type, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` value, with its charset where the rules ask for one.
    pub content_type: &'static str,
    /// The whole body: each protocol frames it its own way.
    pub body: Vec<u8>,
}

impl Reply {
    fn ok(content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            content_type,
            body,
        }
    }

    fn json(value: &impl serde::Serialize) -> Reply {
        let body = serde_json::to_vec(value).unwrap_or_default();
        Reply::ok("application/json", body)
    }

    fn text(status: u16, text: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain",
            body: text.as_bytes().to_vec(),
        }
    }
}

/// The test types' paths.
pub const PATHS: [&str; 6] = [
    "/plaintext",
    "/json",
    "/db",
    "/queries",
    "/fortunes",
    "/updates",
];

/// The test types that read or write the database.
pub const DATABASE_PATHS: [&str; 4] = ["/db", "/queries", "/fortunes", "/updates"];

/// Whether the test type at `path` uses the database: a program per request connects only then
/// (to a database server, a connection is a process forked for it).
pub fn uses_database(path: &str) -> bool {
    DATABASE_PATHS.contains(&path)
}

/// Answers `path` (without its query) with `query` (the part after `?`, or empty).
pub fn answer(db: Option<&mut Db>, rng: &mut fastrand::Rng, path: &str, query: &str) -> Reply {
    match path {
        "/plaintext" => Reply::ok("text/plain", b"Hello, World!".to_vec()),
        "/json" => Reply::json(&serde_json::json!({ "message": "Hello, World!" })),
        "/db" | "/queries" | "/fortunes" | "/updates" => {
            let Some(db) = db else {
                return Reply::text(500, "no database (give --db or FLINT_APP_DB)\n");
            };
            match database(db, rng, path, query) {
                Ok(r) => r,
                Err(e) => Reply::text(500, &format!("database: {e}\n")),
            }
        }
        _ => Reply::text(404, "not found\n"),
    }
}

fn database(
    db: &mut Db,
    rng: &mut fastrand::Rng,
    path: &str,
    query: &str,
) -> crate::db::Result<Reply> {
    let mut random_id = || rng.u32(1..=WORLD_ROWS);
    Ok(match path {
        "/db" => Reply::json(&db.world(random_id())?),
        "/queries" => {
            let rows = (0..queries(query))
                .map(|_| db.world(random_id()))
                .collect::<crate::db::Result<Vec<World>>>()?;
            Reply::json(&rows)
        }
        "/updates" => {
            let mut rows = (0..queries(query))
                .map(|_| db.world(random_id()))
                .collect::<crate::db::Result<Vec<World>>>()?;
            for w in &mut rows {
                // A new number, as the rules ask (a changed value, so the update is real).
                let mut n = random_id();
                while n == w.random_number {
                    n = random_id();
                }
                w.random_number = n;
            }
            // Ids in order: concurrent updaters then take row locks in the same order.
            let mut sorted = rows.clone();
            sorted.sort_by_key(|w| w.id);
            db.update(&sorted)?;
            Reply::json(&rows)
        }
        _ => fortunes(db.fortunes()?),
    })
}

/// `queries=N`: 1 when missing or not a number, clamped to 1..=500 (the rules).
pub fn queries(query: &str) -> u32 {
    let n = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("queries="))
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(1);
    n.clamp(1, 500) as u32
}

/// The fortunes page: the rows and one added now, sorted by message, escaped.
fn fortunes(mut rows: Vec<(u32, String)>) -> Reply {
    rows.push((0, "Additional fortune added at request time.".to_owned()));
    rows.sort_by(|a, b| a.1.cmp(&b.1));
    let mut html = String::with_capacity(1200);
    html.push_str(
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
         <tr><th>id</th><th>message</th></tr>",
    );
    for (id, message) in &rows {
        let _ = write!(html, "<tr><td>{id}</td><td>");
        escape(message, &mut html);
        html.push_str("</td></tr>");
    }
    html.push_str("</table></body></html>");
    Reply::ok("text/html; charset=utf-8", html.into_bytes())
}

/// HTML escaping of text content and attribute values.
pub fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_clamped_as_the_rules_say() {
        for (q, n) in [
            ("", 1),
            ("queries=", 1),
            ("queries=foo", 1),
            ("queries=0", 1),
            ("queries=-5", 1),
            ("queries=20", 20),
            ("a=1&queries=500", 500),
            ("queries=501", 500),
            ("queries=99999999999999999999", 1),
        ] {
            assert_eq!(queries(q), n, "{q:?}");
        }
    }

    #[test]
    fn every_test_type_answers_as_the_rules_say() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::create(&dir.path().join("w.db"), 7).unwrap();
        let mut rng = fastrand::Rng::with_seed(1);
        let mut get =
            |db: &mut Db, path: &str, query: &str| answer(Some(db), &mut rng, path, query);
        assert_eq!(get(&mut db, "/plaintext", "").body, b"Hello, World!");
        assert_eq!(
            get(&mut db, "/json", "").body,
            br#"{"message":"Hello, World!"}"#
        );
        let one: World = serde_json::from_slice(&get(&mut db, "/db", "").body).unwrap();
        assert!((1..=WORLD_ROWS).contains(&one.id));
        let rows: Vec<World> =
            serde_json::from_slice(&get(&mut db, "/queries", "queries=20").body).unwrap();
        assert_eq!(rows.len(), 20);
        let updated: Vec<World> =
            serde_json::from_slice(&get(&mut db, "/updates", "queries=5").body).unwrap();
        assert_eq!(updated.len(), 5);
        let f = get(&mut db, "/fortunes", "");
        assert_eq!(f.content_type, "text/html; charset=utf-8");
        let html = String::from_utf8(f.body).unwrap();
        assert!(
            html.contains("<tr><td>0</td><td>Additional fortune added at request time.</td></tr>")
        );
        assert!(html.contains("&lt;script&gt;alert(&quot;This should not be displayed"));
        assert!(html.contains("フレームワークのベンチマーク"));
        assert_eq!(
            html.matches("<tr>").count(),
            14,
            "a header row and 13 fortunes"
        );
        assert_eq!(get(&mut db, "/nope", "").status, 404);
        for w in &updated {
            assert_eq!(db.world(w.id).unwrap(), *w, "the update persisted");
        }
        assert_eq!(answer(None, &mut rng, "/db", "").status, 500);
    }
}
