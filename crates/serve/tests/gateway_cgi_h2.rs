//! CGI/1.1 over HTTP/2: a program's head as HEADERS, its output as DATA frames paced by flow
//! control, several streams' programs at once.

mod cgi_support;
mod common;
mod h2_support;

use cgi_support::*;
use common::*;

#[test]
fn over_http2_programs_answer_in_data_frames() {
    let scripts = Scripts::new();
    scripts
        .add("hello", HELLO)
        .add(
            "env",
            "printf 'Content-Type: text/plain\\n\\n'\nenv\n",
        )
        .add(
            "big",
            "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nhead -c 700000 /dev/zero\n",
        )
        .add("local", "printf 'Location: /a.txt\\r\\n\\r\\n'\n")
        .add("bad", "printf 'Content-Type: a\\rInjected: 1\\n\\nbody'\n");
    let srv = TestServer::start(|c| {
        scripts.mount(c);
        c.cgi_extensions = vec![".cgi".into()];
    });
    write_script(&srv.root.path().join("run.cgi"), HELLO);
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    for path in ["/cgi-bin/hello", "/run.cgi"] {
        let r = h2.get(path, &[]);
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, &b"hello\n"[..]),
            "{path}"
        );
        assert_eq!(r.header("x-test"), Some("yes"));
        assert_eq!(r.header("content-type"), Some("text/plain"));
    }
    let r = h2.get("/cgi-bin/env", &[("x-custom", "v"), ("cookie", "a=1")]);
    let text = String::from_utf8(r.body).unwrap();
    for want in [
        "SERVER_PROTOCOL=HTTP/2.0",
        "REQUEST_METHOD=GET",
        "HTTP_X_CUSTOM=v",
        "HTTP_COOKIE=a=1",
        "HTTP_HOST=t",
    ] {
        assert!(text.lines().any(|l| l == want), "{want} in {text}");
    }
    // Many times the stream's window and the output window: paced by flow control.
    let r = h2.get("/cgi-bin/big", &[]);
    assert_eq!((r.status, r.body.len()), (200, 700_000));
    let r = h2.get("/cgi-bin/local", &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    let r = h2.get("/cgi-bin/bad", &[]);
    assert_eq!(r.status, 502);
    assert!(r.header("injected").is_none());
    // And the connection goes on with files.
    assert_eq!(h2.get("/a.txt", &[]).body, b"hello");
    let st = srv.stats();
    assert_eq!(st.cgi_starts, 6);
}

#[test]
fn over_http2_streams_run_their_programs_at_once_and_each_has_its_wall_time() {
    let scripts = Scripts::new();
    let gate = scripts.path().join("open");
    scripts
        .add(
            "wait",
            &format!(
                "i=0\nwhile [ ! -e {g} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s\\n' \"$QUERY_STRING\"\n",
                g = gate.display()
            ),
        )
        .add("hang", "exec sleep 1000\n");
    let srv = start(&scripts, |c| c.cgi_timeout_ms = 1500);
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    let ids: Vec<_> = (0..3)
        .map(|n| h2.submit("GET", &format!("/cgi-bin/wait?{n}"), &[]))
        .collect();
    h2.flush();
    // Three programs run at once for one connection.
    assert!(eventually(WAIT, || srv.stats().cgi_starts == 3));
    std::fs::write(&gate, b"").unwrap();
    assert!(h2.run_until(|s| ids
        .iter()
        .all(|id| s.responses.get(id).is_some_and(|r| r.done))));
    for (n, id) in ids.iter().enumerate() {
        let r = &h2.seen.responses[id];
        assert_eq!(
            (r.status, r.body.clone()),
            (200, format!("{n}\n").into_bytes())
        );
    }
    let r = h2.get("/cgi-bin/hang", &[]);
    assert_eq!(r.status, 504);
    assert_eq!(srv.stats().cgi_timeouts, 1);
}

#[test]
fn over_http2_a_client_that_opens_no_window_stops_the_program() {
    let scripts = Scripts::new();
    let count = scripts.path().join("count");
    scripts.add("flood", &flood_script(&count));
    let srv = start(&scripts, |_| {});
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    h2.submit("GET", "/cgi-bin/flood", &[]);
    h2.flush();
    // Nothing is read: the stream's window (64 KiB) is all the server may send; the program's
    // buffer, its pipe and then the program stop.
    let last = stalled_count(&count);
    assert!(last.is_some(), "the program kept writing");
    assert!(
        last.unwrap() * 65536 < 16 << 20,
        "{last:?} blocks of 64 KiB taken"
    );
}

#[test]
fn over_http2_a_reset_stream_takes_its_program_and_the_connection_goes_on() {
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
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    let id = h2.submit("GET", "/cgi-bin/linger", &[]);
    h2.flush();
    assert!(eventually(WAIT, || read_pid(&pid_file).is_some()));
    let pid = read_pid(&pid_file).unwrap();
    h2.session
        .submit_rst_stream(id, http2::error_code::CANCEL)
        .unwrap();
    h2.flush();
    assert!(
        eventually(WAIT, || proc_state(pid).is_none()),
        "pid {pid} left"
    );
    assert_eq!(h2.get("/a.txt", &[]).body, b"hello");
}
