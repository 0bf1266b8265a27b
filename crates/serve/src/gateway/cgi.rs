//! CGI/1.1 (RFC 3875): which program a target names, and the meta-variables it runs with.
//!
//! A program is a regular executable file found under its mount's directory (or, for
//! `cgi_extensions`, under the document root) by the same rules as a file: the target
//! normalised by `resolve::normalise` (no `..`, no encoded separators, no NUL), dot-names
//! hidden, the opened file checked to lie under its root (`Root::open`: symlinks leading out are
//! refused unless `symlinks_outside_root`). What follows the program's name is `PATH_INFO`.
//!
//! The environment holds the meta-variables of RFC 3875 4.1, the request's fields as `HTTP_*`,
//! and a fixed `PATH`: nothing of the server's own environment. `Proxy` is never passed
//! (`HTTP_PROXY` would be taken for a proxy setting by the program's HTTP libraries: httpoxy,
//! CVE-2016-5385), nor `Authorization` (a program never sees a password: a user the server's
//! Basic authentication let in is `REMOTE_USER`, with `AUTH_TYPE=Basic`, as Apache sets them),
//! nor a field name with `_` (it would be indistinguishable from the same name with `-`).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::rc::Rc;

use wire::Request;

use super::asked::Asked;
use super::{Gateways, Route};
use crate::cache::FileVersion;
use crate::resolve::{FsCounters, Root};

/// The fixed search path programs run with.
pub(crate) const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The program a target names (shared by the requests for it: `scripts.rs` keeps it; the
/// query is each request's own, read from its target).
#[derive(Debug)]
pub(crate) struct Script {
    /// Where it is.
    pub fs_path: Vec<u8>,
    /// Its URL path (`SCRIPT_NAME`), decoded.
    pub script_name: Vec<u8>,
    /// What follows it in the path (`PATH_INFO`), decoded; may be empty.
    pub path_info: Vec<u8>,
    /// `PATH_INFO` under the document root, when there is a `PATH_INFO`.
    pub path_translated: Option<Vec<u8>>,
    /// The FastCGI application that answers it (its index), or `None`: a program to run.
    pub app: Option<usize>,
    /// Its file's version and mode when found, to tell when it changes (`super::scripts`).
    pub version: FileVersion,
    pub mode: u32,
}

/// A program to start: what the protocol decided, for the connection to start.
#[derive(Debug)]
pub(crate) struct Launch {
    pub program: PathBuf,
    pub dir: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    /// Bytes of request body to pass to its stdin.
    pub body: u64,
    /// The FastCGI application to send it to, or `None`: a program to start.
    pub app: Option<usize>,
    /// A request for a proxy's upstream instead (`env` then is empty).
    pub proxy: Option<super::proxy::Forward>,
    /// For a FastCGI application, its records so far instead (`env` then is empty).
    pub fastcgi: Option<super::fcgi::Params>,
    /// Its request, as a failure's error-log line names it.
    pub request: super::label::RequestLabel,
}

/// The user the server's Basic authentication let in (RFC 3875 4.1.1 and 4.1.11).
pub(crate) fn set_user(launch: &mut Launch, user: &[u8]) {
    if let Some(params) = launch.fastcgi.as_mut() {
        params.param(b"AUTH_TYPE", b"Basic");
        params.param(b"REMOTE_USER", user);
        return;
    }
    launch.env.push(("AUTH_TYPE".into(), "Basic".into()));
    let user = OsStr::from_bytes(user).to_os_string();
    launch.env.push(("REMOTE_USER".into(), user));
}

/// The length of a body read whole before the start (a chunked one), as `CONTENT_LENGTH`.
pub(crate) fn set_length(launch: &mut Launch, n: u64) {
    launch.body = n;
    let mut digits = [0u8; 64];
    let len = on_stack(&mut digits, format_args!("{n}"));
    match launch.fastcgi.as_mut() {
        Some(params) => params.param(b"CONTENT_LENGTH", len),
        None => {
            let len = OsStr::from_bytes(len).to_os_string();
            launch.env.push(("CONTENT_LENGTH".into(), len));
        }
    }
}

/// Finds the program `rel` names under `root` (`prefix` is its mount's URL prefix): the
/// shortest leading part of `rel` that is a file and `is_script` accepts; the rest is path info.
/// A program must be executable; a FastCGI script (`app`) is read by its application.
pub(crate) fn find(
    root: &Root,
    prefix: &[u8],
    rel: &[u8],
    doc_root: &Root,
    is_script: impl Fn(&[u8]) -> bool,
    app: Option<usize>,
) -> Route {
    let mut fs_path = Vec::with_capacity(256);
    let mut counters = FsCounters::default();
    let ends = rel
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(_, &b)| b == b'/')
        .map(|(i, _)| i)
        .chain([rel.len()]);
    for end in ends {
        let candidate = &rel[..end];
        let name = candidate.rsplit(|&b| b == b'/').next().unwrap_or(b"");
        if name.is_empty() || !is_script(name) {
            continue;
        }
        root.join(candidate, &mut fs_path);
        let (_, meta) = match root.open(&fs_path, &mut counters) {
            Ok(Some(found)) => found,
            Ok(None) => return Route::Refused(404),
            Err(_) => return Route::Refused(503),
        };
        if meta.is_dir() {
            continue;
        }
        if !meta.is_file() {
            return Route::Refused(404);
        }
        if app.is_none() && meta.permissions().mode() & 0o111 == 0 {
            return Route::Refused(403);
        }
        let path_info = rel[end..].to_vec();
        let path_translated = (!path_info.is_empty()).then(|| {
            let mut p = Vec::new();
            doc_root.join(&path_info, &mut p);
            p
        });
        let mut script_name = prefix.to_vec();
        script_name.extend_from_slice(candidate);
        return Route::Cgi(Rc::new(Script {
            fs_path,
            script_name,
            path_info,
            path_translated,
            app,
            version: FileVersion::of(&meta),
            mode: meta.permissions().mode(),
        }));
    }
    Route::Refused(404)
}

