//! The per-thread file cache: metadata, prebuilt header blocks, digests and small bodies.
//!
//! One `Cache` per event-loop thread, owned by its `Responder`: nothing is shared, so nothing is
//! locked (bodies are `Rc<[u8]>`, descriptors `Rc<File>`). An entry is keyed by the normalised
//! request path and holds, per representation (the file and its `.gz` / `.br` siblings), the file
//! version (dev, ino, size, mtime), ETag, Last-Modified, the header block of a 200 (and 206, and
//! 304) built once, the digests, and the body: in memory under the byte budget, or a descriptor
//! for `sendfile`.
//!
//! Freshness: an entry is trusted for `revalidate_ms`; the first request after that costs one
//! `stat` per representation path, and if any version changed the entry is dropped and rebuilt
//! from disk. So a change on disk is seen within `revalidate_ms` (1 s by default), and a request
//! inside the window (a 304 included) touches no file at all.
//!
//! Bounds, so that no client can grow memory: the number of entries is capped (a clock sweep
//! evicts an entry not referenced since the hand last passed), misses are never cached (a 404
//! flood costs one failed open each, and no memory), and body bytes stay under `cache_bytes`
//! with Greedy-Dual-Size eviction (see [`crate::gds`]).

mod build;
mod etag;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::digest::Digests;
use crate::gds::Gds;
use crate::negotiate::Coding;
use crate::resolve::{FsCounters, Root};
use crate::response::ReprFields;

/// What the cache did, for tests and the stats line. Cumulative u64 except the gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Requests answered from a cached entry.
    pub hits: u64,
    /// Lookups that had to go to the filesystem (first request, expired and changed, evicted).
    pub misses: u64,
    /// open(2) calls, failed ones included.
    pub opens: u64,
    /// stat/fstat calls, and the readlink that checks where an opened file really is.
    pub stats: u64,
    /// Entries checked again after `revalidate_ms`.
    pub revalidations: u64,
    /// Revalidations that found a changed file.
    pub changed: u64,
    /// Bodies dropped by Greedy-Dual-Size to stay under the byte budget.
    pub evictions: u64,
    /// Entries dropped by the entry cap.
    pub entry_evictions: u64,
    /// Bodies read into memory.
    pub body_loads: u64,
    /// Digest pairs (MD5 + SHA-256) computed: one per representation per file version.
    pub digests_computed: u64,
    /// Paths found absent, not regular, or outside the root (404).
    pub not_found: u64,
    /// Targets refused before any lookup (400).
    pub refused: u64,
    /// Gauge: entries cached now.
    pub entries: u64,
    /// Gauge: body bytes in memory now.
    pub body_bytes: u64,
}

impl CacheCounters {
    /// Adds the file-system calls path resolution made for the cache.
    pub fn add_fs(&mut self, fs: FsCounters) {
        self.opens += fs.opens;
        self.stats += fs.stats;
    }
}

/// What identifies one version of a file: any write, replacement or touch changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion {
    /// The device the file is on (`st_dev`).
    pub dev: u64,
    /// Its inode number (`st_ino`): a file replaced by a rename has another.
    pub ino: u64,
    /// Its length, bytes.
    pub size: u64,
    /// Its modification time, whole seconds since the epoch (`st_mtime`).
    pub mtime: i64,
    /// The nanoseconds of that time (`st_mtime_nsec`), so two writes within a second differ.
    pub mtime_nsec: i64,
}

