//! `Stats` crosses a process boundary exactly: what a worker on another host serializes, the
//! coordinator deserializes and merges bucket for bucket, as if one process had seen it all.

use bench::stats::{ErrorKind, Latency, ResponseSample, Stats};
use bench::Workload;

fn workload() -> Workload {
    Workload::from_paths(&["/a".into(), "/b".into(), "/c".into()]).unwrap()
}

/// A deterministic spread of samples over five decades of latency, every kind of event.
fn record(s: &mut Stats, rng: &mut fastrand::Rng, n: usize) {
    for _ in 0..n {
        let (page, url) = (rng.usize(0..3), rng.usize(0..3));
        let us = 10u64.pow(rng.u32(1..6)) + rng.u64(0..1000);
        if rng.u8(0..8) == 0 {
            s.record_connect(page, url, us / 3 + 1);
        }
        if rng.u8(0..20) == 0 {
            s.record_error(url, ErrorKind::ALL[rng.usize(0..ErrorKind::ALL.len())]);
            continue;
        }
        let sample = ResponseSample {
            header_bytes: 100,
            body_bytes: rng.u64(0..100_000),
            ttfb_us: us / 2 + 1,
            response_us: us,
            response_uncorrected_us: us / 2 + 1,
            transfer_us: us / 2 + 1,
        };
        s.record_response(page, url, &sample);
        s.record_page(page, rng.bool(), us * 2, us);
        let second = s.second(rng.usize(0..4));
        second.requests += 1;
        second.bytes += sample.body_bytes;
        second.response.record_us(us);
    }
    s.cumulative_us += n as u64;
}

fn round_trip(s: &Stats) -> Stats {
    let text = serde_json::to_string(s).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn buckets(l: &Latency) -> Vec<(u64, u64)> {
    let h = l.histogram();
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

#[test]
fn merging_deserialized_stats_equals_merging_the_originals_bucket_for_bucket() {
    let w = workload();
    for open_loop in [false, true] {
        let (mut a, mut b, mut all) = (
            Stats::new(&w, open_loop),
            Stats::new(&w, open_loop),
            Stats::new(&w, open_loop),
        );
        // The same samples, once split over two "hosts" and once into one.
        record(&mut a, &mut fastrand::Rng::with_seed(1), 5_000);
        record(&mut b, &mut fastrand::Rng::with_seed(2), 3_000);
        record(&mut all, &mut fastrand::Rng::with_seed(1), 5_000);
        record(&mut all, &mut fastrand::Rng::with_seed(2), 3_000);

        let (a2, b2) = (round_trip(&a), round_trip(&b));
        assert_eq!(a2, a, "a round trip changes nothing");
        let mut merged_originals = a.clone();
        merged_originals.merge(&b);
        let mut merged_copies = a2.clone();
        merged_copies.merge(&b2);
        assert_eq!(merged_copies, merged_originals);
        assert_eq!(
            merged_copies, all,
            "the merge equals one process over the same samples"
        );

        // Bucket for bucket, spelled out for the run-wide and the per-second histograms.
        assert!(!buckets(&merged_copies.response).is_empty());
        assert_eq!(buckets(&merged_copies.response), buckets(&all.response));
        assert_eq!(buckets(&merged_copies.page), buckets(&all.page));
        for (x, y) in merged_copies.timeseries.iter().zip(&all.timeseries) {
            assert_eq!(buckets(&x.response), buckets(&y.response));
        }
        assert_eq!(
            merged_copies.response.summary().p999,
            all.response.summary().p999
        );
        assert_eq!(
            merged_copies.response_uncorrected.is_some(),
            open_loop,
            "open-loop histograms travel too"
        );
    }
}

#[test]
fn a_damaged_histogram_is_an_error_not_a_silent_zero() {
    let w = workload();
    let s = Stats::new(&w, false);
    let mut v = serde_json::to_value(&s).unwrap();
    v["response"] = "not base64!".into();
    let err = serde_json::from_value::<Stats>(v.clone()).unwrap_err();
    assert!(err.to_string().contains("base64"), "{err}");
    v["response"] = "AAAA".into();
    let err = serde_json::from_value::<Stats>(v).unwrap_err();
    assert!(err.to_string().contains("V2"), "{err}");
}

#[test]
fn a_serialized_histogram_is_compact() {
    let mut l = Latency::new(3);
    for us in 1..=100_000u64 {
        l.record_us(us * 7 % 50_000 + 100);
    }
    let text = serde_json::to_string(&l).unwrap();
    // 3 significant figures over 100 µs..50 ms: a few thousand occupied buckets.
    assert!(text.len() < 16 * 1024, "{} bytes", text.len());
    let empty = serde_json::to_string(&Latency::new(3)).unwrap();
    assert!(empty.len() < 100, "{empty}");
}
