//! One rounding rule for the WebSTONE report's maxima: the page blocks' and the run's "Maximum
//! Response time" are both exact to the µs, so a one-file page's equals the run's to the digit.

use crate::common;

use bench::report::{json, webstone};
use bench::Stop;
use common::{config, ms, one_file, Behaviour, TestServer};
use std::sync::atomic::AtomicBool;

#[test]
fn a_one_file_pages_maximum_is_the_runs_to_the_last_digit() {
    let srv = TestServer::start(Behaviour::Delayed(ms(1)));
    let cfg = config(srv.addr, 2, Stop::Duration(ms(400)));
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert!(r.stats.requests > 0);
    let text = webstone(&r);
    let value = |label: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label:?} missing from {text}"));
        line[label.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    };
    let page = value("Maximum Response time ");
    let run = value("Maximum Response time: ");
    assert_eq!(page, run, "{text}");
    // Exact: the µs the engine measured, which the histogram would round up to its bucket.
    assert_eq!(page, format!("{:.6}", r.stats.response_us_max as f64 / 1e6));
    let doc = json(&r);
    assert_eq!(
        doc["summary"]["max_response_s"],
        doc["pages"][0]["max_response_s"]
    );
}
