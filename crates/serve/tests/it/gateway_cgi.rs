//! CGI/1.1 in the event loop over HTTP/1.x and HTTPS, with real programs: shell scripts the
//! tests write into a directory mounted at `/cgi-bin/` (outside the document root) or, with
//! `cgi_extensions`, into the root. Each request is checked on the wire: status, fields, body
//! and its framing (chunked, `Content-Length`, close-delimited), and what the server counted.

use crate::tls_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;

use crate::cgi_support::*;
use crate::common::*;
use serve::Config;

#[test]
fn a_script_answers_with_its_status_fields_and_body_chunked() {
    let scripts = Scripts::new();
    scripts.add("hello", HELLO);
    let srv = start(&scripts, |_| {});
    let r = ask(&srv, &get("/cgi-bin/hello"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("x-test"), Some("yes"));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.header("date").is_some() && r.header("server").is_some());
    assert!(r.complete, "the last chunk ends the body");
    assert_eq!(r.body, b"hello\n");
    let st = srv.stop();
    assert_eq!((st.cgi_requests, st.cgi_starts, st.status_2xx), (1, 1, 1));
}

#[test]
fn the_meta_variables_are_there_and_nothing_of_the_servers_environment() {
    let scripts = Scripts::new();
    scripts.add("env", "printf 'Content-Type: text/plain\\n\\n'\nenv\n");
    let srv = start(&scripts, |_| {});
    let r = ask(
        &srv,
        "GET /cgi-bin/env/p/q?a=1&b=2 HTTP/1.1\r\nHost: h.test:99\r\nProxy: http://evil/\r\n\
         Authorization: Basic eDp5\r\nX-Custom: v\r\nContent-Type: text/x\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let text = String::from_utf8(r.body).unwrap();
    let vars: Vec<(&str, &str)> = text.lines().filter_map(|l| l.split_once('=')).collect();
    let var = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let port = srv.addr.port().to_string();
    for (name, value) in [
        ("GATEWAY_INTERFACE", "CGI/1.1"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("REQUEST_METHOD", "GET"),
        ("SCRIPT_NAME", "/cgi-bin/env"),
        ("PATH_INFO", "/p/q"),
        ("QUERY_STRING", "a=1&b=2"),
        ("REMOTE_ADDR", "127.0.0.1"),
        ("SERVER_NAME", "h.test"),
        ("SERVER_PORT", port.as_str()),
        ("CONTENT_TYPE", "text/x"),
        ("HTTP_X_CUSTOM", "v"),
        ("HTTP_HOST", "h.test:99"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ] {
        assert_eq!(var(name), Some(value), "{name} in {text}");
    }
    let translated = var("PATH_TRANSLATED").expect("PATH_TRANSLATED");
    assert!(translated.ends_with("/p/q"), "{translated}");
    assert!(var("REMOTE_PORT").is_some_and(|p| p.parse::<u16>().is_ok()));
    for absent in [
        "HTTP_PROXY",
        "HTTP_AUTHORIZATION",
        "CONTENT_LENGTH",
        "HOME",
        "USER",
    ] {
        assert_eq!(var(absent), None, "{absent} in {text}");
    }
    // The test process's own environment (cargo sets CARGO_* for it) does not leak.
    assert!(!text.contains("CARGO"), "{text}");
}

/// POSTs `body` to a script that echoes its stdin, writing from another thread (the echo
/// comes back while the body is still going out).
fn echo(srv: &TestServer, body: Vec<u8>) -> Reply {
    let s = connect(srv.addr);
    let mut w = s.try_clone().unwrap();
    let head = format!(
        "POST /cgi-bin/echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let writer = std::thread::spawn(move || {
        w.write_all(head.as_bytes()).unwrap();
        w.write_all(&body).unwrap();
    });
    let r = read_reply(&mut BufReader::new(s), false).expect("response");
    writer.join().unwrap();
    r
}

#[test]
fn a_request_body_reaches_stdin_as_it_arrives() {
    let scripts = Scripts::new();
    scripts.add(
        "echo",
        "printf 'Content-Type: application/octet-stream\\r\\nContent-Length: %s\\r\\n\\r\\n' \"$CONTENT_LENGTH\"\nexec cat\n",
    );
    let srv = start(&scripts, |_| {});
    let empty = echo(&srv, Vec::new());
    assert_eq!((empty.status, empty.body.len()), (200, 0));
    let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 + i / 251) as u8).collect();
    let r = echo(&srv, big.clone());
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("1048576"));
    assert!(r.body == big, "the 1 MiB echo differs");
}

