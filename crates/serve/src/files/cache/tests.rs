use std::time::Instant;

use super::*;
use crate::resolve::Resolved;

struct Fixture {
    _dir: tempfile::TempDir,
    root: Root,
    cache: Cache,
}

fn fixture(files: &[(&str, usize)], tune: impl FnOnce(&mut Config)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    for &(name, size) in files {
        std::fs::write(dir.path().join(name), vec![b'x'; size]).unwrap();
    }
    let mut config = Config {
        root: dir.path().to_path_buf(),
        ..Config::default()
    };
    tune(&mut config);
    Fixture {
        root: Root::new(dir.path(), false).unwrap(),
        cache: Cache::new(&config),
        _dir: dir,
    }
}

impl Fixture {
    /// Looks `key` up, building the entry on a miss.
    fn get(&mut self, name: &str) -> u32 {
        let key = format!("/{name}");
        let key = key.as_str();
        if let Some(slot) = self.cache.lookup(key.as_bytes(), Instant::now()) {
            return slot;
        }
        let mut fs = crate::resolve::FsCounters::default();
        let resolved = self
            .root
            .resolve(key.as_bytes(), "index.html", &mut fs)
            .unwrap();
        self.cache.counters.add_fs(fs);
        let Resolved::File {
            file,
            meta,
            fs_path,
        } = resolved
        else {
            panic!("{key} does not resolve to a file");
        };
        self.cache
            .insert(
                &self.root,
                key.as_bytes(),
                file,
                &meta,
                fs_path,
                Instant::now(),
            )
            .unwrap()
    }

    /// A GET's worth of cache work: lookup and body.
    fn hit(&mut self, key: &str) {
        let slot = self.get(key);
        self.cache.body(slot, Coding::Identity).unwrap();
    }

    fn in_memory(&mut self, key: &str) -> bool {
        let slot = self.get(key);
        matches!(
            self.cache
                .entry(slot)
                .repr(Coding::Identity)
                .unwrap()
                .stored,
            Stored::Mem { .. }
        )
    }
}

#[test]
fn gds_evicts_the_large_cold_body_before_small_hot_ones() {
    let mut f = fixture(
        &[("big", 5000), ("a", 1000), ("b", 1000), ("c", 1500)],
        |c| c.cache_bytes = 8000,
    );
    f.hit("big");
    for _ in 0..5 {
        f.hit("a");
        f.hit("b");
    }
    assert_eq!(f.cache.counters().body_bytes, 7000);
    f.hit("c"); // 8500 > 8000: one body must go
    assert_eq!(f.cache.counters.evictions, 1);
    assert!(!f.in_memory("big"));
    assert!(f.in_memory("a") && f.in_memory("b") && f.in_memory("c"));
    assert_eq!(f.cache.counters().body_bytes, 3500);
}

#[test]
fn gds_ages_bodies_not_hit_since_the_last_eviction() {
    let mut f = fixture(
        &[("a", 1000), ("b", 900), ("big", 2000), ("c", 1000)],
        |c| c.cache_bytes = 3000,
    );
    f.hit("a");
    f.hit("b");
    f.hit("big"); // evicts a (lowest H); L rises to 1/1000
    assert!(!f.in_memory("a"));
    // big was valued at the raised L (1/1000 + 1/2000), b before it (1/900): b has aged and
    // goes before the larger but more recent big.
    f.hit("c");
    assert!(!f.in_memory("b"));
    assert!(f.in_memory("big") && f.in_memory("c"));
    assert_eq!(f.cache.counters.evictions, 2);
    assert_eq!(f.cache.counters().body_bytes, 3000);
}

#[test]
fn an_evicted_body_is_read_again_on_the_next_get() {
    let mut f = fixture(&[("a", 1000), ("b", 1000)], |c| c.cache_bytes = 1000);
    f.hit("a");
    f.hit("b");
    assert!(!f.in_memory("a"));
    let loads = f.cache.counters.body_loads;
    f.hit("a");
    assert_eq!(f.cache.counters.body_loads, loads + 1);
    assert!(f.in_memory("a") && !f.in_memory("b"));
}

