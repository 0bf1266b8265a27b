//! CGI/1.1 over HTTP/2: a program's head as HEADERS, its output as DATA frames paced by flow
//! control, several streams' programs at once.

use crate::h2_support;

use std::io::Write;

use crate::cgi_support::*;
use crate::common::*;

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

/// A POST on stream 1 by raw frames (the test client sends no bodies): `body` in DATA frames
/// (`None`: the stream left open, no DATA), and the first byte of the response's HEADERS
/// (0x88 is `:status 200`, HPACK static entry 8) and its DATA, read until the stream ends.
fn post_raw(srv: &TestServer, path: &str, body: Option<&[u8]>, with_length: bool) -> (u8, Vec<u8>) {
    post_raw_split(srv, path, body, with_length, false)
}

/// [`post_raw`]; with `split`, the last DATA frame is sent only once the server has answered a
/// PING sent after the others: it has seen the request without the end of its body.
fn post_raw_split(
    srv: &TestServer,
    path: &str,
    body: Option<&[u8]>,
    with_length: bool,
    split: bool,
) -> (u8, Vec<u8>) {
    post_raw_with(srv, path, body, with_length, split, &[])
}

/// [`post_raw_split`] with `extra` fields.
fn post_raw_with(
    srv: &TestServer,
    path: &str,
    body: Option<&[u8]>,
    with_length: bool,
    split: bool,
    extra: &[(&[u8], &[u8])],
) -> (u8, Vec<u8>) {
    let (hold, body) = (body.is_none(), body.unwrap_or_default());
    use crate::h2_support::raw;
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
    raw::literal(&mut block, 4, path.as_bytes());
    raw::literal(&mut block, 1, b"t");
    for (name, value) in extra {
        raw::literal_name(&mut block, name, value);
    }
    if with_length {
        raw::literal_name(
            &mut block,
            b"content-length",
            body.len().to_string().as_bytes(),
        );
    }
    let end = if body.is_empty() && !hold {
        raw::END_STREAM
    } else {
        0
    };
    raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS | end, 1, &block);
    let chunks: Vec<&[u8]> = body.chunks(16_384).collect();
    let mut early = Vec::new();
    for (k, chunk) in chunks.iter().enumerate() {
        let flags = if k + 1 == chunks.len() {
            if split {
                raw::frame(&mut out, raw::PING, 0, 0, &[7; 8]);
                s.write_all(&out).unwrap();
                out.clear();
                let ack = |f: &raw::Frame| f.0 == raw::PING && f.1 & 1 != 0;
                early = raw::read_until(&mut s, |fs| fs.iter().any(ack));
            }
            raw::END_STREAM
        } else {
            0
        };
        raw::frame(&mut out, raw::DATA, flags, 1, chunk);
    }
    s.write_all(&out).unwrap();
    let ended = |f: &raw::Frame| f.2 == 1 && (f.1 & raw::END_STREAM != 0 || f.0 == raw::RST_STREAM);
    let mut frames = early;
    if !frames.iter().any(ended) {
        frames.extend(raw::read_until(&mut s, |fs| fs.iter().any(ended)));
    }
    let first = frames
        .iter()
        .find(|f| f.0 == raw::HEADERS && f.2 == 1)
        .map_or(0, |f| f.3[0]);
    let data = frames
        .iter()
        .filter(|f| f.0 == raw::DATA && f.2 == 1)
        .flat_map(|f| f.3.iter().copied())
        .collect();
    (first, data)
}

#[test]
fn over_http2_a_request_body_reaches_stdin() {
    let scripts = Scripts::new();
    scripts.add(
        "echo",
        "printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nprintf '%s:' \"$CONTENT_LENGTH\"\nexec cat\n",
    );
    let srv = start(&scripts, |_| {});
    let body: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let (status, data) = post_raw(&srv, "/cgi-bin/echo", Some(&body), true);
    assert_eq!(status, 0x88, ":status 200");
    let mut want = b"40000:".to_vec();
    want.extend_from_slice(&body);
    assert!(
        data == want,
        "echo of {} bytes: got {}",
        body.len(),
        data.len()
    );
    let (status, data) = post_raw(&srv, "/cgi-bin/echo", Some(b""), false);
    assert_eq!((status, data.as_slice()), (0x88, &b":"[..]));
    // A body that arrived whole with its request: its length is known.
    let (status, data) = post_raw(&srv, "/cgi-bin/echo", Some(b"abc"), false);
    assert_eq!((status, data.as_slice()), (0x88, &b"3:abc"[..]));
    // A body in several DATA frames whose length is not said up front: kept to its
    // END_STREAM, then given with its length.
    let (status, data) = post_raw_split(&srv, "/cgi-bin/echo", Some(&body), false, true);
    assert_eq!(status, 0x88, ":status 200");
    assert!(
        data == want,
        "echo of {} bytes: got {}",
        body.len(),
        data.len()
    );
    let st = srv.stop();
    assert_eq!((st.cgi_starts, st.status_4xx), (4, 0));
}

