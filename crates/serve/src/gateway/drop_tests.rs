//! A loop's gateways dropped without the final sweep (the loop's poll failed) give back the
//! program slots they held: the count is shared with the other loops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Poll, Token, Waker};

use crate::config::Config;
use crate::gateway::{cgi::Launch, Gateways};

#[test]
fn gateways_dropped_without_the_final_sweep_give_back_their_spawner_s_slots() {
    let config = Config {
        cgi_extensions: vec![".cgi".into()],
        ..Config::default()
    };
    let poll = Poll::new().unwrap();
    let waker = Arc::new(Waker::new(poll.registry(), Token(0)).unwrap());
    let registry = poll.registry().try_clone().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let mut g = Gateways::new(&config, running.clone(), registry, waker, 80)
        .unwrap()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for token in 0..3 {
        assert!(g.reserve());
        let launch = Launch {
            program: "/bin/true".into(),
            dir: "/".into(),
            env: Vec::new(),
            body: 0,
            app: None,
            proxy: None,
            fastcgi: None,
            request: Default::default(),
        };
        assert!(g.start_program(launch, token, deadline).is_ok());
    }
    assert_eq!(running.load(Ordering::Acquire), 3);
    // None of the jobs taken back by the loop: the spawner still holds their slots.
    drop(g);
    assert_eq!(running.load(Ordering::Acquire), 0, "every slot comes back");
}
