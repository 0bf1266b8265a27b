//! What HTTP/3 costs each side per request, in memory (no sockets): client and server in one
//! thread exchanging datagrams through queues, 1 KiB responses. Prints CPU time (measured
//! around each side's calls) and Rust allocations per request, A B A B over `--rounds`.
//!
//! `cargo run --release -p http3 --example h3_memory -- [REQUESTS] [CONNECTIONS] [STREAMS] [ROUNDS]`
//! (defaults 20000 40 10 3).

#[path = "../tests/common/memory.rs"]
mod memory;

use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn arg(i: usize, default: u64) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("h3_memory: `{a}` is not a number (usage: h3_memory [REQUESTS] [CONNECTIONS] [STREAMS] [ROUNDS])");
            std::process::exit(2)
        }),
    }
}

fn main() {
    let (n, m, s, rounds) = (arg(1, 20_000), arg(2, 40), arg(3, 10), arg(4, 3));
    if n == 0 || m == 0 || s == 0 || rounds == 0 {
        eprintln!("h3_memory: every figure must be at least 1");
        std::process::exit(2);
    }
    let certs = memory::Certs::new();
    println!("{n} requests, {m} connections x {s} streams, 1 KiB responses, in memory");
    println!(
        "round  client us/req  client allocs/req  server us/req  server allocs/req  datagrams/req"
    );
    let mut client_us = Vec::new();
    let mut server_us = Vec::new();
    for round in 1..=rounds {
        let out = memory::run(&certs, n, m as usize, s as usize, allocations);
        assert_eq!((out.answered, out.wrong), (n, 0), "{out:?}");
        let per = |x: f64| x / n as f64;
        let (c, sv) = (
            per(out.client.time.as_secs_f64() * 1e6),
            per(out.server.time.as_secs_f64() * 1e6),
        );
        client_us.push(c);
        server_us.push(sv);
        println!(
            "{round:>5}  {c:>13.2}  {:>17.1}  {sv:>13.2}  {:>17.1}  {:>13.2}",
            per(out.client.allocations as f64),
            per(out.server.allocations as f64),
            per(out.datagrams as f64),
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "median: client {:.2} us/req, server {:.2} us/req",
        median(&mut client_us),
        median(&mut server_us)
    );
}
