//! At shutdown the programs still running are killed (their process groups) and reaped, not
//! waited for to the end of their wall time: a server asked to stop while a program sleeps for
//! ever, under a wall time and a grace far longer than the tests' bound, stops within it, over
//! HTTP/1.1 and HTTP/3 (each kills its own programs when the loop begins to drain).

use std::io::{BufReader, Write};

use crate::cgi_support::*;
use crate::common::*;
use crate::h3_support::cgi::CgiH3;
use serve::Config;

/// A program that writes its pid (it is then `sleep`'s) and sleeps for ever.
fn sleeper(pid: &std::path::Path) -> String {
    format!(
        "echo $$ > {p}.tmp && mv {p}.tmp {p}\nexec sleep 1000\n",
        p = pid.display()
    )
}

/// Wall time and grace far past the bound `stop` waits (`WAIT`).
fn long_limits(c: &mut Config) {
    c.cgi_timeout_ms = 600_000;
    c.send_timeout_ms = 600_000;
}

fn started(pid_file: &std::path::Path) -> u32 {
    assert!(
        eventually(WAIT, || read_pid(pid_file).is_some()),
        "the program never ran"
    );
    read_pid(pid_file).unwrap()
}

#[test]
fn shutdown_kills_a_running_program_over_http1() {
    let scripts = Scripts::new();
    let pid_file = scripts.path().join("pid");
    scripts.add("sleep", &sleeper(&pid_file));
    let srv = start(&scripts, long_limits);
    let mut s = connect(srv.addr);
    s.write_all(get("/cgi-bin/sleep").as_bytes()).unwrap();
    let pid = started(&pid_file);
    // `stop` waits at most WAIT for the server to end.
    let st = srv.stop();
    // Killed by the shutdown, not crashed: counted apart.
    assert_eq!((st.cgi_killed_at_shutdown, st.cgi_died), (1, 0));
    assert_eq!(proc_state(pid), None, "the program was not reaped");
    // Nothing of its response was sent: an error page, and the connection closes.
    let r = read_reply(&mut BufReader::new(s), false).expect("a response");
    assert_eq!(r.status, 502);
}

#[test]
fn shutdown_kills_a_running_program_over_http3() {
    let fx = CgiH3::new();
    let pid_file = fx.file("pid");
    fx.add("sleep", &sleeper(&pid_file));
    let (mut srv, mut d) = fx.start(long_limits);
    let stream = d.request("GET", "/cgi-bin/sleep", &[]);
    d.until(|d| {
        d.turn();
        read_pid(&pid_file).is_some()
    });
    let pid = started(&pid_file);
    srv.handle.shutdown();
    let got = d.wait(&[stream]);
    assert_eq!(got[0].status, 502);
    d.close();
    let st = srv.wait_exit().expect("run returned an error");
    // Killed by the shutdown, not crashed: counted apart.
    assert_eq!((st.cgi_killed_at_shutdown, st.cgi_died), (1, 0));
    assert_eq!(proc_state(pid), None, "the program was not reaped");
}