/// The launch for a program answering `req` from `peer`: its environment, the meta-variables.
pub(crate) fn launch<'a>(
    script: &Script,
    req: &Request<'_>,
    asked: Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone>,
    peer: SocketAddr,
    g: &Gateways,
    scratch: &mut Scratch,
) -> Launch {
    let mut env: Vec<(OsString, OsString)> = Vec::with_capacity(32);
    let mut set = |k: &[u8], v: &[u8]| {
        env.push((
            OsStr::from_bytes(k).to_os_string(),
            OsStr::from_bytes(v).to_os_string(),
        ))
    };
    meta_variables(script, req, &asked, peer, g, scratch, &mut set);
    let program = PathBuf::from(OsStr::from_bytes(&script.fs_path));
    let dir = program
        .parent()
        .map_or_else(|| PathBuf::from("/"), PathBuf::from);
    Launch {
        program,
        dir,
        env,
        body: asked.content_length.unwrap_or(0),
        app: script.app,
        proxy: None,
        fastcgi: None,
        request: Default::default(),
    }
}

/// Room reused from request to request: a field's variable name, and the value of a field
/// sent on several lines.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    name: Vec<u8>,
    value: Vec<u8>,
}

/// The meta-variables of `req` from `peer`, each handed to `set` as (name, value): one list
/// for both gateways (a program's environment, a FastCGI application's PARAMS encoded as they
/// come). Nothing is allocated per variable: numbers and addresses are formatted on the stack,
/// a field's name and a field sent on several lines are made in `scratch`. A request's fields
/// are few: each is compared with the others (no list of them is made).
pub(crate) fn meta_variables<'a, F>(
    script: &Script,
    req: &Request<'_>,
    asked: &Asked<'a, F>,
    peer: SocketAddr,
    g: &Gateways,
    scratch: &mut Scratch,
    set: &mut impl FnMut(&[u8], &[u8]),
) where
    F: Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
{
    let mut digits = [0u8; 64];
    set(b"PATH", PATH.as_bytes());
    set(b"GATEWAY_INTERFACE", b"CGI/1.1");
    set(b"SERVER_SOFTWARE", b"flint");
    set(b"SERVER_PROTOCOL", asked.protocol);
    set(b"REQUEST_METHOD", asked.method);
    set(b"REQUEST_URI", req.target);
    set(b"SCRIPT_NAME", &script.script_name);
    set(b"SCRIPT_FILENAME", &script.fs_path);
    set(b"DOCUMENT_ROOT", g.doc_root.path().as_os_str().as_bytes());
    if !script.path_info.is_empty() {
        set(b"PATH_INFO", &script.path_info);
    }
    if let Some(t) = &script.path_translated {
        set(b"PATH_TRANSLATED", t);
    }
    set(b"QUERY_STRING", query_string(req.target));
    if let Some(len) = asked.content_length {
        set(
            b"CONTENT_LENGTH",
            on_stack(&mut digits, format_args!("{len}")),
        );
    }
    set(
        b"REMOTE_ADDR",
        on_stack(&mut digits, format_args!("{}", peer.ip())),
    );
    set(
        b"REMOTE_PORT",
        on_stack(&mut digits, format_args!("{}", peer.port())),
    );
    let host = req.host.map_or(&b"localhost"[..], host_name);
    set(b"SERVER_NAME", host);
    let port = g.server_port;
    set(
        b"SERVER_PORT",
        on_stack(&mut digits, format_args!("{port}")),
    );
    set(b"REQUEST_SCHEME", if g.https { b"https" } else { b"http" });
    if g.https {
        set(b"HTTPS", b"on");
    }
    // The fields once, as slices: an HTTP/1 head's iterator splits the raw head as it goes,
    // and looking for a field's other lines through it made a request of many fields cost the
    // head's length times their number (a 16 KiB head of 64 fields: 1 MiB scanned). On the
    // stack up to the default field limit, on the heap past it (a raised `max_headers`).
    let mut on_stack_fields: [(&[u8], &[u8]); FIELDS_ON_STACK] = [(&[], &[]); FIELDS_ON_STACK];
    let mut on_heap = Vec::new();
    let mut rest = asked.fields.clone().fuse();
    let mut count = 0;
    for (slot, f) in on_stack_fields.iter_mut().zip(&mut rest) {
        *slot = f;
        count += 1;
    }
    let fields: &[(&[u8], &[u8])] = if rest.next().is_none() {
        &on_stack_fields[..count]
    } else {
        on_heap.extend(asked.fields.clone());
        &on_heap
    };
    for (i, &(name, value)) in fields.iter().enumerate() {
        if name.eq_ignore_ascii_case(b"content-type") {
            set(b"CONTENT_TYPE", value);
            continue;
        }
        let skip = name.eq_ignore_ascii_case(b"proxy")
            || name.eq_ignore_ascii_case(b"authorization")
            || name.eq_ignore_ascii_case(b"content-length")
            || name.is_empty()
            || !name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-');
        let same = |(n, _): &&(&[u8], &[u8])| n.eq_ignore_ascii_case(name);
        // A later line of a field is joined to its first.
        if skip || fields[..i].iter().any(|f| same(&f)) {
            continue;
        }
        scratch.name.clear();
        scratch.name.extend_from_slice(b"HTTP_");
        scratch.name.extend(name.iter().map(|&b| match b {
            b'-' => b'_',
            b => b.to_ascii_uppercase(),
        }));
        let mut later = fields[i + 1..].iter().filter(same).peekable();
        if later.peek().is_none() {
            set(&scratch.name, value);
            continue;
        }
        // Lines of one field are one list; HTTP/2 splits a Cookie into crumbs that join with
        // "; " (RFC 9113 8.2.3).
        let cookie = name.eq_ignore_ascii_case(b"cookie");
        scratch.value.clear();
        scratch.value.extend_from_slice(value);
        for (_, v) in later {
            scratch
                .value
                .extend_from_slice(if cookie { b"; " } else { b", " });
            scratch.value.extend_from_slice(v);
        }
        set(&scratch.name, &scratch.value);
    }
}

