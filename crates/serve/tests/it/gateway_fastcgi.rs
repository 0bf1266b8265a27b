//! FastCGI in the event loop, with real applications the tests start and stop: php-fpm
//! (scripts in the document root, `*.php`) and fcgiwrap running shell scripts (a prefix), over
//! HTTP/1.1 and HTTP/2. Each request is checked on the wire, and what reached the application
//! by counting the connections made to it.

use crate::h2_support;
use crate::tls_support;

use std::io::{BufReader, Write};

use crate::cgi_support::*;
use crate::common::*;
use crate::fcgi_support::*;
use serve::{Config, ServerStats};

/// A script echoing what php-fpm was told of the request.
const ENV_PHP: &str = "<?php header('X-App: php');\n\
    echo $_SERVER['REQUEST_METHOD'], ' ', $_SERVER['SCRIPT_NAME'], ' ', $_SERVER['QUERY_STRING'],\n\
    ' ', $_SERVER['SERVER_PROTOCOL'], ' ', $_SERVER['HTTP_X_CUSTOM'] ?? '-', ' ',\n\
    $_SERVER['DOCUMENT_ROOT'] === dirname($_SERVER['SCRIPT_FILENAME']) ? 'root' : 'elsewhere', \"\\n\";\n";

fn php_server(app: &str, tweak: impl FnOnce(&mut Config)) -> TestServer {
    let srv = TestServer::start(|c| {
        c.fastcgi.push(format!("*.php={app}").parse().unwrap());
        tweak(c);
    });
    php_scripts(&srv);
    srv
}

fn php_scripts(srv: &TestServer) {
    write_file(srv.root.path(), "env.php", ENV_PHP);
    write_file(
        srv.root.path(),
        "echo.php",
        "<?php echo file_get_contents('php://input');",
    );
    write_file(srv.root.path(), "sleep.php", "<?php sleep(30);");
    write_file(
        srv.root.path(),
        "warn.php",
        "<?php error_log('a warning for the log'); echo 'ok';",
    );
    write_file(
        srv.root.path(),
        "big.php",
        "<?php echo str_repeat('0123456789', 30000);",
    );
}

#[test]
fn php_fpm_answers_get_post_and_head() {
    let fpm = App::php_fpm(2);
    let srv = php_server(&fpm.addr(), |_| {});
    let r = ask(
        &srv,
        "GET /env.php?a=1 HTTP/1.1\r\nHost: t\r\nX-Custom: v\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-app"), Some("php"));
    assert!(r
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/html")));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.complete);
    assert_eq!(r.body, b"GET /env.php a=1 HTTP/1.1 v root\n");

    // A body of several STDIN records, echoed back.
    let body: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut s = connect(srv.addr);
    let head = format!(
        "POST /echo.php HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let r = read_reply(&mut BufReader::new(s), false).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == body, "the body echoed: {} bytes", r.body.len());
    // An empty body: STDIN ends in the first write.
    let r = ask(
        &srv,
        "POST /echo.php HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!((r.status, r.body.len()), (200, 0));
    // A chunked one: read whole, then sent with its length.
    let r = ask(
        &srv,
        "POST /echo.php HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hi"[..]));

    let r = ask(&srv, "HEAD /env.php HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-app"), Some("php"));
    assert!(r.body.is_empty());

    // FCGI_STDERR goes to the error log, not to the client.
    let r = ask(&srv, "GET /warn.php HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));

    let r = ask(&srv, "GET /missing.php HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 404, "no such script: the files' answer");
    let st = srv.stop();
    assert_eq!(st.fastcgi_requests, 6);
    assert!(
        st.cgi_stderr_bytes >= 21,
        "{} bytes of stderr",
        st.cgi_stderr_bytes
    );
    assert_eq!(
        (st.fastcgi_failures, st.cgi_requests, st.cgi_starts),
        (0, 0, 0)
    );
}

#[test]
fn php_fpm_gets_a_chunked_body_decoded_with_its_length() {
    let fpm = App::php_fpm(2);
    let srv = php_server(&fpm.addr(), |_| {});
    write_file(
        srv.root.path(),
        "length.php",
        "<?php echo $_SERVER['CONTENT_LENGTH'] ?? '-', ' ', strlen(file_get_contents('php://input'));",
    );
    let s = connect(srv.addr);
    let w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 + i / 251) as u8).collect();
    // Empty, a few chunks, and 1 MiB (the limit): one connection kept alive after each.
    for (body, size) in [
        (Vec::new(), 1),
        (b"abcdefg".to_vec(), 3),
        (big.clone(), 7000),
    ] {
        let reply = send_and_read(&w, &mut r, chunked_post("/echo.php", &body, size));
        assert_eq!(reply.status, 200);
        assert!(reply.body == body, "the {} B echo differs", body.len());
    }
    // php-fpm reads as much of its stdin as CONTENT_LENGTH says.
    let reply = send_and_read(&w, &mut r, chunked_post("/length.php", &big, 65536));
    assert_eq!(reply.body, b"1048576 1048576");
    let over = chunked_post("/echo.php", &vec![b'x'; (1 << 20) + 1], 64 * 1024);
    assert_eq!(send_and_read(&w, &mut r, over).status, 413);
    assert!(closed_by_peer(&mut r));

    let s = connect(srv.addr);
    let w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // A chunk size that is no number.
    let bad = b"POST /echo.php HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
        zz\r\nabc\r\n0\r\n\r\n"
        .to_vec();
    assert_eq!(send_and_read(&w, &mut r, bad).status, 400);
    assert!(closed_by_peer(&mut r));
    let st = srv.stop();
    assert_eq!(st.fastcgi_requests, 6);
    assert_eq!(
        st.fastcgi_connects, 1,
        "the requests that reached php-fpm shared one connection"
    );
}