/// Echoes its stdin with the length it was told.
const ECHO: &str = "printf 'Content-Type: application/octet-stream\\r\\nContent-Length: %s\\r\\n\\r\\n' \"$CONTENT_LENGTH\"\nexec cat\n";

#[test]
fn a_chunked_body_is_read_whole_then_given_with_its_length() {
    let scripts = Scripts::new();
    scripts.add("echo", ECHO);
    let srv = start(&scripts, |_| {});
    let s = connect(srv.addr);
    let w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 + i / 251) as u8).collect();
    // Empty, a few chunks, and 1 MiB (the limit): one connection kept alive after each.
    for (body, size) in [(Vec::new(), 1), (b"abcdefg".to_vec(), 3), (big, 7000)] {
        let reply = send_and_read(&w, &mut r, chunked_post("/cgi-bin/echo", &body, size));
        assert_eq!(reply.status, 200);
        let length = body.len().to_string();
        assert_eq!(reply.header("content-length"), Some(length.as_str()));
        assert!(reply.body == body, "the {} B echo differs", body.len());
    }
    let over = chunked_post("/cgi-bin/echo", &vec![b'x'; (1 << 20) + 1], 64 * 1024);
    assert_eq!(send_and_read(&w, &mut r, over).status, 413);
    assert!(closed_by_peer(&mut r));

    let s = connect(srv.addr);
    let w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // A chunk size that is no number.
    let bad = b"POST /cgi-bin/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
        zz\r\nabc\r\n0\r\n\r\n"
        .to_vec();
    assert_eq!(send_and_read(&w, &mut r, bad).status, 400);
    assert!(closed_by_peer(&mut r));
    let st = srv.stop();
    assert_eq!((st.cgi_requests, st.cgi_starts), (5, 3));
}