#[test]
fn files_above_cache_max_file_keep_a_descriptor_not_a_body() {
    let mut f = fixture(&[("large", 3000)], |c| c.cache_max_file = 2000);
    let slot = f.get("large");
    assert!(matches!(
        f.cache.body(slot, Coding::Identity).unwrap(),
        BodyRef::File(_)
    ));
    let opens = f.cache.counters.opens;
    f.hit("large");
    assert_eq!(f.cache.counters.opens, opens, "the descriptor is reused");
    assert_eq!(f.cache.counters().body_bytes, 0);
}

#[test]
fn entry_cap_evicts_entries_not_referenced_since_the_last_sweep() {
    let mut f = fixture(&[("a", 1), ("b", 1), ("c", 1), ("d", 1)], |c| {
        c.cache_entries = 2
    });
    f.get("a");
    f.get("b");
    f.get("c"); // a and b were never hit again: the hand takes a
    assert_eq!(f.cache.counters.entry_evictions, 1);
    assert!(f.cache.lookup(b"/b", Instant::now()).is_some()); // b referenced now
    f.get("d"); // b gets a second chance; c goes
    assert_eq!(f.cache.counters().entries, 2);
    assert!(f.cache.lookup(b"/b", Instant::now()).is_some());
    assert!(f.cache.lookup(b"/c", Instant::now()).is_none());
}

#[test]
fn a_changed_file_is_dropped_at_revalidation() {
    let mut f = fixture(&[("a", 10)], |c| c.revalidate_ms = 0);
    f.get("a");
    let stats = f.cache.counters.stats;
    assert!(f.cache.lookup(b"/a", Instant::now()).is_some());
    assert!(
        f.cache.counters.stats > stats,
        "revalidation stats the file"
    );
    std::fs::write(f.root.path().join("a"), b"longer content").unwrap();
    assert!(f.cache.lookup(b"/a", Instant::now()).is_none());
    assert_eq!(f.cache.counters.changed, 1);
}

/// A file version's heads are one buffer: each field's value is the bytes of its HTTP/1.1
/// line, not a second copy, and the lines and the fields say the same (a 200's, a 206's and a
/// 304's, for the file and its precompressed sibling).
#[test]
fn a_versions_fields_borrow_their_values_from_its_http1_lines() {
    let mut f = fixture(&[("a.txt", 100), ("a.txt.gz", 40)], |c| {
        c.precompressed = true;
        c.digest = true;
    });
    let slot = f.get("a.txt");
    for coding in [Coding::Identity, Coding::Gzip] {
        let heads = &f.cache.entry(slot).repr(coding).unwrap().heads;
        let partial = crate::response::Cached::Partial;
        for (cached, text) in [
            (crate::response::Cached::Full, heads.full_text()),
            (partial, heads.partial_text()),
            (
                crate::response::Cached::NotModified,
                heads.not_modified_text(),
            ),
        ] {
            let mut lines = Vec::new();
            for (name, value) in heads.fields(cached) {
                let within = text.as_ptr_range();
                assert!(within.contains(&value.as_ptr()), "{coding:?} {cached:?}");
                assert!(value.as_ptr_range().end <= within.end);
                lines.extend_from_slice(name);
                lines.extend_from_slice(b": ");
                lines.extend_from_slice(value);
                lines.extend_from_slice(b"\r\n");
            }
            // The text's names, lowercased: the fields' names are.
            let mut lower = text.to_vec();
            let mut in_name = true;
            for b in &mut lower {
                match *b {
                    b':' => in_name = false,
                    b'\n' => in_name = true,
                    _ if in_name => b.make_ascii_lowercase(),
                    _ => {}
                }
            }
            assert_eq!(lines, lower, "{coding:?} {cached:?}");
        }
        // Beside the text, each field costs a name and a range, not its value again.
        let (full, not_modified) = (heads.full_text().len(), heads.not_modified_text().len());
        let count = heads.fields(crate::response::Cached::Full).count()
            + heads.fields(crate::response::Cached::NotModified).count();
        assert_eq!(heads.heap_bytes(), full + not_modified + 12 * count);
        let vary = heads.fields(crate::response::Cached::NotModified);
        assert!(vary.map(|(n, _)| n).any(|n| n == b"vary"), "{coding:?}");
    }
}