#[test]
fn over_http2_a_body_awaited_on_a_protected_path_is_checked_once() {
    let scripts = Scripts::new();
    scripts.add(
        "who",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s:%s' \"$REMOTE_USER\" \"$CONTENT_LENGTH\"\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash_with_salt("pw-alice", 4, *b"0123456789abcdef")
        .unwrap()
        .format_for_version(bcrypt::Version::TwoY);
    let file = dir.path().join("htpasswd");
    std::fs::write(&file, format!("alice:{hash}\n")).unwrap();
    let srv = start(&scripts, |c| {
        c.auth.push(serve::config::AuthZone {
            prefix: "/cgi-bin".into(),
            file,
            realm: "flint".into(),
        });
    });
    // alice:pw-alice; a body whose length is not said, its end sent after the server saw
    // the request: answered at its END_STREAM.
    let creds: [(&[u8], &[u8]); 1] = [(b"authorization", b"Basic YWxpY2U6cHctYWxpY2U=")];
    let body = vec![b'a'; 40_000];
    let (status, data) = post_raw_with(&srv, "/cgi-bin/who", Some(&body), false, true, &creds);
    assert_eq!((status, &data[..]), (0x88, &b"alice:40000"[..]));
    let st = srv.stop();
    // Its verdict at its head kept for its end: one check, one success.
    assert_eq!(
        (st.auth_ok, st.auth_failed, st.auth_missing),
        (1, 0, 0),
        "{st:?}"
    );
}

#[test]
fn over_http2_a_body_without_its_length_past_the_limit_starts_no_program() {
    let scripts = Scripts::new();
    scripts.add(
        "echo",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nexec cat\n",
    );
    let srv = start(&scripts, |c| c.max_body_bytes = 20_000);
    let body = vec![b'x'; 40_000];
    let (status, data) = post_raw_split(&srv, "/cgi-bin/echo", Some(&body), false, true);
    assert_eq!((status, data.len()), (0, 0), "reset, with no response");
    let (status, data) = post_raw_split(&srv, "/cgi-bin/echo", Some(&body[..20_000]), false, true);
    assert_eq!(
        (status, data.len()),
        (0x88, 20_000),
        "the limit itself passes"
    );
    assert_eq!(srv.stop().cgi_starts, 1);
}

#[test]
fn over_http2_a_program_that_dies_mid_response_resets_its_stream() {
    let scripts = Scripts::new();
    scripts.add(
        "die",
        "printf 'Content-Type: text/plain\\r\\n\\r\\npart one\\n'\nkill -9 $$\n",
    );
    let srv = start(&scripts, |_| {});
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    // Whether the server reads the program's output before or together with its death (both
    // happen, by how the two processes are scheduled), the response comes and is then cut.
    const RUNS: u64 = 12;
    for run in 0..RUNS {
        let r = h2.get("/cgi-bin/die", &[]);
        assert_eq!(r.status, 200, "run {run}: the head goes before the reset");
        assert_eq!(r.body, b"part one\n", "run {run}: what came is sent");
        assert_eq!(
            r.reset,
            Some(http2::error_code::INTERNAL_ERROR),
            "run {run}: cut, not ended"
        );
    }
    assert_eq!(srv.stats().cgi_died, RUNS);
    // The connection goes on.
    assert_eq!(h2.get("/a.txt", &[]).body, b"hello");
}

#[test]
fn over_http2_a_stream_reset_while_its_body_is_awaited_starts_no_program() {
    use crate::h2_support::raw;
    let scripts = Scripts::new();
    scripts.add(
        "echo",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nexec cat\n",
    );
    scripts.add("hello", HELLO);
    let srv = start(&scripts, |_| {});
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    // A POST with no content-length, part of its body, then the client's reset.
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
    raw::literal(&mut block, 4, b"/cgi-bin/echo");
    raw::literal(&mut block, 1, b"t");
    raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, 1, &block);
    raw::frame(&mut out, raw::DATA, 0, 1, b"abc");
    raw::frame(&mut out, raw::RST_STREAM, 0, 1, &8u32.to_be_bytes()); // CANCEL
                                                                      // Then a request on the same connection.
    raw::get(&mut out, 3, "/cgi-bin/hello", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let ended = |f: &raw::Frame| f.2 == 3 && f.1 & raw::END_STREAM != 0;
    let frames = raw::read_until(&mut s, |fs| fs.iter().any(ended));
    assert!(frames.iter().all(|f| f.2 != 1), "nothing answers stream 1");
    let status = frames.iter().find(|f| f.0 == raw::HEADERS && f.2 == 3);
    assert_eq!(
        status.map(|f| f.3[0]),
        Some(0x88),
        ":status 200 on stream 3"
    );
    assert_eq!(srv.stop().cgi_starts, 1);
}

#[test]
fn over_http2_a_204_or_304_from_a_program_says_no_length() {
    let scripts = Scripts::new();
    scripts
        .add(
            "empty",
            "printf 'Status: 204 No Content\\r\\nContent-Length: 5\\r\\n\\r\\n'\n",
        )
        .add(
            "same",
            "printf 'Status: 304 Not Modified\\r\\nContent-Length: 5\\r\\n\\r\\n'\n",
        );
    let srv = start(&scripts, |_| {});
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    for (path, status) in [("/cgi-bin/empty", 204), ("/cgi-bin/same", 304)] {
        let r = h2.get(path, &[]);
        assert_eq!(
            (r.status, r.reset),
            (status, Some(http2::error_code::NO_ERROR)),
            "{path}: ended cleanly"
        );
        assert_eq!(r.header("content-length"), None, "{path}");
        assert!(r.body.is_empty(), "{path}");
    }
    assert_eq!(h2.get("/a.txt", &[]).body, b"hello");
}

#[test]
fn over_http2_every_field_of_a_program_goes_out() {
    let scripts = Scripts::new();
    scripts.add(
        "cookies",
        "i=0\nwhile [ $i -lt 40 ]; do printf 'Set-Cookie: c%d=%d\\r\\n' $i $i; i=$((i+1)); done\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n",
    );
    let srv = start(&scripts, |_| {});
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    for _ in 0..2 {
        let r = h2.get("/cgi-bin/cookies", &[]);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
        let cookies: Vec<&str> = r
            .headers
            .iter()
            .filter(|(n, _)| n == "set-cookie")
            .map(|(_, v)| v.as_str())
            .collect();
        let want: Vec<String> = (0..40).map(|i| format!("c{i}={i}")).collect();
        assert_eq!(cookies, want);
        assert_eq!(r.header("content-type"), Some("text/plain"));
    }
}

/// Sends `len` bytes of body on each of `streams` (not ended), within the connection's
/// window: whenever it is spent, a PING's answer brings the server's WINDOW_UPDATEs. The
/// frames read meanwhile.
fn send_bodies(
    s: &mut std::net::TcpStream,
    streams: &[u32],
    len: usize,
) -> Vec<(u8, u8, u32, Vec<u8>)> {
    use crate::h2_support::raw;
    let mut window: i64 = 65_535;
    let mut frames = Vec::new();
    let body = vec![b'f'; len];
    for &id in streams {
        for chunk in body.chunks(16_384) {
            while window < chunk.len() as i64 {
                let mut out = Vec::new();
                raw::ping(&mut out, false, [9; 8]);
                s.write_all(&out).unwrap();
                let ack = |f: &raw::Frame| f.0 == raw::PING && f.1 & 1 != 0;
                let got = raw::read_until(s, |fs| fs.iter().any(ack));
                assert!(got.iter().any(ack), "closed: {got:?}");
                window += (got.iter())
                    .filter(|f| f.0 == raw::WINDOW_UPDATE && f.2 == 0)
                    .map(|f| i64::from(u32::from_be_bytes(f.3[..4].try_into().unwrap())))
                    .sum::<i64>();
                frames.extend(got);
            }
            let mut out = Vec::new();
            raw::frame(&mut out, raw::DATA, 0, id, chunk);
            s.write_all(&out).unwrap();
            window -= chunk.len() as i64;
        }
    }
    frames
}

#[test]
fn over_http2_a_body_refused_for_room_with_its_end_in_the_same_read_starts_no_program() {
    use crate::h2_support::raw;
    let scripts = Scripts::new();
    scripts.add(
        "count",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s' \"$CONTENT_LENGTH\"\n",
    );
    scripts.add("hello", HELLO);
    // The connection's gathered bodies may hold 4 x 40 000 bytes.
    let srv = start(&scripts, |c| c.max_body_bytes = 40_000);
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    let post = |out: &mut Vec<u8>, id: u32, flags: u8| {
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        raw::literal(&mut block, 4, b"/cgi-bin/count");
        raw::literal(&mut block, 1, b"t");
        raw::frame(out, raw::HEADERS, raw::END_HEADERS | flags, id, &block);
    };
    let fill = [1, 3, 5, 7];
    for id in fill {
        post(&mut out, id, 0);
    }
    s.write_all(&out).unwrap();
    // Bodies of unknown length, not ended, that fill the connection's room.
    let mut frames = send_bodies(&mut s, &fill, 39_000);
    // Then one whose head, body and end come in one read.
    let mut out = Vec::new();
    post(&mut out, 9, 0);
    raw::frame(&mut out, raw::DATA, raw::END_STREAM, 9, b"x");
    raw::get(&mut out, 11, "/cgi-bin/hello", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let reset_9 = |f: &raw::Frame| f.0 == raw::RST_STREAM && f.2 == 9;
    let ended_11 = |f: &raw::Frame| f.2 == 11 && f.1 & raw::END_STREAM != 0;
    frames.extend(raw::read_until(&mut s, |fs| {
        fs.iter().any(reset_9) && fs.iter().any(ended_11)
    }));
    let code = (frames.iter().find(|f| reset_9(f)))
        .map(|f| u32::from_be_bytes(f.3[..4].try_into().unwrap()));
    assert_eq!(code, Some(7), "REFUSED_STREAM: {frames:?}");
    assert!(
        !frames.iter().any(|f| f.0 == raw::HEADERS && f.2 == 9),
        "stream 9 answered: {frames:?}"
    );
    // Only hello's program ran (the others' bodies have not ended).
    assert_eq!(srv.stats().cgi_starts, 1);
    drop(s);
}

#[test]
fn over_http2_many_small_posts_at_once_under_a_small_body_limit_all_reach_their_programs() {
    use crate::h2_support::raw;
    let scripts = Scripts::new();
    scripts.add(
        "count",
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf '%s' \"$CONTENT_LENGTH\"\n",
    );
    let srv = start(&scripts, |c| c.max_body_bytes = 4096);
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    // Twenty POSTs at once, every other one without its length (gathered): their heads, then
    // their bodies, in one write.
    let ids: Vec<u32> = (0..20).map(|k| 1 + 2 * k).collect();
    for &id in &ids {
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        raw::literal(&mut block, 4, b"/cgi-bin/count");
        raw::literal(&mut block, 1, b"t");
        if id % 4 == 1 {
            raw::literal_name(&mut block, b"content-length", b"100");
        }
        raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, id, &block);
    }
    for &id in &ids {
        raw::frame(&mut out, raw::DATA, raw::END_STREAM, id, &[b'p'; 100]);
    }
    s.write_all(&out).unwrap();
    let ended = |fs: &[raw::Frame], id: u32| {
        fs.iter()
            .any(|f| f.2 == id && (f.1 & raw::END_STREAM != 0 || f.0 == raw::RST_STREAM))
    };
    let frames = raw::read_until(&mut s, |fs| ids.iter().all(|&id| ended(fs, id)));
    for &id in &ids {
        let status = frames.iter().find(|f| f.0 == raw::HEADERS && f.2 == id);
        assert_eq!(
            status.map(|f| f.3[0]),
            Some(0x88),
            "200 on {id}: {frames:?}"
        );
        let body: Vec<u8> = (frames.iter())
            .filter(|f| f.0 == raw::DATA && f.2 == id)
            .flat_map(|f| f.3.iter().copied())
            .collect();
        assert_eq!(body, b"100", "stream {id}");
    }
    assert_eq!(srv.stats().cgi_starts, 20);
    drop(s);
}
