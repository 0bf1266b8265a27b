//! The application as a CGI program (RFC 3875): the request from the meta-variables, the answer
//! on stdout as a CGI response (`Status`, `Content-Type`, `Content-Length`, then the body). One
//! process per request: the database opened (for the test types that use it) and its statements
//! prepared each time, which is the cost a CGI deployment pays and the lab measures.

use crate::db::Db;
use crate::handlers::{answer, uses_database, Reply};
use std::io::Write;

/// Answers the request the environment describes; the process's exit code.
pub fn run(db_path: Option<&std::path::Path>) -> i32 {
    let path_info = std::env::var("PATH_INFO").ok();
    let uri = std::env::var("REQUEST_URI").ok();
    let query = std::env::var("QUERY_STRING").unwrap_or_default();
    let test = test_type(path_info.as_deref(), uri.as_deref());
    // Opened only for a test type that uses it: `/plaintext` as CGI costs a database server
    // nothing.
    let mut db = db_path
        .filter(|_| uses_database(&test))
        .and_then(|p| Db::open(p).ok());
    let mut rng = fastrand::Rng::new();
    let reply = answer(db.as_mut(), &mut rng, &test, &query);
    let mut out = std::io::stdout().lock();
    match write_reply(&mut out, &reply).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// The test type a gateway's request names: by `PATH_INFO`, else by the path of
/// `REQUEST_URI` (a server that sends no `PATH_INFO`, as nginx's `fastcgi_params`).
pub fn test_type(path_info: Option<&str>, request_uri: Option<&str>) -> String {
    let path = match path_info.filter(|p| !p.is_empty()) {
        Some(p) => p,
        None => request_uri
            .and_then(|u| u.split('?').next())
            .unwrap_or_default(),
    };
    route(path)
}

/// The test type a CGI path names: `/app.cgi/json` (PATH_INFO `/json`) or `.../json` as the
/// last segment of the URI.
fn route(path: &str) -> String {
    match path.rsplit('/').next() {
        Some(last) if !last.is_empty() => format!("/{last}"),
        _ => path.to_owned(),
    }
}

/// `reply` as a CGI response.
pub fn write_reply(out: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(96 + reply.body.len());
    write!(
        head,
        "Status: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    )?;
    head.extend_from_slice(&reply.body);
    out.write_all(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_a_cgi_response_and_paths_name_their_test_type() {
        let mut out = Vec::new();
        let reply = Reply {
            status: 200,
            content_type: "text/plain",
            body: b"Hello, World!".to_vec(),
        };
        write_reply(&mut out, &reply).unwrap();
        assert_eq!(
            out,
            b"Status: 200\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!"
        );
        assert_eq!(route("/json"), "/json");
        assert_eq!(route("/cgi-bin/app.cgi/queries"), "/queries");
        assert_eq!(test_type(Some(""), Some("/fcgi/app/db?x=1")), "/db");
        assert_eq!(test_type(Some("/json"), Some("/fcgi/app/db")), "/json");
    }
}
