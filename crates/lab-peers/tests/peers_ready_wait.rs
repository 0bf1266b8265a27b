//! Waiting for a peer that never listens: bounded by its ready timeout, and paused between
//! polls, not spun. The peer is a fake flint (a script that answers `--version`, then sleeps);
//! the wait's cost is the CPU time this process took during it, against the wall time it
//! lasted, so that the test holds however loaded the machine is (a busy machine stretches the
//! wall time, never the CPU time of a sleeping poller).

use lab_peers::{Peer, PeerError, PeerKind, PeerSpec};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

#[test]
fn a_peer_that_never_listens_is_waited_for_without_spinning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = dir.path().join("flint");
    std::fs::write(
        &fake,
        "#!/bin/sh\ncase \"$1\" in --version) echo 'flint 0.0.0'; exit 0;; esac\nexec sleep 300\n",
    )
    .expect("write the fake");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let root = tempfile::tempdir().expect("tempdir");
    let wait = Duration::from_secs(3);
    let spec = PeerSpec {
        root: root.path().to_owned(),
        digest: false,
        max_clients: 4,
        cpu: None,
        flint_bin: Some(fake),
        ready_timeout: wait,
        tls: None,
        http2: false,
        net: None,
    };
    let me = std::process::id();
    let cpu_before = lab_process::cpu::process(me).expect("own CPU time");
    let started = Instant::now();
    let result = Peer::start(PeerKind::Flint, &spec);
    let wall = started.elapsed();
    let cpu = lab_process::cpu::process(me)
        .expect("own CPU time")
        .since(&cpu_before)
        .total();
    match result {
        Err(PeerError::NotReady { waited, .. }) => assert_eq!(waited, wait),
        other => panic!("expected not ready, got {other:?}"),
    }
    // Bounded: the timeout, not the fake's 300 s.
    assert!(wall >= wait, "gave up after {wall:?}");
    assert!(wall < Duration::from_secs(60), "waited {wall:?}");
    // Paused, not spun: polling /proc/net/tcp every 5 ms took a third of a core here (14,000
    // sockets in it) and 93% of one elsewhere; pauses growing to 100 ms after a refused connect
    // take next to nothing, however long the wait.
    assert!(
        cpu * 10 < wall,
        "the wait took {cpu:?} of CPU in {wall:?} of wall time"
    );
}
