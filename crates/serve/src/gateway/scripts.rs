//! One thread's scripts found, as the file cache keeps files (`crate::cache`): a target's
//! [`Script`] is trusted for `revalidate_ms`, then its file is stat'ed again (one `statx`) and
//! the entry dropped if the file changed (any write, replacement, touch or mode change), so a
//! steady request makes no filesystem call at all. Only scripts found are kept (a 404 flood
//! costs a lookup each and no memory), at most [`MAX_SCRIPTS`] of them (the one due soonest
//! for revalidation goes first).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::cgi::Script;
use crate::cache::FileVersion;

/// Scripts kept per thread.
pub(crate) const MAX_SCRIPTS: usize = 1024;

#[derive(Debug)]
struct Entry {
    /// The script as found.
    script: Rc<Script>,
    /// When its file is stat'ed again.
    revalidate_at: Option<Instant>,
}

/// Normalised target (without its query) to the script it names.
#[derive(Debug)]
pub(crate) struct Scripts {
    map: HashMap<Box<[u8]>, Entry>,
    revalidate: Duration,
}

impl Scripts {
    pub fn new(revalidate: Duration) -> Scripts {
        Scripts {
            map: HashMap::new(),
            revalidate,
        }
    }

    /// The script `key` names, if it is kept and its file has not changed (shared: no copy is
    /// made per request).
    pub fn get(&mut self, key: &[u8], now: Instant) -> Option<Rc<Script>> {
        let entry = self.map.get_mut(key)?;
        if entry.revalidate_at.is_some_and(|at| now >= at) {
            if !unchanged(&entry.script) {
                self.map.remove(key);
                return None;
            }
            entry.revalidate_at = now.checked_add(self.revalidate);
        }
        Some(entry.script.clone())
    }

    /// Keeps `script`, found for `key` now.
    pub fn insert(&mut self, key: &[u8], script: &Rc<Script>, now: Instant) {
        if self.map.len() >= MAX_SCRIPTS && !self.map.contains_key(key) {
            let first_due = self.map.iter().min_by_key(|(_, e)| e.revalidate_at);
            if let Some(k) = first_due.map(|(k, _)| k.clone()) {
                self.map.remove(&k);
            }
        }
        let entry = Entry {
            script: script.clone(),
            revalidate_at: now.checked_add(self.revalidate),
        };
        self.map.insert(key.into(), entry);
    }

    /// Scripts kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

/// Whether the script's file is still the one found (the same version and mode).
fn unchanged(script: &Script) -> bool {
    std::fs::metadata(OsStr::from_bytes(&script.fs_path))
        .is_ok_and(|m| FileVersion::of(&m) == script.version && m.mode() == script.mode)
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    use super::{Scripts, MAX_SCRIPTS};
    use crate::cache::FileVersion;
    use crate::gateway::cgi::Script;

    fn script() -> Rc<Script> {
        Rc::new(Script {
            fs_path: b"/nonexistent/app.php".to_vec(),
            script_name: b"/app.php".to_vec(),
            path_info: Vec::new(),
            path_translated: None,
            app: Some(0),
            version: FileVersion {
                dev: 1,
                ino: 2,
                size: 3,
                mtime: 4,
                mtime_nsec: 5,
            },
            mode: 0o644,
        })
    }

    #[test]
    fn a_kept_script_is_shared_by_the_requests_for_it() {
        let now = Instant::now();
        let mut scripts = Scripts::new(Duration::from_secs(60));
        let found = script();
        scripts.insert(b"/app.php", &found, now);
        let s = scripts.get(b"/app.php", now).unwrap();
        assert!(Rc::ptr_eq(&s, &found));
        assert!(scripts.get(b"/other.php", now).is_none());
    }

    #[test]
    fn a_script_whose_file_is_gone_is_dropped_when_due() {
        let now = Instant::now();
        let mut scripts = Scripts::new(Duration::from_secs(1));
        scripts.insert(b"/app.php", &script(), now);
        assert!(scripts.get(b"/app.php", now).is_some());
        let later = now + Duration::from_secs(1);
        assert!(scripts.get(b"/app.php", later).is_none());
        assert_eq!(scripts.len(), 0);
    }

    #[test]
    fn scripts_kept_are_bounded() {
        let now = Instant::now();
        let mut scripts = Scripts::new(Duration::from_secs(60));
        for i in 0..MAX_SCRIPTS + 10 {
            scripts.insert(format!("/app.php/{i}").as_bytes(), &script(), now);
        }
        assert_eq!(scripts.len(), MAX_SCRIPTS);
    }
}