/// `n` requests on one HTTP/1.1 connection, each answered 200.
fn keep_alive_requests(srv: &TestServer, n: usize) {
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..n {
        s.write_all(format!("GET /env.php?{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(reply.status, 200);
        assert!(reply
            .body
            .starts_with(format!("GET /env.php {i} ").as_bytes()));
    }
}

#[test]
fn keep_alive_requests_reuse_one_fastcgi_connection() {
    let fpm = App::php_fpm(2);
    let relay = Relay::new(&fpm.socket);
    let srv = php_server(&relay.addr(), |_| {});
    keep_alive_requests(&srv, 5);
    assert_eq!(
        relay.accepted(),
        1,
        "five requests, one connection to php-fpm"
    );
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.fastcgi_connects), (5, 1));

    // The same over TCP (the connect completes in the loop, not at once).
    let relay = Relay::tcp(&fpm.socket);
    let srv = php_server(&relay.addr(), |_| {});
    keep_alive_requests(&srv, 3);
    assert_eq!(relay.accepted(), 1);
    assert_eq!(srv.stop().fastcgi_connects, 1);

    // Without a pool, a connection per request.
    let relay = Relay::new(&fpm.socket);
    let srv = php_server(&relay.addr(), |c| c.fastcgi_pool = Some(0));
    keep_alive_requests(&srv, 3);
    assert!(eventually(WAIT, || relay.accepted() == 3));
    assert_eq!(srv.stop().fastcgi_connects, 3);
}

/// php-fpm as Debian configures it (5 workers) behind two threads, 8 requests at once, twice:
/// an idle pooled connection holds a worker, so with more kept than there are workers the
/// requests queued behind them waited for the timeout (504). The default pool keeps fewer.
#[test]
fn the_default_pool_never_holds_every_worker_of_a_default_php_fpm() {
    let fpm = App::php_fpm(5);
    let srv = php_server(&fpm.addr(), |c| {
        c.threads = 2;
        c.cgi_timeout_ms = 8000;
    });
    write_file(
        srv.root.path(),
        "nap.php",
        "<?php usleep(200000); echo 'ok';",
    );
    for round in 0..2 {
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let addr = srv.addr;
                std::thread::spawn(move || exchange(addr, &get("/nap.php")).status)
            })
            .collect();
        let statuses: Vec<u16> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        assert_eq!(statuses, [200; 8], "round {round}");
    }
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.cgi_timeouts), (16, 0));
}