#[test]
fn a_chunked_body_read_whole_at_the_program_limit_gets_503_and_the_connection_goes_on() {
    let scripts = Scripts::new();
    scripts.add("echo", ECHO);
    let srv = start(&scripts, |c| c.cgi_max_programs = 1);
    // A program holds the one slot, waiting for the rest of its body: 100 Continue says it
    // was started.
    let a = connect(srv.addr);
    let mut aw = a.try_clone().unwrap();
    let mut ar = BufReader::new(a);
    aw.write_all(
        b"POST /cgi-bin/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\
          Expect: 100-continue\r\n\r\nabc",
    )
    .unwrap();
    let mut line = String::new();
    ar.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 100"), "{line}");
    ar.read_line(&mut line).unwrap();

    let b = connect(srv.addr);
    let bw = b.try_clone().unwrap();
    let mut br = BufReader::new(b);
    let reply = send_and_read(&bw, &mut br, chunked_post("/cgi-bin/echo", b"xyz", 2));
    assert_eq!(reply.status, 503);
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_ne!(reply.header("connection"), Some("close"));
    // The same connection goes on: once the first program is reaped (its slot free again
    // then, a moment after its response), the body is echoed.
    aw.write_all(b"def").unwrap();
    assert_eq!(read_reply(&mut ar, false).unwrap().body, b"abcdef");
    let due = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut busy = 1;
    let reply = loop {
        let reply = send_and_read(&bw, &mut br, chunked_post("/cgi-bin/echo", b"xyz", 2));
        if reply.status != 503 || std::time::Instant::now() > due {
            break reply;
        }
        busy += 1;
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!((reply.status, reply.body.as_slice()), (200, &b"xyz"[..]));
    let st = srv.stop();
    assert_eq!((st.cgi_busy, st.cgi_starts), (busy, 2));
}

#[test]
fn status_and_redirects() {
    let scripts = Scripts::new();
    scripts
        .add(
            "missing",
            "printf 'Status: 404 Not Here\\r\\nContent-Type: text/plain\\r\\n\\r\\nno such thing\\n'\n",
        )
        .add("local", "printf 'Location: /a.txt\\r\\n\\r\\n'\n")
        .add("away", "printf 'Location: http://example.com/x\\r\\n\\r\\n'\n");
    let srv = start(&scripts, |_| {});
    let r = ask(&srv, &get("/cgi-bin/missing"));
    assert_eq!(
        (r.status, r.body.as_slice()),
        (404, &b"no such thing\n"[..])
    );
    // A local path is served by the server itself, as if asked for.
    let r = ask(&srv, &get("/cgi-bin/local"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    assert!(r.header("location").is_none());
    let r = ask(&srv, &get("/cgi-bin/away"));
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("http://example.com/x"));
}

#[test]
fn a_bad_head_is_a_502_and_nothing_of_it_reaches_the_client() {
    let scripts = Scripts::new();
    scripts
        .add(
            "inject",
            "printf 'Content-Type: text/plain\\r\\nX-A: 1\\rInjected: yes\\r\\n\\r\\nbody\\n'\n",
        )
        .add("nul", "printf 'Content-Type: text/plain\\nX-A: a\\000b\\n\\nbody\\n'\n")
        .add(
            "huge",
            "printf 'Content-Type: text/plain\\n'\ni=0\nwhile [ $i -lt 2000 ]; do printf 'X-Pad: %0100d\\n' 0; i=$((i+1)); done\nprintf '\\n'\n",
        )
        .add("none", "printf 'hello, no head at all\\n'\n");
    let srv = start(&scripts, |_| {});
    for name in ["inject", "nul", "huge", "none"] {
        let mut s = connect(srv.addr);
        s.write_all(get(&format!("/cgi-bin/{name}")).as_bytes())
            .unwrap();
        let mut r = BufReader::new(s);
        let reply = read_reply(&mut r, false).expect("response");
        assert_eq!(reply.status, 502, "{name}");
        let all = format!(
            "{:?} {}",
            reply.headers,
            String::from_utf8_lossy(&reply.body)
        );
        assert!(!all.contains("Injected") && !all.contains("X-A") && !all.contains("X-Pad"));
    }
    assert_eq!(srv.stats().cgi_bad_heads, 4);
}

#[test]
fn a_program_past_its_wall_time_is_killed_with_its_group_and_answered_504() {
    let scripts = Scripts::new();
    let pids = tempfile::tempdir().unwrap();
    let (sh_pid, sleep_pid) = (pids.path().join("sh"), pids.path().join("sleep"));
    scripts.add(
        "hang",
        &format!(
            "echo $$ > {sh}.tmp && mv {sh}.tmp {sh}\nsleep 1000 &\necho $! > {sl}.tmp && mv {sl}.tmp {sl}\nwait\n",
            sh = sh_pid.display(),
            sl = sleep_pid.display()
        ),
    );
    let srv = start(&scripts, |c| c.cgi_timeout_ms = 500);
    let r = ask(&srv, &get("/cgi-bin/hang"));
    assert_eq!(r.status, 504);
    let (sh, sleep) = (read_pid(&sh_pid).unwrap(), read_pid(&sleep_pid).unwrap());
    // Killed: gone, or a zombie its parent has yet to reap (the shell's child, reparented).
    for pid in [sh, sleep] {
        assert!(
            eventually(WAIT, || matches!(proc_state(pid), None | Some('Z'))),
            "pid {pid} still runs"
        );
    }
    // The shell is the server's child: reaped by the loop's sweep.
    assert!(eventually(WAIT, || proc_state(sh).is_none()), "not reaped");
    assert_eq!(srv.stats().cgi_timeouts, 1);
}

#[test]
fn a_client_that_reads_nothing_stops_the_program_not_the_servers_memory() {
    let scripts = Scripts::new();
    let count = scripts.path().join("count");
    scripts.add("flood", &flood_script(&count));
    let srv = start(&scripts, |_| {});
    let mut s = connect(srv.addr);
    s.write_all(get("/cgi-bin/flood").as_bytes()).unwrap();
    // The program blocks once the pipe, the server's window and the sockets' buffers are
    // full: its count stops growing (and stays far below what an unbounded reader takes).
    let last = stalled_count(&count);
    assert!(last.is_some(), "the program kept writing");
    let blocks = last.unwrap();
    assert!(blocks * 65536 < 64 << 20, "{blocks} blocks of 64 KiB taken");
    // The client then reads it all away: the program goes on.
    let mut buf = vec![0u8; 1 << 20];
    let mut more = 0;
    while more < (blocks + 8) * 65536 {
        more += s.read(&mut buf).expect("read") as u64;
    }
    let count_now = || {
        std::fs::read_to_string(&count)
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
    };
    assert!(eventually(WAIT, || count_now().is_some_and(|n| n > blocks)));
}

#[test]
fn a_program_that_dies_mid_response_leaves_it_cut() {
    let scripts = Scripts::new();
    scripts.add(
        "die",
        "printf 'Content-Type: text/plain\\r\\n\\r\\npart one\\n'\nkill -9 $$\n",
    );
    let srv = start(&scripts, |_| {});
    let mut s = connect(srv.addr);
    s.write_all(get("/cgi-bin/die").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let reply = read_reply(&mut r, false).expect("response");
    assert_eq!(reply.status, 200);
    assert!(
        !reply.complete,
        "a cut response must not end with the last chunk"
    );
    assert_eq!(reply.body, b"part one\n");
    assert!(closed_by_peer(&mut r));
    assert_eq!(srv.stats().cgi_died, 1);
}

#[test]
fn past_the_program_limit_requests_get_503_while_the_others_finish() {
    let scripts = Scripts::new();
    let gate = scripts.path().join("open");
    scripts.add(
        "wait",
        &format!(
            "i=0\nwhile [ ! -e {g} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\nprintf 'Content-Type: text/plain\\r\\n\\r\\ndone\\n'\n",
            g = gate.display()
        ),
    );
    let srv = start(&scripts, |c| c.cgi_max_programs = 2);
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = connect(srv.addr);
            s.write_all(get("/cgi-bin/wait").as_bytes()).unwrap();
            s
        })
        .collect();
    assert!(eventually(WAIT, || srv.stats().cgi_starts == 2));
    let r = ask(&srv, &get("/cgi-bin/wait"));
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    // Files are still served meanwhile.
    assert_eq!(ask(&srv, &get("/a.txt")).status, 200);
    std::fs::write(&gate, b"").unwrap();
    for s in held {
        let r = read_reply(&mut BufReader::new(s), false).expect("response");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"done\n"[..]));
    }
    let st = srv.stats();
    assert_eq!((st.cgi_busy, st.cgi_starts), (1, 2));
}

