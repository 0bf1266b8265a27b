//! The access log's `%b` for a program's response over HTTP/1.1: a transfer the client cuts
//! off logs the body bytes the kernel accepted, as a file's does (`server_access_log_cut.rs`),
//! not the bytes taken from the program (up to the output window more); a whole one logs its
//! whole body, chunked or not. With one connection, the server's own count of the bytes the
//! kernel accepted (`written_bytes`) less the response head is the figure, exactly.

use std::io::{Read, Write};

use crate::cgi_support::{start, Scripts};
use crate::common::*;
use crate::server_access_log_cut::{bytes_of, log_path, logged, small_client, READ};

#[test]
fn a_cut_program_response_logs_the_body_bytes_the_kernel_accepted() {
    let (_dir, log) = log_path();
    let scripts = Scripts::new();
    let len: u64 = 32 << 20;
    scripts.add(
        "big",
        &format!(
            "printf 'Content-Type: application/octet-stream\\r\\nContent-Length: {len}\\r\\n\\r\\n'\n\
             head -c {len} /dev/zero\n"
        ),
    );
    let l2 = log.clone();
    let srv = start(&scripts, move |c| c.access_log = Some(l2));
    let (mut s, _) = small_client(srv.addr);
    s.write_all(get("/cgi-bin/big").as_bytes()).unwrap();
    // The head (kept until its end is found), then body bytes up to `READ`.
    let (mut got, mut head_len) = (Vec::new(), None);
    let mut buf = vec![0u8; 64 << 10];
    while head_len.is_none_or(|h| got.len() - h < READ) {
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
        head_len = got.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
    }
    assert!(got.starts_with(b"HTTP/1.1 200 "));
    let (head_len, read) = (head_len.unwrap() as u64, got.len() as u64);
    // The client reads no more: the kernel's buffers fill and the server holds the program's
    // output it took (up to the output window) unwritten. Then it goes. (Exact either way:
    // the wait only makes that held output likely, the case a count of the bytes taken from
    // the program gets wrong.)
    let mut last = u64::MAX;
    let _ = eventually(WAIT, || {
        let now = srv.stats().written_bytes;
        std::mem::replace(&mut last, now) == now
    });
    drop(s);
    let line = logged(&log, 1).remove(0);
    let b = bytes_of(&line);
    let st = srv.stop();
    let accepted = st.written_bytes + st.sendfile_bytes - head_len;
    println!("%b {b}: read {read}, accepted {accepted}, whole {len}");
    assert_eq!(b, accepted, "{line}");
    assert!(b >= read - head_len && b < len, "{line}");
    assert_eq!(st.status_2xx, 1);
}

#[test]
fn whole_program_responses_log_their_whole_body_chunked_or_not() {
    // Over the size whose line is held until its body is written: logged once written whole.
    let (_dir, log) = log_path();
    let scripts = Scripts::new();
    let len: u64 = 1 << 20;
    scripts.add(
        "sized",
        &format!("printf 'Content-Type: text/plain\\r\\nContent-Length: {len}\\r\\n\\r\\n'\nhead -c {len} /dev/zero\n"),
    );
    scripts.add(
        "chunked",
        &format!("printf 'Content-Type: text/plain\\r\\n\\r\\n'\nhead -c {len} /dev/zero\n"),
    );
    let l2 = log.clone();
    let srv = start(&scripts, move |c| c.access_log = Some(l2));
    let mut s = std::io::BufReader::new(connect(srv.addr));
    for path in ["/cgi-bin/sized", "/cgi-bin/chunked", "/a.txt"] {
        s.get_mut().write_all(get(path).as_bytes()).unwrap();
        let r = crate::cgi_support::read_reply(&mut s, false).unwrap();
        assert_eq!((r.status, r.complete), (200, true), "{path}");
    }
    let got = logged(&log, 3);
    let mut sizes: Vec<u64> = got.iter().map(|l| bytes_of(l)).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [5, len, len], "{got:?}");
    assert_eq!(srv.stop().status_2xx, 3);
}