#[test]
fn an_application_down_or_refusing_gets_502() {
    let dir = tempfile::tempdir().unwrap();
    let refusing = refusing_socket(dir.path());
    let down = dir.path().join("nothing.sock");
    let srv = TestServer::start(|c| {
        c.fastcgi.push(
            format!("*.php=unix:{}", refusing.display())
                .parse()
                .unwrap(),
        );
        c.fastcgi
            .push(format!("/app/=unix:{}", down.display()).parse().unwrap());
    });
    write_file(srv.root.path(), "a.php", "<?php echo 1;");
    std::fs::create_dir(srv.root.path().join("app")).unwrap();
    write_file(&srv.root.path().join("app"), "x", "");
    for path in ["/a.php", "/app/x"] {
        let r = ask(&srv, &format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        assert_eq!(r.status, 502, "{path}");
    }
    // The server goes on: a file is still served on the same thread.
    assert_eq!(ask(&srv, &get("/a.txt")).status, 200);
    let st = srv.stop();
    assert_eq!(
        (
            st.fastcgi_requests,
            st.fastcgi_failures,
            st.fastcgi_connects
        ),
        (2, 2, 0)
    );
}

#[test]
fn an_application_too_slow_gets_504_and_its_connection_is_not_reused() {
    let fpm = App::php_fpm(2);
    let relay = Relay::new(&fpm.socket);
    // sleep.php sleeps 30 s; the next request's answer must come within the wall time on a
    // busy machine too.
    let srv = php_server(&relay.addr(), |c| c.cgi_timeout_ms = 5000);
    let r = ask(&srv, "GET /sleep.php HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 504);
    // The next request needs a connection of its own (the other worker answers it).
    keep_alive_requests(&srv, 1);
    assert_eq!(relay.accepted(), 2);
    let st = srv.stop();
    assert_eq!((st.cgi_timeouts, st.fastcgi_connects), (1, 2));
}

#[test]
fn fcgiwrap_runs_shell_scripts_under_a_prefix() {
    let wrap = App::fcgiwrap();
    let srv = TestServer::start(|c| {
        c.fastcgi
            .push(format!("/fcgi/={}", wrap.addr()).parse().unwrap());
    });
    let dir = srv.root.path().join("fcgi");
    std::fs::create_dir(&dir).unwrap();
    write_file(
        &dir,
        "echo.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nStatus: 201 Made\\r\\n\\r\\n'\n\
         echo \"$REQUEST_METHOD $SCRIPT_NAME $PATH_INFO $CONTENT_LENGTH\"\necho oops >&2\ncat\n",
    );
    let r = ask(&srv, "GET /fcgi/echo.sh/extra HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 201);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.body, b"GET /fcgi/echo.sh /extra \n");
    let r = ask(
        &srv,
        "POST /fcgi/echo.sh HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello there",
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.body, b"POST /fcgi/echo.sh  11\nhello there");
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.fastcgi_failures), (2, 0));
    assert!(st.status_2xx >= 2);
}

#[test]
fn over_http2_fastcgi_answers_in_data_frames() {
    let fpm = App::php_fpm(2);
    let relay = Relay::new(&fpm.socket);
    let srv = php_server(&relay.addr(), |_| {});
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    let r = h2.get("/env.php?q", &[("x-custom", "w")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-app"), Some("php"));
    assert_eq!(r.body, b"GET /env.php q HTTP/2.0 w root\n");
    // Many times the stream's window: paced by flow control.
    let r = h2.get("/big.php", &[]);
    assert_eq!((r.status, r.body.len()), (200, 300_000));
    let r = h2.request("HEAD", "/env.php", &[]);
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(
        relay.accepted(),
        1,
        "the streams took turns on one connection"
    );
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.fastcgi_failures), (3, 0));
}

/// A server whose `/app/` is the scripted responder `app`, with its script file in place.
fn scripted_server(app: &Scripted, tweak: impl FnOnce(&mut Config)) -> TestServer {
    let srv = TestServer::start(|c| {
        c.fastcgi
            .push(format!("/app/={}", app.addr()).parse().unwrap());
        tweak(c);
    });
    write_file(srv.root.path(), "app", "");
    srv
}

#[test]
fn a_request_on_a_pooled_connection_the_application_closed_is_sent_again_if_it_has_no_body() {
    // The first connection answers, then closes as the second request arrives; the second
    // connection answers that one, then closes as a POST arrives: a request with a body is not
    // sent again (the server no longer holds it), so that one gets 502.
    let app = Scripted::new(vec![
        vec![Step::Answer, Step::Close],
        vec![Step::Answer, Step::Close],
    ]);
    let srv = scripted_server(&app, |_| {});
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for want in ["connection 0 request 0", "connection 1 request 0"] {
        s.write_all(b"GET /app HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (200, want.as_bytes())
        );
    }
    s.write_all(b"POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().status, 502);
    assert_eq!(app.accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    let st = srv.stop();
    assert_eq!(
        (st.fastcgi_connects, st.fastcgi_retries, st.fastcgi_failures),
        (2, 1, 1)
    );
}

#[test]
fn a_kept_application_connection_costs_one_read_per_response() {
    // Requests one after the other on one client connection, each answered in one write after
    // the application's work: the server reads the answer once, after its event, not also
    // right after sending the request (a read that finds nothing).
    const REQUESTS: u64 = 40;
    let app = Scripted::new(vec![vec![Step::AnswerAfterWork; REQUESTS as usize]]);
    let srv = scripted_server(&app, |_| {});
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..REQUESTS {
        s.write_all(b"GET /app HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let reply = read_reply(&mut r, false).unwrap();
        let want = format!("connection 0 request {i}");
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (200, want.as_bytes())
        );
    }
    drop((s, r));
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.fastcgi_connects), (REQUESTS, 1));
    // An answer may come in two segments now and then on a busy machine: a read more.
    assert!(
        st.fastcgi_reads >= REQUESTS && st.fastcgi_reads < REQUESTS + REQUESTS / 4,
        "{} reads of the application's connection for {REQUESTS} responses",
        st.fastcgi_reads
    );
}

#[test]
fn an_idle_connection_the_application_closed_is_not_taken_from_the_pool() {
    let app = Scripted::new(vec![vec![Step::Answer], vec![Step::Answer]]);
    let srv = scripted_server(&app, |_| {});
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.body, b"connection 0 request 0");
    // The application closes the connection after its one request; the server sees it in an
    // event of its own (while the connection is idle, or as its request ends if the close came
    // with the answer). Asked before the server had read that event, the request would take the
    // closed connection and be sent again: correct too, and tested apart.
    assert!(eventually(WAIT, || app
        .closed
        .load(std::sync::atomic::Ordering::SeqCst)
        == 1));
    assert!(eventually(WAIT, || srv.stats().pool_peer_closed == 1));
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"connection 1 request 0"[..])
    );
    let st = srv.stop();
    // Seen closed before any request was sent on it: no retry was needed.
    assert_eq!(
        (st.fastcgi_connects, st.fastcgi_retries, st.fastcgi_failures),
        (2, 0, 0)
    );
}

