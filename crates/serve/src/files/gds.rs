//! Greedy-Dual-Size: which cached body to drop when the byte budget is full.
//!
//! The policy IO-Lite's Flash-Lite used (Cao and Irani, 1997). Each object carries a value
//! `H = L + cost/size`; the victim is the object with the lowest `H`, and the inflation value `L`
//! becomes that `H`, so objects that have not been touched for a while age relative to the ones
//! admitted or hit since. With `cost = 1` the policy maximises the hit ratio: a large body is worth
//! less per byte than a small one, so one cold 200 KB file leaves before forty hot 5 KB files.
//!
//! A hit sets `H = L + 1/size` on the object itself (the caller's field write). The heap is not
//! touched on the hot path; it keeps whatever `H` an object had when it was pushed, and eviction
//! re-validates lazily: it pops the minimum, asks the caller for the object's current `H`, and if
//! that changed pushes it back with the current value and tries again. Since `H` only grows, a
//! stale heap value is a lower bound, so the first popped object whose value is current really is
//! the minimum. Objects the caller has dropped answer `None` and their heap items are discarded.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The GDS state: the inflation value and a min-heap of `(H, key)` items.
#[derive(Debug)]
pub struct Gds<K> {
    heap: BinaryHeap<Item<K>>,
    inflation: f64,
}

#[derive(Debug, Clone, Copy)]
struct Item<K> {
    h: f64,
    key: K,
}

// Reversed, so that std's max-heap pops the lowest H.
impl<K> Ord for Item<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.h.total_cmp(&self.h)
    }
}
impl<K> PartialOrd for Item<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> PartialEq for Item<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<K> Eq for Item<K> {}

impl<K: Copy> Gds<K> {
    /// Preallocates room for `capacity` heap items.
    pub fn with_capacity(capacity: usize) -> Self {
        Gds {
            heap: BinaryHeap::with_capacity(capacity),
            inflation: 0.0,
        }
    }

    /// The `H` an object of `size` bytes gets when admitted or hit now (cost 1).
    #[inline]
    pub fn value(&self, size: u64) -> f64 {
        self.inflation + 1.0 / size.max(1) as f64
    }

    /// The inflation value `L`.
    pub fn inflation(&self) -> f64 {
        self.inflation
    }

    /// Heap items, stale ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the heap holds no item, stale or not.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Records a newly admitted object with its value `h` (from [`Gds::value`]).
    pub fn admit(&mut self, key: K, h: f64) {
        self.heap.push(Item { h, key });
    }

    /// Chooses the object to evict: the lowest current `H`. `current(key)` returns the object's
    /// `H` now, or `None` if it is no longer cached. Sets `L` to the victim's `H`. `None` when
    /// nothing is left.
    pub fn evict(&mut self, mut current: impl FnMut(K) -> Option<f64>) -> Option<K> {
        while let Some(item) = self.heap.pop() {
            match current(item.key) {
                None => continue,
                Some(h) if h.to_bits() != item.h.to_bits() => {
                    self.heap.push(Item { h, key: item.key })
                }
                Some(h) => {
                    self.inflation = h;
                    return Some(item.key);
                }
            }
        }
        None
    }

    /// Drops the items of objects that are gone, so that churn (entries rebuilt or dropped
    /// without being evicted) cannot grow the heap without bound. O(n); the caller runs it when
    /// the heap is much larger than the number of live objects.
    pub fn compact(&mut self, mut live: impl FnMut(K) -> bool) {
        self.heap.retain(|item| live(item.key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy cache: sizes and current H per key, `None` once evicted.
    struct Toy {
        gds: Gds<usize>,
        size: Vec<u64>,
        h: Vec<Option<f64>>,
    }

    impl Toy {
        fn new(sizes: &[u64]) -> Toy {
            let mut toy = Toy {
                gds: Gds::with_capacity(16),
                size: sizes.to_vec(),
                h: vec![None; sizes.len()],
            };
            for (k, &size) in sizes.iter().enumerate() {
                let h = toy.gds.value(size);
                toy.h[k] = Some(h);
                toy.gds.admit(k, h);
            }
            toy
        }
        fn hit(&mut self, k: usize) {
            self.h[k] = Some(self.gds.value(self.size[k]));
        }
        fn evict(&mut self) -> Option<usize> {
            let h = &self.h;
            let victim = self.gds.evict(|k| h[k])?;
            self.h[victim] = None;
            Some(victim)
        }
    }

    #[test]
    fn larger_objects_are_evicted_first_when_nothing_is_hit() {
        let mut toy = Toy::new(&[100, 10_000, 1_000, 10]);
        assert_eq!(toy.evict(), Some(1));
        assert_eq!(toy.evict(), Some(2));
        assert_eq!(toy.evict(), Some(0));
        assert_eq!(toy.evict(), Some(3));
        assert_eq!(toy.evict(), None);
    }

    #[test]
    fn inflation_ages_objects_not_hit_since() {
        // Two equal objects; evicting a big one raises L, then a hit on b lifts it above a.
        let mut toy = Toy::new(&[100, 100, 1_000_000]);
        assert_eq!(toy.evict(), Some(2));
        assert!(toy.gds.inflation() > 0.0);
        toy.hit(0);
        // a's H was refreshed at the new L, b's was not: b goes first.
        assert_eq!(toy.evict(), Some(1));
        assert_eq!(toy.evict(), Some(0));
    }

    #[test]
    fn a_hit_small_object_outlives_a_cold_large_one_after_many_rounds() {
        let mut toy = Toy::new(&[200_000, 5_000, 5_000]);
        for _ in 0..10 {
            toy.hit(1);
            toy.hit(2);
        }
        assert_eq!(toy.evict(), Some(0));
    }

    #[test]
    fn stale_items_are_revalidated_and_dropped_items_skipped() {
        let mut toy = Toy::new(&[20, 20, 100_000, 1_000_000]);
        assert_eq!(toy.evict(), Some(3));
        toy.h[2] = None; // dropped by its owner without eviction
        toy.hit(0); // H0 now above its heap item, which is stale
        assert_eq!(toy.gds.len(), 3);
        assert_eq!(toy.evict(), Some(1));
        // 2's item was discarded on the way; 0's was pushed back with its current value.
        assert_eq!(toy.gds.len(), 1);
        assert_eq!(toy.evict(), Some(0));
        assert_eq!(toy.evict(), None);
    }

    #[test]
    fn compact_removes_items_of_dropped_objects() {
        let mut toy = Toy::new(&[1, 2, 3, 4]);
        toy.h[0] = None;
        toy.h[3] = None;
        let h = toy.h.clone();
        toy.gds.compact(|k| h[k].is_some());
        assert_eq!(toy.gds.len(), 2);
    }
}
