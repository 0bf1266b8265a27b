//! A page pipelined on one connection (the lab's page: a 42 KB HTML file, sent by `sendfile`,
//! and 43 GIFs of 0.5 to 20 KB, heads and small bodies copied into the output buffer), page
//! after page: in steady state the server allocates nothing, and reallocates nothing (a `realloc`
//! counts as an allocation here). The output buffer keeps the capacity it grew to on the first
//! pages, in the pool between batches, so it is not regrown (by `mremap`, once past the
//! allocator's mmap threshold) for every page.

mod common;

use std::io::{Read, Write};

use common::*;
use test_support::alloc::{allocations, exclude_current_thread, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The GIFs' sizes, in page order.
const GIFS: [usize; 43] = [
    20480, 8192, 9216, 10240, 8192, 7168, 6144, 5120, 4608, 4096, 3584, 3072, 3072, 2560, 2560,
    2048, 2048, 2048, 1792, 1536, 1536, 1280, 1280, 1024, 1024, 1024, 1024, 896, 768, 768, 640,
    640, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512,
];
const PAGES: usize = 50;

#[test]
fn pipelined_pages_allocate_and_reallocate_nothing() {
    exclude_current_thread();
    let srv = TestServer::start(|c| c.revalidate_ms = 600_000);
    let dir = srv.root.path().join("page");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("index.html"), vec![b'x'; 42 * 1024]).unwrap();
    let mut names = vec!["/page/index.html".to_string()];
    for (i, size) in GIFS.iter().enumerate() {
        std::fs::write(dir.join(format!("img{i:02}.gif")), vec![7u8; *size]).unwrap();
        names.push(format!("/page/img{i:02}.gif"));
    }
    let page: Vec<u8> = names.iter().flat_map(|n| get(n).into_bytes()).collect();
    let mut s = connect(srv.addr);
    // The page's response bytes, learned outside the window.
    s.write_all(&page).unwrap();
    let mut r = std::io::BufReader::new(s.try_clone().unwrap());
    let responses = read_responses(&mut r, names.len(), false);
    assert!(responses.iter().all(|r| r.status == 200));
    let total: usize = responses
        .iter()
        .map(|r| {
            let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
            "HTTP/1.1 200 OK\r\n".len() + head + 2 + r.body.len()
        })
        .sum();
    drop(r);
    let mut buf = vec![0u8; total];
    let mut fetch = |s: &mut std::net::TcpStream| {
        s.write_all(&page).unwrap();
        let mut got = 0;
        while got < total {
            let n = s.read(&mut buf[got..]).unwrap();
            assert!(n > 0, "early EOF");
            got += n;
        }
    };
    for _ in 0..5 {
        fetch(&mut s); // warm-up: the buffers reach their working size
    }
    let before = allocations();
    for _ in 0..PAGES {
        fetch(&mut s);
    }
    let allocated = allocations() - before;
    assert_eq!(
        allocated, 0,
        "allocations and reallocations over {PAGES} pipelined pages"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!(st.requests, (1 + 5 + PAGES as u64) * names.len() as u64);
}