#[test]
fn a_request_the_application_refuses_gets_502_and_its_connection_is_not_reused() {
    let app = Scripted::new(vec![
        vec![Step::Overloaded, Step::Answer],
        vec![Step::Answer],
    ]);
    let srv = scripted_server(&app, |_| {});
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"connection 1 request 0"[..])
    );
    let st = srv.stop();
    assert_eq!((st.fastcgi_connects, st.fastcgi_failures), (2, 1));
}

#[test]
fn an_application_that_closes_mid_response_leaves_it_cut() {
    let app = Scripted::new(vec![vec![Step::Cut], vec![Step::Answer]]);
    let srv = scripted_server(&app, |_| {});
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 200, "the head was sent");
    assert_eq!(r.body, b"connection 0 request 0");
    assert!(
        !r.complete,
        "no last chunk: the client knows the body is cut"
    );
    // The broken connection is not reused: the next request gets a new one.
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"connection 1 request 0"[..])
    );
    let st = srv.stop();
    assert_eq!((st.fastcgi_connects, st.fastcgi_failures), (2, 1));
}

#[test]
fn a_client_that_reads_nothing_stops_the_application_not_the_servers_memory() {
    let wrap = App::fcgiwrap();
    let srv = TestServer::start(|c| {
        c.fastcgi
            .push(format!("/fcgi/={}", wrap.addr()).parse().unwrap());
    });
    let dir = srv.root.path().join("fcgi");
    std::fs::create_dir(&dir).unwrap();
    let count = wrap.dir.path().join("count");
    write_file(
        &dir,
        "flood",
        &format!("#!/bin/sh\n{}", flood_script(&count)),
    );
    let mut s = connect(srv.addr);
    // A small receive buffer (no autotuning): the pipeline fills in fewer of the script's
    // blocks, each a `head` started by the shell, slow on a busy machine.
    socket2::SockRef::from(&s)
        .set_recv_buffer_size(32 << 10)
        .unwrap();
    s.write_all(get("/fcgi/flood").as_bytes()).unwrap();
    // The script blocks once its pipe to fcgiwrap, fcgiwrap's socket to the server, the
    // server's window and the client's socket are full: its count stops growing. Four
    // buffers fill, not two as for a CGI program: the bound is longer.
    let last = stalled_count_within(&count, 3 * WAIT);
    assert!(last.is_some(), "the script kept writing");
    let blocks = last.unwrap();
    assert!(blocks * 65536 < 64 << 20, "{blocks} blocks of 64 KiB taken");
    // The client then reads it all away: the script goes on.
    let mut buf = vec![0u8; 1 << 20];
    let mut more = 0;
    while more < (blocks + 8) * 65536 {
        more += std::io::Read::read(&mut s, &mut buf).expect("read") as u64;
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
fn over_tls_the_application_is_told_https_and_a_large_answer_is_paced() {
    let fpm = App::php_fpm(1);
    let certs = tls_support::Certs::new(false);
    let srv = certs.serve(|c| {
        c.fastcgi
            .push(format!("*.php={}", fpm.addr()).parse().unwrap())
    });
    php_scripts(&srv);
    write_file(
        srv.root.path(),
        "https.php",
        "<?php echo $_SERVER['HTTPS'], ' ', $_SERVER['REQUEST_SCHEME'];",
    );
    let client = certs.client(&tls_support::both_versions());
    let mut r = BufReader::new(tls_support::tls_connect(srv.addr, &client));
    r.get_mut().write_all(get("/https.php").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().body, b"on https");
    r.get_mut().write_all(get("/big.php").as_bytes()).unwrap();
    let reply = read_reply(&mut r, false).unwrap();
    assert!(reply.complete);
    assert_eq!(reply.body, "0123456789".repeat(30_000).as_bytes());
    // And the connection goes on.
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().body, b"hello");
}

#[test]
fn a_post_without_a_body_is_not_sent_again_on_a_new_connection() {
    // The application may have run it and died before writing: a POST must not run twice,
    // even one of 0 bytes. A DELETE (idempotent) is sent again.
    let app = Scripted::new(vec![
        vec![Step::Answer, Step::Close],
        vec![Step::Answer, Step::Close],
        vec![Step::Answer],
    ]);
    let srv = scripted_server(&app, |_| {});
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"GET /app HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().status, 200);
    s.write_all(b"POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut r, false).unwrap().status, 502);
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.body, b"connection 1 request 0");
    let r = ask(&srv, "DELETE /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"connection 2 request 0"[..])
    );
    let st = srv.stop();
    assert_eq!((st.fastcgi_retries, st.fastcgi_failures), (1, 1));
}

#[test]
fn an_application_writing_only_to_stderr_is_held_to_the_output_limit() {
    let app = Scripted::new(vec![vec![Step::StderrFlood], vec![Step::Answer]]);
    let srv = scripted_server(&app, |c| c.cgi_max_output_bytes = 64 * 1024);
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        r.body, b"connection 1 request 0",
        "the flooding connection is not reused"
    );
    let st = srv.stop();
    assert!(
        st.cgi_stderr_bytes <= 64 * 1024 + 8000,
        "{}",
        st.cgi_stderr_bytes
    );
}