#[test]
fn the_connection_goes_on_after_a_program_answered() {
    let scripts = Scripts::new();
    scripts.add("hello", HELLO);
    let srv = start(&scripts, |_| {});
    let s = connect(srv.addr);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // Pipelined: two program answers and a file, in order, on one connection.
    w.write_all(
        format!(
            "{}{}{}",
            get("/cgi-bin/hello"),
            get("/cgi-bin/hello"),
            get("/a.txt")
        )
        .as_bytes(),
    )
    .unwrap();
    for _ in 0..2 {
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (200, &b"hello\n"[..])
        );
    }
    let file = read_reply(&mut r, false).unwrap();
    assert_eq!(file.body, b"hello");
    // HEAD: the head only, and the connection still goes on.
    w.write_all(b"HEAD /cgi-bin/hello HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let head = read_reply(&mut r, true).unwrap();
    assert_eq!((head.status, head.header("x-test")), (200, Some("yes")));
    w.write_all(get("/cgi-bin/hello").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().body, b"hello\n");
    // Connection: close is honoured after the program's answer.
    w.write_all(b"GET /cgi-bin/hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let last = read_reply(&mut r, false).unwrap();
    assert_eq!(last.header("connection"), Some("close"));
    assert!(closed_by_peer(&mut r));
    let st = srv.stop();
    assert_eq!((st.accepted, st.cgi_starts), (1, 5));
}

#[test]
fn an_http_1_0_client_gets_the_body_delimited_by_the_close() {
    let scripts = Scripts::new();
    scripts.add("hello", HELLO);
    let srv = start(&scripts, |_| {});
    let r = ask(&srv, "GET /cgi-bin/hello HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    assert!(r.header("transfer-encoding").is_none());
    assert_eq!(r.body, b"hello\n");
}

#[test]
fn programs_in_the_root_by_extension_only_if_executable_and_never_as_files() {
    let scripts = Scripts::new();
    let srv = TestServer::start(|c| c.cgi_extensions = vec![".cgi".into()]);
    let root = srv.root.path().to_path_buf();
    write_script(&root.join("run.cgi"), HELLO);
    std::fs::write(root.join("plain.cgi"), HELLO).unwrap();
    write_script(&root.join(".hidden.cgi"), HELLO);
    let r = ask(&srv, &get("/run.cgi"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello\n"[..]));
    assert_eq!(ask(&srv, &get("/plain.cgi")).status, 403);
    assert_eq!(ask(&srv, &get("/.hidden.cgi")).status, 404);
    assert_eq!(ask(&srv, &get("/nope.cgi")).status, 404);
    assert_eq!(ask(&srv, &get("/a.txt")).status, 200);
    drop(scripts);
}

#[test]
fn a_mount_serves_only_what_is_under_it() {
    let scripts = Scripts::new();
    scripts.add("hello", HELLO);
    let outside: PathBuf = scripts.path().parent().unwrap().to_path_buf();
    let srv = start(&scripts, |_| {});
    assert_eq!(ask(&srv, &get("/cgi-bin/../a.txt")).status, 400);
    assert_eq!(ask(&srv, &get("/cgi-bin/%2e%2e/x")).status, 400);
    assert_eq!(ask(&srv, &get("/cgi-bin/nothing")).status, 404);
    assert_eq!(ask(&srv, &get("/cgi-bin/")).status, 404);
    // A symlink out of the mount is not followed (symlinks_outside_root is off).
    write_script(&outside.join(format!("out-{}", std::process::id())), HELLO);
    std::os::unix::fs::symlink(
        outside.join(format!("out-{}", std::process::id())),
        scripts.path().join("link"),
    )
    .unwrap();
    assert_eq!(ask(&srv, &get("/cgi-bin/link")).status, 404);
    let _ = std::fs::remove_file(outside.join(format!("out-{}", std::process::id())));
}

#[test]
fn over_tls_with_https_on_and_a_large_body() {
    let scripts = Scripts::new();
    scripts
        .add(
            "https",
            "printf 'Content-Type: text/plain\\r\\n\\r\\nHTTPS=%s SCHEME=%s\\n' \"$HTTPS\" \"$REQUEST_SCHEME\"\n",
        )
        .add(
            "big",
            "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nhead -c 700000 /dev/zero\n",
        );
    let certs = tls_support::Certs::new(false);
    let srv = certs.serve(|c| scripts.mount(c));
    let client = certs.client(&tls_support::both_versions());
    let mut r = BufReader::new(tls_support::tls_connect(srv.addr, &client));
    r.get_mut()
        .write_all(get("/cgi-bin/https").as_bytes())
        .unwrap();
    let reply = read_reply(&mut r, false).unwrap();
    assert_eq!(reply.body, b"HTTPS=on SCHEME=https\n");
    // Larger than the output window many times over: paced by the TLS writer.
    r.get_mut()
        .write_all(get("/cgi-bin/big").as_bytes())
        .unwrap();
    let reply = read_reply(&mut r, false).unwrap();
    assert!(reply.complete);
    assert_eq!(reply.body.len(), 700_000);
    assert!(reply.body.iter().all(|&b| b == 0));
    // And the connection goes on.
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().body, b"hello");
}

#[test]
fn output_past_the_limit_is_cut_and_stderr_is_drained_and_counted() {
    let scripts = Scripts::new();
    scripts.add(
        "flood",
        "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nwhile :; do head -c 65536 /dev/zero || exit; echo 'a line on stderr' >&2; done\n",
    );
    let srv = start(&scripts, |c| c.cgi_max_output_bytes = 300 * 1024);
    let mut s = connect(srv.addr);
    s.write_all(get("/cgi-bin/flood").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let reply = read_reply(&mut r, false).expect("response");
    assert_eq!(reply.status, 200);
    assert!(
        !reply.complete,
        "a response cut at the limit has no last chunk"
    );
    assert!(reply.body.len() <= 300 * 1024, "{} bytes", reply.body.len());
    let st = srv.stats();
    assert_eq!(st.cgi_output_limits, 1);
    assert!(st.cgi_stderr_bytes > 0);
}

#[test]
fn each_answer_is_one_access_log_line_with_its_status_and_bytes() {
    let scripts = Scripts::new();
    scripts.add("hello", HELLO).add(
        "gone",
        "printf 'Status: 410 Gone\\r\\nContent-Type: text/plain\\r\\nContent-Length: 3\\r\\n\\r\\nbye'\n",
    );
    let log = tempfile::tempdir().unwrap();
    let path = log.path().join("access.log");
    let p = path.clone();
    let srv = start(&scripts, move |c| c.access_log = Some(p));
    assert_eq!(ask(&srv, &get("/cgi-bin/hello?x=1")).status, 200);
    assert_eq!(ask(&srv, &get("/cgi-bin/gone")).body, b"bye");
    srv.stop();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("\"GET /cgi-bin/hello?x=1 HTTP/1.1\" 200 6"),
        "{text}"
    );
    assert!(
        lines[1].contains("\"GET /cgi-bin/gone HTTP/1.1\" 410 3"),
        "{text}"
    );
}

#[test]
fn a_mount_without_its_directory_is_refused_at_start() {
    let root = tempfile::tempdir().unwrap();
    let config = Config {
        root: root.path().to_path_buf(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        cgi: vec!["/cgi-bin/=/nonexistent/flint-cgi".parse().unwrap()],
        ..Config::default()
    };
    match serve::Server::bind(config) {
        Err(e @ serve::ServeError::CgiDir { .. }) => {
            assert_eq!(e.to_string(), "CGI directory /nonexistent/flint-cgi")
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("bound with a missing CGI directory"),
    }
}

#[test]
fn a_mount_on_a_file_says_its_directory_is_not_one() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("a.txt");
    std::fs::write(&file, b"x").unwrap();
    let config = Config {
        root: root.path().to_path_buf(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        cgi: vec![format!("/cgi-bin/={}", file.display()).parse().unwrap()],
        ..Config::default()
    };
    let e = serve::Server::bind(config).err().expect("refused");
    let text = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(text.starts_with("CGI directory "), "{text}");
    assert!(text.ends_with(": not a directory"), "{text}");
    assert!(!text.contains("document root"), "{text}");
}

#[test]
fn a_mount_inside_the_root_or_holding_it_is_refused_at_start() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("www");
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    write_script(&root.join("scripts/env.sh"), "# SECRET\n");
    let with_mount = |dir: &std::path::Path| Config {
        root: root.clone(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        cgi: vec![format!("/run/={}", dir.display()).parse().unwrap()],
        ..Config::default()
    };
    // Inside it (by another spelling of the path too), the root itself, a directory above it.
    let inside = root.join("scripts/../scripts");
    for dir in [inside.as_path(), root.as_path(), top.path()] {
        match serve::Server::bind(with_mount(dir)) {
            Err(e @ serve::ServeError::CgiDirInRoot { .. }) => {
                let text = e.to_string();
                assert!(text.contains("inside the document root"), "{text}");
            }
            Err(e) => panic!("{}: another error: {e}", dir.display()),
            Ok(_) => panic!("{}: bound with programs among the files", dir.display()),
        }
    }
    // Beside it: served.
    let beside = top.path().join("cgi");
    std::fs::create_dir(&beside).unwrap();
    assert!(serve::Server::bind(with_mount(&beside)).is_ok());
}

#[test]
fn a_client_that_goes_away_takes_its_program_with_it() {
    let scripts = Scripts::new();
    let pid_file = scripts.path().join("pid");
    scripts.add(
        "linger",
        &format!(
            "echo $$ > {p}.tmp && mv {p}.tmp {p}\nexec sleep 1000\n",
            p = pid_file.display()
        ),
    );
    let srv = start(&scripts, |_| {});
    let mut s = connect(srv.addr);
    s.write_all(get("/cgi-bin/linger").as_bytes()).unwrap();
    assert!(eventually(WAIT, || read_pid(&pid_file).is_some()));
    let pid = read_pid(&pid_file).unwrap();
    drop(s);
    // Killed and reaped by the loop (it is the server's child).
    assert!(
        eventually(WAIT, || proc_state(pid).is_none()),
        "pid {pid} left"
    );
    assert_eq!(srv.stats().cgi_timeouts, 0);
}

/// Raises this process's open-file limit to at least `n` (up to its hard limit), for tests that
/// hold both ends of many connections.
fn at_least_files(n: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    if now.current.is_some_and(|c| c < n) {
        let want = now.maximum.map_or(n, |m| m.min(n));
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(want),
                maximum: now.maximum,
            },
        );
    }
}

#[test]
fn a_flood_of_a_thousand_requests_holds_the_program_limit_and_files_are_served() {
    const FLOOD: usize = 1000;
    at_least_files(3 * FLOOD as u64 + 256);
    let scripts = Scripts::new();
    scripts.add(
        "slow",
        "sleep 0.2\nprintf 'Content-Type: text/plain\\r\\n\\r\\ndone\\n'\n",
    );
    let srv = start(&scripts, |c| c.cgi_max_programs = 16);
    let mut flood: Vec<TcpStream> = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let mut s = connect(srv.addr);
        s.write_all(get("/cgi-bin/slow").as_bytes()).unwrap();
        flood.push(s);
    }
    // While they are under way, a file is served.
    assert_eq!(ask(&srv, &get("/a.txt")).status, 200);
    let (mut done, mut busy) = (0u64, 0u64);
    for s in flood {
        let r = read_reply(&mut BufReader::new(s), false).expect("every request answered");
        match r.status {
            200 => {
                assert_eq!(r.body, b"done\n");
                done += 1;
            }
            503 => {
                assert_eq!(r.header("retry-after"), Some("1"));
                busy += 1;
            }
            other => panic!("status {other}"),
        }
    }
    let st = srv.stats();
    assert_eq!(done + busy, FLOOD as u64);
    assert_eq!((st.cgi_starts, st.cgi_busy), (done, busy));
    assert!(done >= 16, "at least the limit's worth ran: {done}");
    assert!(
        busy > 0,
        "a thousand at once cannot all fit 16 programs of 0.2 s"
    );
}

#[test]
fn php_cgi_runs_as_a_program_with_its_query_body_and_fields() {
    // Debian's php-cgi (scripts/install-peers.sh), started per request through the script's
    // `#!` line, as a PHP site runs without FastCGI.
    let php = PathBuf::from("/usr/bin/php-cgi");
    assert!(
        php.is_file(),
        "php-cgi is missing: scripts/install-peers.sh installs it"
    );
    let scripts = Scripts::new();
    // The interpreter line: php-cgi refuses to run unless told it is not behind Apache's
    // redirect check.
    let path = scripts.path().join("t.php");
    std::fs::write(
        &path,
        "#!/usr/bin/php-cgi -dcgi.force_redirect=0\n<?php header('X-Php: yes'); \
         echo $_SERVER['REQUEST_METHOD'], ' ', $_GET['a'] ?? '-', ' ', \
         file_get_contents('php://input'), ' ', $_SERVER['SERVER_PROTOCOL'], \"\\n\";\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let srv = start(&scripts, |_| {});
    let r = ask(&srv, &get("/cgi-bin/t.php?a=1"));
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("x-php"), Some("yes"));
    assert_eq!(r.body, b"GET 1  HTTP/1.1\n");
    let post = "POST /cgi-bin/t.php HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n\
                Content-Length: 5\r\n\r\nhello";
    let r = ask(&srv, post);
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"POST - hello HTTP/1.1\n"[..])
    );
    let st = srv.stats();
    assert_eq!(st.cgi_starts, 2);
}