/// Fields looked at on the stack when building a program's variables: the default
/// `max_headers`.
const FIELDS_ON_STACK: usize = 64;

/// The target's query, without its `?` (nor a fragment, which a client should not send): the
/// same as `resolve::normalise` finds (a `#` before any `?` ends the path: no query).
fn query_string(target: &[u8]) -> &[u8] {
    let Some(at) = target.iter().position(|&b| b == b'?' || b == b'#') else {
        return b"";
    };
    if target[at] == b'#' {
        return b"";
    }
    let query = &target[at + 1..];
    let end = query.iter().position(|&b| b == b'#').unwrap_or(query.len());
    &query[..end]
}

/// `args` formatted into `buf` (a number or an address: they fit).
fn on_stack<'b>(buf: &'b mut [u8; 64], args: std::fmt::Arguments<'_>) -> &'b [u8] {
    let mut rest = &mut buf[..];
    let _ = rest.write_fmt(args);
    let len = 64 - rest.len();
    &buf[..len]
}

/// The name part of a validated `Host` (`[v6]` kept whole, a port dropped).
fn host_name(host: &[u8]) -> &[u8] {
    if host.first() == Some(&b'[') {
        let end = host
            .iter()
            .position(|&b| b == b']')
            .map_or(host.len(), |i| i + 1);
        return &host[..end];
    }
    host.split(|&b| b == b':').next().unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::query_string;

    #[test]
    fn the_query_string_is_the_targets_query_without_its_mark() {
        assert_eq!(query_string(b"/app.php?a=1&b=2"), b"a=1&b=2");
        assert_eq!(query_string(b"/app.php/x?"), b"");
        assert_eq!(query_string(b"/app.php"), b"");
        assert_eq!(query_string(b"/app.php?a=?b#frag"), b"a=?b");
        // A fragment ends the path before any query, as `resolve::normalise` reads it.
        assert_eq!(query_string(b"/x.cgi#f?a=1"), b"");
    }
}