#[test]
fn a_connection_whose_request_body_was_not_all_sent_is_not_reused() {
    let app = Scripted::new(vec![
        vec![Step::AnswerBeforeBody, Step::Answer],
        vec![Step::Answer],
    ]);
    let srv = scripted_server(&app, |_| {});
    let body = vec![b'b'; 256 * 1024];
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(
        format!(
            "POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    // The answer may come before the whole body is written: write it from another thread.
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&body));
    assert_eq!(read_reply(&mut r, false).unwrap().status, 200);
    let _ = writer.join();
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"connection 1 request 0"[..])
    );
}

#[test]
fn an_answer_sent_before_the_body_was_read_reaches_the_client_whole() {
    // An application that rejects an 8 MiB upload unread: it answers whole (STDOUT and
    // END_REQUEST) and closes while the server is still sending the body, whose next write
    // fails. The answer, already in the server's socket, is the response, whole.
    let st = upload_answered_unread(Step::AnswerUnreadThenClose);
    assert_eq!(
        (
            st.fastcgi_requests,
            st.fastcgi_connects,
            st.fastcgi_failures
        ),
        (2, 2, 0)
    );
}

#[test]
fn a_connection_whose_request_write_failed_is_not_kept() {
    // The same, but the application keeps the connection open after its answer, as if for
    // the next request: its STDIN cut, it is closed, never pooled. Pooled, it would be taken
    // for the next request, whose first write fails there: sent again on a new connection
    // (a retry), with the same answer.
    let st = upload_answered_unread(Step::AnswerUnreadThenWait);
    assert_eq!(
        (
            st.fastcgi_requests,
            st.fastcgi_connects,
            st.fastcgi_retries,
            st.fastcgi_failures
        ),
        (2, 2, 0, 0)
    );
}