impl FileVersion {
    /// The version a `stat` or `fstat` saw.
    pub fn of(meta: &Metadata) -> FileVersion {
        FileVersion {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

/// Where a representation's body is.
#[derive(Debug)]
pub enum Stored {
    /// In memory, admitted to Greedy-Dual-Size with value `h`; `gen` tells its heap item from
    /// that of an earlier body in the same slot.
    Mem {
        /// The body, shared with the responses still sending it.
        data: Rc<[u8]>,
        /// Its Greedy-Dual-Size value when admitted (see [`crate::gds`]).
        h: f64,
        /// The generation of its heap item.
        gen: u64,
    },
    /// Small enough for memory but not there (never sent yet, or evicted): read on the next GET.
    Unloaded,
    /// Larger than `cache_max_file`: sent by `sendfile` from this descriptor, kept open for the
    /// life of the file version.
    Fd(Rc<File>),
    /// Larger than `cache_max_file` while the thread's budget of open descriptors is spent:
    /// opened for each response.
    Reopen,
}

/// One representation of an entry: the file itself, or a precompressed sibling.
#[derive(Debug)]
pub struct Repr {
    /// The version its heads, ETag and body were built from.
    pub version: FileVersion,
    /// Quoted strong ETag: 64 bits mixed from the version, 11 base64url characters
    /// (`cache/etag.rs`).
    pub etag: Box<[u8]>,
    /// IMF-fixdate of the mtime.
    pub last_modified: Box<[u8]>,
    /// The mtime in whole seconds, what `If-Modified-Since` and `If-Unmodified-Since` are
    /// compared with (HTTP dates have no finer unit).
    pub mtime_secs: i64,
    /// Its heads without Date and Connection (a 200's, the part a 206 shares, a 304's), as
    /// HTTP/1.1 lines and as fields over the same bytes, for protocols that carry fields
    /// (HTTP/2): built from one list, never parsed back from the text.
    pub heads: Rc<ReprFields>,
    /// `Content-MD5` and `Repr-Digest` of this version, when `digest` is on (computed once per
    /// version, when it is first sent).
    pub digests: Option<Digests>,
    /// Where its body is: in memory, to be read, or a descriptor for `sendfile`.
    pub stored: Stored,
}

/// A cached path.
#[derive(Debug)]
pub struct Entry {
    key: Box<[u8]>,
    /// The file the key resolved to (the index file for a directory).
    fs_path: Box<[u8]>,
    /// Indexed by `Coding as usize`.
    reprs: [Option<Repr>; 3],
    /// What a stat of each sibling path showed when the entry was built (used or not), so that
    /// revalidation notices a sibling appearing, changing or going away.
    seen: [Option<FileVersion>; 3],
    /// When the files are stat'ed again: the last check plus `revalidate_ms`, kept as a deadline
    /// so a hit compares two instants (no subtraction); `None` when that is past what an
    /// `Instant` holds (never again).
    revalidate_at: Option<Instant>,
    /// Set on every hit, cleared by the clock hand.
    referenced: bool,
}

impl Entry {
    /// The representation of `coding`: the file itself (`Identity`, always there) or a
    /// precompressed sibling, None when that sibling does not exist (or `precompressed` is off).
    pub fn repr(&self, coding: Coding) -> Option<&Repr> {
        self.reprs[coding as usize].as_ref()
    }

    /// Whether a precompressed sibling exists (then every response says `Vary`).
    pub fn has_siblings(&self) -> bool {
        self.reprs[1].is_some() || self.reprs[2].is_some()
    }
}

/// A body ready to send.
#[derive(Debug, Clone)]
pub enum BodyRef {
    /// The whole body in memory, shared: the caller sends the range it wants, without a copy.
    Mem(Rc<[u8]>),
    /// A descriptor of the file, for `sendfile` from the range's offset.
    File(Rc<File>),
}

/// Why an entry could not be built or its body fetched.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The file changed between stat and read: the entry was dropped; resolve again.
    #[error("file changed while being read")]
    Changed,
    /// The file is gone: the entry was dropped.
    #[error("file is gone")]
    Gone,
    /// Reading or opening failed otherwise (503 when out of descriptors or memory, else 500).
    #[error(transparent)]
    Io(#[from] io::Error),
}

#[derive(Debug, Clone, Copy)]
struct BodyKey {
    slot: u32,
    coding: u8,
    gen: u64,
}

/// The settings the cache reads from [`Config`].
#[derive(Debug, Clone)]
struct Settings {
    max_entries: usize,
    cache_bytes: u64,
    cache_max_file: u64,
    max_open_files: usize,
    revalidate: Duration,
    digest: bool,
    precompressed: bool,
    /// The Server field's value.
    server_name: Box<[u8]>,
    /// The Alt-Svc field's value, when HTTP/3 is served.
    alt_svc: Option<Box<[u8]>>,
}

/// One event-loop thread's file cache, owned by its `Responder` (nothing shared, nothing
/// locked): normalised paths to entries in slots, bounded by `cache_entries` (a clock sweep),
/// bodies by `cache_bytes` (Greedy-Dual-Size) and kept-open descriptors by `cache_open_files`.
/// A slot number is valid until the next call that may evict or drop (`lookup`, `insert`,
/// `body`).
pub struct Cache {
    /// Paths to slots. The paths are the clients': the hash is keyed with a random seed per map
    /// (foldhash), so colliding keys cannot be computed in advance, at a fraction of SipHash's
    /// cost on the short keys a lookup hashes once per request.
    map: HashMap<Box<[u8]>, u32, foldhash::quality::RandomState>,
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    hand: usize,
    gds: Gds<BodyKey>,
    settings: Settings,
    bytes_used: u64,
    bodies: usize,
    open_files: usize,
    next_gen: u64,
    /// The last entry dropped as changed, so that a rebuild reuses the digests of the
    /// representations whose version did not change.
    stash: Option<Entry>,
    scratch: Vec<u8>,
    /// What it has done so far; the gauges are filled in by [`Cache::counters`].
    pub counters: CacheCounters,
}

impl Cache {
    /// An empty cache with the bounds and response settings of `config` (the `cache_*` keys,
    /// `revalidate_ms`, `digest`, `precompressed`, the `Server` and `Alt-Svc` values its
    /// prebuilt heads carry).
    pub fn new(config: &Config) -> Cache {
        let max_entries = config.cache_entries.max(1);
        let prealloc = max_entries.min(1024);
        Cache {
            map: HashMap::with_capacity_and_hasher(prealloc, Default::default()),
            slots: Vec::with_capacity(prealloc),
            free: Vec::new(),
            hand: 0,
            gds: Gds::with_capacity(prealloc * 2),
            settings: Settings {
                max_entries,
                cache_bytes: config.cache_bytes,
                cache_max_file: config.cache_max_file,
                max_open_files: config.cache_open_files,
                revalidate: Duration::from_millis(config.revalidate_ms),
                digest: config.digest,
                precompressed: config.precompressed,
                server_name: config.server_name.as_bytes().into(),
                alt_svc: config.alt_svc().map(|v| v.into_bytes().into()),
            },
            bytes_used: 0,
            bodies: 0,
            open_files: 0,
            next_gen: 0,
            stash: None,
            scratch: Vec::with_capacity(256),
            counters: CacheCounters::default(),
        }
    }

    /// The counters with the gauges filled in.
    pub fn counters(&self) -> CacheCounters {
        CacheCounters {
            entries: self.map.len() as u64,
            body_bytes: self.bytes_used,
            ..self.counters
        }
    }

    /// The entry for `key` if cached and still valid. Past `revalidate_ms` this stats the files;
    /// a changed entry is dropped (and `None` returned, so the caller rebuilds it).
    pub fn lookup(&mut self, key: &[u8], now: Instant) -> Option<u32> {
        let Some(&slot) = self.map.get(key) else {
            self.counters.misses += 1;
            return None;
        };
        let entry = self.slots[slot as usize].as_mut().expect("mapped slot");
        entry.referenced = true;
        if entry.revalidate_at.is_some_and(|at| now >= at) {
            self.counters.revalidations += 1;
            if self.unchanged(slot) {
                let revalidate_at = now.checked_add(self.settings.revalidate);
                self.slots[slot as usize]
                    .as_mut()
                    .expect("slot")
                    .revalidate_at = revalidate_at;
            } else {
                self.counters.changed += 1;
                self.counters.misses += 1;
                self.stash = Some(self.remove(slot));
                return None;
            }
        }
        self.counters.hits += 1;
        Some(slot)
    }

    /// The entry in `slot`, as `lookup` or `insert` returned it; panics on a slot freed since.
    pub fn entry(&self, slot: u32) -> &Entry {
        self.slots[slot as usize].as_ref().expect("live slot")
    }

    /// One stat per representation path: the same versions as when the entry was built?
    fn unchanged(&mut self, slot: u32) -> bool {
        let entry = self.slots[slot as usize].as_ref().expect("slot");
        let precompressed = self.settings.precompressed;
        for coding in Coding::ALL {
            if coding != Coding::Identity && !precompressed {
                continue;
            }
            self.scratch.clear();
            self.scratch.extend_from_slice(&entry.fs_path);
            self.scratch.extend_from_slice(coding.suffix());
            self.counters.stats += 1;
            let now = std::fs::metadata(OsStr::from_bytes(&self.scratch))
                .ok()
                .map(|m| FileVersion::of(&m));
            if now != entry.seen[coding as usize] {
                return false;
            }
        }
        true
    }

    /// The body of a representation, loading it (or opening the file) if needed. A `Mem` hit
    /// refreshes the body's Greedy-Dual-Size value: one field write.
    pub fn body(&mut self, slot: u32, coding: Coding) -> Result<BodyRef, CacheError> {
        let h_now = {
            let repr = self.repr(slot, coding);
            self.gds.value(repr.version.size)
        };
        let repr = self.repr_mut(slot, coding);
        match &mut repr.stored {
            Stored::Mem { data, h, .. } => {
                *h = h_now;
                return Ok(BodyRef::Mem(data.clone()));
            }
            Stored::Fd(file) => return Ok(BodyRef::File(file.clone())),
            Stored::Unloaded | Stored::Reopen => {}
        }
        let version = repr.version;
        let reopen = matches!(repr.stored, Stored::Reopen);
        let file = match self.open_version(slot, coding, version) {
            Ok(f) => f,
            Err(e) => {
                self.stash = Some(self.remove(slot));
                return Err(e);
            }
        };
        if reopen {
            return Ok(BodyRef::File(Rc::new(file)));
        }
        match build::read_body(&file, version.size, &mut self.counters) {
            Ok(data) => {
                self.admit(slot, coding, data.clone());
                Ok(BodyRef::Mem(data))
            }
            Err(e) => {
                self.stash = Some(self.remove(slot));
                Err(e)
            }
        }
    }

    /// Opens a representation's file again and checks it is still the cached version (same
    /// inode, so also the file whose location under the root was verified).
    fn open_version(
        &mut self,
        slot: u32,
        coding: Coding,
        version: FileVersion,
    ) -> Result<File, CacheError> {
        let entry = self.slots[slot as usize].as_ref().expect("live slot");
        self.scratch.clear();
        self.scratch.extend_from_slice(&entry.fs_path);
        self.scratch.extend_from_slice(coding.suffix());
        self.counters.opens += 1;
        let file = match File::open(OsStr::from_bytes(&self.scratch)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(CacheError::Gone),
            Err(e) => return Err(CacheError::Io(e)),
        };
        self.counters.stats += 1;
        if FileVersion::of(&file.metadata()?) != version {
            return Err(CacheError::Changed);
        }
        Ok(file)
    }

    fn repr(&self, slot: u32, coding: Coding) -> &Repr {
        self.entry(slot).repr(coding).expect("chosen repr exists")
    }

    fn repr_mut(&mut self, slot: u32, coding: Coding) -> &mut Repr {
        self.slots[slot as usize]
            .as_mut()
            .and_then(|e| e.reprs[coding as usize].as_mut())
            .expect("chosen repr exists")
    }

    /// Puts a body in memory under the budget, evicting the lowest Greedy-Dual-Size values first.
    fn admit(&mut self, slot: u32, coding: Coding, data: Rc<[u8]>) {
        let size = data.len() as u64;
        if size > self.settings.cache_bytes {
            return;
        }
        while self.bytes_used + size > self.settings.cache_bytes {
            let slots = &self.slots;
            let Some(victim) = self.gds.evict(|k| current_h(slots, k)) else {
                break;
            };
            let repr = self.slots[victim.slot as usize]
                .as_mut()
                .and_then(|e| e.reprs[victim.coding as usize].as_mut())
                .expect("evicted body is live");
            if let Stored::Mem { data, .. } = std::mem::replace(&mut repr.stored, Stored::Unloaded)
            {
                self.bytes_used -= data.len() as u64;
                self.bodies -= 1;
                self.counters.evictions += 1;
            }
        }
        if self.bytes_used + size > self.settings.cache_bytes {
            return;
        }
        let h = self.gds.value(size);
        self.next_gen += 1;
        let gen = self.next_gen;
        self.repr_mut(slot, coding).stored = Stored::Mem { data, h, gen };
        self.bytes_used += size;
        self.bodies += 1;
        self.gds.admit(
            BodyKey {
                slot,
                coding: coding as u8,
                gen,
            },
            h,
        );
        // Items of bodies dropped with their entries linger until popped; bound them.
        if self.gds.len() > 2 * self.bodies + 1024 {
            let slots = &self.slots;
            self.gds.compact(|k| current_h(slots, k).is_some());
        }
    }

    /// Takes an entry out of the cache, returning its budget (bytes, descriptors).
    fn remove(&mut self, slot: u32) -> Entry {
        let mut entry = self.slots[slot as usize].take().expect("live slot");
        self.map.remove(&entry.key);
        self.free.push(slot);
        for repr in entry.reprs.iter_mut().flatten() {
            match std::mem::replace(&mut repr.stored, Stored::Unloaded) {
                Stored::Mem { data, .. } => {
                    self.bytes_used -= data.len() as u64;
                    self.bodies -= 1;
                }
                Stored::Fd(_) => self.open_files -= 1,
                Stored::Unloaded | Stored::Reopen => {}
            }
        }
        entry
    }

    /// A free slot, evicting an entry (clock: the first one not referenced since the hand last
    /// passed it) when the cap is reached.
    fn free_slot(&mut self) -> u32 {
        if self.map.len() >= self.settings.max_entries {
            loop {
                if self.hand >= self.slots.len() {
                    self.hand = 0;
                }
                let slot = self.hand;
                self.hand += 1;
                if let Some(entry) = self.slots[slot].as_mut() {
                    if std::mem::take(&mut entry.referenced) {
                        continue;
                    }
                    self.remove(slot as u32);
                    self.counters.entry_evictions += 1;
                    break;
                }
            }
        }
        if let Some(slot) = self.free.pop() {
            return slot;
        }
        self.slots.push(None);
        (self.slots.len() - 1) as u32
    }

    /// Builds and caches the entry for `key` from the file [`Root::resolve`] opened.
    pub fn insert(
        &mut self,
        root: &Root,
        key: &[u8],
        file: File,
        meta: &Metadata,
        fs_path: Vec<u8>,
        now: Instant,
    ) -> Result<u32, CacheError> {
        if let Some(&old) = self.map.get(key) {
            self.stash = Some(self.remove(old));
        }
        let stash = self.stash.take().filter(|e| &*e.key == key);
        let built = build::Builder {
            settings: &self.settings,
            counters: &mut self.counters,
            open_files: &mut self.open_files,
            stash: stash.as_ref(),
        }
        .entry(root, file, meta, &fs_path)?;
        let slot = self.free_slot();
        self.slots[slot as usize] = Some(Entry {
            key: key.into(),
            fs_path: fs_path.into_boxed_slice(),
            reprs: built.reprs,
            seen: built.seen,
            revalidate_at: now.checked_add(self.settings.revalidate),
            // Not yet: a path requested once is the first to go when the cap is reached.
            referenced: false,
        });
        self.map.insert(key.into(), slot);
        for (coding, data) in built.loaded {
            self.admit(slot, coding, data);
        }
        Ok(slot)
    }
}

/// The current Greedy-Dual-Size value of a body, `None` if it is no longer the body the heap
/// item was pushed for.
fn current_h(slots: &[Option<Entry>], key: BodyKey) -> Option<f64> {
    let repr = slots.get(key.slot as usize)?.as_ref()?.reprs[key.coding as usize].as_ref()?;
    match repr.stored {
        Stored::Mem { h, gen, .. } if gen == key.gen => Some(h),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