/// An 8 MiB upload to a scripted application whose first connection does `step` (its answer
/// before the body is read), then a GET: both answers checked, the server's counts returned.
fn upload_answered_unread(step: Step) -> ServerStats {
    let app = Scripted::new(vec![vec![step], vec![Step::Answer]]);
    let srv = scripted_server(&app, |c| c.max_body_bytes = 64 << 20);
    let body_len = 8 << 20;
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(
        format!("POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: {body_len}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    // The answer comes long before the body's end: the body goes from another thread, which
    // stops when the server stops taking it.
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'u'; 64 << 10];
        for _ in 0..body_len / chunk.len() {
            if s.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let reply = read_reply(&mut r, false).unwrap();
    assert_eq!(
        (reply.status, reply.body.as_slice()),
        (200, &b"connection 0 request 0"[..]),
        "the application's answer"
    );
    assert!(reply.complete, "the response ended with its last chunk");
    drop(r);
    writer.join().unwrap();
    // The next request takes a new connection: the first one was closed, its STDIN cut.
    let r = ask(&srv, "GET /app HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"connection 1 request 0"[..])
    );
    srv.stop()
}

#[test]
fn php_fpm_answering_an_upload_it_never_reads_is_passed_whole() {
    // A script that refuses an 8 MiB upload without reading it: php-fpm sends the answer, and
    // reads the body away before its END_REQUEST, so no write of the request fails: this
    // guards what php-fpm always got (the answer whole, nothing failed), not the failed
    // write's path, which the scripted application's tests above take.
    let fpm = App::php_fpm(1);
    let srv = php_server(&fpm.addr(), |c| c.max_body_bytes = 64 << 20);
    write_file(
        srv.root.path(),
        "refuse.php",
        "<?php http_response_code(413); echo 'too large';",
    );
    let body_len = 8 << 20;
    for _ in 0..2 {
        let mut s = connect(srv.addr);
        let mut r = BufReader::new(s.try_clone().unwrap());
        s.write_all(format!("POST /refuse.php HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: {body_len}\r\n\r\n").as_bytes())
            .unwrap();
        let writer = std::thread::spawn(move || {
            let chunk = vec![b'u'; 64 << 10];
            for _ in 0..body_len / chunk.len() {
                if s.write_all(&chunk).is_err() {
                    return;
                }
            }
        });
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (413, &b"too large"[..])
        );
        assert!(reply.complete);
        drop(r);
        writer.join().unwrap();
    }
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.fastcgi_failures), (2, 0));
}

/// A script `/app` answered by a scripted application, with `revalidate_ms`, asked once and
/// then asked again after its file was removed: the second answer's status.
fn status_after_the_script_is_removed(revalidate_ms: u64) -> (u16, Vec<u8>) {
    let app = Scripted::new(vec![vec![Step::Answer, Step::Answer]]);
    let srv = TestServer::start(|c| {
        c.revalidate_ms = revalidate_ms;
        c.fastcgi
            .push(format!("/app/={}", app.addr()).parse().unwrap());
    });
    write_file(srv.root.path(), "app", "");
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"GET /app/x?q HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let reply = read_reply(&mut r, false).unwrap();
    assert_eq!(
        (reply.status, reply.body.as_slice()),
        (200, &b"connection 0 request 0"[..])
    );
    std::fs::remove_file(srv.root.path().join("app")).unwrap();
    s.write_all(b"GET /app/x?q HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let reply = read_reply(&mut r, false).unwrap();
    srv.stop();
    (reply.status, reply.body)
}

#[test]
fn a_script_found_is_not_looked_up_again_within_revalidate_ms() {
    // Kept: the file's removal is not seen for a minute (the application does not read it).
    assert_eq!(
        status_after_the_script_is_removed(60_000),
        (200, b"connection 0 request 1".to_vec())
    );
}

#[test]
fn a_script_changed_on_disk_is_looked_up_again_after_revalidate_ms() {
    assert_eq!(status_after_the_script_is_removed(0).0, 404);
}
